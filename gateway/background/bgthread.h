// SPDX-License-Identifier: MIT
// A background thread that runs rounds of work, sleeping between them until it is
// stopped: its lock and condition variable, the flags stop sets, and optionally a
// database connection of its own (janitor, scheduler and monitor have one; the
// self-probe talks to the gateway's own listener and has none).
#ifndef BRQ_GATEWAY_BGTHREAD_H
#define BRQ_GATEWAY_BGTHREAD_H

#include "brq_base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

// What a round returns to end the thread for good (stop still joins it).
#define BRQ_BGTHREAD_END UINT64_MAX

// The thread's work. round runs first at once, then again at the time (brq_now_ms())
// it returned, until stop, or until it returns BRQ_BGTHREAD_END; a time already past
// runs it again at once. A round in progress is not interrupted: it may poll
// brq_bgthread_is_stopping(), and statements on the connection are abandoned by stop.
// While the thread sleeps, on_slice (optional) runs after every wait of at most
// slice_ms (and once more when stop wakes it): for what must stay fresh between
// rounds (the monitor's brooq_db_up). Every function gets arg.
typedef struct brq_bgthread_loop {
	uint64_t (*round)(void *arg);
	void (*on_slice)(void *arg);
	uint64_t slice_ms; // with on_slice: the longest single wait; 0: one wait to the round
	void    *arg;
} brq_bgthread_loop;

typedef struct brq_bgthread {
	brq_store_conn    conn;     // only when has_conn
	bool              has_conn; // prepared with a store
	pthread_t         thread;
	pthread_mutex_t   mtx;
	pthread_cond_t    cv;       // signalled by stop; monotonic clock (brq_deadline_at)
	bool              stopping; // under mtx
	atomic_bool       abort;    // set by stop: the connection's stop flag (brq_store_conn_opts.stop)
	bool              running;  // the thread was started (joined by stop)
	bool              is_ready; // prepared and not yet released (stop releases once)
	brq_bgthread_loop loop;     // copied at start
} brq_bgthread;

// Prepares b (zeroed by the caller): its lock and condition variable, and, when st is
// not NULL, its connection on store st (borrowed; o as for brq_store_conn_init, with
// abort as its stop flag whatever o->stop says). st NULL: no connection (o unused,
// b->conn never touched). 0, or BRQ_EUNAVAIL with nothing left to undo.
BRQ_MUSTCHECK int brq_bgthread_init(brq_bgthread *b, const brq_store *st, const brq_store_conn_opts *o);
// Starts the thread running loop (copied; loop->round required). 0, or BRQ_EUNAVAIL
// with b released (as by brq_bgthread_stop).
BRQ_MUSTCHECK int brq_bgthread_start(brq_bgthread *b, const brq_bgthread_loop *loop);
// Sets stopping and abort, wakes the thread and joins it (when it was started), then
// releases b's lock, condition variable and connection. A second call, or one on a b
// that was released or never prepared (zeroed), does nothing.
void brq_bgthread_stop(brq_bgthread *b);
// Whether stop was asked (from any thread, without b's lock).
bool brq_bgthread_is_stopping(brq_bgthread *b);

#endif
