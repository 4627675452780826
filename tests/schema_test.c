/* SPDX-License-Identifier: MIT */
/* Schema tests: the constraints in migrations/ enforce SPEC §2 at the database level. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "stmts.h"
#include "testdb.h"

#define CHECK_VIOLATION  "23514"
#define UNIQUE_VIOLATION "23505"

static char   *dsn;
static PGconn *db;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
}

static void
teardown(void)
{
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(schema, .init = setup, .fini = teardown);

Test(schema, accepts_a_plain_insert_with_defaults)
{
	brq_testdb_exec(db, "INSERT INTO job (topic, payload) VALUES ('email.send', '{\"to\":\"a@b\"}')");
	char *st = brq_testdb_value(db, "SELECT state || ' ' || attempts || ' ' || max_attempts FROM job");
	cr_assert_str_eq(st, "pending 0 5");
	free(st);
}

Test(schema, rejects_an_unknown_state)
{
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, state) VALUES ('t', 'cancelled')"),
			 CHECK_VIOLATION);
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, state) VALUES ('t', 'Pending')"),
			 CHECK_VIOLATION);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 0);
}

Test(schema, rejects_a_processing_row_without_a_lease)
{
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, state) VALUES ('t', 'processing')"),
			 CHECK_VIOLATION);
	/* Half a lease is no lease: holder, expiry and token go together. */
	cr_assert_str_eq(brq_testdb_try(db,
					"INSERT INTO job (topic, state, locked_by, locked_until)"
					" VALUES ('t', 'processing', 'w1', now())"),
			 CHECK_VIOLATION);
	cr_assert_str_eq(brq_testdb_try(db,
					"INSERT INTO job (topic, state, locked_by, lease_token)"
					" VALUES ('t', 'processing', 'w1', gen_random_uuid())"),
			 CHECK_VIOLATION);
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, locked_by, locked_until, lease_token)"
			" VALUES ('t', 'processing', 'w1', now(), gen_random_uuid())");
	/* ... and clearing the lease of a processing row is refused too. */
	cr_assert_str_eq(brq_testdb_try(db,
					"UPDATE job SET locked_by = NULL, locked_until = NULL,"
					" lease_token = NULL"),
			 CHECK_VIOLATION);
}

Test(schema, rejects_a_lease_on_a_row_that_is_not_processing)
{
	cr_assert_str_eq(brq_testdb_try(db,
					"INSERT INTO job (topic, state, locked_by, locked_until, lease_token)"
					" VALUES ('t', 'pending', 'w1', now(), gen_random_uuid())"),
			 CHECK_VIOLATION);
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, locked_by, locked_until, lease_token)"
			" VALUES ('t', 'processing', 'w1', now(), gen_random_uuid())");
	cr_assert_str_eq(brq_testdb_try(db, "UPDATE job SET state = 'pending'"), CHECK_VIOLATION);
}

Test(schema, never_overwrites_a_terminal_state)
{
	const char *terminal[] = {"done", "dead", "canceled"};
	for (size_t i = 0; i < 3; i++) {
		char sql[256];
		snprintf(sql, sizeof(sql), "INSERT INTO job (topic, state) VALUES ('t%zu', '%s')", i,
			 terminal[i]);
		brq_testdb_exec(db, sql);
		snprintf(sql, sizeof(sql), "UPDATE job SET state = 'pending' WHERE topic = 't%zu'", i);
		cr_assert_str_eq(brq_testdb_try(db, sql), CHECK_VIOLATION, "%s was overwritten", terminal[i]);
		snprintf(sql, sizeof(sql), "UPDATE job SET last_error = 'x' WHERE topic = 't%zu'", i);
		cr_assert_str_eq(brq_testdb_try(db, sql), CHECK_VIOLATION, "%s row was changed", terminal[i]);
	}
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state IN ('done','dead','canceled')"),
		     3);
}

Test(schema, rejects_a_duplicate_topic_and_key)
{
	brq_testdb_exec(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', 'order-42')");
	cr_assert_str_eq(
		brq_testdb_try(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', 'order-42')"),
		UNIQUE_VIOLATION);
	/* The same key on another topic is another job. */
	brq_testdb_exec(db, "INSERT INTO job (topic, idempotency_key) VALUES ('u', 'order-42')");
	/* A terminal row still owns its key (for its whole life). */
	brq_testdb_exec(db, "UPDATE job SET state = 'done' WHERE topic = 't'");
	cr_assert_str_eq(
		brq_testdb_try(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', 'order-42')"),
		UNIQUE_VIOLATION);
}

Test(schema, does_not_deduplicate_null_keys)
{
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('t'), ('t'), ('t')");
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE idempotency_key IS NULL"), 3);
}

Test(schema, treats_a_key_of_spaces_as_a_real_key)
{
	brq_testdb_exec(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', '   ')");
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', '   ')"),
			 UNIQUE_VIOLATION);
	/* Spaces are not trimmed: one space is a different key from three. */
	brq_testdb_exec(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', ' ')");
}

Test(schema, rejects_an_empty_key_which_must_be_null)
{
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, idempotency_key) VALUES ('t', '')"),
			 CHECK_VIOLATION);
}

Test(schema, rejects_malformed_topics)
{
	const char *bad[] = {"''", "'Email'", "'-x'", "'.x'", "'a b'", "'a/b'", "repeat('a', 129)"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char sql[256];
		snprintf(sql, sizeof(sql), "INSERT INTO job (topic) VALUES (%s)", bad[i]);
		cr_assert_str_eq(brq_testdb_try(db, sql), CHECK_VIOLATION, "accepted topic %s", bad[i]);
	}
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES (repeat('a', 128)), ('0.a_b-c')");
}

Test(schema, rejects_attempt_counts_out_of_range)
{
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, attempts) VALUES ('t', -1)"),
			 CHECK_VIOLATION);
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, max_attempts) VALUES ('t', 0)"),
			 CHECK_VIOLATION);
}

Test(schema, counts_no_lost_lease_by_default_and_never_a_negative_one)
{
	/* Invariant 18's count starts at 0 for a plain INSERT (the SQL enqueue of
	 * docs/operations.md names no such column) and is never negative. */
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('t')");
	cr_assert_eq(brq_testdb_int(db, "SELECT lost_leases FROM job"), 0);
	cr_assert_str_eq(brq_testdb_try(db, "UPDATE job SET lost_leases = -1"), CHECK_VIOLATION);
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, lost_leases) VALUES ('t', NULL)"),
			 "23502");
}

Test(schema, rejects_invalid_json_payloads)
{
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, payload) VALUES ('t', '{nope')"),
			 "22P02");
}

Test(schema, sets_autovacuum_thresholds_on_job)
{
	char *opts = brq_testdb_value(
		db, "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'job'");
	cr_assert_not_null(strstr(opts, "autovacuum_vacuum_scale_factor=0.02"), "%s", opts);
	cr_assert_not_null(strstr(opts, "autovacuum_vacuum_threshold=100"), "%s", opts);
	free(opts);
}

/* The gateway's own statements (store_sql.c, default configuration), prepared as its
 * pool prepares them (generic plans), then EXPLAINed with realistic arguments. */
static char *
explain_stmt(brq_stmt st, const char *args)
{
	char sql[1024];
	snprintf(sql, sizeof(sql), "EXPLAIN EXECUTE %s(%s)", brq_t_prepare_stmt(db, st), args);
	PGresult *r = PQexec(db, sql);
	cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
	size_t len = 0;
	for (int i = 0; i < PQntuples(r); i++)
		len += strlen(PQgetvalue(r, i, 0)) + 1;
	char *plan = calloc(1, len + 1);
	for (int i = 0; i < PQntuples(r); i++) {
		strcat(plan, PQgetvalue(r, i, 0));
		strcat(plan, "\n");
	}
	PQclear(r);
	return plan;
}

/* Enough terminal rows that a sequential scan would be the wrong plan. */
static void
fill_history(void)
{
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state) SELECT 't', 'done' FROM generate_series(1, 20000)");
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 't' FROM generate_series(1, 10)");
	brq_testdb_exec(db, "ANALYZE job");
}

Test(schema, the_claim_statement_uses_the_claim_index_and_the_rows_it_locked)
{
	fill_history();
	char *plan = explain_stmt(BRQ_STMT_CLAIM,
				  "'{t}', 10, 'w', array_fill(gen_random_uuid(), ARRAY[10]), NULL");
	cr_assert_not_null(strstr(plan, "job_claim_priority_idx"),
			   "claim does not use job_claim_priority_idx:\n%s", plan);
	/* Each (topic, priority) range stops at its first job not yet due. */
	cr_assert_not_null(strstr(plan, "available_at <= now()"), "%s", plan);
	cr_assert_null(strstr(plan, "Filter: (available_at"), "claim filters on available_at:\n%s", plan);
	cr_assert_not_null(strstr(plan, "Tid Scan on job"),
			   "claim does not update the rows by their ctid:\n%s", plan);
	cr_assert_null(strstr(plan, "Seq Scan on job "), "claim scans the table:\n%s", plan);
	/* The order is the plan's: the priorities' VALUES list drives a nested loop, and
	 * nothing sorts (a sort would run every priority's scan). */
	cr_assert_not_null(strstr(plan, "Values Scan"), "%s", plan);
	cr_assert_null(strstr(plan, "Sort"), "the one-topic claim sorts:\n%s", plan);
	free(plan);
}

/* A batch found in the first priority reads that priority's range only: the scans of
 * the other eight never run. */
Test(schema, a_claim_filled_by_the_first_priority_scans_nothing_else)
{
	fill_history();
	char *plan =
		explain_stmt(BRQ_STMT_CLAIM, "'{t}', 5, 'w', array_fill(gen_random_uuid(), ARRAY[5]), NULL");
	free(plan);
	brq_testdb_exec(db, "BEGIN");
	PGresult *r = PQexec(db,
			     "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE brq_claim("
			     "'{t}', 5, 'w', array_fill(gen_random_uuid(), ARRAY[5]), NULL)");
	cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
	char text[8192] = "";
	for (int i = 0; i < PQntuples(r); i++) {
		strncat(text, PQgetvalue(r, i, 0), sizeof(text) - strlen(text) - 2);
		strcat(text, "\n");
	}
	PQclear(r);
	brq_testdb_exec(db, "ROLLBACK");
	const char *scan = strstr(text, "Index Scan using job_claim_priority_idx");
	cr_assert_not_null(scan, "%s", text);
	cr_assert_not_null(strstr(scan, "loops=1)"), "more than one priority was scanned:\n%s", text);
}

/* A claim of several topics merges their scans by priority (a sort), through the
 * same index. */
Test(schema, the_claim_of_several_topics_uses_the_claim_index)
{
	fill_history();
	char *plan = explain_stmt(BRQ_STMT_CLAIM_MULTI,
				  "'{t,u}', 10, 'w', array_fill(gen_random_uuid(), ARRAY[10]), NULL");
	cr_assert_not_null(strstr(plan, "job_claim_priority_idx"), "%s", plan);
	cr_assert_not_null(strstr(plan, "Tid Scan on job"), "%s", plan);
	cr_assert_null(strstr(plan, "Seq Scan on job "), "%s", plan);
	free(plan);
}

/* The claim of a topic with a policy: the same index-driven scans, and the running
 * count of a limited topic from job_running_idx, never the table. */
Test(schema, the_policy_claim_counts_running_jobs_through_the_running_index)
{
	fill_history();
	brq_testdb_exec(db, "INSERT INTO topic_policy (topic, max_running, rate_per_s) VALUES ('t', 5, 10)");
	char *plan = explain_stmt(BRQ_STMT_CLAIM_POLICY,
				  "'{t}', 10, 'w', array_fill(gen_random_uuid(), ARRAY[10]), NULL");
	cr_assert_not_null(strstr(plan, "job_claim_priority_idx"), "%s", plan);
	cr_assert_not_null(strstr(plan, "job_running_idx"), "%s", plan);
	cr_assert_null(strstr(plan, "Seq Scan on job "), "the policy claim scans the table:\n%s", plan);
	free(plan);
}

/* The reaper reads the processing jobs' index (job_running_idx), never the table. */
Test(schema, the_reaper_reads_the_running_index)
{
	fill_history();
	char *plan = explain_stmt(BRQ_STMT_REAP, "100");
	cr_assert_not_null(strstr(plan, "job_running_idx"), "%s", plan);
	cr_assert_null(strstr(plan, "Seq Scan on job "), "the reaper scans the table:\n%s", plan);
	free(plan);
}

/* A connection keeps the generic plan made at its sixth claim. On a new, empty table a
 * plan that reached the locked rows by id was a sequential scan of `job`, kept while
 * the table grew: 10 s per claim at 300k rows. By ctid there is no other plan. */
Test(schema, the_claim_plan_made_on_an_empty_table_never_scans_it)
{
	char *plan = explain_stmt(BRQ_STMT_CLAIM,
				  "'{t}', 10, 'w', array_fill(gen_random_uuid(), ARRAY[10]), NULL");
	cr_assert_null(strstr(plan, "Seq Scan on job "), "a claim plan made on an empty table scans it:\n%s",
		       plan);
	cr_assert_not_null(strstr(plan, "Tid Scan on job"), "%s", plan);
	free(plan);
}

Test(schema, settle_and_heartbeat_reach_rows_through_the_primary_key)
{
	fill_history();
	char *plan = explain_stmt(BRQ_STMT_SETTLE,
				  "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2]),"
				  " '{done,fail}', '{NULL,x}', '{0,0}', NULL");
	cr_assert_null(strstr(plan, "Seq Scan on job "), "settle scans the table:\n%s", plan);
	free(plan);
	plan = explain_stmt(BRQ_STMT_HEARTBEAT, "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2]), NULL");
	cr_assert_null(strstr(plan, "Seq Scan on job "), "heartbeat scans the table:\n%s", plan);
	free(plan);
}

/* The settle by address (store_hint.h) reaches each row by a TID scan, the primary key
 * untouched, and its guard is the by-id settle's: an address now holding another
 * lease, or the right row with another token, matches nothing and changes nothing. */
Test(schema, the_settle_by_address_reads_only_the_rows_at_those_addresses)
{
	fill_history();
	char *plan =
		explain_stmt(BRQ_STMT_SETTLE_AT,
			     "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2]), '{done,fail}', '{NULL,x}',"
			     " '{0,0}', '{\"(0,1)\",\"(0,2)\"}', NULL");
	cr_assert_not_null(strstr(plan, "Tid Scan on job"), "settle_at does not read by address:\n%s", plan);
	cr_assert_null(strstr(plan, "job_pkey"), "settle_at probes the primary key:\n%s", plan);
	cr_assert_null(strstr(plan, "Seq Scan on job "), "settle_at scans the table:\n%s", plan);
	free(plan);
	brq_testdb_exec(db,
			"INSERT INTO job (id, topic, state, attempts, locked_by, locked_until, lease_token,"
			" claimed_at) VALUES"
			" (900001, 't', 'processing', 1, 'w', now() + interval '1 minute',"
			"  'aaaaaaaa-0000-0000-0000-000000000001', now()),"
			" (900002, 't', 'processing', 1, 'w', now() + interval '1 minute',"
			"  'bbbbbbbb-0000-0000-0000-000000000002', now())");
	char *at_a = brq_testdb_value(db, "SELECT ctid FROM job WHERE id = 900001");
	char *at_b = brq_testdb_value(db, "SELECT ctid FROM job WHERE id = 900002");
	char  sql[512];
	/* Job 1's id and token at job 2's address; then job 1's id at its address with
	 * job 2's token. */
	const char *tries[][2] = {{"aaaaaaaa-0000-0000-0000-000000000001", at_b},
				  {"bbbbbbbb-0000-0000-0000-000000000002", at_a}};
	for (int i = 0; i < 2; i++) {
		snprintf(sql, sizeof(sql),
			 "EXECUTE brq_settle_at('{900001}', '{%s}', '{done}', '{NULL}', '{0}', '{\"%s\"}', "
			 "NULL)",
			 tries[i][0], tries[i][1]);
		PGresult *r = PQexec(db, sql);
		cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
		cr_assert_eq(PQntuples(r), 0, "try %d settled a row", i);
		PQclear(r);
	}
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM job WHERE id IN (900001, 900002)"
				    " AND state = 'processing' AND lease_token IS NOT NULL"),
		     2);
	snprintf(sql, sizeof(sql),
		 "EXECUTE brq_settle_at('{900001}', '{aaaaaaaa-0000-0000-0000-000000000001}', '{done}',"
		 " '{NULL}', '{0}', '{\"%s\"}', NULL)",
		 at_a);
	PGresult *r = PQexec(db, sql);
	cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db));
	cr_assert_eq(PQntuples(r), 1);
	PQclear(r);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE id = 900001 AND state = 'done'"), 1);
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE id = 900002 AND state = 'processing'"), 1);
	free(at_a);
	free(at_b);
}

/* The statements that write leased rows item by item lock each row as they reach it,
 * in the order of their arrays, which the store sends in id order (store_order.c):
 * so a heartbeat round and a settle of the same leases at once cannot deadlock. That
 * holds while the items' unnest drives a nested loop (the outer side, printed first)
 * and nothing reorders the rows; on an empty table (plans are made at a connection's
 * first call) as on a full one. */
/* A statement of the tests below and the arguments of its EXPLAIN. */
typedef struct stmt_case {
	brq_stmt    st;
	const char *args;
} stmt_case;

/* The statements that write leased rows a peer names by the batch. */
static const stmt_case batch_stmts[] = {
	{BRQ_STMT_SETTLE,
	 "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2]), '{done,fail}', '{NULL,x}', '{0,0}', "
	 "NULL"},
	{BRQ_STMT_SETTLE_AT,
	 "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2]), '{done,fail}', '{NULL,x}', '{0,0}', "
	 "'{\"(0,1)\",\"(0,2)\"}', NULL"},
	{BRQ_STMT_HEARTBEAT, "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2]), NULL"},
	{BRQ_STMT_UNCLAIM, "'{1,2}', array_fill(gen_random_uuid(), ARRAY[2])"},
};
#define N_BATCH_STMTS (sizeof(batch_stmts) / sizeof(batch_stmts[0]))

static void
assert_item_order(bool filled)
{
	for (size_t i = 0; i < N_BATCH_STMTS; i++) {
		const stmt_case *cs    = &batch_stmts[i];
		char            *plan  = explain_stmt(cs->st, cs->args);
		const char      *loop  = strstr(plan, "Nested Loop");
		const char      *items = strstr(plan, "Function Scan");
		const char      *rows  = items != NULL ? strstr(items, " on job j") : NULL;
		cr_assert(loop != NULL && items != NULL && rows != NULL && loop < items,
			  "statement %d (%s table): the items do not drive a nested loop over job:\n%s",
			  (int) cs->st, filled ? "full" : "empty", plan);
		cr_assert_null(strstr(plan, "Hash"), "statement %d hashes:\n%s", (int) cs->st, plan);
		cr_assert_null(strstr(plan, "Sort"), "statement %d sorts:\n%s", (int) cs->st, plan);
		cr_assert_null(strstr(plan, "Merge"), "statement %d merges:\n%s", (int) cs->st, plan);
		free(plan);
	}
}

Test(schema, batches_of_items_lock_rows_in_the_order_they_are_sent)
{
	assert_item_order(false);
}

Test(schema, batches_of_items_lock_rows_in_the_order_they_are_sent_on_a_full_table)
{
	fill_history();
	assert_item_order(true);
}

/* The same for the statements that reach rows by id: a plan made while the table was
 * empty must still go through the primary key once it is not. */
Test(schema, plans_made_on_an_empty_table_reach_rows_through_the_primary_key)
{
	static const stmt_case by_id[] = {{BRQ_STMT_CANCEL, "1"}, {BRQ_STMT_JOB, "1"}};
	for (size_t i = 0; i < N_BATCH_STMTS + 2; i++) {
		const stmt_case *cs   = i < N_BATCH_STMTS ? &batch_stmts[i] : &by_id[i - N_BATCH_STMTS];
		char            *plan = explain_stmt(cs->st, cs->args);
		cr_assert_null(strstr(plan, "Seq Scan on job "),
			       "statement %d, planned on an empty table, scans it:\n%s", (int) cs->st, plan);
		free(plan);
	}
}

/* The job list, retry and delete (issue 15): each list shape reaches rows through the
 * index docs/operations.md section 13 names, never a sequential scan, also with plans
 * made on an empty table. */
static void
assert_list_plans(bool filled)
{
	static const char *all = "'{pending,processing,failed,done,dead,canceled}'";
	char               args[9][256];
	snprintf(args[0], sizeof args[0], "NULL, %s, NULL, NULL, NULL, 9223372036854775807, 51", all);
	snprintf(args[1], sizeof args[1], "'t', '{dead}', NULL, NULL, NULL, 9223372036854775807, 51");
	snprintf(args[2], sizeof args[2], "NULL, '{done}', NULL, NULL, NULL, 9223372036854775807, 51");
	snprintf(args[3], sizeof args[3], "'t', '{pending}', NULL, NULL, 'k', 9223372036854775807, 51");
	snprintf(args[4], sizeof args[4], "'t', 'dead', 100");
	snprintf(args[5], sizeof args[5], "1");
	snprintf(args[6], sizeof args[6], "'t', '{done}', NULL, NULL, NULL, 9223372036854775807, 51");
	snprintf(args[7], sizeof args[7], "NULL, '{dead}', NULL, NULL, NULL, 9223372036854775807, 51");
	snprintf(args[8], sizeof args[8], "NULL, %s, NULL, NULL, 'k', 9223372036854775807, 51", all);
	const struct {
		brq_stmt    st;
		const char *args, *index;
	} cases[] = {
		{BRQ_STMT_LIST_ALL, args[0], "job_pkey"},
		{BRQ_STMT_LIST_TOPIC, args[1], "job_list_dead_idx"},
		{BRQ_STMT_LIST_TOPIC, args[1], "job_claim_priority_idx"},
		{BRQ_STMT_LIST_TOPIC, args[6], "job_pkey"},
		{BRQ_STMT_LIST_STATE, args[7], "job_list_dead_idx"},
		{BRQ_STMT_LIST_STATE, args[2], "job_pkey"},
		{BRQ_STMT_LIST_KEY, args[3], "job_idempotency_uq"},
		{BRQ_STMT_LIST_KEY, args[8], "job_idempotency_uq"}, /* a key in every topic */
		{BRQ_STMT_RETRY_BULK, args[4], "job_list_dead_idx"},
		{BRQ_STMT_RETRY_BULK, args[4], "job_retry_of_uq"},
		{BRQ_STMT_RETRY_ONE, args[5], "job_retry_of_uq"},
		{BRQ_STMT_DELETE, args[5], "job_pkey"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		brq_testdb_exec(db, "DEALLOCATE ALL"); /* some statements are asked twice */
		char *plan = explain_stmt(cases[i].st, cases[i].args);
		cr_assert_null(strstr(plan, "Seq Scan on job "), "statement %d (%s) scans the table:\n%s",
			       (int) cases[i].st, filled ? "filled" : "empty", plan);
		cr_assert_not_null(strstr(plan, cases[i].index), "statement %d does not use %s:\n%s",
				   (int) cases[i].st, cases[i].index, plan);
		free(plan);
	}
}

/* The indexes of job whose predicate row `id` satisfies (every index an insert or a
 * non-HOT update of that row writes an entry into), sorted, comma-separated. Each
 * partial index's predicate is evaluated on the row with query_to_xml. Caller frees. */
static char *
indexes_holding(long long id)
{
	char sql[1024];
	snprintf(sql, sizeof sql,
		 "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_index i"
		 " JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'job'::regclass"
		 " AND (i.indpred IS NULL OR (xpath('/row/n/text()', query_to_xml(format("
		 "  'SELECT count(*) AS n FROM job WHERE id = %lld AND (%%s)',"
		 "  pg_get_expr(i.indpred, i.indrelid)), false, true, '')))[1]::text = '1')",
		 id);
	return brq_testdb_value(db, sql);
}

/* Every job settles done, so what a done row costs is paid by every job: its final
 * settle writes one entry per index that holds it. Migration 00009 took done rows
 * out of the list's index (10 % of the drain, docs/benchmarks.md); an index that
 * takes them in again fails here. Dead rows are in the list's index. */
Test(schema, a_done_row_is_held_by_the_primary_key_and_the_retention_index_only)
{
	long long done =
		brq_testdb_int(db, "INSERT INTO job (topic, state) VALUES ('t', 'done') RETURNING id");
	long long dead =
		brq_testdb_int(db, "INSERT INTO job (topic, state) VALUES ('t', 'dead') RETURNING id");
	char *a = indexes_holding(done);
	char *b = indexes_holding(dead);
	cr_expect_str_eq(a, "job_pkey,job_retention_idx");
	cr_expect_str_eq(b, "job_list_dead_idx,job_pkey,job_retention_idx");
	free(a);
	free(b);
}

Test(schema, the_list_retry_and_delete_go_through_their_indexes)
{
	fill_history();
	brq_testdb_exec(db, "INSERT INTO job (topic, state) SELECT 't', 'dead' FROM generate_series(1, 200)");
	brq_testdb_exec(db, "ANALYZE job");
	assert_list_plans(true);
}

Test(schema, list_plans_made_on_an_empty_table_never_scan_it)
{
	assert_list_plans(false);
}

/* A topic link (issue 28.2): the topic's spans of ids (job_topic_span, migration 00015)
 * newest first, each a bounded range of job_pkey, not a walk through the whole
 * history; the ids above the janitor's mark by the primary key, bounded below. */
Test(schema, a_topic_link_reads_the_primary_key_only_in_its_topics_spans)
{
	fill_history();
	char *plan = explain_stmt(BRQ_STMT_LIST_TOPIC,
				  "'u', '{pending,processing,failed,done,dead,canceled}', NULL, NULL,"
				  " NULL, 9223372036854775807, 51");
	cr_assert_not_null(strstr(plan, "job_topic_span_pkey"), "%s", plan);
	cr_assert_not_null(
		strstr(plan, "Index Cond: ((id >= (sp.bucket << 10)) AND (id < ((sp.bucket + 1) << 10))"),
		"the walk is not bounded:\n%s", plan);
	cr_assert_not_null(strstr(plan, "Index Cond: ((id > $"),
			   "the ids above the mark are not bounded:\n%s", plan);
	cr_assert_null(strstr(plan, "Seq Scan on job "), "%s", plan);
	free(plan);
}

/* A created-time window (issue 28): the pkey walk is bounded by the ids the window's
 * times were found at (a binary search over job_pkey), not filtered through the whole
 * history; with a topic, the done rows' walk too. */
Test(schema, a_created_time_window_bounds_the_primary_key_walk_by_id)
{
	static const char *all = "'{pending,processing,failed,done,dead,canceled}'";
	const struct {
		brq_stmt    st;
		const char *topic;
	} cases[] = {{BRQ_STMT_LIST_ALL, "NULL"}, {BRQ_STMT_LIST_TOPIC, "'t'"}};
	fill_history();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char args[256];
		snprintf(args, sizeof args, "%s, %s, 1, 2000000000000, NULL, 9223372036854775807, 51",
			 cases[i].topic, all);
		brq_testdb_exec(db, "DEALLOCATE ALL");
		char *plan = explain_stmt(cases[i].st, args);
		cr_assert_not_null(strstr(plan, "(id <= $6) AND (id >= COALESCE("),
				   "the walk has no id range:\n%s", plan);
		cr_assert_not_null(strstr(plan, "AND (id < COALESCE("), "%s", plan);
		cr_assert_null(strstr(plan, "Seq Scan on job "), "%s", plan);
		free(plan);
	}
}

/* The backlog of any topic, newest first (issue 28): job_pkey walked backwards over
 * the newest ids only (a lower bound on id in its Index Cond, not a walk through the
 * history), then, when those hold less than a page, the group's partial index. */
Test(schema, the_any_topic_backlog_list_walks_the_newest_ids_then_its_partial_index)
{
	static const struct {
		const char *states, *index;
	} cases[] = {{"'{pending}'", "job_claim_priority_idx"}, {"'{processing}'", "job_running_idx"}};
	fill_history();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char args[256];
		snprintf(args, sizeof args, "NULL, %s, NULL, NULL, NULL, 9223372036854775807, 51",
			 cases[i].states);
		brq_testdb_exec(db, "DEALLOCATE ALL");
		char *plan = explain_stmt(BRQ_STMT_LIST_STATE, args);
		cr_assert_not_null(strstr(plan, "Index Scan Backward using job_pkey"), "%s", plan);
		cr_assert_not_null(strstr(plan, "AND (id > ("), "the walk has no lower bound:\n%s", plan);
		cr_assert_not_null(strstr(plan, cases[i].index), "%s", plan);
		cr_assert_null(strstr(plan, "Seq Scan on job "), "%s", plan);
		free(plan);
	}
}

Test(schema, a_job_is_retried_at_most_once_and_a_retry_needs_no_original)
{
	brq_testdb_exec(db, "INSERT INTO job (id, topic, state) VALUES (1000, 't', 'dead')");
	brq_testdb_exec(db, "INSERT INTO job (topic, retry_of) VALUES ('t', 1000)");
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, retry_of) VALUES ('t', 1000)"), "23505");
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, retry_of) VALUES ('t', 0)"), "23514");
	brq_testdb_exec(db, "DELETE FROM job WHERE id = 1000");
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE retry_of = 1000"), 1);
	cr_assert_str_eq(brq_testdb_try(db, "INSERT INTO job (topic, result) VALUES ('t', '{nope')"),
			 "22P02");
}
