// SPDX-License-Identifier: MIT
// The schedule operations' fields (internal to proto/): schedule_add, schedule_list, schedule_remove.
#ifndef BRQ_SCHEDULE_WIRE_H
#define BRQ_SCHEDULE_WIRE_H

#include "dec.h"
#include "proto.h"

// Request fields of req->op (a schedule op) beyond the envelope: how many, and writing them.
uint32_t brq_schedule_request_fields(const brq_request *req);
void     brq_schedule_request_encode(brq_buf *b, const brq_request *req);
// Stage 2 of a schedule op's request (top is the request map).
brq_status brq_schedule_request_decode(brq_dec *d, brq_rd *top, brq_request *req);
// A schedule op's ok reply.
int brq_schedule_reply_encode(brq_buf *b, const brq_reply *rep);
// A schedule op's reply fields (top is the reply map).
brq_status brq_schedule_reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep);

#endif
