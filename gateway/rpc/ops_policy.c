// SPDX-License-Identifier: MIT
// The per-topic policy operations (pause, resume, topic_limits, topics) and the policy keys of stats.
#include "ops_policy.h"

#include <inttypes.h>
#include <string.h>

#include "log/log.h"

// Parked long-polls of the topic look again: a resumed topic, or one whose limits
// changed, may have jobs for them now. Other gateways' parked claims are woken by
// their monitor's round (one poll interval).
static void
wake_topic(const brq_ops *o, brq_str topic)
{
	brq_waiters_wake(o->waiters, topic.ptr, topic.len, UINT32_MAX);
}

static void
encode_policy(brq_work *w, const brq_topic_policy *p)
{
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "policy");
	(void) brq_pack_topic_policy(b, p);
}

brq_status
brq_ops_policy(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	brq_store_policy_in in = {0};
	brq_topic_policy    p;
	switch (w->req.op) {
	case BRQ_OP_TOPICS: {
		brq_topic_policy *all;
		uint32_t          n;
		int               rv = brq_store_policy_list(c, &all, &n);
		if (rv != 0)
			return brq_ops_store_fail(r, c, rv, brq_op_name(w->req.op));
		brq_buf *b = &w->out;
		brq_reply_begin(b, w->req.rid, 1);
		brq_pack_key(b, "topics");
		brq_pack_array(b, n);
		for (uint32_t i = 0; i < n; i++)
			(void) brq_pack_topic_policy(b, &all[i]);
		return BRQ_ST_OK;
	}
	case BRQ_OP_PAUSE:
		in = (brq_store_policy_in) {.what = BRQ_POLICY_PAUSE, .topic = w->req.pause.topic};
		break;
	case BRQ_OP_RESUME:
		in = (brq_store_policy_in) {.what = BRQ_POLICY_RESUME, .topic = w->req.resume.topic};
		break;
	default: {
		const brq_topic_limits_req *q = &w->req.topic_limits;
		in                            = (brq_store_policy_in) {.what        = BRQ_POLICY_LIMITS,
								       .topic       = q->topic,
								       .set_max     = q->has_max_running,
								       .max_running = q->max_running,
								       .set_rate    = q->has_rate_per_s,
								       .rate_per_s  = q->rate_per_s};
		break;
	}
	}
	int rv = brq_store_policy_set(c, &in, &p);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, brq_op_name(w->req.op));
	BRQ_LOG_INFO("topic_policy", "op=%s topic=%.*s paused=%s max_running=%" PRIu32 " rate_per_s=%" PRIu32,
		     brq_op_name(w->req.op), (int) p.topic.len, p.topic.ptr, p.paused ? "true" : "false",
		     p.max_running, p.rate_per_s);
	if (in.what != BRQ_POLICY_PAUSE)
		wake_topic(o, in.topic);
	encode_policy(w, &p);
	return BRQ_ST_OK;
}

int
brq_ops_policy_stats(brq_store_conn *c, brq_topic_stats *topics, uint32_t n)
{
	brq_topic_policy *all;
	uint32_t          n_all;
	int               rv = brq_store_policy_list(c, &all, &n_all);
	for (uint32_t i = 0; rv == 0 && i < n; i++)
		for (uint32_t k = 0; k < n_all; k++)
			if (all[k].topic.len == topics[i].topic.len &&
			    memcmp(all[k].topic.ptr, topics[i].topic.ptr, all[k].topic.len) == 0) {
				topics[i].has_policy  = true;
				topics[i].paused      = all[k].paused;
				topics[i].max_running = all[k].max_running;
				topics[i].rate_per_s  = all[k].rate_per_s;
				break;
			}
	return rv;
}
