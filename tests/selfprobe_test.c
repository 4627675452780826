/* SPDX-License-Identifier: MIT */
/*
 * /healthz's RPC self-probe (gateway/background/selfprobe.c) with the real gateway: 200 while
 * the listener answers, 503 naming the rpc check when new connections to it no longer
 * reach it (its ipc socket path moved away: what a wedged listener looks like from
 * outside), 200 again when they do; off when configured off; wildcard tcp:// hosts
 * dialled on loopback.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "tutil.h"
#include "background/selfprobe.h"
#include "testdb.h"

#define RPC_FAILING "rpc listener not answering\n"

/* A loopback TCP port nobody listens on right now. */

/* GET /healthz: returns the status (0 when no answer) and copies the body. */
static int
healthz(unsigned port, char *body, size_t cap)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
	sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
	int fd                = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	char   buf[2048];
	size_t len = 0;
	body[0]    = '\0';
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
		close(fd);
		return 0;
	}
	const char req[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t) sizeof(req) - 1);
	ssize_t n;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t) n;
	close(fd);
	buf[len]   = '\0';
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return 0;
	const char *b = strstr(buf, "\r\n\r\n");
	snprintf(body, cap, "%s", b != NULL ? b + 4 : "");
	return status;
}

/* Polls /healthz until it says `want`, at most timeout_ms; returns the ms it took,
 * or fails the test with the last answer. */
static uint64_t
await_healthz(unsigned port, int want, uint64_t timeout_ms, char *body, size_t cap)
{
	uint64_t start = (uint64_t) brq_t_now_ms();
	int      got;
	while ((got = healthz(port, body, cap)) != want && (uint64_t) brq_t_now_ms() - start < timeout_ms)
		usleep(50 * 1000);
	cr_assert_eq(got, want, "/healthz said %d (%s), not %d, for %llu ms", got, body, want,
		     (unsigned long long) timeout_ms);
	return (uint64_t) brq_t_now_ms() - start;
}

/* Starts the gateway with HTTP on a free port and the given probe interval. */
static unsigned
start(brq_gw *gw, char *dsn, const char *interval, const char *listen)
{
	char e_probe[64];
	snprintf(e_probe, sizeof(e_probe), "BROOQ_SELFPROBE_INTERVAL=%s", interval);
	const char *env[] = {e_probe, listen, NULL};
	return brq_gw_start_http(gw, dsn, env);
}

static void
socket_paths(const brq_gw *gw, char *path, char *away, size_t cap)
{
	cr_assert_eq(strncmp(gw->url, "ipc://", 6), 0);
	snprintf(path, cap, "%s", gw->url + 6);
	snprintf(away, cap, "%s.away", gw->url + 6);
}

/* True when the log holds a run of 64 hex characters (a token's shape). */
static bool
log_has_token_shape(const char *log)
{
	FILE *f = fopen(log, "r");
	cr_assert_not_null(f, "cannot read %s", log);
	int  run = 0, c;
	bool hit = false;
	while (!hit && (c = fgetc(f)) != EOF) {
		run = isxdigit(c) ? run + 1 : 0;
		hit = run >= 64;
	}
	fclose(f);
	return hit;
}

Test(selfprobe, healthz_turns_503_naming_rpc_when_the_listener_stops_answering, .timeout = 120)
{
	char    *dsn = brq_testdb_create(true);
	brq_gw   gw;
	char     body[512], path[400], away[400];
	unsigned port = start(&gw, dsn, "200ms", NULL);
	socket_paths(&gw, path, away, sizeof(path));

	await_healthz(port, 200, 10000, body, sizeof(body));
	cr_assert_str_eq(body, "ok\n");

	/* New connections no longer reach the listener; the database is fine. */
	cr_assert_eq(rename(path, away), 0);
	uint64_t took = await_healthz(port, 503, 10000, body, sizeof(body));
	cr_assert_str_eq(body, RPC_FAILING, "only the rpc check fails: %s", body);
	fprintf(stderr, "selfprobe: /healthz 503 %llu ms after the listener went away (interval 200 ms)\n",
		(unsigned long long) took);

	cr_assert_eq(rename(away, path), 0);
	took = await_healthz(port, 200, 10000, body, sizeof(body));
	cr_assert_str_eq(body, "ok\n");
	fprintf(stderr, "selfprobe: /healthz 200 again %llu ms after it came back\n",
		(unsigned long long) took);

	char cmd[700];
	snprintf(cmd, sizeof(cmd), "grep -q 'msg=selfprobe_failed' %s && grep -q 'msg=selfprobe_ok' %s",
		 gw.log, gw.log);
	cr_expect_eq(system(cmd), 0, "the change of state is logged (see %s)", gw.log);
	cr_expect_not(log_has_token_shape(gw.log), "a token-shaped string is in %s", gw.log);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

Test(selfprobe, is_off_when_the_interval_is_zero, .timeout = 60)
{
	char    *dsn = brq_testdb_create(true);
	brq_gw   gw;
	char     body[512], path[400], away[400];
	unsigned port = start(&gw, dsn, "0", NULL);
	socket_paths(&gw, path, away, sizeof(path));

	await_healthz(port, 200, 10000, body, sizeof(body));
	cr_assert_eq(rename(path, away), 0);
	usleep(1500 * 1000);
	int status = healthz(port, body, sizeof(body));
	cr_assert_eq(rename(away, path), 0);
	cr_assert_eq(status, 200, "no probe, no rpc check: %s", body);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

Test(selfprobe, dials_a_wildcard_tcp_listener_on_loopback, .timeout = 60)
{
	char  *dsn = brq_testdb_create(true);
	brq_gw gw;
	char   body[512], listen[64];
	snprintf(listen, sizeof(listen), "BROOQ_LISTEN=tcp://0.0.0.0:%u", brq_t_free_port());
	unsigned port = start(&gw, dsn, "200ms", listen);
	await_healthz(port, 200, 10000, body, sizeof(body));
	cr_assert_str_eq(body, "ok\n");
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

Test(selfprobe, dial_url_maps_wildcard_hosts_to_loopback)
{
	static const struct {
		const char *listen, *dial;
	} cases[] = {
		{"ipc:///run/brooq/gateway.sock", "ipc:///run/brooq/gateway.sock"},
		{"tcp://127.0.0.1:7000", "tcp://127.0.0.1:7000"},
		{"tcp://gw.internal:7000", "tcp://gw.internal:7000"},
		{"tcp://0.0.0.0:7000", "tcp://127.0.0.1:7000"},
		{"tcp://*:7000", "tcp://127.0.0.1:7000"},
		{"tcp://:7000", "tcp://127.0.0.1:7000"},
		{"tcp://[::]:7000", "tcp://[::1]:7000"},
		{"tcp://[::1]:7000", "tcp://[::1]:7000"},
		{"tls+tcp://0.0.0.0:7443", "tls+tcp://127.0.0.1:7443"},
		{"tls+tcp://[::]:7443", "tls+tcp://[::1]:7443"},
		{"tls+tcp://gw.internal:7443", "tls+tcp://gw.internal:7443"},
	};
	char out[64];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(brq_selfprobe_dial_url(cases[i].listen, out, sizeof(out)), 0);
		cr_assert_str_eq(out, cases[i].dial, "%s", cases[i].listen);
	}
	cr_assert_eq(brq_selfprobe_dial_url("tcp://0.0.0.0:7000", out, 10), BRQ_E2BIG);
}
