// SPDX-License-Identifier: MIT
// The monitor's terminal counts, shared with the stats operation (see figures.h).
#include "figures.h"

#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"

void
brq_figures_init(brq_figures *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
}

static void
rows_free(brq_figures_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].topic);
	free(rows);
}

void
brq_figures_fini(brq_figures *f)
{
	rows_free(f->rows, f->n);
	rows_free(f->seen, f->n_seen);
	f->rows = f->seen = NULL;
	f->n = f->n_seen = 0;
	pthread_mutex_destroy(&f->mu);
}

// Topic order: bytes, then length.
static int
topic_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);
	return c != 0 ? c : (la > lb) - (la < lb);
}

// Where topic is, or would be inserted, in rows[0..n) (sorted); true when it is there.
static bool
find(const brq_figures_row *rows, size_t n, const char *topic, size_t len, size_t *at)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int    c   = topic_cmp(rows[mid].topic, rows[mid].len, topic, len);
		if (c == 0) {
			*at = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return false;
}

// Inserts a zero row for topic at position `at` of *rows (*n of them, heap-owned).
// 0 or BRQ_ENOMEM (*rows unchanged).
static int
insert_zero(brq_figures_row **rows, size_t *n, size_t at, const char *topic, size_t len)
{
	char *copy = malloc(len + 1);
	if (copy == NULL)
		return BRQ_ENOMEM;
	brq_figures_row *grown = realloc(*rows, (*n + 1) * sizeof(**rows));
	if (grown == NULL) {
		free(copy);
		return BRQ_ENOMEM;
	}
	memcpy(copy, topic, len);
	copy[len] = '\0';
	memmove(&grown[at + 1], &grown[at], (*n - at) * sizeof(*grown));
	grown[at] = (brq_figures_row) {.topic = copy, .len = len};
	*rows     = grown;
	(*n)++;
	return 0;
}

// Copies n rows (heap-owned copies, topics too) and adds a zero row for each of the
// n_seen topics they lack. NULL when out of memory.
static brq_figures_row *
rows_with_seen(const brq_figures_row *rows, size_t n, const brq_figures_row *seen, size_t n_seen,
	       size_t *n_out)
{
	brq_figures_row *copy = calloc(n > 0 ? n : 1, sizeof(*copy));
	if (copy == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		copy[i] = rows[i];
		if ((copy[i].topic = malloc(rows[i].len + 1)) == NULL) {
			rows_free(copy, i);
			return NULL;
		}
		memcpy(copy[i].topic, rows[i].topic, rows[i].len);
		copy[i].topic[rows[i].len] = '\0';
	}
	for (size_t i = 0; i < n_seen; i++) {
		size_t at;
		if (!find(copy, n, seen[i].topic, seen[i].len, &at) &&
		    insert_zero(&copy, &n, at, seen[i].topic, seen[i].len) != 0) {
			rows_free(copy, n);
			return NULL;
		}
	}
	*n_out = n;
	return copy;
}

int
brq_figures_set(brq_figures *f, const brq_figures_row *rows, size_t n, bool estimated)
{
	pthread_mutex_lock(&f->mu);
	size_t           n_new;
	brq_figures_row *copy = rows_with_seen(rows, n, f->seen, f->n_seen, &n_new);
	if (copy == NULL) {
		pthread_mutex_unlock(&f->mu);
		return BRQ_ENOMEM;
	}
	brq_figures_row *old = f->rows, *old_seen = f->seen;
	size_t           old_n = f->n, old_n_seen = f->n_seen;
	f->rows      = copy;
	f->n         = n_new;
	f->seen      = NULL;
	f->n_seen    = 0;
	f->at_ms     = brq_now_ms();
	f->estimated = estimated;
	pthread_mutex_unlock(&f->mu);
	rows_free(old, old_n); // outside the lock: a stats reader waits for a copy, not a free
	rows_free(old_seen, old_n_seen);
	return 0;
}

int
brq_figures_note(brq_figures *f, const brq_str *topics, size_t n)
{
	int rv = 0;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; rv == 0 && i < n; i++) {
		const char *t = topics[i].ptr;
		size_t      l = topics[i].len, at;
		if (!find(f->seen, f->n_seen, t, l, &at))
			rv = insert_zero(&f->seen, &f->n_seen, at, t, l);
		// Before the first count stats counts everything exactly: no rows yet.
		if (rv == 0 && f->at_ms != 0 && !find(f->rows, f->n, t, l, &at))
			rv = insert_zero(&f->rows, &f->n, at, t, l);
	}
	pthread_mutex_unlock(&f->mu);
	return rv;
}

static int
stats_cmp(const void *x, const void *y)
{
	const brq_topic_stats *a = x, *b = y;
	return topic_cmp(a->topic.ptr, a->topic.len, b->topic.ptr, b->topic.len);
}

// One entry per topic of the active rows (equal topics adjacent: the store orders by
// topic), sorted by topic bytes. *n entries of out (room for n_active + extra).
static void
group_active(const brq_store_depth_row *active, size_t n_active, brq_topic_stats *out, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < n_active; i++) {
		const brq_store_depth_row *r = &active[i];
		if (k == 0 || out[k - 1].topic.len != r->topic.len ||
		    memcmp(out[k - 1].topic.ptr, r->topic.ptr, r->topic.len) != 0)
			out[k++] = (brq_topic_stats) {.topic = r->topic};
		brq_topic_stats *t = &out[k - 1];
		t->count[r->state] += r->count;
		uint64_t age_ms = (uint64_t) (r->ready_age_s * 1000.0);
		if (age_ms > t->oldest_ready_age_ms)
			t->oldest_ready_age_ms = age_ms;
	}
	if (k > 1)
		qsort(out, k, sizeof(*out), stats_cmp);
	*n = k;
}

int
brq_figures_stats(brq_figures *f, brq_arena *a, const brq_store_depth_row *active, size_t n_active,
		  brq_topic_stats **out, uint32_t *n_out, uint64_t *at_ms, bool *estimated)
{
	brq_figures_row *term;
	size_t           n_term, n_act;
	int              rv = brq_figures_get(f, a, &term, &n_term, at_ms, estimated);
	if (rv != 0)
		return rv;
	brq_topic_stats *act = brq_arena_alloc(a, n_active + 1, sizeof(*act));
	brq_topic_stats *res = brq_arena_alloc(a, n_active + n_term + 1, sizeof(*res));
	if (act == NULL || res == NULL)
		return BRQ_ENOMEM;
	group_active(active, n_active, act, &n_act);
	brq_str *seen = brq_arena_alloc(a, n_act + 1, sizeof(*seen));
	if (seen == NULL)
		return BRQ_ENOMEM;
	for (size_t i = 0; i < n_act; i++)
		seen[i] = act[i].topic;
	if ((rv = brq_figures_note(f, seen, n_act)) != 0)
		return rv;
	// Merge two lists sorted by topic bytes.
	size_t i = 0, j = 0, k = 0;
	while (i < n_act || j < n_term) {
		brq_topic_stats t = {.topic = {0}};
		if (j < n_term)
			t.topic = (brq_str) {.ptr = term[j].topic, .len = (uint32_t) term[j].len};
		int c = i == n_act ? 1 : j == n_term ? -1 : stats_cmp(&act[i], &t);
		if (c <= 0)
			t = act[i++];
		if (c >= 0) {
			for (int s = BRQ_STATE_DONE; s < BRQ_STATE__COUNT; s++) // the terminal states
				t.count[s] = term[j].count[s];
			j++;
		}
		res[k++] = t;
	}
	*out   = res;
	*n_out = (uint32_t) k;
	return 0;
}

int
brq_figures_get(brq_figures *f, brq_arena *a, brq_figures_row **rows, size_t *n, uint64_t *at_ms,
		bool *estimated)
{
	int rv = 0;
	pthread_mutex_lock(&f->mu);
	brq_figures_row *out = brq_arena_alloc(a, f->n, sizeof(*out));
	if (out == NULL) {
		rv = BRQ_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < f->n; i++) {
		out[i] = f->rows[i];
		if ((out[i].topic = brq_arena_alloc(a, f->rows[i].len + 1, 1)) == NULL) {
			rv = BRQ_ENOMEM;
			goto out;
		}
		memcpy(out[i].topic, f->rows[i].topic, f->rows[i].len + 1);
	}
	*rows      = out;
	*n         = f->n;
	*at_ms     = f->at_ms;
	*estimated = f->estimated;
out:
	pthread_mutex_unlock(&f->mu);
	return rv;
}
