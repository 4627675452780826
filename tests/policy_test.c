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
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tclient.h"
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
	return brq_t_client_open(g->url, admin ? g->admin_token_file : g->worker_token_file, 20000);
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

static brq_gw gw2; /* the second gateway of the tests that need one */

static void
teardown(void)
{
	brooq_client_close(wc);
	brooq_client_close(ac);
	// A test that failed before stopping its second gateway would leave it running.
	if (gw2.pid > 0)
		brq_gw_stop(&gw2);
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
	brooq_job_spec       j = {.size     = sizeof(brooq_job_spec),
				  .topic    = topic,
				  .payload  = "{}",
				  .priority = priority,
				  .delay_ms = delay_ms};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(c, &j, 1, &r));
	return r.id;
}

/* Enqueues n jobs of topic in batches of up to 500. */
static void
enqueue_many(const char *topic, int n)
{
	brooq_job_spec       j[500];
	brooq_enqueue_result r[500];
	for (size_t i_ = 0; i_ < 500; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	for (int done = 0; done < n;) {
		int k = n - done < 500 ? n - done : 500;
		for (int i = 0; i < k; i++)
			j[i] = (brooq_job_spec) {
				.size = sizeof(brooq_job_spec), .topic = topic, .payload = "{}"};
		OK(brooq_enqueue(wc, j, (size_t) k, r));
		done += k;
	}
}

static size_t
claim_on(brooq_client *c, const char *topic, uint32_t max, uint32_t wait_ms, brooq_job ***jobs)
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
settle_done(brooq_client *c, brooq_job *const *jobs, size_t n)
{
	if (n == 0)
		return;
	brooq_settle_item   *it = calloc(n, sizeof(*it));
	brooq_settle_result *r  = calloc(n, sizeof(*r));
	for (size_t i = 0; i < n; i++) {
		it[i] = (brooq_settle_item) {.size    = sizeof(brooq_settle_item),
					     .lease   = jobs[i]->lease,
					     .outcome = BROOQ_OUTCOME_DONE};
		r[i]  = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	}
	OK(brooq_settle(c, it, n, r));
	free(it);
	free(r);
}

/* Monotonic time in whole milliseconds. */
static int64_t
now_ms(void)
{
	return brq_t_now_us() / 1000;
}

static long long
count(const char *sql)
{
	return brq_testdb_int(db, sql);
}

/* ---- 1. priorities ------------------------------------------------------------------ */

Test(policy, claims_by_priority_then_age_then_id)
{
	/* Enqueued last first: the claim order is priority (1 first), then age. */
	uint64_t p9 = enqueue_p(wc, "prio", 9, 0);
	uint64_t pd = enqueue_p(wc, "prio", 0, 0); /* 0: the default, 1 */
	uint64_t p5 = enqueue_p(wc, "prio", 5, 0);
	uint64_t p1 = enqueue_p(wc, "prio", 1, 0);
	uint64_t p3 = enqueue_p(wc, "prio", 3, 0);
	/* A job of the first priority that is not due yet waits its turn. */
	enqueue_p(wc, "prio", 1, 60000);
	uint64_t want[] = {pd, p1, p3, p5, p9};
	/* A batch takes the first ones (the reply's array has no order). */
	brooq_job **jobs;
	size_t      n = claim_on(wc, "prio", 3, 0, &jobs);
	cr_assert_eq(n, 3);
	for (size_t i = 0; i < n; i++)
		cr_assert(jobs[i]->lease.id == pd || jobs[i]->lease.id == p1 || jobs[i]->lease.id == p3,
			  "job %" PRIu64 " is not among the first three", jobs[i]->lease.id);
	brooq_jobs_free(jobs, n);
	/* One at a time: exactly that order. */
	brq_testdb_exec(db,
			"UPDATE job SET state = 'pending', locked_by = NULL, locked_until = NULL,"
			" lease_token = NULL WHERE state = 'processing'");
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(claim_on(wc, "prio", 1, 0, &jobs), 1);
		cr_assert_eq(jobs[0]->lease.id, want[i], "claim %zu: job %" PRIu64 ", want %" PRIu64, i,
			     jobs[0]->lease.id, want[i]);
		brooq_jobs_free(jobs, 1);
	}
	cr_assert_eq(claim_on(wc, "prio", 1, 0, &jobs), 0, "the delayed job waits");
	brooq_job_info *info = NULL;
	OK(brooq_job_get(wc, pd, &info));
	cr_assert_eq(info->priority, 1);
	brooq_job_info_free(info);
	OK(brooq_job_get(wc, p5, &info));
	cr_assert_eq(info->priority, 5);
	brooq_job_info_free(info);
}

/* A batch of several priorities, one topic: the first n in priority order, locked
 * and claimed in one statement. */
Test(policy, a_batch_spans_priorities_in_order)
{
	for (int p = 9; p >= 1; p--)
		for (int i = 0; i < 3; i++)
			enqueue_p(wc, "span", (uint32_t) p, 0);
	brooq_job **jobs;
	size_t      n = claim_on(wc, "span", 7, 0, &jobs);
	cr_assert_eq(n, 7);
	brooq_jobs_free(jobs, n);
	/* Priorities 1 and 2 (3 each) and one of 3. */
	cr_assert_eq(count("SELECT count(*) FROM job WHERE topic = 'span' AND state = 'processing'"
			   " AND priority <= 2"),
		     6);
	cr_assert_eq(count("SELECT count(*) FROM job WHERE topic = 'span' AND state = 'processing'"
			   " AND priority = 3"),
		     1);
	/* The extra rows the scans locked were released: all of the rest is claimable. */
	cr_assert_eq(claim_on(wc, "span", 100, 0, &jobs), 20);
	brooq_jobs_free(jobs, 20);
}

Test(policy, a_priority_out_of_range_is_refused_and_nothing_is_written)
{
	brooq_job_spec j[2] = {
		{.size = sizeof(brooq_job_spec), .topic = "prio", .payload = "{}", .priority = 1},
		{.size = sizeof(brooq_job_spec), .topic = "prio", .payload = "{}", .priority = 10}};
	brooq_enqueue_result r[2];
	for (size_t i_ = 0; i_ < 2; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
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
		brooq_job **jobs;
		size_t      n = claim_on(wc, "flood", 1, 0, &jobs);
		cr_assert_eq(n, 1);
		cr_assert_neq(jobs[0]->lease.id, low, "the low priority job ran during the flood");
		settle_done(wc, jobs, n);
		brooq_jobs_free(jobs, n);
	}
	brooq_job **jobs;
	cr_assert_eq(claim_on(wc, "flood", 1, 0, &jobs), 1);
	cr_assert_eq(jobs[0]->lease.id, low);
	brooq_jobs_free(jobs, 1);
}

/* ---- 2. pause / resume ---------------------------------------------------------------- */

/* Starts gw2: a second gateway on the same database, with the first one's settings. */
static void
start_gw2(void)
{
	static const char *env[] = {"BROOQ_POLL_INTERVAL=200ms", NULL};
	brq_gw_start(&gw2, dsn, env);
}

typedef struct poller {
	brooq_client *c;
	const char   *topic;
	uint32_t      wait_ms;
	pthread_t     th;
	size_t        n;
	int64_t       returned_ms;
} poller;

static void *
poll_once(void *arg)
{
	poller     *p = arg;
	brooq_job **jobs;
	p->n           = claim_on(p->c, p->topic, 1, p->wait_ms, &jobs);
	p->returned_ms = now_ms();
	settle_done(p->c, jobs, p->n);
	brooq_jobs_free(jobs, p->n);
	return NULL;
}

Test(policy, a_paused_topic_is_claimed_by_no_gateway_takes_enqueues_and_resume_wakes_parked_claims)
{
	start_gw2();
	brooq_client *wc2 = open_client(&gw2, false);
	enqueue_many("paws", 3);
	brooq_topic_policy p = BROOQ_TOPIC_POLICY_INIT;
	OK(brooq_pause(ac, "paws", &p));
	cr_assert(p.paused);
	cr_assert_str_eq(p.topic, "paws");
	/* Neither gateway claims it, at once (the other one's cache does not know yet:
	 * its claim statement's guard does). */
	brooq_job **jobs;
	cr_assert_eq(claim_on(wc, "paws", 10, 0, &jobs), 0);
	cr_assert_eq(claim_on(wc2, "paws", 10, 0, &jobs), 0);
	usleep(400 * 1000); /* both caches know now */
	cr_assert_eq(claim_on(wc, "paws", 10, 0, &jobs), 0);
	cr_assert_eq(claim_on(wc2, "paws", 10, 0, &jobs), 0);
	/* Enqueue still works, on both. */
	enqueue_p(wc, "paws", 0, 0);
	enqueue_p(wc2, "paws", 0, 0);
	cr_assert_eq(count("SELECT count(*) FROM job WHERE topic = 'paws' AND state = 'pending'"), 5);
	/* A long-poll on each gateway parks and stays parked through several monitor
	 * rounds and an enqueue. */
	poller p1 = {.c = wc, .topic = "paws", .wait_ms = 20000};
	poller p2 = {.c = wc2, .topic = "paws", .wait_ms = 20000};
	pthread_create(&p1.th, NULL, poll_once, &p1);
	pthread_create(&p2.th, NULL, poll_once, &p2);
	usleep(300 * 1000);
	enqueue_p(wc, "paws", 0, 0);
	usleep(700 * 1000);
	cr_assert_eq(p1.returned_ms, 0, "a parked claim of a paused topic returned");
	cr_assert_eq(p2.returned_ms, 0, "a parked claim of a paused topic returned");
	cr_assert_eq(count("SELECT count(*) FROM job WHERE topic = 'paws' AND state <> 'pending'"), 0);
	/* stats and topics show it. */
	brooq_topic_stats **st;
	size_t              n_st;
	OK(brooq_stats(wc, &st, &n_st));
	cr_assert_eq(n_st, 1);
	cr_assert(st[0]->paused);
	brooq_stats_free(st, n_st);
	brooq_topic_policy **all;
	size_t               n_all;
	OK(brooq_topics(ac, &all, &n_all));
	cr_assert_eq(n_all, 1);
	cr_assert(all[0]->paused);
	brooq_topics_free(all, n_all);
	/* Resume through the first gateway: its parked claim starts at once, the other
	 * gateway's within its poll interval (200 ms here). */
	int64_t t0 = now_ms();
	OK(brooq_resume(ac, "paws", &p));
	cr_assert(!p.paused);
	pthread_join(p1.th, NULL);
	pthread_join(p2.th, NULL);
	cr_assert_eq(p1.n, 1);
	cr_assert_eq(p2.n, 1);
	cr_assert_lt(p1.returned_ms - t0, 150, "the local parked claim took %lld ms",
		     (long long) (p1.returned_ms - t0));
	cr_assert_lt(p2.returned_ms - t0, 1500, "the other gateway's parked claim took %lld ms",
		     (long long) (p2.returned_ms - t0));
	/* A resumed topic with no limits has no policy left. */
	cr_assert_eq(count("SELECT count(*) FROM topic_policy"), 0);
	cr_assert_eq(claim_on(wc2, "paws", 10, 0, &jobs), 4);
	brooq_jobs_free(jobs, 4);
	brooq_client_close(wc2);
	brq_gw_stop(&gw2);
}

Test(policy, policy_ops_need_the_admin_token_and_bad_arguments_change_nothing)
{
	brooq_topic_policy p = BROOQ_TOPIC_POLICY_INIT;
	cr_assert_eq(brooq_pause(wc, "t", &p), BROOQ_EPERMISSION_DENIED);
	cr_assert_eq(brooq_topic_limits(wc, "t", 3, 0, &p), BROOQ_EPERMISSION_DENIED);
	brooq_topic_policy **all;
	size_t               n;
	cr_assert_eq(brooq_topics(wc, &all, &n), BROOQ_EPERMISSION_DENIED);
	cr_assert_eq(brooq_pause(ac, "Bad Topic", &p), BROOQ_EINVALID_ARGUMENT);
	cr_assert_not_null(strstr(brooq_last_message(), "topic"), "%s", brooq_last_message());
	cr_assert_eq(brooq_topic_limits(ac, "t", 1000001, BROOQ_LIMIT_KEEP, &p), BROOQ_EINVAL);
	/* The caller's room for the policy without its size: refused before it is sent. */
	brooq_topic_policy nosize = {.max_running = 1};
	cr_assert_eq(brooq_pause(ac, "t", &nosize), BROOQ_EINVAL);
	cr_assert_not_null(strstr(brooq_last_message(), "BROOQ_TOPIC_POLICY_INIT"), "%s",
			   brooq_last_message());
	cr_assert_eq(brooq_topic_limits(ac, "t", 3, 0, &nosize), BROOQ_EINVAL);
	cr_assert_eq(count("SELECT count(*) FROM topic_policy"), 0);
	/* The gateway's own checks, past the library's. */
	OK(brooq_topic_limits(ac, "t", 5, BROOQ_LIMIT_KEEP, &p));
	cr_assert_eq(p.max_running, 5);
	cr_assert_eq(p.rate_per_s, 0);
	OK(brooq_topic_limits(ac, "t", BROOQ_LIMIT_KEEP, 7, &p));
	cr_assert_eq(p.max_running, 5, "an absent limit is kept");
	cr_assert_eq(p.rate_per_s, 7);
	OK(brooq_topic_limits(ac, "t", 0, 0, &p));
	cr_assert_eq(count("SELECT count(*) FROM topic_policy"), 0, "no limits, no pause: no row");
}

/* ---- brooqctl ----------------------------------------------------------------------------- */

/* Runs brooqctl with the gateway's url and a token file; returns its exit status and
 * its stdout (caller frees). */
static int
ctl(bool admin, const char *args, char **out)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "%s --url '%s' --token-file '%s' %s 2>/dev/null", brq_testdb_bin("brooqctl"),
			   gw.url, admin ? gw.admin_token_file : gw.worker_token_file, args) > 0);
	int rc = brq_testdb_run(cmd, out);
	free(cmd);
	return rc;
}

Test(policy, brooqctl_pauses_resumes_limits_and_lists_topics)
{
	char *out;
	cr_assert_eq(ctl(true, "--json limits clt --concurrency 2 --rate 10", &out), 0, "%s", out);
	cr_assert_str_eq(out,
			 "{\"policy\":{\"topic\":\"clt\",\"paused\":false,\"max_running\":2,\"rate_per_s\":"
			 "10,\"running\":0}}\n");
	free(out);
	cr_assert_eq(ctl(true, "pause clt", &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "topic clt paused: paused=yes max_running=2 rate_per_s=10"), "%s",
			   out);
	free(out);
	cr_assert_eq(ctl(true, "topics", &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "clt"), "%s", out);
	cr_assert_not_null(strstr(out, "RATE_PER_S"), "%s", out);
	free(out);
	cr_assert_eq(ctl(true, "--json limits clt --rate 0", &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"paused\":true,\"max_running\":2,\"rate_per_s\":null"), "%s", out);
	free(out);
	/* Worker token: refused (exit 4); bad values: usage (exit 2); nothing changed. */
	cr_assert_eq(ctl(false, "resume clt", &out), 4, "%s", out);
	free(out);
	cr_assert_eq(ctl(true, "limits clt --concurrency many", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(ctl(true, "limits clt", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(ctl(true, "stats --rate 3", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(count("SELECT count(*) FROM topic_policy WHERE paused AND max_running = 2"), 1);
	cr_assert_eq(ctl(true, "resume clt", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(ctl(true, "limits clt --concurrency 0", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(ctl(true, "--json topics", &out), 0, "%s", out);
	cr_assert_str_eq(out, "{\"topics\":[]}\n");
	free(out);
}

/* ---- 3. concurrency and rate limits ---------------------------------------------------- */

/* Workers on two gateways, each claiming batches of `batch` and holding each batch
 * for hold_ms. `inflight` counts the jobs the workers hold: raised after a claim
 * returns (the jobs are processing already) and lowered before their settle is sent
 * (they are still processing until it commits), so it never exceeds what the
 * database counts, and its maximum is a lower bound of the true maximum. */
typedef struct crowd {
	const char *topic;
	uint32_t    batch, hold_ms, wait_ms;
	int64_t     until_ms;
	atomic_int  inflight, max_inflight, done;
} crowd;

typedef struct worker_arg {
	crowd        *cr;
	brooq_client *c;
	pthread_t     th;
} worker_arg;

static void *
crowd_worker(void *arg)
{
	worker_arg *w  = arg;
	crowd      *cr = w->cr;
	while (now_ms() < cr->until_ms) {
		brooq_job **jobs;
		size_t      n = claim_on(w->c, cr->topic, cr->batch, cr->wait_ms, &jobs);
		if (n == 0)
			continue;
		int now = atomic_fetch_add(&cr->inflight, (int) n) + (int) n;
		int max = atomic_load(&cr->max_inflight);
		while (now > max && !atomic_compare_exchange_weak(&cr->max_inflight, &max, now)) {
		}
		usleep(cr->hold_ms * 1000);
		atomic_fetch_sub(&cr->inflight, (int) n);
		settle_done(w->c, jobs, n);
		atomic_fetch_add(&cr->done, (int) n);
		brooq_jobs_free(jobs, n);
	}
	return NULL;
}

/* Runs k workers per gateway for ms. */
static void
run_crowd(crowd *cr, int k, int ms)
{
	worker_arg w[16];
	cr->until_ms = now_ms() + ms;
	for (int i = 0; i < 2 * k; i++) {
		w[i] = (worker_arg) {.cr = cr, .c = open_client(i % 2 == 0 ? &gw : &gw2, false)};
		pthread_create(&w[i].th, NULL, crowd_worker, &w[i]);
	}
	for (int i = 0; i < 2 * k; i++) {
		pthread_join(w[i].th, NULL);
		brooq_client_close(w[i].c);
	}
}

/* The most jobs of topic processing at once, sampled from the database. */
typedef struct sampler {
	const char *topic;
	atomic_bool stop;
	long long   max;
	int         samples;
	pthread_t   th;
} sampler;

static void *
sample(void *arg)
{
	sampler *s = arg;
	PGconn  *c = brq_testdb_connect(dsn);
	char     sql[256];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM job WHERE topic = '%s' AND state = 'processing'",
		 s->topic);
	while (!atomic_load(&s->stop)) {
		long long n = brq_testdb_int(c, sql);
		s->max      = n > s->max ? n : s->max;
		s->samples++;
		usleep(2000);
	}
	PQfinish(c);
	return NULL;
}

Test(policy, a_concurrency_limit_holds_across_two_gateways_and_many_workers)
{
	start_gw2();
	enum { N = 3 };
	brooq_topic_policy p = BROOQ_TOPIC_POLICY_INIT;
	/* Set through the second gateway: the first learns it from the database. */
	brooq_client *ac2 = open_client(&gw2, true);
	OK(brooq_topic_limits(ac2, "conc", N, BROOQ_LIMIT_KEEP, &p));
	brooq_client_close(ac2);
	enqueue_many("conc", 2000); /* more than they can do: some wait when stats is read */
	sampler s = {.topic = "conc"};
	pthread_create(&s.th, NULL, sample, &s);
	/* 12 workers claiming 2 at a time: without the limit, up to 24 at once. */
	crowd cr = {.topic = "conc", .batch = 2, .hold_ms = 15, .wait_ms = 300};
	run_crowd(&cr, 6, 3000);
	atomic_store(&s.stop, true);
	pthread_join(s.th, NULL);
	cr_assert_leq(atomic_load(&cr.max_inflight), N, "workers held %d jobs at once",
		      atomic_load(&cr.max_inflight));
	cr_assert_leq(s.max, N, "%lld jobs processing at once (%d samples)", s.max, s.samples);
	/* The limit is reached (the test could see it broken) and work goes on. */
	cr_assert_eq(atomic_load(&cr.max_inflight), N);
	cr_assert_gt(atomic_load(&cr.done), 100, "only %d jobs done", atomic_load(&cr.done));
	/* stats and topics show the limit. */
	brooq_topic_stats **st;
	size_t              n_st;
	OK(brooq_stats(wc, &st, &n_st));
	cr_assert_eq(n_st, 1, "%zu topics in stats", n_st);
	cr_assert_eq(st[0]->max_running, N, "stats of %s: max_running %u", st[0]->topic, st[0]->max_running);
	brooq_stats_free(st, n_st);
	brq_gw_stop(&gw2);
}

Test(policy, a_rate_limit_holds_across_two_gateways_within_one_batch_per_second)
{
	start_gw2();
	enum { R = 20, BATCH = 5, SECONDS = 4 };
	brooq_topic_policy p = BROOQ_TOPIC_POLICY_INIT;
	OK(brooq_topic_limits(ac, "rate", BROOQ_LIMIT_KEEP, R, &p));
	cr_assert_eq(p.rate_per_s, R);
	enqueue_many("rate", 1000);
	crowd cr = {.topic = "rate", .batch = BATCH, .hold_ms = 0, .wait_ms = 300};
	run_crowd(&cr, 4, SECONDS * 1000);
	/* Starts per second of the database clock (claimed_at: when the start was
	 * counted). One batch of slack, as the issue allows. */
	char     *per_s = brq_testdb_value(db,
					   "SELECT string_agg(n::text, ',' ORDER BY s) FROM (SELECT"
					       " date_trunc('second', claimed_at) AS s, count(*) AS n FROM job"
					       " WHERE topic = 'rate' AND claimed_at IS NOT NULL GROUP BY 1) x");
	long long max =
		count("SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM job WHERE topic = 'rate'"
		      " AND claimed_at IS NOT NULL GROUP BY date_trunc('second', claimed_at)) x");
	long long total = count("SELECT count(*) FROM job WHERE topic = 'rate' AND claimed_at IS NOT NULL");
	cr_assert_leq(max, R + BATCH, "starts per second: %s", per_s);
	/* Not much less either: the limit is a rate, not a stop. */
	cr_assert_geq(total, (long long) R * (SECONDS - 1), "starts per second: %s", per_s);
	free(per_s);
	brq_gw_stop(&gw2);
}

/* ---- configuration -------------------------------------------------------------------- */

Test(policy, configured_limits_are_written_at_start_and_an_admin_may_change_them)
{
	static const char *env[] = {"BROOQ_POLL_INTERVAL=200ms",
				    "BROOQ_TOPIC_OVERRIDES=cfg.a:concurrency=2,rate=30;cfg.b:lease=9s,rate=0",
				    NULL};
	brq_gw_start(&gw2, dsn, env);
	brq_gw_await_log(&gw2, "topic_limits_configured", 2, 10000);
	cr_assert_eq(count("SELECT count(*) FROM topic_policy WHERE topic = 'cfg.a' AND max_running = 2"
			   " AND rate_per_s = 30 AND NOT paused"),
		     1);
	/* rate=0: no limit, so no row. */
	cr_assert_eq(count("SELECT count(*) FROM topic_policy WHERE topic = 'cfg.b'"), 0);
	brooq_topic_policy p = BROOQ_TOPIC_POLICY_INIT;
	OK(brooq_topic_limits(ac, "cfg.a", 5, BROOQ_LIMIT_KEEP, &p));
	cr_assert_eq(p.max_running, 5);
	cr_assert_eq(p.rate_per_s, 30);
	/* Enforced by the gateway that was not configured, too. */
	enqueue_many("cfg.a", 10);
	brooq_job **jobs;
	cr_assert_eq(claim_on(wc, "cfg.a", 10, 0, &jobs), 5);
	brooq_jobs_free(jobs, 5);
	brq_gw_stop(&gw2);
}

/* A settle frees a slot of a limited topic: a claim parked for it starts at once, not
 * at the monitor's next round (5 s here). */
Test(policy, a_settle_under_a_concurrency_limit_starts_a_parked_claim_at_once)
{
	static const char *env[] = {"BROOQ_POLL_INTERVAL=5s", NULL};
	brq_gw_start(&gw2, dsn, env);
	brooq_client      *a   = open_client(&gw2, false);
	brooq_client      *b   = open_client(&gw2, false);
	brooq_client      *ac2 = open_client(&gw2, true);
	brooq_topic_policy p   = BROOQ_TOPIC_POLICY_INIT;
	OK(brooq_topic_limits(ac2, "one", 1, BROOQ_LIMIT_KEEP, &p));
	enqueue_many("one", 3);
	brooq_job **held;
	cr_assert_eq(claim_on(a, "one", 5, 0, &held), 1, "the limit gives one");
	poller pb = {.c = b, .topic = "one", .wait_ms = 20000};
	pthread_create(&pb.th, NULL, poll_once, &pb);
	usleep(500 * 1000);
	cr_assert_eq(pb.returned_ms, 0, "a claim over the limit returned");
	int64_t t0 = now_ms();
	settle_done(a, held, 1);
	brooq_jobs_free(held, 1);
	pthread_join(pb.th, NULL);
	cr_assert_eq(pb.n, 1);
	cr_assert_lt(pb.returned_ms - t0, 1000, "the parked claim took %lld ms",
		     (long long) (pb.returned_ms - t0));
	brooq_client_close(a);
	brooq_client_close(b);
	brooq_client_close(ac2);
	brq_gw_stop(&gw2);
}

/* One claim of several topics merges them by priority first. */
Test(policy, a_claim_of_several_topics_takes_the_lowest_priority_number_first)
{
	uint64_t         a5       = enqueue_p(wc, "multi.a", 5, 0);
	uint64_t         b1       = enqueue_p(wc, "multi.b", 1, 0);
	uint64_t         a2       = enqueue_p(wc, "multi.a", 2, 0);
	const char      *topics[] = {"multi.a", "multi.b"};
	brooq_claim_opts o        = {
		       .size = sizeof(o), .worker = "w", .topics = topics, .n_topics = 2, .max_jobs = 2};
	brooq_job **jobs;
	size_t      n;
	OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 2);
	cr_assert(jobs[0]->lease.id != a5 && jobs[1]->lease.id != a5, "priority 5 went before 2 and 3");
	cr_assert((jobs[0]->lease.id == b1 || jobs[1]->lease.id == b1) &&
		  (jobs[0]->lease.id == a2 || jobs[1]->lease.id == a2));
	brooq_jobs_free(jobs, n);
}

Test(policy, brooqctl_enqueues_with_a_priority_and_shows_it)
{
	char *out;
	cr_assert_eq(ctl(false, "--json enqueue prio.ctl '{}' --priority 2", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(count("SELECT priority FROM job WHERE topic = 'prio.ctl'"), 2);
	long long id = count("SELECT id FROM job WHERE topic = 'prio.ctl'");
	char      args[64];
	snprintf(args, sizeof(args), "--json job %lld", id);
	cr_assert_eq(ctl(false, args, &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"priority\":2"), "%s", out);
	free(out);
	cr_assert_eq(ctl(false, "enqueue prio.ctl '{}' --priority 0", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(ctl(false, "job 1 --priority 3", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(count("SELECT count(*) FROM job WHERE topic = 'prio.ctl'"), 1);
}

/* A retry (issue 15.6) re-runs a job as it was enqueued: its priority too, one job or in
 * bulk. */
Test(policy, a_retry_keeps_the_priority_of_the_job_it_re_runs)
{
	long long one  = count("INSERT INTO job (topic, state, priority) VALUES ('prio.retry', 'dead', 7)"
				" RETURNING id");
	uint64_t  id   = 0;
	bool      made = false;
	cr_assert_eq(brooq_retry(ac, (uint64_t) one, &id, &made), BROOQ_OK, "%s", brooq_last_message());
	cr_assert(made);
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT priority FROM job WHERE id = %" PRIu64 " AND retry_of = %lld", id,
		 one);
	cr_assert_eq(count(sql), 7);

	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, priority) VALUES ('prio.retry', 'canceled', 3),"
			" ('prio.retry', 'canceled', 9)");
	size_t n = 0;
	cr_assert_eq(brooq_retry_bulk(ac, "prio.retry", BROOQ_CANCELED, 10, NULL, 0, &n), BROOQ_OK);
	cr_assert_eq(n, 2);
	cr_assert_eq(
		count("SELECT count(*) FROM job r JOIN job o ON o.id = r.retry_of"
		      " WHERE r.topic = 'prio.retry' AND r.priority = o.priority AND o.state = 'canceled'"),
		2);
}
