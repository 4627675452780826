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

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

static char         *dsn;
static brq_gw        gw;
static PGconn       *db;
static brooq_client *wc; /* worker token */
static brooq_client *ac; /* admin token */

static brooq_client *
open_client(const char *token_file)
{
	brooq_client_opts o = {.size       = sizeof(brooq_client_opts),
			       .url        = gw.url,
			       .token_file = token_file,
			       .timeout_ms = 10000};
	brooq_client     *c = NULL;
	brooq_err         e = brooq_client_open(&o, &c);
	cr_assert_eq(e, BROOQ_OK, "client_open: %s: %s", brooq_strerror(e), brooq_last_message());
	return c;
}

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, (const char *const[]) {"BROOQ_MAX_PAYLOAD=4KiB", NULL});
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

#define OK(call)                                                                                           \
	do {                                                                                               \
		brooq_err e_ = (call);                                                                     \
		cr_assert_eq(e_, BROOQ_OK, "%s: %s: %s", #call, brooq_strerror(e_), brooq_last_message()); \
	} while (0)

/* ---- helpers ----------------------------------------------------------------------- */

static uint64_t
enqueue1(const char *topic, const char *payload)
{
	brooq_job_spec       s = {.topic = topic, .payload = payload};
	brooq_enqueue_result r;
	OK(brooq_enqueue(wc, &s, 1, &r));
	return r.id;
}

/* Claims exactly one job of topic (failing the test otherwise); caller frees. */
static brooq_job *
claim1(const char *topic)
{
	const char      *topics[1] = {topic};
	brooq_claim_opts o         = {.size = sizeof(o), .topics = topics, .n_topics = 1, .max_jobs = 1};
	brooq_job       *jobs      = NULL;
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
	uint64_t            id   = enqueue1("calc", "{\"a\":1,\"b\":2}");
	brooq_job          *j    = claim1("calc");
	brooq_settle_item   it   = {.lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char         *res  = "{\"sum\":3,\"note\":\"ok\"}";
	const char *const   rs[] = {res};
	brooq_settle_result out;
	OK(brooq_settle_results(wc, &it, rs, 1, &out));
	cr_assert(out.applied);
	cr_assert_eq(out.state, BROOQ_DONE);
	brooq_jobs_free(j, 1);

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
	uint64_t            id = enqueue1("calc", "{}");
	brooq_job          *j  = claim1("calc");
	brooq_settle_item   it = {.lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result out;
	OK(brooq_settle(wc, &it, 1, &out));
	brooq_jobs_free(j, 1);
	brooq_job_info *info = NULL;
	OK(brooq_job_get(ac, id, &info));
	cr_assert_null(info->result);
	brooq_job_info_free(info);
}

Test(result, invalid_json_is_refused_and_nothing_changes)
{
	uint64_t            id   = enqueue1("calc", "{}");
	brooq_job          *j    = claim1("calc");
	brooq_settle_item   it   = {.lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[] = {"{\"sum\":"};
	brooq_settle_result out;
	cr_assert_eq(brooq_settle_results(wc, &it, rs, 1, &out), BROOQ_EINVALID_ARGUMENT);
	cr_assert_not_null(strstr(brooq_last_message(), "settle.items[0].result: invalid JSON"), "%s",
			   brooq_last_message());
	brooq_jobs_free(j, 1);
	char *st = sql_value(
		"SELECT state || ':' || coalesce(result::text, 'null') FROM job WHERE id = %" PRIu64, id);
	cr_assert_str_eq(st, "processing:null", "the refused settle changed the row");
	free(st);
}

Test(result, over_max_payload_is_refused_and_nothing_changes)
{
	uint64_t   id  = enqueue1("calc", "{}");
	brooq_job *j   = claim1("calc");
	size_t     len = 4096 + 1; /* BROOQ_MAX_PAYLOAD=4KiB in setup */
	char      *big = malloc(len + 1);
	memset(big, 'x', len);
	big[0]                   = '"';
	big[len - 1]             = '"';
	big[len]                 = '\0';
	brooq_settle_item   it   = {.lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[] = {big};
	brooq_settle_result out;
	cr_assert_eq(brooq_settle_results(wc, &it, rs, 1, &out), BROOQ_ETOO_LARGE);
	cr_assert_not_null(strstr(brooq_last_message(), "result: 4097 bytes exceeds max_payload 4096"), "%s",
			   brooq_last_message());
	/* One byte less fits. */
	big[len - 2] = '"';
	big[len - 1] = '\0';
	OK(brooq_settle_results(wc, &it, rs, 1, &out));
	cr_assert(out.applied);
	free(big);
	brooq_jobs_free(j, 1);
	cr_assert_eq(brq_testdb_int(db, "SELECT octet_length(result #>> '{}') FROM job"), 4094);
	(void) id;
}

Test(result, on_an_outcome_other_than_done_is_refused)
{
	enqueue1("calc", "{}");
	brooq_job          *j    = claim1("calc");
	brooq_settle_item   it   = {.lease = j->lease, .outcome = BROOQ_OUTCOME_FAIL, .error = "x"};
	const char *const   rs[] = {"{}"};
	brooq_settle_result out;
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
	brooq_jobs_free(j, 1);
}

Test(result, rides_on_a_claim_that_settles)
{
	uint64_t            id        = enqueue1("calc", "{}");
	brooq_job          *j         = claim1("calc");
	brooq_settle_item   it        = {.lease = j->lease, .outcome = BROOQ_OUTCOME_DONE};
	const char *const   rs[]      = {"[1,2,3]"};
	const char         *topics[1] = {"calc"};
	brooq_settle_result settled;
	brooq_claim_opts    o    = {.size           = sizeof(o),
				    .topics         = topics,
				    .n_topics       = 1,
				    .max_jobs       = 1,
				    .settle         = &it,
				    .n_settle       = 1,
				    .settled        = &settled,
				    .settle_results = rs};
	brooq_job          *more = NULL;
	size_t              n    = 0;
	OK(brooq_claim(wc, &o, &more, &n));
	cr_assert(settled.applied);
	brooq_jobs_free(more, n);
	brooq_jobs_free(j, 1);
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
