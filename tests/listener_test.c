/* SPDX-License-Identifier: MIT */
/*
 * The RPC listener against peers that connect and go away without the SP handshake
 * (a port scanner, `nc -U`, a health check): NNG issue #1518, where one such
 * connect+close wedged Debian 12's NNG 1.5.2 forever (issue 10, item 1). brooq links
 * its own NNG with the fix (deploy/nng); this is the regression test, on ipc:// and
 * on tcp://, with the real gateway.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "rawsock.h"
#include "tutil.h"
#include "testdb.h"

#define FLOOD 1000
/* A ping answers in a few ms; the bound leaves room for a loaded CI machine and the
 * sanitizer build. A wedged listener never answers at all. */
#define PING_BOUND_MS 2000
/* The gateway's descriptors may grow by a few (NNG's pollers, a pipe being
 * reaped), never by one per flooded connection. */
#define FD_SLACK 24
/* How long the listener has to come back after the flood (it is wedged for good
 * without the fix: a bound of seconds tells the two apart on a loaded machine). */
#define RECOVER_MS 10000

static int
fd_count(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
	DIR *d = opendir(path);
	cr_assert_not_null(d, "cannot read %s", path);
	int            n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* One ping with its own REQ socket; returns the time to the reply in ms, or -1
 * when none came within PING_BOUND_MS. */
static double
ping_ms(const brq_gw *gw)
{
	brq_buf     b;
	brq_request req = {.op = BRQ_OP_PING, .token = brq_gw_worker(gw)};
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	size_t rl    = 0;
	double start = brq_t_now_ms();
	void  *rep   = brq_gw_raw(gw, b.data, b.len, &rl, PING_BOUND_MS);
	double took  = brq_t_now_ms() - start;
	brq_buf_fini(&b);
	free(rep);
	return rep != NULL ? took : -1;
}

/* A connected stream socket to the gateway's listen URL (ipc:// or tcp://IPv4), or
 * -1. Bounded: a listener that stops accepting fills its backlog, and connect()
 * then waits at most 8 s. A fast flood fills the TCP accept queue for a moment even
 * when all is well (the kernel drops the SYN; it is resent after 1, 3 and 7 s), so
 * the bound leaves time for three resends. */
static int
raw_connect(const char *url)
{
	return brq_sock_dial(url, 8000);
}

/* FLOOD raw connect+close cycles, no byte sent or read; then the gateway must
 * answer a ping within PING_BOUND_MS and hold no descriptor per cycle. */
static void
flood_then_ping(const char *listen_env)
{
	char                    *dsn = brq_testdb_create(true);
	brq_gw                   gw;
	const char *const        env[] = {listen_env, NULL};
	const char *const *const extra = listen_env != NULL ? env : NULL;
	brq_gw_start(&gw, dsn, extra);

	double base = ping_ms(&gw);
	cr_assert_geq(base, 0, "no ping before the flood");
	int fds_before = fd_count(gw.pid);

	int    failed = 0;
	double start  = brq_t_now_ms();
	for (int i = 0; i < FLOOD; i++) {
		int fd = raw_connect(gw.url);
		if (fd >= 0)
			close(fd);
		else if (++failed == 3)
			break; /* not accepting: no need to wait 8 s a thousand times */
	}
	double flood_ms = brq_t_now_ms() - start;

	/* A wedged listener never answers again; a loaded machine (the suite runs
	 * tests side by side on 2 cores) may answer late: try for RECOVER_MS. Closed
	 * connections are reaped by NNG's reaper thread: give it the same time. */
	double after = -1, t0 = brq_t_now_ms();
	while (after < 0 && brq_t_now_ms() - t0 < RECOVER_MS)
		after = ping_ms(&gw);
	if (after >= 0)
		after = brq_t_now_ms() - t0;
	int fds_after = fd_count(gw.pid);
	while (fds_after > fds_before + FD_SLACK && brq_t_now_ms() - t0 < RECOVER_MS) {
		usleep(50 * 1000);
		fds_after = fd_count(gw.pid);
	}
	fprintf(stderr,
		"listener %s: %d raw connect+close in %.0f ms (%d refused); ping %.1f ms before, "
		"%.1f ms after; gateway fds %d before, %d after\n",
		gw.url, FLOOD, flood_ms, failed, base, after, fds_before, fds_after);
	cr_expect_eq(failed, 0, "%d of %d raw connects failed: the listener stopped accepting", failed,
		     FLOOD);
	cr_expect_geq(after, 0,
		      "no answer to ping within %d ms after %d raw connect+close cycles on %s: "
		      "the listener is wedged (NNG issue #1518; is NNG built by deploy/deps.sh?)",
		      RECOVER_MS, FLOOD, gw.url);
	cr_expect_leq(fds_after, fds_before + FD_SLACK,
		      "gateway holds %d descriptors after the flood (%d before)", fds_after, fds_before);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

Test(listener, survives_raw_connect_close_on_ipc, .timeout = 120)
{
	flood_then_ping(NULL);
}

Test(listener, survives_raw_connect_close_on_tcp, .timeout = 120)
{
	char env[64];
	snprintf(env, sizeof(env), "BROOQ_LISTEN=tcp://127.0.0.1:%u", brq_t_free_port());
	flood_then_ping(env);
}
