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
	f->rows = NULL;
	f->n    = 0;
	pthread_mutex_destroy(&f->mu);
}

int
brq_figures_set(brq_figures *f, const brq_figures_row *rows, size_t n)
{
	brq_figures_row *copy = calloc(n > 0 ? n : 1, sizeof(*copy));
	if (copy == NULL)
		return BRQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		copy[i] = rows[i];
		if ((copy[i].topic = malloc(rows[i].len + 1)) == NULL) {
			rows_free(copy, i);
			return BRQ_ENOMEM;
		}
		memcpy(copy[i].topic, rows[i].topic, rows[i].len);
		copy[i].topic[rows[i].len] = '\0';
	}
	pthread_mutex_lock(&f->mu);
	brq_figures_row *old   = f->rows;
	size_t           old_n = f->n;
	f->rows                = copy;
	f->n                   = n;
	f->at_ms               = brq_now_ms();
	pthread_mutex_unlock(&f->mu);
	rows_free(old, old_n); // outside the lock: a stats reader waits for a copy, not a free
	return 0;
}

static int
stats_cmp(const void *x, const void *y)
{
	const brq_topic_stats *a = x, *b = y;
	size_t                 n = a->topic.len < b->topic.len ? a->topic.len : b->topic.len;
	int                    c = memcmp(a->topic.ptr, b->topic.ptr, n);
	return c != 0 ? c : (a->topic.len > b->topic.len) - (a->topic.len < b->topic.len);
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
		  brq_topic_stats **out, uint32_t *n_out, uint64_t *at_ms)
{
	brq_figures_row *term;
	size_t           n_term, n_act;
	int              rv = brq_figures_get(f, a, &term, &n_term, at_ms);
	if (rv != 0)
		return rv;
	brq_topic_stats *act = brq_arena_alloc(a, n_active + 1, sizeof(*act));
	brq_topic_stats *res = brq_arena_alloc(a, n_active + n_term + 1, sizeof(*res));
	if (act == NULL || res == NULL)
		return BRQ_ENOMEM;
	group_active(active, n_active, act, &n_act);
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
brq_figures_get(brq_figures *f, brq_arena *a, brq_figures_row **rows, size_t *n, uint64_t *at_ms)
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
	*rows  = out;
	*n     = f->n;
	*at_ms = f->at_ms;
out:
	pthread_mutex_unlock(&f->mu);
	return rv;
}
