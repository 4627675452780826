// SPDX-License-Identifier: MIT
// Watches: workers' long-polls for the cancels of their running jobs (op `watch`).
//
// The cancel listener (background/cancel_listener.c) hears every cancel of a running job that
// PostgreSQL announces, whichever gateway made it, and hands them here in batches
// (brq_server_cancels_heard). They go into a ring of the last BRQ_WATCH_RING cancels,
// numbered in the order heard: a note is (seq, job id, the topic's keyed hash). A watch
// names its topics and the cursor of its last answer, "<epoch>.<seq>": every cancel heard
// before seq in that epoch was considered for it. It is answered at once with the cancels
// of its topics from seq on (at most BRQ_WATCH_IDS_MAX, oldest first), or parked until a
// cancel of one of its topics is heard, or until its wait ends (then with none). Its
// worker raises the cancel flags of the jobs among them that it runs, and drops the rest.
//
// Resync. The epoch is a random number drawn each time the listener starts listening (a
// connection, LISTEN included). A cursor of another epoch (another gateway's, or one from
// before the listener lost its connection: cancels may have gone unheard meanwhile), one
// the ring has passed (more than BRQ_WATCH_RING cancels since), one that is not ours, or
// none at all, is answered at once with `resync` and a cursor of now: the worker then
// asks the database about every lease it holds (a heartbeat, which names a canceled
// job's reason). Everything canceled before that heartbeat it hears from the database,
// everything after it from the ring. While the listener does not listen, watches wait
// (its return answers them all with resync); one whose wait ends then gets resync and a
// cursor no epoch accepts.
//
// Why topics rather than the jobs a worker holds: a worker's jobs change with every
// claim, and a parked request cannot be amended, while its topics never change. The
// gateway holds nothing per job; a cancel wakes every watch of its topic (workers ignore
// ids they do not hold), which costs a reply per worker of that topic for each batch of
// cancels: cancels of running jobs are an operator's act, rare next to claims.
//
// Parked watches hold no thread and no database connection: they are answered on NNG's
// threads (server.c). Their number is bounded by BROOQ_MAX_WATCHES, per connection and
// per token (quota.h).
#ifndef BRQ_GATEWAY_WATCH_H
#define BRQ_GATEWAY_WATCH_H

#include "brq_base.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "work.h"

// Cancels remembered (a power of two): 24 bytes each, 384 KiB.
#define BRQ_WATCH_RING 16384u

typedef struct brq_watch_note {
	uint64_t seq; // when heard, from 1
	uint64_t id;  // the job
	uint64_t th;  // its topic's keyed hash (brq_watches.key)
} brq_watch_note;

typedef struct brq_watches {
	pthread_mutex_t mtx;
	brq_watch_note *ring;        // note seq at ring[seq % BRQ_WATCH_RING]
	uint64_t        next_seq;    // seq of the next cancel heard
	uint64_t        epoch;       // 0 while the listener does not listen
	uint64_t        epoch_start; // first seq heard in this epoch
	brq_list        parked;      // of brq_work (park_link), oldest first
	bool            stopping;    // brq_watches_stop ran: nothing parks any more
	unsigned char   key[crypto_shorthash_KEYBYTES];
} brq_watches;

// 0 or BRQ_ENOMEM (nothing to undo).
BRQ_MUSTCHECK int brq_watches_init(brq_watches *wt);
// Nothing may be parked any more.
void brq_watches_fini(brq_watches *wt);

// The listener listens from now on, on a connection new since the last call (a new
// epoch), or has lost its connection (live false: epoch 0). Either way every parked
// watch is woken: its cursor can no longer be trusted. Any thread.
void brq_watches_live(brq_watches *wt, bool live);
// Cancels heard: ids[i] of topics[i] (borrowed for the call), in the order the database
// sent them. Wakes the parked watches of their topics. Any thread.
void brq_watches_heard(brq_watches *wt, const uint64_t *ids, const brq_str *topics, size_t n);

// Prepares watch w (decoded, on an NNG thread): its topics' hashes and its cursor. 0 or
// BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_watches_begin(brq_watches *wt, brq_work *w);
// Fills *rep (arrays in w's arena) with w's answer when there is something to say: a
// cancel of its topics since its cursor, or resync; or when `final` (its wait is over:
// then possibly nothing). Else parks w for at most ms and returns false: the parked list
// owns w until its callback runs, which must call brq_watches_unpark() first.
BRQ_MUSTCHECK bool brq_watches_answer(brq_watches *wt, brq_work *w, bool final, uint64_t ms,
				      brq_watch_rep *rep);
// In w's callback after a park: takes w out of the parked list if a wake did not.
void brq_watches_unpark(brq_watches *wt, brq_work *w);
// A peer's pipe went away: its parked watches are marked orphaned and woken, to be
// dropped. Any thread.
void brq_watches_pipe_gone(brq_watches *wt, uint32_t pipe_id);
// The gateway is stopping: wakes every parked watch, and from now on none parks (each is
// answered at once, `final`).
void brq_watches_stop(brq_watches *wt);

#endif
