// SPDX-License-Identifier: MIT
// The console's history writer: adds this gateway's counts per topic and minute to job_history.
#include "history.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"
#include "log/log.h"
#include "proto.h"

_Static_assert(BRQ_WAIT_BUCKETS <= BRQ_STORE_WAIT_MAX, "the store carries every wait bucket");

static int
view_cmp(const void *a, const void *b)
{
	const brq_metrics_history_view *x = a, *y = b;
	size_t                          n = x->topic_len < y->topic_len ? x->topic_len : y->topic_len;
	int                             c = memcmp(x->topic, y->topic, n);
	return c != 0 ? c : (x->topic_len > y->topic_len) - (x->topic_len < y->topic_len);
}

// The counters of topic t as last written (base sorted by topic), or NULL (all 0).
static const brq_metrics_history_view *
base_of(const brq_history *h, const brq_metrics_history_view *t)
{
	if (h->n_base == 0)
		return NULL;
	return bsearch(t, h->base, h->n_base, sizeof(*t), view_cmp);
}

// The difference between now's counters and the base for the topics of now[0..n)
// (sorted) into rows (room for n) and waits (n x BRQ_WAIT_BUCKETS): topics that
// changed and are valid topics (the registry's overflow entry is not). Returns how
// many rows.
static uint32_t
differences(const brq_history *h, const brq_metrics_history_view *now, size_t n,
	    brq_store_history_count *rows, uint64_t *waits)
{
	uint32_t k = 0;
	for (size_t i = 0; i < n && k < BRQ_HISTORY_TOPICS_MAX; i++) {
		const brq_metrics_history_view *t = &now[i], *b = base_of(h, t);
		if (!brq_topic_valid(t->topic, t->topic_len))
			continue;
		uint64_t  started  = t->claimed - (b != NULL ? b->claimed : 0);
		uint64_t  finished = t->settled - (b != NULL ? b->settled : 0);
		uint64_t *w        = waits + (size_t) k * BRQ_WAIT_BUCKETS;
		for (int j = 0; j < BRQ_WAIT_BUCKETS; j++)
			w[j] = t->wait[j] - (b != NULL ? b->wait[j] : 0);
		if (started == 0 && finished == 0)
			continue;
		rows[k++] = (brq_store_history_count) {
			.topic    = {.ptr = t->topic, .len = (uint32_t) t->topic_len},
			.started  = started,
			.finished = finished,
			.wait     = started > 0 ? w : NULL,
			.n_wait   = started > 0 ? BRQ_WAIT_BUCKETS : 0,
		};
	}
	return k;
}

// Writes the differences; on success now becomes the base (taken). 0, or the
// failure with now freed and the base kept (the counts go with the next write).
static int
write_counts(brq_history *h, int64_t minute_ms, brq_metrics_history_view *now, size_t n)
{
	brq_store_history_count *rows  = calloc(n > 0 ? n : 1, sizeof(*rows));
	uint64_t                *waits = calloc(n > 0 ? n : 1, sizeof(*waits) * BRQ_WAIT_BUCKETS);
	int                      rv    = BRQ_ENOMEM;
	if (rows != NULL && waits != NULL) {
		uint32_t k = differences(h, now, n, rows, waits);
		rv         = k > 0 ? brq_store_history_add(&h->bg.conn, minute_ms, rows, k) : 0;
		brq_store_reset(&h->bg.conn);
	}
	free(rows);
	free(waits);
	if (rv != 0) {
		free(now);
		return rv;
	}
	free(h->base);
	h->base   = now;
	h->n_base = n;
	return 0;
}

int
brq_history_write(brq_history *h, int64_t minute_ms)
{
	brq_metrics_history_view *now;
	size_t                    n;
	if (!brq_store_ready(&h->bg.conn))
		return BRQ_EUNAVAIL;
	if (brq_metrics_history_read(&now, &n) != 0)
		return BRQ_ENOMEM;
	if (n > 1)
		qsort(now, n, sizeof(*now), view_cmp);
	int rv = write_counts(h, minute_ms, now, n);
	if (rv != 0) {
		BRQ_LOG_WARN("history_write_failed", "stmt=add error=%s reason=%s", brq_err_name(rv),
			     BRQ_LOG_Q(brq_store_errmsg(&h->bg.conn)));
		return rv;
	}
	// The backlog: a count of its own, so a failure (a statement timeout on a huge
	// backlog) leaves the counts written.
	rv = brq_store_history_depth(&h->bg.conn, minute_ms);
	if (rv != 0)
		BRQ_LOG_WARN("history_write_failed", "stmt=depth error=%s reason=%s", brq_err_name(rv),
			     BRQ_LOG_Q(brq_store_errmsg(&h->bg.conn)));
	brq_store_reset(&h->bg.conn);
	h->written++;
	return rv;
}

static void
prune(brq_history *h)
{
	uint32_t deleted = 0;
	int      rv      = brq_store_history_prune(&h->bg.conn, BRQ_HISTORY_KEEP_MS, &deleted);
	if (rv != 0)
		BRQ_LOG_WARN("history_prune_failed", "error=%s reason=%s", brq_err_name(rv),
			     BRQ_LOG_Q(brq_store_errmsg(&h->bg.conn)));
	else if (deleted > 0)
		BRQ_LOG_DEBUG("history_pruned", "rows=%u", deleted);
	brq_store_reset(&h->bg.conn);
}

// One round (bgthread.h): a write into the minute of the wall clock, and the pruning
// when it is due.
static uint64_t
history_round(void *arg)
{
	brq_history *h     = arg;
	uint64_t     start = brq_now_ms();
	int64_t      wall  = (int64_t) brq_wall_ms();
	// A failure is logged there, and its counts go with the next write.
	if (brq_history_write(h, wall - wall % 60000) != 0)
		BRQ_LOG_DEBUG("history_write_deferred", NULL);
	if (start >= h->next_prune_ms && brq_store_is_up(&h->bg.conn)) {
		prune(h);
		h->next_prune_ms = start + BRQ_HISTORY_PRUNE_MS;
	}
	return start + BRQ_HISTORY_FLUSH_MS;
}

int
brq_history_start(brq_history *h, const brq_store *st)
{
	memset(h, 0, sizeof(*h));
	int rv = brq_bgthread_init(&h->bg, st,
				   &(brq_store_conn_opts) {.name = "history", .role = BRQ_STORE_JANITOR});
	if (rv != 0)
		return rv;
	// The thread takes no signals: they belong to the main thread's handling.
	h->next_prune_ms = brq_now_ms();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rv = brq_bgthread_start(&h->bg, &(brq_bgthread_loop) {.round = history_round, .arg = h});
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rv;
}

void
brq_history_stop(brq_history *h)
{
	brq_bgthread_stop(&h->bg);
	free(h->base);
	h->base   = NULL;
	h->n_base = 0;
}
