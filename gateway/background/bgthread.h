// SPDX-License-Identifier: MIT
// A background thread with a database connection of its own, sleeping between rounds
// until it is stopped: the connection, the lock and condition variable it sleeps on,
// and the flags stop sets (janitor, scheduler).
#ifndef BRQ_GATEWAY_BGTHREAD_H
#define BRQ_GATEWAY_BGTHREAD_H

#include "brq_base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "store/store.h"

typedef struct brq_bgthread {
	brq_store_conn  conn;
	pthread_t       thread;
	pthread_mutex_t mtx;
	pthread_cond_t  cv;       // signalled by stop; monotonic clock (brq_deadline_at)
	bool            stopping; // under mtx
	atomic_bool     abort;    // set by stop: for a connection's stop flag (brq_store_conn_opts.stop)
	bool            running;  // the thread was started (joined by stop)
} brq_bgthread;

// Prepares b (zeroed by the caller): its connection on store st (borrowed; o as for
// brq_store_conn_init, with abort as its stop flag whatever o->stop says), its lock and
// condition variable. 0, or BRQ_EUNAVAIL with
// nothing left to undo.
BRQ_MUSTCHECK int brq_bgthread_init(brq_bgthread *b, const brq_store *st, const brq_store_conn_opts *o);
// Starts the thread running fn(arg). 0, or BRQ_EUNAVAIL with b released (as by
// brq_bgthread_stop).
BRQ_MUSTCHECK int brq_bgthread_start(brq_bgthread *b, void *(*fn)(void *), void *arg);
// Sets stopping and abort, wakes the thread and joins it (when it was started), then
// releases b's lock, condition variable and connection.
void brq_bgthread_stop(brq_bgthread *b);
// Whether stop was asked (from any thread, without b's lock).
bool brq_bgthread_is_stopping(brq_bgthread *b);

#endif
