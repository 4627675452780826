/* SPDX-License-Identifier: MIT */
/* The HTTP endpoint's isolation (issue 25, SPEC invariant 19), against a real gateway and
 * PostgreSQL: a peer without a session makes the gateway hold no body and a session at most
 * the body budget; idle, half-open and header-flooding connections are closed; connections
 * beyond the cap are closed while open ones keep working; failed sign-ins are throttled per
 * peer with rate-limited log lines naming it; read-only sessions can neither evict admin
 * sessions nor take all the console's request slots. Every wait is for a state, with a
 * generous deadline; no assertion depends on how fast the machine is. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "rawhttp.h"
#include "testdb.h"
#include "tutil.h"

#define DEADLINE_MS 30000

#if defined(__SANITIZE_ADDRESS__)
#define IS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IS_ASAN 1
#endif
#endif
#ifndef IS_ASAN
#define IS_ASAN 0
#endif

typedef struct hgw {
	brq_gw   gw;
	char    *dsn;
	uint16_t port;
	char     cookie[128]; /* "Cookie: brooq_session=...\r\n" */
	char     csrf_h[128]; /* "X-CSRF-Token: ...\r\n" */
} hgw;

static void
hgw_start(hgw *c, const char *const *more)
{
	const char *env[12] = {NULL};
	int         n       = 0;
	c->dsn              = brq_testdb_create(true);
	env[n++]            = "BROOQ_POLL_INTERVAL=100ms";
	for (int i = 0; more != NULL && more[i] != NULL && n < 11; i++)
		env[n++] = more[i];
	c->port = brq_gw_start_http(&c->gw, c->dsn, env);
	brq_gw_await_log(&c->gw, "msg=console_ready", 1, DEADLINE_MS);
	brq_http_sign_in(c->port, c->gw.admin_token, c->cookie, c->csrf_h, NULL);
}

static void
hgw_stop(hgw *c)
{
	brq_gw_stop(&c->gw);
	brq_testdb_drop(c->dsn);
}

/* /healthz says healthy (once the monitor has seen the database) and the admin's session
 * answers. */
static void
assert_service(hgw *c)
{
	brq_http_reply r;
	for (uint64_t end = brq_t_now_ms() + DEADLINE_MS;; brq_t_sleep_ms(50)) {
		brq_http(c->port, "GET", "/healthz", "", NULL, &r);
		if (r.status == 200)
			break;
		cr_assert_lt(brq_t_now_ms(), end, "/healthz: %d %s", r.status, r.body);
	}
	brq_http(c->port, "GET", "/console/api/session", c->cookie, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
}

/* Opens n connections that each send a POST's headers announcing `announced` body bytes
 * with `extra` headers, then `sent` bytes of it, and keep the connection. */
static void
hold_bodies(hgw *c, int *fds, int n, const char *path, const char *extra, size_t announced, size_t sent)
{
	char *junk = malloc(sent);
	cr_assert_not_null(junk);
	memset(junk, 'a', sent);
	for (int i = 0; i < n; i++) {
		char head[1024];
		int  hl           = snprintf(head, sizeof(head),
					     "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%sContent-Type: "
							"application/x-www-form-urlencoded\r\nContent-Length: %zu\r\n\r\n",
					     path, c->port, extra, announced);
		fds[i]            = brq_http_dial(c->port);
		struct timeval tv = {.tv_sec = 5};
		setsockopt(fds[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (brq_sock_send_all(fds[i], head, (size_t) hl) == 1)
			(void) brq_sock_send_all(fds[i], junk, sent); /* refused bodies end in EPIPE */
	}
	free(junk);
}

Test(http_limits, bodies_are_read_only_for_sessions_and_within_the_budget, .timeout = 240)
{
	hgw         c;
	const char *env[] = {"BROOQ_HTTP_MAX_CONNECTIONS=400", NULL};
	hgw_start(&c, env);
	assert_service(&c);
	long rss0 = brq_t_proc_kib(c.gw.pid, "VmRSS");

	/* 100 peers without a session announce 3 MB enqueue bodies and send nearly all:
	 * 300 MB if read. */
	enum { N = 100 };
	int fds[N], sfds[N];
	hold_bodies(&c, fds, N, "/console/api/enqueue", "", 3000000, 2900000);
	long rss1 = brq_t_proc_kib(c.gw.pid, "VmRSS");
	assert_service(&c);

	/* The admin's session too, from 100 connections: the budget (4 of the largest
	 * bodies, ~12 MiB) bounds what they hold; the rest are refused. */
	char hdrs[300];
	snprintf(hdrs, sizeof(hdrs), "%s%s", c.cookie, c.csrf_h);
	hold_bodies(&c, sfds, N, "/console/api/enqueue", hdrs, 3000000, 2900000);
	long rss2 = brq_t_proc_kib(c.gw.pid, "VmRSS");
	assert_service(&c);
	if (!IS_ASAN) { /* the sanitizer's allocator changes RSS */
		cr_assert_lt(rss1 - rss0, 48 * 1024, "unauthenticated bodies: RSS %ld -> %ld KiB", rss0,
			     rss1);
		cr_assert_lt(rss2 - rss0, 64 * 1024, "session bodies: RSS %ld -> %ld KiB", rss0, rss2);
	}
	for (int i = 0; i < N; i++) {
		close(fds[i]);
		close(sfds[i]);
	}
	hgw_stop(&c);
}

Test(http_limits, idle_half_open_and_flooding_connections_are_closed, .timeout = 240)
{
	hgw         c;
	const char *env[] = {"BROOQ_HTTP_HEADER_TIMEOUT=1s", "BROOQ_HTTP_IDLE_TIMEOUT=2s", NULL};
	hgw_start(&c, env);
	assert_service(&c);
	uint64_t t0   = brq_t_now_ms();
	int      idle = brq_http_dial(c.port);
	int      half = brq_http_dial(c.port);
	cr_assert_eq(brq_sock_send_all(half, "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32), 1);
	/* Answered once, then silent: the idle timeout. */
	int            kept = brq_http_dial(c.port);
	brq_http_reply r;
	brq_http_send(kept, c.port, "GET", "/healthz", "", NULL);
	brq_http_read(kept, &r, DEADLINE_MS);
	cr_assert_eq(r.status, 200);
	uint64_t t_kept = brq_t_now_ms();
	/* Headers without end, as fast as the gateway reads: the header cap. */
	int    flood = brq_http_dial(c.port);
	char   line[64];
	size_t sent = 0;
	snprintf(line, sizeof(line), "GET /healthz HTTP/1.1\r\nHost: x\r\n");
	struct timeval tv = {.tv_sec = 5};
	setsockopt(flood, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	bool open = brq_sock_send_all(flood, line, strlen(line)) == 1;
	while (open && sent < (64u << 20)) {
		open = brq_sock_send_all(flood,
					 "X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
					 59) == 1;
		sent += 59;
	}
	cr_assert_lt(sent, 64u << 20, "64 MiB of headers accepted");
	cr_assert(brq_sock_closed_by(flood, brq_t_now_ms() + DEADLINE_MS), "a header flood is closed");

	cr_assert(brq_sock_closed_by(idle, brq_t_now_ms() + DEADLINE_MS), "a silent connection is closed");
	cr_assert_geq(brq_t_now_ms() - t0, 900, "not before the header timeout");
	cr_assert(brq_sock_closed_by(half, brq_t_now_ms() + DEADLINE_MS), "a half-sent request is closed");
	cr_assert(brq_sock_closed_by(kept, brq_t_now_ms() + DEADLINE_MS),
		  "an idle kept-alive connection is closed");
	cr_assert_geq(brq_t_now_ms() - t_kept, 1900, "not before the idle timeout");
	close(idle);
	close(half);
	close(kept);
	close(flood);
	assert_service(&c);
	hgw_stop(&c);
}

Test(http_limits, connections_beyond_the_cap_are_closed_and_open_ones_keep_working, .timeout = 240)
{
	hgw         c;
	const char *env[] = {"BROOQ_HTTP_MAX_CONNECTIONS=8", "BROOQ_HTTP_HEADER_TIMEOUT=10m",
			     "BROOQ_HTTP_IDLE_TIMEOUT=1h", NULL};
	hgw_start(&c, env);
	/* The admin's connection, kept alive. */
	int            admin = brq_http_dial(c.port);
	brq_http_reply r;
	brq_http_send(admin, c.port, "GET", "/console/api/session", c.cookie, NULL);
	brq_http_read(admin, &r, DEADLINE_MS);
	cr_assert_eq(r.status, 200);

	/* 20 silent connections: with a header timeout of 10 minutes, only the cap can
	 * close any of them; at least 13 (20 - 7 free places) are closed at once. */
	enum { N = 20 };
	int  fds[N], n_closed = 0;
	bool is_closed[N] = {false};
	for (int i = 0; i < N; i++)
		fds[i] = brq_http_dial(c.port);
	for (uint64_t end = brq_t_now_ms() + DEADLINE_MS; n_closed < N - 7;) {
		cr_assert_lt(brq_t_now_ms(), end, "connections beyond the cap: %d of %d closed", n_closed, N);
		for (int i = 0; i < N; i++) {
			if (!is_closed[i] && brq_sock_closed_by(fds[i], brq_t_now_ms() + 1)) {
				is_closed[i] = true;
				n_closed++;
			}
		}
	}

	/* The admin keeps working on the open connection. */
	brq_http_send(admin, c.port, "GET", "/console/api/session", c.cookie, NULL);
	brq_http_read(admin, &r, DEADLINE_MS);
	cr_assert_eq(r.status, 200, "%s", r.body);
	/* Closing the silent ones frees their places: new connections work again. */
	for (int i = 0; i < N; i++)
		close(fds[i]);
	close(admin);
	uint64_t end = brq_t_now_ms() + DEADLINE_MS;
	for (;;) {
		int           fd  = brq_http_dial(c.port);
		const char   *get = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
		struct pollfd p   = {.fd = fd, .events = POLLIN};
		char          b[16];
		bool          ok = brq_sock_send_all(fd, get, strlen(get)) == 1 && poll(&p, 1, 5000) == 1 &&
			recv(fd, b, sizeof(b), MSG_PEEK) > 0;
		close(fd);
		if (ok)
			break;
		cr_assert_lt(brq_t_now_ms(), end, "the endpoint never took a new connection again");
		brq_t_sleep_ms(50);
	}
	hgw_stop(&c);
}

Test(http_limits, failed_sign_ins_are_throttled_per_peer_and_logged_with_it, .timeout = 240)
{
	hgw c;
	hgw_start(&c, NULL);
	enum { N = 40 };
	int            n401 = 0, n429 = 0;
	uint64_t       t0 = brq_t_now_ms();
	brq_http_reply r;
	for (int i = 0; i < N; i++) {
		brq_http(c.port, "POST", "/console/api/login", "",
			 "token=0123456789abcdef0123456789abcdef0123", &r);
		if (r.status == 429) {
			n429++;
			cr_assert_not_null(strstr(r.head, "Retry-After: "), "%s", r.head);
		} else {
			cr_assert_eq(r.status, 401, "%s", r.body);
			n401++;
		}
	}
	uint64_t elapsed = brq_t_now_ms() - t0;
	/* 10 at once, then one per 6 s. */
	cr_assert_leq((uint64_t) n401, 10 + elapsed / 6000 + 1, "%d failures let through in %llu ms", n401,
		      (unsigned long long) elapsed);
	cr_assert_geq(n429, 1);
	/* The log: a few lines per 10 s window, each naming the peer. */
	const char *log = brq_gw_log(&c.gw);
	int         nf  = brq_gw_count(log, "msg=console_sign_in_failed");
	int         nt  = brq_gw_count(log, "msg=console_sign_in_throttled");
	cr_assert_geq(nf, 1);
	cr_assert_leq((uint64_t) nf, 5 * (elapsed / 10000 + 2), "%d failure lines", nf);
	cr_assert_leq((uint64_t) nt, 5 * (elapsed / 10000 + 2), "%d throttle lines", nt);
	const char *line = strstr(log, "msg=console_sign_in_failed");
	cr_assert_not_null(strstr(line, "peer=127.0.0.1:"), "the peer is named: %.200s", line);
	/* The admin's session keeps working, and signing in works again once the
	 * address's bucket refills. */
	assert_service(&c);
	char     body[128];
	uint64_t end = brq_t_now_ms() + 60000;
	snprintf(body, sizeof(body), "token=%s", c.gw.admin_token);
	for (;;) {
		brq_http(c.port, "POST", "/console/api/login", "", body, &r);
		if (r.status == 200)
			break;
		cr_assert_eq(r.status, 429, "%s", r.body);
		cr_assert_lt(brq_t_now_ms(), end, "signing in never worked again");
		brq_t_sleep_ms(200);
	}
	hgw_stop(&c);
}

Test(http_limits, worker_sign_ins_never_end_admin_sessions, .timeout = 240)
{
	hgw c;
	hgw_start(&c, NULL);
	char cookie[128], csrf[128];
	for (int i = 0; i < 70; i++)
		brq_http_sign_in(c.port, c.gw.worker_token, cookie, csrf, NULL);
	assert_service(&c);
	/* The read-only sessions are bounded among themselves: the oldest ended. */
	brq_gw_await_log(&c.gw, "msg=console_session_evicted", 1, DEADLINE_MS);
	hgw_stop(&c);
}

Test(http_limits, slow_read_only_requests_leave_admin_requests_their_slots, .timeout = 240)
{
	hgw c;
	hgw_start(&c, NULL);
	char wcookie[128], wcsrf[128];
	brq_http_sign_in(c.port, c.gw.worker_token, wcookie, wcsrf, NULL);
	/* Every list waits on a lock the test holds. */
	PGconn *pg = brq_testdb_connect(c.dsn);
	brq_testdb_exec(pg, "BEGIN");
	brq_testdb_exec(pg, "LOCK TABLE job IN ACCESS EXCLUSIVE MODE");
	enum { N = 40 };
	int fds[N], n503 = 0;
	for (int i = 0; i < N; i++) {
		fds[i] = brq_http_dial(c.port);
		brq_http_send(fds[i], c.port, "GET", "/console/api/jobs", wcookie, NULL);
	}
	/* 24 are refused at once (the read-only sessions' 16 slots are taken); wait for them. */
	bool done[N] = {false};
	for (uint64_t end = brq_t_now_ms() + DEADLINE_MS; n503 < N - 16;) {
		cr_assert_lt(brq_t_now_ms(), end, "only %d refusals", n503);
		for (int i = 0; i < N; i++) {
			struct pollfd p = {.fd = fds[i], .events = POLLIN};
			if (done[i] || poll(&p, 1, 0) != 1)
				continue;
			brq_http_reply r;
			brq_http_read(fds[i], &r, DEADLINE_MS);
			cr_assert_eq(r.status, 503, "%s", r.body);
			done[i] = true;
			n503++;
		}
		brq_t_sleep_ms(20);
	}
	/* The admin's read still gets a slot: it waits for the lock, not 503. */
	int            admin = brq_http_dial(c.port);
	brq_http_reply r;
	brq_http_send(admin, c.port, "GET", "/console/api/jobs", c.cookie, NULL);
	brq_testdb_exec(pg, "COMMIT");
	brq_http_read(admin, &r, DEADLINE_MS);
	cr_assert_eq(r.status, 200, "%s", r.body);
	close(admin);
	for (int i = 0; i < N; i++) {
		if (!done[i]) {
			brq_http_read(fds[i], &r, DEADLINE_MS);
			cr_assert_eq(r.status, 200, "%s", r.body);
		}
		close(fds[i]);
	}
	PQfinish(pg);
	hgw_stop(&c);
}
