/* SPDX-License-Identifier: MIT */
/* Worker runtime: the listener, the watch that hears an operator's cancels at once. */
#ifndef BRQ_WORKER_WATCH_H
#define BRQ_WORKER_WATCH_H

#include "worker_types.h"

/* The listener thread (see worker_types.h); arg is the worker. */
void *brq_worker_watch_main(void *w);
/* A job j just claimed (QUEUED or FINISHED, on w->held), from a claim sent when watch_gen
 * was gen_at_claim: if the listener heard it canceled while the reply travelled, its lease
 * is lost now; if a cancel may have gone unheard meanwhile, it is heartbeated at once.
 * True if either happened: the keeper has work now. Under w->mu. */
bool brq_worker_watch_take(brooq_worker *w, brooq_job_ctx *j, uint64_t gen_at_claim, int64_t now);

#endif
