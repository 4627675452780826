// SPDX-License-Identifier: MIT
// The web console's policy operations: the paused and limited topics, pause and resume
// (through the RPC's `topics`, `pause` and `resume`).
#include "console_ops.h"

#include <stdio.h>
#include <string.h>

#include "log/log.h"

// A policy map of docs/protocol.md §7.10 in its JSON form: a limit of 0 is none, null.
static void
json_policy(brq_jw *out, const brq_topic_policy *p)
{
	brq_jw_obj(out);
	brq_jw_kv_str(out, "topic", p->topic.ptr, p->topic.len);
	brq_jw_kv_bool(out, "paused", p->paused);
	brq_jw_kv_opt_u64(out, "max_running", p->max_running, p->max_running > 0);
	brq_jw_kv_opt_u64(out, "rate_per_s", p->rate_per_s, p->rate_per_s > 0);
	brq_jw_kv_u64(out, "running", p->running);
	brq_jw_end(out);
}

// GET /console/api/topics. 200: {"topics":[policy...]}, the RPC's `topics` in its JSON form:
// the topics that are paused or limited.
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
		json_policy(call->out, &rep.topics.topics[i]);
	}
	brq_jw_end(call->out);
	return 200;
}

// POST /console/api/pause and /resume: topic. 200: {"policy": policy}, the topic's policy
// after the change, through the RPC's `pause` and `resume`.
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
	brq_jw_key(call->out, "policy");
	json_policy(call->out, p);
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
