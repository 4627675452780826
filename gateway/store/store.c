// SPDX-License-Identifier: MIT
// The store's connections and transactions, and the job lifecycle: enqueue, settle,
// heartbeat, unclaim, cancel (the claim: store_claim.c).
#include "store_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"

// Session settings per role. Requests and the janitor: a statement never runs
// forever (a request must not hang on a stuck lock), an abandoned transaction is
// ended by the server, and every statement (written to have one good plan whatever
// its parameters) is planned once per connection: custom plans re-planned the claim
// on every call (8 % of PostgreSQL's CPU per job, docs/benchmarks.md). That plan is
// made at the connection's first call, on the table as it is then: on a new, small
// table a sequential scan is the cheapest way to anything, and the plan would keep
// scanning as the table grows (until an ANALYZE: settle planned on an empty table was
// a hash join over all of job). Every statement here has an index to go through, so
// sequential scans are priced out (enable_seqscan = off: still used where no index
// applies). Priced out, they make the estimates of the plans that remain huge, and
// above jit_above_cost PostgreSQL compiles the plan with LLVM at every execution: the
// job list's generic plans spent 0.3 to 2.6 s in JIT to run for 20 ms (measured at
// 1M rows, docs/operations.md "Listing jobs"), so no JIT. No parallel workers either:
// every statement here is a short index-driven one, and starting workers cost the
// list hundreds of ms on a busy host.
#define SESSION_POOL                                                                      \
	"SET statement_timeout = '30s'; SET idle_in_transaction_session_timeout = '60s';" \
	" SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;"            \
	" SET jit = off; SET max_parallel_workers_per_gather = 0"

const char *const brq_store_pool_session = SESSION_POOL;
// The monitor: every statement bounded by twice the budget, the health window (a round
// trip never outlives it); its counts by the budget itself, as their deadline
// (monitor.c run_count: canceled, the estimate stands, the connection stays), so a busy
// database slows the ping and the policy read but does not cancel them. Never wait
// long behind a lock (a migration holding ACCESS EXCLUSIVE), never write by mistake, no
// parallel workers (background work stays on one core rather than compete with the
// claim path). Set once the statements are prepared: the PREPAREs have the connect
// deadline, not the budget (db.c setup_conn).
#define SESSION_MONITOR                                          \
	"SET statement_timeout = %llu; SET lock_timeout = %llu;" \
	" SET default_transaction_read_only = on; SET max_parallel_workers_per_gather = 0"
// The listener: LISTEN from every connect on (a reconnect listens anew, store_listen.c);
// its one statement is its echo (a NOTIFY, allowed read-only). Notifications need a
// session of its own, which a pooler in transaction mode does not give: the echo tells
// (docs/operations.md).
#define SESSION_LISTENER                                                        \
	"SET statement_timeout = '5s'; SET default_transaction_read_only = on;" \
	" LISTEN " BRQ_STORE_CANCEL_CHANNEL

// ---- the store's connections ----------------------------------------------------

void
brq_store_conn_init(brq_store_conn *c, const brq_store *st, const brq_store_conn_opts *o)
{
	memset(c, 0, sizeof(*c));
	c->st = st;
	if (o->role == BRQ_STORE_MONITOR)
		snprintf(c->session, sizeof(c->session), SESSION_MONITOR,
			 (unsigned long long) (2 * o->budget_ms), (unsigned long long) o->budget_ms);
	else
		snprintf(c->session, sizeof(c->session), "%s",
			 o->role == BRQ_STORE_LISTENER ? SESSION_LISTENER : SESSION_POOL);
	brq_db_opts dbo = {
		.name           = o->name,
		.app_name       = o->role == BRQ_STORE_MONITOR ? "brooq-monitor"
			      : o->role == BRQ_STORE_LISTENER  ? "brooq-listener"
							       : "brooq-gateway",
		.session_sql    = c->session,
		.stmts          = st->stmts,
		.n_stmts        = o->role == BRQ_STORE_LISTENER ? 0 : BRQ_STMT__COUNT,
		.backoff_min_ms = o->backoff_min_ms,
		.backoff_max_ms = o->backoff_max_ms,
		.stop           = o->stop,
		.on_connect     = brq_store_schema_on_connect,
		.on_connect_arg = (void *) st,
	};
	brq_db_init(&c->db, st->cfg->dsn, &dbo);
	for (int k = 0; k < BRQ_STORE_ARRAYS; k++)
		brq_pgarr_init(&c->arr[k]);
	brq_arena_init(&c->arena);
}

// Parameter arrays kept across units of work; a bigger one is freed after use.
#define ARRAY_KEEP (64u * 1024u)

void
brq_store_reset(brq_store_conn *c)
{
	for (size_t i = 0; i < c->n_kept; i++)
		PQclear(c->kept[i]);
	c->n_kept      = 0;
	c->deadline_ms = 0;
	brq_arena_reset(&c->arena);
	for (int k = 0; k < BRQ_STORE_ARRAYS; k++)
		brq_pgarr_trim(&c->arr[k], ARRAY_KEEP);
}

void
brq_store_set_deadline(brq_store_conn *c, uint64_t deadline_ms)
{
	c->deadline_ms = deadline_ms;
}

void
brq_store_conn_fini(brq_store_conn *c)
{
	brq_store_reset(c);
	free(c->kept);
	c->kept = NULL;
	brq_arena_fini(&c->arena);
	for (int k = 0; k < BRQ_STORE_ARRAYS; k++)
		brq_pgarr_fini(&c->arr[k]);
	brq_db_fini(&c->db);
}

bool
brq_store_ready(brq_store_conn *c)
{
	return brq_db_ready(&c->db);
}

bool
brq_store_is_up(const brq_store_conn *c)
{
	return c->db.conn != NULL;
}

uint64_t
brq_store_last_answer_ms(const brq_store_conn *c)
{
	return c->db.last_answer_ms;
}

const char *
brq_store_errmsg(const brq_store_conn *c)
{
	return c->db.errmsg[0] != '\0' ? c->db.errmsg : "no error";
}

// ---- helpers (store_int.h) ---------------------------------------------------------------

int
brq_store_fail(brq_store_conn *c, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->db.errmsg, sizeof(c->db.errmsg), fmt, ap);
	va_end(ap);
	c->db.sqlstate[0] = '\0';
	return code;
}

int
brq_store_run(brq_store_conn *c, brq_stmt st, const char *const *values, const int *lengths,
	      const int *formats, int ncols, PGresult **out)
{
	PGresult *r = brq_db_exec(&c->db, (size_t) st, values, lengths, formats, c->deadline_ms);
	if (!brq_db_ok(r)) {
		int rv = brq_db_error(&c->db, r);
		PQclear(r);
		return rv;
	}
	if (PQnfields(r) != ncols) {
		int got = PQnfields(r);
		PQclear(r);
		return brq_store_fail(c, BRQ_EINTERNAL, "%s: %d result columns, expected %d",
				      c->st->stmts[st].name, got, ncols);
	}
	if (c->n_kept == c->cap_kept) {
		size_t     cap  = c->cap_kept ? c->cap_kept * 2 : 8;
		PGresult **kept = realloc(c->kept, cap * sizeof(*kept));
		if (kept == NULL) {
			PQclear(r);
			return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
		}
		c->kept     = kept;
		c->cap_kept = cap;
	}
	c->kept[c->n_kept++] = r;
	*out                 = r;
	return 0;
}

int
brq_store_begin(brq_store_conn *c)
{
	if (c->in_tx)
		return brq_store_fail(c, BRQ_EINTERNAL, "transaction already open");
	int rv = brq_db_command(&c->db, "BEGIN");
	if (rv == 0)
		c->in_tx = true;
	return rv;
}

int
brq_store_commit(brq_store_conn *c)
{
	c->in_tx    = false;
	PGresult *r = brq_db_query(&c->db, "COMMIT", 0);
	// A transaction that failed earlier "commits" as ROLLBACK: not a commit.
	int rv = !brq_db_ok(r) ? brq_db_error(&c->db, r)
		: strcmp(PQcmdStatus(r), "COMMIT") != 0
		? brq_store_fail(c, BRQ_EUNAVAIL, "transaction rolled back")
		: 0;
	PQclear(r);
	return rv;
}

void
brq_store_rollback(brq_store_conn *c)
{
	c->in_tx = false;
	if (c->db.conn != NULL) {
		int rv = brq_db_command(&c->db, "ROLLBACK");
		(void) rv; // on failure the connection is gone, and its transaction with it
	}
}

int
brq_store_param(brq_pgarr *a, const char **values, int *lengths, int k)
{
	if (brq_pgarr_end(a) != 0)
		return BRQ_ENOMEM;
	values[k]  = a->data;
	lengths[k] = (int) a->len;
	return 0;
}

void
brq_store_arrays_begin(brq_store_conn *c, const uint32_t *oids, int n)
{
	for (int k = 0; k < n; k++)
		brq_pgarr_begin(&c->arr[k], oids[k]);
}

int
brq_store_run_arrays(brq_store_conn *c, brq_stmt st, int n, int ncols, const char *nomem, PGresult **out)
{
	const char *v[BRQ_STORE_ARRAYS] = {NULL};
	int         l[BRQ_STORE_ARRAYS] = {0}, f[BRQ_STORE_ARRAYS];
	for (int k = 0; k < BRQ_STORE_ARRAYS; k++)
		f[k] = BRQ_BINARY;
	for (int k = 0; k < n; k++)
		if (brq_store_param(&c->arr[k], v, l, k) != 0)
			return brq_store_fail(c, BRQ_ENOMEM, "%s", nomem);
	return brq_store_run(c, st, v, l, f, ncols, out);
}

int
brq_store_run_by_id(brq_store_conn *c, brq_stmt st, uint64_t id, int ncols, PGresult **out)
{
	char        txt[24];
	const char *v[1] = {txt};
	snprintf(txt, sizeof(txt), "%" PRIu64, id);
	int rv = brq_store_run(c, st, v, NULL, NULL, ncols, out);
	if (rv == 0 && PQntuples(*out) == 0)
		return brq_store_fail(c, BRQ_ENOTFOUND, "job %s not found", txt);
	return rv;
}

void *
brq_store_read_all(brq_store_conn *c, const PGresult *r, size_t size, brq_store_row_fn *read, uint32_t *n)
{
	int   rows = PQntuples(r);
	char *a    = brq_arena_alloc(&c->arena, rows > 0 ? (size_t) rows : 1, size);
	*n         = 0;
	if (a == NULL)
		return NULL;
	for (int row = 0; row < rows; row++)
		read(r, row, a + (size_t) row * size);
	*n = (uint32_t) rows;
	return a;
}

int
brq_store_run_all(brq_store_conn *c, brq_stmt st, int ncols, size_t size, brq_store_row_fn *read,
		  const char *nomem, void *out, uint32_t *n)
{
	PGresult *r;
	void     *rows = NULL;
	*n             = 0;
	int rv         = brq_store_run(c, st, NULL, NULL, NULL, ncols, &r);
	if (rv == 0 && (rows = brq_store_read_all(c, r, size, read, n)) == NULL)
		rv = brq_store_fail(c, BRQ_ENOMEM, "%s", nomem);
	// out is the caller's `T **`: copied, not assigned through a `void **`.
	memcpy(out, &rows, sizeof(rows));
	return rv;
}

int64_t
brq_store_int(const PGresult *r, int row, int col)
{
	// PostgreSQL writes integers as an optional '-' and digits. Up to 18 digits are read
	// here (no overflow possible); anything longer or other goes to strtoll, which
	// gives the same value for these. strtoll on every column of every claimed job was
	// ~10 % of the gateway's instructions in a drain (callgrind).
	const char *s   = PQgetvalue(r, row, col);
	bool        neg = s[0] == '-';
	const char *d   = s + neg;
	uint64_t    v   = 0;
	int         n   = 0;
	while (n < 19 && d[n] >= '0' && d[n] <= '9') {
		v = v * 10 + (uint64_t) (d[n] - '0');
		n++;
	}
	if (n == 0 || n == 19)
		return strtoll(s, NULL, 10);
	return neg ? -(int64_t) v : (int64_t) v;
}

double
brq_store_double(const PGresult *r, int row, int col)
{
	return strtod(PQgetvalue(r, row, col), NULL);
}

bool
brq_store_bool(const PGresult *r, int row, int col)
{
	return PQgetvalue(r, row, col)[0] == 't';
}

bool
brq_store_is_null(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) != 0;
}

brq_str
brq_store_str(const PGresult *r, int row, int col)
{
	return (brq_str) {PQgetvalue(r, row, col), (uint32_t) PQgetlength(r, row, col)};
}

brq_state
brq_store_state(const PGresult *r, int row, int col)
{
	int st = brq_state_lookup(PQgetvalue(r, row, col), (size_t) PQgetlength(r, row, col));
	return st < 0 ? BRQ_STATE_PENDING : (brq_state) st;
}

// ---- enqueue ---------------------------------------------------------------------------------

// Runs the insert statement for jobs[0..n); res[i].id is 0 where a key conflicted
// with a row the statement could not see.
static int
insert_rows(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n, brq_enqueue_result *res)
{
	static const uint32_t types[7] = {BRQ_OID_TEXT, BRQ_OID_JSONB, BRQ_OID_TEXT, BRQ_OID_INT8,
					  BRQ_OID_INT8, BRQ_OID_INT4,  BRQ_OID_INT4};
	brq_pgarr            *a        = c->arr;
	brq_store_arrays_begin(c, types, 7);
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
		if (!j->has_max_attempts) {
			size_t len = j->topic.len < BRQ_TOPIC_MAX ? j->topic.len : BRQ_TOPIC_MAX;
			memcpy(topic, j->topic.ptr, len);
			topic[len] = '\0';
			brq_config_topic_settings(c->st->cfg, topic, &max_attempts, NULL, NULL, NULL);
		}
		brq_pgarr_int4(&a[5], (int32_t) max_attempts);
		brq_pgarr_int4(&a[6], (int32_t) (j->has_priority ? j->priority : BRQ_PRIORITY_DEFAULT));
	}
	PGresult *r;
	int       rv = brq_store_run_arrays(c, BRQ_STMT_ENQUEUE, 7, ENQ__N, "enqueue: out of memory", &r);
	if (rv != 0)
		return rv;
	if ((uint32_t) PQntuples(r) != n)
		return brq_store_fail(c, BRQ_EINTERNAL, "enqueue: %d rows for %u jobs", PQntuples(r), n);
	for (uint32_t i = 0; i < n; i++) {
		res[i].created = brq_store_bool(r, (int) i, ENQ_CREATED);
		res[i].id      = brq_store_is_null(r, (int) i, ENQ_ID)
			     ? 0
			     : (uint64_t) brq_store_int(r, (int) i, ENQ_ID);
	}
	return 0;
}

// A key that conflicted (with an older row, one of the same batch, or one committed
// after the statement began): the row exists now, so look them all up in one
// statement, by position among the conflicting jobs. BRQ_ECONFLICT when one went
// away in between (deleted by retention or by hand).
static int
resolve_conflicts(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n, brq_enqueue_result *res)
{
	uint32_t n_missing = 0;
	for (uint32_t i = 0; i < n; i++)
		n_missing += res[i].id == 0;
	if (n_missing == 0)
		return 0;
	uint32_t *missing = brq_arena_alloc(&c->arena, n_missing, sizeof(*missing));
	if (missing == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "enqueue: out of memory");
	brq_pgarr *a = c->arr;
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
	PGresult *r;
	int rv = brq_store_run_arrays(c, BRQ_STMT_ENQUEUE_LOOKUP, 2, LOOKUP__N, "enqueue: out of memory", &r);
	if (rv != 0)
		return rv;
	for (int row = 0; row < PQntuples(r); row++) {
		int64_t k = brq_store_int(r, row, LOOKUP_ORD);
		if (k >= 1 && k <= (int64_t) n_missing)
			res[missing[k - 1]].id = (uint64_t) brq_store_int(r, row, LOOKUP_ID);
	}
	for (uint32_t k = 0; k < n_missing; k++)
		if (res[missing[k]].id == 0)
			return brq_store_fail(c, BRQ_ECONFLICT, "key conflict with a job that went away");
	return 0;
}

int
brq_store_insert(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n, brq_enqueue_result *res)
{
	int rv = insert_rows(c, jobs, n, res);
	return rv != 0 ? rv : resolve_conflicts(c, jobs, n, res);
}

int
brq_store_tx_open(brq_store_conn *c, bool need, bool *own)
{
	*own = need && !c->in_tx;
	return *own ? brq_store_begin(c) : 0;
}

int
brq_store_tx_close(brq_store_conn *c, bool own, int rv)
{
	if (own && rv == 0)
		return brq_store_commit(c);
	if (own)
		brq_store_rollback(c);
	return rv;
}

int
brq_store_enqueue(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n, brq_enqueue_result *res)
{
	// Keys are the only source of conflicts, and resolving one takes a second
	// statement: a keyed batch runs in a transaction, so a conflict that cannot
	// be resolved leaves nothing behind. A batch without keys is one statement.
	bool keyed = false;
	for (uint32_t i = 0; i < n && !keyed; i++)
		keyed = jobs[i].key.len > 0;
	bool own;
	int  rv = brq_store_tx_open(c, keyed, &own);
	if (rv == 0)
		rv = brq_store_insert(c, jobs, n, res);
	return brq_store_tx_close(c, own, rv);
}

// ---- settle ------------------------------------------------------------------------------------

// The settle statement over items sel[0..m): by address (tids[sel[k]]) when tids is
// given, else by id; marks the items applied in out. 0 or a BRQ_E* code.
static int
settle_some(brq_store_conn *c, const brq_settle_item *items, const uint32_t *sel, uint32_t m,
	    const brq_tid *tids, brq_store_settled *out)
{
	// $1..$5; then the addresses (BRQ_STMT_SETTLE_AT only) and the results.
	static const uint32_t types[5] = {BRQ_OID_INT8, BRQ_OID_UUID, BRQ_OID_TEXT, BRQ_OID_TEXT,
					  BRQ_OID_INT8};
	brq_pgarr            *a        = c->arr;
	brq_pgarr            *res      = &a[tids != NULL ? 6 : 5]; // results come last (settle_sql)
	brq_store_arrays_begin(c, types, 5);
	brq_pgarr_begin(res, BRQ_OID_JSONB);
	if (tids != NULL)
		brq_pgarr_begin(&a[5], BRQ_OID_TID);
	bool results = false;
	for (uint32_t k = 0; k < m; k++) {
		const brq_settle_item *it = &items[sel[k]];
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
		if (it->has_result)
			brq_pgarr_text(res, it->result.ptr, it->result.len);
		else
			brq_pgarr_null(res);
		if (tids != NULL)
			brq_pgarr_tid(&a[5], tids[sel[k]].block, tids[sel[k]].offset);
		results |= it->has_result;
	}
	// No item has a result: the results are a NULL array (see settle_sql), not sent.
	int       n = tids != NULL ? (results ? 7 : 6) : (results ? 6 : 5);
	PGresult *r;
	int rv = brq_store_run_arrays(c, tids != NULL ? BRQ_STMT_SETTLE_AT : BRQ_STMT_SETTLE, n, SETTLE__N,
				      "settle: out of memory", &r);
	if (rv != 0)
		return rv;
	// Each returned row settles the first unapplied item with its id (an id given
	// twice is applied once). Rows come in the items' order (the nested loop follows
	// unnest), so the search starts after the last match: one pass, not n^2.
	uint32_t at = 0;
	for (int row = 0; row < PQntuples(r); row++) {
		uint64_t id = (uint64_t) brq_store_int(r, row, SETTLE_ID);
		for (uint32_t step = 0; step < m; step++) {
			brq_store_settled *o = &out[sel[(at + step) % m]];
			if (o->r.id != id || o->r.applied)
				continue;
			o->r.applied  = true;
			o->r.state    = brq_store_state(r, row, SETTLE_STATE);
			o->topic      = brq_store_str(r, row, SETTLE_TOPIC);
			o->attempt_s  = brq_store_double(r, row, SETTLE_ATTEMPT_S);
			o->by_address = tids != NULL;
			at            = (at + step + 1) % m;
			break;
		}
	}
	return 0;
}

// The settle of items[0..n), in id order (brq_row_ref): by address when this gateway knows
// every item's row address, else all by id, so that a batch is one statement and locks
// its rows in one order; the items whose address was stale (the row moved since) are
// then settled by id, after the others.
static int
settle_items(brq_store_conn *c, const brq_settle_item *items, uint32_t n, brq_store_settled *out)
{
	uint64_t    *ids  = brq_arena_alloc(&c->arena, n, sizeof(*ids));
	brq_tid     *tids = brq_arena_alloc(&c->arena, n, sizeof(*tids));
	uint32_t    *sel  = brq_arena_alloc(&c->arena, n, sizeof(*sel));
	brq_row_ref *refs = brq_arena_alloc(&c->arena, n, sizeof(*refs));
	if (ids == NULL || tids == NULL || sel == NULL || refs == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "settle: out of memory");
	for (uint32_t i = 0; i < n; i++) {
		ids[i]  = items[i].id;
		refs[i] = (brq_row_ref) {items[i].id, i};
		out[i]  = (brq_store_settled) {.r = {.id = items[i].id, .applied = false}};
	}
	brq_store_in_id_order(refs, n, sel);
	if (brq_hints_take(c->st->hints, ids, tids, n) == n) {
		int rv = settle_some(c, items, sel, n, tids, out);
		if (rv != 0)
			return rv;
	}
	uint32_t m = 0;
	for (uint32_t k = 0; k < n; k++)
		if (!out[sel[k]].r.applied)
			sel[m++] = sel[k];
	return m > 0 ? settle_some(c, items, sel, m, NULL, out) : 0;
}

int
brq_store_settle_rows(brq_store_conn *c, const brq_settle_item *items, uint32_t n, brq_store_settled *out,
		      brq_store_chain *chain)
{
	int rv = settle_items(c, items, n, out);
	if (rv != 0)
		return rv;

	// Chains of the applied `done` items, as one batch in this transaction.
	uint32_t n_chain = 0;
	for (uint32_t i = 0; i < n; i++)
		if (out[i].r.applied && items[i].outcome == BRQ_OUTCOME_DONE)
			n_chain += items[i].n_chain;
	*chain = (brq_store_chain) {0};
	if (n_chain == 0)
		return 0;
	brq_job_spec       *jobs = brq_arena_alloc(&c->arena, n_chain, sizeof(*jobs));
	brq_enqueue_result *res  = brq_arena_alloc(&c->arena, n_chain, sizeof(*res));
	if (jobs == NULL || res == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "settle: out of memory");
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (out[i].r.applied && items[i].outcome == BRQ_OUTCOME_DONE)
			for (uint32_t j = 0; j < items[i].n_chain; j++)
				jobs[k++] = items[i].chain[j];
	rv = brq_store_enqueue(c, jobs, n_chain, res);
	if (rv == 0)
		*chain = (brq_store_chain) {.jobs = jobs, .res = res, .n = n_chain};
	return rv;
}

static bool
has_chain(const brq_settle_item *items, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (items[i].n_chain > 0)
			return true;
	return false;
}

int
brq_store_settle(brq_store_conn *c, const brq_settle_item *items, uint32_t n, brq_store_settled *out,
		 brq_store_chain *chain)
{
	// One statement is atomic by itself; chains need a transaction around both.
	bool own;
	int  rv = brq_store_tx_open(c, has_chain(items, n), &own);
	if (rv == 0)
		rv = brq_store_settle_rows(c, items, n, out, chain);
	return brq_store_tx_close(c, own, rv);
}

// ---- unclaim and heartbeat -----------------------------------------------------------------

// Binary (ids, tokens) arrays of leases[0..n) into v/l[0..1]: in the order at[0..n)
// gives (positions into leases), or as given when at is NULL.
static int
lease_params(brq_store_conn *c, const brq_lease_ref *leases, const uint32_t *at, uint32_t n, const char **v,
	     int *l)
{
	brq_pgarr *a = c->arr;
	brq_pgarr_begin(&a[0], BRQ_OID_INT8);
	brq_pgarr_begin(&a[1], BRQ_OID_UUID);
	for (uint32_t k = 0; k < n; k++) {
		const brq_lease_ref *x = &leases[at != NULL ? at[k] : k];
		brq_pgarr_int8(&a[0], (int64_t) x->id);
		brq_pgarr_uuid(&a[1], x->lease);
	}
	if (brq_store_param(&a[0], v, l, 0) != 0 || brq_store_param(&a[1], v, l, 1) != 0)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	return 0;
}

int
brq_store_unclaim(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n, uint32_t *n_returned)
{
	const char *v[2];
	int         l[2], f[2] = {BRQ_BINARY, BRQ_BINARY};
	PGresult   *r;
	uint32_t   *at = brq_store_leases_in_id_order(c, leases, n);
	if (at == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "unclaim: out of memory");
	int rv = lease_params(c, leases, at, n, v, l);
	if (rv == 0)
		rv = brq_store_run(c, BRQ_STMT_UNCLAIM, v, l, f, UNCLAIM__N, &r);
	if (rv == 0 && n_returned != NULL)
		*n_returned = (uint32_t) PQntuples(r);
	return rv;
}

int
brq_store_lost_of(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n, brq_lost_reason *reasons,
		  brq_str *topics)
{
	const char *v[2];
	int         l[2], f[2] = {BRQ_BINARY, BRQ_BINARY};
	PGresult   *r;
	for (uint32_t i = 0; i < n; i++) {
		reasons[i] = BRQ_LOST_GONE;
		topics[i]  = (brq_str) {NULL, 0};
	}
	int rv = lease_params(c, leases, NULL, n, v, l); // read only: answers by position
	if (rv == 0)
		rv = brq_store_run(c, BRQ_STMT_LOST_OF, v, l, f, LOST__N, &r);
	if (rv != 0)
		return rv;
	// Rows come back by the lease's position (1-based) in the arrays.
	for (int row = 0; row < PQntuples(r); row++) {
		int64_t k   = brq_store_int(r, row, LOST_ORD);
		brq_str why = brq_store_str(r, row, LOST_REASON);
		if (k < 1 || k > (int64_t) n)
			return brq_store_fail(c, BRQ_EINTERNAL, "lost_of: position %lld out of range",
					      (long long) k);
		topics[k - 1]  = brq_store_str(r, row, LOST_TOPIC);
		reasons[k - 1] = why.len == 8 && memcmp(why.ptr, "canceled", 8) == 0 ? BRQ_LOST_CANCELED
			: why.len == 13 && memcmp(why.ptr, "max_execution", 13) == 0 ? BRQ_LOST_MAX_EXECUTION
										     : BRQ_LOST_GONE;
	}
	return 0;
}

int
brq_store_heartbeat(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n, bool has_lease_ms,
		    uint32_t lease_ms, bool *extended, int64_t *until_ms)
{
	char        lease_txt[24];
	const char *v[3];
	int         l[3] = {0}, f[3] = {BRQ_BINARY, BRQ_BINARY, BRQ_TEXT};
	PGresult   *r;
	uint32_t   *at = brq_store_leases_in_id_order(c, leases, n);
	if (at == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "heartbeat: out of memory");
	int rv = lease_params(c, leases, at, n, v, l);
	if (rv != 0)
		return rv;
	v[2] = NULL;
	if (has_lease_ms) {
		snprintf(lease_txt, sizeof(lease_txt), "%u", lease_ms);
		v[2] = lease_txt;
	}
	rv = brq_store_run(c, BRQ_STMT_HEARTBEAT, v, l, f, HB__N, &r);
	if (rv != 0)
		return rv;
	memset(extended, 0, n * sizeof(*extended));
	*until_ms      = 0;
	int       rows = PQntuples(r);
	uint64_t *ids  = brq_arena_alloc(&c->arena, rows > 0 ? (size_t) rows : 1, sizeof(*ids));
	brq_tid  *tids = brq_arena_alloc(&c->arena, rows > 0 ? (size_t) rows : 1, sizeof(*tids));
	for (int row = 0; row < rows; row++) {
		uint64_t id = (uint64_t) brq_store_int(r, row, HB_ID);
		int64_t  u  = brq_store_int(r, row, HB_LOCKED_UNTIL_MS);
		// The extension wrote a new row version: the settle looks there.
		if (ids != NULL && tids != NULL) {
			ids[row] = id;
			if (!brq_tid_parse(PQgetvalue(r, row, HB_LOC), &tids[row]))
				tids[row] = (brq_tid) {0};
		}
		// The first lease with this id not extended yet, by binary search in id
		// order (whatever order the rows come in).
		uint32_t lo = 0, hi = n;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (leases[at[mid]].id < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		while (lo < n && leases[at[lo]].id == id && extended[at[lo]])
			lo++;
		if (lo < n && leases[at[lo]].id == id)
			extended[at[lo]] = true;
		if (*until_ms == 0 || u < *until_ms)
			*until_ms = u;
	}
	if (ids != NULL && tids != NULL)
		brq_hints_put(c->st->hints, ids, tids, (uint32_t) rows);
	return 0;
}

int
brq_store_cancel(brq_store_conn *c, uint64_t id, brq_cancel_rep *out, brq_str *topic)
{
	PGresult *r;
	int       rv = brq_store_run_by_id(c, BRQ_STMT_CANCEL, id, CANCEL__N, &r);
	if (rv != 0)
		return rv;
	out->state    = brq_store_state(r, 0, CANCEL_STATE);
	out->canceled = brq_store_bool(r, 0, CANCEL_CANCELED);
	*topic        = brq_store_str(r, 0, CANCEL_TOPIC);
	return 0;
}
