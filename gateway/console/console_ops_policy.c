// SPDX-License-Identifier: MIT
// The web console's policy operations: the paused and limited topics, pause and resume
// (through the RPC's `topics`, `pause` and `resume`).
#include "console_ops.h"

#include <stdio.h>
#include <string.h>

#include "log/log.h"

// A limit as the console shows it: null when unlimited.
static void
json_limit(brq_jw *out, const char *key, uint32_t v)
{
	brq_jw_key(out, key);
	if (v == 0) {
		brq_jw_null(out);
	} else {
		brq_jw_u64(out, v);
	}
}

// GET /console/api/topics. 200: {"topics":[{"topic", "paused", "concurrency", "rate"}]}
// (concurrency and rate null when unlimited): the RPC's `topics`.
int
brq_console_op_topics(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_TOPICS};
	brq_reply   rep;
	int         status = brq_console_rpc(call, &req, &rep);
	if (status != 200)
		return status;
	brq_jw_key(call->out, "topics");
	brq_jw_arr(call->out);
	for (uint32_t i = 0; i < rep.topics.n_topics; i++) {
		const brq_topic_policy *p = &rep.topics.topics[i];
		brq_jw_obj(call->out);
		brq_jw_kv_str(call->out, "topic", p->topic.ptr, p->topic.len);
		brq_jw_kv_bool(call->out, "paused", p->paused);
		json_limit(call->out, "concurrency", p->max_running);
		json_limit(call->out, "rate", p->rate_per_s);
		brq_jw_end(call->out);
	}
	brq_jw_end(call->out);
	return 200;
}

// POST /console/api/pause and /resume: topic. 200: {"topic": t, "paused": true|false},
// through the RPC's `pause` and `resume`.
static int
pause_resume(brq_console_call *call, brq_op op)
{
	brq_request req = {.op = op};
	brq_reply   rep;
	brq_str     topic;
	int         status = brq_console_param_topic(call, "topic", true, &topic);
	if (status != 0) {
		return status;
	}
	if (op == BRQ_OP_PAUSE) {
		req.pause.topic = topic;
	} else {
		req.resume.topic = topic;
	}
	if ((status = brq_console_rpc(call, &req, &rep)) != 200) {
		return status;
	}
	const brq_topic_policy *p = &rep.policy.policy;
	BRQ_LOG_INFO("console_action", "action=%s topic=%.*s %s", brq_op_name(op), (int) p->topic.len,
		     p->topic.ptr, call->actor);
	brq_jw_kv_str(call->out, "topic", p->topic.ptr, p->topic.len);
	brq_jw_kv_bool(call->out, "paused", p->paused);
	return 200;
}

int
brq_console_op_pause(brq_console_call *call)
{
	return pause_resume(call, BRQ_OP_PAUSE);
}

int
brq_console_op_resume(brq_console_call *call)
{
	return pause_resume(call, BRQ_OP_RESUME);
}
