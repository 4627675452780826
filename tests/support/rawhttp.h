/* SPDX-License-Identifier: MIT */
/* A raw HTTP/1.1 client for tests of the gateway's HTTP endpoint (the console, /metrics,
 * /healthz) on 127.0.0.1, over rawsock.h: requests as the test writes them, replies read
 * by hand, and the console's sign-in. */
#ifndef BRQ_TEST_RAWHTTP_H
#define BRQ_TEST_RAWHTTP_H

#include <stddef.h>
#include <stdint.h>

#include "rawsock.h"

/* One reply, NUL-terminated parts. */
typedef struct brq_http_reply {
	int  status;
	char head[8192];    /* status line and headers, without the blank line */
	char body[1 << 16]; /* Content-Length bytes */
} brq_http_reply;

/* A connection to 127.0.0.1:port (no timeouts; the caller closes it). Fails the test
 * when it cannot connect. */
int brq_http_dial(uint16_t port);

/* Sends one request on fd: `method path HTTP/1.1`, Host, extra (header lines each
 * ending in \r\n, or ""), then body as a form (NULL: none, Content-Length 0). Fails the
 * test when it cannot be sent. */
void brq_http_send(int fd, uint16_t port, const char *method, const char *path, const char *extra,
		   const char *body);

/* Reads one reply from fd into r: the headers, then Content-Length bytes of body. Fails
 * the test when there is no whole reply within timeout_ms, the connection ends first, or
 * the reply does not fit r. */
void brq_http_read(int fd, brq_http_reply *r, int timeout_ms);

/* One request on a connection of its own (brq_http_send with Connection: close), its
 * reply into r (brq_http_read, 30 s). */
void brq_http(uint16_t port, const char *method, const char *path, const char *extra, const char *body,
	      brq_http_reply *r);

/* The value of a JSON string field "key":"..." of body into out (capacity cap). Naive:
 * the replies it reads are flat where it matters. Fails the test when it is absent. */
void brq_http_json_field(const char *body, const char *key, char *out, size_t cap);

/* Signs in to the console with token, which must succeed (200); the session's header
 * lines into cookie ("Cookie: brooq_session=...\r\n") and csrf ("X-CSRF-Token:
 * ...\r\n"), 128 bytes each. r: the sign-in's reply for the caller, or NULL. */
void brq_http_sign_in(uint16_t port, const char *token, char *cookie, char *csrf, brq_http_reply *r);

/* One HTTP/1.0 GET of path on a connection of its own, read to its end (each receive
 * waits at most timeout_ms): the raw reply, up to cap - 1 bytes and NUL-terminated, into
 * buf. The bytes read (0: none), or -1 when 127.0.0.1:port does not take the connection. */
long brq_http_get(uint16_t port, const char *path, char *buf, size_t cap, int timeout_ms);

/* The value of one sample line of a /metrics exposition (the whole sample name with its
 * labels, e.g. `x_total{topic="t"}`), or -1 when absent. */
long long brq_http_sample(const char *exposition, const char *sample);

#endif
