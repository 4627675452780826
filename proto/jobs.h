// SPDX-License-Identifier: MIT
// The operators' operations of protocol v1 (list, retry, delete): their request and reply
// codecs (internal to proto/).
#ifndef BRQ_PROTO_ADMIN_H
#define BRQ_PROTO_ADMIN_H

#include "opcodec.h"

extern const brq_op_codec brq_admin_codec;

#endif
