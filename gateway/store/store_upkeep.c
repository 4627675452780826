// SPDX-License-Identifier: MIT
// The janitor's statements (background/janitor.c): expired leases back to pending (the
// reaper, which quarantines crash loops: SPEC invariant 18) and terminal rows past their retention deleted,
// each in bounded batches that name the topics they touched.
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
