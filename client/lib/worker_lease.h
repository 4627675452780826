/* SPDX-License-Identifier: MIT */
/* Worker runtime: lease upkeep (heartbeats, cancels, hung handlers) and settling results. */
#ifndef BRQ_WORKER_LEASE_H
#define BRQ_WORKER_LEASE_H

#include "worker_types.h"

/* The keeper and the settler threads (see worker_types.h); arg is the worker. */
void *brq_worker_keeper_main(void *w);
void *brq_worker_settler_main(void *w);
/* Gives j's result up and raises its cancel flag with `reason` (remembers when).
 * Under w->mu. */
void brq_worker_cancel_job(brooq_job_ctx *j, int64_t now, brooq_cancel_reason reason);
/* The gateway says j's lease is gone (or it is about to run out unheard): the result
 * is discarded, the cancel flag raised with `reason`; nothing is written for j. A
 * result in a settle in flight answers for itself. Under w->mu. */
void brq_worker_lease_lost(brooq_worker *w, brooq_job_ctx *j, int64_t now, brooq_cancel_reason reason);
/* Every held lease is heartbeated at once (the keeper is woken): the database says
 * which are lost and why. Under w->mu. */
void brq_worker_heartbeat_now(brooq_worker *w);
/* Wakes the settler if what changed (a result, the dispatcher's state) makes it settle
 * now or sooner than it would look by itself. Under w->mu. */
void brq_worker_settler_poke(brooq_worker *w);
/* Wakes the keeper if something is due at due_ms, sooner than it would look by itself
 * (INT64_MIN: now, whatever it waits for). Under w->mu. */
void brq_worker_keeper_poke(brooq_worker *w, int64_t due_ms);
/* Counts and logs j as hung (once). Under w->mu. */
void brq_worker_count_hung(brooq_worker *w, brooq_job_ctx *j);
/* Moves up to max finished results into b[] (phase SETTLING). Under w->mu. */
size_t brq_worker_take_batch(brooq_worker *w, brooq_job_ctx **b, size_t max, bool take_solo);
/* Puts results taken by brq_worker_take_batch back, in order, unsent. Under w->mu. */
void brq_worker_give_back(brooq_worker *w, brooq_job_ctx **b, size_t n);
/* Processes the answer to a settle of b[0..n) (a plain settle when `plain`, else
 * carried by a claim); frees what is done with. Under w->mu. */
void brq_worker_settle_done(brooq_worker *w, brooq_job_ctx **b, size_t n, brooq_err err,
			    const brooq_settle_result *res, bool plain, const char *detail);

#endif
