/* SPDX-License-Identifier: MIT */
/*
 * A few warm request buffers for many work items. The server has one work item per
 * possible concurrent request (max_waiters and more: over a thousand), but only about
 * a pool's worth are busy at once. If each kept the arena and reply buffer of its last
 * request, RSS would creep up to items x 128 KiB as requests rotate through them
 * (issue 10.4: 10 to 100 MiB over 400k jobs). Instead a work item takes warm storage
 * when a request arrives and gives it back when the request ends: the busy items have
 * it, the idle ones hold nothing, and the stash keeps at most `cap` spares.
 */
#ifndef BRQ_STASH_H
#define BRQ_STASH_H

#include <pthread.h>

#include "proto.h"

typedef struct brq_stash_slot {
	brq_arena arena;
	brq_buf   out;
} brq_stash_slot;

typedef struct brq_stash {
	pthread_mutex_t mu;
	brq_stash_slot *slots; /* cap slots; the first n hold warm storage */
	int             n, cap;
} brq_stash;

/* Prepares st with room for cap spares (cap > 0). 0 or BRQ_ENOMEM. */
int brq_stash_init(brq_stash *st, int cap) BRQ_MUSTCHECK;
/* Frees the spares and the slots. */
void brq_stash_fini(brq_stash *st);
/* Gives an arena and buffer that hold no storage (reset, as brq_stash_give leaves
 * them) the storage of a spare, if there is one; else they stay empty and grow as
 * needed. Any thread. */
void brq_stash_take(brq_stash *st, brq_arena *a, brq_buf *b);
/* Takes a's and b's storage as a spare, or frees it when the stash is full; a and b
 * are left holding no storage, still usable. Any thread. */
void brq_stash_give(brq_stash *st, brq_arena *a, brq_buf *b);

#endif
