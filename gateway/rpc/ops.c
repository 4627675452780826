// SPDX-License-Identifier: MIT
// The operations' policy: request -> store -> wakes and metrics -> reply.
#include "ops.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "brq_clock.h"
#include "brq_version.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "ops_jobs.h"
#include "ops_policy.h"
#include "ops_schedule.h"

// Metrics for jobs whose lease was found gone: their topics cost one extra query,
// paid only when leases are actually lost.
static void
count_lost(brq_store_conn *c, const uint64_t *ids, uint32_t n)
{
	brq_str *topics;
	uint32_t n_topics;
	if (n == 0 || brq_store_topics_of(c, ids, n, &topics, &n_topics) != 0)
		return;
	for (uint32_t i = 0; i < n_topics; i++)
		brq_metrics_topic_add(topics[i].ptr, topics[i].len, BRQ_MT_LEASE_LOST, 1);
}

// ---- enqueue --------------------------------------------------------------------------------

// Jobs claimed along with an enqueue, counted per topic (a few topics; jobs of
// topics past the table's size are not counted: they cost a needless wake at most).
#define CLAIMED_TOPICS 16

typedef struct claimed_count {
	brq_str  topic;
	uint32_t n;
} claimed_count;

static uint32_t
count_claimed(const brq_store_claim_out *outs, uint32_t k, claimed_count *t)
{
	uint32_t nt = 0;
	for (uint32_t i = 0; i < k; i++)
		for (uint32_t j = 0; j < outs[i].n_jobs; j++) {
			brq_str  topic = outs[i].jobs[j].topic;
			uint32_t x     = 0;
			while (x < nt &&
			       !(t[x].topic.len == topic.len &&
				 memcmp(t[x].topic.ptr, topic.ptr, topic.len) == 0))
				x++;
			if (x == nt && nt == CLAIMED_TOPICS)
				continue;
			if (x == nt)
				t[nt++] = (claimed_count) {.topic = topic, .n = 0};
			t[x].n++;
		}
	return nt;
}

// Takes one job of `topic` off the counts; false when none is left.
static bool
claimed_one(claimed_count *t, uint32_t nt, brq_str topic)
{
	for (uint32_t x = 0; x < nt; x++)
		if (t[x].n > 0 && t[x].topic.len == topic.len &&
		    memcmp(t[x].topic.ptr, topic.ptr, topic.len) == 0) {
			t[x].n--;
			return true;
		}
	return false;
}

// After commit: metrics, and wake one parked long-poll per job that is ready now,
// but for the jobs taken long-polls claimed in the same transaction (outs[0..k)):
// per topic, that many wakes are not needed.
static void
enqueue_committed(const brq_ops *o, const brq_job_spec *jobs, uint32_t n, const brq_enqueue_result *res,
		  const brq_store_claim_out *outs, uint32_t k)
{
	claimed_count t[CLAIMED_TOPICS];
	uint32_t      nt = count_claimed(outs, k, t);
	for (uint32_t i = 0; i < n; i++) {
		if (!res[i].created)
			continue;
		brq_metrics_topic_add(jobs[i].topic.ptr, jobs[i].topic.len, BRQ_MT_ENQUEUED, 1);
		bool later = (jobs[i].has_delay_ms && jobs[i].delay_ms > 0) || jobs[i].has_run_at_ms;
		if (later || claimed_one(t, nt, jobs[i].topic))
			continue;
		brq_waiters_wake(o->waiters, jobs[i].topic.ptr, jobs[i].topic.len, 1);
	}
}

static void
encode_enqueue_reply(brq_work *w, const brq_enqueue_result *res)
{
	brq_buf *b = &w->out;
	w->code    = BRQ_ST_OK;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "results");
	brq_pack_array(b, w->req.enqueue.n_jobs);
	for (uint32_t i = 0; i < w->req.enqueue.n_jobs; i++)
		brq_pack_enqueue_result(b, &res[i]);
}

static brq_status
op_enqueue(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	const brq_enqueue_req *q   = &w->req.enqueue;
	brq_enqueue_result    *res = brq_arena_alloc(&w->arena, q->n_jobs, sizeof(*res));
	if (res == NULL)
		return brq_ops_fail(r, BRQ_ST_INTERNAL, "enqueue: out of memory");
	int rv = brq_store_enqueue(c, q->jobs, q->n_jobs, res);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "enqueue");
	enqueue_committed(o, q->jobs, q->n_jobs, res, NULL, 0);
	encode_enqueue_reply(w, res);
	return BRQ_ST_OK;
}

static void
encode_error(brq_work *w, brq_status code, const char *msg)
{
	w->code = code;
	if (brq_reply_encode_error(&w->out, w->req.rid, code, "%s", msg) != 0)
		brq_buf_reset(&w->out);
}

static void encode_claim_reply(brq_work *w, const brq_store_claim_out *out);
static void fit_reply(brq_store_conn *c, brq_store_claim_out *out, uint64_t budget);

// The claims of taken long-polls (their settle ran before they parked).
static brq_store_claim_in
claim_in(const brq_work *w)
{
	const brq_claim_req *q = &w->req.claim;
	return (brq_store_claim_in) {.topics       = q->topics,
				     .n_topics     = q->n_topics,
				     .n            = atomic_load(&w->orphaned) ? 0 : q->n,
				     .worker       = q->worker,
				     .has_lease_ms = q->has_lease_ms,
				     .lease_ms     = q->lease_ms};
}

// Runs jobs[0..total) with the claims of taken[0..k) in one transaction, and after
// the commit: metrics, wakes for the ready jobs nobody took, the taken claims'
// replies. Returns the store's code.
static int
enqueue_with_claims(const brq_ops *o, brq_store_conn *c, const brq_job_spec *jobs, uint32_t total,
		    brq_enqueue_result *res, brq_work **taken, uint32_t k)
{
	brq_store_claim_in  ins[BRQ_OPS_TAKE_MAX];
	brq_store_claim_out outs[BRQ_OPS_TAKE_MAX];
	for (uint32_t i = 0; i < k; i++)
		ins[i] = claim_in(taken[i]);
	int rv = k > 0 ? brq_store_enqueue_claim(c, jobs, total, res, ins, outs, k)
		       : brq_store_enqueue(c, jobs, total, res);
	if (rv != 0) {
		for (uint32_t i = 0; i < k; i++)
			taken[i]->handback = BRQ_HANDBACK_CLAIM;
		return rv;
	}
	for (uint32_t i = 0; i < k; i++) {
		brq_work *w = taken[i];
		w->handback = outs[i].n_jobs > 0 ? BRQ_HANDBACK_SEND : BRQ_HANDBACK_CLAIM;
		if (outs[i].n_jobs == 0)
			continue;
		fit_reply(c, &outs[i], o->cfg->max_request_bytes);
		w->code      = BRQ_ST_OK;
		w->claimed   = outs[i].jobs;
		w->n_claimed = outs[i].n_jobs;
		encode_claim_reply(w, &outs[i]);
	}
	enqueue_committed(o, jobs, total, res, outs, k);
	return 0;
}

// Enqueue requests that queued up behind each other, as one statement: one round
// trip and one commit for all (group commit). Each request's jobs stay atomic: the
// statement is all or nothing, and when the database refuses the data every request
// is run on its own, so each gets its own answer. Fills every item's reply.
uint32_t
brq_ops_enqueue(const brq_ops *o, brq_store_conn *c, brq_work *head, brq_work **taken)
{
	uint32_t total = 0, requests = 0, k = 0;
	for (brq_work *w = head; w != NULL; w = w->qnext, requests++)
		total += w->req.enqueue.n_jobs;
	BRQ_LOG_DEBUG("enqueue_group", "requests=%u jobs=%u", requests, total);
	brq_job_spec       *jobs = head->qnext == NULL ? head->req.enqueue.jobs
						       : brq_arena_alloc(&c->arena, total, sizeof(*jobs));
	brq_enqueue_result *res  = brq_arena_alloc(&head->arena, total, sizeof(*res));
	if (jobs == NULL || res == NULL)
		goto one_by_one;
	uint32_t at = 0;
	for (brq_work *w = head; head->qnext != NULL && w != NULL; w = w->qnext) {
		memcpy(jobs + at, w->req.enqueue.jobs, w->req.enqueue.n_jobs * sizeof(*jobs));
		at += w->req.enqueue.n_jobs;
	}
	brq_op_res r = {.code = BRQ_ST_OK};
	int        rv;
	if (!brq_store_ready(c)) {
		brq_ops_fail(&r, BRQ_ST_UNAVAILABLE, "database unavailable; retry later");
	} else {
		k  = brq_waiters_take(o->waiters, jobs, total, taken, BRQ_OPS_TAKE_MAX);
		rv = enqueue_with_claims(o, c, jobs, total, res, taken, k);
		if (rv == 0) {
			at = 0;
			for (brq_work *w = head; w != NULL; w = w->qnext) {
				encode_enqueue_reply(w, res + at);
				at += w->req.enqueue.n_jobs;
			}
			return k;
		}
		if (brq_ops_store_fail(&r, c, rv, "enqueue") == BRQ_ST_INVALID_ARGUMENT)
			goto one_by_one; // somebody's data was refused: find out whose
	}
	for (brq_work *w = head; w != NULL; w = w->qnext)
		encode_error(w, r.code, r.msg);
	return k;
one_by_one:
	for (brq_work *w = head; w != NULL; w = w->qnext)
		(void) brq_ops_run(o, c, w);
	return k;
}

// ---- settle ----------------------------------------------------------------------------------

// After a settle committed: metrics of the applied items, wakes for the chained jobs
// (which other sessions can see now), and the topics of the leases found lost.
static void
settle_committed(const brq_ops *o, brq_store_conn *c, brq_arena *arena, const brq_settle_item *items,
		 uint32_t n, const brq_store_settled *out, const brq_store_chain *chain)
{
	uint32_t n_lost = 0, by_address = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!out[i].r.applied) {
			n_lost++;
			continue;
		}
		by_address += out[i].by_address;
		brq_metrics_settle(out[i].topic.ptr, out[i].topic.len, items[i].outcome, 1);
		if (out[i].r.state == BRQ_STATE_DEAD)
			brq_metrics_dead(out[i].topic.ptr, out[i].topic.len, 1);
		brq_metrics_attempt_duration(out[i].attempt_s);
		// A limited topic has room for one more job now: a parked claim of it
		// looks again rather than at the monitor's next round.
		if (brq_store_policy_known(c->st, out[i].topic))
			brq_waiters_wake(o->waiters, out[i].topic.ptr, out[i].topic.len, 1);
	}
	brq_metrics_settle_lookup(by_address, n - n_lost - by_address);
	if (chain->n > 0)
		enqueue_committed(o, chain->jobs, chain->n, chain->res, NULL, 0);
	uint64_t *lost = n_lost > 0 ? brq_arena_alloc(arena, n_lost, sizeof(*lost)) : NULL;
	if (lost == NULL)
		return;
	n_lost = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!out[i].r.applied)
			lost[n_lost++] = out[i].r.id;
	count_lost(c, lost, n_lost);
}

static brq_status
op_settle(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	const brq_settle_req *q   = &w->req.settle;
	brq_store_settled    *out = brq_arena_alloc(&w->arena, q->n_items, sizeof(*out));
	brq_store_chain       chain;
	if (out == NULL)
		return brq_ops_fail(r, BRQ_ST_INTERNAL, "settle: out of memory");
	int rv = brq_store_settle(c, q->items, q->n_items, out, &chain);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "settle");
	settle_committed(o, c, &w->arena, q->items, q->n_items, out, &chain);
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "results");
	brq_pack_array(b, q->n_items);
	for (uint32_t i = 0; i < q->n_items; i++)
		brq_pack_settle_result(b, &out[i].r);
	return BRQ_ST_OK;
}

// ---- claim -------------------------------------------------------------------------------------

// Bytes of a claimed job in a reply besides its topic and payload (keys, ids, the
// lease, times, the two optional timeouts: about 200), rounded up.
#define CLAIMED_JOB_OVERHEAD 224

// Fits the claimed jobs into a reply of at most `budget` bytes (the request limit,
// which the client's transport accepts): the first job always goes; the jobs that
// would not fit are given back at once (their attempt returned, their place in line
// kept), so a claim of big payloads returns fewer than n jobs rather than a reply
// nobody can receive. Shortens out->n_jobs.
static void
fit_reply(brq_store_conn *c, brq_store_claim_out *out, uint64_t budget)
{
	uint64_t size = CLAIMED_JOB_OVERHEAD;
	uint32_t m    = 0;
	for (; m < out->n_jobs; m++) {
		uint64_t one = CLAIMED_JOB_OVERHEAD + out->jobs[m].topic.len + out->jobs[m].payload.len;
		if (m > 0 && size + one > budget)
			break;
		size += one;
	}
	if (m == out->n_jobs)
		return;
	uint32_t       rest = out->n_jobs - m, returned = 0;
	brq_lease_ref *leases = brq_arena_alloc(&c->arena, rest, sizeof(*leases));
	for (uint32_t i = 0; leases != NULL && i < rest; i++) {
		leases[i].id = out->jobs[m + i].id;
		memcpy(leases[i].lease, out->jobs[m + i].lease, BRQ_LEASE_LEN);
	}
	int rv = leases != NULL ? brq_store_unclaim(c, leases, rest, &returned) : BRQ_ENOMEM;
	if (rv != 0) {
		// They stay in the reply: too big to send, so the whole reply fails and
		// brq_ops_undeliverable gives every lease back.
		BRQ_LOG_WARN("claim_reply_budget", "jobs=%u kept=%u error=%s", out->n_jobs, m,
			     brq_err_name(rv));
		return;
	}
	BRQ_LOG_DEBUG("claim_reply_budget", "jobs=%u kept=%u returned=%u budget=%llu", out->n_jobs, m,
		      returned, (unsigned long long) budget);
	out->n_jobs = m;
}

// Encodes the claim reply: the jobs, and with a combined settle its results.
static void
encode_claim_reply(brq_work *w, const brq_store_claim_out *out)
{
	const brq_claim_req *q = &w->req.claim;
	brq_buf             *b = &w->out;
	brq_reply_begin(b, w->req.rid, q->has_settle ? 2 : 1);
	brq_pack_key(b, "jobs");
	brq_pack_array(b, out->n_jobs);
	for (uint32_t i = 0; i < out->n_jobs; i++) {
		brq_pack_claimed_job(b, &out->jobs[i]);
		brq_metrics_claimed(out->jobs[i].topic.ptr, out->jobs[i].topic.len,
				    out->wait_ms != NULL ? out->wait_ms[i] : 0);
	}
	if (q->has_settle) {
		brq_pack_key(b, "settled");
		brq_pack_array(b, q->n_settle);
		for (uint32_t i = 0; i < q->n_settle; i++)
			brq_pack_settle_result(b, &w->settle_results[i]);
	}
}

// One claim round. A combined "settle these, give me more" settles once, on the
// first round, even when the claim then waits through several rounds; its results
// wait in w for the reply. A claim whose peer already left claims nothing. A long-poll
// that found nothing sets r->park and encodes no reply.
static brq_status
op_claim(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	const brq_claim_req *q          = &w->req.claim;
	bool                 settle_now = q->has_settle && !w->settled && q->n_settle > 0;
	brq_store_settled   *settled    = NULL;
	if (q->has_settle && !w->settled) {
		w->settle_results =
			brq_arena_alloc(&w->arena, q->n_settle ? q->n_settle : 1, sizeof(*w->settle_results));
		settled = brq_arena_alloc(&w->arena, q->n_settle ? q->n_settle : 1, sizeof(*settled));
		if (w->settle_results == NULL || settled == NULL)
			return brq_ops_fail(r, BRQ_ST_INTERNAL, "claim.settle: out of memory");
		w->settled = !settle_now;
	}
	brq_store_claim_in in = {
		.topics       = q->topics,
		.n_topics     = q->n_topics,
		.n            = atomic_load(&w->orphaned) ? 0 : q->n,
		.worker       = q->worker,
		.has_lease_ms = q->has_lease_ms,
		.lease_ms     = q->lease_ms,
		.settle       = settle_now ? q->settle : NULL,
		.n_settle     = settle_now ? q->n_settle : 0,
		.settled      = settled,
	};
	brq_store_claim_out out;
	// The generation before looking: a wake after this point is not lost.
	w->wake_gen = brq_waiters_gen(o->waiters);
	int rv      = brq_store_claim(c, &in, &out);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "claim");
	if (settle_now) {
		w->settled = true;
		for (uint32_t i = 0; i < q->n_settle; i++)
			w->settle_results[i] = settled[i].r;
		settle_committed(o, c, &w->arena, q->settle, q->n_settle, settled, &out.chain);
	}
	if (out.n_jobs == 0 && in.n > 0 && w->deadline_ms > brq_now_ms() && !atomic_load(o->stopping)) {
		r->park = true;
		return BRQ_ST_OK;
	}
	fit_reply(c, &out, o->cfg->max_request_bytes);
	w->claimed   = out.jobs;
	w->n_claimed = out.n_jobs;
	encode_claim_reply(w, &out);
	if (brq_buf_error(&w->out) != 0) {
		// Leases committed for a reply that cannot be built: give them back now.
		brq_ops_undeliverable(o, c, w, "reply too large");
		return brq_ops_fail(r, BRQ_ST_INTERNAL,
				    "claim: the reply could not be encoded (%u jobs); retry with a smaller n",
				    out.n_jobs);
	}
	return BRQ_ST_OK;
}

// ---- heartbeat, admin and introspection ---------------------------------------------------

// Why the leases a heartbeat did not extend are lost (reasons[i] for leases[i], NONE
// for extended ones), with their metrics. False when that could not be read: the
// reply then goes without reasons, as from a gateway before them.
static bool
lost_reasons(brq_store_conn *c, brq_arena *arena, const brq_heartbeat_req *q, const bool *ext,
	     brq_lost_reason *reasons)
{
	uint32_t         n_lost = 0;
	brq_lease_ref   *lost   = brq_arena_alloc(arena, q->n_leases, sizeof(*lost));
	brq_lost_reason *why    = brq_arena_alloc(arena, q->n_leases, sizeof(*why));
	brq_str         *topics = brq_arena_alloc(arena, q->n_leases, sizeof(*topics));
	if (lost == NULL || why == NULL || topics == NULL)
		return false;
	for (uint32_t i = 0; i < q->n_leases; i++)
		if (!ext[i])
			lost[n_lost++] = q->leases[i];
	if (brq_store_lost_of(c, lost, n_lost, why, topics) != 0)
		return false;
	for (uint32_t i = 0, k = 0; i < q->n_leases; i++) {
		reasons[i] = BRQ_LOST_NONE;
		if (ext[i])
			continue;
		reasons[i]      = why[k];
		const brq_str t = topics[k++];
		if (t.ptr == NULL)
			continue; // the job no longer exists
		brq_metrics_topic_add(t.ptr, t.len, BRQ_MT_LEASE_LOST, 1);
		if (reasons[i] == BRQ_LOST_MAX_EXECUTION)
			brq_metrics_topic_add(t.ptr, t.len, BRQ_MT_MAX_EXECUTION, 1);
	}
	return true;
}

static brq_status
op_heartbeat(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	(void) o;
	const brq_heartbeat_req *q       = &w->req.heartbeat;
	bool                    *ext     = brq_arena_alloc(&w->arena, q->n_leases, sizeof(bool));
	brq_lost_reason         *reasons = brq_arena_alloc(&w->arena, q->n_leases, sizeof(*reasons));
	int64_t                  until;
	if (ext == NULL || reasons == NULL)
		return brq_ops_fail(r, BRQ_ST_INTERNAL, "heartbeat: out of memory");
	int rv = brq_store_heartbeat(c, q->leases, q->n_leases, q->has_lease_ms, q->lease_ms, ext, &until);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "heartbeat");
	bool any_lost = false;
	for (uint32_t i = 0; i < q->n_leases; i++)
		any_lost = any_lost || !ext[i];
	// Lost leases cost one more query, paid only when leases are actually lost.
	bool has_reasons = any_lost && lost_reasons(c, &w->arena, q, ext, reasons);

	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, has_reasons ? 3 : 2);
	brq_pack_key(b, "extended");
	brq_pack_array(b, q->n_leases);
	for (uint32_t i = 0; i < q->n_leases; i++)
		brq_pack_bool(b, ext[i]);
	brq_pack_key(b, "lease_until_ms");
	brq_pack_int(b, until);
	if (has_reasons)
		brq_pack_lost_reasons(b, reasons, q->n_leases);
	return BRQ_ST_OK;
}

static brq_status
op_cancel(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	(void) o;
	brq_cancel_rep rep;
	brq_str        topic;
	int            rv = brq_store_cancel(c, w->req.cancel.id, &rep, &topic);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "cancel");
	if (rep.canceled)
		BRQ_LOG_INFO("job_canceled", "id=%" PRIu64 " topic=%.*s", w->req.cancel.id, (int) topic.len,
			     topic.ptr);
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 2);
	brq_pack_key(b, "state");
	brq_pack_cstr(b, brq_state_name(rep.state));
	brq_pack_key(b, "canceled");
	brq_pack_bool(b, rep.canceled);
	return BRQ_ST_OK;
}

static brq_status
op_job(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	(void) o;
	brq_job_info j;
	int          rv = brq_store_job(c, w->req.job.id, &j);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "job");
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "job");
	brq_pack_job_info(b, &j);
	return BRQ_ST_OK;
}

// stats: the active states counted now, through the partial indexes (what the
// backlog costs), and the terminal states from the monitor's last count (figures.h:
// counting the table's history per request let a few operators starve the pool).
// Until the monitor's first terminal count, one exact count of everything.
static brq_status
op_stats(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	brq_topic_stats     *topics;
	uint32_t             n;
	brq_store_depth_row *active;
	size_t               n_active;
	uint64_t             at_ms     = 0;
	bool                 estimated = false;
	int                  rv        = brq_store_depth(c, BRQ_DEPTH_ACTIVE, 100, &active, &n_active);
	if (rv == 0)
		rv = brq_figures_stats(o->figures, &w->arena, active, n_active, &topics, &n, &at_ms,
				       &estimated);
	if (rv == 0 && at_ms == 0)
		rv = brq_store_stats(c, &topics, &n);
	if (rv == 0)
		rv = brq_ops_policy_stats(c, topics, n);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "stats");
	brq_buf *b = &w->out;
	// Until the first terminal count everything was counted exactly for this reply.
	estimated = estimated && at_ms != 0;
	brq_reply_begin(b, w->req.rid, 2 + estimated);
	// How old the terminal counts are (0: exact, counted now); an unknown key to
	// clients that do not read it.
	brq_pack_key(b, "terminal_age_ms");
	brq_pack_uint(b, at_ms == 0 ? 0 : brq_now_ms() - at_ms);
	// Sent only when true (absent: exact), so a reply of exact counts is unchanged.
	if (estimated) {
		brq_pack_key(b, "terminal_estimated");
		brq_pack_bool(b, true);
	}
	brq_pack_key(b, "topics");
	brq_pack_array(b, n);
	for (uint32_t i = 0; i < n; i++)
		brq_pack_topic_stats(b, &topics[i]);
	return BRQ_ST_OK;
}

// ---- dispatch ---------------------------------------------------------------------------------

void
brq_ops_ping(brq_work *w)
{
	brq_buf *b = &w->out;
	w->code    = BRQ_ST_OK;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "server");
	brq_pack_cstr(b, "brooq-gateway " BROOQ_VERSION);
}

void
brq_ops_undeliverable(const brq_ops *o, brq_store_conn *c, brq_work *w, const char *why)
{
	(void) o;
	uint32_t n = w->n_claimed, returned = 0;
	w->n_claimed = 0;
	if (n == 0)
		return;
	brq_lease_ref *leases = brq_arena_alloc(&c->arena, n, sizeof(*leases));
	int            rv     = leases != NULL ? 0 : BRQ_ENOMEM;
	for (uint32_t i = 0; leases != NULL && i < n; i++) {
		leases[i].id = w->claimed[i].id;
		memcpy(leases[i].lease, w->claimed[i].lease, BRQ_LEASE_LEN);
	}
	if (rv == 0)
		rv = brq_store_unclaim(c, leases, n, &returned);
	if (rv != 0)
		BRQ_LOG_ERROR("claim_undeliverable", "why=%s jobs=%u returned=0 error=%s hint=%s",
			      BRQ_LOG_Q(why), n, BRQ_LOG_Q(brq_store_errmsg(c)),
			      "the reaper returns them when their lease ends");
	else
		BRQ_LOG_WARN("claim_undeliverable", "why=%s jobs=%u returned=%u", BRQ_LOG_Q(why), n,
			     returned);
}

// The operation that serves each op on the database, by op: ops.c's own, and the
// families' (ops_jobs.c, ops_policy.c, ops_schedule.c), as proto/opcodecs.c says which
// family's codec serves an op. NULL: none here (ping touches no database: brq_ops_ping).
static const brq_op_fn op_fns[BRQ_OP__COUNT] = {
	[BRQ_OP_ENQUEUE]         = op_enqueue,
	[BRQ_OP_CLAIM]           = op_claim,
	[BRQ_OP_HEARTBEAT]       = op_heartbeat,
	[BRQ_OP_SETTLE]          = op_settle,
	[BRQ_OP_CANCEL]          = op_cancel,
	[BRQ_OP_JOB]             = op_job,
	[BRQ_OP_STATS]           = op_stats,
	[BRQ_OP_PAUSE]           = brq_ops_policy,
	[BRQ_OP_RESUME]          = brq_ops_policy,
	[BRQ_OP_TOPIC_LIMITS]    = brq_ops_policy,
	[BRQ_OP_TOPICS]          = brq_ops_policy,
	[BRQ_OP_LIST]            = brq_ops_jobs,
	[BRQ_OP_RETRY]           = brq_ops_jobs,
	[BRQ_OP_DELETE]          = brq_ops_jobs,
	[BRQ_OP_SCHEDULE_ADD]    = brq_ops_schedule,
	[BRQ_OP_SCHEDULE_LIST]   = brq_ops_schedule,
	[BRQ_OP_SCHEDULE_REMOVE] = brq_ops_schedule,
};

brq_ops_result
brq_ops_run(const brq_ops *o, brq_store_conn *c, brq_work *w)
{
	brq_op_res r  = {.code = BRQ_ST_OK};
	brq_op_fn  fn = (unsigned) w->req.op < BRQ_OP__COUNT ? op_fns[w->req.op] : NULL;
	brq_status st;

	if (!brq_store_ready(c))
		st = brq_ops_fail(&r, BRQ_ST_UNAVAILABLE, "database unavailable; retry later");
	else if (fn == NULL)
		st = brq_ops_fail(&r, BRQ_ST_INTERNAL, "op %s not handled", brq_op_name(w->req.op));
	else
		st = fn(o, c, w, &r);
	if (r.park && st == BRQ_ST_OK)
		return BRQ_OPS_PARK;
	w->code = st;
	if (st == BRQ_ST_INTERNAL)
		BRQ_LOG_ERROR("internal_error", "op=%s rid=%" PRIu64 " cause=%s", brq_op_name(w->req.op),
			      w->req.rid, BRQ_LOG_Q(r.msg));
	if (st != BRQ_ST_OK)
		encode_error(w, st, r.msg);
	return BRQ_OPS_REPLY;
}
