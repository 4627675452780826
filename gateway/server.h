// SPDX-License-Identifier: MIT
// The RPC server: one NNG rep0 socket, a fixed set of work items, long-poll waiters.
#ifndef BRQ_GATEWAY_SERVER_H
#define BRQ_GATEWAY_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

#include "auth.h"
#include "config.h"
#include "pool.h"
#include "proto.h"
#include "sql.h"
#include "work.h"

// A parked long-poll re-checks the database on its own at least this often, in
// case the monitor's round (which wakes waiters of topics with ready jobs) cannot
// run.
#define BRQ_SERVER_RECHECK_MS 30000

typedef struct brq_server {
	const struct brq_config *cfg;  // borrowed
	const struct brq_auth   *auth; // borrowed
	brq_limits               lim;
	brq_sql                  sql;
	brq_pool                 pool;

	nng_socket   sock;
	nng_listener listener;
	brq_work    *work; // n_work items, allocated up front
	int          n_work;

	atomic_bool stopping;
	atomic_int  inflight;   // requests accepted and not yet answered
	atomic_int  long_polls; // requests with a wait, until answered

	// Parked long-polls, FIFO. wake_gen counts enqueues that made jobs ready; a
	// claim that saw an older generation than the current one retries instead of
	// parking, so a wake between its empty claim and its parking is not lost.
	pthread_mutex_t wmtx;
	brq_work       *whead, *wtail;
	uint64_t        wake_gen;
} brq_server;

// Opens the socket and listener (ipc socket mode from the config), allocates the
// work items, starts the pool, and begins receiving. Borrows cfg and auth, which
// must outlive the server. Returns 0, or -1 (logged) with nothing left running.
BRQ_MUSTCHECK int brq_server_start(brq_server *s, const struct brq_config *cfg, const struct brq_auth *auth);

// Graceful stop (NNG-NOTES §2.3.5): refuse new work with `unavailable`, answer
// parked long-polls, let in-flight requests finish within the shutdown grace, stop
// the pool, close the socket, stop every aio, then free.
void brq_server_stop(brq_server *s);

// Wakes up to n parked long-polls that claim `topic` (called after an enqueue
// committed jobs that are ready now). Any thread.
void brq_server_wake(brq_server *s, const char *topic, size_t topic_len, uint32_t n);

// Wakes every parked long-poll that claims `topic`: the monitor's callback when
// its depth round finds ready jobs there (monitor.h on_ready). arg: the server.
void brq_server_wake_topic(void *arg, const char *topic, size_t topic_len);

// Generation of wakes so far (see wake_gen). Any thread.
uint64_t brq_server_wake_gen(brq_server *s);

// Parks a long-poll claim that found nothing, until a wake, its deadline or the
// poll interval. Pool threads only; w is owned by the waiters list afterwards.
void brq_server_park(brq_server *s, brq_work *w);

// Sends the reply in w->out (w->code set) and re-arms the context. Takes w.
void brq_server_reply(brq_server *s, brq_work *w);

#endif
