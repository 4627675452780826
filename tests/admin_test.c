/* SPDX-License-Identifier: MIT */
/* Issue 15 parts 5-7 against a real gateway and PostgreSQL: a handler's result, the job
 * list, retry and delete; through the public client API, the raw protocol and SQL. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tclient.h"
#include "tutil.h"

static char         *dsn;
static brq_gw        gw;
static PGconn       *db;
static brooq_client *wc; /* worker token */
static brooq_client *ac; /* admin token */

static brooq_client *
open_client(const char *token_file)
{
	return brq_t_client_open(gw.url, token_file, 10000);
}

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn,
		     (const char *const[]) {"BROOQ_MAX_PAYLOAD=4KiB", "BROOQ_MAX_REQUEST=64KiB", NULL});
	db = brq_testdb_connect(dsn);
	wc = open_client(gw.worker_token_file);
	ac = open_client(gw.admin_token_file);
}

static void
teardown(void)
{
	brooq_client_close(wc);
	brooq_client_close(ac);
	PQfinish(db);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(result, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(list, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(retry, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(delete, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(brooqctl, .init = setup, .fini = teardown, .timeout = 120);

#define OK(call)                                                                                           \
	do {                                                                                               \
		brooq_err e_ = (call);                                                                     \
		cr_assert_eq(e_, BROOQ_OK, "%s: %s: %s", #call, brooq_strerror(e_), brooq_last_message()); \
	} while (0)

/* ---- helpers ----------------------------------------------------------------------- */

static uint64_t
enqueue1(const char *topic, const char *payload)
{
	brooq_job_spec       s = {.size = sizeof(brooq_job_spec), .topic = topic, .payload = payload};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &s, 1, &r));
	return r.id;
}

/* Claims exactly one job of topic (failing the test otherwise): the claim's array, its
 * one job at [0]; caller frees (brooq_jobs_free). */
static brooq_job **
claim1(const char *topic)
{
	const char      *topics[1] = {topic};
	brooq_claim_opts o         = {.size = sizeof(o), .topics = topics, .n_topics = 1, .max_jobs = 1};
	brooq_job      **jobs      = NULL;
	size_t           n         = 0;
	OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 1, "claimed %zu jobs", n);
	return jobs;
}

static char *
sql_value(const char *fmt, uint64_t id)
{
	char q[512];
	snprintf(q, sizeof(q), fmt, id);
	return brq_testdb_value(db, q);
}

/* ---- results ------------------------------------------------------------------------ */

Test(result, attached_at_done_is_stored_in_the_row_and_returned_by_the_lookup)
{
	uint64_t          id = enqueue1("calc", "{\"a\":1,\"b\":2}");
	brooq_job       **jv = claim1("calc");
	brooq_job        *j  = jv[0];
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char         *res  = "{\"sum\":3,\"note\":\"ok\"}";
	const char *const   rs[] = {res};
	brooq_settle_result out  = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle_results(wc, &it, rs, 1, &out));
	cr_assert(out.applied);
	cr_assert_eq(out.state, BROOQ_DONE);
	brooq_jobs_free(jv, 1);

	char *stored = sql_value("SELECT result::text FROM job WHERE id = %" PRIu64, id);
	cr_assert_str_eq(stored, "{\"sum\": 3, \"note\": \"ok\"}");
	free(stored);
	brooq_job_info *info = NULL;
	OK(brooq_job_get(ac, id, &info));
	cr_assert_not_null(info->result);
	cr_assert_str_eq(info->result, "{\"sum\": 3, \"note\": \"ok\"}");
	cr_assert_eq(info->retry_of, 0);
	brooq_job_info_free(info);
}

Test(result, a_job_settled_without_one_has_none)
{
	uint64_t          id = enqueue1("calc", "{}");
	brooq_job       **jv = claim1("calc");
	brooq_job        *j  = jv[0];
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result out = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &it, 1, &out));
	brooq_jobs_free(jv, 1);
	brooq_job_info *info = NULL;
	OK(brooq_job_get(ac, id, &info));
	cr_assert_null(info->result);
	brooq_job_info_free(info);
}

Test(result, invalid_json_is_refused_and_nothing_changes)
{
	uint64_t          id = enqueue1("calc", "{}");
	brooq_job       **jv = claim1("calc");
	brooq_job        *j  = jv[0];
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[] = {"{\"sum\":"};
	brooq_settle_result out  = BROOQ_SETTLE_RESULT_INIT;
	cr_assert_eq(brooq_settle_results(wc, &it, rs, 1, &out), BROOQ_EINVALID_ARGUMENT);
	cr_assert_not_null(strstr(brooq_last_message(), "settle.items[0].result: invalid JSON"), "%s",
			   brooq_last_message());
	brooq_jobs_free(jv, 1);
	char *st = sql_value(
		"SELECT state || ':' || coalesce(result::text, 'null') FROM job WHERE id = %" PRIu64, id);
	cr_assert_str_eq(st, "processing:null", "the refused settle changed the row");
	free(st);
}

Test(result, over_max_payload_is_refused_and_nothing_changes)
{
	uint64_t    id  = enqueue1("calc", "{}");
	brooq_job **jv  = claim1("calc");
	brooq_job  *j   = jv[0];
	size_t      len = 4096 + 1; /* BROOQ_MAX_PAYLOAD=4KiB in setup */
	char       *big = malloc(len + 1);
	memset(big, 'x', len);
	big[0]               = '"';
	big[len - 1]         = '"';
	big[len]             = '\0';
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[] = {big};
	brooq_settle_result out  = BROOQ_SETTLE_RESULT_INIT;
	cr_assert_eq(brooq_settle_results(wc, &it, rs, 1, &out), BROOQ_ETOO_LARGE);
	cr_assert_not_null(strstr(brooq_last_message(), "result: 4097 bytes exceeds max_payload 4096"), "%s",
			   brooq_last_message());
	/* One byte less fits. */
	big[len - 2] = '"';
	big[len - 1] = '\0';
	OK(brooq_settle_results(wc, &it, rs, 1, &out));
	cr_assert(out.applied);
	free(big);
	brooq_jobs_free(jv, 1);
	cr_assert_eq(brq_testdb_int(db, "SELECT octet_length(result #>> '{}') FROM job"), 4094);
	(void) id;
}

Test(result, on_an_outcome_other_than_done_is_refused)
{
	enqueue1("calc", "{}");
	brooq_job         **jv   = claim1("calc");
	brooq_job          *j    = jv[0];
	brooq_settle_item   it   = {.size    = sizeof(brooq_settle_item),
				    .lease   = j->lease,
				    .outcome = BROOQ_OUTCOME_FAIL,
				    .error   = "x"};
	const char *const   rs[] = {"{}"};
	brooq_settle_result out  = BROOQ_SETTLE_RESULT_INIT;
	/* The library refuses it before sending ... */
	cr_assert_eq(brooq_settle_results(wc, &it, rs, 1, &out), BROOQ_EINVAL);
	/* ... and so does the gateway, for a client that sends it anyway. */
	brq_settle_item item = {.id         = j->lease.id,
				.outcome    = BRQ_OUTCOME_FAIL,
				.has_result = true,
				.result     = brq_str_c("{}")};
	memcpy(item.lease, j->lease.token, BRQ_LEASE_LEN);
	brq_request req = {.rid    = 9,
			   .op     = BRQ_OP_SETTLE,
			   .token  = brq_gw_worker(&gw),
			   .settle = {.items = &item, .n_items = 1}};
	brq_reply   rep;
	brq_arena   arena;
	void       *keep = NULL;
	brq_arena_init(&arena);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_INVALID_ARGUMENT);
	cr_assert_not_null(strstr(rep.msg.ptr, "settle.items[0].result: only allowed with outcome done"));
	free(keep);
	brq_arena_fini(&arena);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing'"), 1);
	brooq_jobs_free(jv, 1);
}

Test(result, rides_on_a_claim_that_settles)
{
	uint64_t          id = enqueue1("calc", "{}");
	brooq_job       **jv = claim1("calc");
	brooq_job        *j  = jv[0];
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[]      = {"[1,2,3]"};
	const char         *topics[1] = {"calc"};
	brooq_settle_result settled   = BROOQ_SETTLE_RESULT_INIT;
	brooq_claim_opts    o         = {.size           = sizeof(o),
					 .topics         = topics,
					 .n_topics       = 1,
					 .max_jobs       = 1,
					 .settle         = &it,
					 .n_settle       = 1,
					 .settled        = &settled,
					 .settle_results = rs};
	brooq_job         **more      = NULL;
	size_t              n         = 0;
	OK(brooq_claim(wc, &o, &more, &n));
	cr_assert(settled.applied);
	brooq_jobs_free(more, n);
	brooq_jobs_free(jv, 1);
	char *stored = sql_value("SELECT result::text FROM job WHERE id = %" PRIu64, id);
	cr_assert_str_eq(stored, "[1, 2, 3]");
	free(stored);
}

/* The worker runtime: a handler attaches its result with brooq_job_done_result. */
static atomic_int handled;

static void
h_result(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	char buf[64];
	snprintf(buf, sizeof(buf), "{\"id\":%" PRIu64 "}", brooq_job_id(job));
	brooq_job_done_result(job, buf, 0);
	atomic_fetch_add(&handled, 1);
}

static void *
run_worker(void *arg)
{
	(void) brooq_worker_run(arg);
	return NULL;
}

Test(result, a_worker_handler_attaches_one)
{
	uint64_t ids[3];
	for (int i = 0; i < 3; i++)
		ids[i] = enqueue1("calc", "{}");
	brooq_worker_opts wo = {.size = sizeof(wo), .threads = 2, .wait_ms = 1000};
	brooq_worker     *w  = NULL;
	OK(brooq_worker_new(wc, &wo, &w));
	OK(brooq_worker_handle(w, "calc", h_result, NULL));
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, run_worker, w), 0);
	for (int i = 0; i < 500 && brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'done'") < 3;
	     i++)
		brq_t_sleep_ms(20);
	brooq_worker_stop(w);
	pthread_join(th, NULL);
	brooq_worker_free(w);
	for (int i = 0; i < 3; i++) {
		char want[64];
		snprintf(want, sizeof(want), "done {\"id\": %" PRIu64 "}", ids[i]);
		char *got =
			sql_value("SELECT state || ' ' || result::text FROM job WHERE id = %" PRIu64, ids[i]);
		cr_assert_str_eq(got, want);
		free(got);
	}
}

/* A handler whose result the gateway refuses (not JSON): the worker settles the job as a
 * failure that says why, and nothing of the result is stored. */
static void
h_bad_result(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	brooq_job_done_result(job, "{not json", 0);
	atomic_fetch_add(&handled, 1);
}

Test(result, a_handler_result_the_gateway_refuses_fails_the_job_with_the_reason)
{
	uint64_t          id = enqueue1("calc", "{}");
	brooq_worker_opts wo = {.size = sizeof(wo), .threads = 1, .wait_ms = 1000};
	brooq_worker     *w  = NULL;
	OK(brooq_worker_new(wc, &wo, &w));
	OK(brooq_worker_handle(w, "calc", h_bad_result, NULL));
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, run_worker, w), 0);
	for (int i = 0; i < 500 && brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'failed'") < 1;
	     i++)
		brq_t_sleep_ms(20);
	brooq_worker_stop(w);
	pthread_join(th, NULL);
	brooq_worker_free(w);
	char *row = sql_value("SELECT state || ' ' || coalesce(result::text, 'null') || ' ' || last_error"
			      " FROM job WHERE id = %" PRIu64,
			      id);
	cr_assert_not_null(strstr(row, "failed null worker: the gateway refused this job's outcome"), "%s",
			   row);
	cr_assert_not_null(strstr(row, "result: invalid JSON"), "%s", row);
	free(row);
}

/* ---- list ----------------------------------------------------------------------------- */

/* Rows straight into the table (any state), n of them for topic, in id order. */
static void
insert_rows(const char *topic, const char *state, int n)
{
	char q[512];
	snprintf(q, sizeof(q), "INSERT INTO job (topic, state) SELECT '%s', '%s' FROM generate_series(1, %d)",
		 topic, state, n);
	brq_testdb_exec(db, q);
}

static brooq_job_page *
list(brooq_list_opts o)
{
	brooq_job_page *p = NULL;
	OK(brooq_list(ac, &o, &p));
	return p;
}

/* The page's ids as "5,4,3". */
static char *
ids_of(const brooq_job_page *p)
{
	static char buf[8192];
	size_t      at = 0;
	buf[0]         = '\0';
	for (size_t i = 0; i < p->n; i++)
		at += (size_t) snprintf(buf + at, sizeof(buf) - at, "%s%" PRIu64, i > 0 ? "," : "",
					p->jobs[i]->id);
	return buf;
}

/* The ids the same filter gives in SQL, newest first, as "5,4,3". */
static char *
sql_ids(const char *where)
{
	char q[512];
	snprintf(q, sizeof(q),
		 "SELECT coalesce(string_agg(id::text, ',' ORDER BY id DESC), '') FROM job WHERE %s", where);
	return brq_testdb_value(db, q);
}

Test(list, filters_by_topic_and_state_newest_first)
{
	insert_rows("a", "dead", 3);
	insert_rows("b", "dead", 2);
	insert_rows("a", "done", 4);
	insert_rows("a", "pending", 2);
	insert_rows("a", "dead", 2);
	brooq_list_opts o    = BROOQ_LIST_OPTS_INIT;
	o.topic              = "a";
	o.has_state          = true;
	o.state              = BROOQ_DEAD;
	brooq_job_page *p    = list(o);
	char           *want = sql_ids("topic = 'a' AND state = 'dead'");
	cr_assert_str_eq(ids_of(p), want);
	cr_assert_eq(p->n, 5);
	cr_assert_null(p->next, "the only page has no next");
	cr_assert_str_eq(p->jobs[0]->topic, "a");
	cr_assert_eq(p->jobs[0]->state, BROOQ_DEAD);
	free(want);
	brooq_job_page_free(p);

	/* Every filter shape against the same question in SQL. */
	static const struct {
		const char *topic;
		int         state; /* -1: any */
		const char *where;
	} cases[] = {
		{"a", -1, "topic = 'a'"},
		{NULL, BROOQ_DEAD, "state = 'dead'"},
		{NULL, BROOQ_PENDING, "state = 'pending'"},
		{NULL, -1, "true"},
		{"a", BROOQ_PENDING, "topic = 'a' AND state = 'pending'"},
		{"b", BROOQ_DONE, "false"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		brooq_list_opts q = BROOQ_LIST_OPTS_INIT;
		q.topic           = cases[i].topic;
		q.has_state       = cases[i].state >= 0;
		q.state           = cases[i].state >= 0 ? (brooq_state) cases[i].state : BROOQ_PENDING;
		p                 = list(q);
		want              = sql_ids(cases[i].where);
		cr_assert_str_eq(ids_of(p), want, "case %zu (%s)", i, cases[i].where);
		free(want);
		brooq_job_page_free(p);
	}
}

Test(list, shows_held_and_failed_jobs_of_a_topic_with_the_rest)
{
	insert_rows("a", "done", 2);
	enqueue1("a", "{}");
	enqueue1("a", "{}");
	brooq_job         **jv = claim1("a"); /* processing */
	brooq_job          *j  = jv[0];
	brooq_settle_item   it = {.size    = sizeof(brooq_settle_item),
				  .lease   = j->lease,
				  .outcome = BROOQ_OUTCOME_FAIL,
				  .error   = "boom"};
	brooq_settle_result r  = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &it, 1, &r)); /* failed */
	brooq_jobs_free(jv, 1);
	jv = claim1("a"); /* the other one: processing */
	brooq_jobs_free(jv, 1);
	brooq_list_opts o    = BROOQ_LIST_OPTS_INIT;
	o.topic              = "a";
	brooq_job_page *p    = list(o);
	char           *want = sql_ids("topic = 'a'");
	cr_assert_str_eq(ids_of(p), want);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(DISTINCT state) FROM job"), 3,
		     "done, failed, processing");
	free(want);
	brooq_job_page_free(p);
}

/* Keyset pages on the id: jobs enqueued between two pages land before the first page,
 * never in a later one, so walking the pages sees every job exactly once. */
Test(list, pages_are_stable_while_jobs_are_enqueued_between_them)
{
	insert_rows("a", "dead", 25);
	char           *want      = sql_ids("topic = 'a'");
	char            got[8192] = "";
	brooq_list_opts o         = BROOQ_LIST_OPTS_INIT;
	o.topic                   = "a";
	o.limit                   = 10;
	char  *cursor             = NULL;
	size_t pages              = 0;
	do {
		o.cursor          = cursor;
		brooq_job_page *p = list(o);
		pages++;
		cr_assert_leq(p->n, 10);
		strcat(got, got[0] != '\0' && p->n > 0 ? "," : "");
		strcat(got, ids_of(p));
		free(cursor);
		cursor = p->next != NULL ? strdup(p->next) : NULL;
		brooq_job_page_free(p);
		insert_rows("a", "dead", 3); /* concurrent inserts */
		enqueue1("a", "{}");
	} while (cursor != NULL);
	cr_assert_eq(pages, 3);
	cr_assert_str_eq(got, want, "pages skipped or repeated a job");
	free(want);
}

Test(list, refuses_a_cursor_it_did_not_make)
{
	insert_rows("a", "dead", 3);
	static const char *bad[] = {"garbage", "v1.", "v1.abc", "v1.0", "v2.5", "v1.99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brooq_list_opts o = BROOQ_LIST_OPTS_INIT;
		o.cursor          = bad[i];
		brooq_job_page *p = NULL;
		cr_assert_eq(brooq_list(ac, &o, &p), BROOQ_EINVALID_ARGUMENT, "cursor %s", bad[i]);
		cr_assert_not_null(strstr(brooq_last_message(), "list.cursor: not a cursor of this list"),
				   "%s", brooq_last_message());
		cr_assert_null(p);
	}
}

Test(list, filters_by_key_and_creation_time)
{
	brooq_job_spec s = {.size = sizeof(brooq_job_spec), .topic = "a", .payload = "{}", .key = "order-7"};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &s, 1, &r));
	enqueue1("a", "{}");
	brooq_list_opts o = BROOQ_LIST_OPTS_INIT;
	o.topic           = "a";
	o.key             = "order-7";
	brooq_job_page *p = list(o);
	cr_assert_eq(p->n, 1);
	cr_assert_eq(p->jobs[0]->id, r.id);
	cr_assert_str_eq(p->jobs[0]->key, "order-7");
	brooq_job_page_free(p);

	/* A key without a topic (issue 28.8): the job with that key in every topic (keys are
	 * unique per topic only), newest first. */
	brooq_job_spec s8[2] = {
		{.size = sizeof(brooq_job_spec), .topic = "b", .payload = "{}", .key = "order-8"},
		{.size = sizeof(brooq_job_spec), .topic = "c", .payload = "{}", .key = "order-8"}};
	brooq_enqueue_result r8[2] = {BROOQ_ENQUEUE_RESULT_INIT, BROOQ_ENQUEUE_RESULT_INIT};
	OK(brooq_enqueue(wc, s8, 2, r8));
	brooq_list_opts k = BROOQ_LIST_OPTS_INIT;
	k.key             = "order-8";
	p                 = list(k);
	cr_assert_eq(p->n, 2);
	cr_assert_eq(p->jobs[0]->id, r8[1].id);
	cr_assert_eq(p->jobs[1]->id, r8[0].id);
	brooq_job_page_free(p);
	k.key = "order-7";
	p     = list(k);
	cr_assert_eq(p->n, 1);
	cr_assert_eq(p->jobs[0]->id, r.id);
	brooq_job_page_free(p);
	/* ... with the other filters: a state it is not in finds nothing. */
	k.state     = BROOQ_DEAD;
	k.has_state = true;
	p           = list(k);
	cr_assert_eq(p->n, 0);
	brooq_job_page_free(p);
	brq_testdb_exec(
		db, "DELETE FROM job WHERE idempotency_key = 'order-8'"); /* out of the time range's count */

	/* Time range: one old job (created a day ago) in, the new ones out, and back. */
	brq_testdb_exec(
		db, "UPDATE job SET created_at = now() - interval '1 day' WHERE idempotency_key = 'order-7'");
	long long old_ms    = brq_testdb_int(db, "SELECT (extract(epoch FROM now()) * 1000)::int8 - 3600000");
	brooq_list_opts t   = BROOQ_LIST_OPTS_INIT;
	t.created_before_ms = old_ms;
	p                   = list(t);
	cr_assert_eq(p->n, 1);
	cr_assert_eq(p->jobs[0]->id, r.id);
	brooq_job_page_free(p);
	t                  = (brooq_list_opts) BROOQ_LIST_OPTS_INIT;
	t.created_after_ms = old_ms;
	p                  = list(t);
	cr_assert_eq(p->n, 1);
	cr_assert_neq(p->jobs[0]->id, r.id);
	brooq_job_page_free(p);
	t.created_before_ms = old_ms;
	cr_assert_eq(brooq_list(ac, &t, &p), BROOQ_EINVALID_ARGUMENT, "after >= before");
}

/* docs/protocol.md §7.11: the time filters compare created_at_ms as the reply gives it
 * (rounded to the nearest millisecond), so a job reported at T is kept by
 * created_after_ms = T and left out by created_before_ms = T. Rows on sub-millisecond
 * boundaries, written by SQL with exact created_at values. */
Test(list, time_filters_compare_the_milliseconds_the_reply_gives)
{
	/* T = 2024-01-01T00:00:00Z = 1704067200000 ms; offsets in microseconds. */
	static const struct {
		int       us;
		long long ms; /* created_at_ms the reply gives: nearest, a half away from zero */
	} rows[] = {{0, 1704067200000},    {1, 1704067200000},   {499, 1704067200000},
		    {500, 1704067200001},  {999, 1704067200001}, {1499, 1704067200001},
		    {1500, 1704067200002}, {2000, 1704067200002}};
	enum { N = sizeof(rows) / sizeof(rows[0]) };
	for (int i = 0; i < N; i++) {
		char q[256];
		snprintf(q, sizeof(q),
			 "INSERT INTO job (topic, state, created_at, updated_at) VALUES ('t', 'dead',"
			 " '2024-01-01T00:00:00Z'::timestamptz + %d * interval '1 microsecond', now())",
			 rows[i].us);
		brq_testdb_exec(db, q);
	}
	/* What the reply says, row by row (ids ascend with i). */
	brooq_list_opts o = BROOQ_LIST_OPTS_INIT;
	o.topic           = "t";
	brooq_job_page *p = list(o);
	cr_assert_eq(p->n, N);
	for (int i = 0; i < N; i++)
		cr_assert_eq(p->jobs[N - 1 - i]->created_at_ms, rows[i].ms, "row %d (+%d us): %lld", i,
			     rows[i].us, (long long) p->jobs[N - 1 - i]->created_at_ms);
	uint64_t base = (uint64_t) brq_testdb_int(db, "SELECT min(id) FROM job");
	brooq_job_page_free(p);
	/* Every bound around them: after keeps exactly the rows reported at or after it,
	 * before exactly those reported before it. */
	for (long long b = 1704067199999; b <= 1704067200003; b++) {
		char want_after[256] = "", want_before[256] = "";
		for (int i = N - 1; i >= 0; i--) {
			char *w = rows[i].ms >= b ? want_after : want_before;
			snprintf(w + strlen(w), 256 - strlen(w), "%s%d", w[0] != '\0' ? "," : "", i);
		}
		for (int side = 0; side < 2; side++) {
			brooq_list_opts t = BROOQ_LIST_OPTS_INIT;
			t.topic           = "t";
			if (side == 0)
				t.created_after_ms = b;
			else
				t.created_before_ms = b;
			p             = list(t);
			char got[256] = "";
			for (size_t k = 0; k < p->n; k++)
				snprintf(got + strlen(got), 256 - strlen(got), "%s%d", k > 0 ? "," : "",
					 (int) (p->jobs[k]->id - base));
			cr_assert_str_eq(got, side == 0 ? want_after : want_before, "%s %lld",
					 side == 0 ? "created_after_ms" : "created_before_ms", b);
			brooq_job_page_free(p);
		}
	}
}

Test(list, ends_a_page_early_when_payloads_would_make_the_reply_too_big)
{
	/* 3000-byte payloads, a 64 KiB request limit (setup): about 20 per reply. */
	char payload[3100];
	memset(payload, 'x', 3000);
	payload[0]    = '"';
	payload[2999] = '"';
	payload[3000] = '\0';
	for (int i = 0; i < 40; i++)
		enqueue1("big", payload);
	brooq_list_opts o = BROOQ_LIST_OPTS_INIT;
	o.topic           = "big";
	o.limit           = 1000;
	brooq_job_page *p = list(o);
	cr_assert_lt(p->n, 40);
	cr_assert_gt(p->n, 5);
	cr_assert_not_null(p->next, "a page ended early must say where to go on");
	size_t first      = p->n;
	o.cursor          = p->next;
	brooq_job_page *q = list(o);
	cr_assert_eq(q->jobs[0]->id + 1, p->jobs[first - 1]->id, "the next page starts right after");
	brooq_job_page_free(q);
	brooq_job_page_free(p);
}

Test(list, needs_the_admin_role)
{
	brooq_list_opts o = BROOQ_LIST_OPTS_INIT;
	brooq_job_page *p = NULL;
	cr_assert_eq(brooq_list(wc, &o, &p), BROOQ_EPERMISSION_DENIED);
	uint64_t id;
	bool     created;
	cr_assert_eq(brooq_retry(wc, 1, &id, &created), BROOQ_EPERMISSION_DENIED);
	cr_assert_eq(brooq_delete(wc, 1), BROOQ_EPERMISSION_DENIED);
}

/* ---- retry ---------------------------------------------------------------------------- */

/* A job that went dead: enqueued with max_attempts 1, claimed, failed. */
static uint64_t
dead_job(const char *topic, const char *payload)
{
	brooq_job_spec s = {
		.size = sizeof(brooq_job_spec), .topic = topic, .payload = payload, .max_attempts = 1};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &s, 1, &r));
	brooq_job         **jv  = claim1(topic);
	brooq_job          *j   = jv[0];
	brooq_settle_item   it  = {.size    = sizeof(brooq_settle_item),
				   .lease   = j->lease,
				   .outcome = BROOQ_OUTCOME_FAIL,
				   .error   = "gave up"};
	brooq_settle_result out = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &it, 1, &out));
	cr_assert_eq(out.state, BROOQ_DEAD);
	brooq_jobs_free(jv, 1);
	return r.id;
}

Test(retry, runs_a_dead_job_again_as_a_new_job_and_keeps_the_original)
{
	uint64_t id     = dead_job("mail", "{\"to\":\"x\"}");
	char    *before = sql_value("SELECT row_to_json(j)::text FROM job j WHERE id = %" PRIu64, id);
	uint64_t new_id;
	bool     created;
	OK(brooq_retry(ac, id, &new_id, &created));
	cr_assert(created);
	cr_assert_gt(new_id, id);
	char *after = sql_value("SELECT row_to_json(j)::text FROM job j WHERE id = %" PRIu64, id);
	cr_assert_str_eq(after, before, "the original row changed");
	free(before);
	free(after);
	char *row = sql_value(
		"SELECT state || ' ' || attempts || ' ' || max_attempts || ' ' || retry_of || ' ' ||"
		" payload::text FROM job WHERE id = %" PRIu64,
		new_id);
	char want[128];
	snprintf(want, sizeof(want), "pending 0 1 %" PRIu64 " {\"to\": \"x\"}", id);
	cr_assert_str_eq(row, want);
	free(row);
	brooq_job_info *info = NULL;
	OK(brooq_job_get(ac, new_id, &info));
	cr_assert_eq(info->retry_of, id);
	brooq_job_info_free(info);

	/* Again: the same retry, nothing new (a repeated request is safe). */
	uint64_t again;
	OK(brooq_retry(ac, id, &again, &created));
	cr_assert_not(created);
	cr_assert_eq(again, new_id);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 2);

	/* The retry runs: a worker claims it. */
	brooq_job **jv = claim1("mail");
	brooq_job  *j  = jv[0];
	cr_assert_eq(j->lease.id, new_id);
	brooq_jobs_free(jv, 1);
}

Test(retry, refuses_a_job_that_is_not_dead_or_canceled)
{
	uint64_t pending = enqueue1("mail", "{}");
	insert_rows("mail", "done", 1);
	uint64_t done = (uint64_t) brq_testdb_int(db, "SELECT max(id) FROM job");
	uint64_t new_id;
	bool     created;
	cr_assert_eq(brooq_retry(ac, pending, &new_id, &created), BROOQ_ECONFLICT);
	cr_assert_not_null(strstr(brooq_last_message(), "is pending; only dead or canceled"), "%s",
			   brooq_last_message());
	cr_assert_eq(brooq_retry(ac, done, &new_id, &created), BROOQ_ECONFLICT);
	cr_assert_eq(brooq_retry(ac, done + 100, &new_id, &created), BROOQ_ENOT_FOUND);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 2, "nothing was created");
}

Test(retry, a_canceled_job_too)
{
	uint64_t    id = enqueue1("mail", "{}");
	brooq_state st;
	bool        canceled, created;
	OK(brooq_cancel(ac, id, &st, &canceled));
	uint64_t new_id;
	OK(brooq_retry(ac, id, &new_id, &created));
	cr_assert(created);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'pending'"), 1);
}

Test(retry, in_bulk_takes_the_oldest_of_a_topic_and_state_and_skips_those_retried)
{
	insert_rows("a", "dead", 5);
	insert_rows("a", "canceled", 2);
	insert_rows("a", "done", 1);
	insert_rows("b", "dead", 2);
	uint64_t ids[16];
	size_t   n;
	OK(brooq_retry_bulk(ac, "a", BROOQ_DEAD, 3, ids, 16, &n));
	cr_assert_eq(n, 3);
	char *first  = sql_value("SELECT string_agg(retry_of::text, ',' ORDER BY retry_of) FROM job"
				  " WHERE retry_of IS NOT NULL AND id > %" PRIu64,
				 (uint64_t) 0);
	char *oldest = brq_testdb_value(
		db,
		"SELECT string_agg(id::text, ',' ORDER BY id) FROM"
		" (SELECT id FROM job WHERE topic = 'a' AND state = 'dead' ORDER BY id LIMIT 3) x");
	cr_assert_str_eq(first, oldest, "not the oldest three");
	free(first);
	free(oldest);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'pending' AND topic = 'a'"),
		     3);
	cr_assert(ids[0] < ids[1] && ids[1] < ids[2]);

	OK(brooq_retry_bulk(ac, "a", BROOQ_DEAD, 10, ids, 16, &n));
	cr_assert_eq(n, 2, "the two not retried yet");
	OK(brooq_retry_bulk(ac, "a", BROOQ_DEAD, 10, ids, 16, &n));
	cr_assert_eq(n, 0);
	OK(brooq_retry_bulk(ac, "a", BROOQ_CANCELED, 10, NULL, 0, &n));
	cr_assert_eq(n, 2);
	/* Topic b and the done job were not touched. */
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE retry_of IS NOT NULL"), 7);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'b' AND state = 'pending'"),
		     0);
	/* Bulk over another state is refused by the library and by the gateway. */
	cr_assert_eq(brooq_retry_bulk(ac, "a", BROOQ_DONE, 10, NULL, 0, &n), BROOQ_EINVAL);
	brq_request req = {.op    = BRQ_OP_RETRY,
			   .token = brq_gw_admin(&gw),
			   .retry = {.topic = brq_str_c("a"), .state = BRQ_STATE_DONE, .limit = 5}};
	brq_reply   rep;
	brq_arena   arena;
	void       *keep = NULL;
	brq_arena_init(&arena);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_INVALID_ARGUMENT);
	cr_assert_not_null(strstr(rep.msg.ptr, "retry.state: must be dead or canceled"));
	free(keep);
	brq_arena_fini(&arena);
}

/* ---- delete ---------------------------------------------------------------------------- */

Test(delete, removes_a_terminal_job_and_refuses_any_other)
{
	uint64_t dead    = dead_job("a", "{}");
	uint64_t pending = enqueue1("a", "{}");
	insert_rows("a", "done", 1);
	uint64_t done = (uint64_t) brq_testdb_int(db, "SELECT max(id) FROM job");
	cr_assert_eq(brooq_delete(ac, pending), BROOQ_ECONFLICT);
	cr_assert_not_null(strstr(brooq_last_message(), "is pending; only done, dead or canceled"), "%s",
			   brooq_last_message());
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 3, "a refused delete deleted");
	OK(brooq_delete(ac, done));
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 2);
	cr_assert_eq(brooq_delete(ac, done), BROOQ_ENOT_FOUND);
	/* A retried job may go: its retry keeps the link (no foreign key). */
	uint64_t new_id;
	bool     created;
	OK(brooq_retry(ac, dead, &new_id, &created));
	OK(brooq_delete(ac, dead));
	brooq_job_info *info = NULL;
	OK(brooq_job_get(ac, new_id, &info));
	cr_assert_eq(info->retry_of, dead);
	brooq_job_info_free(info);
}

/* docs/protocol.md §7.12: a job is retried at most once while its retry exists; once the
 * retry is deleted (or retention removed it), retrying the original makes a new one. */
Test(retry, the_original_may_be_retried_again_once_its_retry_is_deleted)
{
	uint64_t id = dead_job("mail", "{}");
	uint64_t first, second, again;
	bool     created, canceled;
	OK(brooq_retry(ac, id, &first, &created));
	cr_assert(created);
	brooq_state st;
	OK(brooq_cancel(ac, first, &st, &canceled));
	OK(brooq_delete(ac, first));
	OK(brooq_retry(ac, id, &second, &created));
	cr_assert(created, "the deleted retry still counted");
	cr_assert_gt(second, first);
	OK(brooq_retry(ac, id, &again, &created));
	cr_assert_not(created);
	cr_assert_eq(again, second);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE retry_of IS NOT NULL"), 1);
}

/* docs/protocol.md §7.1: idempotency lasts as long as the row; delete frees the key. */
Test(delete, frees_the_jobs_idempotency_key)
{
	brooq_job_spec s = {.size = sizeof(brooq_job_spec), .topic = "a", .payload = "{}", .key = "order-9"};
	brooq_enqueue_result r1 = BROOQ_ENQUEUE_RESULT_INIT, r2 = BROOQ_ENQUEUE_RESULT_INIT,
			     r3 = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &s, 1, &r1));
	OK(brooq_enqueue(wc, &s, 1, &r2));
	cr_assert_not(r2.created);
	cr_assert_eq(r2.id, r1.id);
	brooq_state st;
	bool        canceled;
	OK(brooq_cancel(ac, r1.id, &st, &canceled));
	OK(brooq_delete(ac, r1.id));
	OK(brooq_enqueue(wc, &s, 1, &r3));
	cr_assert(r3.created, "the deleted job's key still deduplicated");
	cr_assert_neq(r3.id, r1.id);
}

/* ---- brooqctl jobs, retry, delete, job ---------------------------------------------- */

/* Runs brooqctl with the admin token and args (a shell fragment of plain words),
 * stdout into *out (stderr too when `both`); returns the exit code. */
static int
ctl(char **out, bool both, const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "%s --url %s --token-file %s %s%s", brq_testdb_bin("brooqctl"), gw.url,
		 gw.admin_token_file, args, both ? " 2>&1" : " 2>/dev/null");
	return brq_testdb_run(cmd, out);
}

Test(brooqctl, jobs_lists_a_page_as_json_and_as_a_table_with_the_next_cursor)
{
	insert_rows("mail", "dead", 3);
	insert_rows("mail", "done", 2);
	char *out;
	cr_assert_eq(ctl(&out, false, "jobs --topic mail --state dead --limit 2 --json"), 0, "%s", out);
	char *ids = sql_ids("topic = 'mail' AND state = 'dead'"); /* "3,2,1" */
	char  want[64];
	snprintf(want, sizeof(want), "\"id\":%.*s,", (int) strcspn(ids, ","), ids);
	cr_assert_not_null(strstr(out, "{\"jobs\":[{\"id\":"), "%s", out);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_eq(brq_gw_count(out, "\"state\":\"dead\""), 2, "%s", out);
	cr_assert_not_null(strstr(out, "\"result\":null,\"retry_of\":null,\"claimed_at_ms\":"), "%s", out);
	char *next = strstr(out, "\"next\":\"");
	cr_assert_not_null(next, "%s", out);
	char cursor[64];
	snprintf(cursor, sizeof(cursor), "%.*s", (int) strcspn(next + 8, "\""), next + 8);
	free(out);
	char args[256];
	snprintf(args, sizeof(args), "jobs --topic mail --state dead --limit 2 --cursor %s --json", cursor);
	cr_assert_eq(ctl(&out, false, args), 0);
	cr_assert_eq(brq_gw_count(out, "\"state\":\"dead\""), 1, "%s", out);
	cr_assert_not_null(strstr(out, "\"next\":null}"), "%s", out);
	free(out);
	/* The table, and where the next page is (on stderr). */
	cr_assert_eq(ctl(&out, true, "jobs --topic mail --limit 4"), 0);
	cr_assert_not_null(strstr(out, "ID         STATE"), "%s", out);
	cr_assert_eq(brq_gw_count(out, " mail "), 4, "%s", out);
	cr_assert_not_null(strstr(out, "more jobs: add --cursor v1."), "%s", out);
	free(out);
	free(ids);
	/* Bad input: usage errors, and the gateway's word on a bad cursor. */
	cr_assert_eq(ctl(&out, true, "jobs --state sleeping"), 2, "%s", out);
	free(out);
	cr_assert_eq(ctl(&out, true, "jobs --cursor nope"), 1);
	cr_assert_not_null(strstr(out, "not a cursor of this list"), "%s", out);
	free(out);
	cr_assert_eq(ctl(&out, true, "stats --topic mail"), 2, "--topic belongs to jobs and retry");
	free(out);
}

Test(brooqctl, retry_and_delete_and_job_shows_the_result_and_the_link)
{
	uint64_t          dead = dead_job("mail", "{}");
	uint64_t          id   = enqueue1("calc", "{}");
	brooq_job       **jv   = claim1("calc");
	brooq_job        *j    = jv[0];
	brooq_settle_item it   = {
		  .size = sizeof(brooq_settle_item), .lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[] = {"{\"total\":42}"};
	brooq_settle_result r    = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle_results(wc, &it, rs, 1, &r));
	brooq_jobs_free(jv, 1);

	char *out, args[128];
	snprintf(args, sizeof(args), "job %" PRIu64, id);
	cr_assert_eq(ctl(&out, false, args), 0);
	cr_assert_not_null(strstr(out, "result        {\"total\": 42}"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "job %" PRIu64 " --json", id);
	cr_assert_eq(ctl(&out, false, args), 0);
	cr_assert_not_null(strstr(out, "\"result\":{\"total\": 42}"), "%s", out);
	free(out);

	snprintf(args, sizeof(args), "retry %" PRIu64 " --json", dead);
	cr_assert_eq(ctl(&out, false, args), 0);
	uint64_t new_id = (uint64_t) brq_testdb_int(db, "SELECT max(id) FROM job");
	char     want[128];
	snprintf(want, sizeof(want), "{\"id\":%" PRIu64 ",\"retried\":1,\"ids\":[%" PRIu64 "]}\n", dead,
		 new_id);
	cr_assert_str_eq(out, want);
	free(out);
	snprintf(args, sizeof(args), "job %" PRIu64, new_id);
	cr_assert_eq(ctl(&out, false, args), 0);
	snprintf(want, sizeof(want), "retry_of      %" PRIu64 "\n", dead);
	cr_assert_not_null(strstr(out, want), "%s", out);
	free(out);
	/* A pending job: conflict, exit 1. */
	snprintf(args, sizeof(args), "retry %" PRIu64, new_id);
	cr_assert_eq(ctl(&out, true, args), 1);
	cr_assert_not_null(strstr(out, "conflict"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "delete %" PRIu64, new_id);
	cr_assert_eq(ctl(&out, true, args), 1, "a pending job cannot be deleted");
	free(out);
	snprintf(args, sizeof(args), "delete %" PRIu64 " --json", id);
	cr_assert_eq(ctl(&out, false, args), 0);
	snprintf(want, sizeof(want), "{\"id\":%" PRIu64 ",\"deleted\":true}\n", id);
	cr_assert_str_eq(out, want);
	free(out);
	cr_assert_eq(ctl(&out, true, args), 1, "gone");
	cr_assert_not_null(strstr(out, "not_found"), "%s", out);
	free(out);

	/* Bulk. */
	insert_rows("mail", "canceled", 3);
	cr_assert_eq(ctl(&out, false, "retry --topic mail --state canceled --limit 2"), 0);
	cr_assert_not_null(strstr(out, "retried 2 jobs: "), "%s", out);
	free(out);
	cr_assert_eq(ctl(&out, true, "retry --topic mail --state done"), 2, "bulk needs dead or canceled");
	free(out);
}
