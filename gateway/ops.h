// SPDX-License-Identifier: MIT
// The operations: each runs its statement(s) on a pool thread and encodes the reply from the rows.
#ifndef BRQ_GATEWAY_OPS_H
#define BRQ_GATEWAY_OPS_H

#include "pool.h"
#include "work.h"

struct brq_server;

typedef enum brq_ops_result {
	BRQ_OPS_REPLY = 0, // w->out holds the reply and w->code its status
	BRQ_OPS_PARK,      // long-poll claim found nothing: park it (w->wake_gen set)
} brq_ops_result;

// Runs w's (decoded, authorised) request on pool thread t.
brq_ops_result brq_ops_run(struct brq_server *s, brq_pool_thread *t, brq_work *w);

// Runs a group of enqueue requests (linked through qnext) as one statement and
// fills each one's reply (w->out, w->code).
void brq_ops_enqueue_group(struct brq_server *s, brq_pool_thread *t, brq_work *head);

// Encodes the ping reply into w->out. Touches no database.
void brq_ops_ping(brq_work *w);

#endif
