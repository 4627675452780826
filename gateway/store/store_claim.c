// SPDX-License-Identifier: MIT
// The store's claim: fresh lease tokens, the fast statement or the policy path (with
// its lock), settles and enqueues sharing the claim's transaction.
#include "store_int.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

// Reads the claimed rows into out->jobs, with each job's lease token from tokens.
static int
read_claimed(brq_store_conn *c, const PGresult *r, const uint8_t *tokens, uint32_t n,
	     brq_store_claim_out *out)
{
	int       rows = PQntuples(r);
	size_t    m    = rows > 0 ? (size_t) rows : 1;
	uint64_t *ids  = brq_arena_alloc(&c->arena, m, sizeof(*ids));
	brq_tid  *tids = brq_arena_alloc(&c->arena, m, sizeof(*tids));
	out->jobs      = brq_arena_alloc(&c->arena, m, sizeof(*out->jobs));
	out->wait_ms   = brq_arena_alloc(&c->arena, m, sizeof(*out->wait_ms));
	out->n_jobs    = 0;
	if (out->jobs == NULL || out->wait_ms == NULL || ids == NULL || tids == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "claim: out of memory");
	for (int row = 0; row < rows; row++) {
		int64_t          k = brq_store_int(r, row, CLAIM_TOKEN_INDEX);
		brq_claimed_job *j = &out->jobs[row];
		if (k < 1 || k > (int64_t) n)
			return brq_store_fail(c, BRQ_EINTERNAL, "claim: token index %lld out of range",
					      (long long) k);
		*j = (brq_claimed_job) {
			.id             = (uint64_t) brq_store_int(r, row, CLAIM_ID),
			.topic          = brq_store_str(r, row, CLAIM_TOPIC),
			.payload        = brq_store_str(r, row, CLAIM_PAYLOAD),
			.attempts       = (uint32_t) brq_store_int(r, row, CLAIM_ATTEMPTS),
			.max_attempts   = (uint32_t) brq_store_int(r, row, CLAIM_MAX_ATTEMPTS),
			.lease_until_ms = brq_store_int(r, row, CLAIM_LOCKED_UNTIL_MS),
			.created_at_ms  = brq_store_int(r, row, CLAIM_CREATED_MS),
		};
		memcpy(j->lease, tokens + (size_t) (k - 1) * BRQ_LEASE_LEN, BRQ_LEASE_LEN);
		// The topic's timeouts travel with the lease (the worker enforces the first;
		// the heartbeat statement enforces the second). PQgetvalue's text ends in NUL.
		brq_config_topic_timeouts(c->st->cfg, j->topic.ptr, &j->attempt_timeout_ms,
					  &j->max_execution_ms);
		ids[row] = j->id;
		// How long the job waited once ready (the console's history); never below 0.
		int64_t wait      = brq_store_int(r, row, CLAIM_WAIT_MS);
		out->wait_ms[row] = wait > 0 ? (uint64_t) wait : 0;
		if (!brq_tid_parse(PQgetvalue(r, row, CLAIM_LOC), &tids[row]))
			tids[row] = (brq_tid) {0};
	}
	// Recorded before the commit: a claim rolled back leaves addresses no lease
	// matches, which a settle cannot use (store_hint.h).
	brq_hints_put(c->st->hints, ids, tids, (uint32_t) rows);
	out->n_jobs = (uint32_t) rows;
	return 0;
}

// Which claim statement: the fast one, or the policy path (with its lock, or with
// the lock already taken by the caller's transaction).
enum claim_path { CLAIM_FAST, CLAIM_POLICY, CLAIM_POLICY_LOCKED };

// The claim statement, inside whatever transaction is open (one must be for the
// policy path: the lock and the claim belong together).
static int
claim_rows(brq_store_conn *c, const brq_store_claim_in *in, brq_store_claim_out *out, enum claim_path path)
{
	uint8_t *tokens = brq_arena_alloc(&c->arena, in->n, BRQ_LEASE_LEN);
	if (tokens == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "claim: out of memory");
	// Fresh random lease tokens (SPEC §3): only the claimer learns them.
	randombytes_buf(tokens, (size_t) in->n * BRQ_LEASE_LEN);

	brq_pgarr *a = c->arr;
	brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
	for (uint32_t i = 0; i < in->n_topics; i++)
		brq_pgarr_text(&a[0], in->topics[i].ptr, in->topics[i].len);
	brq_pgarr_begin(&a[1], BRQ_OID_UUID);
	for (uint32_t i = 0; i < in->n; i++)
		brq_pgarr_uuid(&a[1], tokens + (size_t) i * BRQ_LEASE_LEN);
	char        n_txt[16], lease_txt[24], worker[BRQ_WORKER_MAX + 1];
	const char *v[5];
	int         l[5] = {0}, f[5] = {BRQ_BINARY, BRQ_TEXT, BRQ_TEXT, BRQ_BINARY, BRQ_TEXT};
	if (brq_store_param(&a[0], v, l, 0) != 0 || brq_store_param(&a[1], v, l, 3) != 0)
		return brq_store_fail(c, BRQ_ENOMEM, "claim: out of memory");
	snprintf(n_txt, sizeof(n_txt), "%u", in->n);
	size_t wlen = in->worker.len < BRQ_WORKER_MAX ? in->worker.len : BRQ_WORKER_MAX;
	memcpy(worker, in->worker.ptr, wlen);
	worker[wlen] = '\0';
	v[1]         = n_txt;
	v[2]         = worker;
	v[4]         = NULL;
	if (in->has_lease_ms) {
		snprintf(lease_txt, sizeof(lease_txt), "%u", in->lease_ms);
		v[4] = lease_txt;
	}
	PGresult *r;
	int       rv = 0;
	if (path == CLAIM_POLICY)
		rv = brq_store_policy_lock(c, in->topics, in->n_topics);
	if (rv == 0)
		rv = brq_store_run(c,
				   path != CLAIM_FAST          ? BRQ_STMT_CLAIM_POLICY
					   : in->n_topics == 1 ? BRQ_STMT_CLAIM
							       : BRQ_STMT_CLAIM_MULTI,
				   v, l, f, CLAIM__N, &r);
	return rv != 0 ? rv : read_claimed(c, r, tokens, in->n, out);
}

int
brq_store_claim(brq_store_conn *c, const brq_store_claim_in *in, brq_store_claim_out *out)
{
	memset(out, 0, sizeof(*out));
	// A combined "settle these, give me more" shares one transaction, so a busy
	// worker pays one commit per round trip.
	bool own, policy = in->n > 0 && brq_store_policy_applies(c, in->topics, in->n_topics);
	int  rv = brq_store_tx_open(c, in->n_settle > 0 || policy, &own);
	if (rv == 0 && in->n_settle > 0)
		rv = brq_store_settle_rows(c, in->settle, in->n_settle, in->settled, &out->chain);
	if (rv == 0 && in->n > 0)
		rv = claim_rows(c, in, out, policy ? CLAIM_POLICY : CLAIM_FAST);
	if ((rv = brq_store_tx_close(c, own, rv)) != 0) {
		out->n_jobs = 0;
		out->chain  = (brq_store_chain) {0};
	}
	return rv;
}

// The policy locks of all claims ins[0..k) of one transaction at once, in topic
// order: claims of several limited topics taking them one claim at a time could
// deadlock with another transaction taking them in another order. path[i] gets each
// claim's statement, decided once (the cache may change in between).
static int
lock_policies(brq_store_conn *c, const brq_store_claim_in *ins, uint32_t k, enum claim_path *path)
{
	uint32_t n = 0, at = 0;
	for (uint32_t i = 0; i < k; i++)
		n += ins[i].n_topics;
	brq_str *topics = brq_arena_alloc(&c->arena, n > 0 ? n : 1, sizeof(*topics));
	if (topics == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "claim: out of memory");
	for (uint32_t i = 0; i < k; i++) {
		bool policy = ins[i].n > 0 && brq_store_policy_applies(c, ins[i].topics, ins[i].n_topics);
		path[i]     = policy ? CLAIM_POLICY_LOCKED : CLAIM_FAST;
		for (uint32_t t = 0; policy && t < ins[i].n_topics; t++)
			topics[at++] = ins[i].topics[t];
	}
	return at == 0 ? 0 : brq_store_policy_lock(c, topics, at);
}

int
brq_store_enqueue_claim(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n, brq_enqueue_result *res,
			const brq_store_claim_in *ins, brq_store_claim_out *outs, uint32_t k)
{
	bool             own;
	enum claim_path *path = brq_arena_alloc(&c->arena, k > 0 ? k : 1, sizeof(*path));
	if (path == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "enqueue: out of memory");
	int rv = brq_store_tx_open(c, true, &own);
	if (rv == 0)
		rv = brq_store_insert(c, jobs, n, res);
	if (rv == 0)
		rv = lock_policies(c, ins, k, path);
	for (uint32_t i = 0; rv == 0 && i < k; i++) {
		memset(&outs[i], 0, sizeof(outs[i]));
		if (ins[i].n > 0)
			rv = claim_rows(c, &ins[i], &outs[i], path[i]);
	}
	return brq_store_tx_close(c, own, rv);
}
