/* SPDX-License-Identifier: MIT */
/* The per-topic policy calls: pause, resume, topic limits, topics (admin token). */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

/* The public form of a wire policy. */
static void
policy_out(const brq_topic_policy *in, brooq_topic_policy *out)
{
	size_t len = in->topic.len < sizeof(out->topic) - 1 ? in->topic.len : sizeof(out->topic) - 1;
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	memcpy(out->topic, in->topic.ptr, len);
	out->paused      = in->paused;
	out->max_running = in->max_running;
	out->rate_per_s  = in->rate_per_s;
	out->running     = in->running;
}

/* The policy of the reply into the caller's *out (may be NULL; its size checked by
 * out_ok). */
static int
policy_copy(const brq_call *k, void *out, void *unused)
{
	brooq_topic_policy p;
	(void) unused;
	if (out != NULL) {
		policy_out(&k->rep.policy.policy, &p);
		brq_abi_out(out, 0, &p, sizeof(p));
	}
	return 0;
}

/* The caller's out (NULL or its size set), checked before the call is sent. */
static bool
out_ok(const brooq_topic_policy *out)
{
	return out == NULL || brq_abi_out_check(out, 1, BRQ_TOPIC_POLICY_V1, "brooq_topic_policy") == 0;
}

void
brooq_topics_free(brooq_topic_policy **p, size_t n)
{
	(void) n; /* one allocation: the pointers and the policies */
	free(p);
}

/* The reply's policies, library-allocated (brq_abi_list; NULL for none), into *out, n of
 * them. */
static int
topics_out(const brq_call *k, void *out, void *n)
{
	uint32_t     m = k->rep.topics.n_topics;
	brq_abi_list l;
	int          rv = brq_abi_list_new(&l, m, sizeof(brooq_topic_policy), 0, "topics");
	if (rv != 0)
		return rv;
	for (uint32_t i = 0; i < m; i++)
		policy_out(&k->rep.topics.topics[i], l.ptrs[i]);
	*(brooq_topic_policy ***) out = (brooq_topic_policy **) l.ptrs;
	*(size_t *) n                 = m;
	return 0;
}

static brooq_err
pause_resume(brooq_client *c, brq_op op, const char *topic, brooq_topic_policy *out)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || topic == NULL)
		return BRQ_ARG_FAIL("%s: client and topic are required", brq_op_name(op));
	if (!out_ok(out))
		return BROOQ_EINVAL;
	brq_call_init(&k, op);
	if (op == BRQ_OP_PAUSE)
		k.req.pause.topic = brq_str_c(topic);
	else
		k.req.resume.topic = brq_str_c(topic);
	return brq_call_run(&c->rpc, &k, 0, 0, policy_copy, out, NULL);
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
		return BRQ_ARG_FAIL("topic_limits: client and topic are required");
	if (max_running == BROOQ_LIMIT_KEEP && rate_per_s == BROOQ_LIMIT_KEEP)
		return BRQ_ARG_FAIL("topic_limits: give max_running or rate_per_s");
	if ((max_running != BROOQ_LIMIT_KEEP && max_running > BRQ_TOPIC_LIMIT_MAX) ||
	    (rate_per_s != BROOQ_LIMIT_KEEP && rate_per_s > BRQ_TOPIC_LIMIT_MAX))
		return BRQ_ARG_FAIL("topic_limits: limits must be 0..%d", BRQ_TOPIC_LIMIT_MAX);
	if (!out_ok(out))
		return BROOQ_EINVAL;
	brq_call_init(&k, BRQ_OP_TOPIC_LIMITS);
	k.req.topic_limits = (brq_topic_limits_req) {
		.topic           = brq_str_c(topic),
		.has_max_running = max_running != BROOQ_LIMIT_KEEP,
		.max_running     = max_running != BROOQ_LIMIT_KEEP ? max_running : 0,
		.has_rate_per_s  = rate_per_s != BROOQ_LIMIT_KEEP,
		.rate_per_s      = rate_per_s != BROOQ_LIMIT_KEEP ? rate_per_s : 0,
	};
	return brq_call_run(&c->rpc, &k, 0, 0, policy_copy, out, NULL);
}

brooq_err
brooq_topics(brooq_client *c, brooq_topic_policy ***out, size_t *n)
{
	brooq_err err = brq_call_array(c, BRQ_OP_TOPICS, topics_out, out, n);
	/* Unlike the other calls, topics has always left NULL and 0 after a failed call. */
	if (err != BROOQ_OK && c != NULL && out != NULL && n != NULL) {
		*out = NULL;
		*n   = 0;
	}
	return err;
}
