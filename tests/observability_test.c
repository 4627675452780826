/* SPDX-License-Identifier: MIT */
/* HTTP endpoint and depth monitor: /metrics and /healthz over real HTTP, depth gauges from a real database,
 * and end to end: a real brooq-gateway's counters, /healthz across a PostgreSQL restart, a real Prometheus.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "config/config.h"
#include "gw.h"
#include "http.h"
#include "metrics/metrics.h"
#include "background/monitor.h"
#include "store/store.h"
#include "testdb.h"
#include "tutil.h"

static uint64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* One HTTP/1.0 request to 127.0.0.1:port. Returns the status and sets *body (malloc'd,
 * NUL-terminated, the whole response after the headers) and *head (the headers). */
static int
http_req(uint16_t port, const char *method, const char *path, char **head, char **body)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0, "connect: %s", strerror(errno));
	char req[256];
	int  n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
	cr_assert_eq(write(fd, req, (size_t) n), n);
	size_t len = 0, cap = 65536;
	char  *buf = malloc(cap);
	for (;;) {
		if (len + 4096 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		cr_assert_geq(r, 0, "read: %s", strerror(errno));
		if (r == 0) {
			break;
		}
		len += (size_t) r;
	}
	close(fd);
	buf[len]   = '\0';
	int status = 0;
	cr_assert_eq(sscanf(buf, "HTTP/1.%*d %d", &status), 1, "bad response: %.80s", buf);
	char *sep = strstr(buf, "\r\n\r\n");
	cr_assert_not_null(sep);
	*sep = '\0';
	if (body != NULL) {
		*body = strdup(sep + 4);
	}
	if (head != NULL) {
		*head = strdup(buf);
	}
	free(buf);
	return status;
}

static double
sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			return strtod(p + n + 1, NULL);
		}
		p = strchr(p, '\n');
		if (p != NULL) {
			p++;
		}
	}
	return -1;
}

static char *
render(void)
{
	char  *out;
	size_t len;
	cr_assert_eq(brq_metrics_render(&out, &len), 0);
	return out;
}

static brq_config
http_cfg(uint16_t port)
{
	brq_config cfg   = {0};
	cfg.http_enabled = true;
	cfg.http_host    = "127.0.0.1";
	cfg.http_port    = port;
	return cfg;
}

static bool
flag_health(void *arg)
{
	return *(volatile bool *) arg;
}

static void
metrics_setup(void)
{
	cr_assert_eq(brq_metrics_init("9.9.9"), 0);
}

static void
metrics_teardown(void)
{
	brq_metrics_fini();
}

TestSuite(http, .init = metrics_setup, .fini = metrics_teardown, .timeout = 60);

Test(http, serves_metrics_in_the_text_format)
{
	brq_config cfg = http_cfg(0);
	brq_http  *h   = NULL;
	cr_assert_eq(brq_http_start(&cfg, NULL, NULL, &h), 0);
	uint16_t port = brq_http_port(h);
	cr_assert_neq(port, 0);

	brq_metrics_topic_add("email.send", 10, BRQ_MT_ENQUEUED, 3);
	char *head, *body;
	cr_assert_eq(http_req(port, "GET", "/metrics", &head, &body), 200);
	cr_assert_not_null(strstr(head, "Content-Type: text/plain; version=0.0.4; charset=utf-8"), "%s",
			   head);
	cr_assert_eq(sample(body, "brooq_enqueued_total{topic=\"email.send\"}"), 3);
	cr_assert_eq(sample(body, "brooq_build_info{version=\"9.9.9\"}"), 1);
	free(head);
	free(body);

	/* HEAD: headers only. Query strings are ignored. */
	cr_assert_eq(http_req(port, "HEAD", "/metrics", NULL, &body), 200);
	cr_assert_str_eq(body, "");
	free(body);
	cr_assert_eq(http_req(port, "GET", "/metrics?x=1", NULL, NULL), 200);
	brq_http_stop(h);
}

Test(http, healthz_follows_the_health_function)
{
	volatile bool healthy = false;
	brq_config    cfg     = http_cfg(0);
	brq_http     *h       = NULL;
	cr_assert_eq(brq_http_start(&cfg, flag_health, (void *) &healthy, &h), 0);
	uint16_t port = brq_http_port(h);
	char    *body;

	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, &body), 503);
	cr_assert_str_eq(body, "database unavailable\n");
	free(body);
	healthy = true;
	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, &body), 200);
	cr_assert_str_eq(body, "ok\n");
	free(body);
	healthy = false;
	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, NULL), 503);
	brq_http_stop(h);
}

Test(http, healthz_names_every_failing_check)
{
	volatile bool        db = true, rpc = false;
	const brq_http_check checks[] = {{flag_health, (void *) &db, "database unavailable"},
					 {flag_health, (void *) &rpc, "rpc listener not answering"}};
	brq_config           cfg      = http_cfg(0);
	brq_http            *h        = NULL;
	cr_assert_eq(brq_http_start_checks(&cfg, checks, 2, &h), 0);
	uint16_t port = brq_http_port(h);
	char    *body;

	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, &body), 503);
	cr_assert_str_eq(body, "rpc listener not answering\n");
	free(body);
	db = false;
	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, &body), 503);
	cr_assert_str_eq(body, "database unavailable\nrpc listener not answering\n");
	free(body);
	db  = true;
	rpc = true;
	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, &body), 200);
	cr_assert_str_eq(body, "ok\n");
	free(body);
	brq_http_stop(h);

	/* Too many checks, or one without its line: refused, nothing started. */
	brq_http_check many[BRQ_HTTP_MAX_CHECKS + 1] = {{NULL, NULL, "x"}};
	h                                            = NULL;
	cr_assert_eq(brq_http_start_checks(&cfg, many, BRQ_HTTP_MAX_CHECKS + 1, &h), BRQ_EINVAL);
	brq_http_check unnamed = {flag_health, (void *) &db, NULL};
	cr_assert_eq(brq_http_start_checks(&cfg, &unnamed, 1, &h), BRQ_EINVAL);
	cr_assert_null(h);
}

Test(http, unknown_paths_are_404_and_other_methods_405)
{
	brq_config cfg = http_cfg(0);
	brq_http  *h   = NULL;
	cr_assert_eq(brq_http_start(&cfg, NULL, NULL, &h), 0);
	uint16_t port = brq_http_port(h);
	cr_assert_eq(http_req(port, "GET", "/", NULL, NULL), 404);
	cr_assert_eq(http_req(port, "GET", "/metricsx", NULL, NULL), 404);
	cr_assert_eq(http_req(port, "GET", "/metrics/x", NULL, NULL), 404);
	cr_assert_eq(http_req(port, "POST", "/metrics", NULL, NULL), 405);
	cr_assert_eq(http_req(port, "DELETE", "/healthz", NULL, NULL), 405);
	brq_http_stop(h);
}

Test(http, disabled_starts_nothing_and_stop_accepts_null)
{
	brq_config cfg = {0};
	brq_http  *h   = (brq_http *) &cfg; /* poison: must be overwritten */
	cr_assert_eq(brq_http_start(&cfg, NULL, NULL, &h), 0);
	cr_assert_null(h);
	cr_assert_eq(brq_http_port(h), 0);
	brq_http_stop(NULL);
}

Test(http, a_port_in_use_is_reported)
{
	int fd  = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	socklen_t sl = sizeof(sa);
	cr_assert_eq(getsockname(fd, (struct sockaddr *) &sa, &sl), 0);

	brq_config cfg = http_cfg(ntohs(sa.sin_port));
	brq_http  *h   = NULL;
	cr_assert_eq(brq_http_start(&cfg, NULL, NULL, &h), BRQ_EUNAVAIL);
	cr_assert_null(h);
	close(fd);
}

Test(http, stops_while_clients_are_connected)
{
	brq_config cfg = http_cfg(0);
	brq_http  *h   = NULL;
	cr_assert_eq(brq_http_start(&cfg, NULL, NULL, &h), 0);
	/* An idle keep-alive connection and a half-sent request must not block stop. */
	int fds[2];
	for (int i = 0; i < 2; i++) {
		fds[i]                = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(brq_http_port(h))};
		sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
		cr_assert_eq(connect(fds[i], (struct sockaddr *) &sa, sizeof(sa)), 0);
	}
	cr_assert_eq(write(fds[1], "GET /metr", 9), 9);
	usleep(50 * 1000);
	uint64_t t0 = mono_ms();
	brq_http_stop(h);
	cr_assert_lt(mono_ms() - t0, 2000);
	close(fds[0]);
	close(fds[1]);
}

/* ---- monitor (needs the harness database) ---------------------------------- */

static char   *dsn;
static PGconn *db;

static void
monitor_setup(void)
{
	metrics_setup();
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
}

static void
monitor_teardown(void)
{
	PQfinish(db);
	brq_testdb_drop(dsn);
	metrics_teardown();
}

TestSuite(monitor, .init = monitor_setup, .fini = monitor_teardown, .timeout = 120);

/* The monitor under test borrows a store built from a default configuration with
 * this DSN; stop_monitor() releases both. */
static brq_config monitor_cfg;
static brq_store *monitor_store;

static brq_monitor *
start_monitor_opts(const char *conninfo, const brq_monitor_opts *o)
{
	cr_assert_eq(brq_config_init_defaults(&monitor_cfg), 0);
	free(monitor_cfg.dsn);
	monitor_cfg.dsn = strdup(conninfo);
	cr_assert_eq(brq_store_new(&monitor_cfg, &monitor_store), 0);
	brq_monitor *m = NULL;
	cr_assert_eq(brq_monitor_start(monitor_store, o, &m), 0);
	cr_assert_not_null(m);
	return m;
}

static brq_monitor *
start_monitor(const char *conninfo, uint64_t interval_ms)
{
	brq_monitor_opts o = {.interval_ms = interval_ms, .terminal_interval_ms = interval_ms};
	return start_monitor_opts(conninfo, &o);
}

static void
stop_monitor(brq_monitor *m)
{
	brq_monitor_stop(m);
	brq_store_free(monitor_store);
	monitor_store = NULL;
	brq_config_fini(&monitor_cfg);
}

/* Waits up to timeout_ms for series to equal want; returns the last value seen. */
static double
await_sample(const char *series, double want, uint64_t timeout_ms)
{
	uint64_t end = mono_ms() + timeout_ms;
	double   v;
	for (;;) {
		char *t = render();
		v       = sample(t, series);
		free(t);
		if (v == want || mono_ms() > end) {
			return v;
		}
		usleep(20 * 1000);
	}
}

static bool
await_health(brq_monitor *m, bool want, uint64_t timeout_ms)
{
	uint64_t end = mono_ms() + timeout_ms;
	while (brq_monitor_healthy(m) != want) {
		if (mono_ms() > end) {
			return false;
		}
		usleep(20 * 1000);
	}
	return true;
}

Test(monitor, depth_gauges_follow_the_table)
{
	/* a: 2 pending ready (oldest 100 s), 1 pending in the future, 1 failed ready,
	 *    1 processing, 3 done, 1 dead. b: 1 canceled only. */
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, available_at) VALUES"
			" ('a', 'pending', now() - interval '100 seconds'),"
			" ('a', 'pending', now() - interval '5 seconds'),"
			" ('a', 'pending', now() + interval '1 hour'),"
			" ('a', 'failed', now() - interval '50 seconds')");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state, locked_by, locked_until, lease_token)"
			" VALUES ('a', 'processing', 'w1', now() + interval '1 minute', gen_random_uuid())");
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state) VALUES ('a', 'done'), ('a', 'done'), ('a', 'done'),"
			" ('a', 'dead'), ('b', 'canceled')");

	brq_monitor *m = start_monitor(dsn, 100);
	cr_assert(await_health(m, true, 5000), "monitor never reached the database");
	cr_assert_eq(await_sample("brooq_jobs{topic=\"a\",state=\"pending\"}", 3, 5000), 3);
	char *t = render();
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"failed\"}"), 1);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"processing\"}"), 1);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"done\"}"), 3);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"dead\"}"), 1);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"canceled\"}"), 0);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"b\",state=\"canceled\"}"), 1);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"b\",state=\"pending\"}"), 0);
	double age = sample(t, "brooq_ready_oldest_age_seconds{topic=\"a\"}");
	cr_assert(age >= 100 && age < 200, "age %f", age);
	cr_assert_eq(sample(t, "brooq_ready_oldest_age_seconds{topic=\"b\"}"), 0);
	cr_assert_eq(sample(t, "brooq_db_up"), 1);
	cr_assert_eq(sample(t, "brooq_jobs_estimated"), 0, "exact counts are not marked estimates");
	free(t);

	/* Work drains: a's ready rows become done; nothing ready means age 0. */
	brq_testdb_exec(db,
			"UPDATE job SET state = 'done' WHERE topic = 'a'"
			" AND state IN ('pending', 'failed') AND available_at <= now()");
	cr_assert_eq(await_sample("brooq_jobs{topic=\"a\",state=\"done\"}", 6, 5000), 6);
	cr_assert_eq(await_sample("brooq_ready_oldest_age_seconds{topic=\"a\"}", 0, 5000), 0);
	t = render();
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"pending\"}"), 1);
	cr_assert_eq(sample(t, "brooq_jobs{topic=\"a\",state=\"failed\"}"), 0);
	free(t);

	/* Rows deleted (retention): the topic reports 0, it does not keep old values. */
	brq_testdb_exec(db, "DELETE FROM job WHERE topic = 'b'");
	cr_assert_eq(await_sample("brooq_jobs{topic=\"b\",state=\"canceled\"}", 0, 5000), 0);

	uint64_t t0 = mono_ms();
	stop_monitor(m);
	cr_assert_lt(mono_ms() - t0, 1000);
}

/* The policy gauges come from topic_policy with the active count. */
Test(monitor, policy_gauges_follow_topic_policy)
{
	brq_testdb_exec(db,
			"INSERT INTO topic_policy (topic, paused, max_running, rate_per_s)"
			" VALUES ('p', true, NULL, NULL), ('l', false, 4, 25)");
	brq_monitor *m = start_monitor(dsn, 100);
	cr_assert_eq(await_sample("brooq_topic_paused{topic=\"p\"}", 1, 5000), 1);
	char *t = render();
	cr_assert_eq(sample(t, "brooq_topic_paused{topic=\"l\"}"), 0);
	cr_assert_eq(sample(t, "brooq_topic_max_running{topic=\"l\"}"), 4);
	cr_assert_eq(sample(t, "brooq_topic_rate_limit_per_second{topic=\"l\"}"), 25);
	free(t);
	brq_testdb_exec(db, "DELETE FROM topic_policy WHERE topic = 'p'");
	cr_assert_eq(await_sample("brooq_topic_paused{topic=\"p\"}", 0, 5000), 0);
	stop_monitor(m);
}

Test(monitor, terminal_counts_fall_back_to_an_estimate_when_over_budget)
{
	/* 400k terminal rows take far more than a 30 ms budget to count exactly. */
	brq_testdb_exec(db,
			"INSERT INTO job (topic, state)"
			" SELECT 'big', CASE WHEN i % 4 = 0 THEN 'dead' ELSE 'done' END"
			" FROM generate_series(1, 400000) i");
	brq_testdb_exec(db, "INSERT INTO job (topic, state) VALUES ('big', 'pending')");
	brq_testdb_exec(db, "VACUUM ANALYZE job");

	brq_figures fig;
	brq_figures_init(&fig);
	brq_monitor_opts o = {
		.interval_ms = 100, .terminal_interval_ms = 100, .budget_ms = 30, .figures = &fig};
	brq_monitor *m = start_monitor_opts(dsn, &o);

	/* The active count (1 row) is unaffected and exact. */
	cr_assert_eq(await_sample("brooq_jobs{topic=\"big\",state=\"pending\"}", 1, 10000), 1);
	/* The terminal count becomes an estimate from a page sample: same order of
	 * magnitude, never exact zero. */
	uint64_t end  = mono_ms() + 15000;
	double   done = -1, dead = -1;
	while (mono_ms() < end) {
		char *t = render();
		done    = sample(t, "brooq_jobs{topic=\"big\",state=\"done\"}");
		dead    = sample(t, "brooq_jobs{topic=\"big\",state=\"dead\"}");
		free(t);
		if (done > 0 && dead > 0) {
			break;
		}
		usleep(50 * 1000);
	}
	cr_assert(done > 300000 * 0.5 && done < 300000 * 1.5, "done estimate %f", done);
	cr_assert(dead > 100000 * 0.5 && dead < 100000 * 1.5, "dead estimate %f", dead);
	/* ... and it says so (issue 28.3): the flag is set before the estimate is published. */
	char *t = render();
	cr_assert_eq(sample(t, "brooq_jobs_estimated"), 1, "an estimate is marked as one");
	free(t);
	/* The stats reply's terminal counts (figures.h) carry the same flag. */
	brq_arena        a;
	brq_figures_row *rows;
	size_t           n;
	uint64_t         at_ms;
	bool             estimated = false;
	brq_arena_init(&a);
	cr_assert_eq(brq_figures_get(&fig, &a, &rows, &n, &at_ms, &estimated), 0);
	cr_assert(at_ms != 0 && estimated, "stats' terminal counts are marked estimated");
	brq_arena_fini(&a);
	/* Timed-out counts are answers: the database stays healthy. */
	cr_assert(brq_monitor_healthy(m));
	stop_monitor(m);
	brq_figures_fini(&fig);
}

Test(monitor, is_unhealthy_until_the_database_answers_and_stops_promptly)
{
	/* Nothing listens on this socket directory: every attempt fails at once. */
	brq_monitor *m = start_monitor("host=/nonexistent/brooq user=nobody dbname=x", 100);
	usleep(500 * 1000);
	cr_assert_not(brq_monitor_healthy(m));
	char *t = render();
	cr_assert_eq(sample(t, "brooq_db_up"), 0);
	free(t);
	uint64_t t0 = mono_ms();
	stop_monitor(m);
	cr_assert_lt(mono_ms() - t0, 1000);
}

Test(monitor, stops_promptly_while_connecting_to_a_silent_server)
{
	/* A listener that never answers: the connect hangs until our own deadline. */
	int                fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	socklen_t sl = sizeof(sa);
	cr_assert_eq(getsockname(fd, (struct sockaddr *) &sa, &sl), 0);
	char conninfo[128];
	snprintf(conninfo, sizeof(conninfo), "host=127.0.0.1 port=%u user=x dbname=x sslmode=disable",
		 ntohs(sa.sin_port));

	brq_monitor *m = start_monitor(conninfo, 100);
	usleep(300 * 1000);
	cr_assert_not(brq_monitor_healthy(m));
	uint64_t t0 = mono_ms();
	stop_monitor(m);
	cr_assert_lt(mono_ms() - t0, 1000);
	close(fd);
}

Test(monitor, health_turns_false_when_the_database_goes_away_and_back_when_it_returns)
{
	brq_monitor *m = start_monitor(dsn, 100);
	cr_assert(await_health(m, true, 5000));

	/* Forbid new connections to this database (from another one: a database cannot
	 * lock itself out) and kill the monitor's session: from here every reconnect
	 * fails, as when the server is down. */
	const char *dbname = strstr(dsn, "dbname=") + strlen("dbname=");
	char        admin_dsn[512], sql[512];
	snprintf(admin_dsn, sizeof(admin_dsn), "host=%s user=postgres dbname=postgres",
		 getenv("BROOQ_TEST_PGHOST"));
	PGconn *admin = brq_testdb_connect(admin_dsn);
	snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS false", dbname);
	brq_testdb_exec(admin, sql);
	snprintf(sql, sizeof(sql),
		 "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
		 " WHERE datname = '%s' AND application_name = 'brooq-monitor'",
		 dbname);
	free(brq_testdb_value(db, sql));

	/* The window is max(3 x 100 ms, 3 s): false within ~3 s plus a tick. */
	uint64_t t0 = mono_ms();
	cr_assert(await_health(m, false, 8000), "still healthy without a database");
	cr_assert_geq(mono_ms() - t0, 2000, "health must not flap on one failed round");
	cr_assert_eq(await_sample("brooq_db_up", 0, 2000), 0);

	snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS true", dbname);
	brq_testdb_exec(admin, sql);
	PQfinish(admin);
	/* Backoff is capped at 5 s: back within that plus a round. */
	cr_assert(await_health(m, true, 8000), "never recovered");
	cr_assert_eq(await_sample("brooq_db_up", 1, 2000), 1);
	stop_monitor(m);
}

Test(monitor, serves_healthz_through_http)
{
	brq_monitor *m   = start_monitor(dsn, 100);
	brq_config   cfg = http_cfg(0);
	brq_http    *h   = NULL;
	cr_assert_eq(brq_http_start(&cfg, brq_monitor_healthy, m, &h), 0);
	cr_assert(await_health(m, true, 5000));
	cr_assert_eq(http_req(brq_http_port(h), "GET", "/healthz", NULL, NULL), 200);
	/* Order matters: the endpoint goes first, then the monitor it asks. */
	brq_http_stop(h);
	stop_monitor(m);
}

/* ---- end to end: a real gateway ---------------------------------------------------- */

/* A loopback TCP port that was free a moment ago (bind to 0, read it, close). */

static const char *
src_dir(void)
{
	const char *s = getenv("BROOQ_SOURCE_DIR");
	cr_assert_not_null(s, "BROOQ_SOURCE_DIR is not set (run through ctest)");
	return s;
}

/* GET /metrics of the gateway; the caller frees. */
static char *
scrape(uint16_t port)
{
	char *body;
	cr_assert_eq(http_req(port, "GET", "/metrics", NULL, &body), 200);
	return body;
}

static double
await_scraped(uint16_t port, const char *series, double want, uint64_t timeout_ms)
{
	uint64_t end = mono_ms() + timeout_ms;
	double   v;
	for (;;) {
		char *t = scrape(port);
		v       = sample(t, series);
		free(t);
		if (v == want || mono_ms() > end) {
			return v;
		}
		usleep(50 * 1000);
	}
}

static int
await_healthz(uint16_t port, int want, uint64_t timeout_ms)
{
	uint64_t end = mono_ms() + timeout_ms;
	int      got;
	while ((got = http_req(port, "GET", "/healthz", NULL, NULL)) != want && mono_ms() < end) {
		usleep(100 * 1000);
	}
	return got;
}

static brq_gw    gw;
static brq_arena arena;

static void
start_gateway(char *conninfo, uint16_t http_port)
{
	static char e_http[64];
	snprintf(e_http, sizeof(e_http), "BROOQ_HTTP_LISTEN=127.0.0.1:%u", http_port);
	const char *env[] = {e_http, "BROOQ_REAPER_INTERVAL=300ms", NULL};
	brq_gw_start(&gw, conninfo, env);
	brq_arena_init(&arena);
	/* brq_gw_start returns once RPCs are answered; HTTP starts last. */
	uint64_t end = mono_ms() + 10000;
	for (;;) {
		int                fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(http_port)};
		sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
		bool is_up            = connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
		close(fd);
		if (is_up) {
			break;
		}
		cr_assert_lt(mono_ms(), end, "the gateway never listened on HTTP port %u (see %s)", http_port,
			     gw.log);
		usleep(20 * 1000);
	}
}

static void
stop_gateway(void)
{
	brq_arena_fini(&arena);
	brq_gw_stop(&gw);
}

static brq_status
gw_call(brq_request *req, brq_reply *rep)
{
	void *keep = NULL;
	if (req->token.len == 0) {
		req->token = brq_gw_worker(&gw);
	}
	brq_status st = brq_gw_call(&gw, req, rep, &arena, &keep);
	free(keep); /* the tests below read only numbers from rep */
	return st;
}

static uint64_t
gw_enqueue(const char *topic, uint32_t max_attempts)
{
	brq_job_spec j   = {.topic            = brq_str_c(topic),
			    .payload          = brq_str_c("{}"),
			    .has_max_attempts = max_attempts > 0,
			    .max_attempts     = max_attempts};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply    rep;
	cr_assert_eq(gw_call(&req, &rep), BRQ_ST_OK);
	return rep.enqueue.results[0].id;
}

/* Claims exactly one job of topic with the given lease; returns its lease. */
static brq_lease_ref
gw_claim_one(const char *topic, uint32_t lease_ms)
{
	brq_str     t   = brq_str_c(topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .claim = {.worker       = brq_str_c("obs-test"),
				     .topics       = &t,
				     .n_topics     = 1,
				     .n            = 1,
				     .has_lease_ms = lease_ms > 0,
				     .lease_ms     = lease_ms}};
	brq_reply   rep;
	cr_assert_eq(gw_call(&req, &rep), BRQ_ST_OK);
	cr_assert_eq(rep.claim.n_jobs, 1);
	brq_lease_ref l = {.id = rep.claim.jobs[0].id};
	memcpy(l.lease, rep.claim.jobs[0].lease, BRQ_LEASE_LEN);
	return l;
}

static void
gw_settle(const brq_lease_ref *l, brq_outcome oc, brq_state want)
{
	brq_settle_item it = {
		.id = l->id, .outcome = oc, .has_error = oc == BRQ_OUTCOME_FAIL, .error = brq_str_c("boom")};
	memcpy(it.lease, l->lease, BRQ_LEASE_LEN);
	brq_request req = {.op = BRQ_OP_SETTLE, .settle = {.items = &it, .n_items = 1}};
	brq_reply   rep;
	cr_assert_eq(gw_call(&req, &rep), BRQ_ST_OK);
	cr_assert(rep.settle.results[0].applied);
	cr_assert_eq(rep.settle.results[0].state, want);
}

static bool
gw_heartbeat(const brq_lease_ref *l)
{
	brq_request req = {.op        = BRQ_OP_HEARTBEAT,
			   .heartbeat = {.leases = (brq_lease_ref *) l, .n_leases = 1}};
	brq_reply   rep;
	cr_assert_eq(gw_call(&req, &rep), BRQ_ST_OK);
	cr_assert_eq(rep.heartbeat.n_extended, 1);
	return rep.heartbeat.extended[0];
}

static void
e2e_setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
}

static void
e2e_teardown(void)
{
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(e2e, .init = e2e_setup, .fini = e2e_teardown, .timeout = 180);

Test(e2e, counters_move_with_enqueue_claim_settle_cancel_reap_and_auth_failures)
{
	uint16_t port = brq_t_free_port();
	start_gateway(dsn, port);

	char *t = scrape(port);
	cr_assert_eq(sample(t, "brooq_auth_failures_total"), 0);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"enqueue\",code=\"ok\"}"), 0);
	free(t);

	/* enqueue x4, claim x4 (one lease of 1 s, left to the reaper) */
	gw_enqueue("obs.a", 0);
	gw_enqueue("obs.a", 1);
	gw_enqueue("obs.a", 0);
	brq_lease_ref done     = gw_claim_one("obs.a", 0);
	brq_lease_ref dying    = gw_claim_one("obs.a", 0);
	brq_lease_ref canceled = gw_claim_one("obs.a", 0);
	gw_settle(&done, BRQ_OUTCOME_DONE, BRQ_STATE_DONE);
	gw_settle(&dying, BRQ_OUTCOME_FAIL, BRQ_STATE_DEAD); /* max_attempts 1: dead */

	/* Admin cancel of a running job: its next heartbeat finds the lease gone. */
	brq_request creq = {.op = BRQ_OP_CANCEL, .token = brq_gw_admin(&gw), .cancel = {.id = canceled.id}};
	brq_reply   crep;
	cr_assert_eq(gw_call(&creq, &crep), BRQ_ST_OK);
	cr_assert(crep.cancel.canceled);
	cr_assert_not(gw_heartbeat(&canceled));

	gw_enqueue("obs.a", 0);
	brq_lease_ref reaped = gw_claim_one("obs.a", 1000);
	uint64_t      end    = mono_ms() + 10000;
	char          sql[128];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM job WHERE id = %llu AND state = 'pending'",
		 (unsigned long long) reaped.id);
	while (brq_testdb_int(db, sql) != 1) {
		cr_assert_lt(mono_ms(), end, "the reaper never returned the expired lease");
		usleep(100 * 1000);
	}

	/* A wrong token: unauthenticated, counted. */
	brq_request bad = {.op = BRQ_OP_PING, .token = brq_str_c("not-a-valid-token-not-a-valid-token-xx")};
	brq_reply   brep;
	cr_assert_eq(gw_call(&bad, &brep), BRQ_ST_UNAUTHENTICATED);

	t = scrape(port);
	cr_assert_eq(sample(t, "brooq_enqueued_total{topic=\"obs.a\"}"), 4);
	cr_assert_eq(sample(t, "brooq_claimed_total{topic=\"obs.a\"}"), 4);
	cr_assert_eq(sample(t, "brooq_settle_total{topic=\"obs.a\",outcome=\"done\"}"), 1);
	cr_assert_eq(sample(t, "brooq_settle_total{topic=\"obs.a\",outcome=\"fail\"}"), 1);
	cr_assert_eq(sample(t, "brooq_dead_total{topic=\"obs.a\"}"), 1);
	cr_assert_eq(sample(t, "brooq_lease_lost_total{topic=\"obs.a\"}"), 1);
	cr_assert_eq(sample(t, "brooq_reaped_total{topic=\"obs.a\"}"), 1);
	cr_assert_eq(sample(t, "brooq_auth_failures_total"), 1);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"enqueue\",code=\"ok\"}"), 4);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"claim\",code=\"ok\"}"), 4);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"settle\",code=\"ok\"}"), 2);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"cancel\",code=\"ok\"}"), 1);
	cr_assert_eq(sample(t, "brooq_rpc_requests_total{op=\"heartbeat\",code=\"ok\"}"), 1);
	cr_assert_geq(sample(t, "brooq_rpc_duration_seconds_count{op=\"claim\"}"), 4);
	cr_assert_eq(sample(t, "brooq_attempt_duration_seconds_count"), 2);
	double idle = sample(t, "brooq_db_pool_connections{state=\"idle\"}");
	double busy = sample(t, "brooq_db_pool_connections{state=\"busy\"}");
	cr_assert_eq(idle + busy, 4, "idle %f busy %f", idle, busy);
	cr_assert_eq(sample(t, "brooq_db_pool_connections{state=\"down\"}"), 0);
	cr_assert_eq(sample(t, "brooq_db_up"), 1);
	free(t);
	/* The depth gauges follow within a monitor round: the reaped job is pending. */
	cr_assert_eq(await_scraped(port, "brooq_jobs{topic=\"obs.a\",state=\"pending\"}", 1, 5000), 1);
	cr_assert_eq(await_scraped(port, "brooq_jobs{topic=\"obs.a\",state=\"processing\"}", 0, 5000), 0);
	cr_assert_eq(http_req(port, "GET", "/healthz", NULL, NULL), 200);
	stop_gateway();
}

/* Runs a shell command with tests/pg.sh sourced; fails the test unless it exits 0. */
static void
pg_sh(const char *fmt, const char *dir)
{
	char inner[1024], cmd[1400];
	snprintf(inner, sizeof(inner), fmt, dir, dir, dir);
	snprintf(cmd, sizeof(cmd), "bash -c '. \"%s/tests/pg.sh\" && %s' >&2", src_dir(), inner);
	cr_assert_eq(system(cmd), 0, "failed: %s", inner);
}

Test(e2e, healthz_is_503_while_postgresql_is_stopped_and_200_after_it_restarts)
{
	/* A private cluster: stopping the shared harness would break parallel tests. */
	char dir[] = "/tmp/brooq-obs-pg.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	pg_sh("brq_pg_start %s", dir);
	char conninfo[512], cmd[1024];
	snprintf(conninfo, sizeof(conninfo), "host=%s/sock user=postgres dbname=postgres", dir);
	snprintf(cmd, sizeof(cmd), "BROOQ_DSN='%s' '%s' migrate up --dir '%s/migrations' >&2", conninfo,
		 brq_testdb_bin("brooqctl"), src_dir());
	cr_assert_eq(system(cmd), 0, "migrate up failed");

	uint16_t port = brq_t_free_port();
	start_gateway(conninfo, port);
	cr_assert_eq(await_healthz(port, 200, 10000), 200);

	pg_sh("brq_pg_as_owner \"$(brq_pg_bindir)/pg_ctl\" -D %s/data -m fast -w stop >/dev/null", dir);
	/* Down within the health window (3 s) plus a round. */
	cr_assert_eq(await_healthz(port, 503, 10000), 503);
	cr_assert_eq(await_scraped(port, "brooq_db_up", 0, 3000), 0);

	/* restart on a stopped server starts it with its previous options. */
	pg_sh("brq_pg_as_owner \"$(brq_pg_bindir)/pg_ctl\" -D %s/data -l %s/server.log -w restart >/dev/null",
	      dir);
	/* Back within the reconnect backoff (at most 5 s) plus a round. */
	cr_assert_eq(await_healthz(port, 200, 15000), 200);
	cr_assert_eq(await_scraped(port, "brooq_db_up", 1, 3000), 1);
	stop_gateway();

	pg_sh("brq_pg_stop %s; rm -rf %s", dir);
}

Test(e2e, a_real_prometheus_scrapes_the_gateway_and_loads_the_rules)
{
	uint16_t port = brq_t_free_port();
	start_gateway(dsn, port);

	char dir[] = "/tmp/brooq-obs-prom.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[600], arg_cfg[700], arg_data[700], arg_web[64];
	snprintf(path, sizeof(path), "%s/prometheus.yml", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"rule_files:\n  - %s/deploy/prometheus/brooq-rules.yml\n"
		"scrape_configs:\n  - job_name: brooq\n    static_configs:\n"
		"      - targets: [\"127.0.0.1:%u\"]\n",
		src_dir(), port);
	fclose(f);
	uint16_t prom_port = brq_t_free_port();
	snprintf(arg_cfg, sizeof(arg_cfg), "--config.file=%s", path);
	snprintf(arg_data, sizeof(arg_data), "--storage.tsdb.path=%s/data", dir);
	snprintf(arg_web, sizeof(arg_web), "--web.listen-address=127.0.0.1:%u", prom_port);
	snprintf(path, sizeof(path), "%s/prometheus.log", dir);

	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("prometheus", "prometheus", arg_cfg, arg_data, arg_web, (char *) NULL);
		_exit(127);
	}

	/* up{job="brooq"} == 1 once Prometheus has scraped /metrics. */
	uint64_t end   = mono_ms() + 60000;
	bool     is_up = false;
	while (!is_up && mono_ms() < end) {
		usleep(250 * 1000);
		int status = 0;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = 0;
			break;
		}
		int                fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(prom_port)};
		sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
		bool is_listening     = connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
		close(fd);
		if (!is_listening) {
			continue;
		}
		char *body;
		if (http_req(prom_port, "GET", "/api/v1/query?query=up%7Bjob%3D%22brooq%22%7D", NULL,
			     &body) == 200) {
			is_up = strstr(body, "\"1\"]") != NULL;
		}
		free(body);
	}
	char cmd[700];
	if (!is_up) {
		snprintf(cmd, sizeof(cmd), "tail -n 30 %s >&2", path);
		(void) system(cmd);
	}
	cr_assert(is_up, "Prometheus never saw up == 1 for the gateway");

	char *body;
	cr_assert_eq(http_req(prom_port, "GET", "/api/v1/query?query=brooq_build_info", NULL, &body), 200);
	cr_assert_not_null(strstr(body, "\"version\""), "%s", body);
	free(body);
	cr_assert_eq(http_req(prom_port, "GET", "/api/v1/rules", NULL, &body), 200);
	cr_assert_not_null(strstr(body, "BrooqQueueStalled"), "rules not loaded: %.300s", body);
	cr_assert_not_null(strstr(body, "BrooqDatabaseUnavailable"));
	free(body);

	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void) system(cmd);
	stop_gateway();
}
