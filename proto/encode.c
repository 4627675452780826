// SPDX-License-Identifier: MIT
// Whole messages: requests and replies. The envelope and the core ops' fields are
// written here (through pack.c); the op families' (jobs.c, policy.c, schedule.c) by
// their codecs, which opcodecs.c names.
#include "proto.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

#include "opcodecs.h"
#include "pack.h"

// ---- Requests -----------------------------------------------------------------------

// The op fields of a request for an op of encode.c's own (beyond the envelope).
static uint32_t
request_fields(const brq_request *req)
{
	switch (req->op) {
	case BRQ_OP_ENQUEUE: return 1;
	case BRQ_OP_CLAIM:
		return 3 + req->claim.has_lease_ms + req->claim.has_wait_ms + req->claim.has_settle;
	case BRQ_OP_HEARTBEAT: return 1 + req->heartbeat.has_lease_ms;
	case BRQ_OP_SETTLE:
	case BRQ_OP_CANCEL:
	case BRQ_OP_JOB: return 1;
	default: return 0; // ping, stats
	}
}

// One heartbeat.leases entry.
static int
pack_lease_ref(brq_buf *b, const brq_lease_ref *l)
{
	brq_pack_map(b, 2);
	kv_uint(b, "id", l->id);
	kv_lease(b, l->lease);
	return brq_buf_error(b);
}

// The fields of a claim request.
static void
pack_claim(brq_buf *b, const brq_claim_req *c)
{
	kv_str(b, "worker", c->worker);
	brq_pack_key(b, "topics");
	brq_pack_array(b, c->n_topics);
	for (uint32_t i = 0; i < c->n_topics; i++) {
		brq_pack_str(b, c->topics[i]);
	}
	kv_uint(b, "n", c->n);
	kv_uint_if(b, "lease_ms", c->has_lease_ms, c->lease_ms);
	kv_uint_if(b, "wait_ms", c->has_wait_ms, c->wait_ms);
	if (c->has_settle) {
		KV_ARRAY(b, "settle", c->settle, c->n_settle, brq_pack_settle_item);
	}
}

int
brq_request_encode(brq_buf *b, const brq_request *req)
{
	const brq_op_codec *family = brq_op_codec_of(req->op); // NULL: an op of this file

	if (req->op <= BRQ_OP_NONE || req->op >= BRQ_OP__COUNT) {
		return BRQ_EINVAL;
	}
	brq_buf_reset(b);
	brq_pack_map(b,
		     3 + (req->token.len > 0) + (req->timeout_ms > 0) +
			     (family != NULL ? family->request_fields(req) : request_fields(req)));
	kv_uint(b, "v", BRQ_PROTO_VERSION);
	kv_cstr(b, "op", brq_op_name(req->op));
	if (req->token.len > 0) {
		// msgpack str is meant to be UTF-8; a binary token goes as bin so that strict
		// decoders in other languages do not choke on it.
		brq_pack_key(b, "token");
		if (brq_utf8_valid(req->token.ptr, req->token.len, false)) {
			brq_pack_str(b, req->token);
		} else {
			brq_pack_bin(b, req->token.ptr, req->token.len);
		}
	}
	kv_uint(b, "rid", req->rid);
	kv_uint_if(b, "timeout_ms", req->timeout_ms > 0, req->timeout_ms);
	if (family != NULL) {
		family->request_encode(b, req);
		return b->err;
	}
	switch (req->op) {
	case BRQ_OP_ENQUEUE:
		KV_ARRAY(b, "jobs", req->enqueue.jobs, req->enqueue.n_jobs, brq_pack_job_spec);
		break;
	case BRQ_OP_CLAIM: pack_claim(b, &req->claim); break;
	case BRQ_OP_HEARTBEAT:
		KV_ARRAY(b, "leases", req->heartbeat.leases, req->heartbeat.n_leases, pack_lease_ref);
		kv_uint_if(b, "lease_ms", req->heartbeat.has_lease_ms, req->heartbeat.lease_ms);
		break;
	case BRQ_OP_SETTLE:
		KV_ARRAY(b, "items", req->settle.items, req->settle.n_items, brq_pack_settle_item);
		break;
	case BRQ_OP_CANCEL: kv_uint(b, "id", req->cancel.id); break;
	case BRQ_OP_JOB: kv_uint(b, "id", req->job.id); break;
	default: break; // ping, stats: no fields
	}
	return b->err;
}

// ---- Replies ------------------------------------------------------------------------

// Every error reply goes through here. Messages quote request text (a cron field, a
// name), which may be any bytes: the msg is made well-formed UTF-8 here, once for every
// op, since a msgpack str and protocol.md §4 promise UTF-8.
static int
encode_error(brq_buf *b, uint64_t rid, brq_status code, brq_str msg)
{
	char clean[BRQ_MSG_MAX];

	assert(code != BRQ_ST_OK);
	msg.len = (uint32_t) brq_utf8_scrub(msg.ptr, msg.len, clean, sizeof clean);
	msg.ptr = clean;
	brq_buf_reset(b);
	brq_pack_map(b, 4);
	kv_uint(b, "v", BRQ_PROTO_VERSION);
	kv_uint(b, "rid", rid);
	kv_cstr(b, "code", brq_status_name(code));
	kv_str(b, "msg", msg);
	return b->err;
}

int
brq_reply_encode_error(brq_buf *b, uint64_t rid, brq_status code, const char *fmt, ...)
{
	char    text[BRQ_MSG_MAX + 1];
	va_list ap;
	int     n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		n       = 0;
		text[0] = '\0';
	}
	brq_str msg = {text, (uint32_t) (n < (int) sizeof text ? n : (int) sizeof text - 1)};
	return encode_error(b, rid, code, msg);
}

// The claim reply: jobs leased, and the results of the settles it carried.
static void
pack_claim_reply(brq_buf *b, const brq_reply *rep)
{
	brq_reply_begin(b, rep->rid, 1 + rep->claim.has_settled);
	KV_ARRAY(b, "jobs", rep->claim.jobs, rep->claim.n_jobs, brq_pack_claimed_job);
	if (rep->claim.has_settled) {
		KV_ARRAY(b, "settled", rep->claim.settled, rep->claim.n_settled, brq_pack_settle_result);
	}
}

// The heartbeat reply: which leases were extended, until when, and why others were not.
static void
pack_heartbeat_reply(brq_buf *b, const brq_reply *rep)
{
	brq_reply_begin(b, rep->rid, rep->heartbeat.lost_reasons != NULL ? 3 : 2);
	brq_pack_key(b, "extended");
	brq_pack_array(b, rep->heartbeat.n_extended);
	for (uint32_t i = 0; i < rep->heartbeat.n_extended; i++) {
		brq_pack_bool(b, rep->heartbeat.extended[i]);
	}
	kv_int(b, "lease_until_ms", rep->heartbeat.lease_until_ms);
	if (rep->heartbeat.lost_reasons != NULL) {
		brq_pack_lost_reasons(b, rep->heartbeat.lost_reasons, rep->heartbeat.n_extended);
	}
}

int
brq_reply_encode(brq_buf *b, const brq_reply *rep)
{
	const brq_op_codec *family = brq_op_codec_of(rep->op);

	if (rep->code != BRQ_ST_OK) {
		return encode_error(b, rep->rid, rep->code, rep->msg);
	}
	if (family != NULL) {
		return family->reply_encode(b, rep);
	}
	switch (rep->op) {
	case BRQ_OP_PING:
		brq_reply_begin(b, rep->rid, 1);
		kv_str(b, "server", rep->ping.server);
		break;
	case BRQ_OP_ENQUEUE:
		brq_reply_begin(b, rep->rid, 1);
		KV_ARRAY(b, "results", rep->enqueue.results, rep->enqueue.n_results, brq_pack_enqueue_result);
		break;
	case BRQ_OP_CLAIM: pack_claim_reply(b, rep); break;
	case BRQ_OP_HEARTBEAT: pack_heartbeat_reply(b, rep); break;
	case BRQ_OP_SETTLE:
		brq_reply_begin(b, rep->rid, 1);
		KV_ARRAY(b, "results", rep->settle.results, rep->settle.n_results, brq_pack_settle_result);
		break;
	case BRQ_OP_CANCEL:
		brq_reply_begin(b, rep->rid, 2);
		kv_cstr(b, "state", brq_state_name(rep->cancel.state));
		kv_bool(b, "canceled", rep->cancel.canceled);
		break;
	case BRQ_OP_JOB:
		brq_reply_begin(b, rep->rid, 1);
		brq_pack_key(b, "job");
		brq_pack_job_info(b, &rep->job.job);
		break;
	case BRQ_OP_STATS:
		brq_reply_begin(b, rep->rid, 1 + rep->stats.has_terminal_age + rep->stats.terminal_estimated);
		if (rep->stats.has_terminal_age) {
			brq_pack_key(b, "terminal_age_ms");
			brq_pack_uint(b, rep->stats.terminal_age_ms);
		}
		if (rep->stats.terminal_estimated)
			kv_bool(b, "terminal_estimated", true);
		KV_ARRAY(b, "topics", rep->stats.topics, rep->stats.n_topics, brq_pack_topic_stats);
		break;
	default: return BRQ_EINVAL;
	}
	return b->err;
}
