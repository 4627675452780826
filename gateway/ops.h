// SPDX-License-Identifier: MIT
// The operations' policy: a decoded, authorised request goes to the store, then wakes
// and metrics follow, and the reply is encoded. No SQL here, no NNG calls.
#ifndef BRQ_GATEWAY_OPS_H
#define BRQ_GATEWAY_OPS_H

#include <stdatomic.h>

#include "config.h"
#include "store.h"
#include "waiters.h"
#include "work.h"

// What the operations need from the gateway (all borrowed).
typedef struct brq_ops {
	const brq_config  *cfg;
	brq_waiters       *waiters;  // enqueues wake parked claims here
	const atomic_bool *stopping; // a stopping gateway answers long-polls at once
} brq_ops;

typedef enum brq_ops_result {
	BRQ_OPS_REPLY = 0, // w->out holds the reply and w->code its status
	BRQ_OPS_PARK,      // long-poll claim found nothing: park it (w->wake_gen set)
} brq_ops_result;

// Runs w's (decoded, authorised) request on store connection c (a pool thread's).
// The reply, and w->claimed for a claim, borrow c until brq_store_reset(c).
brq_ops_result brq_ops_run(const brq_ops *o, brq_store_conn *c, brq_work *w);

// Runs a group of enqueue requests (linked through qnext) as one statement and fills
// each one's reply (w->out, w->code).
void brq_ops_enqueue_group(const brq_ops *o, brq_store_conn *c, brq_work *head);

// Encodes the ping reply into w->out. Touches no database.
void brq_ops_ping(brq_work *w);

// w's reply cannot be delivered (why: "peer went away", "reply allocation failed"):
// gives back the leases it carried (w->claimed), so their jobs are claimable at once
// rather than after the lease. Logged with the cause.
void brq_ops_undeliverable(const brq_ops *o, brq_store_conn *c, brq_work *w, const char *why);

#endif
