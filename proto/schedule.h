// SPDX-License-Identifier: MIT
// The schedule operations' codecs (internal to proto/): schedule_add, schedule_list,
// schedule_remove.
#ifndef BRQ_SCHEDULE_WIRE_H
#define BRQ_SCHEDULE_WIRE_H

#include "opcodec.h"

extern const brq_op_codec brq_schedule_codec;

#endif
