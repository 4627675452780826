/* SPDX-License-Identifier: MIT */
/* A raw HTTP/1.1 client for tests of the gateway's HTTP endpoint (rawhttp.h). */
#define _GNU_SOURCE /* strcasestr */
#include "rawhttp.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tutil.h"

int
brq_http_dial(uint16_t port)
{
	int fd = brq_sock_dial_port(port, 0);
	cr_assert_geq(fd, 0, "connect to 127.0.0.1:%u: %s", port, strerror(errno));
	return fd;
}

void
brq_http_send(int fd, uint16_t port, const char *method, const char *path, const char *extra,
	      const char *body)
{
	char   buf[4096];
	size_t blen = body != NULL ? strlen(body) : 0;
	int    n    = snprintf(buf, sizeof(buf),
			       "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s%sContent-Length: %zu\r\n\r\n", method,
			       path, port, extra,
                         body != NULL ? "Content-Type: application/x-www-form-urlencoded\r\n" : "", blen);
	cr_assert_lt(n, (int) sizeof(buf), "request headers over %zu bytes", sizeof(buf));
	cr_assert_eq(brq_sock_send_all(fd, buf, (size_t) n), 1, "cannot send %s %s", method, path);
	cr_assert_eq(brq_sock_send_all(fd, body, blen), 1, "cannot send the body of %s %s", method, path);
}

void
brq_http_read(int fd, brq_http_reply *r, int timeout_ms)
{
	size_t cap = sizeof(r->head) + sizeof(r->body), got = 0;
	char  *buf = malloc(cap), *sep = NULL;
	long   cl  = -1;
	double end = brq_t_now_ms() + timeout_ms;
	cr_assert_not_null(buf);
	while (sep == NULL || got < (size_t) (sep + 4 - buf) + (size_t) cl) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		cr_assert_lt(brq_t_now_ms(), end, "no whole reply: %.*s", (int) got, buf);
		cr_assert_lt(got, cap - 1, "a reply over %zu bytes: %.200s", cap, buf);
		if (poll(&p, 1, 200) <= 0)
			continue;
		ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
		cr_assert_gt(k, 0, "connection closed before a whole reply: %.*s", (int) got, buf);
		got += (size_t) k;
		buf[got] = '\0';
		if (sep == NULL && (sep = strstr(buf, "\r\n\r\n")) != NULL) {
			const char *c = strcasestr(buf, "\r\nContent-Length:");
			cl            = c != NULL && c < sep ? atol(c + 17) : 0;
		}
	}
	size_t hl = (size_t) (sep - buf);
	cr_assert_lt(hl, sizeof(r->head));
	cr_assert_lt((size_t) cl, sizeof(r->body));
	memcpy(r->head, buf, hl);
	r->head[hl] = '\0';
	memcpy(r->body, sep + 4, (size_t) cl);
	r->body[cl] = '\0';
	r->status   = atoi(buf + 9);
	free(buf);
}

void
brq_http(uint16_t port, const char *method, const char *path, const char *extra, const char *body,
	 brq_http_reply *r)
{
	int  fd = brq_http_dial(port);
	char hdrs[1024];
	snprintf(hdrs, sizeof(hdrs), "Connection: close\r\n%s", extra);
	brq_http_send(fd, port, method, path, hdrs, body);
	brq_http_read(fd, r, 30000);
	close(fd);
}

void
brq_http_json_field(const char *body, const char *key, char *out, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	const char *p = strstr(body, pat);
	cr_assert_not_null(p, "%s not in %s", key, body);
	p += strlen(pat);
	size_t l = strcspn(p, "\"");
	cr_assert_lt(l, cap);
	memcpy(out, p, l);
	out[l] = '\0';
}

void
brq_http_sign_in(uint16_t port, const char *token, char *cookie, char *csrf, brq_http_reply *r)
{
	char            body[256], sid[64], csrf_v[64];
	brq_http_reply *mine = r == NULL ? malloc(sizeof(*mine)) : NULL;
	if (r == NULL)
		r = mine;
	cr_assert_not_null(r);
	snprintf(body, sizeof(body), "token=%s", token);
	brq_http(port, "POST", "/console/api/login", "", body, r);
	cr_assert_eq(r->status, 200, "sign-in refused: %s", r->body);
	const char *set = strstr(r->head, "Set-Cookie: brooq_session=");
	cr_assert_not_null(set, "no session cookie: %s", r->head);
	cr_assert_eq(sscanf(set, "Set-Cookie: brooq_session=%63[^;]", sid), 1);
	brq_http_json_field(r->body, "csrf", csrf_v, sizeof(csrf_v));
	snprintf(cookie, 128, "Cookie: brooq_session=%s\r\n", sid);
	snprintf(csrf, 128, "X-CSRF-Token: %s\r\n", csrf_v);
	free(mine);
}

long
brq_http_get(uint16_t port, const char *path, char *buf, size_t cap, int timeout_ms)
{
	char req[256];
	int  fd = brq_sock_dial_port(port, timeout_ms);
	if (fd < 0)
		return -1;
	int    n   = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	size_t got = 0;
	if (brq_sock_send_all(fd, req, (size_t) n) == 1)
		for (ssize_t r; got < cap - 1 && (r = recv(fd, buf + got, cap - 1 - got, 0)) > 0;)
			got += (size_t) r;
	close(fd);
	buf[got] = '\0';
	return (long) got;
}

long long
brq_http_sample(const char *exposition, const char *sample)
{
	char key[256];
	snprintf(key, sizeof(key), "\n%s ", sample);
	const char *p = strstr(exposition, key);
	return p != NULL ? strtoll(p + strlen(key), NULL, 10) : -1;
}
