/* SPDX-License-Identifier: MIT */
/* The per-topic policy calls: pause, resume, topic limits, topics (admin token). */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

#define ARG_FAIL(...) brq_err_public(brq_fail(BRQ_EINVAL, __VA_ARGS__))

/* The public form of a wire policy. */
static void
policy_out(const brq_topic_policy *in, brooq_topic_policy *out)
{
	size_t len = in->topic.len < sizeof(out->topic) - 1 ? in->topic.len : sizeof(out->topic) - 1;
	memset(out, 0, sizeof(*out));
	memcpy(out->topic, in->topic.ptr, len);
	out->paused      = in->paused;
	out->max_running = in->max_running;
	out->rate_per_s  = in->rate_per_s;
	out->running     = in->running;
}

/* Sends the prepared call k and copies the policy of its reply to out (may be NULL). */
static brooq_err
policy_call(brooq_client *c, brq_call *k, brooq_topic_policy *out)
{
	brooq_err err = brq_call_result(k, brq_rpc_call(&c->rpc, k, 0));
	if (err == BROOQ_OK && out != NULL)
		policy_out(&k->rep.policy.policy, out);
	brq_call_fini(k);
	return err;
}

static brooq_err
pause_resume(brooq_client *c, brq_op op, const char *topic, brooq_topic_policy *out)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || topic == NULL)
		return ARG_FAIL("%s: client and topic are required", brq_op_name(op));
	brq_call_init(&k, op);
	if (op == BRQ_OP_PAUSE)
		k.req.pause.topic = brq_str_c(topic);
	else
		k.req.resume.topic = brq_str_c(topic);
	return policy_call(c, &k, out);
}

brooq_err
brooq_pause(brooq_client *c, const char *topic, brooq_topic_policy *out)
{
	return pause_resume(c, BRQ_OP_PAUSE, topic, out);
}

brooq_err
brooq_resume(brooq_client *c, const char *topic, brooq_topic_policy *out)
{
	return pause_resume(c, BRQ_OP_RESUME, topic, out);
}

brooq_err
brooq_topic_limits(brooq_client *c, const char *topic, uint32_t max_running, uint32_t rate_per_s,
		   brooq_topic_policy *out)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || topic == NULL)
		return ARG_FAIL("topic_limits: client and topic are required");
	if (max_running == BROOQ_LIMIT_KEEP && rate_per_s == BROOQ_LIMIT_KEEP)
		return ARG_FAIL("topic_limits: give max_running or rate_per_s");
	if ((max_running != BROOQ_LIMIT_KEEP && max_running > BRQ_TOPIC_LIMIT_MAX) ||
	    (rate_per_s != BROOQ_LIMIT_KEEP && rate_per_s > BRQ_TOPIC_LIMIT_MAX))
		return ARG_FAIL("topic_limits: limits must be 0..%d", BRQ_TOPIC_LIMIT_MAX);
	brq_call_init(&k, BRQ_OP_TOPIC_LIMITS);
	k.req.topic_limits = (brq_topic_limits_req) {
		.topic           = brq_str_c(topic),
		.has_max_running = max_running != BROOQ_LIMIT_KEEP,
		.max_running     = max_running != BROOQ_LIMIT_KEEP ? max_running : 0,
		.has_rate_per_s  = rate_per_s != BROOQ_LIMIT_KEEP,
		.rate_per_s      = rate_per_s != BROOQ_LIMIT_KEEP ? rate_per_s : 0,
	};
	return policy_call(c, &k, out);
}

brooq_err
brooq_topics(brooq_client *c, brooq_topic_policy **out, size_t *n)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || out == NULL || n == NULL)
		return ARG_FAIL("topics: client, out and n are required");
	*out = NULL;
	*n   = 0;
	brq_call_init(&k, BRQ_OP_TOPICS);
	brooq_err err = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
	uint32_t  m   = err == BROOQ_OK ? k.rep.topics.n_topics : 0;
	if (m > 0 && (*out = calloc(m, sizeof(**out))) == NULL)
		err = brq_err_public(brq_fail(BRQ_ENOMEM, "topics: out of memory"));
	for (uint32_t i = 0; *out != NULL && i < m; i++)
		policy_out(&k.rep.topics.topics[i], &(*out)[i]);
	if (*out != NULL)
		*n = m;
	brq_call_fini(&k);
	return err;
}
