// SPDX-License-Identifier: MIT
// The watch operation's codecs (internal to proto/): a worker's long-poll for the cancels
// of its running jobs.
#ifndef BRQ_PROTO_WATCH_H
#define BRQ_PROTO_WATCH_H

#include "opcodec.h"

extern const brq_op_codec brq_watch_codec;

#endif
