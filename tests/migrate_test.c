/* SPDX-License-Identifier: MIT */
/* Migration tests: brooqctl migrate round-trips every migration and keeps goose's bookkeeping. */
#define _GNU_SOURCE /* asprintf */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <criterion/criterion.h>

#include "brq_units.h"
#include "migrate.h"
#include "testdb.h"

static char   *dsn;
static PGconn *db;

static void
setup(void)
{
	dsn = brq_testdb_create(false);
	db  = brq_testdb_connect(dsn);
}

static void
teardown(void)
{
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(migrate, .init = setup, .fini = teardown);

/* Runs `brooqctl migrate ARGS` with the DSN in the environment (never argv),
 * returns its exit status and, if out != NULL, its stdout (caller frees). */
static int
brooqctl(const char *args, char **out)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "BROOQ_DSN='%s' BROOQ_MIGRATIONS_DIR='%s/migrations' %s migrate %s 2>&1",
			   dsn, getenv("BROOQ_SOURCE_DIR"), brq_testdb_bin("brooqctl"), args) > 0);
	int rc = brq_testdb_run(cmd, out);
	free(cmd);
	return rc;
}

static long long
job_table_exists(void)
{
	return brq_testdb_int(db, "SELECT count(*) FROM pg_class WHERE relname = 'job' AND relkind = 'r'");
}

Test(migrate, up_applies_every_migration_and_records_goose_versions)
{
	cr_assert_eq(brooqctl("up", NULL), 0);
	cr_assert_eq(job_table_exists(), 1);
	char *v = brq_testdb_value(db,
				   "SELECT string_agg(version_id::text || ':' || is_applied::text, ','"
				   " ORDER BY id) FROM goose_db_version");
	cr_assert_str_eq(v,
			 "0:true,1:true,2:true,3:true,4:true,5:true,6:true,7:true,8:true,9:true,10:true,11:"
			 "true,13:true,14:true,15:true");
	free(v);
}

Test(migrate, up_twice_is_a_no_op)
{
	char *out = NULL;
	cr_assert_eq(brooqctl("up", NULL), 0);
	cr_assert_eq(brooqctl("up", &out), 0);
	cr_assert_not_null(strstr(out, "no migrations to apply"), "%s", out);
	free(out);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM goose_db_version"), 15);
}

Test(migrate, down_to_zero_then_up_round_trips)
{
	cr_assert_eq(brooqctl("up", NULL), 0);
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('t')");
	cr_assert_eq(brooqctl("down-to 0", NULL), 0);
	cr_assert_eq(job_table_exists(), 0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM pg_proc WHERE proname = 'job_terminal_guard'"),
		     0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM goose_db_version WHERE version_id > 0"), 0);
	cr_assert_eq(brooqctl("up", NULL), 0);
	cr_assert_eq(job_table_exists(), 1);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 0);
}

Test(migrate, each_migration_applies_and_rolls_back_alone)
{
	/* Step up one at a time and back down one at a time, checking the
	 * object each migration owns appears and disappears with it. */
	static const struct {
		int         version;
		const char *sql;
	} owned[] = {
		{1, "SELECT count(*) FROM pg_class WHERE relname = 'job'"},
		{2, "SELECT count(*) FROM pg_class WHERE relname = 'job_idempotency_uq'"},
		{3, "SELECT count(*) FROM pg_class WHERE relname = 'job_retention_idx'"},
		{4, "SELECT count(*) FROM pg_class WHERE relname = 'job_claim_topic_idx'"},
		{5,
		 "SELECT count(*) FROM pg_attribute WHERE attrelid = 'job'::regclass AND attname = "
		 "'claimed_at'"
		 " AND NOT attisdropped"},
		{6, "SELECT count(*) FROM pg_class WHERE relname = 'topic_policy'"},
		/* 00007: both columns and both indexes, so a Down that forgets one fails. */
		{7,
		 "SELECT (count(*) = 4)::int FROM pg_attribute a FULL JOIN pg_class c ON false"
		 " WHERE (a.attrelid = 'job'::regclass AND a.attname IN ('result', 'retry_of')"
		 " AND NOT a.attisdropped) OR c.relname IN ('job_retry_of_uq', 'job_list_terminal_idx')"},
		{8, "SELECT count(*) / 2 FROM pg_class WHERE relname IN ('schedule', 'schedule_due_idx')"},
		/* 00009: the list's index of dead and canceled rows replaces 00007's of every
		 * terminal row; 7's check, after 9 and 8 roll back, sees its Down bring that
		 * one back. */
		{9,
		 "SELECT (count(*) FILTER (WHERE relname = 'job_list_dead_idx') = 1"
		 " AND count(*) FILTER (WHERE relname = 'job_list_terminal_idx') = 0)::int FROM pg_class"},
		/* 00010: invariant 3's guard fires after the update (tgtype bit 1 clear:
		 * not BEFORE); its Down puts the BEFORE trigger back. */
		{10,
		 "SELECT count(*) FROM pg_trigger WHERE tgname = 'job_terminal_guard' AND tgtype & 2 = 0"},
		/* 00011: the lost-lease count (invariant 18) and its check, together. */
		{11,
		 "SELECT count(*) FROM pg_attribute a JOIN pg_constraint c ON c.conrelid = a.attrelid"
		 " WHERE a.attrelid = 'job'::regclass AND a.attname = 'lost_leases' AND NOT a.attisdropped"
		 " AND c.conname = 'job_lost_leases_range'"},
		/* 00013: each attempt's error. */
		{13,
		 "SELECT count(*) FROM pg_attribute WHERE attrelid = 'job'::regclass AND attname = 'errors'"
		 " AND NOT attisdropped"},
		/* 00014: the console's history and the index its pruning reads. */
		{14,
		 "SELECT count(*) / 2 FROM pg_class WHERE relname IN ('job_history', "
		 "'job_history_minute_idx')"},
		/* 00015: the topics' spans of ids and their mark, together. */
		{15,
		 "SELECT count(*) / 2 FROM pg_class WHERE relname IN ('job_topic_span', "
		 "'job_topic_span_mark')"},
	};
	enum { N = sizeof(owned) / sizeof(owned[0]) };
	for (int i = 0; i < N; i++) {
		char args[32];
		snprintf(args, sizeof(args), "up-to %d", owned[i].version);
		cr_assert_eq(brooqctl(args, NULL), 0);
		cr_assert_eq(brq_testdb_int(db, owned[i].sql), 1, "migration %d did not apply",
			     owned[i].version);
	}
	for (int i = N - 1; i >= 0; i--) {
		cr_assert_eq(brooqctl("down", NULL), 0);
		cr_assert_eq(brq_testdb_int(db, owned[i].sql), 0, "migration %d did not roll back",
			     owned[i].version);
		if (i > 0)
			cr_assert_eq(brq_testdb_int(db, owned[i - 1].sql), 1,
				     "down rolled back more than one");
	}
	char *out = NULL;
	cr_assert_eq(brooqctl("down", &out), 0);
	cr_assert_not_null(strstr(out, "no migrations to roll back"), "%s", out);
	free(out);
}

/* 00006's Down gives back exactly what 00005 had: the claim index by topic, no
 * priority column, no running-jobs index, no policy table; jobs kept. */
Test(migrate, policy_migration_down_restores_the_claim_index_and_keeps_jobs)
{
	cr_assert_eq(brooqctl("up", NULL), 0);
	brq_testdb_exec(db, "INSERT INTO job (topic, priority) VALUES ('t', 2)");
	brq_testdb_exec(db, "INSERT INTO topic_policy (topic, paused) VALUES ('t', true)");
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM pg_class WHERE relname = 'job_claim_topic_idx'"), 0);
	cr_assert_eq(brooqctl("down-to 5", NULL), 0); /* the later migrations, then 00006 */
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM pg_class WHERE relname = 'job_claim_topic_idx'"), 1);
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM pg_class WHERE relname IN"
				    " ('job_claim_priority_idx', 'job_running_idx', 'topic_policy')"),
		     0);
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM pg_attribute WHERE attrelid = 'job'::regclass"
				    " AND attname = 'priority' AND NOT attisdropped"),
		     0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 1);
	cr_assert_eq(brooqctl("up", NULL), 0);
	cr_assert_eq(brq_testdb_int(db, "SELECT priority FROM job"), 1);
}

Test(migrate, status_lists_applied_and_pending)
{
	char *out = NULL;
	cr_assert_eq(brooqctl("up-to 2", NULL), 0);
	cr_assert_eq(brooqctl("status", &out), 0);
	cr_assert_not_null(strstr(out, "applied  00001_job.sql"), "%s", out);
	cr_assert_not_null(strstr(out, "applied  00002_idempotency.sql"), "%s", out);
	cr_assert_not_null(strstr(out, "pending  00003_retention.sql"), "%s", out);
	cr_assert_not_null(strstr(out, "version 2"), "%s", out);
	free(out);
}

Test(migrate, rejects_unknown_commands_with_usage_exit_code)
{
	cr_assert_eq(brooqctl("sideways", NULL), 2);
	cr_assert_eq(brooqctl("up-to", NULL), 2);
}

Test(migrate, reports_an_unreachable_database)
{
	char *out   = NULL;
	char *saved = dsn;
	dsn         = "host=/nonexistent dbname=x";
	int rc      = brooqctl("status", &out);
	dsn         = saved;
	cr_assert_eq(rc, 1);
	cr_assert_not_null(strstr(out, "cannot connect"), "%s", out);
	free(out);
}

static bool
starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* How many migrations the source has (NNNNN_name.sql files). */
static int
migration_files(void)
{
	char path[4096];
	int  n = 0;
	snprintf(path, sizeof(path), "%s/migrations", getenv("BROOQ_SOURCE_DIR"));
	DIR *d = opendir(path);
	cr_assert_not_null(d, "%s", path);
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += strlen(e->d_name) > 4 && strcmp(e->d_name + strlen(e->d_name) - 4, ".sql") == 0;
	closedir(d);
	return n;
}

/* `brooqctl migrate ARGS --json` with the DSN in the environment: stdout only. */
static int
brooqctl_json(const char *args, char **out)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd,
			   "BROOQ_DSN='%s' BROOQ_MIGRATIONS_DIR='%s/migrations' %s migrate %s --json "
			   "2>/dev/null",
			   dsn, getenv("BROOQ_SOURCE_DIR"), brq_testdb_bin("brooqctl"), args) > 0);
	int rc = brq_testdb_run(cmd, out);
	free(cmd);
	return rc;
}

/* The migration `name` in a --json object: checks it reads as the JSON form's migration
 * (docs/protocol.md §11) with `applied`, and when applied, an applied_at_ms within a
 * minute of now whose text twin is the same instant in RFC 3339 UTC with milliseconds. */
static void
assert_migration(const char *out, long long version, const char *name, bool applied)
{
	char want[256];
	snprintf(want, sizeof(want), "{\"version\":%lld,\"name\":\"%s\",\"applied\":%s,", version, name,
		 applied ? "true" : "false");
	const char *p = strstr(out, want);
	cr_assert_not_null(p, "%s not in %s", want, out);
	p += strlen(want);
	if (!applied) {
		cr_assert(starts(p, "\"applied_at_ms\":null,\"applied_at\":null}"), "%s", p);
		return;
	}
	long long ms;
	char      text[64], t[BRQ_TIME_TEXT_MAX];
	cr_assert_eq(sscanf(p, "\"applied_at_ms\":%lld,\"applied_at\":\"%63[^\"]\"}", &ms, text), 2, "%s", p);
	long long now = (long long) time(NULL) * 1000;
	cr_assert(ms > now - 60000 && ms < now + 60000, "applied_at_ms %lld is not now (%lld): %s", ms, now,
		  out);
	cr_assert_str_eq(text, brq_fmt_time_ms(t, sizeof(t), ms));
	int y, mo, d, h, mi, sec, frac, n = 0;
	cr_assert_eq(sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &y, &mo, &d, &h, &mi, &sec, &frac, &n),
		     7);
	cr_assert_eq((size_t) n, strlen(text), "%s", text);
}

Test(migrate, json_gives_each_migration_with_when_it_was_applied_in_utc)
{
	char *out = NULL;
	/* A database whose clock reads 14 hours ahead of UTC: goose's tstamp is local time
	 * there, and applied_at must still be the instant it was applied. */
	char *name = brq_testdb_value(db, "SELECT current_database()");
	brq_testdb_exec(db, "SET client_min_messages = warning");
	char sql[256];
	snprintf(sql, sizeof(sql), "ALTER DATABASE %s SET timezone = 'Pacific/Kiritimati'", name);
	brq_testdb_exec(db, sql);
	free(name);

	cr_assert_eq(brooqctl_json("up-to 2", &out), 0, "%s", out);
	cr_assert(starts(out, "{\"version\":2,\"migrations\":[{\"version\":1,"), "%s", out);
	assert_migration(out, 1, "00001_job.sql", true);
	assert_migration(out, 2, "00002_idempotency.sql", true);
	cr_assert_null(strstr(out, "00003"), "up-to 2 lists what it applied only: %s", out);
	cr_assert_eq(out[strlen(out) - 1], '\n');
	free(out);

	cr_assert_eq(brooqctl_json("status", &out), 0, "%s", out);
	assert_migration(out, 1, "00001_job.sql", true);
	assert_migration(out, 3, "00003_retention.sql", false);
	int listed = 0;
	for (const char *p = out; (p = strstr(p, "\"name\":")) != NULL; p++)
		listed++;
	cr_assert_eq(listed, migration_files(), "status lists every migration: %s", out);
	free(out);

	cr_assert_eq(brooqctl_json("down", &out), 0, "%s", out);
	cr_assert_str_eq(out,
			 "{\"version\":1,\"migrations\":[{\"version\":2,\"name\":\"00002_idempotency.sql\","
			 "\"applied\":false,\"applied_at_ms\":null,\"applied_at\":null}]}\n");
	free(out);
	cr_assert_eq(brooqctl_json("version", &out), 0, "%s", out);
	cr_assert_str_eq(out, "{\"version\":1}\n");
	free(out);
	cr_assert_eq(brooqctl_json("up-to 1", &out), 0, "%s", out);
	cr_assert_str_eq(out, "{\"version\":1,\"migrations\":[]}\n", "nothing to apply");
	free(out);
}

Test(migrate, json_errors_are_one_object_with_their_exit_code)
{
	char *out   = NULL;
	char *saved = dsn;
	dsn         = "host=/nonexistent dbname=x";
	int rc      = brooqctl_json("status", &out);
	dsn         = saved;
	cr_assert_eq(rc, 1);
	cr_assert(starts(out, "{\"code\":\"database\",\"msg\":\"cannot connect: "), "%s", out);
	cr_assert_not_null(strstr(out, "\",\"exit\":1}\n"), "%s", out);
	free(out);
	cr_assert_eq(brooqctl_json("sideways", &out), 2);
	cr_assert(starts(out, "{\"code\":\"usage\","), "%s", out);
	free(out);
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "BROOQ_DSN='%s' %s migrate up --dir /nonexistent --json 2>/dev/null", dsn,
			   brq_testdb_bin("brooqctl")) > 0);
	cr_assert_eq(brq_testdb_run(cmd, &out), 1);
	free(cmd);
	cr_assert(starts(out, "{\"code\":\"migration\",\"msg\":\"cannot open /nonexistent: "), "%s", out);
	free(out);
}

Test(parse, splits_statements_and_honours_statement_blocks)
{
	const char   *sql = "-- +goose Up\n"
			    "CREATE TABLE a (x int);\n"
			    "-- +goose StatementBegin\n"
			    "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$\n SELECT 1;\n$$;\n"
			    "-- +goose StatementEnd\n"
			    "CREATE TABLE b\n (y int);\n"
			    "-- +goose Down\n"
			    "DROP TABLE b;\nDROP FUNCTION f();\nDROP TABLE a;\n";
	brq_migration m   = {0};
	char          err[128];
	cr_assert_eq(brq_migration_parse(sql, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(m.n_up, 3);
	cr_assert_eq(m.n_down, 3);
	cr_assert_not_null(strstr(m.up[1], "SELECT 1;"));
	cr_assert_not_null(strstr(m.up[2], "(y int);"));
	cr_assert_eq(m.no_tx, 0);
	brq_migration_fini(&m);
}

Test(parse, rejects_files_without_up_or_with_open_blocks)
{
	brq_migration m = {0};
	char          err[128];
	cr_assert_eq(brq_migration_parse("CREATE TABLE a (x int);\n", &m, err, sizeof(err)), BRQ_EINVAL);
	cr_assert_eq(brq_migration_parse("-- +goose Up\n-- +goose StatementBegin\nSELECT 1;\n", &m, err,
					 sizeof(err)),
		     BRQ_EINVAL);
	cr_assert_not_null(strstr(err, "StatementEnd"));
	cr_assert_eq(brq_migration_parse("-- +goose Up\nSELECT 1\n", &m, err, sizeof(err)), BRQ_EINVAL);
}

Test(parse, reads_no_transaction)
{
	brq_migration m = {0};
	char          err[128];
	cr_assert_eq(
		brq_migration_parse(
			"-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY i ON t (x);\n", &m,
			err, sizeof(err)),
		0);
	cr_assert_eq(m.no_tx, 1);
	brq_migration_fini(&m);
}
