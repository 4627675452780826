// SPDX-License-Identifier: MIT
// Per-topic figures of the metrics registry read back as plain values, for the web console's overview.
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
