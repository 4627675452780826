// SPDX-License-Identifier: MIT
// The wire pieces of per-topic policy (pause, resume, topic_limits, topics), for the
// request and reply codecs (internal to proto/).
#ifndef BRQ_POLICY_INT_H
#define BRQ_POLICY_INT_H

#include "opcodec.h"

extern const brq_op_codec brq_policy_codec;

// The optional policy keys of a stats topic entry (f: "paused", "max_running",
// "rate_per_s"; absent or nil = none).
brq_status brq_policy_stats_decode(brq_dec *d, const brq_field f[3], const char *path, brq_topic_stats *t);

#endif
