// SPDX-License-Identifier: MIT
// Per-topic figures of the metrics registry read back as plain values, for the web console's overview
// and its history; the buckets of the waits of started jobs.
#include "metrics_int.h"

#include <stdlib.h>
#include <string.h>

int
brq_metrics_topics_read(brq_metrics_topic_view **out, size_t *n)
{
	struct topic_entry **v;
	size_t               cnt;
	if (brq_metrics_snapshot(&v, &cnt) != 0) {
		return BRQ_ENOMEM;
	}
	qsort(v, cnt, sizeof(*v), brq_metrics_entry_cmp);
	brq_metrics_topic_view *t = calloc(cnt > 0 ? cnt : 1, sizeof(*t));
	if (t == NULL) {
		free(v);
		return BRQ_ENOMEM;
	}
	// The gauges under depth_mu, as the renderer reads them: one snapshot, never half.
	pthread_mutex_lock(&M.reg.depth_mu);
	for (size_t i = 0; i < cnt; i++) {
		memcpy(t[i].jobs, v[i]->jobs, sizeof(t[i].jobs));
		t[i].oldest_ready_age_s = v[i]->oldest_ready_age_s;
	}
	pthread_mutex_unlock(&M.reg.depth_mu);
	for (size_t i = 0; i < cnt; i++) {
		const struct topic_entry *e = v[i];
		size_t l = e->len < sizeof(t[i].topic) - 1 ? e->len : sizeof(t[i].topic) - 1;
		memcpy(t[i].topic, e->name, l);
		t[i].topic_len = l;
		t[i].enqueued  = atomic_load_explicit(&e->counter[BRQ_MT_ENQUEUED], memory_order_relaxed);
		t[i].claimed   = atomic_load_explicit(&e->counter[BRQ_MT_CLAIMED], memory_order_relaxed);
		t[i].dead      = atomic_load_explicit(&e->dead, memory_order_relaxed);
		for (int o = 0; o < BRQ_OUTCOME__COUNT; o++) {
			t[i].settled += atomic_load_explicit(&e->settle[o], memory_order_relaxed);
		}
	}
	free(v);
	*out = t;
	*n   = cnt;
	return 0;
}

const uint64_t brq_wait_bucket_le_ms[BRQ_WAIT_BUCKETS - 1] = {
	1,       2,       5,       10,       20,       50,       100,       200,    500,
	1000,    2000,    5000,    10000,    20000,    50000,    100000,    200000, 500000,
	1000000, 2000000, 5000000, 10000000, 20000000, 50000000, 100000000,
};

unsigned
brq_wait_bucket(uint64_t wait_ms)
{
	unsigned i = 0;
	while (i < BRQ_WAIT_BUCKETS - 1 && wait_ms > brq_wait_bucket_le_ms[i]) {
		i++;
	}
	return i;
}

double
brq_wait_quantile(const uint64_t hist[BRQ_WAIT_BUCKETS], double q)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < BRQ_WAIT_BUCKETS; i++) {
		total += hist[i];
	}
	if (total == 0) {
		return -1;
	}
	// The rank of the quantile among the waits, 1-based: the smallest wait with at
	// least q of them at or below it.
	double   rank = q * (double) total;
	uint64_t seen = 0;
	for (unsigned i = 0; i < BRQ_WAIT_BUCKETS; i++) {
		if (hist[i] == 0 || (double) (seen + hist[i]) < rank) {
			seen += hist[i];
			continue;
		}
		double lo = i == 0 ? 0 : (double) brq_wait_bucket_le_ms[i - 1];
		if (i == BRQ_WAIT_BUCKETS - 1) {
			return lo;
		}
		double hi = (double) brq_wait_bucket_le_ms[i];
		return lo + (hi - lo) * ((rank - (double) seen) / (double) hist[i]);
	}
	return (double) brq_wait_bucket_le_ms[BRQ_WAIT_BUCKETS - 2];
}

int
brq_metrics_history_read(brq_metrics_history_view **out, size_t *n)
{
	struct topic_entry **v;
	size_t               cnt;
	if (brq_metrics_snapshot(&v, &cnt) != 0) {
		return BRQ_ENOMEM;
	}
	brq_metrics_history_view *t = calloc(cnt > 0 ? cnt : 1, sizeof(*t));
	if (t == NULL) {
		free(v);
		return BRQ_ENOMEM;
	}
	for (size_t i = 0; i < cnt; i++) {
		const struct topic_entry *e = v[i];
		size_t l = e->len < sizeof(t[i].topic) - 1 ? e->len : sizeof(t[i].topic) - 1;
		memcpy(t[i].topic, e->name, l);
		t[i].topic_len = l;
		t[i].claimed   = atomic_load_explicit(&e->counter[BRQ_MT_CLAIMED], memory_order_relaxed);
		for (int o = 0; o < BRQ_OUTCOME__COUNT; o++) {
			t[i].settled += atomic_load_explicit(&e->settle[o], memory_order_relaxed);
		}
		for (int b = 0; b < BRQ_WAIT_BUCKETS; b++) {
			t[i].wait[b] = atomic_load_explicit(&e->wait[b], memory_order_relaxed);
		}
	}
	free(v);
	*out = t;
	*n   = cnt;
	return 0;
}
