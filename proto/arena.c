// SPDX-License-Identifier: MIT
// Per-message bump allocator for decoded arrays, reused across requests without churn.
#include "proto.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE (16u * 1024u) // ordinary chunk; a request with 1000 jobs needs ~5
#define RETAIN_MAX \
	(64u * 1024u) // bytes of chunks kept across resets: a typical request
		      // reuses them; a rare big one gives its memory back

struct brq_arena_chunk {
	brq_arena_chunk *next;
	size_t           cap;  // bytes in data
	size_t           used; // bytes handed out
	alignas(max_align_t) unsigned char data[];
};

static size_t
align_up(size_t n)
{
	const size_t a = alignof(max_align_t);
	return (n + a - 1) & ~(a - 1);
}

void
brq_arena_init(brq_arena *a)
{
	a->head = NULL;
	a->cur  = NULL;
}

void
brq_arena_reset(brq_arena *a)
{
	brq_arena_chunk **link = &a->head;
	size_t            kept = 0;

	// Keep chunks in order until the budget is spent; a one-off huge request must not
	// pin its memory for the life of the work item.
	while (*link != NULL) {
		brq_arena_chunk *c = *link;
		if (kept + c->cap <= RETAIN_MAX) {
			kept += c->cap;
			c->used = 0;
			link    = &c->next;
		} else {
			*link = c->next;
			free(c);
		}
	}
	a->cur = a->head;
}

void
brq_arena_swap(brq_arena *a, brq_arena *b)
{
	brq_arena_reset(a);
	brq_arena_reset(b);
	brq_arena t = *a;
	*a          = *b;
	*b          = t;
}

void
brq_arena_fini(brq_arena *a)
{
	brq_arena_chunk *c = a->head;
	while (c != NULL) {
		brq_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->cur  = NULL;
}

void *
brq_arena_alloc(brq_arena *a, size_t n, size_t size)
{
	size_t need;

	if (size != 0 && n > (SIZE_MAX - alignof(max_align_t)) / size) {
		return NULL;
	}
	need = align_up(n * size);
	if (need == 0) {
		need = alignof(max_align_t); // distinct non-NULL pointer for empty arrays
	}
	// Use the current chunk, then any later (reset) chunk with room.
	for (brq_arena_chunk *c = a->cur; c != NULL; c = c->next) {
		if (c->cap - c->used >= need) {
			void *p = c->data + c->used;
			c->used += need;
			a->cur = c;
			memset(p, 0, need);
			return p;
		}
	}
	size_t cap = need > CHUNK_SIZE ? need : CHUNK_SIZE;
	if (cap > SIZE_MAX - sizeof(brq_arena_chunk)) {
		return NULL;
	}
	brq_arena_chunk *c = malloc(sizeof(brq_arena_chunk) + cap);
	if (c == NULL) {
		return NULL;
	}
	c->cap  = cap;
	c->used = need;
	// Insert after cur so untouched reset chunks stay available for later calls.
	if (a->cur == NULL) {
		c->next = a->head;
		a->head = c;
	} else {
		c->next      = a->cur->next;
		a->cur->next = c;
	}
	a->cur = c;
	memset(c->data, 0, need);
	return c->data;
}
