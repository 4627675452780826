/* SPDX-License-Identifier: MIT */
/* The job list at 1,000,000 rows: each statement shape EXPLAIN ANALYZEd as the gateway's
 * pool runs it (prepared, generic plans), then timed end to end through a real gateway.
 * Loading the rows takes a while: it runs only with BROOQ_TEST_LIST_1M=1 (the default
 * suite skips it); docs/operations.md "Listing jobs" shows its output. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "stmts.h"
#include "testdb.h"
#include "tutil.h"

/* 1M rows over 8 topics: 900k done, 10k dead, 10k canceled, 70k pending, 10k failed;
 * first (the oldest ids) 60 done rows of topic "rare": the worst case of a done list,
 * a topic whose done rows all lie behind the whole history. */
static void
load(PGconn *db)
{
	double t0 = brq_t_now_ms();
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, created_at, updated_at)"
			" SELECT 'rare', 'done', now() - interval '20 days', now() - interval '20 days'"
			" FROM generate_series(1, 60)");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, payload, created_at, updated_at)"
			" SELECT 'topic.' || (g / 100 % 8),"
			"  CASE WHEN g % 100 < 90 THEN 'done' WHEN g % 100 = 90 THEN 'dead'"
			"   WHEN g % 100 = 91 THEN 'canceled' WHEN g % 100 = 92 THEN 'failed'"
			"   ELSE 'pending' END,"
			"  '{\"n\": 1}', now() - (1000000 - g) * interval '1 second',"
			"  now() - (1000000 - g) * interval '1 second'"
			" FROM generate_series(1, 1000000) g");
	brq_testdb_exec(db, "VACUUM ANALYZE job");
	fprintf(stderr, "list_speed: loaded 1M rows in %.0f ms\n", brq_t_now_ms() - t0);
}

typedef struct shape {
	const char *name;
	brq_stmt    st;
	const char *args; /* $1..$7, as EXECUTE takes them */
	/* the same through brooq_list */
	const char *topic;
	int         state; /* -1: any */
} shape;

#define ALL   "'{pending,processing,failed,done,dead,canceled}'"
#define FIRST ", NULL, NULL, NULL, 9223372036854775807, 51" /* no time or key filter, page 1 */

static const shape shapes[] = {
	{"no filter", BRQ_STMT_LIST_ALL, "NULL, " ALL FIRST, NULL, -1},
	{"topic + dead", BRQ_STMT_LIST_TOPIC, "'topic.3', '{dead}'" FIRST, "topic.3", BROOQ_DEAD},
	{"topic + pending", BRQ_STMT_LIST_TOPIC, "'topic.3', '{pending}'" FIRST, "topic.3", BROOQ_PENDING},
	{"topic (any state)", BRQ_STMT_LIST_TOPIC, "'topic.3', " ALL FIRST, "topic.3", -1},
	{"topic + done", BRQ_STMT_LIST_TOPIC, "'topic.3', '{done}'" FIRST, "topic.3", BROOQ_DONE},
	{"dead (any topic)", BRQ_STMT_LIST_STATE, "NULL, '{dead}'" FIRST, NULL, BROOQ_DEAD},
	{"done (any topic)", BRQ_STMT_LIST_STATE, "NULL, '{done}'" FIRST, NULL, BROOQ_DONE},
	{"pending (any topic)", BRQ_STMT_LIST_STATE, "NULL, '{pending}'" FIRST, NULL, BROOQ_PENDING},
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* EXPLAIN (ANALYZE) of statement st with args, as the pool plans it; prints the plan. */
static double
explain(PGconn *db, const char *name, const char *args)
{
	char sql[1024];
	snprintf(sql, sizeof(sql), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE %s(%s)", name, args);
	PGresult *r = PQexec(db, sql);
	cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
	double ms = -1;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *line = PQgetvalue(r, i, 0);
		fprintf(stderr, "    %s\n", line);
		cr_assert_null(strstr(line, "Seq Scan on job "), "%s scans the table", name);
		if (strncmp(line, "Execution Time: ", 16) == 0)
			ms = atof(line + 16);
	}
	PQclear(r);
	return ms;
}

/* Each shape's plan and time in the database, warm, as the pool's connections run it. */
static void
explain_shapes(PGconn *db)
{
	const char *names[BRQ_STMT__COUNT] = {NULL};
	for (int st = BRQ_STMT_LIST_ALL; st <= BRQ_STMT_RETRY_BULK; st++)
		names[st] = brq_t_prepare_stmt(db, (brq_stmt) st);
	for (size_t i = 0; i < N_SHAPES; i++) {
		/* A few runs first: the timings are of warm, generic plans. */
		char sql[1024];
		snprintf(sql, sizeof(sql), "EXECUTE %s(%s)", names[shapes[i].st], shapes[i].args);
		for (int k = 0; k < 6; k++)
			PQclear(PQexec(db, sql));
		fprintf(stderr, "list_speed: %s (%s), first page of 50:\n", shapes[i].name,
			names[shapes[i].st]);
		double ms = explain(db, names[shapes[i].st], shapes[i].args);
		fprintf(stderr, "list_speed: %s: %.3f ms in the database\n", shapes[i].name, ms);
		cr_expect_lt(ms, 100.0, "%s: %.3f ms", shapes[i].name, ms);
	}
	/* A deep page: the cursor 500k rows down. */
	fprintf(stderr, "list_speed: topic + done, a page 500k rows down:\n");
	double ms =
		explain(db, names[BRQ_STMT_LIST_TOPIC], "'topic.3', '{done}', NULL, NULL, NULL, 500000, 51");
	fprintf(stderr, "list_speed: deep page: %.3f ms\n", ms);
	cr_expect_lt(ms, 100.0);
	/* The worst case of a done list (migration 00009: no index holds done rows by
	 * topic): the primary key walked through the whole history to the oldest rows. */
	fprintf(stderr, "list_speed: rare + done, all behind 1M rows:\n");
	ms = explain(db, names[BRQ_STMT_LIST_TOPIC], "'rare', '{done}'" FIRST);
	fprintf(stderr, "list_speed: rare + done: %.3f ms\n", ms);
	cr_expect_lt(ms, 2000.0);
}

/* Each shape end to end, brooq_list through a gateway: median and max of 20 calls. */
static void
time_through_gateway(char *dsn)
{
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	brooq_client_opts co = {.size = sizeof(co), .url = gw.url, .token_file = gw.admin_token_file};
	brooq_client     *c  = NULL;
	cr_assert_eq(brooq_client_open(&co, &c), BROOQ_OK);
	for (size_t i = 0; i < N_SHAPES; i++) {
		brooq_list_opts o = BROOQ_LIST_OPTS_INIT;
		o.topic           = shapes[i].topic;
		o.has_state       = shapes[i].state >= 0;
		o.state           = shapes[i].state >= 0 ? (brooq_state) shapes[i].state : BROOQ_PENDING;
		double t[20];
		for (int k = 0; k < 20; k++) {
			brooq_job_page *p  = NULL;
			double          t0 = brq_t_now_ms();
			cr_assert_eq(brooq_list(c, &o, &p), BROOQ_OK, "%s", brooq_last_message());
			t[k] = brq_t_now_ms() - t0;
			cr_assert_eq(p->n, 50, "%s: %zu rows", shapes[i].name, p->n);
			brooq_job_page_free(p);
		}
		for (int x = 1; x < 20; x++) /* insertion sort: 20 values */
			for (int y = x; y > 0 && t[y - 1] > t[y]; y--) {
				double tmp = t[y];
				t[y]       = t[y - 1];
				t[y - 1]   = tmp;
			}
		fprintf(stderr, "list_speed: brooq_list %-20s median %.2f ms, max %.2f ms (50 rows)\n",
			shapes[i].name, t[10], t[19]);
	}
	brooq_client_close(c);
	brq_gw_stop(&gw);
}

Test(list_speed, one_million_rows)
{
	if (getenv("BROOQ_TEST_LIST_1M") == NULL || strcmp(getenv("BROOQ_TEST_LIST_1M"), "1") != 0)
		cr_skip_test("set BROOQ_TEST_LIST_1M=1 to load 1M rows and time the list");
	char   *dsn = brq_testdb_create(true);
	PGconn *db  = brq_testdb_connect(dsn);
	load(db);
	explain_shapes(db);
	time_through_gateway(dsn);
	PQfinish(db);
	brq_testdb_drop(dsn);
}
