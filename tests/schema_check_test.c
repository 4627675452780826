/* SPDX-License-Identifier: MIT */
/* The gateway against the database's schema: the migrations it needs (generated from
 * migrations/ at build time, held to the folder here), the verdict on what is applied,
 * and a real gateway refusing a schema one migration old (exit 78, one line) at start
 * and at a reconnect, serving a newer one, and starting once `brooqctl migrate up` ran. */
#define _GNU_SOURCE /* asprintf */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "store/store.h"
#include "testdb.h"

/* The exit status of a gateway that refuses the schema (gateway/main.c, brooq-gateway(8)). */
#define EXIT_SCHEMA 78

/* ---- the helpers ------------------------------------------------------------------------ */

/* Runs `brooqctl migrate ARGS` on dsn with the source's migrations, or those in dir.
 * Returns its exit status; its output goes to *out (may be NULL; caller frees). */
static int
migrate(const char *dsn, const char *dir, const char *args, char **out)
{
	char  src[1024];
	char *cmd = NULL;
	snprintf(src, sizeof(src), "%s/migrations", getenv("BROOQ_SOURCE_DIR"));
	cr_assert(asprintf(&cmd, "BROOQ_DSN='%s' BROOQ_MIGRATIONS_DIR='%s' %s migrate %s 2>&1", dsn,
			   dir != NULL ? dir : src, brq_testdb_bin("brooqctl"), args) > 0);
	int rc = brq_testdb_run(cmd, out);
	free(cmd);
	return rc;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

/* The versions of the source's migrations/, read as brooqctl reads them (NNNNN_name.sql:
 * the number before '_'), ascending, into v (cap entries); returns how many. */
static size_t
folder_versions(int64_t *v, size_t cap)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/migrations", getenv("BROOQ_SOURCE_DIR"));
	DIR *d = opendir(path);
	cr_assert_not_null(d, "cannot open %s", path);
	size_t         n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".sql") != 0)
			continue;
		char     *end;
		long long ver = strtoll(e->d_name, &end, 10);
		cr_assert(end != e->d_name && *end == '_' && ver > 0, "%s: not NNNNN_name.sql", e->d_name);
		cr_assert_lt(n, cap);
		v[n++] = ver;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_i64);
	return n;
}

/* The newest version this build knows, and the one before it. */
static int64_t
need(void)
{
	size_t         n;
	const int64_t *k = brq_store_schema_known(&n);
	return k[n - 1];
}

static int64_t
need_before(void)
{
	size_t         n;
	const int64_t *k = brq_store_schema_known(&n);
	cr_assert_geq(n, 2);
	return k[n - 2];
}

/* ---- known: the generated list is the folder, and what brooqctl migrates to --------------- */

Test(known, is_every_migration_in_the_folder_in_order)
{
	int64_t        want[512];
	size_t         n_want = folder_versions(want, 512), n;
	const int64_t *k      = brq_store_schema_known(&n);
	cr_assert_gt(n_want, 0);
	cr_assert_eq(n, n_want, "the build knows %zu migrations, migrations/ holds %zu (re-run cmake)", n,
		     n_want);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(k[i], want[i], "known[%zu] = %lld, migrations/ has %lld", i, (long long) k[i],
			     (long long) want[i]);
}

Test(known, is_what_brooqctl_migrates_a_fresh_database_to)
{
	char   *dsn = brq_testdb_create(false);
	PGconn *db  = brq_testdb_connect(dsn);
	cr_assert_eq(migrate(dsn, NULL, "up", NULL), 0);
	size_t         n;
	const int64_t *k = brq_store_schema_known(&n);
	cr_assert_eq(brq_testdb_int(
			     db, "SELECT count(*) FROM goose_db_version WHERE version_id > 0 AND is_applied"),
		     (long long) n);
	cr_assert_eq(brq_testdb_int(db, "SELECT max(version_id) FROM goose_db_version"), k[n - 1]);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

/* ---- judge: the verdict, table-driven ------------------------------------------------------- */

Test(judge, names_the_verdict_have_need_and_missing)
{
	size_t         n;
	const int64_t *k = brq_store_schema_known(&n);
	int64_t        a[600];
	cr_assert_lt(n, 500);
	brq_schema_state s;

	/* Nothing applied (goose's seed row only). */
	a[0] = 0;
	brq_store_schema_judge(a, 1, &s);
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == 0 && s.need == k[n - 1] && s.missing == k[0]);

	/* Every one: OK, in any order. */
	for (size_t i = 0; i < n; i++)
		a[i] = k[n - 1 - i];
	a[n] = 0;
	brq_store_schema_judge(a, n + 1, &s);
	cr_assert(s.verdict == BRQ_SCHEMA_OK && s.have == k[n - 1] && s.missing == 0);

	/* All but the newest: one migration old. */
	brq_store_schema_judge(a + 1, n, &s);
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == k[n - 2] && s.missing == k[n - 1]);

	/* A hole below the newest: too old, the hole named. */
	for (size_t i = 0; i < n; i++)
		a[i] = k[i];
	a[1] = 0;
	brq_store_schema_judge(a, n, &s);
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == k[n - 1] && s.missing == k[1]);

	/* Every one and a newer: served. */
	for (size_t i = 0; i < n; i++)
		a[i] = k[i];
	a[n] = k[n - 1] + 1;
	brq_store_schema_judge(a, n + 1, &s);
	cr_assert(s.verdict == BRQ_SCHEMA_NEWER && s.have == k[n - 1] + 1 && s.missing == 0);

	/* A newer one over a hole is still too old. */
	a[0] = k[n - 1] + 7;
	brq_store_schema_judge(a, n + 1, &s);
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == k[n - 1] + 7 && s.missing == k[0]);
}

/* ---- check: the store against real databases, in this process ------------------------------ */

static brq_config cfg;
static brq_store *store;

/* A store on dsn (borrowed by the configuration: freed by store_close). */
static void
store_open(char *dsn)
{
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	free(cfg.dsn);
	cfg.dsn = strdup(dsn);
	cr_assert_eq(brq_store_new(&cfg, &store), 0);
}

static void
store_close(void)
{
	brq_store_free(store);
	brq_config_fini(&cfg);
}

static brq_schema_state
check(char *dsn)
{
	brq_schema_state s;
	char             err[256];
	store_open(dsn);
	int rv = brq_store_schema_check(store, &s, err, sizeof(err));
	store_close();
	cr_assert_eq(rv, 0, "check: %s", err);
	return s;
}

Test(check, reads_a_migrated_a_rolled_back_and_an_empty_database)
{
	char            *dsn = brq_testdb_create(true);
	brq_schema_state s   = check(dsn);
	cr_assert(s.verdict == BRQ_SCHEMA_OK && s.have == need() && s.need == need(), "verdict %d have %lld",
		  s.verdict, (long long) s.have);
	cr_assert_eq(migrate(dsn, NULL, "down", NULL), 0);
	s = check(dsn);
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == need_before() && s.missing == need());
	brq_testdb_drop(dsn);

	dsn = brq_testdb_create(false); /* never migrated: no goose_db_version at all */
	s   = check(dsn);
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == 0);
	brq_testdb_drop(dsn);
}

Test(check, a_role_that_may_not_read_the_versions_is_unreadable)
{
	char   *dsn = brq_testdb_create(true);
	PGconn *db  = brq_testdb_connect(dsn);
	char    role[64], sql[256], *as_role = NULL;
	snprintf(role, sizeof(role), "brooq_schema_norights_%d", (int) getpid());
	snprintf(sql, sizeof(sql),
		 "SET client_min_messages = warning; DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN", role,
		 role);
	brq_testdb_exec(db, sql);
	cr_assert(asprintf(&as_role, "%s user=%s", dsn, role) > 0);
	brq_schema_state s = check(as_role);
	cr_assert_eq(s.verdict, BRQ_SCHEMA_UNREADABLE);
	cr_assert_not_null(strstr(s.why, "permission denied"), "%s", s.why);
	free(as_role);
	snprintf(sql, sizeof(sql), "DROP ROLE %s", role);
	brq_testdb_exec(db, sql);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

Test(check, an_unreachable_database_is_unavailable_not_a_verdict)
{
	char             dsn[] = "host=/nonexistent-brooq-dir dbname=x connect_timeout=2";
	brq_schema_state s;
	char             err[256] = "";
	store_open(dsn);
	cr_assert_eq(brq_store_schema_check(store, &s, err, sizeof(err)), BRQ_EUNAVAIL);
	cr_assert_neq(err[0], '\0');
	cr_assert_not(brq_store_schema_refused(store, NULL));
	store_close();
}

Test(check, a_connection_does_not_come_up_on_an_old_schema_and_says_why)
{
	char *dsn = brq_testdb_create(true);
	cr_assert_eq(migrate(dsn, NULL, "down", NULL), 0);
	store_open(dsn);
	brq_store_conn c;
	brq_store_conn_init(&c, store, &(brq_store_conn_opts) {.name = "test", .role = BRQ_STORE_POOL});
	cr_assert_not(brq_store_schema_refused(store, NULL));
	cr_assert_not(brq_store_ready(&c));
	cr_assert_not_null(strstr(brq_store_errmsg(&c), "schema too old"), "%s", brq_store_errmsg(&c));
	brq_schema_state s;
	cr_assert(brq_store_schema_refused(store, &s));
	cr_assert(s.verdict == BRQ_SCHEMA_TOO_OLD && s.have == need_before() && s.need == need());
	brq_store_conn_fini(&c);
	store_close();

	/* Migrated again, a connection comes up (and nothing is refused). */
	cr_assert_eq(migrate(dsn, NULL, "up", NULL), 0);
	store_open(dsn);
	brq_store_conn_init(&c, store, &(brq_store_conn_opts) {.name = "test", .role = BRQ_STORE_POOL});
	cr_assert(brq_store_ready(&c), "%s", brq_store_errmsg(&c));
	cr_assert_not(brq_store_schema_refused(store, NULL));
	brq_store_conn_fini(&c);
	store_close();
	brq_testdb_drop(dsn);
}

/* ---- gateway: a real brooq-gateway ----------------------------------------------------------- */

/* Waits up to timeout_ms for the gateway to exit; returns its wait status (fails the
 * test, showing the log, if it is still running). The gateway is then gone. */
static int
await_exit(brq_gw *gw, int timeout_ms)
{
	int st = 0;
	for (int waited = 0; waitpid(gw->pid, &st, WNOHANG) != gw->pid; waited += 20) {
		if (waited >= timeout_ms) {
			kill(gw->pid, SIGKILL);
			waitpid(gw->pid, &st, 0);
			gw->pid = 0;
			cr_assert_fail("the gateway still ran after %d ms; log:\n%s", timeout_ms,
				       brq_gw_log(gw));
		}
		usleep(20 * 1000);
	}
	gw->pid = 0;
	return st;
}

static void
remove_dir(const brq_gw *gw)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", gw->dir);
	cr_assert_eq(system(cmd), 0);
}

/* The one line a refusing gateway writes. */
static void
refusal_line(char *line, size_t cap, int64_t have)
{
	snprintf(line, cap,
		 "level=error msg=schema_too_old have=%05lld need=%05lld hint=\"run: brooqctl migrate up\"",
		 (long long) have, (long long) need());
}

Test(gateway, refuses_a_schema_one_migration_old_then_starts_after_migrate_up, .timeout = 120)
{
	char *dsn = brq_testdb_create(true);
	cr_assert_eq(migrate(dsn, NULL, "down", NULL), 0); /* N-1 */

	brq_gw gw;
	brq_gw_spawn(&gw, dsn, NULL, NULL);
	int         st  = await_exit(&gw, 30000);
	const char *log = brq_gw_log(&gw);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SCHEMA, "status 0x%x; log:\n%s", st, log);
	char line[256];
	refusal_line(line, sizeof(line), need_before());
	cr_assert_eq(brq_gw_count(log, line), 1, "want once: %s\nlog:\n%s", line, log);
	cr_assert_eq(brq_gw_count(log, "level=error"), 1, "one error line only; log:\n%s", log);
	cr_assert_eq(brq_gw_count(log, "msg=ready"), 0, "log:\n%s", log);
	remove_dir(&gw);

	cr_assert_eq(migrate(dsn, NULL, "up", NULL), 0);
	brq_gw_start(&gw, dsn, NULL);
	cr_assert_eq(brq_gw_count(brq_gw_log(&gw), "msg=schema_"), 0, "log:\n%s", brq_gw_log(&gw));
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

Test(gateway, serves_a_newer_schema_and_says_so, .timeout = 120)
{
	/* Every migration of the source, and one this build does not know, which adds a
	 * column as migrations do. */
	char dir[] = "/tmp/brooq-newer.XXXXXX", *cmd = NULL;
	cr_assert_not_null(mkdtemp(dir));
	cr_assert(asprintf(&cmd,
			   "ln -s %s/migrations/*.sql %s/ && printf '%%s\\n' '-- +goose Up'"
			   " 'ALTER TABLE job ADD COLUMN newer_test integer;' '-- +goose Down'"
			   " 'ALTER TABLE job DROP COLUMN newer_test;' >%s/%05lld_newer.sql",
			   getenv("BROOQ_SOURCE_DIR"), dir, dir, (long long) need() + 1) > 0);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	char *dsn = brq_testdb_create(true);
	cr_assert_eq(migrate(dsn, dir, "up", NULL), 0);

	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	char line[256];
	snprintf(line, sizeof(line), "level=info msg=schema_newer have=%05lld need=%05lld",
		 (long long) need() + 1, (long long) need());
	cr_assert_eq(brq_gw_count(brq_gw_log(&gw), line), 1, "want: %s\nlog:\n%s", line, brq_gw_log(&gw));
	/* It serves: an enqueue and a claim through the statements it prepared. */
	brq_arena a;
	brq_arena_init(&a);
	brq_job_spec job = {.topic = brq_str_c("newer"), .payload = brq_str_c("{}")};
	brq_request  req = {
		 .op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {.jobs = &job, .n_jobs = 1}};
	brq_reply rep;
	void     *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &a, &keep), BRQ_ST_OK);
	free(keep);
	brq_str     t     = brq_str_c("newer");
	brq_request claim = {.op    = BRQ_OP_CLAIM,
			     .token = brq_gw_worker(&gw),
			     .claim = {.worker = brq_str_c("w"), .topics = &t, .n_topics = 1, .n = 1}};
	cr_assert_eq(brq_gw_call(&gw, &claim, &rep, &a, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.claim.n_jobs, 1);
	free(keep);
	brq_arena_fini(&a);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
	cr_assert(asprintf(&cmd, "rm -rf %s", dir) > 0);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

Test(gateway, stops_with_the_line_and_78_when_a_reconnect_finds_the_schema_rolled_back, .timeout = 120)
{
	char  *dsn = brq_testdb_create(true);
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	cr_assert_eq(migrate(dsn, NULL, "down", NULL), 0);
	/* Every connection of the gateway goes; each checks the schema as it comes back. */
	PGconn *db = brq_testdb_connect(dsn);
	brq_testdb_exec(db,
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
			" WHERE datname = current_database() AND pid <> pg_backend_pid()");
	PQfinish(db);

	int         st  = await_exit(&gw, 30000);
	const char *log = brq_gw_log(&gw);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_SCHEMA, "status 0x%x; log:\n%s", st, log);
	char line[256];
	refusal_line(line, sizeof(line), need_before());
	cr_assert_eq(brq_gw_count(log, line), 1, "want once: %s\nlog:\n%s", line, log);
	cr_assert_eq(brq_gw_count(log, "msg=stopping reason=schema_refused"), 1, "log:\n%s", log);
	remove_dir(&gw);
	brq_testdb_drop(dsn);
}

Test(gateway, starts_when_the_database_cannot_be_asked, .timeout = 60)
{
	/* As before the check: it serves (ping) and answers `unavailable` until the
	 * database comes; its connections check the schema as they connect. */
	char   dsn[] = "host=/nonexistent-brooq-dir dbname=x connect_timeout=1";
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	brq_gw_await_log(&gw, "level=warn msg=schema_unchecked", 1, 10000);
	/* "ready" follows the pool's first connect attempts, which a busy machine can delay:
	 * wait for the line rather than reading the log at once. */
	brq_gw_await_log(&gw, "msg=ready", 1, 30000);
	cr_assert_eq(brq_gw_count(brq_gw_log(&gw), "msg=ready"), 1, "log:\n%s", brq_gw_log(&gw));
	brq_gw_stop(&gw);
}
