// SPDX-License-Identifier: MIT
// The janitor's statements (background/janitor.c): expired leases back to pending (the
// reaper) and terminal rows past their retention deleted, each in bounded batches that
// name the topics they touched.
#include "store_int.h"

#include <stdio.h>

int
brq_store_reap(brq_store_conn *c, uint32_t batch, brq_str **topics, uint32_t *n)
{
	char        lim[16];
	const char *v[1] = {lim};
	PGresult   *r;
	snprintf(lim, sizeof(lim), "%u", batch);
	int rv = brq_store_run(c, BRQ_STMT_REAP, v, NULL, NULL, TOPIC__N, &r);
	return rv != 0 ? rv : brq_store_topics_column(c, r, topics, n);
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
