/* SPDX-License-Identifier: MIT */
/* Worker runtime: who runs the claimed jobs: the handler threads, or (pull mode) the
 * caller, through brooq_worker_next and brooq_job_finish. */
#ifndef BRQ_WORKER_HANDLER_H
#define BRQ_WORKER_HANDLER_H

#include "worker_types.h"

/* The handler of topic; NULL when none is registered. Under w->mu or before run. */
const brq_topic_handler *brq_worker_handler_of(const brooq_worker *w, const char *topic);
/* Whether the dispatcher should claim: a thread would otherwise go idle, or the
 * prefetch queue fell to half its target. Under w->mu. */
bool brq_worker_claim_due(const brooq_worker *w);
/* Handler threads (and pullers: brooq_worker_next gives no more jobs) are to exit.
 * Under w->mu. */
void brq_worker_handlers_quit(brooq_worker *w);
/* A handler thread's body; arg is the worker. */
void *brq_worker_handler_main(void *arg);

/* Pull mode: opens the pipe behind brooq_worker_fd. Before run; 0 or BRQ_EIO. */
int brq_worker_pull_open(brooq_worker *w);
/* Pull mode: jobs were queued, a slot freed up, or the worker stopped: makes the fd
 * readable (one byte at most is ever pending) and wakes brooq_worker_next's waiters.
 * Under w->mu; a no-op when not in pull mode. */
void brq_worker_pull_notify(brooq_worker *w);
/* A handed-out job's cancel flag was raised: cancel_seq moves, waiters wake. Under w->mu. */
void brq_worker_pull_canceled(brooq_worker *w);
/* Pull mode, at stop: jobs queued and not yet handed out are settled at once as
 * `preserve` (the attempt given back, no error written) instead of waiting for a
 * caller; returns how many. Under w->mu. */
size_t brq_worker_pull_give_back(brooq_worker *w);

#endif
