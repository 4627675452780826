// SPDX-License-Identifier: MIT
// The RPC server: one NNG rep0 socket and a fixed set of work items, each a state machine
// from a received request to its reply.
#ifndef BRQ_GATEWAY_SERVER_H
#define BRQ_GATEWAY_SERVER_H

#include "brq_base.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

#include "auth.h"
#include "config/config.h"
#include "background/background.h"
#include "ops.h"
#include "pool.h"
#include "proto.h"
#include "quota.h"
#include "stash.h"
#include "store/store.h"
#include "waiters.h"
#include "watch.h"
#include "work.h"

// A parked long-poll re-checks the database on its own at least this often, in
// case the monitor's round (which wakes waiters of topics with ready jobs) cannot
// run.
#define BRQ_SERVER_RECHECK_MS 30000

typedef struct brq_server {
	const brq_config *cfg;  // borrowed
	const brq_auth   *auth; // borrowed
	brq_limits        lim;
	brq_pool          pool;
	brq_waiters       waiters;
	brq_watches       watches; // workers' watches for cancels, and the cancels heard
	brq_ops           ops;
	brq_quota         quota; // each connection's and token's share of the work items

	nng_socket   sock;
	nng_listener listener;
	brq_work    *work; // n_work items, allocated up front
	int          n_work;
	brq_stash    stash;   // warm arenas and reply buffers for the busy items
	brq_figures  figures; // the monitor's terminal counts, for stats (the monitor writes)

	atomic_bool stopping;
	atomic_int  inflight;   // requests accepted and not yet answered
	atomic_int  long_polls; // requests with a wait, until answered
} brq_server;

// Fault seam: how reply messages are allocated (nng_msg_alloc). Tests swap it to
// reach the path where a reply cannot be allocated.
extern int (*brq_server_msg_alloc)(nng_msg **m, size_t size);

// Test seam: when set, called on the enqueue's pool thread after it has ended a taken
// claim's sleep and before it decides with the claim's callback which of them hands
// the claim back (server.c handback()). Tests hold it there until the callback has
// run, to take the path where the taker hands back. NULL in the gateway.
extern void (*brq_server_handback_seam)(const brq_work *w);

// Opens the socket and listener (ipc socket mode from the config), allocates the
// work items, starts the pool on store st, and begins receiving. Borrows cfg, auth
// and st, which must outlive the server. Returns 0, or a BRQ_E* code (logged) with
// nothing left running.
BRQ_MUSTCHECK int brq_server_start(brq_server *s, const brq_config *cfg, const brq_auth *auth,
				   const brq_store *st);

// Graceful stop (NNG-NOTES §2.3.5): refuse new work with `unavailable`, answer
// parked long-polls, let in-flight requests finish within the shutdown grace, stop
// the pool, close the socket, stop every aio, then free.
void brq_server_stop(brq_server *s);

// The monitor's callback when its depth round finds jobs ready in `topic` (monitor.h
// on_ready): wakes every parked long-poll that claims it. arg: the server.
void brq_server_wake_topic(void *arg, const char *topic, size_t topic_len);

// The cancel listener's callbacks (cancel_listener.h; arg: the server). cancels_heard: cancels
// of running jobs, ids[i] of topics[i] (borrowed for the call), wake the watches of their
// topics; cancels_live: the listener listens anew (true) or lost its connection.
void brq_server_cancels_heard(void *arg, const uint64_t *ids, const brq_str *topics, size_t n);
void brq_server_cancels_live(void *arg, bool live);

#endif
