/* SPDX-License-Identifier: MIT */
/* The worker's pull mode (brooq_worker_handle_pull, _next, brooq_job_finish, _fd,
 * _wait_cancels), as a binding drives it: against a real gateway and PostgreSQL. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "tclient.h"
#include "testdb.h"
#include "tutil.h"

static char         *dsn;
static brq_gw        gw;
static brooq_client *wc, *ac;
static PGconn       *db;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, NULL);
	wc = brq_t_client_open(gw.url, gw.worker_token_file, 10000);
	ac = brq_t_client_open(gw.url, gw.admin_token_file, 10000);
	db = brq_testdb_connect(dsn);
}

static void
teardown(void)
{
	brooq_client_close(wc);
	brooq_client_close(ac);
	if (db != NULL)
		PQfinish(db);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(pull, .init = setup, .fini = teardown, .timeout = 120);

#define OK                              BRQ_OK
#define sql_int(...)                    brq_testdb_intf(db, __VA_ARGS__)
#define wait_int(want, timeout_ms, ...) brq_testdb_wait_int(db, want, timeout_ms, __VA_ARGS__)

static uint64_t
enqueue(const char *topic, const char *payload)
{
	brooq_job_spec       j = BROOQ_JOB_SPEC_INIT;
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	j.topic                = topic;
	j.payload              = payload;
	OK(brooq_enqueue(wc, &j, 1, &r));
	return r.id;
}

/* A pull worker of `threads` slots on topic, running on its own thread. */
static brooq_worker *
pull_worker(const char *topic, int threads, int prefetch_max, brq_t_runner *r)
{
	brooq_worker_opts o = {
		.size = sizeof(o), .threads = threads, .prefetch_max = prefetch_max, .stop_grace_ms = 20000};
	brooq_worker *w = NULL;
	OK(brooq_worker_new(wc, &o, &w));
	OK(brooq_worker_handle_pull(w, topic));
	brq_t_runner_start(r, w);
	return w;
}

/* The next job, waiting up to 20 s; fails the test when none comes. */
static brooq_job_ctx *
next_job(brooq_worker *w)
{
	brooq_job_ctx *j = NULL;
	OK(brooq_worker_next(w, 20000, &j));
	cr_assert_not_null(j, "the worker stopped instead of handing out a job");
	return j;
}

static atomic_int out, max_out, n_done;

/* A puller thread: results {"n": id}, until the worker stops. */
static void *
puller(void *arg)
{
	brooq_worker  *w = arg;
	brooq_job_ctx *j;
	while (brooq_worker_next(w, -1, &j) == BROOQ_OK && j != NULL) {
		int now = atomic_fetch_add(&out, 1) + 1;
		for (int m = atomic_load(&max_out);
		     now > m && !atomic_compare_exchange_weak(&max_out, &m, now);) {
		}
		char res[64];
		snprintf(res, sizeof(res), "{\"n\": %" PRIu64 "}", brooq_job_id(j));
		brq_t_sleep_ms(1);
		atomic_fetch_sub(&out, 1);
		brooq_job_done_result(j, res, 0);
		brooq_job_finish(j);
		atomic_fetch_add(&n_done, 1);
	}
	return NULL;
}

Test(pull, pullers_run_every_job_with_at_most_threads_out_at_once)
{
	brq_t_runner  r;
	brooq_worker *w = pull_worker("p.many", 3, 0, &r);
	for (int i = 0; i < 60; i++)
		enqueue("p.many", "{}");
	pthread_t th[6];
	for (int i = 0; i < 6; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, puller, w), 0);
	cr_assert_eq(wait_int(60, 30000, "SELECT count(*) FROM job WHERE state = 'done'"), 60);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE result->>'n' = id::text"), 60);
	brq_t_runner_stop(&r);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL); /* every puller got "stopped" */
	cr_assert_leq(atomic_load(&max_out), 3, "%d jobs out at once with 3 slots", atomic_load(&max_out));
	cr_assert_eq(atomic_load(&n_done), 60);
	brooq_worker_free(w);
}

Test(pull, the_fd_is_readable_when_a_job_is_ready_and_empty_after_a_timed_out_next)
{
	brq_t_runner  r;
	brooq_worker *w  = pull_worker("p.fd", 1, 0, &r);
	int           fd = brooq_worker_fd(w);
	cr_assert_geq(fd, 0);
	brooq_job_ctx *j = NULL;
	cr_assert_eq(brooq_worker_next(w, 0, &j), BROOQ_ETIMEDOUT);
	cr_assert_null(j);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 0), 0, "readable with nothing to hand out");
	uint64_t id = enqueue("p.fd", "{\"x\": 1}");
	cr_assert_eq(poll(&p, 1, 20000), 1, "not readable after a job was claimed");
	OK(brooq_worker_next(w, 0, &j));
	cr_assert_not_null(j);
	cr_assert_eq(brooq_job_id(j), id);
	cr_assert_str_eq(brooq_job_payload(j, NULL), "{\"x\": 1}");
	/* Its one slot is out: nothing more until it is finished. */
	enqueue("p.fd", "{}");
	brooq_job_ctx *k = NULL;
	cr_assert_eq(brooq_worker_next(w, 50, &k), BROOQ_ETIMEDOUT);
	cr_assert_eq(poll(&p, 1, 0), 0, "readable while the only slot is out");
	brooq_job_fail(j, "first one fails");
	brooq_job_finish(j);
	cr_assert_eq(poll(&p, 1, 20000), 1, "finishing did not make the queued job's fd readable");
	OK(brooq_worker_next(w, 0, &k));
	cr_assert_not_null(k);
	brooq_job_finish(k);
	cr_assert_eq(wait_int(1, 20000, "SELECT count(*) FROM job WHERE state = 'done'"), 1);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND last_error = 'first one fails'",
			     id),
		     1);
	brq_t_runner_stop(&r);
	cr_assert_eq(poll(&p, 1, 0), 1, "the stop did not make the fd readable");
	OK(brooq_worker_next(w, 0, &k));
	cr_assert_null(k, "a job after the stop");
	brooq_worker_free(w);
}

Test(pull, an_operator_cancel_moves_the_cancel_count_and_raises_the_flag)
{
	brq_t_runner   r;
	brooq_worker  *w  = pull_worker("p.cancel", 2, 0, &r);
	uint64_t       id = enqueue("p.cancel", "{}");
	brooq_job_ctx *j  = next_job(w);
	uint64_t       c0 = brooq_worker_wait_cancels(w, UINT64_MAX, 0);
	cr_assert_eq(brooq_worker_wait_cancels(w, c0, 10), c0);
	cr_assert(!brooq_job_canceled(j));
	brooq_state st;
	bool        canceled;
	OK(brooq_cancel(ac, id, &st, &canceled));
	cr_assert(canceled);
	uint64_t c1 = brooq_worker_wait_cancels(w, c0, 30000);
	cr_assert_neq(c1, c0, "no cancel heard");
	cr_assert(brooq_job_canceled(j));
	cr_assert_eq(brooq_job_cancel_reason(j), BROOQ_CANCEL_OPERATOR);
	brooq_job_done(j);
	brooq_job_finish(j); /* discarded: the job stays canceled */
	brq_t_runner_stop(&r);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64 " AND state = 'canceled'", id),
		     1);
	brooq_worker_free(w);
}

Test(pull, a_stop_gives_back_the_queue_at_once_and_lets_the_held_job_finish)
{
	for (int i = 0; i < 20; i++)
		enqueue("p.stop", "{}");
	brq_t_runner  r;
	brooq_worker *w = pull_worker("p.stop", 20, 0, &r);
	/* All are claimed and queued; one is handed out, the rest wait unstarted. */
	cr_assert_eq(wait_int(20, 20000, "SELECT count(*) FROM job WHERE state = 'processing'"), 20);
	brooq_job_ctx *held = next_job(w);
	brooq_worker_stop(w);
	/* The queue comes back within the grace (20 s), its attempts returned. */
	cr_assert_eq(
		wait_int(19, 15000,
			 "SELECT count(*) FROM job WHERE state IN ('pending', 'failed') AND attempts = 0 "
			 "AND locked_by IS NULL"),
		19);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'processing'"), 1);
	brooq_job_done_result(held, "\"late\"", 0);
	brooq_job_finish(held);
	pthread_join(r.th, NULL);
	cr_assert_eq(r.rc, BROOQ_OK);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'done' AND result = '\"late\"'"), 1);
	brooq_job_ctx *k = NULL;
	OK(brooq_worker_next(w, 0, &k));
	cr_assert_null(k);
	brooq_worker_free(w);
}

Test(pull, a_cancel_with_an_error_stores_why)
{
	brq_t_runner   r;
	brooq_worker  *w  = pull_worker("p.why", 1, 0, &r);
	uint64_t       id = enqueue("p.why", "{}");
	brooq_job_ctx *j  = next_job(w);
	brooq_job_cancel_error(j, "no longer wanted");
	brooq_job_finish(j);
	cr_assert_eq(wait_int(1, 20000,
			      "SELECT count(*) FROM job WHERE id = %" PRIu64
			      " AND state = 'canceled' AND last_error = 'no longer wanted'",
			      id),
		     1);
	brq_t_runner_stop(&r);
	brooq_worker_free(w);
}

static void
h_nothing(brooq_job_ctx *job, void *arg)
{
	(void) job;
	(void) arg;
}

Test(pull, modes_do_not_mix_and_a_stop_before_run_ends_the_pullers)
{
	brooq_worker_opts o = BROOQ_WORKER_OPTS_INIT;
	brooq_worker     *w = NULL;
	OK(brooq_worker_new(wc, &o, &w));
	brooq_job_ctx *j = NULL;
	cr_assert_eq(brooq_worker_next(w, 0, &j), BROOQ_EINVAL, "next on a worker that pulls nothing");
	cr_assert_eq(brooq_worker_fd(w), -1);
	OK(brooq_worker_handle_pull(w, "p.mix"));
	cr_assert_eq(brooq_worker_handle(w, "p.other", h_nothing, NULL), BROOQ_EINVAL);
	cr_assert_eq(brooq_worker_handle_pull(w, "Bad Topic"), BROOQ_EINVAL);
	cr_assert_eq(brooq_worker_next(w, 0, &j), BROOQ_ETIMEDOUT);
	brooq_worker_stop(w);
	OK(brooq_worker_run(w));
	OK(brooq_worker_next(w, -1, &j));
	cr_assert_null(j);
	cr_assert_eq(brooq_worker_wait_cancels(w, 0, -1), 0);
	brooq_worker_free(w);
}
