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

char *
brq_strdup(brq_str s)
{
	char *p = malloc((size_t) s.len + 1);
	if (p == NULL)
		return NULL;
	if (s.len > 0)
		memcpy(p, s.ptr, s.len);
	p[s.len] = '\0';
	return p;
}

char *
brq_strdup_opt(bool has, brq_str s, bool *ok)
{
	if (!has)
		return NULL;
	char *p = brq_strdup(s);
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

/* Wire specs for the caller's jobs[0..n) (stepped by their size), from the call's arena. */
static int
specs_from(brq_call *k, const brooq_job_spec *jobs, size_t n, const char *what, brq_job_spec **out)
{
	brq_job_spec *v = brq_arena_alloc(&k->arena, n, sizeof(*v));
	if (v == NULL)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < n; i++) {
		brooq_job_spec in;
		int            rv = brq_abi_in(&in, sizeof(in), jobs, i, BRQ_JOB_SPEC_V1, "brooq_job_spec");
		if (rv != 0 || (rv = spec_from(&in, &v[i], what, i)) != 0)
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
		brooq_settle_item        copy;
		const brooq_settle_item *in = &copy;
		brq_settle_item         *it = &v[i];
		int rv = brq_abi_in(&copy, sizeof(copy), items, i, BRQ_SETTLE_ITEM_V1, "brooq_settle_item");
		if (rv != 0)
			return rv;
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
		if ((rv = result_from(res != NULL ? res[i] : NULL, in, it, what, i)) != 0)
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

/* The results into the caller's out[0..n) (checked by brq_abi_out_check). */
static void
settle_results_out(const brq_settle_result *in, size_t n, brooq_settle_result *out)
{
	for (size_t i = 0; i < n; i++) {
		brooq_settle_result r = {
			.size    = sizeof(r),
			.id      = in[i].id,
			.applied = in[i].applied,
			.state   = in[i].applied ? (brooq_state) in[i].state : BROOQ_PROCESSING,
		};
		brq_abi_out(out, i, &r, sizeof(r));
	}
}

static int
count_mismatch(const char *op, uint32_t got, size_t want)
{
	return brq_fail(BRQ_EINTERNAL, "%s: reply has %u results for %zu items", op, (unsigned) got, want);
}

brooq_err
brq_call_array(brooq_client *c, brq_op op, brq_call_out_fn copy, void *out, size_t *n)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || out == NULL || n == NULL)
		return BRQ_ARG_FAIL("%s: client, out and n are required", brq_op_name(op));
	brq_call_init(&k, op);
	return brq_call_run(&c->rpc, &k, 0, 0, copy, out, n);
}

brooq_err
brq_call_id(brooq_client *c, brq_op op, uint64_t id, brq_call_out_fn copy, void *out, void *out2)
{
	brq_call k;

	if (id == 0 || id > BRQ_ID_MAX)
		return BRQ_ARG_FAIL("%s.id: must be 1..%llu", brq_op_name(op),
				    (unsigned long long) BRQ_ID_MAX);
	brq_call_init(&k, op);
	switch (op) {
	case BRQ_OP_CANCEL: k.req.cancel.id = id; break;
	case BRQ_OP_JOB: k.req.job.id = id; break;
	case BRQ_OP_RETRY: k.req.retry.id = id; break;
	default: k.req.del.id = id; break;
	}
	return brq_call_run(&c->rpc, &k, 0, 0, copy, out, out2);
}

/* ---- enqueue -------------------------------------------------------------------------------- */

/* enqueue's results into results[0..n_jobs). */
static int
enqueue_out(const brq_call *k, void *out, void *unused)
{
	const brq_enqueue_rep *rep     = &k->rep.enqueue;
	brooq_enqueue_result  *results = out;
	(void) unused;
	if (rep->n_results != k->req.enqueue.n_jobs)
		return count_mismatch("enqueue", rep->n_results, k->req.enqueue.n_jobs);
	for (uint32_t i = 0; i < rep->n_results; i++) {
		brooq_enqueue_result r = {
			.size = sizeof(r), .id = rep->results[i].id, .created = rep->results[i].created};
		brq_abi_out(results, i, &r, sizeof(r));
	}
	return 0;
}

/* The checks the calls on n items share (enqueue, heartbeat, settle): the message
 * cleared, the pointers given (what names them after the client), n within the
 * wire's 32 bits. BROOQ_OK, or the error with its message set. */
static brooq_err
batch_args(brq_op op, bool given, const char *what, size_t n)
{
	brq_msg_clear();
	if (!given)
		return BRQ_ARG_FAIL("%s: client, %s are required", brq_op_name(op), what);
	if (n == 0 || n > UINT32_MAX)
		return BRQ_ARG_FAIL("%s: n must be 1..%u", brq_op_name(op), (unsigned) UINT32_MAX);
	return BROOQ_OK;
}

brooq_err
brooq_enqueue(brooq_client *c, const brooq_job_spec *jobs, size_t n, brooq_enqueue_result *results)
{
	brq_call  k;
	int       rv;
	brooq_err e = batch_args(BRQ_OP_ENQUEUE, c && jobs && results, "jobs and results", n);

	if (e != BROOQ_OK)
		return e;
	if (brq_abi_out_check(results, n, BRQ_ENQUEUE_RES_V1, "brooq_enqueue_result") != 0)
		return BROOQ_EINVAL;
	brq_call_init(&k, BRQ_OP_ENQUEUE);
	k.req.enqueue.n_jobs = (uint32_t) n;
	rv                   = specs_from(&k, jobs, n, "enqueue.jobs", &k.req.enqueue.jobs);
	return brq_call_run(&c->rpc, &k, rv, 0, enqueue_out, results, NULL);
}

/* ---- claim ------------------------------------------------------------------------------------ */

void
brooq_jobs_free(brooq_job **jobs, size_t n)
{
	(void) n; /* one allocation: the pointers, the jobs and their strings */
	free(jobs);
}

/* The claimed jobs as the caller gets them: one allocation (brq_abi_list) of pointers,
 * jobs and strings, so a claim costs one malloc however many jobs it brings. */
static int
jobs_out(const brq_claimed_job *in, uint32_t n, brooq_job ***out)
{
	brq_abi_list l;
	size_t       strs = 0;
	for (uint32_t i = 0; i < n; i++)
		strs += (size_t) in[i].topic.len + 1 + (size_t) in[i].payload.len + 1;
	int rv = brq_abi_list_new(&l, n, sizeof(brooq_job), strs, "claim");
	if (rv != 0)
		return rv;
	for (uint32_t i = 0; i < n; i++) {
		brooq_job *j = l.ptrs[i];
		j->lease.id  = in[i].id;
		memcpy(j->lease.token, in[i].lease, BROOQ_LEASE_LEN);
		j->topic              = brq_abi_list_str(&l, in[i].topic);
		j->payload            = brq_abi_list_str(&l, in[i].payload);
		j->payload_len        = in[i].payload.len;
		j->attempts           = in[i].attempts;
		j->max_attempts       = in[i].max_attempts;
		j->lease_until_ms     = in[i].lease_until_ms;
		j->created_at_ms      = in[i].created_at_ms;
		j->attempt_timeout_ms = in[i].attempt_timeout_ms;
		j->max_execution_ms   = in[i].max_execution_ms;
	}
	*out = (brooq_job **) l.ptrs;
	return 0;
}

/* Where claim's results go: settled has the request's n_settle entries. */
typedef struct claim_outs {
	brooq_job         ***jobs;
	size_t              *n;
	brooq_settle_result *settled;
} claim_outs;

static int
claim_out(const brq_call *k, void *out, void *unused)
{
	const brq_claim_rep *rep = &k->rep.claim;
	const claim_outs    *o   = out;
	(void) unused;
	uint32_t n_settle = k->req.claim.n_settle;
	if (n_settle > 0 && (!rep->has_settled || rep->n_settled != n_settle))
		return count_mismatch("claim.settled", rep->n_settled, n_settle);
	int rv = jobs_out(rep->jobs, rep->n_jobs, o->jobs);
	if (rv != 0)
		return rv;
	*o->n = rep->n_jobs;
	if (n_settle > 0)
		settle_results_out(rep->settled, n_settle, o->settled);
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
	if (o->n_settle > 0 &&
	    brq_abi_out_check(o->settled, o->n_settle, BRQ_SETTLE_RES_V1, "brooq_settle_result") != 0)
		return BRQ_EINVAL;
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
brooq_claim(brooq_client *c, const brooq_claim_opts *opts, brooq_job ***jobs, size_t *n)
{
	return brq_claim_via(c, c != NULL ? &c->rpc : NULL, opts, jobs, n);
}

brooq_err
brq_claim_via(brooq_client *c, brq_rpc *r, const brooq_claim_opts *opts, brooq_job ***jobs, size_t *n)
{
	brooq_claim_opts o;
	brq_call         k;
	int              rv;
	char             worker[BRQ_WORKER_MAX + 1];

	brq_msg_clear();
	if (c == NULL || opts == NULL || jobs == NULL || n == NULL)
		return BRQ_ARG_FAIL("claim: client, options, jobs and n are required");
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
	return brq_call_run(r, &k, rv, o.wait_ms, claim_out, &(claim_outs) {jobs, n, o.settled}, NULL);
}

/* ---- watch ------------------------------------------------------------------------------------ */

typedef struct watch_outs {
	char      *cursor; /* BRQ_CURSOR_MAX + 1 bytes */
	uint64_t **ids;
	size_t    *n_ids;
	bool      *resync;
} watch_outs;

static int
watch_out(const brq_call *k, void *out, void *out2)
{
	const brq_watch_rep *rep = &k->rep.watch;
	const watch_outs    *o   = out;
	uint64_t            *ids = NULL;
	(void) out2;
	if (rep->n_canceled > 0) {
		if ((ids = malloc(rep->n_canceled * sizeof(*ids))) == NULL)
			return brq_fail(BRQ_ENOMEM, "watch: out of memory");
		memcpy(ids, rep->canceled, rep->n_canceled * sizeof(*ids));
	}
	memcpy(o->cursor, rep->next.ptr, rep->next.len); /* 1..BRQ_CURSOR_MAX: the decoder's check */
	o->cursor[rep->next.len] = '\0';
	*o->ids                  = ids;
	*o->n_ids                = rep->n_canceled;
	*o->resync               = rep->resync;
	return 0;
}

brooq_err
brq_watch_via(brooq_client *c, brq_rpc *r, const char *const *topics, size_t n_topics,
	      char cursor[BRQ_CURSOR_MAX + 1], uint32_t wait_ms, uint64_t **ids, size_t *n_ids, bool *resync)
{
	brq_call k;
	int      rv = 0;

	brq_msg_clear();
	if (c == NULL || r == NULL || topics == NULL || cursor == NULL || ids == NULL || n_ids == NULL ||
	    resync == NULL)
		return BRQ_ARG_FAIL("watch: client, transport, topics, cursor and outputs are required");
	if (n_topics == 0 || n_topics > BRQ_TOPICS_MAX)
		return BRQ_ARG_FAIL("watch: 1..%d topics", BRQ_TOPICS_MAX);
	brq_call_init(&k, BRQ_OP_WATCH);
	brq_watch_req *q = &k.req.watch;
	q->n_topics      = (uint32_t) n_topics;
	q->cursor        = brq_str_c(cursor);
	q->has_wait_ms   = wait_ms > 0;
	q->wait_ms       = wait_ms;
	q->topics        = brq_arena_alloc(&k.arena, n_topics, sizeof(brq_str));
	if (q->topics == NULL)
		rv = brq_fail(BRQ_ENOMEM, "watch: out of memory");
	for (size_t i = 0; rv == 0 && i < n_topics; i++)
		q->topics[i] = brq_str_c(topics[i]);
	return brq_call_run(r, &k, rv, wait_ms, watch_out, &(watch_outs) {cursor, ids, n_ids, resync}, NULL);
}

/* ---- heartbeat, settle -------------------------------------------------------------------------- */

/* heartbeat's results into extended[0..n_leases) and why[0..n_leases) (why may be NULL). */
static int
heartbeat_out(const brq_call *k, void *out, void *out2)
{
	const brq_heartbeat_rep *rep      = &k->rep.heartbeat;
	bool                    *extended = out;
	brq_lost_reason         *why      = out2;
	if (rep->n_extended != k->req.heartbeat.n_leases)
		return count_mismatch("heartbeat", rep->n_extended, k->req.heartbeat.n_leases);
	for (uint32_t i = 0; i < rep->n_extended; i++) {
		extended[i] = rep->extended[i];
		// Without reasons (an older gateway): every lost lease is just gone.
		if (why != NULL)
			why[i] = rep->extended[i]           ? BRQ_LOST_NONE
				: rep->lost_reasons != NULL ? rep->lost_reasons[i]
							    : BRQ_LOST_GONE;
	}
	return 0;
}

/* settle's results into results[0..n_items). */
static int
settle_out(const brq_call *k, void *results, void *unused)
{
	const brq_settle_rep *rep = &k->rep.settle;
	(void) unused;
	if (rep->n_results != k->req.settle.n_items)
		return count_mismatch("settle", rep->n_results, k->req.settle.n_items);
	settle_results_out(rep->results, rep->n_results, results);
	return 0;
}

brooq_err
brooq_heartbeat(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms, bool *extended)
{
	return brq_heartbeat_why(c, leases, n, lease_ms, extended, NULL);
}

brooq_err
brq_heartbeat_why(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms, bool *extended,
		  brq_lost_reason *why)
{
	brq_call  k;
	int       rv = 0;
	brooq_err e  = batch_args(BRQ_OP_HEARTBEAT, c && leases && extended, "leases and extended", n);

	if (e != BROOQ_OK)
		return e;
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
	return brq_call_run(&c->rpc, &k, rv, 0, heartbeat_out, extended, why);
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
	brq_call  k;
	int       rv;
	brooq_err e = batch_args(BRQ_OP_SETTLE, c && items && results, "items and results", n);

	if (e != BROOQ_OK)
		return e;
	if (brq_abi_out_check(results, n, BRQ_SETTLE_RES_V1, "brooq_settle_result") != 0)
		return BROOQ_EINVAL;
	brq_call_init(&k, BRQ_OP_SETTLE);
	k.req.settle.n_items = (uint32_t) n;
	rv                   = settles_from(&k, items, item_results, n, "settle.items", &k.req.settle.items);
	return brq_call_run(&c->rpc, &k, rv, 0, settle_out, results, NULL);
}

/* ---- admin and introspection --------------------------------------------------------------------- */

static int
cancel_out(const brq_call *k, void *state, void *canceled)
{
	*(brooq_state *) state = (brooq_state) k->rep.cancel.state;
	*(bool *) canceled     = k->rep.cancel.canceled;
	return 0;
}

brooq_err
brooq_cancel(brooq_client *c, uint64_t id, brooq_state *state, bool *canceled)
{
	brq_msg_clear();
	if (c == NULL || state == NULL || canceled == NULL)
		return BRQ_ARG_FAIL("cancel: client, state and canceled are required");
	return brq_call_id(c, BRQ_OP_CANCEL, id, cancel_out, state, canceled);
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
	for (size_t i = 0; i < j->n_errors; i++)
		free(j->errors[i]->error);
	free(j->errors); // the pointers and the structs: one allocation
	free(j);
}

/* The reply's attempts' errors into j (has_errors, n_errors, errors); *ok false when out
 * of memory (what was copied is freed with j). One allocation holds the pointers and the
 * structs they point to (the ABI rule: results are reached through pointers, so the
 * struct may grow), freed as one. */
static void
errors_out(brooq_job_info *j, const brq_job_info *in, bool *ok)
{
	j->has_errors = in->has_errors;
	if (in->n_errors == 0)
		return;
	j->errors = calloc(in->n_errors, sizeof(*j->errors) + sizeof(**j->errors));
	if (j->errors == NULL) {
		*ok = false;
		return;
	}
	brooq_attempt_error *row = (brooq_attempt_error *) (j->errors + in->n_errors);
	for (uint32_t i = 0; i < in->n_errors; i++) {
		j->errors[i]   = &row[i];
		row[i].attempt = in->errors[i].attempt;
		row[i].at_ms   = in->errors[i].at_ms;
		row[i].error   = brq_strdup_opt(true, in->errors[i].error, ok);
		j->n_errors    = i + 1;
	}
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
	j->topic                     = brq_strdup_opt(true, in->topic, &ok);
	j->payload                   = brq_strdup_opt(true, in->payload, &ok);
	j->state                     = (brooq_state) in->state;
	j->attempts                  = in->attempts;
	j->max_attempts              = in->max_attempts;
	j->available_at_ms           = in->available_at_ms;
	j->locked_by                 = brq_strdup_opt(in->has_locked_by, in->locked_by, &ok);
	j->locked_until_ms           = in->has_locked_until_ms ? in->locked_until_ms : 0;
	j->last_error                = brq_strdup_opt(in->has_last_error, in->last_error, &ok);
	j->key                       = brq_strdup_opt(in->has_key, in->key, &ok);
	j->created_at_ms             = in->created_at_ms;
	j->updated_at_ms             = in->updated_at_ms;
	j->claimed_at_ms             = in->has_claimed_at_ms ? in->claimed_at_ms : 0;
	j->attempt_deadline_ms       = in->attempt_deadline_ms;
	j->max_execution_deadline_ms = in->max_execution_deadline_ms;
	j->priority                  = in->priority;
	j->result                    = brq_strdup_opt(in->has_result, in->result, &ok);
	j->retry_of                  = in->has_retry_of ? in->retry_of : 0;
	j->lost_leases               = in->lost_leases;
	errors_out(j, in, &ok);
	if (!ok) {
		brooq_job_info_free(j);
		return NULL;
	}
	return j;
}

/* The job row of the reply into *out. */
static int
job_out(const brq_call *k, void *out, void *unused)
{
	(void) unused;
	if ((*(brooq_job_info **) out = brq_job_info_out(&k->rep.job.job)) == NULL)
		return brq_fail(BRQ_ENOMEM, "job: out of memory");
	return 0;
}

brooq_err
brooq_job_get(brooq_client *c, uint64_t id, brooq_job_info **out)
{
	brq_msg_clear();
	if (c == NULL || out == NULL)
		return BRQ_ARG_FAIL("job: client and out are required");
	return brq_call_id(c, BRQ_OP_JOB, id, job_out, out, NULL);
}

void
brooq_stats_free(brooq_topic_stats **s, size_t n)
{
	(void) n; /* one allocation: the pointers, the topics and their names */
	free(s);
}

/* The reply's topics, library-allocated (brq_abi_list; NULL for none), into *out, n of them. */
static int
stats_out(const brq_call *k, void *out, void *n)
{
	const brq_topic_stats *in = k->rep.stats.topics;
	uint32_t               m  = k->rep.stats.n_topics;
	brq_abi_list           l;
	size_t                 strs = 0;
	for (uint32_t i = 0; i < m; i++)
		strs += (size_t) in[i].topic.len + 1;
	int rv = brq_abi_list_new(&l, m, sizeof(brooq_topic_stats), strs, "stats");
	if (rv != 0)
		return rv;
	for (uint32_t i = 0; i < m; i++) {
		brooq_topic_stats *t = l.ptrs[i];
		t->topic             = brq_abi_list_str(&l, in[i].topic);
		memcpy(t->count, in[i].count, sizeof(t->count));
		t->oldest_ready_age_ms = in[i].oldest_ready_age_ms;
		t->paused              = in[i].paused;
		t->max_running         = in[i].max_running;
		t->rate_per_s          = in[i].rate_per_s;
	}
	*(brooq_topic_stats ***) out = (brooq_topic_stats **) l.ptrs;
	*(size_t *) n                = m;
	return 0;
}

/* brooq_stats_ex's two outputs, through the call's one output pointer. */
typedef struct stats_outs {
	brooq_topic_stats ***topics;
	brooq_stats_meta    *meta; /* checked; may be NULL */
} stats_outs;

static int
stats_ex_out(const brq_call *k, void *outs, void *n)
{
	const stats_outs *o  = outs;
	int               rv = stats_out(k, o->topics, n);
	if (rv == 0 && o->meta != NULL) {
		brooq_stats_meta m = {
			.size               = sizeof(m),
			.terminal_age_ms    = k->rep.stats.has_terminal_age ? k->rep.stats.terminal_age_ms
									    : BROOQ_AGE_UNKNOWN,
			.terminal_estimated = k->rep.stats.terminal_estimated,
		};
		brq_abi_out(o->meta, 0, &m, sizeof(m));
	}
	return rv;
}

brooq_err
brooq_stats_ex(brooq_client *c, brooq_topic_stats ***out, size_t *n, brooq_stats_meta *meta)
{
	if (meta != NULL && brq_abi_out_check(meta, 1, BRQ_STATS_META_V1, "brooq_stats_meta") != 0)
		return BROOQ_EINVAL;
	stats_outs o = {.topics = out, .meta = meta};
	return brq_call_array(c, BRQ_OP_STATS, stats_ex_out, out != NULL ? &o : NULL, n);
}

brooq_err
brooq_stats_aged(brooq_client *c, brooq_topic_stats ***out, size_t *n, uint64_t *terminal_age_ms)
{
	brooq_stats_meta m  = BROOQ_STATS_META_INIT;
	brooq_err        rv = brooq_stats_ex(c, out, n, &m);
	if (rv == BROOQ_OK && terminal_age_ms != NULL)
		*terminal_age_ms = m.terminal_age_ms;
	return rv;
}

brooq_err
brooq_stats(brooq_client *c, brooq_topic_stats ***out, size_t *n)
{
	return brooq_stats_aged(c, out, n, NULL);
}
