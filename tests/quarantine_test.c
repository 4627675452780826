/* SPDX-License-Identifier: MIT */
/* Crash-loop quarantine (SPEC invariant 18): the reaper counts the leases of a job that
 * ran out without a recorded outcome and writes `dead` at the topic's max_lost_leases,
 * exactly once whatever the number of gateways; a retry starts again at 0. The reaper
 * run directly against PostgreSQL (suite quarantine), and end to end with a handler that
 * kills its own worker process under two gateways (suite quarantine_e2e). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "background/janitor.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "gw.h"
#include "testdb.h"
#include "tutil.h"

/* ---- the reaper, against PostgreSQL ---------------------------------------------------- */

static char      *dsn;
static PGconn    *db;
static brq_config cfg;
static brq_store *store;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	free(cfg.dsn);
	cfg.dsn = strdup(dsn);
	cr_assert_eq(brq_metrics_init("test"), 0);
}

static void
teardown(void)
{
	brq_metrics_fini();
	brq_store_free(store);
	store = NULL;
	brq_config_fini(&cfg);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(quarantine, .init = setup, .fini = teardown, .timeout = 120);

/* The store, its statements compiled from cfg as the test sets it (the per-topic
 * thresholds are CASE expressions in the reap's text): max_lost_leases globally, and
 * max[i] for topics[i] (NULL-terminated; NULL: no override). */
static void
open_store(uint32_t max_lost_leases, const char *const *topics, const uint32_t *max)
{
	cfg.max_lost_leases = max_lost_leases;
	size_t n            = 0;
	while (topics != NULL && topics[n] != NULL)
		n++;
	if (n > 0) {
		cfg.topic_overrides = calloc(n, sizeof(*cfg.topic_overrides));
		cr_assert_not_null(cfg.topic_overrides);
		for (size_t i = 0; i < n; i++) {
			snprintf(cfg.topic_overrides[i].topic, sizeof(cfg.topic_overrides[i].topic), "%s",
				 topics[i]);
			cfg.topic_overrides[i].has_max_lost_leases = true;
			cfg.topic_overrides[i].max_lost_leases     = max[i];
		}
		cfg.n_topic_overrides = n;
	}
	cr_assert_eq(brq_store_new(&cfg, &store), 0);
}

/* A janitor usable without its thread: one connection, no timers (as janitor_test). */
static void
janitor_init(brq_janitor *j)
{
	memset(j, 0, sizeof(*j));
	j->cfg = &cfg;
	cr_assert_eq(brq_bgthread_init(&j->bg, store,
				       &(brq_store_conn_opts) {.name = "test", .role = BRQ_STORE_JANITOR}),
		     0);
	cr_assert(brq_store_ready(&j->bg.conn));
}

static void
janitor_fini(brq_janitor *j)
{
	brq_bgthread_stop(&j->bg);
}

/* What a claim whose worker died leaves behind, for every job matching `where`: the job
 * processing under a new lease of `holder` (attempts counted, as the claim counts them),
 * already expired at `until`. */
static void
lose_leases(const char *where, const char *holder, const char *until)
{
	char sql[512];
	snprintf(sql, sizeof(sql),
		 "UPDATE job SET state = 'processing', attempts = attempts + 1, locked_by = '%s',"
		 " locked_until = '%s', lease_token = gen_random_uuid() WHERE %s",
		 holder, until, where);
	brq_testdb_exec(db, sql);
}

/* The value of one sample of the metrics registry, or -1 when absent. */
static long long
metric(const char *series)
{
	char  *text = NULL;
	size_t len  = 0;
	cr_assert_eq(brq_metrics_render(&text, &len), 0);
	long long v = -1;
	size_t    n = strlen(series);
	for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p != NULL ? p + 1 : p)
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			v = strtoll(p + n + 1, NULL, 10);
			break;
		}
	free(text);
	return v;
}

#define sql_int(...) brq_testdb_intf(db, __VA_ARGS__)

Test(quarantine, a_job_whose_leases_keep_running_out_is_dead_after_max_lost_leases)
{
	open_store(3, NULL, NULL);
	brq_testdb_exec(db,
			"INSERT INTO job (topic, max_attempts, available_at, last_error)"
			" VALUES ('crash', 2, '2001-01-01 00:00:00+00', 'an earlier failure')");
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('crash')"); /* a bystander */
	brq_janitor j;
	janitor_init(&j);
	for (int i = 1; i <= 3; i++) {
		char holder[32];
		snprintf(holder, sizeof(holder), "host-a/pid-%d", i);
		lose_leases("id = 1", holder, "2001-02-03 04:05:06.789+00");
		cr_assert_eq(brq_janitor_reap(&j), 1);
		cr_assert_eq(brq_janitor_reap(&j), 0, "a lease was taken back twice");
		cr_assert_eq(sql_int("SELECT lost_leases FROM job WHERE id = 1"), i);
		/* Invariant 7: an expired lease spends no attempt; attempts count claims. */
		cr_assert_eq(sql_int("SELECT attempts FROM job WHERE id = 1"), i);
		if (i < 3) {
			cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = 1 AND state = 'pending'"
					     " AND locked_by IS NULL AND last_error = 'an earlier failure'"
					     " AND available_at = '2001-01-01 00:00:00+00'"),
				     1, "lease %d of 3 quarantined the job, or changed more than the lease",
				     i);
			cr_assert_eq(metric("brooq_quarantined_total{topic=\"crash\"}"), 0);
		}
	}
	janitor_fini(&j);
	/* Dead past its max_attempts (2) only by the quarantine, with the reason. */
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = 1 AND state = 'dead' AND locked_by IS NULL"
			     " AND lease_token IS NULL AND locked_until IS NULL"),
		     1);
	char *why = brq_testdb_value(db, "SELECT last_error FROM job WHERE id = 1");
	cr_assert_str_eq(why,
			 "quarantined: 3 leases ran out without a recorded outcome (max_lost_leases 3);"
			 " last held by host-a/pid-3, expired 2001-02-03T04:05:06.789Z");
	free(why);
	/* The reason is the attempts' errors' last entry too (migration 00013), of the
	 * attempt whose lease ran out; the leases before it added nothing. */
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = 1 AND jsonb_array_length(errors) = 1"
			     " AND errors->0->>'error' = last_error AND (errors->0->>'attempt')::int = 3"
			     " AND (errors->0->>'at_ms')::int8 BETWEEN"
			     "  (extract(epoch FROM now() - interval '1 hour') * 1000)::int8 AND"
			     "  (extract(epoch FROM now() + interval '1 hour') * 1000)::int8"),
		     1, "the quarantine's reason is not the attempt's error");
	cr_assert_eq(
		sql_int("SELECT count(*) FROM job WHERE id = 2 AND state = 'pending' AND lost_leases = 0"),
		1);
	cr_assert_eq(metric("brooq_quarantined_total{topic=\"crash\"}"), 1);
	cr_assert_eq(metric("brooq_dead_total{topic=\"crash\"}"), 1);
	cr_assert_eq(metric("brooq_reaped_total{topic=\"crash\"}"), 3);
}

Test(quarantine, a_recorded_outcome_is_not_a_lost_lease)
{
	/* Settled leases never reach the reaper: a job that fails and is retried by
	 * backoff keeps lost_leases 0 however many attempts it makes. */
	open_store(1, NULL, NULL);
	brq_testdb_exec(
		db, "INSERT INTO job (topic, state, attempts, last_error) VALUES ('t', 'failed', 4, 'x')");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, attempts, locked_by, locked_until, lease_token)"
			" VALUES ('t', 'processing', 1, 'w', now() + interval '1 hour', gen_random_uuid())");
	brq_janitor j;
	janitor_init(&j);
	cr_assert_eq(brq_janitor_reap(&j), 0);
	janitor_fini(&j);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE lost_leases = 0 AND state IN ('failed', "
			     "'processing')"),
		     2);
}

Test(quarantine, max_lost_leases_zero_never_quarantines)
{
	/* Globally 0; topic "five" has its own threshold, topic "never" 0 under it. */
	static const char *const topics[] = {"five", NULL};
	static const uint32_t    max[]    = {5};
	open_store(0, topics, max);
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('t'), ('five')");
	brq_janitor j;
	janitor_init(&j);
	for (int i = 1; i <= 20; i++) {
		lose_leases("state = 'pending'", "w", "2001-02-03 04:05:06+00");
		cr_assert_eq(brq_janitor_reap(&j), i <= 5 ? 2 : 1, "round %d", i);
	}
	janitor_fini(&j);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 't' AND state = 'pending'"
			     " AND lost_leases = 20 AND attempts = 20 AND last_error IS NULL"),
		     1);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 'five' AND state = 'dead' AND "
			     "lost_leases = 5"),
		     1);
	cr_assert_eq(metric("brooq_quarantined_total{topic=\"t\"}"), 0);
}

Test(quarantine, a_topic_override_of_zero_never_quarantines_under_a_global_threshold)
{
	static const char *const topics[] = {"never", "two", NULL};
	static const uint32_t    max[]    = {0, 2};
	open_store(5, topics, max);
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('never'), ('two'), ('global')");
	brq_janitor j;
	janitor_init(&j);
	for (int i = 1; i <= 8; i++) {
		lose_leases("state = 'pending'", "w", "2001-02-03 04:05:06+00");
		(void) brq_janitor_reap(&j);
	}
	janitor_fini(&j);
	char *got = brq_testdb_value(db,
				     "SELECT string_agg(topic || ':' || state || ':' || lost_leases, ','"
				     " ORDER BY topic) FROM job");
	cr_assert_str_eq(got, "global:dead:5,never:pending:8,two:dead:2");
	free(got);
}

Test(quarantine, a_retry_starts_the_count_again)
{
	open_store(2, NULL, NULL);
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('crash')");
	brq_janitor j;
	janitor_init(&j);
	for (int i = 0; i < 2; i++) {
		lose_leases("id = 1", "w", "2001-02-03 04:05:06+00");
		cr_assert_eq(brq_janitor_reap(&j), 1);
	}
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = 1 AND state = 'dead' AND lost_leases = 2"),
		     1);
	brq_store_retried out;
	cr_assert_eq(brq_store_retry(&j.bg.conn, &(brq_retry_req) {.id = 1}, &out), 0);
	cr_assert_eq(out.retried, 1);
	uint64_t id = out.ids[0];
	brq_store_reset(&j.bg.conn);
	cr_assert_eq(sql_int("SELECT lost_leases FROM job WHERE id = %" PRIu64, id), 0);
	/* The retry gets the whole budget again: one lost lease leaves it pending. */
	char where[64];
	snprintf(where, sizeof(where), "id = %" PRIu64, id);
	lose_leases(where, "w", "2001-02-03 04:05:06+00");
	cr_assert_eq(brq_janitor_reap(&j), 1);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND state = 'pending' AND lost_leases = 1",
			     id),
		     1);
	lose_leases(where, "w", "2001-02-03 04:05:06+00");
	cr_assert_eq(brq_janitor_reap(&j), 1);
	janitor_fini(&j);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND state = 'dead' AND lost_leases = 2",
			     id),
		     1);
	/* The original, terminal, is never written again (invariant 3). */
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = 1 AND state = 'dead' AND lost_leases = 2"),
		     1);
}

/* Two gateways' reapers: one connection each, as two processes would have. */
static brq_janitor       pair[2];
static int64_t           reaped[2];
static pthread_barrier_t go;

static void *
reap_one(void *arg)
{
	int i = (int) (intptr_t) arg;
	pthread_barrier_wait(&go);
	reaped[i] = brq_janitor_reap(&pair[i]);
	return NULL;
}

Test(quarantine, two_gateways_reaping_at_once_count_each_lease_once_and_quarantine_once)
{
	/* 3000 jobs (three of the reaper's batches), 3 lost leases each: every round the
	 * two reapers race over the same expired rows. A lease counted twice would
	 * quarantine a job a round early; a quarantine counted twice shows in the metric. */
	enum { JOBS = 3000, MAX = 3 };
	open_store(MAX, NULL, NULL);
	brq_testdb_exec(db, "INSERT INTO job (topic) SELECT 'crash' FROM generate_series(1, 3000)");
	for (int i = 0; i < 2; i++)
		janitor_init(&pair[i]);
	for (int round = 1; round <= MAX + 1; round++) {
		lose_leases("state = 'pending'", "w", "2001-02-03 04:05:06+00");
		pthread_t th[2];
		pthread_barrier_init(&go, NULL, 2);
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, reap_one, (void *) (intptr_t) i);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&go);
		cr_assert_eq(reaped[0] + reaped[1], round <= MAX ? JOBS : 0, "round %d: reaped %lld + %lld",
			     round, (long long) reaped[0], (long long) reaped[1]);
		int lost = round <= MAX ? round : MAX;
		cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE lost_leases = %d AND attempts = %d",
				     lost, lost),
			     JOBS, "round %d: counts not exact", round);
		cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'dead'"), round < MAX ? 0 : JOBS,
			     "round %d: quarantined early", round);
		cr_assert_eq(metric("brooq_quarantined_total{topic=\"crash\"}"), round < MAX ? 0 : JOBS,
			     "round %d", round);
	}
	for (int i = 0; i < 2; i++)
		janitor_fini(&pair[i]);
	cr_assert_eq(
		sql_int("SELECT count(*) FROM job WHERE last_error LIKE 'quarantined: 3 leases ran out%%'"),
		JOBS);
}

/* ---- end to end: a handler that kills its worker, two gateways ------------------------- */

static brq_gw   gws[2];
static uint16_t http[2];
static int      n_gws;

static void
e2e_teardown(void)
{
	for (int i = 0; i < n_gws; i++)
		brq_gw_stop(&gws[i]);
	n_gws = 0;
	if (db != NULL)
		PQfinish(db);
	db = NULL;
	brq_testdb_drop(dsn);
}

TestSuite(quarantine_e2e, .fini = e2e_teardown, .timeout = 180);

/* Starts tests/crash_worker against gateway g for `topic`; its output goes to log. */
static pid_t
spawn_crash_worker(const brq_gw *g, const char *topic, const char *log)
{
	const char *bin = BRQ_CRASH_WORKER;
	cr_assert_eq(access(bin, X_OK), 0, "%s is not built", bin);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* fork+exec: NNG cannot be used in a forked child */
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execl(bin, "crash_worker", g->url, g->worker_token_file, topic, (char *) NULL);
		_exit(127);
	}
	return pid;
}

Test(quarantine_e2e, a_handler_that_kills_its_worker_ends_dead_with_the_reason_under_two_gateways)
{
	/* The topic of issue 26: max_attempts 2, here with max_lost_leases 2 and a short
	 * lease; both gateways reap (100 ms), the worker talks to the first. */
	static const char *const env[] = {
		"BROOQ_TOPIC_OVERRIDES=crash.loop:max_lost_leases=2,lease=1s",
		"BROOQ_REAPER_INTERVAL=100ms",
		NULL,
	};
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	for (n_gws = 0; n_gws < 2; n_gws++)
		http[n_gws] = brq_gw_start_http(&gws[n_gws], dsn, env);
	brooq_client_opts o = {.size       = sizeof(o),
			       .url        = gws[0].url,
			       .token_file = gws[0].admin_token_file,
			       .timeout_ms = 5000};
	brooq_client     *c = NULL;
	BRQ_OK(brooq_client_open(&o, &c));
	brooq_job_spec spec = {
		.size = sizeof(brooq_job_spec), .topic = "crash.loop", .payload = "{}", .max_attempts = 2};
	brooq_enqueue_result er = BROOQ_ENQUEUE_RESULT_INIT;
	BRQ_OK(brooq_enqueue(c, &spec, 1, &er));

	/* A supervisor's loop (systemd Restart=always): start a worker whenever the last
	 * one died, until the job is dead. Each worker dies on the job it claims. */
	char log[400];
	snprintf(log, sizeof(log), "%s/crash_worker.log", gws[0].dir);
	int     died = 0, last_pid = 0;
	pid_t   pid   = -1;
	int64_t until = brq_t_now_us() + 120 * 1000000LL;
	while (sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64 " AND state = 'dead'", er.id) == 0) {
		cr_assert_lt(brq_t_now_us(), until, "the job never went dead (%d workers died; see %s)", died,
			     log);
		if (pid < 0)
			pid = spawn_crash_worker(&gws[0], "crash.loop", log);
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
				  "crash_worker ended otherwise (status %d; see %s)", status, log);
			last_pid = pid;
			died++;
			pid = -1;
		}
		brq_t_sleep_ms(20);
	}
	if (pid > 0) { /* the one started after the last death waits for work that never comes */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	cr_assert_eq(died, 2, "%d workers died for a job quarantined after 2 lost leases", died);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64
			     " AND lost_leases = 2 AND attempts = 2 AND locked_by IS NULL",
			     er.id),
		     1);
	char pattern[256];
	snprintf(pattern, sizeof(pattern),
		 "SELECT count(*) FROM job WHERE id = %" PRIu64
		 " AND last_error ~ '^quarantined: 2 leases ran"
		 " out without a recorded outcome \\(max_lost_leases 2\\); last held by [^ ]+:%d, expired"
		 " \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$'",
		 er.id, last_pid);
	cr_assert_eq(brq_testdb_int(db, pattern), 1, "last_error does not name the count, holder and time");
	/* Exactly one quarantine between the two gateways' reapers. A reaper counts it
	 * just after its statement commits: wait for the count, not for a time. */
	long long q[2]   = {0, 0};
	int64_t   until2 = brq_t_now_us() + 30 * 1000000LL;
	do {
		for (int i = 0; i < 2; i++) {
			q[i] = brq_gw_metric(http[i], "brooq_quarantined_total{topic=\"crash.loop\"}");
			q[i] = q[i] < 0 ? 0 : q[i];
		}
		if (q[0] + q[1] == 0)
			brq_t_sleep_ms(20);
	} while (q[0] + q[1] == 0 && brq_t_now_us() < until2);
	cr_assert_eq(q[0] + q[1], 1, "quarantined %lld + %lld times", q[0], q[1]);

	/* The count and the reason, as the job's readers show them. */
	brooq_job_info *info = NULL;
	BRQ_OK(brooq_job_get(c, er.id, &info));
	cr_assert_eq(info->state, BROOQ_DEAD);
	cr_assert_eq(info->lost_leases, 2);
	cr_assert_eq(info->attempts, 2);
	cr_assert_not_null(info->last_error);
	cr_assert_eq(strncmp(info->last_error, "quarantined: 2 leases", 21), 0, "%s", info->last_error);
	brooq_job_info_free(info);
	brooq_client_close(c);
	char  cmd[1024], *out = NULL;
	char *modes[] = {"", " --json"};
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd), "%s --url %s --token-file %s job %" PRIu64 "%s",
			 brq_testdb_bin("brooqctl"), gws[1].url, gws[1].admin_token_file, er.id, modes[i]);
		cr_assert_eq(brq_testdb_run(cmd, &out), 0, "%s", out);
		cr_assert_not_null(strstr(out,
					  i == 0 ? "lost_leases   2\n"
						 : "\"lost_leases\":2,\"errors\":[{\"attempt\":2,"),
				   "%s", out);
		cr_assert_not_null(strstr(out, "quarantined: 2 leases ran out"), "%s", out);
		free(out);
	}
}
