/* SPDX-License-Identifier: MIT */
/* Worker runtime: the job a handler runs, its outcome, and its copy of the claim. */
#ifndef BRQ_WORKER_JOB_H
#define BRQ_WORKER_JOB_H

#include "worker_types.h"

/* A context for a claimed job, copied out of the claim's reply (the caller frees
 * the reply); NULL when out of memory. Free with brq_job_ctx_free (NULL-safe). */
brooq_job_ctx *brq_job_ctx_new(brooq_worker *w, const brooq_job *jb, int64_t now, int64_t wall_now);
void           brq_job_ctx_free(brooq_job_ctx *j);
/* Back to "done, no chain, no error". */
void brq_job_outcome_clear(brooq_job_ctx *j);
/* Replaces j's outcome by the fail of an attempt past its deadline. */
void brq_job_timed_out_outcome(brooq_job_ctx *j);
/* s describes j's outcome; it borrows j's strings and chain. */
void brq_job_settle_fill(brooq_settle_item *s, const char **result, const brooq_job_ctx *j);
/* A copy the gateway accepts: invalid UTF-8 bytes become '?', cut to
 * BRQ_ERROR_STORED_MAX bytes on a character boundary. NULL when out of memory; the
 * caller frees. */
char *brq_worker_error_copy(const char *s);

#endif
