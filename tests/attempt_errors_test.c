/* SPDX-License-Identifier: MIT */
/* Each attempt's error (issue 28.6, migration 00013): the settle that records an error
 * appends it, with its attempt and time, to the job's `errors`, the latest 10 kept and
 * each cut as last_error is; the `job` reply carries them (docs/protocol.md §7.8), a
 * list's rows do not. Against a real gateway and PostgreSQL, through the C client. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "tclient.h"
#include "testdb.h"
#include "tutil.h"

static char         *dsn;
static PGconn       *db;
static brq_gw        gw;
static brooq_client *wc; /* worker token */
static brooq_client *ac; /* admin token */

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	brq_gw_start(&gw, dsn, NULL);
	wc = brq_t_client_open(gw.url, gw.worker_token_file, 10000);
	ac = brq_t_client_open(gw.url, gw.admin_token_file, 10000);
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

TestSuite(attempt_errors, .init = setup, .fini = teardown, .timeout = 120);

#define OK BRQ_OK /* tests/support/tutil.h */

static int64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t
enqueue(const char *topic, uint32_t max_attempts)
{
	brooq_job_spec       j = BROOQ_JOB_SPEC_INIT;
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	j.topic                = topic;
	j.payload              = "{}";
	j.max_attempts         = max_attempts;
	OK(brooq_enqueue(wc, &j, 1, &r));
	return r.id;
}

/* Claims the one ready job of topic (waiting up to 5 s for it) and settles it with
 * outcome and error (NULL: none), delay 0; returns the state it reached. */
static brooq_state
attempt(const char *topic, uint64_t id, brooq_outcome outcome, const char *error)
{
	const char         *topics[] = {topic};
	brooq_claim_opts    o        = {.size     = sizeof(brooq_claim_opts),
					.worker   = "errors-test",
					.topics   = topics,
					.n_topics = 1,
					.max_jobs = 1,
					.wait_ms  = 5000};
	brooq_job         **jobs;
	size_t              n   = 0;
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 1, "job %" PRIu64 " was not claimable", id);
	cr_assert_eq(jobs[0]->lease.id, id);
	brooq_settle_item item = BROOQ_SETTLE_ITEM_INIT;
	item.lease             = jobs[0]->lease;
	item.outcome           = outcome;
	item.error             = error;
	OK(brooq_settle(wc, &item, 1, &res));
	cr_assert(res.applied);
	brooq_jobs_free(jobs, n);
	return res.state;
}

static brooq_job_info *
job(uint64_t id)
{
	brooq_job_info *j = NULL;
	OK(brooq_job_get(wc, id, &j));
	return j;
}

Test(attempt_errors, the_latest_ten_attempts_errors_are_kept_in_order_with_attempt_and_time)
{
	uint64_t id = enqueue("err.ten", 12);
	int64_t  t0 = now_ms();
	/* Attempts 1..11 are put back at once (delay 0) with an error each; the 12th
	 * fails for good. A `fail` would wait out the backoff. */
	for (int a = 1; a <= 11; a++) {
		char err[32];
		snprintf(err, sizeof(err), "error of attempt %d", a);
		cr_assert_eq(attempt("err.ten", id, BROOQ_OUTCOME_DELAY, err), BROOQ_FAILED);
	}
	cr_assert_eq(attempt("err.ten", id, BROOQ_OUTCOME_FAIL, "the last one\n  at line 2"), BROOQ_DEAD);
	int64_t t1 = now_ms();

	brooq_job_info *j = job(id);
	cr_assert(j->has_errors);
	cr_assert_eq(j->n_errors, 10, "%zu errors kept", j->n_errors);
	for (size_t k = 0; k < 10; k++) {
		const brooq_attempt_error *e = j->errors[k];
		char                       want[32];
		cr_assert_eq(e->attempt, k + 3, "entry %zu is of attempt %" PRIu32, k, e->attempt);
		snprintf(want, sizeof(want), "error of attempt %zu", k + 3);
		cr_assert_str_eq(e->error, k < 9 ? want : "the last one\n  at line 2");
		/* The database's clock against the test's: a second either way. */
		cr_assert(e->at_ms >= t0 - 1000 && e->at_ms <= t1 + 1000, "entry %zu at %" PRId64, k,
			  e->at_ms);
		if (k > 0)
			cr_assert(e->at_ms >= j->errors[k - 1]->at_ms, "entries out of order");
	}
	/* last_error stays what it was: the last error, line breaks and all. */
	cr_assert_str_eq(j->last_error, "the last one\n  at line 2");
	brooq_job_info_free(j);
	cr_assert_eq(
		brq_testdb_intf(db, "SELECT jsonb_array_length(errors) FROM job WHERE id = %" PRIu64, id),
		10);
}

Test(attempt_errors, a_settle_without_an_error_adds_none_and_each_error_is_cut_as_last_error_is)
{
	/* Done without an error: the job reply says so with an empty list. */
	uint64_t a = enqueue("err.none", 3);
	cr_assert_eq(attempt("err.none", a, BROOQ_OUTCOME_DONE, NULL), BROOQ_DONE);
	brooq_job_info *j = job(a);
	cr_assert(j->has_errors);
	cr_assert_eq(j->n_errors, 0);
	cr_assert_null(j->errors);
	brooq_job_info_free(j);
	cr_assert_eq(
		brq_testdb_intf(db, "SELECT count(*) FROM job WHERE id = %" PRIu64 " AND errors IS NULL", a),
		1);

	/* 1 + 2 x 3000 bytes: 4096 would split a character, so both are cut to 4095. */
	size_t len = 1 + 2 * 3000;
	char  *big = malloc(len + 1);
	cr_assert_not_null(big);
	big[0] = 'a';
	for (size_t i = 1; i < len; i += 2)
		memcpy(big + i, "\xc3\xa9", 2); /* é */
	big[len]   = '\0';
	uint64_t b = enqueue("err.big", 3);
	cr_assert_eq(attempt("err.big", b, BROOQ_OUTCOME_DELAY, big), BROOQ_FAILED);
	/* A preserved attempt's error is kept too, under the attempt that ended. */
	cr_assert_eq(attempt("err.big", b, BROOQ_OUTCOME_PRESERVE, "not my fault"), BROOQ_FAILED);
	/* Ready now rather than after the backoff. */
	brq_testdb_exec(db, "UPDATE job SET available_at = now() WHERE topic = 'err.big'");
	/* An attempt without an error leaves the list as it was. */
	cr_assert_eq(attempt("err.big", b, BROOQ_OUTCOME_DONE, NULL), BROOQ_DONE);
	free(big);
	j = job(b);
	cr_assert_eq(j->n_errors, 2);
	cr_assert_eq(strlen(j->errors[0]->error), 4095);
	cr_assert_eq(memcmp(j->errors[0]->error, "a\xc3\xa9", 3), 0);
	cr_assert_eq(j->errors[0]->attempt, 1);
	cr_assert_str_eq(j->errors[1]->error, "not my fault");
	cr_assert_eq(j->errors[1]->attempt, 2);
	cr_assert_str_eq(j->last_error, "not my fault");
	brooq_job_info_free(j);

	/* A list's rows carry no errors (has_errors false), though the job has some. */
	brooq_list_opts o    = BROOQ_LIST_OPTS_INIT;
	o.topic              = "err.big";
	brooq_job_page *page = NULL;
	OK(brooq_list(ac, &o, &page));
	cr_assert_eq(page->n, 1);
	cr_assert_not(page->jobs[0]->has_errors);
	cr_assert_eq(page->jobs[0]->n_errors, 0);
	brooq_job_page_free(page);
}
