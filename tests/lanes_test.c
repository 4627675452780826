/* SPDX-License-Identifier: MIT */
/*
 * Slow reads do not starve the hot path (issue 10.7), real gateway and PostgreSQL.
 *
 * The table holds 400k done jobs (history) and a backlog of 400k pending jobs in
 * another topic, so that even the cheap stats (active states counted through the
 * partial indexes, terminal states from the monitor) costs real time: what a backlog
 * costs. Four operators call stats in a loop (and one looks jobs up), while a producer
 * enqueues single jobs one after another. Operator reads run on at most a quarter of
 * the pool (max(1, pool / 4)), so enqueues always find a connection. Before, 4 stats
 * callers held all 4 connections and an enqueue waited for one to finish its stats
 * (782 ms at 2M rows): under the flood a quarter of the enqueues or more took most of a
 * stats call. So the bound is relative to one stats call timed alone in the same test,
 * on the same machine, not a figure in milliseconds that a busy machine breaks.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tclient.h"
#include "tutil.h"

#define HISTORY   400000
#define BACKLOG   400000
#define OPERATORS 4
#define SAMPLES   400

static char         *dsn;
static brq_gw        gw;
static brooq_client *wc, *ac;

static brooq_client *
open_client(const char *token_file)
{
	return brq_t_client_open(gw.url, token_file, 10000);
}

static void
setup(void)
{
	dsn        = brq_testdb_create(true);
	PGconn *db = brq_testdb_connect(dsn);
	char    sql[512];
	snprintf(sql, sizeof(sql),
		 "INSERT INTO job (topic, payload, state, attempts, created_at, updated_at, available_at)"
		 " SELECT 'history', '{}', 'done', 1, now() - interval '1 day', now() - interval '1 day',"
		 " now() - interval '1 day' FROM generate_series(1, %d)",
		 HISTORY);
	brq_testdb_exec(db, sql);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO job (topic, payload) SELECT 'backlog', '{}' FROM generate_series(1, %d)",
		 BACKLOG);
	brq_testdb_exec(db, sql);
	brq_testdb_exec(db, "VACUUM ANALYZE job");
	PQfinish(db);
	static const char *env[] = {"BROOQ_POOL_SIZE=4", "BROOQ_LOG_LEVEL=warn", NULL};
	brq_gw_start(&gw, dsn, env);
	wc = open_client(gw.worker_token_file);
	ac = open_client(gw.admin_token_file);
}

static void
teardown(void)
{
	brooq_client_close(wc);
	brooq_client_close(ac);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(lanes, .init = setup, .fini = teardown, .timeout = 300);

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

/* Percentiles of SAMPLES single-job enqueues' times, in microseconds. */
typedef struct {
	int64_t p50, p75, p99;
} enq_times;

static enq_times
enqueue_times(void)
{
	static int64_t us[SAMPLES];
	for (int i = 0; i < SAMPLES; i++) {
		brooq_job_spec       spec = {.size = sizeof(brooq_job_spec), .topic = "hot", .payload = "{}"};
		brooq_enqueue_result r    = BROOQ_ENQUEUE_RESULT_INIT;
		int64_t              t0   = brq_t_now_us();
		BRQ_OK(brooq_enqueue(wc, &spec, 1, &r));
		us[i] = brq_t_now_us() - t0;
		brq_t_sleep_ms(2);
	}
	qsort(us, SAMPLES, sizeof(us[0]), cmp_i64);
	return (enq_times) {us[SAMPLES / 2], us[SAMPLES * 3 / 4], us[SAMPLES * 99 / 100]};
}

/* The done count of topic history in stats, or -1 if the topic is not there yet. */
static int64_t
stats_history_done(void)
{
	brooq_topic_stats **s    = NULL;
	size_t              n    = 0;
	int64_t             done = -1;
	BRQ_OK(brooq_stats(ac, &s, &n));
	for (size_t i = 0; i < n; i++)
		if (strcmp(s[i]->topic, "history") == 0)
			done = (int64_t) s[i]->count[BROOQ_DONE];
	brooq_stats_free(s, n);
	return done;
}

/* The median time of one stats call with nothing else asking, in microseconds. */
static int64_t
stats_alone_us(void)
{
	int64_t us[5];
	for (int i = 0; i < 5; i++) {
		brooq_topic_stats **s  = NULL;
		size_t              n  = 0;
		int64_t             t0 = brq_t_now_us();
		BRQ_OK(brooq_stats(ac, &s, &n));
		us[i] = brq_t_now_us() - t0;
		brooq_stats_free(s, n);
	}
	qsort(us, 5, sizeof(us[0]), cmp_i64);
	return us[2];
}

static double
ms(int64_t us)
{
	return (double) us / 1000;
}

static atomic_bool reads_on;
static atomic_long n_stats, n_failed;

static void *
operator_reads(void *arg)
{
	bool          lookups = arg != NULL;
	brooq_client *c       = open_client(gw.admin_token_file);
	while (atomic_load(&reads_on)) {
		brooq_err e;
		if (lookups) {
			brooq_job_info *info = NULL;
			e                    = brooq_job_get(c, 1 + (uint64_t) (rand() % HISTORY), &info);
			brooq_job_info_free(info);
		} else {
			brooq_topic_stats **s = NULL;
			size_t              n = 0;
			e                     = brooq_stats(c, &s, &n);
			brooq_stats_free(s, n);
			atomic_fetch_add(&n_stats, 1);
		}
		if (e != BROOQ_OK) {
			fprintf(stderr, "lanes_test: operator read: %s\n", brooq_last_message());
			atomic_fetch_add(&n_failed, 1);
		}
	}
	brooq_client_close(c);
	return NULL;
}

Test(lanes, enqueues_do_not_wait_while_operators_loop_on_stats)
{
	/* The stats are right: the backlog counted now, the history from the monitor, whose
	 * first terminal count comes some time after the gateway starts (later on a busy
	 * machine): asked until the history shows, up to a minute. */
	int64_t until = brq_t_now_us() + 60 * 1000000;
	while (stats_history_done() != HISTORY && brq_t_now_us() < until)
		brq_t_sleep_ms(100);
	brooq_topic_stats **s = NULL;
	size_t              n = 0;
	BRQ_OK(brooq_stats(ac, &s, &n));
	bool seen_history = false, seen_backlog = false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s[i]->topic, "history") == 0) {
			cr_expect_eq(s[i]->count[BROOQ_DONE], HISTORY);
			seen_history = true;
		} else if (strcmp(s[i]->topic, "backlog") == 0) {
			cr_expect_eq(s[i]->count[BROOQ_PENDING], BACKLOG);
			cr_expect_gt(s[i]->oldest_ready_age_ms, 0);
			seen_backlog = true;
		}
	}
	brooq_stats_free(s, n);
	cr_assert(seen_history && seen_backlog, "stats lacks a topic");

	enq_times quiet = enqueue_times();
	int64_t   one   = stats_alone_us();
	int64_t   t0    = brq_t_now_us();
	pthread_t t[OPERATORS + 1];
	atomic_store(&reads_on, true);
	for (int i = 0; i < OPERATORS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, operator_reads, NULL), 0);
	cr_assert_eq(pthread_create(&t[OPERATORS], NULL, operator_reads, (void *) 1), 0);
	/* The flood is on once the operators have had as many stats calls answered as there
	 * are operators (each loops, asking again at once, until reads_on is cleared): waited
	 * for, up to a minute, rather than slept for; a busy machine takes longer. */
	int64_t warm = brq_t_now_us() + 60 * 1000000;
	while (atomic_load(&n_stats) < OPERATORS && atomic_load(&n_failed) == 0 && brq_t_now_us() < warm)
		brq_t_sleep_ms(10);
	bool      flooding = atomic_load(&n_stats) >= OPERATORS;
	enq_times busy     = flooding ? enqueue_times() : (enq_times) {0, 0, 0};
	atomic_store(&reads_on, false);
	for (int i = 0; i <= OPERATORS; i++)
		pthread_join(t[i], NULL);
	double secs = (double) (brq_t_now_us() - t0) / 1e6;
	fprintf(stderr,
		"lanes_test: enqueue p50/p75/p99 %.2f/%.2f/%.2f ms alone, %.2f/%.2f/%.2f ms while %d "
		"operators looped on stats (%ld stats in %.1f s, %.0f ms each as the operators saw them, "
		"%.0f ms alone) and one on job lookups\n",
		ms(quiet.p50), ms(quiet.p75), ms(quiet.p99), ms(busy.p50), ms(busy.p75), ms(busy.p99),
		OPERATORS, atomic_load(&n_stats), secs,
		secs * 1000 * OPERATORS / (double) (atomic_load(&n_stats) > 0 ? atomic_load(&n_stats) : 1),
		ms(one));
	cr_assert_eq(atomic_load(&n_failed), 0, "operator reads failed");
	cr_assert(flooding, "the operators hardly ran: %ld stats answered in a minute",
		  atomic_load(&n_stats));
	/* The wall-clock bound is the behaviour here: enqueues do not wait for the operators'
	 * stats. Enqueues that wait for a connection a stats call holds wait for a good part
	 * of that call, and a quarter of them or more wait most of it (with pool.c's cap
	 * lifted, p75 was 0.7 of a call's time alone, p99 1.2 to 2.6 times it, loaded machine
	 * or not). Enqueues that find a free connection are slowed only by sharing the cores,
	 * which slows the stats call they are compared with as much; on a busy machine that
	 * shows in the last percents (p99 once 126 ms, ten times its figure alone), so the
	 * bound is on p75, at a quarter of a stats call: a margin of about 3 against the bug,
	 * and more than that against the load. */
	cr_assert_lt(busy.p75, one / 4,
		     "enqueue p75 %.2f ms under the stats flood (p50 %.2f, p99 %.2f; without the flood "
		     "p50/p75/p99 %.2f/%.2f/%.2f): not under a quarter of a stats call (%.2f ms alone), "
		     "so enqueues waited for the operators' reads",
		     ms(busy.p75), ms(busy.p50), ms(busy.p99), ms(quiet.p50), ms(quiet.p75), ms(quiet.p99),
		     ms(one));
}
