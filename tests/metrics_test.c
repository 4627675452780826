/* SPDX-License-Identifier: MIT */
/* Metrics unit tests (no database): exposition format, escaping, histograms, concurrency.
 *
 * `metrics_test --dump-exposition` prints an exposition in which every series has
 * been touched; tests/observability_test.sh feeds it to `promtool check metrics` and
 * checks that every metric the alert rules and the dashboard query is rendered. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "metrics/metrics.h"

static char *
render(void)
{
	char  *out = NULL;
	size_t len = 0;
	cr_assert_eq(brq_metrics_render(&out, &len), 0);
	cr_assert_not_null(out);
	cr_assert_eq(strlen(out), len);
	return out;
}

/* Value of the sample whose name and labels are exactly `series` (e.g.
 * `brooq_jobs{topic="a",state="pending"}`); -1 when absent. */
static double
sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			return strtod(p + n + 1, NULL);
		}
		p = strchr(p, '\n');
		if (p != NULL) {
			p++;
		}
	}
	return -1;
}

static void
setup(void)
{
	cr_assert_eq(brq_metrics_init("1.2.3-test"), 0);
}

static void
teardown(void)
{
	brq_metrics_fini();
}

TestSuite(metrics, .init = setup, .fini = teardown);

Test(metrics, every_family_has_help_and_type_and_counters_end_in_total)
{
	brq_metrics_topic_add("a", 1, BRQ_MT_ENQUEUED, 1);
	char                    *t             = render();
	static const char *const families[][2] = {
		{"brooq_build_info", "gauge"},
		{"brooq_jobs", "gauge"},
		{"brooq_ready_oldest_age_seconds", "gauge"},
		{"brooq_topic_paused", "gauge"},
		{"brooq_topic_max_running", "gauge"},
		{"brooq_topic_rate_limit_per_second", "gauge"},
		{"brooq_enqueued_total", "counter"},
		{"brooq_claimed_total", "counter"},
		{"brooq_settle_total", "counter"},
		{"brooq_dead_total", "counter"},
		{"brooq_lease_lost_total", "counter"},
		{"brooq_reaped_total", "counter"},
		{"brooq_retention_deleted_total", "counter"},
		{"brooq_retried_total", "counter"},
		{"brooq_deleted_total", "counter"},
		{"brooq_max_execution_exceeded_total", "counter"},
		{"brooq_quarantined_total", "counter"},
		{"brooq_attempt_duration_seconds", "summary"},
		{"brooq_rpc_requests_total", "counter"},
		{"brooq_rpc_duration_seconds", "histogram"},
		{"brooq_auth_failures_total", "counter"},
		{"brooq_connections_closed_total", "counter"},
		{"brooq_quota_refused_total", "counter"},
		{"brooq_db_pool_connections", "gauge"},
		{"brooq_db_up", "gauge"},
		{"brooq_long_polls", "gauge"},
		{"brooq_watches", "gauge"},
		{"brooq_cancel_listener_up", "gauge"},
		{"brooq_cancels_heard_total", "counter"},
		{"brooq_request_bytes_in_flight", "gauge"},
		{"brooq_requests_expired_total", "counter"},
		{"brooq_request_budget_refused_total", "counter"},
		{"brooq_job_table_dead_tuples", "gauge"},
		{"brooq_job_table_live_tuples", "gauge"},
		{"brooq_job_table_size_bytes", "gauge"},
		{"brooq_job_table_index_size_bytes", "gauge"},
		{"brooq_job_table_last_autovacuum_age_seconds", "gauge"},
		{"brooq_job_table_last_vacuum_age_seconds", "gauge"},
		{"brooq_job_table_autovacuums_total", "counter"},
		{"brooq_db_oldest_transaction_age_seconds", "gauge"},
	};
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char want[256];
		snprintf(want, sizeof(want), "# HELP %s ", families[i][0]);
		cr_assert_not_null(strstr(t, want), "no HELP for %s", families[i][0]);
		snprintf(want, sizeof(want), "# TYPE %s %s\n", families[i][0], families[i][1]);
		cr_assert_not_null(strstr(t, want), "no TYPE for %s", families[i][0]);
	}
	/* Every counter family is named *_total. */
	for (const char *p = strstr(t, "# TYPE "); p != NULL; p = strstr(p + 1, "# TYPE ")) {
		char name[128], type[32];
		cr_assert_eq(sscanf(p, "# TYPE %127s %31s", name, type), 2);
		if (strcmp(type, "counter") == 0) {
			size_t n = strlen(name);
			cr_assert(n > 6 && strcmp(name + n - 6, "_total") == 0, "%s", name);
		}
	}
	cr_assert_eq(sample(t, "brooq_build_info{version=\"1.2.3-test\"}"), 1);
	cr_assert(t[strlen(t) - 1] == '\n');
	free(t);
}

Test(metrics, topic_counters_render_after_updates)
{
	brq_metrics_topic_add("email.send", 10, BRQ_MT_ENQUEUED, 3);
	brq_metrics_topic_add("email.send", 10, BRQ_MT_ENQUEUED, 2);
	brq_metrics_topic_add("email.send", 10, BRQ_MT_CLAIMED, 4);
	brq_metrics_topic_add("email.send", 10, BRQ_MT_LEASE_LOST, 1);
	brq_metrics_topic_add("email.send", 10, BRQ_MT_REAPED, 6);
	brq_metrics_topic_add("email.send", 10, BRQ_MT_RETENTION_DELETED, 7);
	brq_metrics_topic_add("email.send", 10, BRQ_MT_MAX_EXECUTION, 8);
	/* topic_len is honoured: the rest of the buffer is not part of the name. */
	brq_metrics_topic_add("pdf.renderXXX", 10, BRQ_MT_ENQUEUED, 1);
	brq_metrics_settle("email.send", 10, BRQ_OUTCOME_FAIL, 2);
	brq_metrics_settle("email.send", 10, BRQ_OUTCOME_DONE, 1);
	brq_metrics_dead("email.send", 10, 1);
	brq_metrics_auth_failure();
	brq_metrics_auth_failure();
	brq_metrics_pool_set(BRQ_POOL_IDLE, 4);
	brq_metrics_pool_move(BRQ_POOL_IDLE, BRQ_POOL_BUSY);
	brq_metrics_waiters_set(7);
	brq_metrics_waiters_add(-2);
	brq_metrics_db_up_set(1);
	brq_metrics_attempt_duration(1.5);
	brq_metrics_attempt_duration(0.25);

	char *t = render();
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"email.send\"}"), 5);
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"pdf.render\"}"), 1);
	cr_assert_eq(sample(t, "brooq_claimed_total{topic=\"email.send\"}"), 4);
	cr_assert_eq(sample(t, "brooq_claimed_total{topic=\"pdf.render\"}"), 0);
	cr_assert_eq(sample(t, "brooq_lease_lost_total{topic=\"email.send\"}"), 1);
	cr_assert_eq(sample(t, "brooq_reaped_total{topic=\"email.send\"}"), 6);
	cr_assert_eq(sample(t, "brooq_retention_deleted_total{topic=\"email.send\"}"), 7);
	cr_assert_eq(sample(t, "brooq_max_execution_exceeded_total{topic=\"email.send\"}"), 8);
	cr_assert_eq(sample(t, "brooq_settle_total{topic=\"email.send\",outcome=\"fail\"}"), 2);
	cr_assert_eq(sample(t, "brooq_settle_total{topic=\"email.send\",outcome=\"done\"}"), 1);
	cr_assert_eq(sample(t, "brooq_settle_total{topic=\"email.send\",outcome=\"cancel\"}"), 0);
	cr_assert_eq(sample(t, "brooq_dead_total{topic=\"email.send\"}"), 1);
	cr_assert_eq(sample(t, "brooq_dead_total{topic=\"pdf.render\"}"), 0);
	cr_assert_eq(sample(t, "brooq_auth_failures_total"), 2);
	cr_assert_eq(sample(t, "brooq_db_pool_connections{state=\"idle\"}"), 3);
	cr_assert_eq(sample(t, "brooq_db_pool_connections{state=\"busy\"}"), 1);
	cr_assert_eq(sample(t, "brooq_db_pool_connections{state=\"down\"}"), 0);
	cr_assert_eq(sample(t, "brooq_long_polls"), 5);
	cr_assert_eq(sample(t, "brooq_db_up"), 1);
	cr_assert_float_eq(sample(t, "brooq_attempt_duration_seconds_sum"), 1.75, 1e-9);
	cr_assert_eq(sample(t, "brooq_attempt_duration_seconds_count"), 2);
	/* A summary without quantiles: no quantile lines. */
	cr_assert_null(strstr(t, "quantile="));
	/* Depth gauges exist (0) for a topic known only from counters. */
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"email.send\",state=\"pending\"}"), 0);
	cr_assert_eq(sample(t, "brooq_ready_oldest_age_seconds{topic=\"email.send\"}"), 0);
	free(t);
}

Test(metrics, policy_gauges_follow_the_latest_snapshot)
{
	brq_metrics_topic_add("a", 1, BRQ_MT_ENQUEUED, 1);
	brq_policy_row rows[] = {{.topic = "b", .topic_len = 1, .paused = true},
				 {.topic = "c", .topic_len = 1, .max_running = 4, .rate_per_s = 50}};
	brq_metrics_policy_set(rows, 2);
	char *t = render();
	cr_assert_eq(sample(t, "brooq_topic_paused{topic=\"a\"}"), 0);
	cr_assert_eq(sample(t, "brooq_topic_paused{topic=\"b\"}"), 1);
	cr_assert_eq(sample(t, "brooq_topic_max_running{topic=\"c\"}"), 4);
	cr_assert_eq(sample(t, "brooq_topic_rate_limit_per_second{topic=\"c\"}"), 50);
	free(t);
	/* Resumed and unlimited: back to 0. */
	brq_metrics_policy_set(rows + 1, 1);
	t = render();
	cr_assert_eq(sample(t, "brooq_topic_paused{topic=\"b\"}"), 0);
	cr_assert_eq(sample(t, "brooq_topic_max_running{topic=\"c\"}"), 4);
	free(t);
	brq_metrics_policy_set(NULL, 0);
	t = render();
	cr_assert_eq(sample(t, "brooq_topic_max_running{topic=\"c\"}"), 0);
	free(t);
}

Test(metrics, rpc_counts_by_op_and_code)
{
	brq_metrics_rpc(BRQ_OP_ENQUEUE, BRQ_ST_OK, 120, 0);
	brq_metrics_rpc(BRQ_OP_ENQUEUE, BRQ_ST_OK, 80, 0);
	brq_metrics_rpc(BRQ_OP_ENQUEUE, BRQ_ST_INVALID_ARGUMENT, 10, 0);
	brq_metrics_rpc(BRQ_OP_NONE, BRQ_ST_UNAUTHENTICATED, 10, 0);
	char *t = render();
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"enqueue\",code=\"ok\"}"), 2);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"enqueue\",code=\"invalid_argument\"}"), 1);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"unknown\",code=\"unauthenticated\"}"), 1);
	/* Known ops show code="ok" from the start; other codes only once seen. */
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"settle\",code=\"ok\"}"), 0);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"settle\",code=\"internal\"}"), -1);
	free(t);
}

Test(metrics, histogram_buckets_are_cumulative_and_count_matches_sum)
{
	/* 40us, 100us (on a bound: le is inclusive), 3ms, 2s, 20min. */
	static const uint64_t obs[] = {40, 100, 3000, 2000000, 1200000000ULL};
	uint64_t              total = 0;
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++) {
		brq_metrics_rpc(BRQ_OP_CLAIM, BRQ_ST_OK, obs[i], 0);
		total += obs[i];
	}
	/* A claim that waited goes to claim_wait, not claim. */
	brq_metrics_rpc(BRQ_OP_CLAIM, BRQ_ST_OK, 4000000, 1);

	char *t = render();
#define B(le) sample(t, "brooq_rpc_duration_seconds_bucket{op=\"claim\",le=\"" le "\"}")
	cr_assert_eq(B("5e-05"), 1);
	cr_assert_eq(B("0.0001"), 2);
	cr_assert_eq(B("0.0025"), 2);
	cr_assert_eq(B("0.005"), 3);
	cr_assert_eq(B("1"), 3);
	cr_assert_eq(B("2.5"), 4);
	cr_assert_eq(B("300"), 4);
	cr_assert_eq(B("+Inf"), 5);
#undef B
	cr_assert_eq(sample(t, "brooq_rpc_duration_seconds_count{op=\"claim\"}"), 5);
	cr_assert_float_eq(sample(t, "brooq_rpc_duration_seconds_sum{op=\"claim\"}"), (double) total / 1e6,
			   1e-6);
	cr_assert_eq(sample(t, "brooq_rpc_duration_seconds_count{op=\"claim_wait\"}"), 1);
	cr_assert_eq(sample(t, "brooq_rpc_duration_seconds_bucket{op=\"claim_wait\",le=\"2.5\"}"), 0);
	cr_assert_eq(sample(t, "brooq_rpc_duration_seconds_bucket{op=\"claim_wait\",le=\"5\"}"), 1);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"claim\",code=\"ok\"}"), 6);

	/* Every op's buckets never decrease and end at _count. */
	const char *p      = t;
	double      prev   = -1;
	char        op[64] = "", cur[64];
	while ((p = strstr(p, "brooq_rpc_duration_seconds_bucket{op=\"")) != NULL) {
		p += strlen("brooq_rpc_duration_seconds_bucket{op=\"");
		size_t n = strcspn(p, "\"");
		snprintf(cur, sizeof(cur), "%.*s", (int) n, p);
		double v = strtod(strchr(p, '}') + 2, NULL);
		if (strcmp(cur, op) != 0) {
			snprintf(op, sizeof(op), "%s", cur);
			prev = -1;
		}
		cr_assert_geq(v, prev, "op %s", op);
		prev = v;
	}
	free(t);
}

Test(metrics, label_values_are_escaped)
{
	const char topic[] = "a\\b\"c\nd";
	brq_metrics_topic_add(topic, sizeof(topic) - 1, BRQ_MT_CLAIMED, 9);
	char *t = render();
	cr_assert_eq(sample(t, "brooq_claimed_total{topic=\"a\\\\b\\\"c\\nd\"}"), 9);
	/* No raw newline inside a label: every line starts with '#' or 'brooq_'. */
	for (const char *p = t; *p != '\0'; p = strchr(p, '\n') + 1) {
		cr_assert(*p == '#' || strncmp(p, "brooq_", 6) == 0, "stray line: %.40s", p);
	}
	free(t);

	brq_metrics_fini();
	cr_assert_eq(brq_metrics_init("v\"1\\\n"), 0);
	t = render();
	cr_assert_eq(sample(t, "brooq_build_info{version=\"v\\\"1\\\\\\n\"}"), 1);
	free(t);
}

Test(metrics, depth_set_replaces_the_previous_snapshot)
{
	brq_depth_row rows[2] = {
		{.topic = "a", .topic_len = 1, .oldest_ready_age_s = 12.5},
		{.topic = "b", .topic_len = 1, .oldest_ready_age_s = 0},
	};
	rows[0].count[BRQ_STATE_PENDING]    = 3;
	rows[0].count[BRQ_STATE_DEAD]       = 2;
	rows[1].count[BRQ_STATE_PROCESSING] = 4;
	brq_metrics_depth_set(rows, 2);
	char *t = render();
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"pending\"}"), 3);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"dead\"}"), 2);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"failed\"}"), 0);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"b\",state=\"processing\"}"), 4);
	cr_assert_float_eq(sample(t, "brooq_ready_oldest_age_seconds{topic=\"a\"}"), 12.5, 1e-9);
	cr_assert_eq(sample(t, "brooq_ready_oldest_age_seconds{topic=\"b\"}"), 0);
	free(t);

	/* The next snapshot has only b: a drops to 0, not to its old values. */
	brq_depth_row next            = {.topic = "b", .topic_len = 1, .oldest_ready_age_s = 1};
	next.count[BRQ_STATE_PENDING] = 1;
	brq_metrics_depth_set(&next, 1);
	t = render();
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		char series[128];
		snprintf(series, sizeof(series), "brooq_jobs{topic=\"a\",state=\"%s\"}",
			 brq_state_name((brq_state) s));
		cr_assert_eq(sample(t, series), 0, "%s", series);
	}
	cr_assert_eq(sample(t, "brooq_ready_oldest_age_seconds{topic=\"a\"}"), 0);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"b\",state=\"pending\"}"), 1);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"b\",state=\"processing\"}"), 0);
	cr_assert_eq(sample(t, "brooq_ready_oldest_age_seconds{topic=\"b\"}"), 1);
	free(t);

	/* An empty snapshot zeroes everything. */
	brq_metrics_depth_set(NULL, 0);
	t = render();
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"b\",state=\"pending\"}"), 0);
	free(t);
}

Test(metrics, topics_past_the_cap_are_counted_under_other)
{
	char name[32];
	for (int i = 0; i < 10000; i++) {
		int n = snprintf(name, sizeof(name), "t%05d", i);
		brq_metrics_topic_add(name, (size_t) n, BRQ_MT_ENQUEUED, 1);
	}
	brq_metrics_topic_add("late.one", 8, BRQ_MT_ENQUEUED, 2);
	brq_metrics_topic_add("late.two", 8, BRQ_MT_ENQUEUED, 3);
	brq_metrics_topic_add("t00042", 6, BRQ_MT_ENQUEUED, 1); /* known: still its own */
	char *t = render();
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"_other\"}"), 5);
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"late.one\"}"), -1);
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"t00042\"}"), 2);
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"t09999\"}"), 1);
	free(t);
}

#define N_THREADS 8
#define N_ITERS   20000

static void *
hammer(void *arg)
{
	int  id = (int) (intptr_t) arg;
	char topic[16];
	for (int i = 0; i < N_ITERS; i++) {
		/* 50 topics shared by all threads, created concurrently on first use. */
		int n = snprintf(topic, sizeof(topic), "topic%d", (i + id) % 50);
		brq_metrics_topic_add(topic, (size_t) n, BRQ_MT_ENQUEUED, 1);
		brq_metrics_settle(topic, (size_t) n, BRQ_OUTCOME_DONE, 1);
		brq_metrics_rpc(BRQ_OP_SETTLE, BRQ_ST_OK, (uint64_t) (i % 5000), 0);
		brq_metrics_auth_failure();
		if (i % 1000 == 0) {
			char  *out;
			size_t len;
			if (brq_metrics_render(&out, &len) == 0) {
				free(out);
			}
		}
	}
	return NULL;
}

Test(metrics, concurrent_updates_sum_exactly)
{
	pthread_t th[N_THREADS];
	for (int i = 0; i < N_THREADS; i++) {
		cr_assert_eq(pthread_create(&th[i], NULL, hammer, (void *) (intptr_t) i), 0);
	}
	for (int i = 0; i < N_THREADS; i++) {
		pthread_join(th[i], NULL);
	}
	char  *t   = render();
	double enq = 0, settled = 0;
	for (int k = 0; k < 50; k++) {
		char series[128];
		snprintf(series, sizeof(series), "brooq_enqueued_total{topic=\"topic%d\"}", k);
		enq += sample(t, series);
		snprintf(series, sizeof(series), "brooq_settle_total{topic=\"topic%d\",outcome=\"done\"}", k);
		settled += sample(t, series);
	}
	cr_assert_eq(enq, N_THREADS * N_ITERS);
	cr_assert_eq(settled, N_THREADS * N_ITERS);
	cr_assert_eq(sample(t, "brooq_auth_failures_total"), N_THREADS * N_ITERS);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"settle\",code=\"ok\"}"), N_THREADS * N_ITERS);
	cr_assert_eq(sample(t, "brooq_rpc_duration_seconds_count{op=\"settle\"}"), N_THREADS * N_ITERS);
	cr_assert_eq(sample(t, "brooq_rpc_duration_seconds_bucket{op=\"settle\",le=\"+Inf\"}"),
		     N_THREADS * N_ITERS);
	/* Each topic appears once: the registry never inserts a topic twice. */
	const char *p    = t;
	int         seen = 0;
	while ((p = strstr(p, "brooq_claimed_total{topic=\"topic7\"}")) != NULL) {
		seen++;
		p++;
	}
	cr_assert_eq(seen, 1);
	free(t);
}

/* The table gauges have no sample until the monitor's first read (no made-up 0), then
 * the last figures it set. */
Test(metrics, table_gauges_appear_with_the_first_read_and_follow_it)
{
	char *t = render();
	cr_assert_eq(sample(t, "brooq_job_table_dead_tuples"), -1);
	cr_assert_eq(sample(t, "brooq_db_oldest_transaction_age_seconds"), -1);
	cr_assert_not_null(strstr(t, "# TYPE brooq_job_table_dead_tuples gauge\n"));
	free(t);
	brq_table_stats ts = {.dead_tuples       = 12345,
			      .live_tuples       = 678,
			      .bytes             = 8 << 20,
			      .index_bytes       = 3 << 20,
			      .autovacuums       = 4,
			      .autovacuum_age_s  = 61.5,
			      .vacuum_age_s      = 7200,
			      .oldest_xact_age_s = 0.25};
	brq_metrics_table_set(&ts);
	t = render();
	cr_assert_eq(sample(t, "brooq_job_table_dead_tuples"), 12345);
	cr_assert_eq(sample(t, "brooq_job_table_live_tuples"), 678);
	cr_assert_eq(sample(t, "brooq_job_table_size_bytes"), 8 << 20);
	cr_assert_eq(sample(t, "brooq_job_table_index_size_bytes"), 3 << 20);
	cr_assert_eq(sample(t, "brooq_job_table_autovacuums_total"), 4);
	cr_assert_eq(sample(t, "brooq_job_table_last_autovacuum_age_seconds"), 61.5);
	cr_assert_eq(sample(t, "brooq_job_table_last_vacuum_age_seconds"), 7200);
	cr_assert_eq(sample(t, "brooq_db_oldest_transaction_age_seconds"), 0.25);
	free(t);
	ts.dead_tuples = 0;
	brq_metrics_table_set(&ts);
	t = render();
	cr_assert_eq(sample(t, "brooq_job_table_dead_tuples"), 0);
	free(t);
}

/* Touches every series once and prints the exposition (see the file comment). */
static int
dump_exposition(void)
{
	if (brq_metrics_init("0.0.0-dump") != 0) {
		return 1;
	}
	static const char topic[] = "example.topic";
	const size_t      tl      = sizeof(topic) - 1;
	for (int c = 0; c < BRQ_MT__COUNT; c++) {
		brq_metrics_topic_add(topic, tl, (brq_topic_counter) c, 1);
	}
	for (int oc = 0; oc < BRQ_OUTCOME__COUNT; oc++) {
		brq_metrics_settle(topic, tl, (brq_outcome) oc, 1);
	}
	brq_metrics_dead(topic, tl, 1);
	for (int op = 0; op < BRQ_OP__COUNT; op++) {
		for (int st = 0; st < BRQ_ST__COUNT; st++) {
			brq_metrics_rpc((brq_op) op, (brq_status) st, 1000, 0);
		}
	}
	brq_metrics_rpc(BRQ_OP_CLAIM, BRQ_ST_OK, 2000000, 1);
	brq_metrics_auth_failure();
	brq_metrics_attempt_duration(0.5);
	brq_metrics_pool_set(BRQ_POOL_IDLE, 3);
	brq_metrics_pool_set(BRQ_POOL_BUSY, 1);
	brq_metrics_pool_set(BRQ_POOL_DOWN, 0);
	brq_metrics_waiters_set(2);
	brq_metrics_db_up_set(1);
	brq_depth_row row = {.topic = topic, .topic_len = tl, .oldest_ready_age_s = 3.25};
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		row.count[s] = (uint64_t) s + 1;
	}
	brq_metrics_depth_set(&row, 1);
	brq_metrics_table_set(&(brq_table_stats) {.dead_tuples       = 10,
						  .live_tuples       = 100,
						  .bytes             = 1 << 20,
						  .index_bytes       = 1 << 19,
						  .autovacuums       = 2,
						  .autovacuum_age_s  = 30,
						  .vacuum_age_s      = 3600,
						  .oldest_xact_age_s = 1.5});

	char  *out;
	size_t len;
	if (brq_metrics_render(&out, &len) != 0) {
		return 1;
	}
	int rc = fwrite(out, 1, len, stdout) == len ? 0 : 1;
	free(out);
	brq_metrics_fini();
	return rc;
}

// Default visibility: Criterion's sandbox (BoxFort) finds `main` in the dynamic
// symbol table to start its test workers, and the build hides symbols by default.
__attribute__((visibility("default"))) int
main(int argc, char *argv[])
{
	if (argc == 2 && strcmp(argv[1], "--dump-exposition") == 0) {
		return dump_exposition();
	}
	struct criterion_test_set *tests  = criterion_initialize();
	int                        result = 0;
	if (criterion_handle_args(argc, argv, true)) {
		result = !criterion_run_all_tests(tests);
	}
	criterion_finalize(tests);
	return result;
}
