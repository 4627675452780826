/* SPDX-License-Identifier: MIT */
/* The queue calls: argument checks, request building, copying results out of the reply. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"

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
static int
spec_from(const brooq_job_spec *in, brq_job_spec *out, const char *what, size_t i)
{
	if (in->topic == NULL)
		return brq_fail(BRQ_EINVAL, "%s[%zu].topic: required", what, i);
	size_t plen = in->payload == NULL ? 2 : (in->payload_len > 0 ? in->payload_len : strlen(in->payload));
	if (plen > UINT32_MAX)
		return brq_fail(BRQ_EINVAL, "%s[%zu].payload: too long", what, i);
	if (in->delay_ms > 0 && in->run_at_ms != 0)
		return brq_fail(BRQ_EINVAL, "%s[%zu]: delay_ms and run_at_ms are exclusive", what, i);
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
	if (in->priority > 0) {
		out->has_priority = true;
		out->priority     = in->priority;
	}
	return 0;
}

/* Wire specs for jobs[0..n), from the call's arena. */
static int
specs_from(brq_call *k, const brooq_job_spec *jobs, size_t n, const char *what, brq_job_spec **out)
{
	brq_job_spec *v = brq_arena_alloc(&k->arena, n, sizeof(*v));
	if (v == NULL)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < n; i++) {
		int rv = spec_from(&jobs[i], &v[i], what, i);
		if (rv != 0)
			return rv;
	}
	*out = v;
	return 0;
}

/* The optional result of settle item i (NULL: none) into it. */
static int
result_from(const char *res, const brooq_settle_item *in, brq_settle_item *it, const char *what, size_t i)
{
	if (res == NULL)
		return 0;
	if (in->outcome != BROOQ_OUTCOME_DONE)
		return brq_fail(BRQ_EINVAL, "%s[%zu].result: only with the done outcome", what, i);
	if (strlen(res) > UINT32_MAX)
		return brq_fail(BRQ_EINVAL, "%s[%zu].result: too long", what, i);
	it->has_result = true;
	it->result     = brq_str_c(res);
	return 0;
}

/* Wire settle items for items[0..n) with their results res[0..n) (res may be NULL),
 * from the call's arena. */
static int
settles_from(brq_call *k, const brooq_settle_item *items, const char *const *res, size_t n, const char *what,
	     brq_settle_item **out)
{
	brq_settle_item *v = brq_arena_alloc(&k->arena, n, sizeof(*v));
	if (v == NULL)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < n; i++) {
		const brooq_settle_item *in = &items[i];
		brq_settle_item         *it = &v[i];
		if ((unsigned) in->outcome > (unsigned) BROOQ_OUTCOME_CANCEL)
			return brq_fail(BRQ_EINVAL, "%s[%zu].outcome: unknown outcome %d", what, i,
					(int) in->outcome);
		if (in->n_chain > 0 && in->outcome != BROOQ_OUTCOME_DONE)
			return brq_fail(BRQ_EINVAL, "%s[%zu].chain: only with the done outcome", what, i);
		if (in->n_chain > 0 && in->chain == NULL)
			return brq_fail(BRQ_EINVAL, "%s[%zu].chain: NULL with n_chain %zu", what, i,
					in->n_chain);
		if (in->n_chain > UINT32_MAX)
			return brq_fail(BRQ_EINVAL, "%s[%zu].n_chain: too large", what, i);
		if (in->error != NULL && strlen(in->error) > UINT32_MAX)
			return brq_fail(BRQ_EINVAL, "%s[%zu].error: too long", what, i);
		it->id      = in->lease.id;
		it->outcome = (brq_outcome) in->outcome;
		memcpy(it->lease, in->lease.token, BRQ_LEASE_LEN);
		if (in->error != NULL) {
			it->has_error = true;
			it->error     = brq_str_c(in->error);
		}
		if (in->outcome == BROOQ_OUTCOME_DELAY)
			it->delay_ms = in->delay_ms;
		int rv = result_from(res != NULL ? res[i] : NULL, in, it, what, i);
		if (rv != 0)
			return rv;
		if (in->n_chain > 0) {
			it->has_chain = true;
			it->n_chain   = (uint32_t) in->n_chain;
			if ((rv = specs_from(k, in->chain, in->n_chain, "settle.chain", &it->chain)) != 0)
				return rv;
		}
	}
	*out = v;
	return 0;
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

static int
count_mismatch(const char *op, uint32_t got, size_t want)
{
	return brq_fail(BRQ_EINTERNAL, "%s: reply has %u results for %zu items", op, (unsigned) got, want);
}

/* ---- enqueue -------------------------------------------------------------------------------- */

/* A public call's argument error, at the edge. */
#define ARG_FAIL(...) brq_err_public(brq_fail(BRQ_EINVAL, __VA_ARGS__))

brooq_err
brooq_enqueue(brooq_client *c, const brooq_job_spec *jobs, size_t n, brooq_enqueue_result *results)
{
	brq_call k;
	int      rv;

	brq_msg_clear();
	if (c == NULL || jobs == NULL || results == NULL)
		return ARG_FAIL("enqueue: client, jobs and results are required");
	if (n == 0 || n > UINT32_MAX)
		return ARG_FAIL("enqueue: n must be 1..%u", (unsigned) UINT32_MAX);
	brq_call_init(&k, BRQ_OP_ENQUEUE);
	k.req.enqueue.n_jobs = (uint32_t) n;
	rv                   = specs_from(&k, jobs, n, "enqueue.jobs", &k.req.enqueue.jobs);
	if (rv == 0)
		rv = brq_rpc_call(&c->rpc, &k, 0);
	brooq_err err = brq_call_result(&k, rv);
	if (err == BROOQ_OK && k.rep.enqueue.n_results != n)
		err = brq_err_public(count_mismatch("enqueue", k.rep.enqueue.n_results, n));
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
static int
jobs_out(const brq_claimed_job *in, uint32_t n, brooq_job **out)
{
	brooq_job *v;

	*out = NULL;
	if (n == 0)
		return 0;
	if ((v = calloc(n, sizeof(*v))) == NULL)
		return brq_fail(BRQ_ENOMEM, "claim: out of memory");
	for (uint32_t i = 0; i < n; i++) {
		v[i].lease.id = in[i].id;
		memcpy(v[i].lease.token, in[i].lease, BROOQ_LEASE_LEN);
		v[i].topic              = str_dup(in[i].topic);
		v[i].payload            = str_dup(in[i].payload);
		v[i].payload_len        = in[i].payload.len;
		v[i].attempts           = in[i].attempts;
		v[i].max_attempts       = in[i].max_attempts;
		v[i].lease_until_ms     = in[i].lease_until_ms;
		v[i].created_at_ms      = in[i].created_at_ms;
		v[i].attempt_timeout_ms = in[i].attempt_timeout_ms;
		v[i].max_execution_ms   = in[i].max_execution_ms;
		if (v[i].topic == NULL || v[i].payload == NULL) {
			brooq_jobs_free(v, i + 1);
			return brq_fail(BRQ_ENOMEM, "claim: out of memory");
		}
	}
	*out = v;
	return 0;
}

/* Checks the caller's claim options (o is the caller's copy, size checked). */
static int
claim_check(const brooq_claim_opts *o)
{
	if (o->topics == NULL || o->n_topics == 0 || o->n_topics > BRQ_TOPICS_MAX)
		return brq_fail(BRQ_EINVAL, "claim.topics: 1..%d topics are required", BRQ_TOPICS_MAX);
	if (o->max_jobs == 0)
		return brq_fail(BRQ_EINVAL, "claim.max_jobs: must be at least 1");
	if (o->n_settle > 0 && (o->settle == NULL || o->settled == NULL))
		return brq_fail(BRQ_EINVAL, "claim.settle: settle and settled are required with n_settle");
	if (o->n_settle > UINT32_MAX)
		return brq_fail(BRQ_EINVAL, "claim.n_settle: too large");
	for (size_t i = 0; i < o->n_topics; i++) {
		if (o->topics[i] == NULL)
			return brq_fail(BRQ_EINVAL, "claim.topics[%zu]: NULL", i);
	}
	return 0;
}

/* The claim request of o into k (arrays from k's arena); worker names the holder. */
static int
claim_fill(brq_call *k, const brooq_claim_opts *o, const char *worker)
{
	brq_claim_req *q = &k->req.claim;
	q->worker        = brq_str_c(worker);
	q->n_topics      = (uint32_t) o->n_topics;
	q->topics        = brq_arena_alloc(&k->arena, o->n_topics, sizeof(brq_str));
	q->n             = o->max_jobs;
	q->has_lease_ms  = o->lease_ms > 0;
	q->lease_ms      = o->lease_ms;
	q->has_wait_ms   = o->wait_ms > 0;
	q->wait_ms       = o->wait_ms;
	if (q->topics == NULL)
		return brq_fail(BRQ_ENOMEM, "claim: out of memory");
	for (size_t i = 0; i < o->n_topics; i++)
		q->topics[i] = brq_str_c(o->topics[i]);
	if (o->n_settle == 0)
		return 0;
	q->has_settle = true;
	q->n_settle   = (uint32_t) o->n_settle;
	return settles_from(k, o->settle, o->settle_results, o->n_settle, "claim.settle", &q->settle);
}

brooq_err
brooq_claim(brooq_client *c, const brooq_claim_opts *opts, brooq_job **jobs, size_t *n)
{
	return brq_claim_via(c, c != NULL ? &c->rpc : NULL, opts, jobs, n);
}

brooq_err
brq_claim_via(brooq_client *c, brq_rpc *r, const brooq_claim_opts *opts, brooq_job **jobs, size_t *n)
{
	brooq_claim_opts o;
	brq_call         k;
	int              rv;
	char             worker[BRQ_WORKER_MAX + 1];

	brq_msg_clear();
	if (c == NULL || opts == NULL || jobs == NULL || n == NULL)
		return ARG_FAIL("claim: client, options, jobs and n are required");
	if ((rv = brq_opts_copy(&o, sizeof(o), opts, BRQ_CLAIM_OPTS_V1, "brooq_claim_opts")) != 0 ||
	    (rv = claim_check(&o)) != 0)
		return brq_err_public(rv);
	if (o.worker == NULL) {
		char host[64] = "localhost";
		(void) gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		snprintf(worker, sizeof(worker), "%s:%ld", host, (long) getpid());
	}

	brq_call_init(&k, BRQ_OP_CLAIM);
	rv = claim_fill(&k, &o, o.worker != NULL ? o.worker : worker);
	if (rv == 0)
		rv = brq_rpc_call(r, &k, o.wait_ms);
	brooq_err err = brq_call_result(&k, rv);
	if (err == BROOQ_OK && o.n_settle > 0 &&
	    (!k.rep.claim.has_settled || k.rep.claim.n_settled != o.n_settle))
		err = brq_err_public(count_mismatch("claim.settled", k.rep.claim.n_settled, o.n_settle));
	if (err == BROOQ_OK)
		err = brq_err_public(jobs_out(k.rep.claim.jobs, k.rep.claim.n_jobs, jobs));
	if (err == BROOQ_OK) {
		*n = k.rep.claim.n_jobs;
		if (o.n_settle > 0)
			settle_results_out(k.rep.claim.settled, o.n_settle, o.settled);
	}
	brq_call_fini(&k);
	return err;
}

/* ---- heartbeat, settle -------------------------------------------------------------------------- */

brooq_err
brooq_heartbeat(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms, bool *extended)
{
	return brq_heartbeat_why(c, leases, n, lease_ms, extended, NULL);
}

brooq_err
brq_heartbeat_why(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms, bool *extended,
		  brq_lost_reason *why)
{
	brq_call k;
	int      rv = 0;

	brq_msg_clear();
	if (c == NULL || leases == NULL || extended == NULL)
		return ARG_FAIL("heartbeat: client, leases and extended are required");
	if (n == 0 || n > UINT32_MAX)
		return ARG_FAIL("heartbeat: n must be 1..%u", (unsigned) UINT32_MAX);
	brq_call_init(&k, BRQ_OP_HEARTBEAT);
	brq_heartbeat_req *q = &k.req.heartbeat;
	q->n_leases          = (uint32_t) n;
	q->has_lease_ms      = lease_ms > 0;
	q->lease_ms          = lease_ms;
	q->leases            = brq_arena_alloc(&k.arena, n, sizeof(brq_lease_ref));
	if (q->leases == NULL)
		rv = brq_fail(BRQ_ENOMEM, "heartbeat: out of memory");
	for (size_t i = 0; rv == 0 && i < n; i++) {
		q->leases[i].id = leases[i].id;
		memcpy(q->leases[i].lease, leases[i].token, BRQ_LEASE_LEN);
	}
	if (rv == 0)
		rv = brq_rpc_call(&c->rpc, &k, 0);
	brooq_err err = brq_call_result(&k, rv);
	if (err == BROOQ_OK && k.rep.heartbeat.n_extended != n)
		err = brq_err_public(count_mismatch("heartbeat", k.rep.heartbeat.n_extended, n));
	if (err == BROOQ_OK) {
		for (size_t i = 0; i < n; i++) {
			extended[i] = k.rep.heartbeat.extended[i];
			// Without reasons (an older gateway): every lost lease is just gone.
			if (why != NULL)
				why[i] = extended[i] ? BRQ_LOST_NONE
					: k.rep.heartbeat.lost_reasons != NULL
					? k.rep.heartbeat.lost_reasons[i]
					: BRQ_LOST_GONE;
		}
	}
	brq_call_fini(&k);
	return err;
}

brooq_err
brooq_settle(brooq_client *c, const brooq_settle_item *items, size_t n, brooq_settle_result *results)
{
	return brooq_settle_results(c, items, NULL, n, results);
}

brooq_err
brooq_settle_results(brooq_client *c, const brooq_settle_item *items, const char *const *item_results,
		     size_t n, brooq_settle_result *results)
{
	brq_call k;
	int      rv;

	brq_msg_clear();
	if (c == NULL || items == NULL || results == NULL)
		return ARG_FAIL("settle: client, items and results are required");
	if (n == 0 || n > UINT32_MAX)
		return ARG_FAIL("settle: n must be 1..%u", (unsigned) UINT32_MAX);
	brq_call_init(&k, BRQ_OP_SETTLE);
	k.req.settle.n_items = (uint32_t) n;
	rv                   = settles_from(&k, items, item_results, n, "settle.items", &k.req.settle.items);
	if (rv == 0)
		rv = brq_rpc_call(&c->rpc, &k, 0);
	brooq_err err = brq_call_result(&k, rv);
	if (err == BROOQ_OK && k.rep.settle.n_results != n)
		err = brq_err_public(count_mismatch("settle", k.rep.settle.n_results, n));
	if (err == BROOQ_OK)
		settle_results_out(k.rep.settle.results, n, results);
	brq_call_fini(&k);
	return err;
}

/* ---- admin and introspection --------------------------------------------------------------------- */

static int
check_id(const char *op, uint64_t id)
{
	if (id == 0 || id > BRQ_ID_MAX)
		return brq_fail(BRQ_EINVAL, "%s.id: must be 1..%llu", op, (unsigned long long) BRQ_ID_MAX);
	return 0;
}

brooq_err
brooq_cancel(brooq_client *c, uint64_t id, brooq_state *state, bool *canceled)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || state == NULL || canceled == NULL)
		return ARG_FAIL("cancel: client, state and canceled are required");
	if (check_id("cancel", id) != 0)
		return BROOQ_EINVAL;
	brq_call_init(&k, BRQ_OP_CANCEL);
	k.req.cancel.id = id;
	brooq_err err   = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
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
	free(j->result);
	free(j);
}

/* A library-allocated copy of the reply's job row; NULL when out of memory. */
brooq_job_info *
brq_job_info_out(const brq_job_info *in)
{
	brooq_job_info *j  = calloc(1, sizeof(*j));
	bool            ok = j != NULL;
	if (!ok)
		return NULL;
	j->id                        = in->id;
	j->topic                     = opt_dup(true, in->topic, &ok);
	j->payload                   = opt_dup(true, in->payload, &ok);
	j->state                     = (brooq_state) in->state;
	j->attempts                  = in->attempts;
	j->max_attempts              = in->max_attempts;
	j->available_at_ms           = in->available_at_ms;
	j->locked_by                 = opt_dup(in->has_locked_by, in->locked_by, &ok);
	j->locked_until_ms           = in->has_locked_until_ms ? in->locked_until_ms : 0;
	j->last_error                = opt_dup(in->has_last_error, in->last_error, &ok);
	j->key                       = opt_dup(in->has_key, in->key, &ok);
	j->created_at_ms             = in->created_at_ms;
	j->updated_at_ms             = in->updated_at_ms;
	j->claimed_at_ms             = in->has_claimed_at_ms ? in->claimed_at_ms : 0;
	j->attempt_deadline_ms       = in->attempt_deadline_ms;
	j->max_execution_deadline_ms = in->max_execution_deadline_ms;
	j->priority                  = in->priority;
	j->result                    = opt_dup(in->has_result, in->result, &ok);
	j->retry_of                  = in->has_retry_of ? in->retry_of : 0;
	if (!ok) {
		brooq_job_info_free(j);
		return NULL;
	}
	return j;
}

brooq_err
brooq_job_get(brooq_client *c, uint64_t id, brooq_job_info **out)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || out == NULL)
		return ARG_FAIL("job: client and out are required");
	if (check_id("job", id) != 0)
		return BROOQ_EINVAL;
	brq_call_init(&k, BRQ_OP_JOB);
	k.req.job.id  = id;
	brooq_err err = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
	if (err == BROOQ_OK && (*out = brq_job_info_out(&k.rep.job.job)) == NULL)
		err = brq_err_public(brq_fail(BRQ_ENOMEM, "job: out of memory"));
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

/* Library-allocated copies of the reply's topics (NULL for none). */
static int
stats_out(const brq_topic_stats *in, uint32_t m, brooq_topic_stats **out)
{
	brooq_topic_stats *v = m > 0 ? calloc(m, sizeof(*v)) : NULL;
	if (m > 0 && v == NULL)
		return brq_fail(BRQ_ENOMEM, "stats: out of memory");
	for (uint32_t i = 0; i < m; i++) {
		v[i].topic = str_dup(in[i].topic);
		memcpy(v[i].count, in[i].count, sizeof(v[i].count));
		v[i].oldest_ready_age_ms = in[i].oldest_ready_age_ms;
		v[i].paused              = in[i].paused;
		v[i].max_running         = in[i].max_running;
		v[i].rate_per_s          = in[i].rate_per_s;
		if (v[i].topic == NULL) {
			brooq_stats_free(v, i + 1);
			return brq_fail(BRQ_ENOMEM, "stats: out of memory");
		}
	}
	*out = v;
	return 0;
}

brooq_err
brooq_stats(brooq_client *c, brooq_topic_stats **out, size_t *n)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || out == NULL || n == NULL)
		return ARG_FAIL("stats: client, out and n are required");
	brq_call_init(&k, BRQ_OP_STATS);
	brooq_err err = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
	if (err == BROOQ_OK)
		err = brq_err_public(stats_out(k.rep.stats.topics, k.rep.stats.n_topics, out));
	if (err == BROOQ_OK)
		*n = k.rep.stats.n_topics;
	brq_call_fini(&k);
	return err;
}
