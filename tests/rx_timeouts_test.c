/* SPDX-License-Identifier: MIT */
/*
 * Connection timeouts (brooq issue 25, findings 2 and 8; deploy/nng/rx-timeouts.patch),
 * real brooq-gateway and PostgreSQL, peers speaking SP over ipc:// by hand as any local
 * process could:
 *
 * - stalled bodies: connections that send the length of a 4 MiB request and stop held
 *   the in-flight budget for as long as they stayed, and every request over 64 KiB was
 *   refused meanwhile. They are now closed after BROOQ_RECV_TIMEOUT and a big request
 *   sent while they stall gets its answer.
 * - the SP handshake: connections that never finish it are closed after
 *   BROOQ_HANDSHAKE_TIMEOUT, well before NNG's own 10 s.
 * - idle connections: nothing received or sent for BROOQ_IDLE_TIMEOUT (before the
 *   first request or after the last), closed; a connection in use stays.
 *
 * Each test waits for states (a connection seen closed, a reply) with generous bounds
 * for a loaded machine. The TLS handshake is tls_test's; the budget's memory bound for
 * small stalled requests is memory_test's (gcc build only).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

/* How long a peer the gateway should close may take to be seen closed: the timeouts
 * here are 1 s (10 s for idle), the bound leaves room for a loaded 2-core machine. */
#define CLOSE_BOUND_MS 30000

TestSuite(rx_timeouts, .timeout = 180);

static char  *dsn;
static brq_gw gw;

static void
start(const char *const *env)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, env);
}

static void
stop(void)
{
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

/* A connected Unix socket to the gateway, no byte sent; -1 on failure. */
static int
raw_connect(void)
{
	struct sockaddr_un a    = {.sun_family = AF_UNIX};
	const char        *path = gw.url + strlen("ipc://");
	cr_assert_lt(strlen(path), sizeof(a.sun_path));
	memcpy(a.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Writes all of p, or fails. */
static bool
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t) w;
	}
	return true;
}

/* A connection past the SP header exchange, as a REQ peer. */
static int
sp_connect(void)
{
	static const unsigned char sp_req[8] = {0x00, 'S', 'P', 0x00, 0x00, 0x30, 0x00, 0x00};
	unsigned char              peer[8];
	int                        fd = raw_connect();
	cr_assert_geq(fd, 0, "cannot connect to %s", gw.url);
	cr_assert(write_all(fd, sp_req, sizeof(sp_req)));
	cr_assert_eq(recv(fd, peer, sizeof(peer), MSG_WAITALL), (ssize_t) sizeof(peer), "no SP header");
	return fd;
}

/* The ipc frame header of a request of `len` bytes (after REQ's 4-byte request id). */
static void
frame_head(unsigned char h[13], uint64_t len, uint32_t id)
{
	uint64_t body = 4 + len;
	h[0]          = 1;
	for (int i = 0; i < 8; i++)
		h[1 + i] = (unsigned char) (body >> (56 - 8 * i));
	h[9]  = (unsigned char) (0x80 | (id >> 24));
	h[10] = (unsigned char) (id >> 16);
	h[11] = (unsigned char) (id >> 8);
	h[12] = (unsigned char) id;
}

/* Whether the gateway closed fd by `until` (brq_t_now_ms): reads and drops what comes
 * (its SP header, replies) until end of file or an error. */
static bool
closed_by(int fd, double until)
{
	char buf[4096];
	for (;;) {
		/* At least one look, even past the deadline (another descriptor used it up). */
		double        left = until - brq_t_now_ms();
		struct pollfd p    = {.fd = fd, .events = POLLIN};
		int           r    = poll(&p, 1, left > 0 ? (int) left + 1 : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && left <= 0)
			return false;
		if (r <= 0)
			continue;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}

/* How many of fds[0..n) the gateway closes within CLOSE_BOUND_MS; closes them all. */
static int
count_closed(int *fds, int n)
{
	double until  = brq_t_now_ms() + CLOSE_BOUND_MS;
	int    closed = 0;
	for (int i = 0; i < n; i++) {
		closed += closed_by(fds[i], until);
		close(fds[i]);
	}
	return closed;
}

/* Sends one request on fd (a raw SP connection): true when it is answered within 10 s. */
static bool
request_on(int fd, uint32_t id, const void *data, size_t len)
{
	unsigned char  h[13], rh[9];
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	frame_head(h, len, id);
	bool          ok = write_all(fd, h, sizeof(h)) && write_all(fd, data, len);
	struct pollfd p  = {.fd = fd, .events = POLLIN};
	if (!ok || poll(&p, 1, 10000) != 1 || recv(fd, rh, sizeof(rh), MSG_WAITALL) != (ssize_t) sizeof(rh))
		return false;
	uint64_t rl = 0;
	for (int i = 1; i < 9; i++)
		rl = rl << 8 | rh[i];
	char buf[4096];
	while (rl > 0) {
		ssize_t r = recv(fd, buf, rl < sizeof(buf) ? rl : sizeof(buf), 0);
		if (r <= 0)
			return false;
		rl -= (uint64_t) r;
	}
	return true;
}

/* One ping on fd, with the worker token: true when answered. */
static bool
ping_on(int fd, uint32_t id)
{
	brq_buf     b;
	brq_request req = {.op = BRQ_OP_PING, .token = brq_gw_worker(&gw)};
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	bool ok = request_on(fd, id, b.data, b.len);
	brq_buf_fini(&b);
	return ok;
}

/* ---- stalled bodies ------------------------------------------------------------------ */

#define STALLERS    20
#define STALL_BYTES (4 * 1024 * 1024 - 4096) /* just under the default request limit */
#define BIG_BYTES   (1024 * 1024)

/* A ping of about `size` bytes (a big unknown key): any answer shows that it got through
 * the transport and its budget. */
static void *
big_request(size_t size, size_t *len)
{
	brq_buf     b;
	brq_request req = {.op = BRQ_OP_PING, .token = brq_gw_worker(&gw)};
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	/* The encoded ping is a map: bump its size by one and add "pad": bin32. */
	unsigned char *m = malloc(b.len + 9 + size);
	cr_assert_not_null(m);
	memcpy(m, b.data, b.len);
	cr_assert((m[0] & 0xf0) == 0x80 && (m[0] & 0x0f) < 15, "the ping is not a small map");
	m[0]++;
	unsigned char *p = m + b.len;
	memcpy(p, "\xa3pad\xc6", 5);
	p += 5;
	for (int i = 3; i >= 0; i--)
		*p++ = (unsigned char) (size >> (8 * i));
	memset(p, 'x', size);
	*len = b.len + 9 + size;
	brq_buf_fini(&b);
	return m;
}

Test(rx_timeouts, stalled_bodies_are_closed_and_a_big_request_gets_through_meanwhile)
{
	static const char *env[] = {"BROOQ_RECV_TIMEOUT=1s", "BROOQ_MAX_INFLIGHT_BYTES=16MiB",
				    "BROOQ_LOG_LEVEL=warn", NULL};
	start(env);
	/* Each sends the length of a 4 MiB request and 100 bytes of it, then nothing:
	 * together more than the budget, which the first few hold. */
	int           fds[STALLERS];
	unsigned char h[13], part[100];
	memset(part, 0x80, sizeof(part));
	for (int i = 0; i < STALLERS; i++) {
		fds[i] = sp_connect();
		frame_head(h, STALL_BYTES, (uint32_t) i);
		/* Those over the budget are closed at once: a write may fail. */
		if (write_all(fds[i], h, sizeof(h)))
			(void) write_all(fds[i], part, sizeof(part));
	}
	/* A big request while they stall, sent again on a new connection whenever the budget
	 * refuses it (its connection closed), as a client retries, until the stalled ones
	 * are gone. */
	size_t len;
	void  *req   = big_request(BIG_BYTES, &len);
	bool   ok    = false;
	int    tries = 0;
	double t0    = brq_t_now_ms();
	while (!ok && brq_t_now_ms() < t0 + CLOSE_BOUND_MS) {
		int fd = sp_connect();
		ok     = request_on(fd, (uint32_t) ++tries, req, len);
		close(fd);
		if (!ok)
			brq_t_sleep_ms(50);
	}
	double took = brq_t_now_ms() - t0;
	free(req);
	int closed = count_closed(fds, STALLERS);
	fprintf(stderr,
		"rx_timeouts: %d connections stalled in %d-byte requests: %d closed; a %d-byte request "
		"answered after %.0f ms (%d tries)\n",
		STALLERS, STALL_BYTES, closed, BIG_BYTES, ok ? took : -1.0, tries);
	cr_expect(ok, "no answer to a %d-byte request within %d ms while %d connections stall", BIG_BYTES,
		  CLOSE_BOUND_MS, STALLERS);
	cr_expect_eq(closed, STALLERS, "%d of %d stalled connections still open after %d ms",
		     STALLERS - closed, STALLERS, CLOSE_BOUND_MS);
	cr_expect(brq_gw_answers(&gw, 5000), "the gateway stopped answering");
	stop();
}

/* ---- the SP handshake ---------------------------------------------------------------- */

#define HALF_OPEN 50
/* NNG's own SP negotiation timeout is 10 s: the bound must tell 1 s from it. */
#define HANDSHAKE_BOUND_MS 8000

Test(rx_timeouts, connections_that_never_finish_the_sp_handshake_are_closed)
{
	static const char *env[] = {"BROOQ_HANDSHAKE_TIMEOUT=1s", "BROOQ_LOG_LEVEL=warn", NULL};
	start(env);
	/* Half send nothing, half four of the eight header bytes. */
	static const unsigned char sp_half[4] = {0x00, 'S', 'P', 0x00};
	int                        fds[HALF_OPEN];
	for (int i = 0; i < HALF_OPEN; i++) {
		fds[i] = raw_connect();
		cr_assert_geq(fds[i], 0);
		if (i % 2 == 1)
			cr_assert(write_all(fds[i], sp_half, sizeof(sp_half)));
	}
	double until  = brq_t_now_ms() + HANDSHAKE_BOUND_MS;
	int    closed = 0;
	for (int i = 0; i < HALF_OPEN; i++) {
		closed += closed_by(fds[i], until);
		close(fds[i]);
	}
	fprintf(stderr, "rx_timeouts: %d of %d connections without an SP handshake closed\n", closed,
		HALF_OPEN);
	cr_expect_eq(closed, HALF_OPEN, "%d of %d connections without a handshake open after %d ms",
		     HALF_OPEN - closed, HALF_OPEN, HANDSHAKE_BOUND_MS);
	cr_expect(brq_gw_answers(&gw, 5000), "the gateway stopped answering");
	stop();
}

/* ---- idle connections ---------------------------------------------------------------- */

#define IDLERS 20
/* The busy connection is kept in use this long: past the 10 s idle timeout. */
#define BUSY_MS 15000

static atomic_bool busy_on;

/* A connection in use: a ping every 500 ms. Returns how many failed (the connection
 * closed under it). */
static void *
busy(void *arg)
{
	int  fd     = *(int *) arg;
	long failed = 0;
	for (uint32_t id = 1; atomic_load(&busy_on); id++) {
		if (!ping_on(fd, id)) {
			failed++;
			break;
		}
		brq_t_sleep_ms(500);
	}
	return (void *) failed;
}

Test(rx_timeouts, idle_connections_are_closed_and_busy_ones_stay)
{
	/* The shortest idle timeout there is: BROOQ_MAX_WAIT (0: no long-poll) + 10 s. */
	static const char *env[] = {"BROOQ_MAX_WAIT=0", "BROOQ_IDLE_TIMEOUT=10s", "BROOQ_LOG_LEVEL=warn",
				    NULL};
	start(env);
	/* Half never send a request, half send one and then nothing. */
	int fds[IDLERS];
	for (int i = 0; i < IDLERS; i++) {
		fds[i] = sp_connect();
		if (i % 2 == 1)
			cr_assert(ping_on(fds[i], 1), "no answer to a ping");
	}
	int       bfd = sp_connect();
	double    t0  = brq_t_now_ms();
	pthread_t t;
	atomic_store(&busy_on, true);
	cr_assert_eq(pthread_create(&t, NULL, busy, &bfd), 0);
	int closed = count_closed(fds, IDLERS);
	while (brq_t_now_ms() < t0 + BUSY_MS)
		brq_t_sleep_ms(100);
	atomic_store(&busy_on, false);
	void *failed;
	pthread_join(t, &failed);
	close(bfd);
	fprintf(stderr, "rx_timeouts: %d of %d idle connections closed; busy one %s\n", closed, IDLERS,
		failed == NULL ? "stayed" : "was closed");
	cr_expect_eq(closed, IDLERS, "%d of %d idle connections open after %d ms", IDLERS - closed, IDLERS,
		     CLOSE_BOUND_MS);
	cr_expect_null(failed, "a connection with a ping every 500 ms was closed");
	stop();
}
