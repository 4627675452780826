// SPDX-License-Identifier: MIT
// The operations: each runs its statement(s) on a pool thread and encodes the reply from the rows.
#include "ops.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "log.h"
#include "metrics.h"
#include "server.h"
#include "brq_version.h"

#define BINARY 1
#define TEXT   0

// An op's result: the reply is in w->out, or an error to encode.
typedef struct op_err {
	brq_status code; // BRQ_ST_OK: w->out holds the reply
	char       msg[BRQ_MSG_MAX];
} op_err;

static brq_status __attribute__((format(printf, 3, 4))) fail(op_err *e, brq_status code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->code = code;
	return code;
}

// Maps a failed statement to a status: unavailable when the database is away
// (the client retries), invalid_argument when the data was refused, else internal.
static brq_status
db_fail(op_err *e, brq_db *db, PGresult *r, const char *what)
{
	const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg   = r != NULL ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	brq_status  code;
	if (brq_db_is_unavailable(db, r))
		code = BRQ_ST_UNAVAILABLE;
	else if (state != NULL && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0))
		code = BRQ_ST_INVALID_ARGUMENT;
	else
		code = BRQ_ST_INTERNAL;
	if (code != BRQ_ST_INVALID_ARGUMENT)
		BRQ_LOG_WARN("db_statement_failed", "what=%s sqlstate=%s error=%s", what, state ? state : "-",
			     BRQ_LOG_Q(msg ? msg : "no connection"));
	return fail(e, code, "%s: database: %s", what, msg ? msg : "unavailable");
}

static int64_t
int_at(const PGresult *r, int row, int col)
{
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static brq_str
str_at(const PGresult *r, int row, int col)
{
	return (brq_str) {PQgetvalue(r, row, col), (uint32_t) PQgetlength(r, row, col)};
}

static bool
bool_at(const PGresult *r, int row, int col)
{
	return PQgetvalue(r, row, col)[0] == 't';
}

static brq_state
state_at(const PGresult *r, int row, int col)
{
	int st = brq_state_lookup(PQgetvalue(r, row, col), (size_t) PQgetlength(r, row, col));
	return st < 0 ? BRQ_STATE_PENDING : (brq_state) st;
}

static int
arr_end(brq_pgarr *a, const char **value, int *len)
{
	if (brq_pgarr_end(a) != 0)
		return -1;
	*value = a->data;
	*len   = (int) a->len;
	return 0;
}

// Copies a brq_str into a NUL-terminated buffer for a text parameter.
static const char *
cstr(char *buf, size_t cap, brq_str s)
{
	size_t n = s.len < cap - 1 ? s.len : cap - 1;
	memcpy(buf, s.ptr, n);
	buf[n] = '\0';
	return buf;
}

// Metrics for jobs whose lease was found gone: their topics cost one extra query,
// paid only when leases are actually lost.
static void
count_lost(brq_pool_thread *t, const uint64_t *ids, uint32_t n)
{
	if (n == 0)
		return;
	brq_pgarr *a = &t->arr[5];
	brq_pgarr_begin(a, BRQ_OID_INT8);
	for (uint32_t i = 0; i < n; i++)
		brq_pgarr_int8(a, (int64_t) ids[i]);
	const char *v[1];
	int         l[1], f[1] = {BINARY};
	if (arr_end(a, &v[0], &l[0]) != 0)
		return;
	PGresult *r = brq_db_exec(&t->db, BRQ_STMT_TOPICS_OF, v, l, f);
	if (brq_db_ok(r)) {
		for (int i = 0; i < PQntuples(r); i++)
			brq_metrics_topic_add(PQgetvalue(r, i, 0), (size_t) PQgetlength(r, i, 0),
					      BRQ_MT_LEASE_LOST, 1);
	}
	PQclear(r);
}

// ---- enqueue (also used for chained jobs inside settle's transaction) ----------------

// Inserts jobs[0..n) in one statement and writes (id, created) per job into res.
// Wakes parked long-polls for the created jobs that are ready now.
static brq_status
enqueue_rows(brq_server *s, brq_pool_thread *t, const brq_job_spec *jobs, uint32_t n, brq_enqueue_result *res,
	     op_err *e)
{
	brq_pgarr *a = t->arr;
	brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
	brq_pgarr_begin(&a[1], BRQ_OID_JSONB);
	brq_pgarr_begin(&a[2], BRQ_OID_TEXT);
	brq_pgarr_begin(&a[3], BRQ_OID_INT8);
	brq_pgarr_begin(&a[4], BRQ_OID_INT8);
	brq_pgarr_begin(&a[5], BRQ_OID_INT4);
	for (uint32_t i = 0; i < n; i++) {
		const brq_job_spec *j = &jobs[i];
		char                topic[BRQ_TOPIC_MAX + 1];
		uint32_t            max_attempts = j->max_attempts;
		brq_pgarr_text(&a[0], j->topic.ptr, j->topic.len);
		brq_pgarr_text(&a[1], j->payload.ptr, j->payload.len);
		if (j->key.len > 0)
			brq_pgarr_text(&a[2], j->key.ptr, j->key.len);
		else
			brq_pgarr_null(&a[2]); // the empty key is "no key" (invariant 8)
		if (j->has_delay_ms)
			brq_pgarr_int8(&a[3], (int64_t) j->delay_ms);
		else
			brq_pgarr_null(&a[3]);
		if (j->has_run_at_ms)
			brq_pgarr_int8(&a[4], j->run_at_ms);
		else
			brq_pgarr_null(&a[4]);
		if (!j->has_max_attempts)
			brq_config_topic_settings(s->cfg, cstr(topic, sizeof(topic), j->topic), &max_attempts,
						  NULL, NULL, NULL);
		brq_pgarr_int4(&a[5], (int32_t) max_attempts);
	}
	const char *v[6];
	int         l[6], f[6] = {BINARY, BINARY, BINARY, BINARY, BINARY, BINARY};
	for (int k = 0; k < 6; k++)
		if (arr_end(&a[k], &v[k], &l[k]) != 0)
			return fail(e, BRQ_ST_INTERNAL, "enqueue: out of memory");

	PGresult *r = brq_db_exec(&t->db, BRQ_STMT_ENQUEUE, v, l, f);
	if (!brq_db_ok(r)) {
		brq_status st = db_fail(e, &t->db, r, "enqueue");
		PQclear(r);
		return st;
	}
	if ((uint32_t) PQntuples(r) != n) {
		PQclear(r);
		return fail(e, BRQ_ST_INTERNAL, "enqueue: %d rows for %u jobs", PQntuples(r), n);
	}
	for (uint32_t i = 0; i < n; i++) {
		res[i].created = bool_at(r, (int) i, 1);
		res[i].id      = PQgetisnull(r, (int) i, 0) ? 0 : (uint64_t) int_at(r, (int) i, 0);
	}
	PQclear(r);

	// A key that conflicted (with an older row, one of the same batch, or one
	// committed after the statement began): the row exists now, so look them all
	// up in one statement, by position among the conflicting jobs.
	uint32_t  n_missing = 0;
	uint32_t *missing   = NULL;
	for (uint32_t i = 0; i < n; i++)
		n_missing += res[i].id == 0;
	if (n_missing == 0)
		return BRQ_ST_OK;
	missing = malloc((size_t) n_missing * sizeof(*missing));
	if (missing == NULL)
		return fail(e, BRQ_ST_INTERNAL, "enqueue: out of memory");
	brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
	brq_pgarr_begin(&a[1], BRQ_OID_TEXT);
	n_missing = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (res[i].id != 0)
			continue;
		missing[n_missing++] = i;
		brq_pgarr_text(&a[0], jobs[i].topic.ptr, jobs[i].topic.len);
		brq_pgarr_text(&a[1], jobs[i].key.ptr, jobs[i].key.len);
	}
	brq_status st = BRQ_ST_OK;
	if (arr_end(&a[0], &v[0], &l[0]) != 0 || arr_end(&a[1], &v[1], &l[1]) != 0) {
		st = fail(e, BRQ_ST_INTERNAL, "enqueue: out of memory");
		goto out;
	}
	r = brq_db_exec(&t->db, BRQ_STMT_ENQUEUE_LOOKUP, v, l, f);
	if (!brq_db_ok(r)) {
		st = db_fail(e, &t->db, r, "enqueue");
		PQclear(r);
		goto out;
	}
	for (int row = 0; row < PQntuples(r); row++) {
		int64_t k = int_at(r, row, 0);
		if (k >= 1 && k <= (int64_t) n_missing)
			res[missing[k - 1]].id = (uint64_t) int_at(r, row, 1);
	}
	PQclear(r);
	for (uint32_t k = 0; k < n_missing; k++)
		if (res[missing[k]].id == 0) // its row was deleted in between
			st = fail(e, BRQ_ST_UNAVAILABLE,
				  "enqueue: key conflict with a row that went away; retry");
out:
	free(missing);
	return st;
}

// After commit: metrics, and wake one parked long-poll per job that is ready now.
static void
enqueue_committed(brq_server *s, const brq_job_spec *jobs, uint32_t n, const brq_enqueue_result *res)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!res[i].created)
			continue;
		brq_metrics_topic_add(jobs[i].topic.ptr, jobs[i].topic.len, BRQ_MT_ENQUEUED, 1);
		bool later = (jobs[i].has_delay_ms && jobs[i].delay_ms > 0) || jobs[i].has_run_at_ms;
		if (!later)
			brq_server_wake(s, jobs[i].topic.ptr, jobs[i].topic.len, 1);
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
op_enqueue(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e)
{
	const brq_enqueue_req *q   = &w->req.enqueue;
	brq_enqueue_result    *res = brq_arena_alloc(&w->arena, q->n_jobs, sizeof(*res));
	if (res == NULL)
		return fail(e, BRQ_ST_INTERNAL, "enqueue: out of memory");
	// One statement: the batch is atomic without an explicit transaction.
	brq_status st = enqueue_rows(s, t, q->jobs, q->n_jobs, res, e);
	if (st != BRQ_ST_OK)
		return st;
	enqueue_committed(s, q->jobs, q->n_jobs, res);
	encode_enqueue_reply(w, res);
	return BRQ_ST_OK;
}

// Enqueue requests that queued up behind each other, as one statement: one round
// trip and one commit for all (group commit). Each request's jobs stay atomic:
// the statement is all or nothing, and when it is refused every request is run
// on its own, so each gets its own answer. Fills every item's reply.
void
brq_ops_enqueue_group(brq_server *s, brq_pool_thread *t, brq_work *head)
{
	uint32_t total = 0, requests = 0;
	for (brq_work *w = head; w != NULL; w = w->qnext, requests++)
		total += w->req.enqueue.n_jobs;
	BRQ_LOG_DEBUG("enqueue_group", "requests=%u jobs=%u", requests, total);
	size_t need = (size_t) total * (sizeof(brq_job_spec) + sizeof(brq_enqueue_result));
	if (need > t->group_cap) {
		void *g = realloc(t->group, need);
		if (g == NULL)
			goto one_by_one;
		t->group     = g;
		t->group_cap = need;
	}
	brq_job_spec       *jobs = t->group;
	brq_enqueue_result *res  = (brq_enqueue_result *) (jobs + total);
	uint32_t            k    = 0;
	for (brq_work *w = head; w != NULL; w = w->qnext) {
		memcpy(jobs + k, w->req.enqueue.jobs, w->req.enqueue.n_jobs * sizeof(*jobs));
		k += w->req.enqueue.n_jobs;
	}

	op_err e = {.code = BRQ_ST_OK};
	if (!brq_db_ready(&t->db)) {
		fail(&e, BRQ_ST_UNAVAILABLE, "database unavailable; retry later");
	} else if (enqueue_rows(s, t, jobs, total, res, &e) == BRQ_ST_OK) {
		enqueue_committed(s, jobs, total, res);
		k = 0;
		for (brq_work *w = head; w != NULL; w = w->qnext) {
			encode_enqueue_reply(w, res + k);
			k += w->req.enqueue.n_jobs;
		}
		return;
	}
	if (e.code == BRQ_ST_INVALID_ARGUMENT)
		goto one_by_one; // somebody's data was refused: find out whose
	for (brq_work *w = head; w != NULL; w = w->qnext) {
		w->code = e.code;
		if (brq_reply_encode_error(&w->out, w->req.rid, e.code, "%s", e.msg) != 0)
			brq_buf_reset(&w->out);
	}
	return;
one_by_one:
	for (brq_work *w = head; w != NULL; w = w->qnext)
		(void) brq_ops_run(s, t, w);
}

// ---- settle -----------------------------------------------------------------------------

// What a settle leaves for after its commit: metrics need the rows, and wakes for
// chained jobs must not run before those jobs are visible to other sessions.
typedef struct settle_done {
	PGresult           *rows;  // id, state, topic, attempt seconds; PQclear()ed by after_commit
	brq_job_spec       *chain; // chained jobs enqueued (arena)
	brq_enqueue_result *chain_res;
	uint32_t            n_chain;
} settle_done;

// Runs the guarded settle of items[0..n) and fills res (aligned with items).
// Chained jobs of applied `done` items are enqueued in the same transaction: if
// that fails, nothing is settled. The caller owns the transaction: `in_tx` says
// one is open; otherwise this opens one when chains need it. On success *d must
// go to settle_after_commit() once the transaction (if any) committed.
static brq_status
settle_exec(brq_server *s, brq_pool_thread *t, brq_work *w, const brq_settle_item *items, uint32_t n,
	    brq_settle_result *res, bool in_tx, settle_done *d, op_err *e)
{
	brq_pgarr *a         = t->arr;
	bool       has_chain = false;
	memset(d, 0, sizeof(*d));
	brq_pgarr_begin(&a[0], BRQ_OID_INT8);
	brq_pgarr_begin(&a[1], BRQ_OID_UUID);
	brq_pgarr_begin(&a[2], BRQ_OID_TEXT);
	brq_pgarr_begin(&a[3], BRQ_OID_TEXT);
	brq_pgarr_begin(&a[4], BRQ_OID_INT8);
	for (uint32_t i = 0; i < n; i++) {
		const brq_settle_item *it = &items[i];
		const char            *oc = brq_outcome_name(it->outcome);
		brq_pgarr_int8(&a[0], (int64_t) it->id);
		brq_pgarr_uuid(&a[1], it->lease);
		brq_pgarr_text(&a[2], oc, strlen(oc));
		if (it->has_error)
			brq_pgarr_text(&a[3], it->error.ptr,
				       brq_utf8_truncate(it->error.ptr, it->error.len, BRQ_ERROR_STORED_MAX));
		else
			brq_pgarr_null(&a[3]);
		brq_pgarr_int8(&a[4], (int64_t) it->delay_ms);
		has_chain = has_chain || it->n_chain > 0;
		res[i]    = (brq_settle_result) {.id = it->id, .applied = false};
	}
	const char *v[5];
	int         l[5], f[5] = {BINARY, BINARY, BINARY, BINARY, BINARY};
	for (int k = 0; k < 5; k++)
		if (arr_end(&a[k], &v[k], &l[k]) != 0)
			return fail(e, BRQ_ST_INTERNAL, "settle: out of memory");

	bool own_tx = has_chain && !in_tx;
	if (own_tx && !brq_db_command(&t->db, "BEGIN"))
		return fail(e, BRQ_ST_UNAVAILABLE, "settle: database unavailable");
	PGresult *r = brq_db_exec(&t->db, BRQ_STMT_SETTLE, v, l, f);
	if (!brq_db_ok(r)) {
		db_fail(e, &t->db, r, "settle");
		PQclear(r);
		goto rollback;
	}
	// Each returned row settles the first unmatched item with its id (an id
	// given twice is applied once).
	int rows = PQntuples(r);
	for (int row = 0; row < rows; row++) {
		uint64_t id = (uint64_t) int_at(r, row, 0);
		for (uint32_t i = 0; i < n; i++) {
			if (res[i].id != id || res[i].applied)
				continue;
			res[i].applied = true;
			res[i].state   = state_at(r, row, 1);
			break;
		}
	}

	// Chains of the applied `done` items, as one batch in this transaction.
	if (has_chain) {
		for (uint32_t i = 0; i < n; i++)
			if (res[i].applied && items[i].outcome == BRQ_OUTCOME_DONE)
				d->n_chain += items[i].n_chain;
	}
	if (d->n_chain > 0) {
		d->chain     = brq_arena_alloc(&w->arena, d->n_chain, sizeof(*d->chain));
		d->chain_res = brq_arena_alloc(&w->arena, d->n_chain, sizeof(*d->chain_res));
		if (d->chain == NULL || d->chain_res == NULL) {
			PQclear(r);
			fail(e, BRQ_ST_INTERNAL, "settle: out of memory");
			goto rollback;
		}
		uint32_t k = 0;
		for (uint32_t i = 0; i < n; i++)
			if (res[i].applied && items[i].outcome == BRQ_OUTCOME_DONE)
				for (uint32_t c = 0; c < items[i].n_chain; c++)
					d->chain[k++] = items[i].chain[c];
		if (enqueue_rows(s, t, d->chain, d->n_chain, d->chain_res, e) != BRQ_ST_OK) {
			PQclear(r);
			goto rollback;
		}
	}
	if (own_tx && !brq_db_command(&t->db, "COMMIT")) {
		PQclear(r);
		fail(e, BRQ_ST_UNAVAILABLE, "settle: commit failed; nothing was settled");
		goto rollback;
	}
	d->rows = r;
	return BRQ_ST_OK;

rollback:
	if (own_tx && t->db.conn != NULL)
		(void) brq_db_command(&t->db, "ROLLBACK");
	return e->code;
}

// After the settle's commit: metrics, wakes for chained jobs, lost-lease counts.
// Releases d->rows.
static void
settle_after_commit(brq_server *s, brq_pool_thread *t, brq_work *w, const brq_settle_item *items, uint32_t n,
		    const brq_settle_result *res, settle_done *d)
{
	PGresult *r = d->rows;
	for (int row = 0; r != NULL && row < PQntuples(r); row++) {
		brq_str     topic = str_at(r, row, 2);
		brq_outcome oc    = BRQ_OUTCOME_DONE;
		uint64_t    id    = (uint64_t) int_at(r, row, 0);
		for (uint32_t i = 0; i < n; i++)
			if (items[i].id == id) {
				oc = items[i].outcome;
				break;
			}
		brq_metrics_settle(topic.ptr, topic.len, oc, 1);
		if (state_at(r, row, 1) == BRQ_STATE_DEAD)
			brq_metrics_dead(topic.ptr, topic.len, 1);
		brq_metrics_attempt_duration(strtod(PQgetvalue(r, row, 3), NULL));
	}
	PQclear(r);
	d->rows = NULL;
	if (d->n_chain > 0)
		enqueue_committed(s, d->chain, d->n_chain, d->chain_res);

	uint64_t *lost   = NULL;
	uint32_t  n_lost = 0;
	for (uint32_t i = 0; i < n; i++)
		n_lost += !res[i].applied;
	if (n_lost > 0 && (lost = brq_arena_alloc(&w->arena, n_lost, sizeof(*lost))) != NULL) {
		n_lost = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!res[i].applied)
				lost[n_lost++] = res[i].id;
		count_lost(t, lost, n_lost);
	}
}

static brq_status
op_settle(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e)
{
	const brq_settle_req *q   = &w->req.settle;
	brq_settle_result    *res = brq_arena_alloc(&w->arena, q->n_items, sizeof(*res));
	if (res == NULL)
		return fail(e, BRQ_ST_INTERNAL, "settle: out of memory");
	settle_done d;
	brq_status  st = settle_exec(s, t, w, q->items, q->n_items, res, false, &d, e);
	if (st != BRQ_ST_OK)
		return st;
	settle_after_commit(s, t, w, q->items, q->n_items, res, &d);
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "results");
	brq_pack_array(b, q->n_items);
	for (uint32_t i = 0; i < q->n_items; i++)
		brq_pack_settle_result(b, &res[i]);
	return BRQ_ST_OK;
}

// ---- claim --------------------------------------------------------------------------------

static bool
ensure_tokens(brq_pool_thread *t, uint32_t n)
{
	if (t->tokens_cap >= n)
		return true;
	uint8_t *p = realloc(t->tokens, (size_t) n * BRQ_LEASE_LEN);
	if (p == NULL)
		return false;
	t->tokens     = p;
	t->tokens_cap = n;
	return true;
}

// Rolls back a claim's combined settle: nothing of it was written.
static void
abort_settle(brq_pool_thread *t, settle_done *d, bool settle_now)
{
	if (!settle_now)
		return;
	(void) brq_db_command(&t->db, "ROLLBACK");
	PQclear(d->rows);
	d->rows = NULL;
}

static brq_status
op_claim(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e, bool *park)
{
	const brq_claim_req *q = &w->req.claim;
	*park                  = false;

	// A combined "settle these, give me more": the settle runs once, even when
	// the claim then waits through several rounds, and shares the claim's
	// transaction, so a busy worker pays one commit per round trip.
	bool        settle_now = q->has_settle && !w->settled && q->n_settle > 0;
	settle_done d          = {0};
	if (q->has_settle && !w->settled) {
		w->settle_results =
			brq_arena_alloc(&w->arena, q->n_settle ? q->n_settle : 1, sizeof(*w->settle_results));
		if (w->settle_results == NULL)
			return fail(e, BRQ_ST_INTERNAL, "claim.settle: out of memory");
		w->settled = !settle_now;
	}
	if (settle_now) {
		if (!brq_db_command(&t->db, "BEGIN"))
			return fail(e, BRQ_ST_UNAVAILABLE, "claim: database unavailable");
		brq_status st = settle_exec(s, t, w, q->settle, q->n_settle, w->settle_results, true, &d, e);
		if (st != BRQ_ST_OK) {
			(void) brq_db_command(&t->db, "ROLLBACK");
			return st;
		}
	}

	if (!ensure_tokens(t, q->n)) {
		abort_settle(t, &d, settle_now);
		return fail(e, BRQ_ST_INTERNAL, "claim: out of memory");
	}
	// Fresh random lease tokens (SPEC §3): only the claimer learns them.
	randombytes_buf(t->tokens, (size_t) q->n * BRQ_LEASE_LEN);

	brq_pgarr *a = t->arr;
	brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
	for (uint32_t i = 0; i < q->n_topics; i++)
		brq_pgarr_text(&a[0], q->topics[i].ptr, q->topics[i].len);
	brq_pgarr_begin(&a[1], BRQ_OID_UUID);
	for (uint32_t i = 0; i < q->n; i++)
		brq_pgarr_uuid(&a[1], t->tokens + (size_t) i * BRQ_LEASE_LEN);

	char        n_txt[16], lease_txt[24], worker[BRQ_WORKER_MAX + 1];
	const char *v[5];
	int         l[5] = {0}, f[5] = {BINARY, TEXT, TEXT, BINARY, TEXT};
	if (arr_end(&a[0], &v[0], &l[0]) != 0 || arr_end(&a[1], &v[3], &l[3]) != 0) {
		abort_settle(t, &d, settle_now);
		return fail(e, BRQ_ST_INTERNAL, "claim: out of memory");
	}
	snprintf(n_txt, sizeof(n_txt), "%u", q->n);
	v[1] = n_txt;
	v[2] = cstr(worker, sizeof(worker), q->worker);
	if (q->has_lease_ms) {
		snprintf(lease_txt, sizeof(lease_txt), "%u", q->lease_ms);
		v[4] = lease_txt;
	} else {
		v[4] = NULL;
	}

	// The generation before looking: a wake after this point is not lost.
	w->wake_gen = brq_server_wake_gen(s);
	PGresult *r = brq_db_exec(&t->db, BRQ_STMT_CLAIM, v, l, f);
	if (!brq_db_ok(r)) {
		brq_status st = db_fail(e, &t->db, r, "claim");
		PQclear(r);
		abort_settle(t, &d, settle_now); // the worker still holds those leases
		return st;
	}
	if (settle_now) {
		if (!brq_db_command(&t->db, "COMMIT")) {
			PQclear(r);
			PQclear(d.rows);
			return fail(e, BRQ_ST_UNAVAILABLE,
				    "claim: commit failed; nothing was settled or claimed");
		}
		w->settled = true;
		settle_after_commit(s, t, w, q->settle, q->n_settle, w->settle_results, &d);
	}
	int rows = PQntuples(r);
	if (rows == 0 && w->deadline_ms > brq_now_ms() && !atomic_load(&s->stopping)) {
		PQclear(r);
		*park = true;
		return BRQ_ST_OK;
	}

	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, q->has_settle ? 2 : 1);
	brq_pack_key(b, "jobs");
	brq_pack_array(b, (uint32_t) rows);
	for (int row = 0; row < rows; row++) {
		int64_t         rn = int_at(r, row, 5);
		brq_claimed_job j  = {
			 .id             = (uint64_t) int_at(r, row, 0),
			 .topic          = str_at(r, row, 1),
			 .payload        = str_at(r, row, 2),
			 .attempts       = (uint32_t) int_at(r, row, 3),
			 .max_attempts   = (uint32_t) int_at(r, row, 4),
			 .lease_until_ms = int_at(r, row, 6),
			 .created_at_ms  = int_at(r, row, 7),
                };
		if (rn < 1 || rn > (int64_t) q->n) {
			PQclear(r);
			return fail(e, BRQ_ST_INTERNAL, "claim: bad row number");
		}
		memcpy(j.lease, t->tokens + (size_t) (rn - 1) * BRQ_LEASE_LEN, BRQ_LEASE_LEN);
		brq_pack_claimed_job(b, &j);
		brq_metrics_topic_add(j.topic.ptr, j.topic.len, BRQ_MT_CLAIMED, 1);
	}
	if (q->has_settle) {
		brq_pack_key(b, "settled");
		brq_pack_array(b, q->n_settle);
		for (uint32_t i = 0; i < q->n_settle; i++)
			brq_pack_settle_result(b, &w->settle_results[i]);
	}
	PQclear(r);
	return BRQ_ST_OK;
}

// ---- heartbeat -------------------------------------------------------------------------

static brq_status
op_heartbeat(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e)
{
	(void) s;
	const brq_heartbeat_req *q = &w->req.heartbeat;
	brq_pgarr               *a = t->arr;
	brq_pgarr_begin(&a[0], BRQ_OID_INT8);
	brq_pgarr_begin(&a[1], BRQ_OID_UUID);
	for (uint32_t i = 0; i < q->n_leases; i++) {
		brq_pgarr_int8(&a[0], (int64_t) q->leases[i].id);
		brq_pgarr_uuid(&a[1], q->leases[i].lease);
	}
	char        lease_txt[24];
	const char *v[3];
	int         l[3] = {0}, f[3] = {BINARY, BINARY, TEXT};
	if (arr_end(&a[0], &v[0], &l[0]) != 0 || arr_end(&a[1], &v[1], &l[1]) != 0)
		return fail(e, BRQ_ST_INTERNAL, "heartbeat: out of memory");
	if (q->has_lease_ms) {
		snprintf(lease_txt, sizeof(lease_txt), "%u", q->lease_ms);
		v[2] = lease_txt;
	} else {
		v[2] = NULL;
	}
	PGresult *r = brq_db_exec(&t->db, BRQ_STMT_HEARTBEAT, v, l, f);
	if (!brq_db_ok(r)) {
		brq_status st = db_fail(e, &t->db, r, "heartbeat");
		PQclear(r);
		return st;
	}
	bool     *ext  = brq_arena_alloc(&w->arena, q->n_leases, sizeof(bool));
	uint64_t *lost = brq_arena_alloc(&w->arena, q->n_leases, sizeof(uint64_t));
	if (ext == NULL || lost == NULL) {
		PQclear(r);
		return fail(e, BRQ_ST_INTERNAL, "heartbeat: out of memory");
	}
	int64_t until = 0;
	for (int row = 0; row < PQntuples(r); row++) {
		uint64_t id = (uint64_t) int_at(r, row, 0);
		int64_t  u  = int_at(r, row, 1);
		for (uint32_t i = 0; i < q->n_leases; i++)
			if (q->leases[i].id == id && !ext[i]) {
				ext[i] = true;
				break;
			}
		if (until == 0 || u < until)
			until = u;
	}
	PQclear(r);
	uint32_t n_lost = 0;
	for (uint32_t i = 0; i < q->n_leases; i++)
		if (!ext[i])
			lost[n_lost++] = q->leases[i].id;
	count_lost(t, lost, n_lost);

	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 2);
	brq_pack_key(b, "extended");
	brq_pack_array(b, q->n_leases);
	for (uint32_t i = 0; i < q->n_leases; i++)
		brq_pack_bool(b, ext[i]);
	brq_pack_key(b, "lease_until_ms");
	brq_pack_int(b, until);
	return BRQ_ST_OK;
}

// ---- admin and introspection -----------------------------------------------------------

// Runs a one-parameter statement for job `id`. On BRQ_ST_OK *out holds at least one
// row and the caller PQclear()s it; otherwise nothing is left to free (a missing
// job is BRQ_ST_NOT_FOUND).
static brq_status
exec_by_id(brq_pool_thread *t, brq_stmt stmt, uint64_t id, const char *what, PGresult **out, op_err *e)
{
	char        txt[24];
	const char *v[1] = {txt};
	snprintf(txt, sizeof(txt), "%" PRIu64, id);
	PGresult *r = brq_db_exec(&t->db, stmt, v, NULL, NULL);
	if (!brq_db_ok(r)) {
		brq_status st = db_fail(e, &t->db, r, what);
		PQclear(r);
		return st;
	}
	if (PQntuples(r) == 0) {
		PQclear(r);
		return fail(e, BRQ_ST_NOT_FOUND, "%s: job %s not found", what, txt);
	}
	*out = r;
	return BRQ_ST_OK;
}

static brq_status
op_cancel(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e)
{
	(void) s;
	PGresult  *r;
	brq_status st = exec_by_id(t, BRQ_STMT_CANCEL, w->req.cancel.id, "cancel", &r, e);
	if (st != BRQ_ST_OK)
		return st;
	brq_cancel_rep c = {.state = state_at(r, 0, 0), .canceled = bool_at(r, 0, 1)};
	if (c.canceled)
		BRQ_LOG_INFO("job_canceled", "id=%" PRIu64 " topic=%s", w->req.cancel.id,
			     PQgetvalue(r, 0, 2));
	PQclear(r);
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 2);
	brq_pack_key(b, "state");
	brq_pack_cstr(b, brq_state_name(c.state));
	brq_pack_key(b, "canceled");
	brq_pack_bool(b, c.canceled);
	return BRQ_ST_OK;
}

static brq_status
op_job(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e)
{
	(void) s;
	PGresult  *r;
	brq_status st = exec_by_id(t, BRQ_STMT_JOB, w->req.job.id, "job", &r, e);
	if (st != BRQ_ST_OK)
		return st;
	brq_job_info j = {
		.id                  = (uint64_t) int_at(r, 0, 0),
		.topic               = str_at(r, 0, 1),
		.payload             = str_at(r, 0, 2),
		.state               = state_at(r, 0, 3),
		.attempts            = (uint32_t) int_at(r, 0, 4),
		.max_attempts        = (uint32_t) int_at(r, 0, 5),
		.available_at_ms     = int_at(r, 0, 6),
		.has_locked_by       = !PQgetisnull(r, 0, 7),
		.locked_by           = str_at(r, 0, 7),
		.has_locked_until_ms = !PQgetisnull(r, 0, 8),
		.locked_until_ms     = int_at(r, 0, 8),
		.has_last_error      = !PQgetisnull(r, 0, 9),
		.last_error          = str_at(r, 0, 9),
		.has_key             = !PQgetisnull(r, 0, 10),
		.key                 = str_at(r, 0, 10),
		.created_at_ms       = int_at(r, 0, 11),
		.updated_at_ms       = int_at(r, 0, 12),
	};
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "job");
	brq_pack_job_info(b, &j);
	PQclear(r);
	return BRQ_ST_OK;
}

static brq_status
op_stats(brq_server *s, brq_pool_thread *t, brq_work *w, op_err *e)
{
	(void) s;
	PGresult *r = brq_db_exec(&t->db, BRQ_STMT_STATS, NULL, NULL, NULL);
	if (!brq_db_ok(r)) {
		brq_status st = db_fail(e, &t->db, r, "stats");
		PQclear(r);
		return st;
	}
	brq_buf *b    = &w->out;
	int      rows = PQntuples(r);
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "topics");
	brq_pack_array(b, (uint32_t) rows);
	for (int row = 0; row < rows; row++) {
		brq_topic_stats ts = {.topic               = str_at(r, row, 0),
				      .oldest_ready_age_ms = (uint64_t) int_at(r, row, 7)};
		for (int k = 0; k < BRQ_STATE__COUNT; k++)
			ts.count[k] = (uint64_t) int_at(r, row, 1 + k);
		brq_pack_topic_stats(b, &ts);
	}
	PQclear(r);
	return BRQ_ST_OK;
}

// ---- dispatch -------------------------------------------------------------------------------

void
brq_ops_ping(brq_work *w)
{
	brq_buf *b = &w->out;
	w->code    = BRQ_ST_OK;
	brq_reply_begin(b, w->req.rid, 1);
	brq_pack_key(b, "server");
	brq_pack_cstr(b, "brooq-gateway " BROOQ_VERSION);
}

brq_ops_result
brq_ops_run(brq_server *s, brq_pool_thread *t, brq_work *w)
{
	op_err     e    = {.code = BRQ_ST_OK};
	bool       park = false;
	brq_status st;

	if (!brq_db_ready(&t->db)) {
		st = fail(&e, BRQ_ST_UNAVAILABLE, "database unavailable; retry later");
		goto out;
	}
	switch (w->req.op) {
	case BRQ_OP_ENQUEUE: st = op_enqueue(s, t, w, &e); break;
	case BRQ_OP_CLAIM: st = op_claim(s, t, w, &e, &park); break;
	case BRQ_OP_HEARTBEAT: st = op_heartbeat(s, t, w, &e); break;
	case BRQ_OP_SETTLE: st = op_settle(s, t, w, &e); break;
	case BRQ_OP_CANCEL: st = op_cancel(s, t, w, &e); break;
	case BRQ_OP_JOB: st = op_job(s, t, w, &e); break;
	case BRQ_OP_STATS: st = op_stats(s, t, w, &e); break;
	default: st = fail(&e, BRQ_ST_INTERNAL, "op %s not handled", brq_op_name(w->req.op)); break;
	}
out:
	if (park && st == BRQ_ST_OK)
		return BRQ_OPS_PARK;
	w->code = st;
	if (st != BRQ_ST_OK && brq_reply_encode_error(&w->out, w->req.rid, st, "%s", e.msg) != 0)
		brq_buf_reset(&w->out);
	return BRQ_OPS_REPLY;
}
