// SPDX-License-Identifier: MIT
// The operations' policy: a decoded, authorised request goes to the store, then wakes
// and metrics follow, and the reply is encoded. No SQL here, no NNG calls.
#ifndef BRQ_GATEWAY_OPS_H
#define BRQ_GATEWAY_OPS_H

#include <stdatomic.h>

#include "config/config.h"
#include "background/background.h"
#include "store/store.h"
#include "waiters.h"
#include "work.h"

// What the operations need from the gateway (all borrowed).
typedef struct brq_ops {
	const brq_config  *cfg;
	brq_waiters       *waiters;  // enqueues wake parked claims here
	const atomic_bool *stopping; // a stopping gateway answers long-polls at once
	brq_figures       *figures;  // the monitor's terminal counts, for stats
} brq_ops;

typedef enum brq_ops_result {
	BRQ_OPS_REPLY = 0, // w->out holds the reply and w->code its status
	BRQ_OPS_PARK,      // long-poll claim found nothing: park it (w->wake_gen set)
} brq_ops_result;

// What an operation leaves besides the reply in w->out (brq_op_fn).
typedef struct brq_op_res {
	brq_status code;             // BRQ_ST_OK while nothing failed
	bool       park;             // a long-poll claim found nothing: park it, no reply yet
	char       msg[BRQ_MSG_MAX]; // a failure's message, for the error reply
} brq_op_res;

// One operation as brq_ops_run runs it (ops.c's table says which one serves an op):
// w's request is decoded and authorised, c is ready. Returns BRQ_ST_OK with the reply
// encoded into w->out (or r->park set), else the failure's status with *r set through
// brq_ops_fail or brq_ops_store_fail; brq_ops_run then encodes the error reply.
typedef brq_status (*brq_op_fn)(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r);

// Sets *r to code and the message fmt; returns code (`return brq_ops_fail(r, ...)`).
brq_status brq_ops_fail(brq_op_res *r, brq_status code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

// The gateway's one map from a store failure (BRQ_E* code rv on connection c, its reason
// in brq_store_errmsg(c)) to the reply: `unavailable` where retrying helps (logged),
// `invalid_argument` when the database refused the data, `not_found`, else `internal`;
// the message is "what: reason". Sets *r and returns its code.
brq_status brq_ops_store_fail(brq_op_res *r, const brq_store_conn *c, int rv, const char *what);

// Runs w's (decoded, authorised) request on store connection c (a pool thread's).
// The reply, and w->claimed for a claim, borrow c until brq_store_reset(c).
brq_ops_result brq_ops_run(const brq_ops *o, brq_store_conn *c, brq_work *w);

// Parked claims an enqueue may take at once (brq_ops_enqueue).
#define BRQ_OPS_TAKE_MAX 16

// Runs enqueue requests (one, or a group linked through qnext) as one statement and
// fills each one's reply (w->out, w->code). Parked long-polls of the topics made
// ready are taken and claimed for in the same transaction (one commit from enqueue
// to start): they go to taken[0..return value), each with w->handback set
// (BRQ_HANDBACK_SEND with w->out encoded and w->claimed set, or BRQ_HANDBACK_CLAIM:
// claim again), for the caller to hand back.
uint32_t brq_ops_enqueue(const brq_ops *o, brq_store_conn *c, brq_work *head, brq_work **taken);

// Encodes the ping reply into w->out. Touches no database.
void brq_ops_ping(brq_work *w);

// w's reply cannot be delivered (why: "peer went away", "reply allocation failed"):
// gives back the leases it carried (w->claimed), so their jobs are claimable at once
// rather than after the lease. Logged with the cause.
void brq_ops_undeliverable(const brq_ops *o, brq_store_conn *c, brq_work *w, const char *why);

#endif
