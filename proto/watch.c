// SPDX-License-Identifier: MIT
// The watch operation on the wire: the topics and cursor of a worker's long-poll for the
// cancels of its running jobs, and the canceled ids, next cursor and resync of its reply.
#include "watch.h"
#include "pack.h"

#include <inttypes.h>
#include <stdio.h>

// ---- encoding ------------------------------------------------------------------------

static uint32_t
request_fields(const brq_request *req)
{
	const brq_watch_req *q = &req->watch;
	return 1 + (q->cursor.len > 0) + q->has_wait_ms;
}

static void
request_encode(brq_buf *b, const brq_request *req)
{
	const brq_watch_req *q = &req->watch;
	brq_pack_key(b, "topics");
	brq_pack_array(b, q->n_topics);
	for (uint32_t i = 0; i < q->n_topics; i++)
		brq_pack_str(b, q->topics[i]);
	kv_str_if(b, "cursor", q->cursor.len > 0, q->cursor);
	kv_uint_if(b, "wait_ms", q->has_wait_ms, q->wait_ms);
}

static int
reply_encode(brq_buf *b, const brq_reply *rep)
{
	const brq_watch_rep *w = &rep->watch;
	brq_reply_begin(b, rep->rid, 3);
	brq_pack_key(b, "canceled");
	brq_pack_array(b, w->n_canceled);
	for (uint32_t i = 0; i < w->n_canceled; i++)
		brq_pack_uint(b, w->canceled[i]);
	kv_str(b, "next", w->next);
	kv_bool(b, "resync", w->resync);
	return brq_buf_error(b);
}

// ---- decoding ------------------------------------------------------------------------

enum { W_TOPICS, W_CURSOR, W_WAIT, W__COUNT };

static brq_status
request_decode(brq_dec *d, brq_rd *top, brq_request *req)
{
	brq_field      f[W__COUNT] = {{"topics", NULL}, {"cursor", NULL}, {"wait_ms", NULL}};
	brq_watch_req *q           = &req->watch;
	const char    *P           = "watch";
	char           path[BRQ_PATH_MAX];
	brq_rd         elems;

	TRY(brq_dec_map(d, top, P, f, W__COUNT));
	TRY(brq_dec_array(d, &f[W_TOPICS], P, true, 1, BRQ_TOPICS_MAX, BRQ_ST_INVALID_ARGUMENT, &elems,
			  &q->n_topics, NULL));
	TRY(brq_dec_alloc(d, q->n_topics, sizeof(brq_str), (void **) &q->topics));
	for (uint32_t i = 0; i < q->n_topics; i++) {
		(void) snprintf(path, sizeof path, "topics[%" PRIu32 "]", i);
		if (brq_mp_read_str(&elems, &q->topics[i]) != 0)
			return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, P, path, "must be a string");
		if (!brq_topic_valid(q->topics[i].ptr, q->topics[i].len))
			return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, P, path,
					     "invalid topic (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)",
					     BRQ_TOPIC_MAX);
	}
	// Opaque: what the gateway cannot read as one of its own cursors is answered with
	// resync, not refused (a cursor of another gateway, or of an older one, is normal).
	TRY(brq_dec_str(d, &f[W_CURSOR], P, false, false, 1, BRQ_CURSOR_MAX, BRQ_ST_INVALID_ARGUMENT,
			&q->cursor, NULL));
	return brq_dec_u32(d, &f[W_WAIT], P, false, 0, d->lim->max_wait_ms, &q->wait_ms, &q->has_wait_ms);
}

static brq_status
reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep)
{
	brq_field      f[3] = {{"canceled", NULL}, {"next", NULL}, {"resync", NULL}};
	brq_watch_rep *w    = &rep->watch;
	TRY(brq_dec_map(d, top, "", f, 3));
	TRY(brq_dec_list(d, &f[0], "watch", true, sizeof(uint64_t), brq_dec_uint_elem, (void **) &w->canceled,
			 &w->n_canceled, NULL));
	TRY(brq_dec_str(d, &f[1], "watch", true, false, 1, BRQ_CURSOR_MAX, BRQ_ST_INVALID_ARGUMENT, &w->next,
			NULL));
	return brq_dec_bool(d, &f[2], "watch", true, &w->resync, NULL);
}

const brq_op_codec brq_watch_codec = {request_fields, request_encode, request_decode, reply_encode,
				      reply_decode};
