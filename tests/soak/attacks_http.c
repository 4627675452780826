/* SPDX-License-Identifier: MIT */
/* The soak's attacks on the HTTP endpoint (the console on loopback): connections that
 * announce big bodies and hold them, with and without a session; connections that send
 * nothing; failed sign-ins. Raw sockets, bounded loops, counts only (the report says what
 * happened; docs/security.md "HTTP limits" says what should). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rawhttp.h"
#include "soak.h"
#include "tutil.h"

#define MAX_CONNS     100000 /* per thread: a bound on the reconnect loops */
#define BODY_ANNOUNCE 3000000
#define BODY_SEND     2900000
#define CHUNK         65536

/* A connection to the HTTP endpoint; sends and receives time out after 1 s. -1 on
 * failure. */
static int
dial(void)
{
	return brq_sock_dial_port(soak.http_port, 1000);
}

/* The status of the reply waiting on fd, if one comes within timeout_ms (0: none, -1:
 * the connection ended first). Reads only the status line's first bytes. */
static int
reply_status(int fd, int timeout_ms)
{
	char          buf[16];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	ssize_t r = recv(fd, buf, sizeof(buf) - 1, MSG_WAITALL);
	if (r < 12)
		return -1;
	buf[r] = '\0';
	return strncmp(buf, "HTTP/1.", 7) == 0 ? atoi(buf + 9) : -1;
}

/* Counts a reply: refusals are 4xx and 5xx. */
static void
count_status(soak_attack *a, int st)
{
	if (st >= 400)
		atomic_fetch_add(&a->t.refused, 1);
	else if (st >= 200)
		atomic_fetch_add(&a->t.answered, 1);
	else if (st < 0)
		atomic_fetch_add(&a->t.other, 1);
}

/* Announces a big body (with the session's headers or none), sends most of it and holds
 * the connection; true when the gateway ended it. */
static bool
hold_body(soak_attack *a, int fd, const char *junk)
{
	char head[1024];
	int  hl = snprintf(head, sizeof(head),
			   "POST /console/api/enqueue HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%sContent-Type: "
			    "application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n",
			   soak.http_port, a->kind == 1 ? soak.session : "", BODY_ANNOUNCE);
	int  rv = brq_sock_send_all(fd, head, (size_t) hl);
	if (rv == 1)
		atomic_fetch_add(&a->t.sent, 1);
	for (size_t sent = 0; rv == 1 && sent < BODY_SEND && soak_running(); sent += CHUNK)
		rv = brq_sock_send_all(fd, junk, CHUNK);
	int st = reply_status(fd, rv == 1 ? 100 : 1000);
	count_status(a, st);
	return rv < 0 || st != 0 || soak_await_close(fd);
}

/* One failed sign-in on a connection of its own: 401, or 429 once throttled. */
static void
guess(soak_attack *a)
{
	static const char body[] = "token=0123456789abcdef0123456789abcdef0123";
	char              req[512];
	int               fd = dial();
	if (fd < 0) {
		atomic_fetch_add(&a->t.other, 1);
		return;
	}
	atomic_fetch_add(&a->t.conns, 1);
	int n = snprintf(req, sizeof(req),
			 "POST /console/api/login HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n"
			 "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %zu\r\n\r\n%s",
			 soak.http_port, sizeof(body) - 1, body);
	if (brq_sock_send_all(fd, req, (size_t) n) == 1) {
		atomic_fetch_add(&a->t.sent, 1);
		int st = reply_status(fd, 5000);
		if (st == 401)
			atomic_fetch_add(&a->t.answered, 1);
		else
			count_status(a, st);
	}
	atomic_fetch_add(&a->t.closed, 1); /* Connection: close, by design */
	close(fd);
}

void *
soak_http(void *arg)
{
	soak_attack *a    = arg;
	char        *junk = calloc(1, CHUNK);
	for (int c = 0; junk != NULL && c < MAX_CONNS && soak_running(); c++) {
		if (a->kind == 3) {
			guess(a);
			brq_t_sleep_ms(20);
			continue;
		}
		int fd = dial();
		if (fd < 0) {
			atomic_fetch_add(&a->t.other, 1);
			brq_t_sleep_ms(100);
			continue;
		}
		atomic_fetch_add(&a->t.conns, 1);
		bool by_gateway = a->kind == 2 ? soak_await_close(fd) : hold_body(a, fd, junk);
		atomic_fetch_add(by_gateway ? &a->t.closed : &a->t.open_end, 1);
		close(fd);
		brq_t_sleep_ms(100);
	}
	free(junk);
	return NULL;
}

void
soak_http_sign_in(void)
{
	char cookie[128], csrf[128];
	brq_http_sign_in(soak.http_port, soak.gw.admin_token, cookie, csrf, NULL);
	snprintf(soak.session, sizeof(soak.session), "%s%s", cookie, csrf);
}

long long
soak_metric(const char *sample)
{
	static char buf[1 << 18];
	if (brq_http_get(soak.http_port, "/metrics", buf, sizeof(buf), 5000) <= 0)
		return -1;
	return brq_http_sample(buf, sample);
}

bool
soak_http_answers(void)
{
	char buf[4096];
	return brq_http_get(soak.http_port, "/healthz", buf, sizeof(buf), 5000) > 12 &&
		strncmp(buf + 9, "200", 3) == 0;
}
