// SPDX-License-Identifier: MIT
// Per-topic policy on the wire: pause, resume, topic_limits and topics, and the policy keys of stats.
#include "policy_int.h"
#include "pack.h"

#include <string.h>

static brq_status
check_topic(brq_dec *d, const char *path, brq_str s)
{
	if (!brq_topic_valid(s.ptr, s.len)) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "topic",
				     "invalid topic (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)", BRQ_TOPIC_MAX);
	}
	return BRQ_ST_OK;
}

// A limit: uint 0..BRQ_TOPIC_LIMIT_MAX or nil (0: unlimited); absent: *has = false.
static brq_status
limit(brq_dec *d, const brq_field *f, const char *path, bool *has, uint32_t *out)
{
	*out = 0;
	*has = f->at != NULL;
	if (f->at == NULL || brq_dec_is_nil(f)) {
		return BRQ_ST_OK;
	}
	return brq_dec_u32(d, f, path, true, 0, BRQ_TOPIC_LIMIT_MAX, out, NULL);
}

static brq_status
request_decode(brq_dec *d, brq_rd *top, brq_request *req)
{
	const char *op   = brq_op_name(req->op);
	brq_field   f[3] = {{"topic", NULL}, {"max_running", NULL}, {"rate_per_s", NULL}};

	switch (req->op) {
	case BRQ_OP_PAUSE:
	case BRQ_OP_RESUME: {
		brq_topic_req *q = req->op == BRQ_OP_PAUSE ? &req->pause : &req->resume;
		TRY(brq_dec_map(d, top, op, f, 1));
		TRY(brq_dec_str(d, &f[0], op, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &q->topic,
				NULL));
		return check_topic(d, op, q->topic);
	}
	case BRQ_OP_TOPIC_LIMITS: {
		brq_topic_limits_req *q = &req->topic_limits;
		TRY(brq_dec_map(d, top, op, f, 3));
		TRY(brq_dec_str(d, &f[0], op, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &q->topic,
				NULL));
		TRY(check_topic(d, op, q->topic));
		TRY(limit(d, &f[1], op, &q->has_max_running, &q->max_running));
		TRY(limit(d, &f[2], op, &q->has_rate_per_s, &q->rate_per_s));
		if (!q->has_max_running && !q->has_rate_per_s) {
			return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, op, "max_running",
					     "give max_running or rate_per_s (0 or nil: unlimited)");
		}
		return BRQ_ST_OK;
	}
	default: // topics: no fields; unknown keys are ignored
		return BRQ_ST_OK;
	}
}

static uint32_t
request_fields(const brq_request *req)
{
	switch (req->op) {
	case BRQ_OP_PAUSE:
	case BRQ_OP_RESUME: return 1;
	case BRQ_OP_TOPIC_LIMITS:
		return 1 + req->topic_limits.has_max_running + req->topic_limits.has_rate_per_s;
	default: return 0;
	}
}

static void
request_encode(brq_buf *b, const brq_request *req)
{
	switch (req->op) {
	case BRQ_OP_PAUSE:
	case BRQ_OP_RESUME:
		kv_str(b, "topic", req->op == BRQ_OP_PAUSE ? req->pause.topic : req->resume.topic);
		break;
	case BRQ_OP_TOPIC_LIMITS:
		kv_str(b, "topic", req->topic_limits.topic);
		if (req->topic_limits.has_max_running) {
			kv_limit(b, "max_running", req->topic_limits.max_running);
		}
		if (req->topic_limits.has_rate_per_s) {
			kv_limit(b, "rate_per_s", req->topic_limits.rate_per_s);
		}
		break;
	default: break;
	}
}

int
brq_pack_topic_policy(brq_buf *b, const brq_topic_policy *p)
{
	brq_pack_map(b, 5);
	kv_str(b, "topic", p->topic);
	kv_bool(b, "paused", p->paused);
	kv_limit(b, "max_running", p->max_running);
	kv_limit(b, "rate_per_s", p->rate_per_s);
	kv_uint(b, "running", p->running);
	return brq_buf_error(b);
}

static int
reply_encode(brq_buf *b, const brq_reply *rep)
{
	brq_reply_begin(b, rep->rid, 1);
	if (rep->op == BRQ_OP_TOPICS) {
		KV_ARRAY(b, "topics", rep->topics.topics, rep->topics.n_topics, brq_pack_topic_policy);
		return brq_buf_error(b);
	}
	brq_pack_key(b, "policy");
	return brq_pack_topic_policy(b, &rep->policy.policy);
}

static brq_status
topic_policy(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_topic_policy *p    = out;
	brq_field         f[5] = {{"topic", NULL},
				  {"paused", NULL},
				  {"max_running", NULL},
				  {"rate_per_s", NULL},
				  {"running", NULL}};
	bool              has;

	TRY(brq_dec_map(d, r, path, f, 5));
	TRY(brq_dec_str(d, &f[0], path, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &p->topic,
			NULL));
	TRY(brq_dec_bool(d, &f[1], path, true, &p->paused, NULL));
	TRY(limit(d, &f[2], path, &has, &p->max_running));
	TRY(limit(d, &f[3], path, &has, &p->rate_per_s));
	return brq_dec_uint(d, &f[4], path, true, 0, UINT64_MAX, &p->running, NULL);
}

static brq_status
reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep)
{
	const char *op   = brq_op_name(rep->op);
	brq_field   f[1] = {{rep->op == BRQ_OP_TOPICS ? "topics" : "policy", NULL}};
	brq_rd      r;

	TRY(brq_dec_map(d, top, "", f, 1));
	if (rep->op == BRQ_OP_TOPICS) {
		return brq_dec_list(d, &f[0], op, true, sizeof(brq_topic_policy), topic_policy,
				    (void **) &rep->topics.topics, &rep->topics.n_topics, NULL);
	}
	if (f[0].at == NULL) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, op, "policy", "required map");
	}
	r = brq_dec_at(d, &f[0]);
	return topic_policy(d, &r, op, &rep->policy.policy);
}

brq_status
brq_policy_stats_decode(brq_dec *d, const brq_field f[3], const char *path, brq_topic_stats *t)
{
	bool has;
	t->has_policy = f[0].at != NULL && !brq_dec_is_nil(&f[0]);
	if (t->has_policy) {
		TRY(brq_dec_bool(d, &f[0], path, true, &t->paused, NULL));
	}
	TRY(limit(d, &f[1], path, &has, &t->max_running));
	return limit(d, &f[2], path, &has, &t->rate_per_s);
}

const brq_op_codec brq_policy_codec = {request_fields, request_encode, request_decode, reply_encode,
				       reply_decode};
