/* SPDX-License-Identifier: MIT */
/*
 * Requests do not outlive their callers (issue 10.6), real gateway and PostgreSQL.
 *
 * The scenario of the issue: an operator's transaction holds a lock on `job`; a
 * worker's claim of 10 (client timeout 3 s) waits behind it and times out on the
 * client. Before, the gateway ran the claim when the lock went away: 10 jobs
 * `processing`, leased to a caller that had given up, for the rest of the 2-minute
 * lease. Now the client sends its timeout with the request (timeout_ms), and the
 * gateway bounds the claim's statements by it (the statement is canceled, nothing is
 * leased), never starts work whose caller has given up, and gives back the leases of a
 * claim that completes too late.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

static char         *dsn;
static brq_gw        gw;
static PGconn       *db;
static brooq_client *wc;

static void
setup(void)
{
	static const char *env[] = {"BROOQ_POOL_SIZE=4", NULL};
	dsn                      = brq_testdb_create(true);
	db                       = brq_testdb_connect(dsn);
	brq_gw_start(&gw, dsn, env);
	brooq_client_opts o = {.size       = sizeof(brooq_client_opts),
			       .url        = gw.url,
			       .token_file = gw.worker_token_file,
			       .timeout_ms = 3000};
	BRQ_OK(brooq_client_open(&o, &wc));
	/* Every pool connection up with its statements prepared: a PREPARE would wait
	 * for the lock too. */
	brq_gw_await_log(&gw, "db_connected conn=pool-", 4, 10000);
}

static void
teardown(void)
{
	brooq_client_close(wc);
	PQfinish(db);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(deadline, .init = setup, .fini = teardown, .timeout = 120);

static void
enqueue_n(const char *topic, int n)
{
	for (int i = 0; i < n; i++) {
		brooq_job_spec       spec = {.size = sizeof(brooq_job_spec), .topic = topic, .payload = "{}"};
		brooq_enqueue_result r    = BROOQ_ENQUEUE_RESULT_INIT;
		BRQ_OK(brooq_enqueue(wc, &spec, 1, &r));
	}
}

Test(deadline, a_claim_that_timed_out_behind_a_lock_leases_nothing)
{
	enqueue_n("locked", 10);
	PGconn *locker = brq_testdb_connect(dsn);
	brq_testdb_exec(locker, "BEGIN");
	brq_testdb_exec(locker, "LOCK TABLE job IN SHARE MODE");

	const char      *topics[] = {"locked"};
	brooq_claim_opts o        = {.size = sizeof(o), .topics = topics, .n_topics = 1, .max_jobs = 10};
	brooq_job      **jobs     = NULL;
	size_t           n        = 0;
	int64_t          t0       = brq_t_now_us();
	brooq_err        e        = brooq_claim(wc, &o, &jobs, &n);
	double           waited   = (double) (brq_t_now_us() - t0) / 1000;
	cr_assert_eq(e, BROOQ_ETIMEDOUT, "claim behind the lock: %s (%s)", brooq_strerror(e),
		     brooq_last_message());
	cr_assert(waited >= 2900 && waited < 6000, "the claim gave up after %.0f ms", waited);

	/* The operator holds the lock well past the caller's timeout, then lets go. */
	brq_t_sleep_ms(3000);
	brq_testdb_exec(locker, "COMMIT");
	PQfinish(locker);
	brq_t_sleep_ms(500);

	long long leased = brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing'");
	long long tried  = brq_testdb_int(db, "SELECT coalesce(sum(attempts), 0) FROM job");
	fprintf(stderr,
		"deadline_test: after the lock: %lld jobs leased to the caller that gave up, %lld attempts\n",
		leased, tried);
	cr_assert_eq(leased, 0, "%lld jobs stayed leased to a caller that timed out", leased);
	cr_assert_eq(tried, 0, "%lld attempts counted for a claim nobody received", tried);
	/* The jobs are there for the next claim, at once. */
	BRQ_OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 10);
	brooq_jobs_free(jobs, n);
	/* The gateway canceled the claim's statement at the caller's timeout. */
	cr_assert(strstr(brq_gw_log(&gw), "msg=db_statement_failed what=claim error=etimedout") != NULL, "%s",
		  brq_gw_log(&gw));
}

Test(deadline, work_whose_caller_already_gave_up_is_not_started)
{
	enqueue_n("late", 3);
	PGconn *locker = brq_testdb_connect(dsn);
	brq_testdb_exec(locker, "BEGIN");
	brq_testdb_exec(locker, "LOCK TABLE job IN SHARE MODE");
	/* Four patient claims (of a topic with no jobs) take the four pool threads and
	 * wait behind the lock... */
	brq_str     none = brq_str_c("none");
	nng_socket  busy[4];
	brq_request b = {.op         = BRQ_OP_CLAIM,
			 .token      = brq_gw_worker(&gw),
			 .timeout_ms = 20000,
			 .claim      = {.worker = brq_str_c("busy"), .topics = &none, .n_topics = 1, .n = 1}};
	for (int i = 0; i < 4; i++)
		busy[i] = brq_gw_send_open(&gw, &b);
	brq_t_sleep_ms(300);
	/* ...and a claim whose caller waits 100 ms queues behind them. */
	brq_str     late = brq_str_c("late");
	brq_request req  = {
		 .op         = BRQ_OP_CLAIM,
		 .token      = brq_gw_worker(&gw),
		 .timeout_ms = 100,
		 .claim      = {.worker = brq_str_c("impatient"), .topics = &late, .n_topics = 1, .n = 3}};
	nng_socket s = brq_gw_send_open(&gw, &req);
	brq_t_sleep_ms(500);
	brq_testdb_exec(locker, "COMMIT");
	PQfinish(locker);
	brq_t_sleep_ms(1000);
	/* Its peer is still connected: only its timeout says nobody waits. */
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'late' AND state <> 'pending'"), 0,
		"a claim whose caller had given up ran");
	nng_close(s);
	for (int i = 0; i < 4; i++)
		nng_close(busy[i]);
}
