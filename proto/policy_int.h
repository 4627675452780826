// SPDX-License-Identifier: MIT
// The wire pieces of per-topic policy (pause, resume, topic_limits, topics), for the
// request and reply codecs (internal to proto/).
#ifndef BRQ_POLICY_INT_H
#define BRQ_POLICY_INT_H

#include "dec.h"

// Request fields of a policy op (req->op one of them) from the top map.
brq_status brq_policy_request_decode(brq_dec *d, brq_rd *top, brq_request *req);
// How many fields brq_policy_request_encode writes for req.
uint32_t brq_policy_request_fields(const brq_request *req);
// Writes the fields of a policy op request.
void brq_policy_request_encode(brq_buf *b, const brq_request *req);
// A whole ok reply of a policy op.
void brq_policy_reply_encode(brq_buf *b, const brq_reply *rep);
// The fields of a policy op reply from the top map.
brq_status brq_policy_reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep);
// The optional policy keys of a stats topic entry (f: "paused", "max_running",
// "rate_per_s"; absent or nil = none).
brq_status brq_policy_stats_decode(brq_dec *d, const brq_field f[3], const char *path, brq_topic_stats *t);

#endif
