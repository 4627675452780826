/* SPDX-License-Identifier: MIT */
/* Warm request storage shared by the work items (see stash.h for why). */
#include "stash.h"

#include <stdlib.h>

int
brq_stash_init(brq_stash *st, int cap)
{
	st->n     = 0;
	st->cap   = cap;
	st->slots = calloc((size_t) cap, sizeof(*st->slots));
	if (st->slots == NULL)
		return BRQ_ENOMEM;
	for (int i = 0; i < cap; i++) {
		brq_arena_init(&st->slots[i].arena);
		brq_buf_init(&st->slots[i].out, 0); /* storage only: each user keeps its limit */
	}
	pthread_mutex_init(&st->mu, NULL);
	return 0;
}

void
brq_stash_fini(brq_stash *st)
{
	if (st->slots == NULL)
		return;
	for (int i = 0; i < st->cap; i++) {
		brq_arena_fini(&st->slots[i].arena);
		brq_buf_fini(&st->slots[i].out);
	}
	free(st->slots);
	st->slots = NULL;
	pthread_mutex_destroy(&st->mu);
}

void
brq_stash_take(brq_stash *st, brq_arena *a, brq_buf *b)
{
	pthread_mutex_lock(&st->mu);
	if (st->n > 0) {
		brq_stash_slot *s = &st->slots[--st->n];
		brq_arena_swap(a, &s->arena);
		brq_buf_swap(b, &s->out);
	}
	pthread_mutex_unlock(&st->mu);
}

void
brq_stash_give(brq_stash *st, brq_arena *a, brq_buf *b)
{
	pthread_mutex_lock(&st->mu);
	if (st->n < st->cap) {
		/* The most recently used storage is taken first (LIFO): it is the warmest. */
		brq_stash_slot *s = &st->slots[st->n++];
		brq_arena_swap(a, &s->arena);
		brq_buf_swap(b, &s->out);
		pthread_mutex_unlock(&st->mu);
		return;
	}
	pthread_mutex_unlock(&st->mu);
	brq_arena_fini(a);
	brq_arena_init(a);
	brq_buf_fini(b);
	brq_buf_reset(b);
}
