/* SPDX-License-Identifier: MIT */
/* The monitor's table gauges against a real PostgreSQL (issue 30): dead tuples rise when
 * rows are deleted and fall after VACUUM, the size follows the table, the last vacuum's
 * age starts again, and the oldest transaction's age grows while another connection
 * holds a snapshot or a transaction id, and is 0 while nothing does. Every wait is for a
 * state, never a fixed pause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "background/monitor.h"
#include "config/config.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "testdb.h"

static uint64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* The value of the unlabelled sample `name` in a fresh exposition; -1 when absent. */
static double
gauge(const char *name)
{
	char  *t;
	size_t len, n = strlen(name);
	double v = -1;
	cr_assert_eq(brq_metrics_render(&t, &len), 0);
	for (const char *p = t; p != NULL && *p != '\0';) {
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			v = strtod(p + n + 1, NULL);
			break;
		}
		p = strchr(p, '\n');
		p = p != NULL ? p + 1 : NULL;
	}
	free(t);
	return v;
}

enum cmp { AT_LEAST, AT_MOST, BELOW, EQUAL };

/* Waits up to timeout_ms until gauge `name` compares to want as asked; returns the last
 * value seen (-1: never rendered). */
static double
await_gauge(const char *name, enum cmp how, double want, uint64_t timeout_ms)
{
	uint64_t end = mono_ms() + timeout_ms;
	for (;;) {
		double v  = gauge(name);
		bool   ok = v >= 0 &&
			(how == AT_LEAST          ? v >= want
				 : how == AT_MOST ? v <= want
				 : how == BELOW   ? v < want
						  : v == want);
		if (ok || mono_ms() > end)
			return v;
		usleep(20 * 1000);
	}
}

static char        *dsn;
static PGconn      *db;
static brq_config   cfg;
static brq_store   *store;
static brq_monitor *mon;

static void
setup(void)
{
	cr_assert_eq(brq_metrics_init("9.9.9"), 0);
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	/* Only this test's VACUUM may clean the table: autovacuum would race the figures. */
	brq_testdb_exec(db, "ALTER TABLE job SET (autovacuum_enabled = off)");
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	free(cfg.dsn);
	cfg.dsn = strdup(dsn);
	cr_assert_eq(brq_store_new(&cfg, &store), 0);
	brq_monitor_opts o = {.interval_ms = 100, .terminal_interval_ms = 100};
	cr_assert_eq(brq_monitor_start(store, &o, &mon), 0);
	/* The first read: every table gauge has a sample. */
	cr_assert_geq(await_gauge("brooq_db_oldest_transaction_age_seconds", AT_LEAST, 0, 10000), 0,
		      "the monitor never published the table gauges");
}

static void
teardown(void)
{
	brq_monitor_stop(mon);
	brq_store_free(store);
	brq_config_fini(&cfg);
	PQfinish(db);
	brq_testdb_drop(dsn);
	brq_metrics_fini();
}

TestSuite(vacuum_metrics, .init = setup, .fini = teardown, .timeout = 120);

Test(vacuum_metrics, dead_tuples_rise_with_deletes_and_fall_after_vacuum)
{
	double size0 = gauge("brooq_job_table_size_bytes");
	cr_assert_gt(size0, 0);
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, attempts) SELECT 'old', 'done', 1"
			" FROM generate_series(1, 20000)");
	/* The size is read from the files at each round; the tuple counts when the
	 * inserting backend has reported its statistics (within about a second). */
	double size1 = await_gauge("brooq_job_table_size_bytes", AT_LEAST, size0 + 1, 10000);
	cr_assert_gt(size1, size0);
	double idx = gauge("brooq_job_table_index_size_bytes");
	cr_assert(idx > 0 && idx < size1, "indexes %f of %f bytes", idx, size1);
	cr_assert_geq(await_gauge("brooq_job_table_live_tuples", AT_LEAST, 20000, 10000), 20000);

	brq_testdb_exec(db, "DELETE FROM job WHERE topic = 'old' AND id % 2 = 0");
	cr_assert_geq(await_gauge("brooq_job_table_dead_tuples", AT_LEAST, 10000, 10000), 10000);
	cr_assert_leq(gauge("brooq_job_table_live_tuples"), 10000);

	/* Before this VACUUM the age counts from the server's start and only grows; the
	 * VACUUM starts it again. */
	double vac0 = gauge("brooq_job_table_last_vacuum_age_seconds");
	cr_assert_geq(vac0, 0);
	brq_testdb_exec(db, "VACUUM job");
	cr_assert_eq(await_gauge("brooq_job_table_dead_tuples", EQUAL, 0, 10000), 0);
	double vac1 = await_gauge("brooq_job_table_last_vacuum_age_seconds", BELOW, vac0, 10000);
	cr_assert_lt(vac1, vac0);
	cr_assert_lt(vac1, 10);
	/* Autovacuum is off here: its age is the server's, at least the manual one's. */
	cr_assert_geq(gauge("brooq_job_table_last_autovacuum_age_seconds"), vac1);
}

Test(vacuum_metrics, oldest_transaction_age_grows_while_another_connection_holds_one)
{
	cr_assert_eq(await_gauge("brooq_db_oldest_transaction_age_seconds", EQUAL, 0, 10000), 0);

	/* A forgotten BEGIN in psql, REPEATABLE READ: its snapshot holds the horizon. */
	PGconn *other = brq_testdb_connect(dsn);
	brq_testdb_exec(other, "BEGIN ISOLATION LEVEL REPEATABLE READ");
	brq_testdb_exec(other, "SELECT count(*) FROM job");
	double a1 = await_gauge("brooq_db_oldest_transaction_age_seconds", AT_LEAST, 0.5, 10000);
	cr_assert_geq(a1, 0.5);
	double a2 = await_gauge("brooq_db_oldest_transaction_age_seconds", AT_LEAST, a1 + 0.5, 10000);
	cr_assert_geq(a2, a1 + 0.5, "the age does not grow: %f then %f", a1, a2);
	brq_testdb_exec(other, "COMMIT");
	cr_assert_eq(await_gauge("brooq_db_oldest_transaction_age_seconds", EQUAL, 0, 10000), 0);

	/* A transaction that wrote (it holds an id), idle in READ COMMITTED. */
	brq_testdb_exec(other, "BEGIN");
	brq_testdb_exec(other, "INSERT INTO job (topic) VALUES ('held')");
	cr_assert_geq(await_gauge("brooq_db_oldest_transaction_age_seconds", AT_LEAST, 0.5, 10000), 0.5);
	brq_testdb_exec(other, "ROLLBACK");
	cr_assert_eq(await_gauge("brooq_db_oldest_transaction_age_seconds", EQUAL, 0, 10000), 0);

	/* An idle READ COMMITTED transaction that only read holds nothing between its
	 * statements: 0 while the monitor reads again (its autovacuum age moves on). */
	brq_testdb_exec(other, "BEGIN");
	brq_testdb_exec(other, "SELECT count(*) FROM job");
	double av0 = gauge("brooq_job_table_last_autovacuum_age_seconds");
	cr_assert_geq(await_gauge("brooq_job_table_last_autovacuum_age_seconds", AT_LEAST, av0 + 0.5, 10000),
		      av0 + 0.5);
	cr_assert_eq(gauge("brooq_db_oldest_transaction_age_seconds"), 0);
	brq_testdb_exec(other, "COMMIT");
	PQfinish(other);
}
