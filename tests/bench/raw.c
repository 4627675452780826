// SPDX-License-Identifier: MIT
// The raw-SQL baseline: the gateway's own statements (store_sql.c), driven straight over libpq.
//
// The statement text comes from brq_store_sql_build() with the default configuration, and
// the array parameters are built by the gateway's brq_pgarr, so the server runs
// byte-for-byte what the gateway sends, prepared the same way. What the baseline
// leaves out is exactly the gateway's hop: NNG, msgpack, auth, the pool queue.
#include "bench.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config/config.h"
#include "store/pgarr.h"
#include "proto.h"
#include "store/store.h"
#include "store/store_sql.h"

#define TOPIC_ENQ   "bench.enq"
#define TOPIC_DRAIN "bench.drain"

static char       *the_texts[BRQ_STMT__COUNT];
static brq_db_stmt the_stmts[BRQ_STMT__COUNT];
// The claim statement's median latency in the last raw drain (where time goes).
static double claim_p50_us;
// Jobs per claim statement in the last raw drain (claims that found none excluded).
static double raw_jobs_per_claim;

// The gateway's statements under the default configuration, or with `discard` as the
// gateway of `drain --discard` runs (BENCH_TOPIC_DISCARD: discard_done=true).
static void
sql_init(bool discard)
{
	brq_config         cfg;
	brq_topic_override o = {.has_discard_done = true, .discard_done = true};
	snprintf(o.topic, sizeof(o.topic), "%s", BENCH_TOPIC_DISCARD);
	if (sodium_init() < 0)
		bench_die("sodium_init failed");
	if (brq_config_init_defaults(&cfg) != 0)
		bench_die("cannot build the statements");
	cfg.topic_overrides   = discard ? &o : NULL;
	cfg.n_topic_overrides = discard ? 1 : 0;
	int rv                = brq_store_sql_build(&cfg, the_texts, the_stmts);
	cfg.topic_overrides   = NULL; // not the configuration's to free
	cfg.n_topic_overrides = 0;
	brq_config_fini(&cfg);
	if (rv != 0)
		bench_die("cannot build the statements");
}

// A connection with the gateway pool's session settings (generic plans, sequential
// scans priced out: store.c) and every statement prepared under the gateway's names,
// so "raw" runs exactly what the gateway runs.
static PGconn *
raw_connect(const bench_opts *o)
{
	PGconn *c = bench_db_connect(o->dsn);
	bench_db_exec(c, brq_store_pool_session);
	for (int i = 0; i < BRQ_STMT__COUNT; i++) {
		PGresult *r = PQprepare(c, the_stmts[i].name, the_stmts[i].text, the_stmts[i].nparams, NULL);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			bench_die("prepare %s: %s", the_stmts[i].name, PQerrorMessage(c));
		PQclear(r);
	}
	return c;
}

static PGresult *
exec_stmt(PGconn *c, brq_stmt st, const char *const *v, const int *l, const int *f)
{
	PGresult *r = PQexecPrepared(c, the_stmts[st].name, the_stmts[st].nparams, v, l, f, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		bench_die("%s: %s", the_stmts[st].name, PQerrorMessage(c));
	return r;
}

static void
arr_end(brq_pgarr *a, const char **v, int *l)
{
	if (brq_pgarr_end(a) != 0)
		bench_die("out of memory");
	*v = a->data;
	*l = (int) a->len;
}

// ---- enqueue ------------------------------------------------------------------------------

// --lever enqueue-nojoin: the enqueue without its LEFT JOIN to job (the ids of rows
// whose key conflicted). That join is planned once per connection from the table's
// statistics of that moment: planned on a small table, it stays a hash join over a
// sequential scan of the whole table while the table grows. The conflicts (NULL
// ids) would go to a separate lookup, as enqueue_rows() already does for some.
static void
prepare_alt_enqueue(PGconn *c)
{
	static const char old_tail[] =
		") SELECT coalesce(ins.id, j.id), ins.id IS NOT NULL"
		" FROM input i LEFT JOIN ins ON ins.id = i.id"
		" LEFT JOIN job j ON ins.id IS NULL AND j.topic = i.topic AND j.idempotency_key = i.key"
		" ORDER BY i.ord";
	static const char new_tail[] = ") SELECT ins.id, ins.id IS NOT NULL"
				       " FROM input i LEFT JOIN ins ON ins.id = i.id ORDER BY i.ord";
	const char       *text       = the_stmts[BRQ_STMT_ENQUEUE].text;
	const char       *tail       = strstr(text, old_tail);
	if (tail == NULL)
		bench_die("the enqueue statement changed: update --lever enqueue-nojoin");
	char *sql = malloc(strlen(text) + sizeof(new_tail));
	if (sql == NULL)
		bench_die("out of memory");
	sprintf(sql, "%.*s%s%s", (int) (tail - text), text, new_tail, tail + strlen(old_tail));
	PGresult *r = PQprepare(c, "bench_enqueue_alt", sql, 7, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		bench_die("prepare bench_enqueue_alt: %s", PQerrorMessage(c));
	PQclear(r);
	free(sql);
}

typedef struct raw_thread {
	const bench_opts  *o;
	pthread_t          th;
	PGconn            *c;
	pthread_barrier_t *bar;
	_Atomic int64_t   *start_ns; // shared: the first thread past the barrier sets it
	int64_t            end_ns;   // this thread's deadline / last completion
	long               jobs;
	bench_samples      lat;
	// drain
	const char      *topic;
	int              batch;
	_Atomic int64_t *first_ns;
	bool             report_plans; // print the plan cache's counts at the end (stderr)
	bool             alt_enqueue;  // --lever enqueue-nojoin
} raw_thread;

static void *
enq_main(void *arg)
{
	raw_thread *t = arg;
	int         b = t->o->batch;
	brq_pgarr   a[7];
	for (int k = 0; k < 7; k++)
		brq_pgarr_init(&a[k]);
	pthread_barrier_wait(t->bar);
	int64_t zero = 0, now = bench_now_ns();
	atomic_compare_exchange_strong(t->start_ns, &zero, now);
	int64_t deadline = atomic_load(t->start_ns) + (int64_t) (t->o->seconds * 1e9);
	long    k        = 0;
	for (;;) {
		int64_t t0 = bench_now_ns();
		if (t0 >= deadline)
			break;
		// As enqueue_rows() builds them (gateway/rpc/ops.c).
		brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
		brq_pgarr_begin(&a[1], BRQ_OID_JSONB);
		brq_pgarr_begin(&a[2], BRQ_OID_TEXT);
		brq_pgarr_begin(&a[3], BRQ_OID_INT8);
		brq_pgarr_begin(&a[4], BRQ_OID_INT8);
		brq_pgarr_begin(&a[5], BRQ_OID_INT4);
		brq_pgarr_begin(&a[6], BRQ_OID_INT4);
		for (int i = 0; i < b; i++) {
			char pay[32];
			int  pl = snprintf(pay, sizeof(pay), "{\"i\":%ld}", k++);
			brq_pgarr_text(&a[0], TOPIC_ENQ, strlen(TOPIC_ENQ));
			brq_pgarr_text(&a[1], pay, (size_t) pl);
			brq_pgarr_null(&a[2]);
			brq_pgarr_null(&a[3]);
			brq_pgarr_null(&a[4]);
			brq_pgarr_int4(&a[5], 5);
			brq_pgarr_int4(&a[6], BRQ_PRIORITY_DEFAULT);
		}
		const char *v[7];
		int         l[7], f[7] = {1, 1, 1, 1, 1, 1, 1};
		for (int j = 0; j < 7; j++)
			arr_end(&a[j], &v[j], &l[j]);
		PGresult *r = t->alt_enqueue ? PQexecPrepared(t->c, "bench_enqueue_alt", 7, v, l, f, 0)
					     : exec_stmt(t->c, BRQ_STMT_ENQUEUE, v, l, f);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			bench_die("enqueue: %s", PQerrorMessage(t->c));
		if (PQntuples(r) != b)
			bench_die("enqueue: %d rows for %d jobs", PQntuples(r), b);
		PQclear(r);
		int64_t t1 = bench_now_ns();
		bench_samples_add(&t->lat, t1 - t0);
		t->jobs += b;
		t->end_ns = t1;
	}
	for (int j = 0; j < 7; j++)
		brq_pgarr_fini(&a[j]);
	return NULL;
}

int
bench_raw_enqueue(const bench_opts *o)
{
	sql_init(false);
	PGconn *db = bench_db_connect(o->dsn);
	bench_db_reset(db);
	int               n = o->producers;
	raw_thread       *t = calloc((size_t) n, sizeof(*t));
	pthread_barrier_t bar;
	_Atomic int64_t   start = 0;
	bench_cpu         cpu[2];
	// The main thread passes the barrier too, after its CPU snapshot: connecting is
	// not measured.
	pthread_barrier_init(&bar, NULL, (unsigned) n + 1);
	bool alt = o->lever != NULL && strcmp(o->lever, "enqueue-nojoin") == 0;
	if (o->lever != NULL && !alt)
		bench_die("raw-enqueue: --lever is enqueue-nojoin or nothing");
	for (int i = 0; i < n; i++) {
		t[i] = (raw_thread) {
			.o = o, .c = raw_connect(o), .bar = &bar, .start_ns = &start, .alt_enqueue = alt};
		if (alt)
			prepare_alt_enqueue(t[i].c);
		if (pthread_create(&t[i].th, NULL, enq_main, &t[i]) != 0)
			bench_die("pthread_create");
	}
	bench_cpu_now(&cpu[0]);
	pthread_barrier_wait(&bar);
	long          jobs = 0;
	int64_t       end  = 0;
	bench_samples lat  = {0};
	for (int i = 0; i < n; i++) {
		pthread_join(t[i].th, NULL);
		jobs += t[i].jobs;
		end = t[i].end_ns > end ? t[i].end_ns : end;
		bench_samples_merge(&lat, &t[i].lat);
		bench_samples_free(&t[i].lat);
	}
	bench_cpu_now(&cpu[1]);
	for (int i = 0; i < n; i++)
		PQfinish(t[i].c);
	char scen[64];
	snprintf(scen, sizeof(scen), "enqueue_b%d_p%d", o->batch, n);
	bench_result(o, scen, "raw", "rate", "jobs/s", (double) jobs / ((double) (end - start) / 1e9));
	bench_sort(lat.v, lat.n);
	bench_result(o, scen, "raw", "call_p50", "us", (double) bench_pct(lat.v, lat.n, 0.5) / 1e3);
	bench_cpu_report(o, scen, "raw", &cpu[0], &cpu[1], (double) jobs);
	bench_samples_free(&lat);
	pthread_barrier_destroy(&bar);
	free(t);
	PQfinish(db);
	brq_store_sql_fini(the_texts);
	return 0;
}

// ---- drain ----------------------------------------------------------------------------------

// Lever experiments on the raw loop (--lever): what the gateway would gain.
enum {
	LEVER_PIPELINE = 1, // BEGIN, settle, claim, COMMIT in one libpq pipeline: one round trip
	LEVER_LITERAL  = 2, // the claim prepared with LIMIT as a literal: a reusable generic plan
	LEVER_GENERIC  = 4, // plan_cache_mode = force_generic_plan: no planning per call
};

static int
lever_flags(const char *lever)
{
	if (lever == NULL || strcmp(lever, "none") == 0)
		return 0;
	if (strcmp(lever, "pipeline") == 0)
		return LEVER_PIPELINE;
	if (strcmp(lever, "literal") == 0)
		return LEVER_LITERAL;
	if (strcmp(lever, "pipeline+literal") == 0)
		return LEVER_PIPELINE | LEVER_LITERAL;
	if (strcmp(lever, "generic") == 0)
		return LEVER_GENERIC;
	if (strcmp(lever, "pipeline+generic") == 0)
		return LEVER_PIPELINE | LEVER_GENERIC;
	bench_die("unknown --lever %s (none, pipeline, literal, pipeline+literal, generic, pipeline+generic)",
		  lever);
}

// Prepares "bench_claim_lit": the claim with each `LIMIT $2` replaced by `LIMIT <batch>`.
// $2 stays a declared (unused) parameter so the call sites do not change.
static void
prepare_literal_claim(PGconn *c, int batch)
{
	const char *text = the_stmts[BRQ_STMT_CLAIM].text;
	char        lit[24];
	int         ll  = snprintf(lit, sizeof(lit), "LIMIT %d", batch);
	char       *sql = malloc(strlen(text) * 2 + 1), *o = sql;
	if (sql == NULL)
		bench_die("out of memory");
	int n = 0;
	for (const char *p = text; *p != '\0';) {
		if (strncmp(p, "LIMIT $2", 8) == 0) {
			memcpy(o, lit, (size_t) ll);
			o += ll;
			p += 8;
			n++;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	if (n == 0)
		bench_die("the claim statement has no `LIMIT $2` any more: update --lever literal");
	static const Oid types[5] = {1009, 20, 25, 2951, 20}; // text[], int8, text, uuid[], int8
	PGresult        *r        = PQprepare(c, "bench_claim_lit", sql, 5, types);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		bench_die("prepare bench_claim_lit: %s", PQerrorMessage(c));
	PQclear(r);
	free(sql);
}

// Reads one pipelined statement's result: dies unless it has `want` status.
static PGresult *
pipe_result(PGconn *c, ExecStatusType want, const char *what)
{
	PGresult *r = PQgetResult(c);
	if (PQresultStatus(r) != want)
		bench_die("pipeline %s: %s", what, PQerrorMessage(c));
	PGresult *end = PQgetResult(c); // NULL closes each statement's results
	if (end != NULL)
		bench_die("pipeline %s: unexpected extra result", what);
	return r;
}

// One claim loop, as a worker that settles its last batch and claims the next in one
// round trip: what op_claim() runs for a combined settle+claim request, BEGIN, the
// settle statement, the claim statement, COMMIT (one commit per round), until a
// claim finds nothing. With levers, the same statements sent differently.
static void *
drain_main(void *arg)
{
	raw_thread *t     = arg;
	int         b     = t->batch;
	int         lever = lever_flags(t->o->lever);
	brq_pgarr   sa[6], ca[2];
	for (int k = 0; k < 6; k++)
		brq_pgarr_init(&sa[k]);
	for (int k = 0; k < 2; k++)
		brq_pgarr_init(&ca[k]);
	uint8_t  *tokens   = malloc((size_t) b * BRQ_LEASE_LEN);
	uint8_t  *held_t   = malloc((size_t) b * BRQ_LEASE_LEN);
	int64_t  *held     = malloc((size_t) b * sizeof(*held));
	uint32_t *held_blk = malloc((size_t) b * sizeof(*held_blk));
	uint16_t *held_off = malloc((size_t) b * sizeof(*held_off));
	int       n_held   = 0;
	if (tokens == NULL || held_t == NULL || held == NULL || held_blk == NULL || held_off == NULL)
		bench_die("out of memory");
	char n_txt[16];
	snprintf(n_txt, sizeof(n_txt), "%d", b);
	const char *claim_name = the_stmts[BRQ_STMT_CLAIM].name;
	if (lever & LEVER_LITERAL) {
		prepare_literal_claim(t->c, b);
		claim_name = "bench_claim_lit";
	}
	if (lever & LEVER_GENERIC)
		bench_db_exec(t->c, "SET plan_cache_mode = force_generic_plan");
	if ((lever & LEVER_PIPELINE) && PQenterPipelineMode(t->c) != 1)
		bench_die("cannot enter pipeline mode");
	pthread_barrier_wait(t->bar);

	for (;;) {
		bool in_tx = n_held > 0;
		// The settle's parameters, as the gateway's store builds them for leases it
		// claimed: by row address (BRQ_STMT_SETTLE_AT, gateway/store/store_hint.h).
		// (7 slots: exec_stmt sends the statement's 7 parameters; the results, NULL.)
		const char *sv[7] = {NULL};
		int         sl[7] = {0}, sf[7] = {1, 1, 1, 1, 1, 1, 1};
		if (in_tx) {
			brq_pgarr_begin(&sa[0], BRQ_OID_INT8);
			brq_pgarr_begin(&sa[1], BRQ_OID_UUID);
			brq_pgarr_begin(&sa[2], BRQ_OID_TEXT);
			brq_pgarr_begin(&sa[3], BRQ_OID_TEXT);
			brq_pgarr_begin(&sa[4], BRQ_OID_INT8);
			brq_pgarr_begin(&sa[5], BRQ_OID_TID);
			for (int i = 0; i < n_held; i++) {
				brq_pgarr_int8(&sa[0], held[i]);
				brq_pgarr_uuid(&sa[1], held_t + (size_t) i * BRQ_LEASE_LEN);
				brq_pgarr_text(&sa[2], "done", 4);
				brq_pgarr_null(&sa[3]);
				brq_pgarr_int8(&sa[4], 0);
				brq_pgarr_tid(&sa[5], held_blk[i], held_off[i]);
			}
			for (int j = 0; j < 6; j++)
				arr_end(&sa[j], &sv[j], &sl[j]);
		}
		// The claim's, as op_claim() builds them: fresh random lease tokens.
		randombytes_buf(tokens, (size_t) b * BRQ_LEASE_LEN);
		brq_pgarr_begin(&ca[0], BRQ_OID_TEXT);
		brq_pgarr_text(&ca[0], t->topic, strlen(t->topic));
		brq_pgarr_begin(&ca[1], BRQ_OID_UUID);
		for (int i = 0; i < b; i++)
			brq_pgarr_uuid(&ca[1], tokens + (size_t) i * BRQ_LEASE_LEN);
		const char *cv[5];
		int         cl[5] = {0}, cf[5] = {1, 0, 0, 1, 0};
		arr_end(&ca[0], &cv[0], &cl[0]);
		arr_end(&ca[1], &cv[3], &cl[3]);
		cv[1] = n_txt;
		cv[2] = "bench";
		cv[4] = NULL;

		PGresult *sr = NULL, *r;
		int64_t   t0 = bench_now_ns(), t1;
		if (lever & LEVER_PIPELINE) {
			if ((in_tx && PQsendQueryParams(t->c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) != 1) ||
			    (in_tx &&
			     PQsendQueryPrepared(t->c, the_stmts[BRQ_STMT_SETTLE_AT].name, 6, sv, sl, sf,
						 0) != 1) ||
			    PQsendQueryPrepared(t->c, claim_name, 5, cv, cl, cf, 0) != 1 ||
			    (in_tx && PQsendQueryParams(t->c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) != 1) ||
			    PQpipelineSync(t->c) != 1)
				bench_die("pipeline send: %s", PQerrorMessage(t->c));
			if (in_tx) {
				PQclear(pipe_result(t->c, PGRES_COMMAND_OK, "BEGIN"));
				sr = pipe_result(t->c, PGRES_TUPLES_OK, "settle");
			}
			r = pipe_result(t->c, PGRES_TUPLES_OK, "claim");
			if (in_tx)
				PQclear(pipe_result(t->c, PGRES_COMMAND_OK, "COMMIT"));
			PGresult *sync = PQgetResult(t->c);
			if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC)
				bench_die("pipeline: no sync");
			PQclear(sync);
			t1 = bench_now_ns();
		} else {
			if (in_tx) {
				bench_db_exec(t->c, "BEGIN");
				sr = exec_stmt(t->c, BRQ_STMT_SETTLE_AT, sv, sl, sf);
			}
			t0 = bench_now_ns();
			r  = PQexecPrepared(t->c, claim_name, 5, cv, cl, cf, 0);
			if (PQresultStatus(r) != PGRES_TUPLES_OK)
				bench_die("claim: %s", PQerrorMessage(t->c));
			t1 = bench_now_ns();
		}
		if (in_tx) {
			if (PQntuples(sr) != n_held)
				bench_die("settle: %d of %d applied", PQntuples(sr), n_held);
			PQclear(sr);
			t->jobs += n_held;
			n_held = 0;
		}
		int rows = PQntuples(r);
		bench_samples_add(&t->lat, t1 - t0);
		for (int row = 0; row < rows; row++) {
			long rn = strtol(PQgetvalue(r, row, 5), NULL, 10);
			if (rn < 1 || rn > b)
				bench_die("claim: bad row number");
			held[row] = strtoll(PQgetvalue(r, row, 0), NULL, 10);
			if (sscanf(PQgetvalue(r, row, CLAIM_LOC), "(%" SCNu32 ",%" SCNu16 ")", &held_blk[row],
				   &held_off[row]) != 2)
				bench_die("claim: bad row address");
			memcpy(held_t + (size_t) row * BRQ_LEASE_LEN,
			       tokens + (size_t) (rn - 1) * BRQ_LEASE_LEN, BRQ_LEASE_LEN);
		}
		PQclear(r);
		if (in_tx && !(lever & LEVER_PIPELINE))
			bench_db_exec(t->c, "COMMIT");
		if (rows == 0)
			break;
		int64_t zero = 0;
		atomic_compare_exchange_strong(t->first_ns, &zero, t1);
		n_held = rows;
	}
	t->end_ns = bench_now_ns();
	if (lever & LEVER_PIPELINE)
		(void) PQexitPipelineMode(t->c);
	if (t->report_plans) {
		// Where the time goes: a statement re-planned on every call (custom plans)
		// pays the planner each time; a generic plan is planned once.
		PGresult *r = PQexec(t->c,
				     "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements"
				     " WHERE generic_plans + custom_plans > 0 ORDER BY name");
		for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); i++)
			fprintf(stderr,
				"brooq-bench: raw drain: statement %s: %s generic plans, %s custom plans\n",
				PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
		PQclear(r);
	}
	for (int j = 0; j < 6; j++)
		brq_pgarr_fini(&sa[j]);
	for (int j = 0; j < 2; j++)
		brq_pgarr_fini(&ca[j]);
	free(tokens);
	free(held_t);
	free(held);
	free(held_blk);
	free(held_off);
	return NULL;
}

double
bench_raw_drain_once(const bench_opts *o, PGconn *db, const char *topic, long jobs, int conns, int batch,
		     bench_cpu cpu[2])
{
	raw_thread       *t = calloc((size_t) conns, sizeof(*t));
	pthread_barrier_t bar;
	_Atomic int64_t   first = 0;
	pthread_barrier_init(&bar, NULL, (unsigned) conns + 1);
	for (int i = 0; i < conns; i++) {
		t[i] = (raw_thread) {.o            = o,
				     .c            = raw_connect(o),
				     .bar          = &bar,
				     .topic        = topic,
				     .batch        = batch,
				     .first_ns     = &first,
				     .report_plans = i == 0};
		if (pthread_create(&t[i].th, NULL, drain_main, &t[i]) != 0)
			bench_die("pthread_create");
	}
	bench_cpu_now(&cpu[0]);
	pthread_barrier_wait(&bar);
	long          done = 0;
	int64_t       end  = 0;
	bench_samples lat  = {0};
	for (int i = 0; i < conns; i++) {
		pthread_join(t[i].th, NULL);
		done += t[i].jobs;
		end = t[i].end_ns > end ? t[i].end_ns : end;
		bench_samples_merge(&lat, &t[i].lat);
		bench_samples_free(&t[i].lat);
	}
	bench_cpu_now(&cpu[1]);
	for (int i = 0; i < conns; i++)
		PQfinish(t[i].c);
	bench_sort(lat.v, lat.n);
	claim_p50_us       = (double) bench_pct(lat.v, lat.n, 0.5) / 1e3;
	raw_jobs_per_claim = lat.n > (size_t) conns ? (double) jobs / (double) (lat.n - (size_t) conns) : 0;
	bench_samples_free(&lat);
	if (done != jobs)
		bench_die("raw drain: %ld of %ld settled", done, jobs);
	bench_db_wait_drained(db, topic, jobs, o->discard);
	pthread_barrier_destroy(&bar);
	free(t);
	return (double) jobs / ((double) (end - first) / 1e9);
}

int
bench_raw_drain(const bench_opts *o)
{
	sql_init(o->discard);
	PGconn *db = bench_db_connect(o->dsn);
	if (o->terminal > 0) {
		bench_db_keep(db);
	} else {
		bench_db_reset(db);
	}
	const char *topic = o->discard ? BENCH_TOPIC_DISCARD : TOPIC_DRAIN;
	bench_db_fill(db, topic, o->jobs);
	PGconn *h = NULL;
	if (o->hold_xmin) {
		h = bench_db_connect(o->dsn);
		bench_db_exec(h, "BEGIN ISOLATION LEVEL REPEATABLE READ");
		bench_db_exec(h, "SELECT count(*) FROM job WHERE id = 1");
	}
	// The same shape as the gateway run: one claim loop per worker process, each
	// claiming as many jobs as the process has handler threads.
	bench_cpu cpu[2];
	double    rate = bench_raw_drain_once(o, db, topic, o->jobs, o->procs, o->threads, cpu);
	if (h != NULL)
		PQfinish(h);
	char scen[64];
	snprintf(scen, sizeof(scen), "drain_c%d%s", o->procs * o->threads, o->discard ? "_discard" : "");
	bench_result(o, scen, "raw", "rate", "jobs/s", rate);
	bench_result(o, scen, "raw", "claim_stmt_p50", "us", claim_p50_us);
	bench_result(o, scen, "raw", "jobs_per_claim", "jobs", raw_jobs_per_claim);
	bench_cpu_report(o, scen, "raw", &cpu[0], &cpu[1], (double) o->jobs);
	PQfinish(db);
	brq_store_sql_fini(the_texts);
	return 0;
}

// ---- growth: claim latency against the number of ready jobs ---------------------------------

int
bench_growth_claim(const bench_opts *o)
{
	sql_init(false);
	PGconn *db = bench_db_connect(o->dsn);
	bench_db_reset(db);
	if (o->cross) {
		// Another topic's backlog, older than every job of ours: our claims must
		// get past it in the claim index's (available_at, id) order.
		bench_db_fill(db, "bench.other", o->ready);
		bench_db_fill(db, TOPIC_DRAIN, 2000);
	} else {
		bench_db_fill(db, TOPIC_DRAIN, o->ready);
	}
	PGconn *c = raw_connect(o);
	if (o->lever != NULL)
		bench_die("claim-ready: no --lever");
	// 2,000 claim(1)+settle rounds (at most 10 s of them) on one connection: the
	// claim's latency is what grows, if anything, with the ready rows in front of it.
	bench_samples lat = {0};
	brq_pgarr     a[5];
	for (int k = 0; k < 5; k++)
		brq_pgarr_init(&a[k]);
	uint8_t tok[BRQ_LEASE_LEN];
	int64_t until = bench_now_ns() + 10 * 1000000000LL; // slow cases: 10 s of rounds is enough
	for (int round = 0; round < 2000 && (round < 20 || bench_now_ns() < until); round++) {
		randombytes_buf(tok, sizeof(tok));
		brq_pgarr_begin(&a[0], BRQ_OID_TEXT);
		brq_pgarr_text(&a[0], TOPIC_DRAIN, strlen(TOPIC_DRAIN));
		brq_pgarr_begin(&a[1], BRQ_OID_UUID);
		brq_pgarr_uuid(&a[1], tok);
		// 6 slots: the settle below sends its statement's 6 parameters (results NULL).
		const char *v[6] = {NULL};
		int         l[6] = {0}, f[5] = {1, 0, 0, 1, 0};
		arr_end(&a[0], &v[0], &l[0]);
		arr_end(&a[1], &v[3], &l[3]);
		v[1]         = "1";
		v[2]         = "bench";
		v[4]         = NULL;
		int64_t   t0 = bench_now_ns();
		PGresult *r  = exec_stmt(c, BRQ_STMT_CLAIM, v, l, f);
		bench_samples_add(&lat, bench_now_ns() - t0);
		if (PQntuples(r) != 1)
			bench_die("claim: no job among %ld ready", o->ready);
		int64_t id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
		brq_pgarr_begin(&a[0], BRQ_OID_INT8);
		brq_pgarr_int8(&a[0], id);
		brq_pgarr_begin(&a[1], BRQ_OID_UUID);
		brq_pgarr_uuid(&a[1], tok);
		brq_pgarr_begin(&a[2], BRQ_OID_TEXT);
		brq_pgarr_text(&a[2], "done", 4);
		brq_pgarr_begin(&a[3], BRQ_OID_TEXT);
		brq_pgarr_null(&a[3]);
		brq_pgarr_begin(&a[4], BRQ_OID_INT8);
		brq_pgarr_int8(&a[4], 0);
		int fs[6] = {1, 1, 1, 1, 1, 1};
		for (int j = 0; j < 5; j++)
			arr_end(&a[j], &v[j], &l[j]);
		v[5] = NULL;
		r    = exec_stmt(c, BRQ_STMT_SETTLE, v, l, fs);
		PQclear(r);
	}
	char scen[64];
	snprintf(scen, sizeof(scen), "claim_ready_%ld%s", o->ready, o->cross ? "_other_topic" : "");
	bench_sort(lat.v, lat.n);
	bench_result(o, scen, "raw", "claim_p50", "us", (double) bench_pct(lat.v, lat.n, 0.5) / 1e3);
	bench_result(o, scen, "raw", "claim_p99", "us", (double) bench_pct(lat.v, lat.n, 0.99) / 1e3);
	for (int j = 0; j < 5; j++)
		brq_pgarr_fini(&a[j]);
	bench_samples_free(&lat);
	PQfinish(c);
	PQfinish(db);
	brq_store_sql_fini(the_texts);
	return 0;
}
