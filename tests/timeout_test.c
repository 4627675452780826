/* SPDX-License-Identifier: MIT */
/* Attempt timeout and maximum execution time (issue 15, part 8), against a real
 * brooq-gateway and PostgreSQL: what the claim tells the worker, the heartbeat refused
 * past the maximum execution time and its reasons, and the worker runtime's deadline,
 * cancel reasons, timed-out failures and hung count. The configuration's checks are in
 * config_test. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tclient.h"
#include "tutil.h"

#define OK       BRQ_OK /* tests/support/tutil.h */
#define now_us   brq_t_now_us
#define sleep_ms brq_t_sleep_ms

static char         *dsn;
static brq_gw        gw;
static bool          gw_up;
static brooq_client *wc; /* worker token */
static brooq_client *ac; /* admin token */
static PGconn       *db;
static brq_arena     arena;
static uint16_t      http_port;

/* Topics: t.slow times out after 300 ms (5 s bound), t.hang is bounded at 1500 ms
 * with no attempt timeout, t.free has neither; the others inherit 2 s / 10 s. */
#define TOPICS                                                                         \
	"BROOQ_TOPIC_OVERRIDES=t.slow:attempt_timeout=300ms,max_execution_time=5s;"    \
	"t.hang:attempt_timeout=0,max_execution_time=1500ms;t.free:attempt_timeout=0," \
	"max_execution_time=0"

/* ---- fixture -------------------------------------------------------------------------- */

static brooq_client *
open_client(const char *token_file)
{
	return brq_t_client_open(gw.url, token_file, 5000);
}

static void
setup(void)
{
	const char *env[] = {"BROOQ_ATTEMPT_TIMEOUT=2s",
			     "BROOQ_MAX_EXECUTION_TIME=10s",
			     TOPICS,
			     "BROOQ_LEASE=1s",
			     "BROOQ_REAPER_INTERVAL=200ms",
			     "BROOQ_BACKOFF_BASE=400ms",
			     "BROOQ_BACKOFF_MAX=400ms",
			     NULL};
	dsn               = brq_testdb_create(true);
	http_port         = brq_gw_start_http(&gw, dsn, env);
	gw_up             = true;
	wc                = open_client(gw.worker_token_file);
	ac                = open_client(gw.admin_token_file);
	db                = brq_testdb_connect(dsn);
	brq_arena_init(&arena);
}

static void
teardown(void)
{
	brq_arena_fini(&arena);
	brooq_client_close(wc);
	brooq_client_close(ac);
	if (db != NULL)
		PQfinish(db);
	if (gw_up)
		brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(timeouts, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t
enqueue(const char *topic, uint32_t max_attempts)
{
	brooq_job_spec       j = {.size         = sizeof(brooq_job_spec),
				  .topic        = topic,
				  .payload      = "{}",
				  .max_attempts = max_attempts};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &j, 1, &r));
	return r.id;
}

/* Queries of the test database (tests/support/testdb.h). */
#define sql_int(...) brq_testdb_intf(db, __VA_ARGS__)

#define wait_int(want, timeout_ms, ...) brq_testdb_wait_int(db, want, timeout_ms, __VA_ARGS__)

/* ---- the wire: claim and heartbeat ---------------------------------------------------- */

/* Claims one job of topic over the raw protocol (lease 1 s) into *out; its lease in *l. */
static void
wire_claim(const char *topic, brq_claimed_job *out, brq_lease_ref *l)
{
	brq_str     t   = brq_str_c(topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .token = brq_gw_worker(&gw),
			   .claim = {.worker       = brq_str_c("test"),
				     .topics       = &t,
				     .n_topics     = 1,
				     .n            = 1,
				     .has_lease_ms = true,
				     .lease_ms     = 1000}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK, "claim: %.*s", (int) rep.msg.len,
		     rep.msg.ptr);
	cr_assert_eq(rep.claim.n_jobs, 1, "nothing to claim in %s", topic);
	*out       = rep.claim.jobs[0];
	out->topic = out->payload = (brq_str) {NULL, 0}; /* borrowed from keep */
	l->id                     = out->id;
	memcpy(l->lease, out->lease, BRQ_LEASE_LEN);
	free(keep);
}

/* Heartbeats n leases; extended[] and reasons[] (BRQ_LOST_NONE x n when the reply
 * carries none); returns whether it carried reasons. */
static bool
wire_heartbeat(const brq_lease_ref *l, uint32_t n, bool *extended, brq_lost_reason *reasons)
{
	brq_request req = {.op        = BRQ_OP_HEARTBEAT,
			   .token     = brq_gw_worker(&gw),
			   .heartbeat = {.leases = (brq_lease_ref *) l, .n_leases = n}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.heartbeat.n_extended, n);
	bool has = rep.heartbeat.lost_reasons != NULL;
	for (uint32_t i = 0; i < n; i++) {
		extended[i] = rep.heartbeat.extended[i];
		reasons[i]  = has ? rep.heartbeat.lost_reasons[i] : BRQ_LOST_NONE;
	}
	free(keep);
	return has;
}

Test(timeouts, a_claim_carries_the_topics_timeouts_and_none_where_there_are_none)
{
	const char *topics[]  = {"t.other", "t.slow", "t.hang", "t.free"};
	uint64_t    want[][2] = {{2000, 10000}, {300, 5000}, {0, 1500}, {0, 0}};
	for (size_t i = 0; i < 4; i++) {
		enqueue(topics[i], 0);
		brq_claimed_job j;
		brq_lease_ref   l;
		wire_claim(topics[i], &j, &l);
		cr_assert_eq(j.attempt_timeout_ms, want[i][0], "%s: attempt timeout %" PRIu64, topics[i],
			     j.attempt_timeout_ms);
		cr_assert_eq(j.max_execution_ms, want[i][1], "%s: max execution %" PRIu64, topics[i],
			     j.max_execution_ms);
	}
	/* The client library hands them on. */
	enqueue("t.slow", 0);
	const char      *t = "t.slow";
	brooq_claim_opts o = {.size = sizeof(o), .topics = &t, .n_topics = 1, .max_jobs = 1};
	brooq_job      **jobs;
	size_t           n;
	OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(jobs[0]->attempt_timeout_ms, 300);
	cr_assert_eq(jobs[0]->max_execution_ms, 5000);
	brooq_jobs_free(jobs, n);
}

/* Past its maximum execution time an attempt's heartbeat is refused, saying why; the
 * lease then runs out and the reaper returns the job as it returns any expired lease:
 * attempts unchanged, no error written (invariant 7). */
Test(timeouts, a_heartbeat_past_the_maximum_execution_time_is_refused_and_the_reaper_returns_the_job)
{
	uint64_t        id = enqueue("t.hang", 0);
	brq_claimed_job j;
	brq_lease_ref   l;
	int64_t         t0 = now_us();
	wire_claim("t.hang", &j, &l);
	bool            ext;
	brq_lost_reason why;
	int             extended = 0;
	/* Heartbeats every 300 ms keep the 1 s lease until 1500 ms after the claim. */
	for (;;) {
		sleep_ms(300);
		bool has = wire_heartbeat(&l, 1, &ext, &why);
		if (!ext) {
			cr_assert(has, "a refused heartbeat says why");
			break;
		}
		cr_assert(!has, "no reasons when nothing was lost");
		extended++;
	}
	double ms = (double) (now_us() - t0) / 1000.0;
	cr_assert_eq(why, BRQ_LOST_MAX_EXECUTION, "reason %d", (int) why);
	cr_assert_geq(ms, 1500.0, "refused %.0f ms after the claim, before the bound", ms);
	cr_assert_leq(ms, 1500.0 + 300.0 + 1000.0, "refused %.0f ms after the claim", ms);
	cr_assert_geq(extended, 2);
	cr_assert_eq(brq_gw_metric(http_port, "brooq_max_execution_exceeded_total{topic=\"t.hang\"}"), 1);
	/* Each lease gets its own reason, also when one job is named twice. */
	brq_lease_ref   two[2] = {l, l};
	bool            ext2[2];
	brq_lost_reason why2[2];
	two[0].lease[0] ^= 0xff;
	cr_assert(wire_heartbeat(two, 2, ext2, why2));
	cr_assert(!ext2[0] && !ext2[1]);
	cr_assert_eq(why2[0], BRQ_LOST_GONE);
	cr_assert_eq(why2[1], BRQ_LOST_MAX_EXECUTION);

	/* The lease is not extended again: it ends at most a lease after the last extension. */
	cr_assert_eq(wait_int(1, 3000,
			      "SELECT count(*) FROM job WHERE id = %" PRIu64
			      " AND state = 'pending' AND attempts = 1 AND last_error IS NULL",
			      id),
		     1, "the reaper did not return the job as an expired lease");
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND claimed_at + interval '1500 ms' < updated_at",
			     id),
		     1);
	/* The next attempt starts a fresh bound. */
	brq_claimed_job j2;
	brq_lease_ref   l2;
	wire_claim("t.hang", &j2, &l2);
	cr_assert_eq(j2.attempts, 2);
	wire_heartbeat(&l2, 1, &ext, &why);
	cr_assert(ext);
}

/* The job's row shows the latest claim and, while it runs, its attempt's deadlines. */
Test(timeouts, the_job_shows_its_claim_and_the_running_attempts_deadlines)
{
	uint64_t        id = enqueue("t.slow", 0);
	brooq_job_info *j;
	OK(brooq_job_get(wc, id, &j));
	cr_assert_eq(j->claimed_at_ms, 0);
	cr_assert_eq(j->attempt_deadline_ms, 0);
	brooq_job_info_free(j);
	brq_claimed_job c;
	brq_lease_ref   l;
	wire_claim("t.slow", &c, &l);
	OK(brooq_job_get(wc, id, &j));
	long long claimed = sql_int(
		"SELECT (extract(epoch FROM claimed_at) * 1000)::int8 FROM job WHERE id = %" PRIu64, id);
	cr_assert_eq(j->claimed_at_ms, claimed);
	cr_assert_eq(j->attempt_deadline_ms, claimed + 300);
	cr_assert_eq(j->max_execution_deadline_ms, claimed + 5000);
	brooq_job_info_free(j);
	/* Not processing: no deadlines, the claim stays. */
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = {.id = l.id}, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	memcpy(it.lease.token, l.lease, BROOQ_LEASE_LEN);
	OK(brooq_settle(wc, &it, 1, &res));
	cr_assert(res.applied);
	OK(brooq_job_get(wc, id, &j));
	cr_assert_eq(j->claimed_at_ms, claimed);
	cr_assert_eq(j->attempt_deadline_ms, 0);
	cr_assert_eq(j->max_execution_deadline_ms, 0);
	brooq_job_info_free(j);
}

/* A lost lease's reason: canceled (an operator), gone (settled, reaped, another token). */
Test(timeouts, a_heartbeat_tells_a_canceled_job_from_a_lease_that_is_gone)
{
	for (int i = 0; i < 3; i++)
		enqueue("t.free", 0);
	brq_claimed_job j[3];
	brq_lease_ref   l[4];
	for (int i = 0; i < 3; i++)
		wire_claim("t.free", &j[i], &l[i]);
	brooq_state st;
	bool        canceled;
	OK(brooq_cancel(ac, l[1].id, &st, &canceled));
	cr_assert(canceled);
	/* Job 2's lease as the reaper would leave it. */
	cr_assert_eq(
		sql_int("WITH u AS (UPDATE job SET state = 'pending', locked_by = NULL, locked_until = NULL,"
			" lease_token = NULL WHERE id = %" PRIu64 " RETURNING 1) SELECT count(*) FROM u",
			l[2].id),
		1);
	l[3] = l[0];
	l[3].lease[0] ^= 0xff; /* a token that is not the job's */
	bool            ext[4];
	brq_lost_reason why[4];
	cr_assert(wire_heartbeat(l, 4, ext, why));
	cr_assert(ext[0]);
	cr_assert(!ext[1] && !ext[2] && !ext[3]);
	cr_assert_eq(why[0], BRQ_LOST_NONE);
	cr_assert_eq(why[1], BRQ_LOST_CANCELED);
	cr_assert_eq(why[2], BRQ_LOST_GONE);
	cr_assert_eq(why[3], BRQ_LOST_GONE);
	cr_assert_eq(brq_gw_metric(http_port, "brooq_lease_lost_total{topic=\"t.free\"}"), 3);
	cr_assert_eq(brq_gw_metric(http_port, "brooq_max_execution_exceeded_total{topic=\"t.free\"}"), 0);
}

/* ---- the worker runtime ---------------------------------------------------------------- */

typedef brq_t_runner runner;

static void
run_worker(runner *r, const char *topic, brooq_handler fn, uint32_t lease_ms, uint32_t hung_grace_ms)
{
	brooq_worker_opts o = {.size          = sizeof(o),
			       .threads       = 1,
			       .lease_ms      = lease_ms,
			       .wait_ms       = 300,
			       .hung_grace_ms = hung_grace_ms,
			       .prefetch_max  = -1};
	brooq_worker     *w = NULL;
	OK(brooq_worker_new(wc, &o, &w));
	OK(brooq_worker_handle(w, topic, fn, NULL));
	brq_t_runner_start(r, w);
}

static brooq_worker_stats
stop_worker(runner *r)
{
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brq_t_runner_stop(r);
	brooq_worker_get_stats(r->w, &st);
	brooq_worker_free(r->w);
	return st;
}

/* What the handlers saw, by attempt (1-based, up to 3). */
static atomic_llong started_us[4], flag_us[4], returned_us[4], deadline_ms[4], wall_start_ms[4];
static atomic_int   reason[4], n_started;
static atomic_bool  release;

static int64_t
wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Attempt 1 runs until its flag is raised (or released), then says done; later
 * attempts succeed at once. Records when and why. */
static void
h_slow_first(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	uint32_t a = brooq_job_attempts(job);
	if (a > 3)
		a = 3;
	atomic_store(&started_us[a], now_us());
	atomic_store(&wall_start_ms[a], wall_ms());
	atomic_store(&deadline_ms[a], brooq_job_deadline(job));
	atomic_fetch_add(&n_started, 1);
	if (a == 1 || brooq_job_max_attempts(job) == 1) {
		while (!brooq_job_canceled(job) && !atomic_load(&release))
			sleep_ms(2);
		atomic_store(&flag_us[a], now_us());
		atomic_store(&reason[a], (int) brooq_job_cancel_reason(job));
	}
	brooq_job_done(job); /* replaced: the attempt timed out */
	atomic_store(&returned_us[a], now_us());
}

Test(timeouts,
     a_handler_past_its_attempt_timeout_sees_the_flag_and_the_attempt_fails_with_backoff_then_succeeds)
{
	uint64_t id = enqueue("t.slow", 3);
	runner   r;
	run_worker(&r, "t.slow", h_slow_first, 0, 0);
	cr_assert_eq(
		wait_int(1, 10000, "SELECT count(*) FROM job WHERE id = %" PRIu64 " AND state = 'done'", id),
		1, "the job never ended done");
	brooq_worker_stats st = stop_worker(&r);

	cr_assert_eq(atomic_load(&reason[1]), BROOQ_CANCEL_TIMEOUT, "reason %s",
		     brooq_cancel_reason_name((brooq_cancel_reason) atomic_load(&reason[1])));
	double after = (double) (atomic_load(&flag_us[1]) - atomic_load(&started_us[1])) / 1000.0;
	fprintf(stderr, "timeout_test: the flag came %.1f ms after the handler started (timeout 300 ms)\n",
		after);
	cr_assert_geq(after, 250.0, "flag raised %.1f ms after the start", after);
	cr_assert_leq(after, 1000.0, "flag raised %.1f ms after the start", after);
	/* The deadline: the claim's receipt plus 300 ms, by the worker's clock. */
	long long dl = atomic_load(&deadline_ms[1]), ws = atomic_load(&wall_start_ms[1]);
	cr_assert(dl >= ws && dl <= ws + 300 + 50, "deadline %lld, start %lld", dl, ws);
	cr_assert_eq(atomic_load(&reason[2]), BROOQ_CANCEL_NONE);
	/* Backoff: 400 ms, drawn in [200, 400], between the failure and the next attempt. */
	double gap = (double) (atomic_load(&started_us[2]) - atomic_load(&returned_us[1])) / 1000.0;
	cr_assert_geq(gap, 190.0, "the next attempt came %.1f ms after the timed-out one", gap);

	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND attempts = 2 AND last_error = 'attempt timed out after 300 ms'",
			     id),
		     1, "the timed-out attempt's error is not on the row");
	cr_assert_eq(st.claimed, 2);
	cr_assert_eq(st.settled, 2);
	cr_assert_eq(st.lease_lost, 0);
	cr_assert_eq(st.hung, 0);
}

/* Holds its job until released. */
static void
h_hold(brooq_job_ctx *job, void *arg)
{
	(void) job;
	(void) arg;
	atomic_fetch_add(&n_started, 1);
	while (!atomic_load(&release))
		sleep_ms(2);
}

/* The worker's keeper sleeps until the soonest thing it must do for the jobs it holds
 * (here the held job's heartbeat, 10 s away with a 30 s lease), and a claim wakes it
 * only when one of its jobs is due sooner: a job claimed later whose attempt times out
 * in 300 ms must still see its flag in time, not at the other job's heartbeat. */
Test(timeouts, a_job_claimed_while_the_keeper_sleeps_for_another_still_times_out_on_time)
{
	enqueue("t.free", 1);
	brooq_worker_opts o = {
		.size = sizeof(o), .threads = 2, .lease_ms = 30000, .wait_ms = 300, .prefetch_max = -1};
	brooq_worker *w = NULL;
	OK(brooq_worker_new(wc, &o, &w));
	OK(brooq_worker_handle(w, "t.free", h_hold, NULL));
	OK(brooq_worker_handle(w, "t.slow", h_slow_first, NULL));
	runner r;
	brq_t_runner_start(&r, w);
	for (int i = 0; i < 5000 && atomic_load(&n_started) < 1; i++)
		sleep_ms(2);
	cr_assert_eq(atomic_load(&n_started), 1, "the t.free job never started");
	/* The worker's next claim parked at the gateway: the keeper, woken by the first claim,
	 * has had that round trip to go back to sleep until the held job's heartbeat, and the
	 * t.slow job goes to that parked claim. */
	cr_assert(brq_gw_wait_metric(http_port, "brooq_long_polls", 1, 10000),
		  "the worker's next claim never parked");

	uint64_t id = enqueue("t.slow", 1);
	cr_assert_eq(
		wait_int(1, 10000, "SELECT count(*) FROM job WHERE id = %" PRIu64 " AND state = 'dead'", id),
		1, "the timed-out job never ended dead");
	double after = (double) (atomic_load(&flag_us[1]) - atomic_load(&started_us[1])) / 1000.0;
	cr_assert_eq(atomic_load(&reason[1]), BROOQ_CANCEL_TIMEOUT);
	cr_assert_geq(after, 250.0, "flag raised %.1f ms after the start", after);
	cr_assert_leq(after, 3000.0, "flag raised %.1f ms after the start: at a heartbeat, not the deadline",
		      after);
	atomic_store(&release, true);
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brq_t_runner_stop(&r);
	brooq_worker_get_stats(w, &st);
	brooq_worker_free(w);
	cr_assert_eq(st.claimed, 2);
	cr_assert_eq(st.settled, 2);
	cr_assert_eq(st.lease_lost, 0);
}

Test(timeouts, a_last_attempt_that_times_out_buries_the_job)
{
	uint64_t id = enqueue("t.slow", 1);
	runner   r;
	run_worker(&r, "t.slow", h_slow_first, 0, 0);
	cr_assert_eq(
		wait_int(1, 10000, "SELECT count(*) FROM job WHERE id = %" PRIu64 " AND state = 'dead'", id),
		1, "the job never ended dead");
	brooq_worker_stats st = stop_worker(&r);
	cr_assert_eq(atomic_load(&reason[1]), BROOQ_CANCEL_TIMEOUT);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND attempts = 1 AND last_error = 'attempt timed out after 300 ms'",
			     id),
		     1);
	cr_assert_eq(st.settled, 1);
}

/* Ignores its flag until released. */
static void
h_ignores(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	atomic_store(&started_us[1], now_us());
	atomic_fetch_add(&n_started, 1);
	bool seen = false;
	while (!atomic_load(&release)) {
		if (!seen && brooq_job_canceled(job)) {
			seen = true;
			atomic_store(&flag_us[1], now_us());
			atomic_store(&reason[1], (int) brooq_job_cancel_reason(job));
		}
		sleep_ms(2);
	}
	atomic_store(&returned_us[1], now_us());
}

/* t.hang: no attempt timeout, bounded at 1500 ms. The worker heartbeats (lease 1 s:
 * every 333 ms) while its handler runs on; past the bound the gateway refuses, the
 * handler's flag goes up with reason max_execution, it counts as hung at once (its hung
 * grace is 10 s), and the reaper returns the job when the lease runs out. */
Test(timeouts, a_handler_running_past_the_maximum_execution_time_loses_its_lease_and_is_counted_hung)
{
	uint64_t id = enqueue("t.hang", 0);
	runner   r;
	run_worker(&r, "t.hang", h_ignores, 1000, 10000);
	int64_t until = now_us() + 5000000;
	while (atomic_load(&flag_us[1]) == 0 && now_us() < until)
		sleep_ms(10);
	cr_assert_neq(atomic_load(&flag_us[1]), 0, "the flag never came");
	cr_assert_eq(atomic_load(&reason[1]), BROOQ_CANCEL_MAX_EXECUTION, "reason %s",
		     brooq_cancel_reason_name((brooq_cancel_reason) atomic_load(&reason[1])));
	double after = (double) (atomic_load(&flag_us[1]) - atomic_load(&started_us[1])) / 1000.0;
	fprintf(stderr,
		"timeout_test: max execution reached the handler %.1f ms after it started (1500 ms)\n",
		after);
	cr_assert_geq(after, 1400.0, "flag after %.1f ms", after);
	cr_assert_leq(after, 1500.0 + 333.0 + 1000.0, "flag after %.1f ms", after);
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(r.w, &st);
	cr_assert_eq(st.hung, 1, "the watchdog did not count it");
	cr_assert_eq(st.lease_lost, 1);
	cr_assert_eq(wait_int(1, 3000,
			      "SELECT count(*) FROM job WHERE id = %" PRIu64
			      " AND state = 'pending' AND attempts = 1 AND last_error IS NULL",
			      id),
		     1, "the lease was extended, or the job not reaped");
	cr_assert_eq(atomic_load(&n_started), 1, "no free thread: nothing else ran");
	/* Released, the hung handler's result is discarded; the next attempt (a fresh
	 * bound) runs to done. */
	atomic_store(&release, true);
	cr_assert_eq(wait_int(1, 5000,
			      "SELECT count(*) FROM job WHERE id = %" PRIu64
			      " AND state = 'done' AND attempts = 2",
			      id),
		     1, "the next attempt did not finish the job");
	st = stop_worker(&r);
	cr_assert_eq(st.settled, 1, "only the second attempt's result was written");
	cr_assert_eq(st.hung, 1);
	cr_assert_eq(atomic_load(&n_started), 2);
}

/* Waits for the flag; records why. */
static void
h_until_flag(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	atomic_fetch_add(&n_started, 1);
	while (!brooq_job_canceled(job))
		sleep_ms(2);
	atomic_store(&reason[1], (int) brooq_job_cancel_reason(job));
	brooq_job_fail(job, "discarded");
	atomic_store(&returned_us[1], now_us());
}

static void
await_started(int n)
{
	int64_t until = now_us() + 5000000;
	while (atomic_load(&n_started) < n && now_us() < until)
		sleep_ms(5);
	cr_assert_eq(atomic_load(&n_started), n, "the handler never started");
}

static void
await_returned(void)
{
	int64_t until = now_us() + 5000000;
	while (atomic_load(&returned_us[1]) == 0 && now_us() < until)
		sleep_ms(5);
	cr_assert_neq(atomic_load(&returned_us[1]), 0, "the handler never saw its flag");
}

Test(timeouts, a_handler_reads_operator_cancel_as_its_reason)
{
	uint64_t id = enqueue("t.free", 0);
	runner   r;
	run_worker(&r, "t.free", h_until_flag, 3000, 0);
	await_started(1);
	brooq_state st_after;
	bool        canceled;
	OK(brooq_cancel(ac, id, &st_after, &canceled));
	cr_assert(canceled);
	await_returned();
	brooq_worker_stats st = stop_worker(&r);
	cr_assert_eq(atomic_load(&reason[1]), BROOQ_CANCEL_OPERATOR, "reason %s",
		     brooq_cancel_reason_name((brooq_cancel_reason) atomic_load(&reason[1])));
	cr_assert_eq(st.settled, 0);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND state = 'canceled' AND last_error IS NULL",
			     id),
		     1);
}

Test(timeouts, a_handler_reads_a_lost_lease_as_its_reason)
{
	uint64_t id = enqueue("t.free", 0);
	runner   r;
	run_worker(&r, "t.free", h_until_flag, 3000, 0);
	await_started(1);
	/* The lease taken away as the reaper of another gateway would. */
	cr_assert_eq(
		sql_int("WITH u AS (UPDATE job SET state = 'pending', locked_by = NULL, locked_until = NULL,"
			" lease_token = NULL WHERE id = %" PRIu64 " RETURNING 1) SELECT count(*) FROM u",
			id),
		1);
	await_returned();
	cr_assert_eq(atomic_load(&reason[1]), BROOQ_CANCEL_LEASE_LOST, "reason %s",
		     brooq_cancel_reason_name((brooq_cancel_reason) atomic_load(&reason[1])));
	brooq_worker_stop(r.w);
	pthread_join(r.th, NULL);
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(r.w, &st);
	brooq_worker_free(r.w);
	cr_assert_eq(st.lease_lost, 1);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64 " AND last_error IS NULL", id),
		     1);
}

Test(timeouts, reason_names)
{
	cr_assert_str_eq(brooq_cancel_reason_name(BROOQ_CANCEL_NONE), "none");
	cr_assert_str_eq(brooq_cancel_reason_name(BROOQ_CANCEL_TIMEOUT), "timeout");
	cr_assert_str_eq(brooq_cancel_reason_name(BROOQ_CANCEL_OPERATOR), "operator");
	cr_assert_str_eq(brooq_cancel_reason_name(BROOQ_CANCEL_LEASE_LOST), "lease_lost");
	cr_assert_str_eq(brooq_cancel_reason_name(BROOQ_CANCEL_MAX_EXECUTION), "max_execution");
	cr_assert_str_eq(brooq_cancel_reason_name(BROOQ_CANCEL_STOP), "stop");
	cr_assert_str_eq(brooq_cancel_reason_name((brooq_cancel_reason) 99), "unknown");
}
