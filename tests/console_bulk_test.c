/* SPDX-License-Identifier: MIT */
/* The console's bulk actions (issue 28.5; docs/console.md): jobs_count, and bulk retry,
 * cancel and delete of selected ids or of every job a filter matches, a bounded batch per
 * call with the cursor to continue, skipped jobs counted, each job audited in the log.
 * Against a real gateway and PostgreSQL over HTTP. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "rawhttp.h"
#include "testdb.h"
#include "tutil.h"

static char    *dsn;
static brq_gw   gw;
static PGconn  *db;
static uint16_t port;
static char     cookie[128], csrf[128], headers[300];

static void
setup(void)
{
	static const char *const env[] = {"BROOQ_POLL_INTERVAL=100ms", NULL};
	dsn                            = brq_testdb_create(true);
	db                             = brq_testdb_connect(dsn);
	port                           = brq_gw_start_http(&gw, dsn, env);
	brq_gw_await_log(&gw, "msg=console_ready", 1, 10000);
	brq_http_sign_in(port, gw.admin_token, cookie, csrf, NULL);
	snprintf(headers, sizeof(headers), "%s%s", cookie, csrf);
}

static void
teardown(void)
{
	PQfinish(db);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(bulk, .init = setup, .fini = teardown, .timeout = 120);

/* A number field "key":N of a flat reply. */
static long long
num(const char *body, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(body, pat);
	cr_assert_not_null(p, "no %s in %s", key, body);
	return strtoll(p + strlen(pat), NULL, 10);
}

/* jobs_count?query: the count; *more whether more match. */
static long long
count(const char *query, bool *more)
{
	char           path[256];
	brq_http_reply r;
	snprintf(path, sizeof(path), "/console/api/jobs_count?%s", query);
	brq_http(port, "GET", path, headers, NULL, &r);
	cr_assert_eq(r.status, 200, "%s: %d %s", path, r.status, r.body);
	*more = strstr(r.body, "\"more\":true") != NULL;
	return num(r.body, "count");
}

/* Runs `form` (action and all=1 with a filter) over the whole filter, as the page does:
 * calls until next is null. The totals into done and skipped; returns the calls made. */
static int
bulk_all(const char *form, long long *done, long long *skipped)
{
	char           body[512], next[80] = "";
	brq_http_reply r;
	int            calls = 0;
	*done = *skipped = 0;
	do {
		snprintf(body, sizeof(body), "%s%s%s", form, next[0] != '\0' ? "&cursor=" : "", next);
		brq_http(port, "POST", "/console/api/bulk", headers, body, &r);
		cr_assert_eq(r.status, 200, "%s: %d %s", body, r.status, r.body);
		cr_assert_eq(num(r.body, "processed"), num(r.body, "done") + num(r.body, "skipped"), "%s",
			     r.body);
		*done += num(r.body, "done");
		*skipped += num(r.body, "skipped");
		next[0] = '\0';
		if (strstr(r.body, "\"next\":null") == NULL)
			brq_http_json_field(r.body, "next", next, sizeof(next));
		cr_assert_lt(++calls, 100, "the filter never ends: %s", r.body);
	} while (next[0] != '\0');
	return calls;
}

Test(bulk, counts_a_filter_then_retries_and_deletes_all_it_matches_in_batches)
{
	brq_testdb_exec(
		db, "INSERT INTO job (topic, state) SELECT 'bulk.a', 'dead' FROM generate_series(1, 250)");
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 'bulk.a' FROM generate_series(1, 30)");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state) SELECT 'bulk.b', 'dead' FROM generate_series(1, 5)");
	bool more;
	cr_assert_eq(count("topic=bulk.a&state=dead", &more), 250);
	cr_assert_not(more);
	cr_assert_eq(count("topic=bulk.a", &more), 280);
	cr_assert_eq(count("state=dead", &more), 255);

	/* Retry every dead job of bulk.a, 100 a call: 3 calls, the originals kept. */
	long long done, skipped;
	cr_assert_eq(bulk_all("action=retry&all=1&topic=bulk.a&state=dead&limit=100", &done, &skipped), 3);
	cr_assert_eq(done, 250);
	cr_assert_eq(skipped, 0);
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM job r JOIN job o ON o.id = r.retry_of"
				    " WHERE r.topic = 'bulk.a' AND r.state = 'pending' AND o.state = 'dead'"),
		     250);
	/* Again: each is retried already, so every one is skipped and nothing is made. */
	bulk_all("action=retry&all=1&topic=bulk.a&state=dead", &done, &skipped);
	cr_assert_eq(done, 0);
	cr_assert_eq(skipped, 250);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 250 + 30 + 5 + 250);

	/* Delete every job of bulk.a: the dead ones go, the pending ones (30 and the 250
	 * retries) are skipped; bulk.b is not touched. */
	bulk_all("action=delete&all=1&topic=bulk.a&limit=200", &done, &skipped);
	cr_assert_eq(done, 250);
	cr_assert_eq(skipped, 280);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'bulk.a' AND state = 'dead'"),
		     0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'bulk.a'"), 280);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'bulk.b'"), 5);

	/* Audited like single actions: one console_action per job changed, with who did it,
	 * and one console_bulk line per call. */
	const char *log = brq_gw_log(&gw);
	cr_assert_eq(brq_gw_count(log, "msg=console_action action=retry id="), 250);
	cr_assert_eq(brq_gw_count(log, "msg=console_action action=delete id="), 250);
	cr_assert_geq(brq_gw_count(log, "msg=console_bulk action=delete mode=filter topic=bulk.a"), 3);
	cr_assert_not_null(strstr(log, "bulk=true role=admin token_fp="), "%s", log);
	cr_assert_null(strstr(log, gw.admin_token), "admin token in the log");
}

Test(bulk, acts_on_selected_ids_bounded_and_checked_and_never_for_a_read_only_session)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state) VALUES ('sel', 'pending'), ('sel', 'failed'),"
			" ('sel', 'done'), ('sel', 'pending')");
	long long      first = brq_testdb_int(db, "SELECT min(id) FROM job");
	char           body[8192];
	brq_http_reply r;

	/* Cancel 3 of them and an id that does not exist: 2 canceled, 2 skipped. */
	snprintf(body, sizeof(body), "action=cancel&ids=%lld,%lld,%lld,999999", first, first + 1, first + 2);
	brq_http(port, "POST", "/console/api/bulk", headers, body, &r);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	cr_assert_str_eq(r.body,
			 "{\"action\":\"cancel\",\"processed\":4,\"done\":2,\"skipped\":2,\"next\":null}");
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'canceled'"), 2);
	cr_assert_eq(brq_testdb_intf(db, "SELECT count(*) FROM job WHERE id = %lld AND state = 'pending'",
				     first + 3),
		     1, "a job not selected was changed");

	/* The refusals, each naming its parameter; nothing changes. */
	char many[8192] = "action=delete&ids=1";
	for (int i = 2; i <= 501; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), ",%d", i);
	static const struct {
		const char *body;
		int         status;
		const char *msg;
	} bad[] = {
		{"ids=1", 400, "action: required"},
		{"action=purge&ids=1", 400, "action: required: retry, cancel or delete"},
		{"action=delete", 400, "ids or all=1"},
		{"action=delete&ids=1&all=1", 400, "ids or all=1"},
		{"action=delete&ids=1,,2", 400, "ids: must be job ids"},
		{"action=delete&ids=0", 400, "ids: must be job ids"},
		{"action=delete&ids=99999999999999999999", 400, "ids: a job id is at most"},
		{"action=delete&all=1&limit=201", 400, "limit: must be a number in 1..200"},
		{"action=delete&all=1&state=lost", 400, "state: must be"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_http(port, "POST", "/console/api/bulk", headers, bad[i].body, &r);
		cr_assert_eq(r.status, bad[i].status, "%s: %d %s", bad[i].body, r.status, r.body);
		cr_assert_not_null(strstr(r.body, bad[i].msg), "%s: %s", bad[i].body, r.body);
	}
	brq_http(port, "POST", "/console/api/bulk", headers, many, &r);
	cr_assert_eq(r.status, 400, "%d %s", r.status, r.body);
	cr_assert_not_null(strstr(r.body, "ids: at most 500"), "%s", r.body);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 4);

	/* A read-only (worker) session counts but never acts; without CSRF, nobody acts. */
	char w_cookie[128], w_csrf[128], w_headers[300];
	brq_http_sign_in(port, gw.worker_token, w_cookie, w_csrf, NULL);
	snprintf(w_headers, sizeof(w_headers), "%s%s", w_cookie, w_csrf);
	brq_http(port, "GET", "/console/api/jobs_count?topic=sel&state=canceled", w_headers, NULL, &r);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	cr_assert_str_eq(r.body, "{\"count\":2,\"more\":false}");
	snprintf(body, sizeof(body), "action=delete&ids=%lld", first);
	brq_http(port, "POST", "/console/api/bulk", w_headers, body, &r);
	cr_assert_eq(r.status, 403, "%d %s", r.status, r.body);
	brq_http(port, "POST", "/console/api/bulk", cookie, body, &r);
	cr_assert_eq(r.status, 403, "%d %s", r.status, r.body);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 4);
}
