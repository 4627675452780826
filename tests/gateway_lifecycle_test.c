/* SPDX-License-Identifier: MIT */
/* Gateway lifecycle: PostgreSQL going away and coming back, and a graceful stop with work in flight. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "brq_sanitized.h"
#include "gw.h"
#include "testdb.h"

/* Runs a pg.sh function on a private cluster in dir: the shared harness cluster
 * must not be stopped under other tests. */
static void
pg(const char *fn, const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "bash -c '. %s/tests/pg.sh && %s %s' >/dev/null 2>&1",
		 getenv("BROOQ_SOURCE_DIR"), fn, dir);
	cr_assert_eq(system(cmd), 0, "%s %s failed", fn, dir);
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static brq_status
ping_db(brq_gw *gw, brq_arena *a)
{
	/* stats touches the database; ping does not. */
	brq_request req = {.op = BRQ_OP_STATS, .token = brq_gw_worker(gw)};
	brq_reply   rep;
	void       *keep;
	brq_status  st = brq_gw_call(gw, &req, &rep, a, &keep);
	free(keep);
	return st;
}

Test(lifecycle, answers_unavailable_while_postgres_is_down_and_recovers, .timeout = 120)
{
	char dir[] = "/tmp/brooq-pgdown.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	pg("brq_pg_start", dir);
	char dsn[512], tmpl[600];
	snprintf(dsn, sizeof(dsn), "host=%s/sock user=postgres dbname=postgres", dir);
	snprintf(tmpl, sizeof(tmpl), "BROOQ_DSN='%s' %s migrate up --dir %s/migrations >/dev/null", dsn,
		 brq_testdb_bin("brooqctl"), getenv("BROOQ_SOURCE_DIR"));
	cr_assert_eq(system(tmpl), 0);
	/* The test cluster commits asynchronously (tests/pg.sh) and the stop below is a
	 * crash: without a checkpoint the last migrations' commits can be lost with it,
	 * and the restarted server lacks tables the gateway prepares statements on. */
	PGconn *pc = brq_testdb_connect(dsn);
	brq_testdb_exec(pc, "CHECKPOINT");
	PQfinish(pc);

	brq_gw    gw;
	brq_arena a;
	brq_arena_init(&a);
	brq_gw_start(&gw, dsn, NULL);
	cr_assert_eq(ping_db(&gw, &a), BRQ_ST_OK);

	pg("brq_pg_stop", dir);
	for (int i = 0; i < 5; i++) {
		double t0 = now_s();
		cr_assert_eq(ping_db(&gw, &a), BRQ_ST_UNAVAILABLE);
		cr_assert(now_s() - t0 < 2.0, "an unavailable answer took %.2f s", now_s() - t0);
	}
	/* Restart on the same socket; the pool reconnects within its backoff (≤ 5 s). */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "bash -c '. %s/tests/pg.sh && bin=$(brq_pg_bindir) && brq_pg_as_owner $bin/pg_ctl -D "
		 "%s/data -l %s/server.log -w start"
		 " -o \"-c listen_addresses= -c unix_socket_directories=%s/sock\"' >/dev/null 2>&1",
		 getenv("BROOQ_SOURCE_DIR"), dir, dir, dir);
	cr_assert_eq(system(cmd), 0, "restart failed");
	brq_status st = BRQ_ST_UNAVAILABLE;
	for (int i = 0; i < 100 && st != BRQ_ST_OK; i++) {
		st = ping_db(&gw, &a);
		if (st != BRQ_ST_OK)
			usleep(100000);
	}
	cr_assert_eq(st, BRQ_ST_OK, "the gateway did not reconnect");
	brq_gw_stop(&gw);
	brq_arena_fini(&a);
	pg("brq_pg_stop", dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static brq_gw gw2;

static void *
parked_claim(void *arg)
{
	brq_arena   a;
	brq_str     t   = brq_str_c("never");
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .token = brq_gw_worker(&gw2),
			   .claim = {.worker      = brq_str_c("w"),
				     .topics      = &t,
				     .n_topics    = 1,
				     .n           = 1,
				     .has_wait_ms = true,
				     .wait_ms     = 60000}};
	brq_reply   rep;
	void       *keep;
	brq_arena_init(&a);
	brq_status st = brq_gw_call(&gw2, &req, &rep, &a, &keep);
	*(int *) arg  = st == BRQ_ST_OK ? (int) rep.claim.n_jobs : -1;
	free(keep);
	brq_arena_fini(&a);
	return NULL;
}

Test(lifecycle, stops_gracefully_answering_parked_long_polls, .timeout = 60)
{
	char *dsn = brq_testdb_create(true);
	brq_gw_start(&gw2, dsn, NULL);
	pthread_t th[3];
	int       got[3] = {7, 7, 7};
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, parked_claim, &got[i]);
	usleep(300000);
	double t0 = now_s();
	brq_gw_stop(&gw2); /* asserts exit status 0 */
	double took = now_s() - t0;
	fprintf(stderr, "lifecycle: SIGTERM to exit with 3 parked long-polls: %.1f ms\n", took * 1000);
	/* The long-polls are answered at once and nothing else waits: not their 60 s
	 * wait, not the 10 s shutdown grace. Alone this takes 20-40 ms (ASan included);
	 * the bound, half the grace, leaves room for a busy machine (CI ran it in 107 ms
	 * beside other tests against 100 ms before) and still fails on any wait of
	 * either kind. */
	cr_assert(took < 5.0, "stop took %.0f ms with parked long-polls", took * 1000);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(got[i], 0, "parked long-poll %d was not answered with an empty claim", i);
	}
	brq_testdb_drop(dsn);
}

/* A statement that waits in the database (here on a lock the test holds) does not keep a
 * stopping gateway alive past its grace: the grace's end cancels what still runs, the
 * request is answered, the pool's threads are joined and the process exits 0. Before,
 * the stop waited for the statement (for as long as the lock was held: issue 25.10).
 * The bound is the behaviour: the 1 s grace and the cancel, with room for a busy
 * machine; the lock is held far longer than that (until the stop returns). */
Test(lifecycle, a_stop_ends_within_its_grace_while_a_statement_waits_in_the_database, .timeout = 120)
{
	static const char *env[] = {"BROOQ_SHUTDOWN_GRACE=1s", NULL};
	char              *dsn   = brq_testdb_create(true);
	brq_gw_start(&gw2, dsn, env);
	PGconn *locker = brq_testdb_connect(dsn), *db = brq_testdb_connect(dsn);
	brq_testdb_exec(locker, "BEGIN");
	brq_testdb_exec(locker, "LOCK TABLE job IN ACCESS EXCLUSIVE MODE");
	brq_job_spec j   = {.topic = brq_str_c("t.stuck"), .payload = brq_str_c("{}")};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &j, .n_jobs = 1}};
	req.token        = brq_gw_worker(&gw2); /* no timeout_ms: no deadline of the caller's */
	nng_socket s     = brq_gw_send_open(&gw2, &req);
	brq_testdb_wait_int(db, 1, 30000,
			    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
			    " AND datname = current_database() AND pid <> pg_backend_pid()"
			    " AND query LIKE '%%INSERT%%'");
	double t0 = now_s();
	brq_gw_stop(&gw2); /* asserts exit status 0 */
	double took = now_s() - t0;
	fprintf(stderr, "lifecycle: SIGTERM to exit with a statement waiting on a lock: %.0f ms\n",
		took * 1000);
	cr_assert(took < 8.0, "stop took %.0f ms with a statement waiting (grace 1 s)", took * 1000);
	brq_testdb_exec(locker, "ROLLBACK");
	nng_close(s);
	PQfinish(locker);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

static brq_status
enqueue_one(brq_gw *gw, brq_arena *a, char *msg, size_t cap)
{
	brq_job_spec j   = {.topic = brq_str_c("t.ro"), .payload = brq_str_c("{}")};
	brq_request  req = {
		 .op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(gw), .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply  rep;
	void      *keep;
	brq_status st = brq_gw_call(gw, &req, &rep, a, &keep);
	snprintf(msg, cap, "%.*s", (int) rep.msg.len, rep.msg.ptr != NULL ? rep.msg.ptr : "");
	free(keep);
	return st;
}

/* A session that turns out read-only (a standby reached without
 * target_session_attrs=read-write, a primary set default_transaction_read_only) can never
 * write: the gateway drops it and answers unavailable (retry), and a new session is
 * opened, which writes once the database accepts writes again. */
Test(lifecycle, drops_a_read_only_session_answers_unavailable_and_recovers_once_writable, .timeout = 60)
{
	char   *dsn  = brq_testdb_create(true);
	PGconn *db   = brq_testdb_connect(dsn);
	char   *name = brq_testdb_value(db, "SELECT current_database()");
	char    sql[256], msg[512];
	snprintf(sql, sizeof(sql), "ALTER DATABASE %s SET default_transaction_read_only = on", name);
	brq_testdb_exec(db, sql);

	brq_gw    gw;
	brq_arena a;
	brq_arena_init(&a);
	brq_gw_start(&gw, dsn, (const char *const[]) {"BROOQ_POOL_SIZE=1", NULL});
	for (int i = 0; i < 3; i++) {
		brq_status st = enqueue_one(&gw, &a, msg, sizeof(msg));
		cr_assert_eq(st, BRQ_ST_UNAVAILABLE, "a write on a read-only session answered %s: %s",
			     brq_status_name(st), msg);
	}
	brq_gw_await_log(&gw, "msg=db_connection_lost", 1, 5000);

	snprintf(sql, sizeof(sql), "ALTER DATABASE %s RESET default_transaction_read_only", name);
	brq_testdb_exec(db, sql);
	brq_status st = BRQ_ST_UNAVAILABLE;
	for (int i = 0; i < 100 && st != BRQ_ST_OK; i++) {
		st = enqueue_one(&gw, &a, msg, sizeof(msg));
		if (st != BRQ_ST_OK)
			usleep(100000);
	}
	cr_assert_eq(st, BRQ_ST_OK, "the gateway kept its read-only session: %s", msg);
	brq_gw_stop(&gw);
	brq_arena_fini(&a);
	free(name);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

/* A gateway that crashes says so in its log, with the crashing thread's stack, and
 * still dies of the signal (so a core dump and the supervisor's restart follow). */
Test(lifecycle, a_crash_is_logged_with_its_signal_and_stack, .timeout = 60)
{
	if (BRQ_SANITIZED)
		cr_skip_test("AddressSanitizer reports crashes in this build");
	/* No core file from this deliberate crash. */
	struct rlimit no_core = {0, 0};
	cr_assert_eq(setrlimit(RLIMIT_CORE, &no_core), 0);
	char  *dsn = brq_testdb_create(true);
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	cr_assert_eq(kill(gw.pid, SIGSEGV), 0);
	int st = 0;
	cr_assert_eq(waitpid(gw.pid, &st, 0), gw.pid);
	gw.pid          = 0;
	const char *log = brq_gw_log(&gw);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status 0x%x; log:\n%s", st, log);
	cr_assert_eq(brq_gw_count(log, "level=error msg=fatal_signal signal=SIGSEGV code=0 "), 1, "log:\n%s",
		     log);
	/* backtrace_symbols_fd(3)'s frames: the binary and an offset addr2line reads. */
	cr_assert_geq(brq_gw_count(log, "brooq-gateway(+0x"), 1, "no frame in the log:\n%s", log);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", gw.dir);
	cr_assert_eq(system(cmd), 0);
	brq_testdb_drop(dsn);
}
