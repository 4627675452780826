// SPDX-License-Identifier: MIT
// The janitor's statements (background/janitor.c): expired leases back to pending (the
// reaper, which quarantines crash loops: SPEC invariant 18) and terminal rows past their retention deleted,
// each in bounded batches that name the topics they touched; and the topics' spans of ids
// the list by topic reads (migration 00015).
#include "store_int.h"

#include <stdio.h>

static void
read_reaped(const PGresult *r, int row, void *out)
{
	*(brq_store_reaped *) out = (brq_store_reaped) {
		.topic          = brq_store_str(r, row, REAP_TOPIC),
		.is_quarantined = brq_store_bool(r, row, REAP_QUARANTINED),
	};
}

int
brq_store_reap(brq_store_conn *c, uint32_t batch, brq_store_reaped **rows, uint32_t *n)
{
	char        lim[16];
	const char *v[1] = {lim};
	PGresult   *r;
	snprintf(lim, sizeof(lim), "%u", batch);
	int rv = brq_store_run(c, BRQ_STMT_REAP, v, NULL, NULL, REAP__N, &r);
	if (rv != 0)
		return rv;
	*rows = brq_store_read_all(c, r, sizeof(**rows), read_reaped, n);
	return *rows != NULL ? 0 : brq_store_fail(c, BRQ_ENOMEM, "out of memory");
}

int
brq_store_retention(brq_store_conn *c, uint64_t ttl_ms, uint32_t batch, brq_str **topics, uint32_t *n)
{
	char        ttl[24], lim[16];
	const char *v[2] = {ttl, lim};
	PGresult   *r;
	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long) ttl_ms);
	snprintf(lim, sizeof(lim), "%u", batch);
	int rv = brq_store_run(c, BRQ_STMT_RETENTION, v, NULL, NULL, TOPIC__N, &r);
	return rv != 0 ? rv : brq_store_topics_column(c, r, topics, n);
}

int
brq_store_retention_lag(brq_store_conn *c, uint64_t ttl_ms, int64_t *lag_ms)
{
	char        ttl[24];
	const char *v[1] = {ttl};
	PGresult   *r;
	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long) ttl_ms);
	int rv = brq_store_run(c, BRQ_STMT_RETENTION_LAG, v, NULL, NULL, 1, &r);
	if (rv != 0)
		return rv;
	*lag_ms = PQntuples(r) == 1 ? brq_store_int(r, 0, 0) : 0;
	return 0;
}

int
brq_store_span_map(brq_store_conn *c, uint64_t max_ids, int64_t *mapped, int64_t *cand)
{
	char        lim[24];
	const char *v[1] = {lim};
	PGresult   *r;
	snprintf(lim, sizeof(lim), "%llu", (unsigned long long) max_ids);
	int rv = brq_store_run(c, BRQ_STMT_SPAN_MAP, v, NULL, NULL, SPAN__N, &r);
	if (rv != 0)
		return rv;
	// No row: nothing to do, or another gateway's pass held the mark (SKIP LOCKED).
	bool row = PQntuples(r) == 1;
	*mapped  = row ? brq_store_int(r, 0, SPAN_MAPPED) : -1;
	*cand    = row && !brq_store_is_null(r, 0, SPAN_CAND) ? brq_store_int(r, 0, SPAN_CAND) : -1;
	return 0;
}

int
brq_store_span_prune(brq_store_conn *c)
{
	PGresult *r;
	return brq_store_run(c, BRQ_STMT_SPAN_PRUNE, NULL, NULL, NULL, 0, &r);
}
