/* SPDX-License-Identifier: MIT */
/* The console's history (issue 28.4) and workers (28.7): the waits' buckets and percentiles as
 * units, the history writer against PostgreSQL (two gateways adding up, the backlog, a failed
 * write carried, the pruning), and the API of both against a real gateway. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "background/history.h"
#include "brq_clock.h"
#include "gw.h"
#include "metrics/metrics.h"
#include "rawhttp.h"
#include "store/store.h"
#include "tclient.h"
#include "testdb.h"
#include "tutil.h"

/* ---- units: the waits' buckets ---------------------------------------------------------------- */

Test(wait, buckets_are_upper_bounds_and_the_last_holds_the_rest)
{
	static const struct {
		uint64_t ms;
		unsigned bucket;
	} cases[] = {{0, 0},   {1, 0},     {2, 1},          {3, 2},          {150, 7},        {200, 7},
		     {201, 8}, {3000, 11}, {100000000, 24}, {100000001, 25}, {UINT64_MAX, 25}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(brq_wait_bucket(cases[i].ms), cases[i].bucket, "%llu ms",
			     (unsigned long long) cases[i].ms);
}

Test(wait, quantiles_interpolate_inside_their_bucket)
{
	uint64_t h[BRQ_WAIT_BUCKETS] = {0};
	cr_assert_eq(brq_wait_quantile(h, 0.5), -1, "nothing counted: no quantile");
	h[7] = 100; /* 100 waits in (100, 200] ms */
	cr_assert_float_eq(brq_wait_quantile(h, 0.5), 150, 0.001);
	cr_assert_float_eq(brq_wait_quantile(h, 0.99), 199, 0.001);
	h[11] = 2; /* and 2 in (2000, 5000] */
	cr_assert_float_eq(brq_wait_quantile(h, 0.5), 151, 0.001);
	cr_assert_gt(brq_wait_quantile(h, 0.99), 2000);
	cr_assert_leq(brq_wait_quantile(h, 0.99), 5000);
	uint64_t over[BRQ_WAIT_BUCKETS] = {0};
	over[BRQ_WAIT_BUCKETS - 1]      = 1;
	cr_assert_float_eq(brq_wait_quantile(over, 0.5), 100000000, 0.001,
			   "beyond the last bound: that bound");
}

/* ---- the writer against PostgreSQL ------------------------------------------------------------ */

static char      *dsn;
static PGconn    *db;
static brq_config cfg;
static brq_store *store;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	free(cfg.dsn);
	cfg.dsn = strdup(dsn);
	cr_assert_eq(brq_store_new(&cfg, &store), 0);
	cr_assert_eq(brq_metrics_init("test"), 0);
}

static void
teardown(void)
{
	brq_metrics_fini();
	brq_store_free(store);
	brq_config_fini(&cfg);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(history, .init = setup, .fini = teardown, .timeout = 60);

/* A writer without its thread: one connection; what a gateway's thread does each round. */
static void
writer_init(brq_history *h)
{
	memset(h, 0, sizeof(*h));
	cr_assert_eq(brq_bgthread_init(&h->bg, store,
				       &(brq_store_conn_opts) {.name = "test", .role = BRQ_STORE_JANITOR}),
		     0);
}

static void
writer_fini(brq_history *h)
{
	brq_history_stop(h); /* no thread: releases the connection and the base */
}

/* The minute of now (unix ms), as the thread computes it. */
static int64_t
this_minute(void)
{
	int64_t now = (int64_t) brq_wall_ms();
	return now - now % 60000;
}

static long long
row_int(const char *col, const char *topic)
{
	return brq_testdb_intf(db, "SELECT coalesce(sum(%s), -1) FROM job_history WHERE topic = '%s'", col,
			       topic);
}

/* Two gateways each count their own starts (the same process's registry stands for both:
 * each writer adds what it has not written yet) and their rows add up; counts come from
 * the counters, so jobs deleted since (discard_done, retention) still count. */
Test(history, two_gateways_add_up_their_counts_and_their_waits)
{
	brq_metrics_claimed("mail.out", 8, 150);
	brq_metrics_claimed("mail.out", 8, 150);
	brq_metrics_claimed("mail.out", 8, 3000);
	brq_metrics_settle("mail.out", 8, BRQ_OUTCOME_DONE, 2);
	int64_t     m = this_minute();
	brq_history a, b;
	writer_init(&a);
	writer_init(&b);
	cr_assert_eq(brq_history_write(&a, m), 0);
	cr_assert_eq(row_int("started", "mail.out"), 3);
	cr_assert_eq(row_int("finished", "mail.out"), 2);
	cr_assert_eq(brq_history_write(&b, m), 0);
	cr_assert_eq(row_int("started", "mail.out"), 6, "the second gateway's starts are added");
	cr_assert_eq(row_int("finished", "mail.out"), 4);
	cr_assert_eq(brq_history_write(&a, m), 0);
	cr_assert_eq(row_int("started", "mail.out"), 6, "nothing new: nothing added");
	brq_metrics_claimed("mail.out", 8, 10);
	cr_assert_eq(brq_history_write(&a, m), 0);
	cr_assert_eq(row_int("started", "mail.out"), 7);
	char *hist = brq_testdb_value(db, "SELECT wait_hist::text FROM job_history WHERE topic = 'mail.out'");
	cr_assert_str_eq(hist, "{0,0,0,1,0,0,0,4,0,0,0,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0}");
	free(hist);

	/* Read back as the console does: one row, the waits' percentiles from the sum. */
	brq_store_conn c;
	brq_store_conn_init(&c, store, &(brq_store_conn_opts) {.name = "read", .role = BRQ_STORE_POOL});
	cr_assert(brq_store_ready(&c));
	brq_store_history_row *rows;
	uint32_t               n;
	cr_assert_eq(brq_store_history_read(&c, (brq_str) {.ptr = "mail.out", .len = 8}, m - 3600000,
					    m + 60000, &rows, &n),
		     0);
	cr_assert_eq(n, 1);
	cr_assert_eq(rows[0].minute_ms, m);
	cr_assert_eq(rows[0].started, 7);
	cr_assert_eq(rows[0].n_wait, BRQ_WAIT_BUCKETS);
	double p50 = brq_wait_quantile(rows[0].wait, 0.5);
	cr_assert(p50 > 100 && p50 <= 200, "p50 %f", p50);
	brq_store_reset(&c);
	brq_store_conn_fini(&c);
	writer_fini(&a);
	writer_fini(&b);
}

Test(history, the_backlog_is_counted_and_reads_zero_once_empty)
{
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 'depth.t' FROM generate_series(1, 3)");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, available_at) SELECT 'depth.t', now() + interval '1 hour'"
			" FROM generate_series(1, 2)");
	brq_testdb_exec(db, "INSERT INTO job (topic, state, attempts) VALUES ('depth.t', 'failed', 1)");
	int64_t     m = this_minute();
	brq_history h;
	writer_init(&h);
	cr_assert_eq(brq_history_write(&h, m), 0);
	cr_assert_eq(row_int("pending", "depth.t"), 6, "pending and failed, delayed ones too");
	cr_assert_eq(row_int("ready", "depth.t"), 4, "of them, those due");
	brq_testdb_exec(db, "DELETE FROM job");
	cr_assert_eq(brq_history_write(&h, m), 0);
	cr_assert_eq(row_int("pending", "depth.t"), 0, "the backlog emptied within the minute");
	cr_assert_eq(row_int("ready", "depth.t"), 0);
	writer_fini(&h);
}

/* A write the database refuses keeps its counts for the next one. */
Test(history, a_failed_write_is_carried_into_the_next)
{
	brq_testdb_exec(db,
			"CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
			" $$BEGIN RAISE EXCEPTION 'refused'; END$$");
	brq_testdb_exec(
		db,
		"CREATE TRIGGER refuse BEFORE INSERT ON job_history FOR EACH ROW EXECUTE FUNCTION refuse()");
	brq_metrics_claimed("carry", 5, 0);
	int64_t     m = this_minute();
	brq_history h;
	writer_init(&h);
	cr_assert_neq(brq_history_write(&h, m), 0);
	cr_assert_eq(row_int("started", "carry"), -1, "nothing written");
	brq_testdb_exec(db, "DROP TRIGGER refuse ON job_history");
	brq_metrics_claimed("carry", 5, 0);
	cr_assert_eq(brq_history_write(&h, m), 0);
	cr_assert_eq(row_int("started", "carry"), 2, "both starts, the refused write's too");
	writer_fini(&h);
}

Test(history, pruning_keeps_the_last_day_and_its_margin)
{
	brq_testdb_exec(db,
			"INSERT INTO job_history (topic, minute, started) VALUES"
			" ('p', date_trunc('minute', now() - interval '26 hours'), 1),"
			" ('p', date_trunc('minute', now() - interval '24 hours'), 2),"
			" ('p', date_trunc('minute', now()), 3)");
	brq_store_conn c;
	brq_store_conn_init(&c, store, &(brq_store_conn_opts) {.name = "prune", .role = BRQ_STORE_JANITOR});
	cr_assert(brq_store_ready(&c));
	uint32_t deleted = 0;
	cr_assert_eq(brq_store_history_prune(&c, BRQ_HISTORY_KEEP_MS, &deleted), 0);
	cr_assert_eq(deleted, 1);
	brq_store_reset(&c);
	brq_store_conn_fini(&c);
	cr_assert_eq(row_int("started", "p"), 5);
}

/* ---- the API against a real gateway ------------------------------------------------------------ */

typedef struct api_gw {
	brq_gw   gw;
	char    *dsn;
	uint16_t port;
	char     cookie[128];
	char     csrf[128];
} api_gw;

/* The reaper runs at start, then once an hour here: a lease planted expired after its
 * first round stays for the test to see. sql (NULL: none) runs before the gateway starts. */
static void
api_start(api_gw *a, const char *sql)
{
	static const char *const env[] = {"BROOQ_POLL_INTERVAL=100ms", "BROOQ_REAPER_INTERVAL=1h", NULL};
	brq_http_reply           r;
	a->dsn = brq_testdb_create(true);
	if (sql != NULL) {
		PGconn *pg = brq_testdb_connect(a->dsn);
		brq_testdb_exec(pg, sql);
		PQfinish(pg);
	}
	a->port = brq_gw_start_http(&a->gw, a->dsn, env);
	brq_gw_await_log(&a->gw, "msg=console_ready", 1, 10000);
	brq_http_sign_in(a->port, a->gw.worker_token, a->cookie, a->csrf, &r);
}

static void
api_stop(api_gw *a)
{
	brq_gw_stop(&a->gw);
	brq_testdb_drop(a->dsn);
}

static void
api_get(api_gw *a, const char *path, int want, brq_http_reply *r)
{
	brq_http(a->port, "GET", path, a->cookie, NULL, r);
	cr_assert_eq(r->status, want, "GET %s: %d %s", path, r->status, r->body);
}

/* Steps of the chart from the table: every step present, minutes added up, waits as
 * percentiles; parameters refused by name. Read-only (worker) sessions may read it. */
Test(api, history_gives_every_step_with_the_minutes_added_up, .timeout = 120)
{
	api_gw         a;
	brq_http_reply r;
	api_start(&a, NULL);
	PGconn *pg = brq_testdb_connect(a.dsn);
	/* Two minutes ago: 30 starts, 150 ms waits; five minutes ago a backlog of 7 (3 ready). */
	brq_testdb_exec(
		pg,
		"INSERT INTO job_history (topic, minute, started, finished, pending, ready, wait_hist)"
		" VALUES ('h.t', date_trunc('minute', now()) - interval '2 minutes', 30, 29, 0, 0,"
		" '{0,0,0,0,0,0,0,30,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}'),"
		" ('h.t', date_trunc('minute', now()) - interval '5 minutes', 0, 0, 7, 3, NULL),"
		" ('h.t', date_trunc('minute', now()) - interval '2 days', 99, 99, 0, 0, NULL)");
	PQfinish(pg);
	api_get(&a, "/console/api/history?topic=h.t", 200, &r);
	cr_assert_not_null(
		strstr(r.body, "{\"topic\":\"h.t\",\"window_ms\":3600000,\"step_ms\":60000,\"from_ms\":"),
		"%s", r.body);
	cr_assert_eq(brq_gw_count(r.body, "{\"at_ms\":"), 60, "%s", r.body);
	cr_assert_not_null(strstr(r.body,
				  "\"started_per_min\":30.000,\"finished_per_min\":29.000,\"pending\":0,"
				  "\"ready\":0,\"wait_p50_ms\":150,\"wait_p99_ms\":199}"),
			   "%s", r.body);
	cr_assert_not_null(strstr(r.body,
				  "\"started_per_min\":0.000,\"finished_per_min\":0.000,\"pending\":7,"
				  "\"ready\":3,\"wait_p50_ms\":null,\"wait_p99_ms\":null}"),
			   "%s", r.body);
	cr_assert_null(strstr(r.body, "99.000"), "two days ago is not in the hour: %s", r.body);
	/* A day: 288 steps of five minutes, the 30 starts averaged over theirs. */
	api_get(&a, "/console/api/history?topic=h.t&window=24h", 200, &r);
	cr_assert_eq(brq_gw_count(r.body, "{\"at_ms\":"), 288, "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"started_per_min\":6.000"), "%s", r.body);
	api_get(&a, "/console/api/history", 400, &r);
	cr_assert_not_null(strstr(r.body, "topic: required"), "%s", r.body);
	api_get(&a, "/console/api/history?topic=h.t&window=2h", 400, &r);
	cr_assert_not_null(strstr(r.body, "window: must be 1h or 24h"), "%s", r.body);
	api_get(&a, "/console/api/history?topic=Bad", 400, &r);
	api_stop(&a);
}

/* The gateway's own history thread writes a start claimed through it (within its period). */
Test(api, a_start_through_the_gateway_reaches_the_history, .timeout = 120)
{
	api_gw         a;
	brq_http_reply r;
	api_start(&a, NULL);
	PGconn *pg = brq_testdb_connect(a.dsn);
	brq_testdb_exec(pg, "INSERT INTO job (topic) VALUES ('h.run')");
	/* Claimed as a worker claims, through the RPC. */
	brooq_client     *wc       = brq_t_client_open(a.gw.url, a.gw.worker_token_file, 10000);
	const char *const topics[] = {"h.run"};
	brooq_claim_opts  o        = BROOQ_CLAIM_OPTS_INIT;
	brooq_job       **jobs     = NULL;
	size_t            n        = 0;
	o.topics                   = topics;
	o.n_topics                 = 1;
	o.max_jobs                 = 1;
	BRQ_OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 1);
	brooq_jobs_free(jobs, n);
	brooq_client_close(wc);
	for (int waited = 0;
	     brq_testdb_int(pg, "SELECT coalesce(sum(started), 0) FROM job_history WHERE topic = 'h.run'") ==
	     0;
	     waited += 100) {
		cr_assert_lt(waited, 3 * BRQ_HISTORY_FLUSH_MS + 10000, "no history row after %d ms", waited);
		brq_t_sleep_ms(100);
	}
	PQfinish(pg);
	api_get(&a, "/console/api/history?topic=h.run", 200, &r);
	cr_assert_not_null(strstr(r.body, "\"started_per_min\":1.000"), "%s", r.body);
	api_stop(&a);
}

/* Workers: the holders of processing jobs, with the leases run out that wait for the reaper. */
Test(api, workers_lists_the_holders_and_their_expired_leases, .timeout = 120)
{
	api_gw         a;
	brq_http_reply r;
	api_start(&a,
		  "INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token)"
		  " VALUES ('w.z', 'processing', 1, 'gone', now() - interval '1 second', gen_random_uuid())");
	PGconn *pg = brq_testdb_connect(a.dsn);
	/* Once the lease planted expired before the start is taken back, the reaper's one
	 * round is past. */
	for (int waited = 0; brq_testdb_int(pg, "SELECT count(*) FROM job WHERE state = 'processing'") > 0;
	     waited += 50) {
		cr_assert_lt(waited, 30000, "the reaper's first round never came");
		brq_t_sleep_ms(50);
	}
	/* host-1/42's first lease ran out 5 s ago. */
	brq_testdb_exec(
		pg,
		"INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token, claimed_at)"
		" VALUES ('w.a', 'processing', 1, 'host-1/42', now() - interval '5 seconds', "
		"gen_random_uuid(),"
		" now() - interval '10 seconds'),"
		" ('w.b', 'processing', 1, 'host-1/42', now() + interval '2 minutes', gen_random_uuid(), "
		"now()),"
		" ('w.a', 'processing', 1, 'host-2/7', now() + interval '1 minute', gen_random_uuid(), "
		"now())");
	PQfinish(pg);
	api_get(&a, "/console/api/workers", 200, &r);
	cr_assert_not_null(strstr(r.body,
				  "\"workers\":[{\"worker\":\"host-1/42\",\"jobs\":2,\"lease_expired\":1,"
				  "\"oldest_claim_ms\":"),
			   "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"topics\":[\"w.a\",\"w.b\"],\"n_topics\":2}"), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "{\"worker\":\"host-2/7\",\"jobs\":1,"), "%s", r.body);
	api_get(&a, "/console/api/worker_jobs?worker=host-1/42", 200, &r);
	cr_assert_eq(brq_gw_count(r.body, "\"locked_by\":\"host-1/42\""), 2, "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"at_ms\":"), "%s", r.body);
	api_get(&a, "/console/api/worker_jobs", 400, &r);
	cr_assert_not_null(strstr(r.body, "worker: required"), "%s", r.body);
	api_stop(&a);
}
