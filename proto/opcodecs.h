// SPDX-License-Identifier: MIT
// Which family's codec serves an operation (internal to proto/).
#ifndef BRQ_PROTO_OPCODECS_H
#define BRQ_PROTO_OPCODECS_H

#include "opcodec.h"

// The codec of op's family (static storage), or NULL for the ops the generic codecs
// handle themselves (ping, enqueue, claim, heartbeat, settle, cancel, job, stats) and
// for BRQ_OP_NONE.
const brq_op_codec *brq_op_codec_of(brq_op op);

#endif
