/* SPDX-License-Identifier: MIT */
/*
 * Connection timeouts (brooq issue 25, findings 2 and 8; deploy/nng/rx-timeouts.patch),
 * real brooq-gateway and PostgreSQL, peers speaking SP by hand (tests/support/sp.h) as
 * any process could, each case on ipc:// and again on tcp:// (each transport has its own
 * copy of the timeouts):
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "sp.h"
#include "testdb.h"
#include "tutil.h"

/* How long a peer the gateway should close may take to be seen closed: the timeouts
 * here are 1 s (10 s for idle), the bound leaves room for a loaded 2-core machine. */
#define CLOSE_BOUND_MS 30000
/* Sends and receives of the test's own connections: a request's answer comes within. */
#define IO_MS 10000

TestSuite(rx_timeouts, .timeout = 180);

static char  *dsn;
static brq_gw gw;

/* The gateway, on tcp://127.0.0.1 or on ipc://. */
static void
start(const char *const *env, bool tcp)
{
	dsn = brq_testdb_create(true);
	brq_gw_start_on(&gw, dsn, env, tcp);
}

static void
stop(void)
{
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

/* A connection past the SP handshake, as a REQ peer. */
static int
sp_connect(void)
{
	int fd = brq_sp_connect(gw.url, IO_MS);
	cr_assert_geq(fd, 0, "cannot connect to %s or no SP header", gw.url);
	return fd;
}

/* How many of fds[0..n) the gateway closes within bound_ms; closes them all. */
static int
count_closed(int *fds, int n, int bound_ms)
{
	double until  = brq_t_now_ms() + bound_ms;
	int    closed = 0;
	for (int i = 0; i < n; i++) {
		closed += brq_sock_closed_by(fds[i], until);
		close(fds[i]);
	}
	return closed;
}

/* Sends one request on fd (a raw SP connection): true when it is answered within IO_MS. */
static bool
request_on(int fd, uint32_t id, const void *msg, size_t len)
{
	size_t rl;
	return brq_sp_send(fd, id, msg, len) == 1 && brq_sp_recv_reply(fd, NULL, 0, &rl) == 1;
}

/* One ping on fd, with the worker token: true when answered within IO_MS. */
static bool
ping_on(int fd, uint32_t id)
{
	size_t      rl;
	brq_request req = {.op = BRQ_OP_PING, .token = brq_gw_worker(&gw)};
	return brq_sp_send_request(fd, id, &req) == 1 && brq_sp_recv_reply(fd, NULL, 0, &rl) == 1;
}

/* ---- stalled bodies ------------------------------------------------------------------ */

#define STALLERS    20
#define STALL_BYTES (4 * 1024 * 1024 - 4096) /* just under the default request limit */
#define BIG_BYTES   (1024 * 1024)

/* Stalled in big requests, STALLERS connections; meanwhile a big request must still be
 * answered. */
static void
stalled_bodies(bool tcp)
{
	static const char *env[] = {"BROOQ_RECV_TIMEOUT=1s", "BROOQ_MAX_INFLIGHT_BYTES=16MiB",
				    "BROOQ_LOG_LEVEL=warn", NULL};
	start(env, tcp);
	/* Each sends the length of a 4 MiB request and 100 bytes of it, then nothing:
	 * together more than the budget, which the first few hold. */
	int           fds[STALLERS];
	unsigned char part[100];
	memset(part, 0x80, sizeof(part));
	for (int i = 0; i < STALLERS; i++) {
		fds[i] = sp_connect();
		/* Those over the budget are closed at once: a write may fail. */
		if (brq_sp_send_head(fds[i], (uint32_t) i, STALL_BYTES) == 1)
			(void) brq_sock_send_all(fds[i], part, sizeof(part));
	}
	/* A big request while they stall, sent again on a new connection whenever the budget
	 * refuses it (its connection closed), as a client retries, until the stalled ones
	 * are gone. A ping with a big unknown key: any answer shows that it got through the
	 * transport and its budget. */
	size_t      len;
	brq_request ping  = {.op = BRQ_OP_PING, .token = brq_gw_worker(&gw)};
	void       *req   = brq_sp_request(&ping, BIG_BYTES, &len);
	bool        ok    = false;
	int         tries = 0;
	double      t0    = brq_t_now_ms();
	cr_assert_not_null(req, "the ping does not encode as a small map");
	while (!ok && brq_t_now_ms() < t0 + CLOSE_BOUND_MS) {
		int fd = sp_connect();
		ok     = request_on(fd, (uint32_t) ++tries, req, len);
		close(fd);
		if (!ok)
			brq_t_sleep_ms(50);
	}
	double took = brq_t_now_ms() - t0;
	free(req);
	int closed = count_closed(fds, STALLERS, CLOSE_BOUND_MS);
	fprintf(stderr,
		"rx_timeouts %s: %d connections stalled in %d-byte requests: %d closed; a %d-byte "
		"request answered after %.0f ms (%d tries)\n",
		gw.url, STALLERS, STALL_BYTES, closed, BIG_BYTES, ok ? took : -1.0, tries);
	cr_expect(ok, "no answer to a %d-byte request within %d ms while %d connections stall", BIG_BYTES,
		  CLOSE_BOUND_MS, STALLERS);
	cr_expect_eq(closed, STALLERS, "%d of %d stalled connections still open after %d ms",
		     STALLERS - closed, STALLERS, CLOSE_BOUND_MS);
	cr_expect(brq_gw_answers(&gw, 5000), "the gateway stopped answering");
	stop();
}

Test(rx_timeouts, stalled_bodies_are_closed_and_a_big_request_gets_through_meanwhile)
{
	stalled_bodies(false);
}

Test(rx_timeouts, on_tcp_stalled_bodies_are_closed_and_a_big_request_gets_through_meanwhile)
{
	stalled_bodies(true);
}

/* ---- the SP handshake ---------------------------------------------------------------- */

#define HALF_OPEN 50
/* NNG's own SP negotiation timeout is 10 s: the bound must tell 1 s from it. */
#define HANDSHAKE_BOUND_MS 8000

/* HALF_OPEN connections that never finish the SP handshake must be closed. */
static void
half_open(bool tcp)
{
	static const char *env[] = {"BROOQ_HANDSHAKE_TIMEOUT=1s", "BROOQ_LOG_LEVEL=warn", NULL};
	start(env, tcp);
	/* Half send nothing, half four of the eight header bytes. */
	static const unsigned char sp_half[4] = {0x00, 'S', 'P', 0x00};
	int                        fds[HALF_OPEN];
	for (int i = 0; i < HALF_OPEN; i++) {
		fds[i] = brq_sock_dial(gw.url, IO_MS);
		cr_assert_geq(fds[i], 0, "cannot connect to %s", gw.url);
		if (i % 2 == 1)
			cr_assert_eq(brq_sock_send_all(fds[i], sp_half, sizeof(sp_half)), 1);
	}
	int closed = count_closed(fds, HALF_OPEN, HANDSHAKE_BOUND_MS);
	fprintf(stderr, "rx_timeouts %s: %d of %d connections without an SP handshake closed\n", gw.url,
		closed, HALF_OPEN);
	cr_expect_eq(closed, HALF_OPEN, "%d of %d connections without a handshake open after %d ms",
		     HALF_OPEN - closed, HALF_OPEN, HANDSHAKE_BOUND_MS);
	cr_expect(brq_gw_answers(&gw, 5000), "the gateway stopped answering");
	stop();
}

Test(rx_timeouts, connections_that_never_finish_the_sp_handshake_are_closed)
{
	half_open(false);
}

Test(rx_timeouts, on_tcp_connections_that_never_finish_the_sp_handshake_are_closed)
{
	half_open(true);
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

/* IDLERS idle connections must be closed, a busy one must stay. */
static void
idlers(bool tcp)
{
	/* The shortest idle timeout there is: BROOQ_MAX_WAIT (0: no long-poll) + 10 s. */
	static const char *env[] = {"BROOQ_MAX_WAIT=0", "BROOQ_IDLE_TIMEOUT=10s", "BROOQ_LOG_LEVEL=warn",
				    NULL};
	start(env, tcp);
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
	int closed = count_closed(fds, IDLERS, CLOSE_BOUND_MS);
	while (brq_t_now_ms() < t0 + BUSY_MS)
		brq_t_sleep_ms(100);
	atomic_store(&busy_on, false);
	void *failed;
	pthread_join(t, &failed);
	close(bfd);
	fprintf(stderr, "rx_timeouts %s: %d of %d idle connections closed; busy one %s\n", gw.url, closed,
		IDLERS, failed == NULL ? "stayed" : "was closed");
	cr_expect_eq(closed, IDLERS, "%d of %d idle connections open after %d ms", IDLERS - closed, IDLERS,
		     CLOSE_BOUND_MS);
	cr_expect_null(failed, "a connection with a ping every 500 ms was closed");
	stop();
}

Test(rx_timeouts, idle_connections_are_closed_and_busy_ones_stay)
{
	idlers(false);
}

Test(rx_timeouts, on_tcp_idle_connections_are_closed_and_busy_ones_stay)
{
	idlers(true);
}
