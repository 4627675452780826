// SPDX-License-Identifier: MIT
// The store's statements of the console's history (job_history, migration 00014) and of its
// workers view (the holders of processing jobs).
#include "store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A histogram as an array literal, "{1,0,3}", in c's arena; NULL when out of memory.
static const char *
hist_text(brq_store_conn *c, const uint64_t *v, uint32_t n)
{
	char *p = brq_arena_alloc(&c->arena, (size_t) n * 21 + 3, 1);
	if (p == NULL)
		return NULL;
	size_t at = 0;
	p[at++]   = '{';
	for (uint32_t i = 0; i < n; i++)
		at += (size_t) sprintf(p + at, "%s%" PRIu64, i > 0 ? "," : "", v[i]);
	p[at++] = '}';
	p[at]   = '\0';
	return p;
}

int
brq_store_history_add(brq_store_conn *c, int64_t minute_ms, const brq_store_history_count *rows, uint32_t n)
{
	brq_pgarr *a = c->arr;
	brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
	brq_pgarr_begin(&a[1], BRQ_OID_INT8);
	brq_pgarr_begin(&a[2], BRQ_OID_INT8);
	brq_pgarr_begin(&a[3], BRQ_OID_TEXT);
	for (uint32_t i = 0; i < n; i++) {
		brq_pgarr_text(&a[0], rows[i].topic.ptr, rows[i].topic.len);
		brq_pgarr_int8(&a[1], (int64_t) rows[i].started);
		brq_pgarr_int8(&a[2], (int64_t) rows[i].finished);
		if (rows[i].wait == NULL || rows[i].n_wait == 0) {
			brq_pgarr_null(&a[3]);
			continue;
		}
		const char *h = hist_text(c, rows[i].wait, rows[i].n_wait);
		if (h == NULL)
			return brq_store_fail(c, BRQ_ENOMEM, "history: out of memory");
		brq_pgarr_text(&a[3], h, strlen(h));
	}
	char        minute[24];
	const char *v[5] = {minute};
	int         l[5] = {0}, f[5] = {BRQ_TEXT, BRQ_BINARY, BRQ_BINARY, BRQ_BINARY, BRQ_BINARY};
	snprintf(minute, sizeof(minute), "%" PRId64, minute_ms);
	for (int k = 0; k < 4; k++)
		if (brq_store_param(&a[k], v, l, k + 1) != 0)
			return brq_store_fail(c, BRQ_ENOMEM, "history: out of memory");
	PGresult *r;
	return brq_store_run(c, BRQ_STMT_HISTORY_ADD, v, l, f, 0, &r);
}

int
brq_store_history_depth(brq_store_conn *c, int64_t minute_ms)
{
	char        minute[24];
	const char *v[1] = {minute};
	snprintf(minute, sizeof(minute), "%" PRId64, minute_ms);
	PGresult *r;
	return brq_store_run(c, BRQ_STMT_HISTORY_DEPTH, v, NULL, NULL, 0, &r);
}

int
brq_store_history_prune(brq_store_conn *c, uint64_t keep_ms, uint32_t *deleted)
{
	char        keep[24];
	const char *v[1] = {keep};
	snprintf(keep, sizeof(keep), "%" PRIu64, keep_ms);
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_HISTORY_PRUNE, v, NULL, NULL, 0, &r);
	if (rv == 0)
		*deleted = (uint32_t) strtoul(PQcmdTuples(r), NULL, 10);
	return rv;
}

static void
read_hist(const PGresult *r, int row, void *elem)
{
	brq_store_history_row *h = elem;
	memset(h, 0, sizeof(*h));
	h->minute_ms = brq_store_int(r, row, HIST_MINUTE_MS);
	h->started   = (uint64_t) brq_store_int(r, row, HIST_STARTED);
	h->finished  = (uint64_t) brq_store_int(r, row, HIST_FINISHED);
	h->has_depth = !brq_store_is_null(r, row, HIST_PENDING);
	if (h->has_depth) {
		h->pending = (uint64_t) brq_store_int(r, row, HIST_PENDING);
		h->ready   = brq_store_is_null(r, row, HIST_READY)
			  ? 0
			  : (uint64_t) brq_store_int(r, row, HIST_READY);
	}
	// "n,n,...": the buckets a histogram of another build has beyond ours are dropped.
	const char *s = PQgetvalue(r, row, HIST_WAIT);
	while (*s != '\0' && h->n_wait < BRQ_STORE_WAIT_MAX) {
		char *end;
		h->wait[h->n_wait++] = strtoull(s, &end, 10);
		s                    = *end == ',' ? end + 1 : end;
		if (end == s && *s != '\0')
			break;
	}
}

int
brq_store_history_read(brq_store_conn *c, brq_str topic, int64_t from_ms, int64_t to_ms,
		       brq_store_history_row **rows, uint32_t *n)
{
	char  from[24], to[24];
	char *t = brq_arena_alloc(&c->arena, (size_t) topic.len + 1, 1);
	if (t == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "history: out of memory");
	memcpy(t, topic.ptr, topic.len);
	t[topic.len] = '\0';
	snprintf(from, sizeof(from), "%" PRId64, from_ms);
	snprintf(to, sizeof(to), "%" PRId64, to_ms);
	const char *v[3] = {t, from, to};
	PGresult   *r;
	int         rv = brq_store_run(c, BRQ_STMT_HISTORY_READ, v, NULL, NULL, HIST__N, &r);
	if (rv != 0)
		return rv;
	*rows = brq_store_read_all(c, r, sizeof(**rows), read_hist, n);
	return *rows != NULL ? 0 : brq_store_fail(c, BRQ_ENOMEM, "history: out of memory");
}

static void
read_worker(const PGresult *r, int row, void *elem)
{
	brq_store_worker *w = elem;
	*w                  = (brq_store_worker) {
				 .name            = brq_store_str(r, row, WORKER_NAME),
				 .jobs            = (uint64_t) brq_store_int(r, row, WORKER_JOBS),
				 .expired         = (uint64_t) brq_store_int(r, row, WORKER_EXPIRED),
				 .oldest_claim_ms = brq_store_int(r, row, WORKER_OLDEST_CLAIM_MS),
				 .last_beat_ms    = brq_store_int(r, row, WORKER_LAST_BEAT_MS),
				 .lease_until_ms  = brq_store_int(r, row, WORKER_LEASE_UNTIL_MS),
				 .topics          = brq_store_str(r, row, WORKER_TOPICS),
				 .n_topics        = (uint32_t) brq_store_int(r, row, WORKER_N_TOPICS),
        };
}

int
brq_store_workers(brq_store_conn *c, uint32_t limit, brq_store_worker **out, uint32_t *n)
{
	char        lim[16];
	const char *v[1] = {lim};
	snprintf(lim, sizeof(lim), "%" PRIu32, limit);
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_WORKERS, v, NULL, NULL, WORKER__N, &r);
	if (rv != 0)
		return rv;
	*out = brq_store_read_all(c, r, sizeof(**out), read_worker, n);
	return *out != NULL ? 0 : brq_store_fail(c, BRQ_ENOMEM, "workers: out of memory");
}

int
brq_store_worker_jobs(brq_store_conn *c, brq_str worker, uint32_t limit, brq_job_info **jobs, uint32_t *n)
{
	char  lim[16];
	char *w = brq_arena_alloc(&c->arena, (size_t) worker.len + 1, 1);
	if (w == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "workers: out of memory");
	memcpy(w, worker.ptr, worker.len);
	w[worker.len] = '\0';
	snprintf(lim, sizeof(lim), "%" PRIu32, limit);
	const char *v[2] = {w, lim};
	PGresult   *r;
	int         rv = brq_store_run(c, BRQ_STMT_WORKER_JOBS, v, NULL, NULL, JOB__N, &r);
	if (rv != 0)
		return rv;
	int rows = PQntuples(r);
	*jobs    = brq_arena_alloc(&c->arena, rows > 0 ? (size_t) rows : 1, sizeof(**jobs));
	if (*jobs == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "workers: out of memory");
	for (int i = 0; i < rows; i++)
		brq_store_job_row(c->st->cfg, r, i, &(*jobs)[i]);
	*n = (uint32_t) rows;
	return 0;
}
