/* SPDX-License-Identifier: MIT */
/* The gateway under systemd, without systemd: notifications to a NOTIFY_SOCKET the test binds (path and
 * abstract), the watchdog, and journald priority prefixes decided by JOURNAL_STREAM. A real process. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sodium.h>

#include "brq_clock.h"
#include "gw.h"
#include "testdb.h"
#include "tutil.h"

/* One suite only (see tests/CMakeLists.txt on Criterion and forked gateways). */
TestSuite(systemd, .timeout = 120);

/* A datagram socket like systemd's notify socket: a file system path, or an abstract
 * name when is_abstract. *name gets the NOTIFY_SOCKET value. */
static int
notify_socket(bool is_abstract, char *name, size_t cap)
{
	static int         seq;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t          len;
	int                fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	if (is_abstract) {
		snprintf(name, cap, "@brooq-test-notify-%d-%d", (int) getpid(), seq++);
		memcpy(sa.sun_path, name, strlen(name));
		sa.sun_path[0] = '\0';
		len            = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(name));
	} else {
		snprintf(name, cap, "/tmp/brooq-test-notify-%d-%d.sock", (int) getpid(), seq++);
		unlink(name);
		memcpy(sa.sun_path, name, strlen(name) + 1);
		len = (socklen_t) sizeof(sa);
	}
	cr_assert_eq(bind(fd, (struct sockaddr *) &sa, len), 0, "bind %s: %s", name, strerror(errno));
	return fd;
}

/* The next datagram (static buffer), or NULL after timeout_ms. */
static const char *
next_message(int fd, int timeout_ms)
{
	static char   buf[4096];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) != 1)
		return NULL;
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	return buf;
}

/* Reads messages until one starts with `prefix` (others must be WATCHDOG=1 pings, which
 * may come at any time). Returns it, or fails the test. */
static const char *
expect_message(int fd, const char *prefix, int timeout_ms)
{
	uint64_t end = brq_now_ms() + (uint64_t) timeout_ms;
	for (;;) {
		uint64_t    now = brq_now_ms();
		const char *m   = now < end ? next_message(fd, (int) (end - now)) : NULL;
		cr_assert_not_null(m, "no '%s' notification within %d ms", prefix, timeout_ms);
		if (strncmp(m, prefix, strlen(prefix)) == 0)
			return m;
		cr_assert_str_eq(m, "WATCHDOG=1", "unexpected notification before '%s'", prefix);
	}
}

static bool
http_listens(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int                fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
	bool is_up            = connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
	close(fd);
	return is_up;
}

/* READY=1 when everything serves; WATCHDOG=1 every half period; RELOADING=1 with
 * MONOTONIC_USEC around a SIGHUP, then READY=1; STOPPING=1 on SIGTERM. */
static void
notify_sequence(bool is_abstract)
{
	char     name[108], e_sock[140], e_http[64];
	uint16_t port = brq_t_free_port();
	int      fd   = notify_socket(is_abstract, name, sizeof(name));
	snprintf(e_sock, sizeof(e_sock), "NOTIFY_SOCKET=%s", name);
	snprintf(e_http, sizeof(e_http), "BROOQ_HTTP_LISTEN=127.0.0.1:%u", port);
	const char *env[] = {e_sock, e_http, "WATCHDOG_USEC=400000", NULL};
	char       *dsn   = brq_testdb_create(true);
	brq_gw      gw;

	brq_gw_spawn(&gw, dsn, env, NULL);
	const char *m = expect_message(fd, "READY=1", 15000);
	cr_assert(strstr(m, "STATUS=Serving") != NULL, "%s", m);
	/* Sent only once the RPC socket is bound and HTTP (started last) listens. */
	cr_assert(brq_gw_answers(&gw, 1000), "READY=1 before the RPC socket answers");
	cr_assert(http_listens(port), "READY=1 before HTTP listens");

	/* WATCHDOG_USEC=0.4 s: a ping every 0.2 s; four within 1.5 s leaves slack. */
	uint64_t t0 = brq_now_ms();
	for (int i = 0; i < 4; i++)
		cr_assert_str_eq(expect_message(fd, "WATCHDOG=1", 1500), "WATCHDOG=1");
	cr_assert_lt(brq_now_ms() - t0, 1500);

	uint64_t before = brq_now_us();
	cr_assert_eq(kill(gw.pid, SIGHUP), 0);
	m                  = expect_message(fd, "RELOADING=1\n", 5000);
	uint64_t    after  = brq_now_us();
	const char *mono   = strstr(m, "MONOTONIC_USEC=");
	uint64_t    mono_v = mono != NULL ? strtoull(mono + 15, NULL, 10) : 0;
	cr_assert(mono_v >= before && mono_v <= after,
		  "MONOTONIC_USEC %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]: %s", mono_v, before, after,
		  m);
	m = expect_message(fd, "READY=1", 5000);
	cr_assert(strstr(m, "last reload applied") != NULL, "%s", m);

	/* A failed reload also ends with READY=1: the gateway still serves. (A token file
	 * too short fails it; a missing one would be a revocation.) */
	int tfd = open(gw.worker_token_file, O_WRONLY | O_TRUNC);
	cr_assert_geq(tfd, 0);
	cr_assert_eq(write(tfd, "short\n", 6), 6);
	close(tfd);
	cr_assert_eq(kill(gw.pid, SIGHUP), 0);
	expect_message(fd, "RELOADING=1\n", 5000);
	m = expect_message(fd, "READY=1", 5000);
	cr_assert(strstr(m, "last reload failed") != NULL, "%s", m);

	brq_gw_stop(&gw);
	m = expect_message(fd, "STOPPING=1", 1000);
	close(fd);
	if (!is_abstract)
		unlink(name);
	brq_testdb_drop(dsn);
}

Test(systemd, notifies_ready_watchdog_reloading_and_stopping_on_a_socket_path)
{
	notify_sequence(false);
}

Test(systemd, notifies_on_an_abstract_socket_too)
{
	notify_sequence(true);
}

Test(systemd, no_watchdog_pings_without_watchdog_usec_or_for_another_pid)
{
	char name[108], e_sock[140];
	int  fd = notify_socket(true, name, sizeof(name));
	snprintf(e_sock, sizeof(e_sock), "NOTIFY_SOCKET=%s", name);
	/* WATCHDOG_PID names another process: the period is not ours (sd_watchdog_enabled). */
	const char *env[] = {e_sock, "WATCHDOG_USEC=200000", "WATCHDOG_PID=1", NULL};
	char       *dsn   = brq_testdb_create(true);
	brq_gw      gw;
	brq_gw_spawn(&gw, dsn, env, NULL);
	expect_message(fd, "READY=1", 15000);
	cr_assert_null(next_message(fd, 1500), "a notification without a watchdog for us");
	brq_gw_stop(&gw);
	cr_assert_not_null(strstr(next_message(fd, 1000), "STOPPING=1"));
	close(fd);
	brq_testdb_drop(dsn);
}

/* ---- journald priorities ------------------------------------------------------------------ */

/* Runs `brooq-gateway --check-config` with stderr to a new file and JOURNAL_STREAM naming
 * that file (is_journal) or another one; returns the output (static buffer). */
static const char *
check_config_output(bool is_journal, bool is_valid)
{
	static char out[8192];
	char dir[] = "/tmp/brooq-journal.XXXXXX", log[64], other[64], tok[64], e_tok[96], e_js[96], hex[65];
	unsigned char raw[32];
	struct stat   st;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/stderr", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(tok, sizeof(tok), "%s/worker-token", dir);
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
	int tfd = open(tok, O_WRONLY | O_CREAT, 0600);
	cr_assert_eq(write(tfd, hex, 64), 64);
	close(tfd);
	int fd = open(log, O_RDWR | O_CREAT, 0600);
	close(open(other, O_WRONLY | O_CREAT, 0600));
	cr_assert_eq(stat(is_journal ? log : other, &st), 0);
	snprintf(e_js, sizeof(e_js), "JOURNAL_STREAM=%ju:%ju", (uintmax_t) st.st_dev, (uintmax_t) st.st_ino);
	snprintf(e_tok, sizeof(e_tok), "BROOQ_WORKER_TOKEN_FILES=%s", is_valid ? tok : "/nonexistent");
	char *const env[] = {"BROOQ_DSN=host=/x", e_tok, e_js, NULL};
	pid_t       pid   = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fd, STDERR_FILENO);
		execle(brq_testdb_bin("brooq-gateway"), "brooq-gateway", "--check-config", (char *) NULL,
		       env);
		_exit(127);
	}
	int rc;
	cr_assert_eq(waitpid(pid, &rc, 0), pid);
	ssize_t n          = pread(fd, out, sizeof(out) - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	return out;
}

Test(systemd, log_lines_carry_syslog_priorities_only_when_stderr_is_the_journal)
{
	const char *out = check_config_output(true, true);
	cr_assert(strncmp(out, "<6>ts=", 6) == 0 && strstr(out, " level=info msg=tokens_loaded") != NULL,
		  "%s", out);
	out = check_config_output(false, true);
	cr_assert(strncmp(out, "ts=", 3) == 0 && strstr(out, "<6>") == NULL,
		  "redirected stderr got a prefix: %s", out);
	/* Start-up problems are errors: `journalctl -p err` shows why it did not start. */
	out = check_config_output(true, false);
	cr_assert(strstr(out, "<3>brooq-gateway: invalid configuration") != NULL, "%s", out);
	cr_assert(strstr(out, "<3>  auth: no token left: every token file is missing (1)") != NULL, "%s",
		  out);
	out = check_config_output(false, false);
	cr_assert(strncmp(out, "brooq-gateway: invalid configuration", 36) == 0, "%s", out);
}
