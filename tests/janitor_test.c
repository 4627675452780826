/* SPDX-License-Identifier: MIT */
/* Reaper and retention (SPEC §4), run directly against PostgreSQL. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "background/janitor.h"
#include "brq_clock.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "testdb.h"
#include "tutil.h"

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
	cfg.dsn                   = strdup(dsn);
	cfg.retention_ttl_ms      = 24ull * 3600 * 1000;
	cfg.retention_batch       = 10;
	cfg.retention_max_batches = 100;
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

TestSuite(janitor, .init = setup, .fini = teardown, .timeout = 60);

/* A janitor struct usable without its thread: one connection, no timers. */
static void
janitor_init(brq_janitor *j)
{
	memset(j, 0, sizeof(*j));
	j->cfg = &cfg;
	cr_assert_eq(brq_bgthread_init(&j->bg, store,
				       &(brq_store_conn_opts) {.name = "test", .role = BRQ_STORE_JANITOR}),
		     0);
}

static void
janitor_fini(brq_janitor *j)
{
	brq_bgthread_stop(&j->bg); /* no thread: releases the connection, lock and condition variable */
}

Test(janitor, reaps_only_expired_leases_and_keeps_attempts)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token)"
			" SELECT 'r', 'processing', 3, 'w', now() - interval '1 second', gen_random_uuid()"
			" FROM generate_series(1, 25)");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token)"
			" VALUES ('r', 'processing', 1, 'w', now() + interval '1 hour', gen_random_uuid())");
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_reap(&j), 25);
	cr_assert_eq(brq_janitor_reap(&j), 0, "reaping is not idempotent");
	janitor_fini(&j);
	cr_assert_eq(
		brq_testdb_int(db,
			       "SELECT count(*) FROM job WHERE state = 'pending' AND attempts = 3"
			       " AND locked_by IS NULL AND lease_token IS NULL AND available_at <= now()"),
		25);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing'"), 1);
}

Test(janitor, a_reaped_job_keeps_its_place_in_line)
{
	/* Invariant 11: reaping does not move a job back in line. The reaped job was
	 * ready an hour ago; 100 jobs queued since then must not go before it. */
	brq_testdb_exec(
		db,
		"INSERT INTO job (topic, state, attempts, available_at, locked_by, locked_until, lease_token)"
		" VALUES ('line', 'processing', 1, now() - interval '1 hour', 'w', now() - interval '1 "
		"second',"
		" gen_random_uuid())");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, available_at) SELECT 'line', now() - interval '1 minute'"
			" FROM generate_series(1, 100)");
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_reap(&j), 1);
	janitor_fini(&j);
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM job WHERE state = 'pending'"
				    " AND available_at < now() - interval '59 minutes'"),
		     1, "the reaped job's available_at changed");
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT attempts FROM job WHERE state = 'pending'"
				    " ORDER BY available_at, id LIMIT 1"),
		     1, "the reaped job is not first in line");
}

static brq_janitor pair[2];
static int64_t     reaped[2];

static void *
reap_one(void *arg)
{
	int i     = (int) (intptr_t) arg;
	reaped[i] = brq_janitor_reap(&pair[i]);
	return NULL;
}

Test(janitor, two_gateways_reaping_at_once_reap_each_row_once)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, locked_by, locked_until, lease_token)"
			" SELECT 'r', 'processing', 'w', now() - interval '1 second', gen_random_uuid()"
			" FROM generate_series(1, 5000)");
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		janitor_init(&pair[i]);
		cr_assert(brq_store_ready(&pair[i].bg.conn));
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, reap_one, (void *) (intptr_t) i);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		janitor_fini(&pair[i]);
	}
	cr_assert_eq(reaped[0] + reaped[1], 5000, "reaped %lld + %lld", (long long) reaped[0],
		     (long long) reaped[1]);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'pending'"), 5000);
}

Test(janitor, retention_deletes_only_old_terminal_rows_in_batches)
{
	/* 35 old terminal rows, plus rows that must survive: recent terminal ones and
	 * old active ones (active rows are never deleted, however old). */
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, updated_at)"
			" SELECT 'x', (ARRAY['done','dead','canceled'])[1 + g % 3], now() - interval '2 days'"
			" FROM generate_series(1, 35) g");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, updated_at)"
			" SELECT 'x', 'done', now() - interval '1 hour' FROM generate_series(1, 5)");
	brq_testdb_exec(
		db,
		"INSERT INTO job (topic, state, updated_at)"
		" SELECT 'x', s, now() - interval '90 days' FROM unnest(ARRAY['pending','failed']) s");
	brq_testdb_exec(
		db,
		"INSERT INTO job (topic, state, updated_at, locked_by, locked_until, lease_token)"
		" VALUES ('x', 'processing', now() - interval '90 days', 'w', now(), gen_random_uuid())");
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_retain(&j), 35);
	cr_assert_eq(brq_janitor_retain(&j), 0);
	janitor_fini(&j);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state IN ('done','dead','canceled')"),
		     5);
	cr_assert_eq(brq_testdb_int(
			     db, "SELECT count(*) FROM job WHERE state IN ('pending','failed','processing')"),
		     3);
}

Test(janitor, retention_stops_after_the_batch_limit_of_a_tick)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, updated_at)"
			" SELECT 'x', 'done', now() - interval '2 days' FROM generate_series(1, 50)");
	cfg.retention_max_batches = 2; /* 2 batches of 10 per tick */
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_retain(&j), 20);
	cr_assert_eq(brq_janitor_retain(&j), 20);
	cr_assert_eq(brq_janitor_retain(&j), 10);
	janitor_fini(&j);
}

Test(janitor, retention_ttl_zero_deletes_nothing)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, updated_at)"
			" SELECT 'x', 'done', now() - interval '3650 days' FROM generate_series(1, 20)");
	cfg.retention_ttl_ms = 0;
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_retain(&j), 0);
	janitor_fini(&j);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 20);
}

Test(janitor, retention_frees_the_idempotency_key)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, idempotency_key, updated_at)"
			" VALUES ('x', 'done', 'k', now() - interval '2 days')");
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_retain(&j), 1);
	janitor_fini(&j);
	brq_testdb_exec(db, "INSERT INTO job (topic, idempotency_key) VALUES ('x', 'k')");
}

/* Counts the lines of file f that hold s. */
static int
lines_with(const char *f, const char *s)
{
	FILE *in = fopen(f, "r");
	char  line[1024];
	int   n = 0;
	while (in != NULL && fgets(line, sizeof(line), in) != NULL)
		n += strstr(line, s) != NULL;
	if (in != NULL)
		fclose(in);
	return n;
}

/* A janitor thread retaining 2 batches of 10 rows a tick, an hour apart, its log in a
 * file (log_path, read by lines_with once janitor_run_stop has returned). */
typedef struct janitor_run {
	brq_janitor j;
	char        log_path[32];
	int         log_fd;
} janitor_run;

static void
janitor_run_start(janitor_run *r)
{
	snprintf(r->log_path, sizeof(r->log_path), "/tmp/janitor_test_log.XXXXXX");
	r->log_fd = mkstemp(r->log_path);
	cr_assert_geq(r->log_fd, 0);
	brq_log_set_fd(r->log_fd);
	cfg.retention_interval_ms = 3600 * 1000;
	cfg.retention_max_batches = 2;
	cr_assert_eq(brq_janitor_start(&r->j, &cfg, store), 0);
}

static void
janitor_run_stop(janitor_run *r)
{
	brq_janitor_stop(&r->j);
	brq_log_set_fd(STDERR_FILENO);
	close(r->log_fd);
}

/* Retention that ends a tick with expired rows left does not wait a whole interval
 * for the next: at 20 rows a tick and an hour between ticks, 300 expired rows would take
 * 15 hours; catching up, they are gone in seconds. Rows a day past their TTL are a
 * backlog worth one warning (not one per early tick), and a line when it is gone. */
Test(janitor, retention_that_is_behind_ticks_early_until_the_backlog_is_gone)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, updated_at)"
			" SELECT 'x', 'done', now() - interval '2 days' FROM generate_series(1, 300)");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, updated_at)"
			" SELECT 'x', 'done', now() - interval '1 hour' FROM generate_series(1, 5)");
	janitor_run r;
	janitor_run_start(&r);
	long long left = brq_testdb_wait_int(
		db, 0, 20000, "SELECT count(*) FROM job WHERE updated_at < now() - interval '1 day'");
	/* The tick after the last full one finds less than a batch: caught up. */
	for (int i = 0; i < 1000 && lines_with(r.log_path, "msg=retention_caught_up") == 0; i++)
		brq_t_sleep_ms(10);
	janitor_run_stop(&r);
	int caught   = lines_with(r.log_path, "msg=retention_caught_up"),
	    warned   = lines_with(r.log_path, "msg=retention_backlog");
	int said_all = lines_with(r.log_path, "msg=retention_caught_up jobs=300 ");
	unlink(r.log_path);
	cr_assert_eq(left, 0, "%lld expired rows left after 20 s", left);
	cr_assert_eq(caught, 1, "retention_caught_up logged %d times", caught);
	cr_assert_eq(said_all, 1, "retention_caught_up does not count the 300 rows");
	cr_assert_eq(warned, 1, "retention_backlog logged %d times while behind for one interval", warned);
	cr_assert(r.j.retention_behind_since_ms == 0 && r.j.next_retention_ms > brq_now_ms() + 3000 * 1000,
		  "retention did not go back to its interval after catching up");
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 5, "a row not expired was deleted");
}

/* Behind by less than an interval is a busy queue's steady state (every tick ends at its
 * limit, the next finds rows that expired meanwhile): retention ticks early, and says
 * nothing. */
Test(janitor, retention_behind_by_less_than_an_interval_catches_up_without_a_warning)
{
	brq_testdb_exec(
		db,
		"INSERT INTO job (topic, state, updated_at)"
		" SELECT 'x', 'done', now() - interval '1 day 30 seconds' FROM generate_series(1, 300)");
	janitor_run r;
	janitor_run_start(&r);
	long long left = brq_testdb_wait_int(db, 0, 20000, "SELECT count(*) FROM job");
	janitor_run_stop(&r);
	int warned = lines_with(r.log_path, "msg=retention_backlog"),
	    caught = lines_with(r.log_path, "msg=retention_caught_up");
	unlink(r.log_path);
	cr_assert_eq(left, 0, "%lld expired rows left after 20 s", left);
	cr_assert_eq(warned, 0, "warned of a backlog 30 s past its TTL with a 1 h interval");
	cr_assert_eq(caught, 0, "said caught up with no backlog warned of");
}

/* Stop abandons a statement stuck on a lock (janitor.h): a migration holding ACCESS
 * EXCLUSIVE on job must not keep a stopping gateway waiting (for the connection's
 * 5 s prepare deadline, or the pool's 30 s statement timeout once connected). The
 * janitor's connection had no stop flag: stop waited it out. */
Test(janitor, stop_abandons_a_statement_stuck_on_a_lock)
{
	PGconn *locker = brq_testdb_connect(dsn);
	brq_testdb_exec(locker, "BEGIN");
	brq_testdb_exec(locker, "LOCK TABLE job IN ACCESS EXCLUSIVE MODE");
	brq_janitor j;
	cr_assert_eq(brq_janitor_start(&j, &cfg, store), 0);
	long long waiting = brq_testdb_wait_int(db, 1, 10000,
						"SELECT count(*) FROM pg_stat_activity WHERE datname ="
						" current_database() AND wait_event_type = 'Lock'");
	cr_assert_eq(waiting, 1, "the janitor never waited on the lock");
	double t0 = brq_t_now_ms();
	brq_janitor_stop(&j);
	double took = brq_t_now_ms() - t0;
	brq_testdb_exec(locker, "ROLLBACK");
	PQfinish(locker);
	cr_expect_lt(took, 2000.0, "stop took %.0f ms", took);
}
