// SPDX-License-Identifier: MIT
// The operators' operations of protocol v1 (list, retry, delete): their request and reply
// codecs, called by the generic ones in encode.c, request_dec.c and reply_dec.c.
#ifndef BRQ_PROTO_ADMIN_H
#define BRQ_PROTO_ADMIN_H

#include "dec.h"
#include "proto.h"

// Number of op fields brq_admin_request_encode writes for req (0 for other ops).
uint32_t brq_admin_request_fields(const brq_request *req);
// Appends the op fields of a list, retry or delete request (nothing for other ops).
void brq_admin_request_encode(brq_buf *b, const brq_request *req);
// Stage 2 of a list, retry or delete request (top: the whole message); other ops are
// left alone (BRQ_ST_OK: they carry no fields).
brq_status brq_admin_request_decode(brq_dec *d, brq_rd *top, brq_request *req);

// A whole ok reply of a list, retry or delete; BRQ_EINVAL for other ops.
int brq_admin_reply_encode(brq_buf *b, const brq_reply *rep);
// The op fields of an ok list, retry or delete reply; BRQ_ST_INTERNAL for other ops.
brq_status brq_admin_reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep);

#endif
