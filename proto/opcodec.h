// SPDX-License-Identifier: MIT
// The codec of a family of operations (internal to proto/): what jobs.c (list, retry,
// delete), policy.c (pause, resume, topic_limits, topics), schedule.c (schedule_add,
// schedule_list, schedule_remove) and watch.c (watch) each provide, and the generic
// codecs (encode.c, request_dec.c, reply_dec.c) call for those ops; opcodecs.c says which
// family serves an op.
#ifndef BRQ_PROTO_OPCODEC_H
#define BRQ_PROTO_OPCODEC_H

#include "dec.h"
#include "proto.h"

typedef struct brq_op_codec {
	// How many op fields request_encode writes for req (beyond the envelope).
	uint32_t (*request_fields)(const brq_request *req);
	// Appends the op fields of req.
	void (*request_encode)(brq_buf *b, const brq_request *req);
	// Stage 2 of a request (top: the whole message); an op without fields gives BRQ_ST_OK.
	brq_status (*request_decode)(brq_dec *d, brq_rd *top, brq_request *req);
	// A whole ok reply; 0 or the buffer's sticky error.
	int (*reply_encode)(brq_buf *b, const brq_reply *rep);
	// The op fields of an ok reply (top: the whole message).
	brq_status (*reply_decode)(brq_dec *d, brq_rd *top, brq_reply *rep);
} brq_op_codec;

#endif
