// SPDX-License-Identifier: MIT
// The per-topic policy operations: pause, resume, topic_limits, topics (admin), and
// what stats shows of them. No SQL here (store_policy.c), no NNG calls.
#ifndef BRQ_GATEWAY_OPS_POLICY_H
#define BRQ_GATEWAY_OPS_POLICY_H

#include "ops.h"

// Runs w's pause, resume, topic_limits or topics request on c, a brq_op_fn: BRQ_ST_OK
// with the reply in w->out, else the failure in *r.
brq_status brq_ops_policy(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r);

// Marks the topics[0..n) of a stats reply that have a policy (their optional keys).
// 0 or the store's failure.
BRQ_MUSTCHECK int brq_ops_policy_stats(brq_store_conn *c, brq_topic_stats *topics, uint32_t n);

#endif
