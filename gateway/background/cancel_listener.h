// SPDX-License-Identifier: MIT
// Cancel listener: a background thread with its own store connection that LISTENs to the
// cancels of running jobs, which the cancel statement announces at its commit (NOTIFY),
// and hands them to the RPC side, which wakes the watches of the workers of their topics
// (rpc/watch.h): so an operator's cancel reaches the running handler within a second,
// whichever gateway it went through and whichever its worker waits on.
//
// The connection (store role BRQ_STORE_LISTENER, application_name "brooq-listener")
// LISTENs from its connect on. Each new connection is reported (on_live true) once an
// echo proved it hears the channel (a NOTIFY of its own, store.h brq_store_listen), each
// loss (on_live false) at once: cancels announced while no connection listened are not
// heard, so the RPC side then has its workers ask the database (rpc/watch.h, resync).
// With nothing heard for a while (idle_ms) an echo proves the connection still hears; a
// connection that does not (a pooler in transaction mode) is reported lost and logged
// (cancel_listener_deaf), and asked again every idle_ms. It reconnects with the store's
// backoff (100 ms doubling to 5 s) and never exits on its own.
#ifndef BRQ_GATEWAY_CANCEL_LISTENER_H
#define BRQ_GATEWAY_CANCEL_LISTENER_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "store/store.h"

// What the listener tells, on its thread; arg is the opts' arg. on_cancels: ids[i] of
// topics[i] (borrowed for the call), in the order the database sent them, in batches.
typedef struct brq_cancel_listener_opts {
	void (*on_cancels)(void *arg, const uint64_t *ids, const brq_str *topics, size_t n);
	void (*on_live)(void *arg, bool live);
	void    *arg;
	uint64_t idle_ms; // silence after which a round trip proves the connection; 0: 10 s
} brq_cancel_listener_opts;

// A running listener (opaque).
typedef struct brq_cancel_listener brq_cancel_listener;

// Starts the thread with a connection of store st (borrowed: it must outlive the
// listener); opts is copied. Connects on the thread: returns at once. 0 and *out (the
// caller's: brq_cancel_listener_stop it), or BRQ_ENOMEM / BRQ_EUNAVAIL with *out untouched.
BRQ_MUSTCHECK int brq_cancel_listener_start(const brq_store *st, const brq_cancel_listener_opts *opts,
					    brq_cancel_listener **out);
// Stops the thread (within ~100 ms), closes its connection and frees l. NULL is a no-op.
void brq_cancel_listener_stop(brq_cancel_listener *l);

#endif
