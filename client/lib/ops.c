/* SPDX-License-Identifier: MIT */
/* The queue calls: argument checks, request building, copying results out of the reply. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert((int) BROOQ_PENDING == (int) BRQ_STATE_PENDING &&
		       (int) BROOQ_PROCESSING == (int) BRQ_STATE_PROCESSING &&
		       (int) BROOQ_FAILED == (int) BRQ_STATE_FAILED &&
		       (int) BROOQ_DONE == (int) BRQ_STATE_DONE && (int) BROOQ_DEAD == (int) BRQ_STATE_DEAD &&
		       (int) BROOQ_CANCELED == (int) BRQ_STATE_CANCELED,
	       "brooq_state must match the wire's brq_state");
_Static_assert((int) BROOQ_OUTCOME_DONE == (int) BRQ_OUTCOME_DONE &&
		       (int) BROOQ_OUTCOME_FAIL == (int) BRQ_OUTCOME_FAIL &&
		       (int) BROOQ_OUTCOME_DELAY == (int) BRQ_OUTCOME_DELAY &&
		       (int) BROOQ_OUTCOME_PRESERVE == (int) BRQ_OUTCOME_PRESERVE &&
		       (int) BROOQ_OUTCOME_CANCEL == (int) BRQ_OUTCOME_CANCEL,
	       "brooq_outcome must match the wire's brq_outcome");
_Static_assert(sizeof(((brooq_topic_stats *) 0)->count) / sizeof(uint64_t) == BRQ_STATE__COUNT,
	       "brooq_topic_stats.count must have one counter per state");

/* ---- helpers ----------------------------------------------------------------------------- */

/* A NUL-terminated malloc'd copy of s (NULL on out of memory). */
static char *
str_dup(brq_str s)
{
	char *p = malloc((size_t) s.len + 1);
	if (p == NULL)
		return NULL;
	if (s.len > 0)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	return p;
}

/* Like str_dup for an optional field: NULL when absent. *ok turns false on out of memory. */
static char *
opt_dup(bool has, brq_str s, bool *ok)
{
	if (!has)
		return NULL;
	char *p = str_dup(s);
	if (p == NULL)
		*ok = false;
	return p;
}

/* Checks one public job spec and fills the wire spec. `what` names it in messages. */
static brooq_err
spec_from(const brooq_job_spec *in, brq_job_spec *out, const char *what, size_t i)
{
	if (in->topic == NULL)
		return brq_fail(BROOQ_EINVAL, "%s[%zu].topic: required", what, i);
	size_t plen = in->payload == NULL ? 2 : (in->payload_len > 0 ? in->payload_len : strlen(in->payload));
	if (plen > UINT32_MAX)
		return brq_fail(BROOQ_EINVAL, "%s[%zu].payload: too long", what, i);
	if (in->delay_ms > 0 && in->run_at_ms != 0)
		return brq_fail(BROOQ_EINVAL, "%s[%zu]: delay_ms and run_at_ms are exclusive", what, i);
	memset(out, 0, sizeof(*out));
	out->topic   = brq_str_c(in->topic);
	out->payload = (brq_str) {in->payload != NULL ? in->payload : "{}", (uint32_t) plen};
	out->key     = brq_str_c(in->key); /* NULL and "" both mean no key */
	if (in->delay_ms > 0) {
		out->has_delay_ms = true;
		out->delay_ms     = in->delay_ms;
	}
	if (in->run_at_ms != 0) {
		out->has_run_at_ms = true;
		out->run_at_ms     = in->run_at_ms;
	}
	if (in->max_attempts > 0) {
		out->has_max_attempts = true;
		out->max_attempts     = in->max_attempts;
	}
	return BROOQ_OK;
}

/* Wire specs for jobs[0..n), from the call's arena. */
static brooq_err
specs_from(brq_call *k, const brooq_job_spec *jobs, size_t n, const char *what, brq_job_spec **out)
{
	brq_job_spec *v = brq_arena_alloc(&k->arena, n, sizeof(*v));
	if (v == NULL)
		return brq_fail(BROOQ_ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < n; i++) {
		brooq_err err = spec_from(&jobs[i], &v[i], what, i);
		if (err != BROOQ_OK)
			return err;
	}
	*out = v;
	return BROOQ_OK;
}

/* Wire settle items for items[0..n), from the call's arena. */
static brooq_err
settles_from(brq_call *k, const brooq_settle_item *items, size_t n, const char *what, brq_settle_item **out)
{
	brq_settle_item *v = brq_arena_alloc(&k->arena, n, sizeof(*v));
	if (v == NULL)
		return brq_fail(BROOQ_ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < n; i++) {
		const brooq_settle_item *in = &items[i];
		brq_settle_item         *it = &v[i];
		if ((unsigned) in->outcome > (unsigned) BROOQ_OUTCOME_CANCEL)
			return brq_fail(BROOQ_EINVAL, "%s[%zu].outcome: unknown outcome %d", what, i,
					(int) in->outcome);
		if (in->n_chain > 0 && in->outcome != BROOQ_OUTCOME_DONE)
			return brq_fail(BROOQ_EINVAL, "%s[%zu].chain: only with the done outcome", what, i);
		if (in->n_chain > 0 && in->chain == NULL)
			return brq_fail(BROOQ_EINVAL, "%s[%zu].chain: NULL with n_chain %zu", what, i,
					in->n_chain);
		if (in->n_chain > UINT32_MAX)
			return brq_fail(BROOQ_EINVAL, "%s[%zu].n_chain: too large", what, i);
		if (in->error != NULL && strlen(in->error) > UINT32_MAX)
			return brq_fail(BROOQ_EINVAL, "%s[%zu].error: too long", what, i);
		it->id      = in->lease.id;
		it->outcome = (brq_outcome) in->outcome;
		memcpy(it->lease, in->lease.token, BRQ_LEASE_LEN);
		if (in->error != NULL) {
			it->has_error = true;
			it->error     = brq_str_c(in->error);
		}
		if (in->outcome == BROOQ_OUTCOME_DELAY)
			it->delay_ms = in->delay_ms;
		if (in->n_chain > 0) {
			brooq_err err;
			it->has_chain = true;
			it->n_chain   = (uint32_t) in->n_chain;
			if ((err = specs_from(k, in->chain, in->n_chain, "settle.chain", &it->chain)) !=
			    BROOQ_OK)
				return err;
		}
	}
	*out = v;
	return BROOQ_OK;
}

static void
settle_results_out(const brq_settle_result *in, size_t n, brooq_settle_result *out)
{
	for (size_t i = 0; i < n; i++) {
		out[i].id      = in[i].id;
		out[i].applied = in[i].applied;
		out[i].state   = in[i].applied ? (brooq_state) in[i].state : BROOQ_PROCESSING;
	}
}

static brooq_err
count_mismatch(const char *op, uint32_t got, size_t want)
{
	return brq_fail(BROOQ_EPROTO, "%s: reply has %u results for %zu items", op, (unsigned) got, want);
}

/* ---- enqueue -------------------------------------------------------------------------------- */

brooq_err
brooq_enqueue(brooq_client *c, const brooq_job_spec *jobs, size_t n, brooq_enqueue_result *results)
{
	brq_call  k;
	brooq_err err;

	brq_msg_clear();
	if (c == NULL || jobs == NULL || results == NULL)
		return brq_fail(BROOQ_EINVAL, "enqueue: client, jobs and results are required");
	if (n == 0 || n > UINT32_MAX)
		return brq_fail(BROOQ_EINVAL, "enqueue: n must be 1..%u", (unsigned) UINT32_MAX);
	brq_call_init(&k, BRQ_OP_ENQUEUE);
	k.req.enqueue.n_jobs = (uint32_t) n;
	err                  = specs_from(&k, jobs, n, "enqueue.jobs", &k.req.enqueue.jobs);
	if (err == BROOQ_OK)
		err = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK && k.rep.enqueue.n_results != n)
		err = count_mismatch("enqueue", k.rep.enqueue.n_results, n);
	if (err == BROOQ_OK) {
		for (size_t i = 0; i < n; i++) {
			results[i].id      = k.rep.enqueue.results[i].id;
			results[i].created = k.rep.enqueue.results[i].created;
		}
	}
	brq_call_fini(&k);
	return err;
}

/* ---- claim ------------------------------------------------------------------------------------ */

void
brooq_jobs_free(brooq_job *jobs, size_t n)
{
	if (jobs == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		free(jobs[i].topic);
		free(jobs[i].payload);
	}
	free(jobs);
}

/* Library-allocated copies of the claimed jobs; each string is its own allocation
 * (a caller may take one and NULL it before brooq_jobs_free). */
static brooq_err
jobs_out(const brq_claimed_job *in, uint32_t n, brooq_job **out)
{
	brooq_job *v;

	*out = NULL;
	if (n == 0)
		return BROOQ_OK;
	if ((v = calloc(n, sizeof(*v))) == NULL)
		return brq_fail(BROOQ_ENOMEM, "claim: out of memory");
	for (uint32_t i = 0; i < n; i++) {
		v[i].lease.id = in[i].id;
		memcpy(v[i].lease.token, in[i].lease, BROOQ_LEASE_LEN);
		v[i].topic          = str_dup(in[i].topic);
		v[i].payload        = str_dup(in[i].payload);
		v[i].payload_len    = in[i].payload.len;
		v[i].attempts       = in[i].attempts;
		v[i].max_attempts   = in[i].max_attempts;
		v[i].lease_until_ms = in[i].lease_until_ms;
		v[i].created_at_ms  = in[i].created_at_ms;
		if (v[i].topic == NULL || v[i].payload == NULL) {
			brooq_jobs_free(v, i + 1);
			return brq_fail(BROOQ_ENOMEM, "claim: out of memory");
		}
	}
	*out = v;
	return BROOQ_OK;
}

brooq_err
brooq_claim(brooq_client *c, const brooq_claim_opts *o, brooq_job **jobs, size_t *n)
{
	brq_call  k;
	brooq_err err = BROOQ_OK;
	char      worker[BRQ_WORKER_MAX + 1];

	brq_msg_clear();
	if (c == NULL || o == NULL || jobs == NULL || n == NULL)
		return brq_fail(BROOQ_EINVAL, "claim: client, options, jobs and n are required");
	if (o->topics == NULL || o->n_topics == 0 || o->n_topics > UINT32_MAX)
		return brq_fail(BROOQ_EINVAL, "claim.topics: at least one topic is required");
	if (o->max_jobs == 0)
		return brq_fail(BROOQ_EINVAL, "claim.max_jobs: must be at least 1");
	if (o->n_settle > 0 && (o->settle == NULL || o->settled == NULL))
		return brq_fail(BROOQ_EINVAL, "claim.settle: settle and settled are required with n_settle");
	if (o->n_settle > UINT32_MAX)
		return brq_fail(BROOQ_EINVAL, "claim.n_settle: too large");
	for (size_t i = 0; i < o->n_topics; i++) {
		if (o->topics[i] == NULL)
			return brq_fail(BROOQ_EINVAL, "claim.topics[%zu]: NULL", i);
	}
	if (o->worker == NULL) {
		char host[64] = "localhost";
		(void) gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		snprintf(worker, sizeof(worker), "%s:%ld", host, (long) getpid());
	}

	brq_call_init(&k, BRQ_OP_CLAIM);
	brq_claim_req *q = &k.req.claim;
	q->worker        = brq_str_c(o->worker != NULL ? o->worker : worker);
	q->n_topics      = (uint32_t) o->n_topics;
	q->topics        = brq_arena_alloc(&k.arena, o->n_topics, sizeof(brq_str));
	q->n             = o->max_jobs;
	q->has_lease_ms  = o->lease_ms > 0;
	q->lease_ms      = o->lease_ms;
	q->has_wait_ms   = o->wait_ms > 0;
	q->wait_ms       = o->wait_ms;
	if (q->topics == NULL)
		err = brq_fail(BROOQ_ENOMEM, "claim: out of memory");
	for (size_t i = 0; err == BROOQ_OK && i < o->n_topics; i++)
		q->topics[i] = brq_str_c(o->topics[i]);
	if (err == BROOQ_OK && o->n_settle > 0) {
		q->has_settle = true;
		q->n_settle   = (uint32_t) o->n_settle;
		err           = settles_from(&k, o->settle, o->n_settle, "claim.settle", &q->settle);
	}
	if (err == BROOQ_OK)
		err = brq_rpc_call(c, &k, o->wait_ms);
	if (err == BROOQ_OK && o->n_settle > 0 &&
	    (!k.rep.claim.has_settled || k.rep.claim.n_settled != o->n_settle))
		err = count_mismatch("claim.settled", k.rep.claim.n_settled, o->n_settle);
	if (err == BROOQ_OK)
		err = jobs_out(k.rep.claim.jobs, k.rep.claim.n_jobs, jobs);
	if (err == BROOQ_OK) {
		*n = k.rep.claim.n_jobs;
		if (o->n_settle > 0)
			settle_results_out(k.rep.claim.settled, o->n_settle, o->settled);
	}
	brq_call_fini(&k);
	return err;
}

/* ---- heartbeat, settle -------------------------------------------------------------------------- */

brooq_err
brooq_heartbeat(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms, bool *extended)
{
	brq_call  k;
	brooq_err err = BROOQ_OK;

	brq_msg_clear();
	if (c == NULL || leases == NULL || extended == NULL)
		return brq_fail(BROOQ_EINVAL, "heartbeat: client, leases and extended are required");
	if (n == 0 || n > UINT32_MAX)
		return brq_fail(BROOQ_EINVAL, "heartbeat: n must be 1..%u", (unsigned) UINT32_MAX);
	brq_call_init(&k, BRQ_OP_HEARTBEAT);
	brq_heartbeat_req *q = &k.req.heartbeat;
	q->n_leases          = (uint32_t) n;
	q->has_lease_ms      = lease_ms > 0;
	q->lease_ms          = lease_ms;
	q->leases            = brq_arena_alloc(&k.arena, n, sizeof(brq_lease_ref));
	if (q->leases == NULL)
		err = brq_fail(BROOQ_ENOMEM, "heartbeat: out of memory");
	for (size_t i = 0; err == BROOQ_OK && i < n; i++) {
		q->leases[i].id = leases[i].id;
		memcpy(q->leases[i].lease, leases[i].token, BRQ_LEASE_LEN);
	}
	if (err == BROOQ_OK)
		err = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK && k.rep.heartbeat.n_extended != n)
		err = count_mismatch("heartbeat", k.rep.heartbeat.n_extended, n);
	if (err == BROOQ_OK) {
		for (size_t i = 0; i < n; i++)
			extended[i] = k.rep.heartbeat.extended[i];
	}
	brq_call_fini(&k);
	return err;
}

brooq_err
brooq_settle(brooq_client *c, const brooq_settle_item *items, size_t n, brooq_settle_result *results)
{
	brq_call  k;
	brooq_err err;

	brq_msg_clear();
	if (c == NULL || items == NULL || results == NULL)
		return brq_fail(BROOQ_EINVAL, "settle: client, items and results are required");
	if (n == 0 || n > UINT32_MAX)
		return brq_fail(BROOQ_EINVAL, "settle: n must be 1..%u", (unsigned) UINT32_MAX);
	brq_call_init(&k, BRQ_OP_SETTLE);
	k.req.settle.n_items = (uint32_t) n;
	err                  = settles_from(&k, items, n, "settle.items", &k.req.settle.items);
	if (err == BROOQ_OK)
		err = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK && k.rep.settle.n_results != n)
		err = count_mismatch("settle", k.rep.settle.n_results, n);
	if (err == BROOQ_OK)
		settle_results_out(k.rep.settle.results, n, results);
	brq_call_fini(&k);
	return err;
}

/* ---- admin and introspection --------------------------------------------------------------------- */

static brooq_err
check_id(const char *op, uint64_t id)
{
	if (id == 0 || id > BRQ_ID_MAX)
		return brq_fail(BROOQ_EINVAL, "%s.id: must be 1..%llu", op, (unsigned long long) BRQ_ID_MAX);
	return BROOQ_OK;
}

brooq_err
brooq_cancel(brooq_client *c, uint64_t id, brooq_state *state, bool *canceled)
{
	brq_call  k;
	brooq_err err;

	brq_msg_clear();
	if (c == NULL || state == NULL || canceled == NULL)
		return brq_fail(BROOQ_EINVAL, "cancel: client, state and canceled are required");
	if ((err = check_id("cancel", id)) != BROOQ_OK)
		return err;
	brq_call_init(&k, BRQ_OP_CANCEL);
	k.req.cancel.id = id;
	err             = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK) {
		*state    = (brooq_state) k.rep.cancel.state;
		*canceled = k.rep.cancel.canceled;
	}
	brq_call_fini(&k);
	return err;
}

void
brooq_job_info_free(brooq_job_info *j)
{
	if (j == NULL)
		return;
	free(j->topic);
	free(j->payload);
	free(j->locked_by);
	free(j->last_error);
	free(j->key);
	free(j);
}

brooq_err
brooq_job_get(brooq_client *c, uint64_t id, brooq_job_info **out)
{
	brq_call  k;
	brooq_err err;

	brq_msg_clear();
	if (c == NULL || out == NULL)
		return brq_fail(BROOQ_EINVAL, "job: client and out are required");
	if ((err = check_id("job", id)) != BROOQ_OK)
		return err;
	brq_call_init(&k, BRQ_OP_JOB);
	k.req.job.id = id;
	err          = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK) {
		const brq_job_info *in = &k.rep.job.job;
		brooq_job_info     *j  = calloc(1, sizeof(*j));
		bool                ok = j != NULL;
		if (ok) {
			j->id              = in->id;
			j->topic           = opt_dup(true, in->topic, &ok);
			j->payload         = opt_dup(true, in->payload, &ok);
			j->state           = (brooq_state) in->state;
			j->attempts        = in->attempts;
			j->max_attempts    = in->max_attempts;
			j->available_at_ms = in->available_at_ms;
			j->locked_by       = opt_dup(in->has_locked_by, in->locked_by, &ok);
			j->locked_until_ms = in->has_locked_until_ms ? in->locked_until_ms : 0;
			j->last_error      = opt_dup(in->has_last_error, in->last_error, &ok);
			j->key             = opt_dup(in->has_key, in->key, &ok);
			j->created_at_ms   = in->created_at_ms;
			j->updated_at_ms   = in->updated_at_ms;
		}
		if (ok) {
			*out = j;
		} else {
			brooq_job_info_free(j);
			err = brq_fail(BROOQ_ENOMEM, "job: out of memory");
		}
	}
	brq_call_fini(&k);
	return err;
}

void
brooq_stats_free(brooq_topic_stats *s, size_t n)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(s[i].topic);
	free(s);
}

brooq_err
brooq_stats(brooq_client *c, brooq_topic_stats **out, size_t *n)
{
	brq_call  k;
	brooq_err err;

	brq_msg_clear();
	if (c == NULL || out == NULL || n == NULL)
		return brq_fail(BROOQ_EINVAL, "stats: client, out and n are required");
	brq_call_init(&k, BRQ_OP_STATS);
	err = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK) {
		uint32_t           m = k.rep.stats.n_topics;
		brooq_topic_stats *v = m > 0 ? calloc(m, sizeof(*v)) : NULL;
		if (m > 0 && v == NULL)
			err = brq_fail(BROOQ_ENOMEM, "stats: out of memory");
		for (uint32_t i = 0; err == BROOQ_OK && i < m; i++) {
			const brq_topic_stats *t = &k.rep.stats.topics[i];
			v[i].topic               = str_dup(t->topic);
			memcpy(v[i].count, t->count, sizeof(v[i].count));
			v[i].oldest_ready_age_ms = t->oldest_ready_age_ms;
			if (v[i].topic == NULL) {
				brooq_stats_free(v, i + 1);
				v   = NULL;
				err = brq_fail(BROOQ_ENOMEM, "stats: out of memory");
			}
		}
		if (err == BROOQ_OK) {
			*out = v;
			*n   = m;
		}
	}
	brq_call_fini(&k);
	return err;
}
