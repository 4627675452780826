/* SPDX-License-Identifier: MIT */
/* Issue 15 parts 1-3 through the public client API, against real gateways and real PostgreSQL:
 * priorities, pausing a topic, and per-topic concurrency and rate limits, with two gateways on one
 * database wherever a limit or a pause must hold across them. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

#define OK BRQ_OK /* tests/support/tutil.h */

static char         *dsn;
static PGconn       *db;
static brq_gw        gw;
static brooq_client *wc; /* worker token */
static brooq_client *ac; /* admin token */

static brooq_client *
open_client(const brq_gw *g, bool admin)
{
	brooq_client_opts o = {.size       = sizeof(brooq_client_opts),
			       .url        = g->url,
			       .token_file = admin ? g->admin_token_file : g->worker_token_file,
			       .timeout_ms = 20000};
	brooq_client     *c = NULL;
	brooq_err         e = brooq_client_open(&o, &c);
	cr_assert_eq(e, BROOQ_OK, "client_open: %s: %s", brooq_strerror(e), brooq_last_message());
	return c;
}

static void
setup(void)
{
	static const char *env[] = {"BROOQ_POLL_INTERVAL=200ms", NULL};
	dsn                      = brq_testdb_create(true);
	db                       = brq_testdb_connect(dsn);
	brq_gw_start(&gw, dsn, env);
	wc = open_client(&gw, false);
	ac = open_client(&gw, true);
}

static void
teardown(void)
{
	brooq_client_close(wc);
	brooq_client_close(ac);
	brq_gw_stop(&gw);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

/* One suite (Criterion's runner leaks when suites that fork gateways mix). */
TestSuite(policy, .init = setup, .fini = teardown, .timeout = 180);

/* ---- helpers ----------------------------------------------------------------------- */

static uint64_t
enqueue_p(brooq_client *c, const char *topic, uint32_t priority, uint64_t delay_ms)
{
	brooq_job_spec j = {.topic = topic, .payload = "{}", .priority = priority, .delay_ms = delay_ms};
	brooq_enqueue_result r;
	OK(brooq_enqueue(c, &j, 1, &r));
	return r.id;
}

static size_t
claim_on(brooq_client *c, const char *topic, uint32_t max, uint32_t wait_ms, brooq_job **jobs)
{
	const char      *topics[] = {topic};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .worker   = "policy-test",
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = max,
				     .wait_ms  = wait_ms};
	size_t           n        = 0;
	*jobs                     = NULL;
	OK(brooq_claim(c, &o, jobs, &n));
	return n;
}

static void
settle_done(brooq_client *c, const brooq_job *jobs, size_t n)
{
	if (n == 0)
		return;
	brooq_settle_item   *it = calloc(n, sizeof(*it));
	brooq_settle_result *r  = calloc(n, sizeof(*r));
	for (size_t i = 0; i < n; i++)
		it[i] = (brooq_settle_item) {.lease = jobs[i].lease, .outcome = BROOQ_OUTCOME_DONE};
	OK(brooq_settle(c, it, n, r));
	free(it);
	free(r);
}

/* ---- 1. priorities ------------------------------------------------------------------ */

Test(policy, claims_by_priority_then_age_then_id)
{
	/* Enqueued low first: the claim order is priority (1 first), then age. */
	uint64_t p9  = enqueue_p(wc, "prio", 9, 0);
	uint64_t p5a = enqueue_p(wc, "prio", 0, 0); /* 0: the default, 5 */
	uint64_t p5b = enqueue_p(wc, "prio", 5, 0);
	uint64_t p1  = enqueue_p(wc, "prio", 1, 0);
	uint64_t p3  = enqueue_p(wc, "prio", 3, 0);
	/* A job of the first priority that is not due yet waits its turn. */
	enqueue_p(wc, "prio", 1, 60000);
	uint64_t   want[] = {p1, p3, p5a, p5b, p9};
	brooq_job *jobs;
	size_t     n = claim_on(wc, "prio", 10, 0, &jobs);
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(jobs[i].lease.id, want[i], "claim %zu: job %" PRIu64 ", want %" PRIu64, i,
			     jobs[i].lease.id, want[i]);
	brooq_jobs_free(jobs, n);
	/* One at a time, the same order. */
	brq_testdb_exec(db,
			"UPDATE job SET state = 'pending', locked_by = NULL, locked_until = NULL,"
			" lease_token = NULL WHERE state = 'processing'");
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(claim_on(wc, "prio", 1, 0, &jobs), 1);
		cr_assert_eq(jobs[0].lease.id, want[i], "claim %zu: job %" PRIu64 ", want %" PRIu64, i,
			     jobs[0].lease.id, want[i]);
		brooq_jobs_free(jobs, 1);
	}
	brooq_job_info *info = NULL;
	OK(brooq_job_get(wc, p1, &info));
	cr_assert_eq(info->priority, 1);
	brooq_job_info_free(info);
	OK(brooq_job_get(wc, p5a, &info));
	cr_assert_eq(info->priority, 5);
	brooq_job_info_free(info);
}

Test(policy, a_priority_out_of_range_is_refused_and_nothing_is_written)
{
	brooq_job_spec       j[2] = {{.topic = "prio", .payload = "{}", .priority = 1},
				     {.topic = "prio", .payload = "{}", .priority = 10}};
	brooq_enqueue_result r[2];
	cr_assert_eq(brooq_enqueue(wc, j, 2, r), BROOQ_EINVALID_ARGUMENT);
	cr_assert_not_null(strstr(brooq_last_message(), "priority"), "%s", brooq_last_message());
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 0);
}

/* Strict priority: documented to starve. A steady supply of priority-1 jobs keeps a
 * priority-9 job waiting for as long as it lasts; it runs the moment the flood ends. */
Test(policy, strict_priority_lets_a_flood_of_urgent_jobs_starve_the_rest_until_it_ends)
{
	uint64_t low = enqueue_p(wc, "flood", 9, 0);
	for (int round = 0; round < 20; round++) {
		enqueue_p(wc, "flood", 1, 0);
		brooq_job *jobs;
		size_t     n = claim_on(wc, "flood", 1, 0, &jobs);
		cr_assert_eq(n, 1);
		cr_assert_neq(jobs[0].lease.id, low, "the low priority job ran during the flood");
		settle_done(wc, jobs, n);
		brooq_jobs_free(jobs, n);
	}
	brooq_job *jobs;
	cr_assert_eq(claim_on(wc, "flood", 1, 0, &jobs), 1);
	cr_assert_eq(jobs[0].lease.id, low);
	brooq_jobs_free(jobs, 1);
}
