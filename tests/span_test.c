/* SPDX-License-Identifier: MIT */
/* The topics' spans of ids (migration 00015, issue 28.2): the janitor's pass maps every
 * committed job, never passes a job whose transaction is still open, and the list by
 * topic that reads the spans answers exactly what a plain query answers, with ids
 * above the mark, cursors, time windows and the fallback below the walked spans. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "stmts.h"
#include "testdb.h"
#include "tutil.h"

static char   *dsn;
static PGconn *db;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	/* The gateway's statements, as its pool prepares them. */
	(void) brq_t_prepare_stmt(db, BRQ_STMT_SPAN_MAP);
	(void) brq_t_prepare_stmt(db, BRQ_STMT_SPAN_PRUNE);
	(void) brq_t_prepare_stmt(db, BRQ_STMT_LIST_TOPIC);
}

static void
teardown(void)
{
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(span, .init = setup, .fini = teardown);

/* One janitor pass; returns the mark after it (-1: no step taken). */
static long long
pass(void)
{
	const char *v[1] = {"262144"};
	PGresult   *r    = PQexecPrepared(db, "brq_span_map", 1, v, NULL, NULL, 0);
	cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
	long long m = PQntuples(r) == 1 ? atoll(PQgetvalue(r, 0, 0)) : -1;
	PQclear(r);
	return m;
}

/* Passes until the mark's row satisfies `cond` (SQL over job_topic_span_mark), polled
 * every 20 ms for up to 60 s of the clock: the seal waits 100 ms of it, however busy the
 * machine. */
static void
pass_until(const char *cond)
{
	char sql[512];
	snprintf(sql, sizeof(sql), "SELECT (%s)::int FROM job_topic_span_mark", cond);
	for (int64_t until = brq_t_now_us() + 60000000; brq_testdb_int(db, sql) != 1;) {
		cr_assert(brq_t_now_us() < until, "the mark never came to %s: %s", cond,
			  brq_testdb_value(db, "SELECT row(m.*)::text FROM job_topic_span_mark m"));
		(void) pass();
		brq_t_sleep_ms(20);
	}
}

/* Passes until the mark reaches `id`. */
static void
map_to(long long id)
{
	char cond[64];
	snprintf(cond, sizeof(cond), "mapped >= %lld", id);
	pass_until(cond);
}

static long long
max_id(void)
{
	return brq_testdb_int(db, "SELECT coalesce(max(id), 0) FROM job");
}

/* Spans that should be there and are not (every committed job up to the mark). */
static long long
missing_spans(void)
{
	return brq_testdb_int(db,
			      "SELECT count(*) FROM (SELECT DISTINCT topic, id >> 10 FROM job"
			      " WHERE id <= (SELECT mapped FROM job_topic_span_mark)"
			      " EXCEPT SELECT topic, bucket FROM job_topic_span) x");
}

Test(span, a_pass_maps_every_committed_job_and_an_idle_queue_writes_nothing)
{
	cr_assert_eq(brq_testdb_int(db, "SELECT mapped FROM job_topic_span_mark"), 0);
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 't.' || (g % 7) FROM generate_series(1, 5000) g");
	map_to(max_id());
	cr_assert_eq(missing_spans(), 0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job_topic_span"),
		     brq_testdb_int(db, "SELECT count(*) FROM (SELECT DISTINCT topic, id >> 10 FROM job) x"));
	/* Nothing new: a pass takes no step and writes no row version. */
	long long xmin = brq_testdb_int(db, "SELECT xmin::text::int8 FROM job_topic_span_mark");
	cr_assert_eq(pass(), -1);
	cr_assert_eq(brq_testdb_int(db, "SELECT xmin::text::int8 FROM job_topic_span_mark"), xmin);
	/* Pruning drops the spans below the oldest job, and only those. */
	brq_testdb_exec(db, "DELETE FROM job WHERE id <= 3000");
	PGresult *r = PQexecPrepared(db, "brq_span_prune", 0, NULL, NULL, NULL, 0);
	cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(db));
	PQclear(r);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job_topic_span WHERE bucket < 3001 >> 10"), 0);
	cr_assert_eq(missing_spans(), 0);
}

Test(span, the_mark_never_passes_a_job_whose_transaction_is_open, .timeout = 60)
{
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 'a' FROM generate_series(1, 100)");
	map_to(max_id());
	/* A transaction that has drawn an id and written its row, still open. */
	PGconn *late = brq_testdb_connect(dsn);
	brq_testdb_exec(late, "BEGIN");
	long long open_id = brq_testdb_int(late, "INSERT INTO job (topic) VALUES ('late') RETURNING id");
	/* Jobs after it commit: the passes take them as a candidate and seal it, the state
	 * in which the next pass maps the candidate's ids once the seal's transactions have
	 * ended; then that pass, with the open one still running. */
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 'b' FROM generate_series(1, 3000)");
	char sealed[96];
	snprintf(sealed, sizeof(sealed), "cand >= %lld AND seal IS NOT NULL", max_id());
	pass_until(sealed);
	(void) pass();
	cr_assert_lt(brq_testdb_int(db, "SELECT mapped FROM job_topic_span_mark"), open_id,
		     "the mark passed job %lld while its transaction was open", open_id);
	brq_testdb_exec(late, "COMMIT");
	PQfinish(late);
	map_to(max_id());
	cr_assert_eq(missing_spans(), 0);
	cr_assert_eq(brq_testdb_intf(db,
				     "SELECT count(*) FROM job_topic_span WHERE topic = 'late'"
				     " AND bucket = %lld >> 10",
				     open_id),
		     1);
}

/* The ids of the list by topic for one argument set, or of the plain query that
 * says what they must be, as one text "id,id,...". */
static char *
ids_of(const char *topic, const char *states, const char *after, const char *before, long long cursor,
       int limit, bool plain)
{
	if (plain) {
		char sql[2048];
		snprintf(
			sql, sizeof sql,
			"SELECT coalesce(string_agg(id::text, ',' ORDER BY id DESC), '') FROM"
			" (SELECT id FROM job WHERE topic = '%s' AND state = ANY('%s'::text[]) AND id <= %lld"
			"  AND (%s::int8 IS NULL OR (extract(epoch FROM created_at) * 1000)::int8 >= "
			"%s::int8)"
			"  AND (%s::int8 IS NULL OR (extract(epoch FROM created_at) * 1000)::int8 < %s::int8)"
			"  ORDER BY id DESC LIMIT %d) x",
			topic, states, cursor, after, after, before, before, limit);
		return brq_testdb_value(db, sql);
	}
	/* The statement itself, through its prepared name. */
	char        cur[24], lim[16];
	const char *v[7] = {topic,
			    states,
			    strcmp(after, "NULL") ? after : NULL,
			    strcmp(before, "NULL") ? before : NULL,
			    NULL,
			    cur,
			    lim};
	snprintf(cur, sizeof cur, "%lld", cursor);
	snprintf(lim, sizeof lim, "%d", limit);
	PGresult *r = PQexecPrepared(db, "brq_list_topic", 7, v, NULL, NULL, 0);
	cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
	size_t cap = 32 + (size_t) PQntuples(r) * 24, len = 0;
	char  *out = calloc(1, cap);
	for (int i = 0; i < PQntuples(r); i++)
		len += (size_t) snprintf(out + len, cap - len, "%s%s", i ? "," : "", PQgetvalue(r, i, 0));
	PQclear(r);
	return out;
}

/* 100,000 jobs over 100,000 seconds: a topic in every span with rare states (busy), a
 * sparse one (a job per 5,000 ids), one with only old jobs, one with only dead jobs
 * in more spans than the walk reads, and a busy rest; then 3,000 more above the mark. */
static void
fill(void)
{
	brq_testdb_exec(
		db,
		"INSERT INTO job (id, topic, state, attempts, available_at, locked_by, locked_until,"
		" lease_token, claimed_at, last_error, created_at, updated_at)"
		" SELECT g, topic, state, CASE WHEN state = 'pending' THEN 0 ELSE 1 END,"
		"  CASE WHEN state = 'failed' THEN now() + interval '1 day' ELSE t END,"
		"  CASE WHEN state = 'processing' THEN 'w' END,"
		"  CASE WHEN state = 'processing' THEN now() + interval '1 hour' END,"
		"  CASE WHEN state = 'processing' THEN gen_random_uuid() END,"
		"  CASE WHEN state <> 'pending' THEN t END, CASE WHEN state IN ('dead', 'failed') THEN 'x' "
		"END,"
		"  t, t"
		" FROM (SELECT g, t,"
		"  CASE WHEN g % 4 = 0 THEN 'busy' WHEN g % 5000 = 2 THEN 'sparse'"
		"   WHEN g < 8000 AND g % 4 = 2 THEN 'old' WHEN g % 1500 = 3 THEN 'deadonly'"
		"   ELSE 'other' END AS topic,"
		"  CASE WHEN g % 4 = 0 THEN CASE WHEN g % 1000 = 0 THEN 'failed' WHEN g % 996 = 0 THEN 'dead'"
		"   WHEN g % 992 = 0 THEN 'processing' WHEN g % 988 = 0 THEN 'canceled'"
		"   WHEN g % 3 = 0 THEN 'pending' ELSE 'done' END"
		"   WHEN g % 1500 = 3 AND g % 5000 <> 2 AND NOT (g < 8000 AND g % 4 = 2) THEN 'dead'"
		"   WHEN g % 7 = 0 THEN 'pending' ELSE 'done' END AS state"
		"  FROM (SELECT g, now() - (100000 - g) * interval '1 second' AS t"
		"   FROM generate_series(1, 100000) g) s) x");
	brq_testdb_exec(db, "SELECT setval('job_id_seq', 100000)");
	brq_testdb_exec(db, "ANALYZE job");
	map_to(100000);
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state) SELECT CASE g % 3 WHEN 0 THEN 'busy'"
			" WHEN 1 THEN 'sparse' ELSE 'deadonly' END, CASE WHEN g % 2 = 0 THEN 'done'"
			" ELSE 'pending' END FROM generate_series(1, 3000) g");
}

Test(span, the_list_by_topic_is_exactly_what_a_plain_query_lists, .timeout = 300)
{
	fill();
	cr_assert_eq(brq_testdb_int(db, "SELECT mapped FROM job_topic_span_mark"), 100000);
	static const char *topics[] = {"busy", "sparse", "old", "deadonly", "other", "nosuch"};
	static const char *states[] = {
		"{pending,processing,failed,done,dead,canceled}",
		"{done}",
		"{pending}",
		"{failed}",
		"{dead}",
		"{processing}",
		"{done,dead}",
		"{dead,canceled}",
		"{pending,failed,processing}",
	};
	long long now_ms    = brq_testdb_int(db, "SELECT (extract(epoch FROM now()) * 1000)::int8");
	long long cursors[] = {9223372036854775807LL, 101500, 60000, 3000};
	const int limits[]  = {1, 51};
	char      day_lo[24], day_hi[24];
	snprintf(day_lo, sizeof day_lo, "%lld", now_ms - 60000LL * 1000);
	snprintf(day_hi, sizeof day_hi, "%lld", now_ms - 50000LL * 1000);
	const char *windows[][2] = {{"NULL", "NULL"}, {day_lo, day_hi}, {day_lo, "NULL"}};
	int         n = 0, nonempty = 0;
	for (size_t t = 0; t < sizeof(topics) / sizeof(*topics); t++)
		for (size_t s = 0; s < sizeof(states) / sizeof(*states); s++)
			for (size_t c = 0; c < sizeof(cursors) / sizeof(*cursors); c++)
				for (size_t l = 0; l < sizeof(limits) / sizeof(*limits); l++)
					for (size_t w = 0; w < sizeof(windows) / sizeof(*windows); w++) {
						char *want =
							ids_of(topics[t], states[s], windows[w][0],
							       windows[w][1], cursors[c], limits[l], true);
						char *got =
							ids_of(topics[t], states[s], windows[w][0],
							       windows[w][1], cursors[c], limits[l], false);
						cr_assert_str_eq(got, want,
								 "topic %s states %s cursor %lld limit %d "
								 "window %s..%s",
								 topics[t], states[s], cursors[c], limits[l],
								 windows[w][0], windows[w][1]);
						nonempty += want[0] != '\0';
						n++;
						free(want);
						free(got);
					}
	/* Not a vacuous comparison: rare states, windows and an unknown topic list nothing. */
	cr_assert_gt(nonempty, n / 4, "only %d of %d argument sets listed anything", nonempty, n);
}
