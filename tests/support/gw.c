/* SPDX-License-Identifier: MIT */
/* A real brooq-gateway process for black-box tests, on a temp ipc:// socket. */
#define _GNU_SOURCE
#include "gw.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <sodium.h>

#include "rawhttp.h"
#include "testdb.h"
#include "tutil.h"

static void
write_token(const char *path, char *hex)
{
	unsigned char raw[32];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, 65, raw, sizeof(raw));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0, "cannot write %s", path);
	cr_assert_eq(write(fd, hex, 64), 64);
	cr_assert_eq(write(fd, "\n", 1), 1);
	close(fd);
}

brq_str
brq_gw_worker(const brq_gw *gw)
{
	return (brq_str) {gw->worker_token, 64};
}

brq_str
brq_gw_admin(const brq_gw *gw)
{
	return (brq_str) {gw->admin_token, 64};
}

/* nng_dial(), with the helper's TLS settings for a tls+tcp:// url. */
static int
dial(const brq_gw *gw, nng_socket s)
{
	nng_dialer      d;
	nng_tls_config *c  = NULL;
	int             rv = nng_dialer_create(&d, s, gw->url);
	if (rv == 0 && strncmp(gw->url, "tls+tcp://", 10) == 0) {
		rv = nng_tls_config_alloc(&c, NNG_TLS_MODE_CLIENT);
		if (rv == 0 && gw->tls_ca[0] != '\0')
			rv = nng_tls_config_ca_file(c, gw->tls_ca);
		else if (rv == 0)
			rv = nng_tls_config_auth_mode(c, NNG_TLS_AUTH_MODE_NONE);
		if (rv == 0 && gw->tls_cert_key[0] != '\0')
			rv = nng_tls_config_cert_key_file(c, gw->tls_cert_key, NULL);
		if (rv == 0)
			rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, c);
		if (c != NULL)
			nng_tls_config_free(c);
	}
	return rv != 0 ? rv : nng_dialer_start(d, 0);
}

void *
brq_gw_raw(const brq_gw *gw, const void *req, size_t len, size_t *rep_len, int timeout_ms)
{
	nng_socket s;
	nng_msg   *m   = NULL;
	void      *out = NULL;
	if (nng_req0_open(&s) != 0)
		return NULL;
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, timeout_ms);
	if (dial(gw, s) != 0)
		goto out;
	if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, req, len) != 0)
		goto out;
	if (nng_sendmsg(s, m, 0) != 0)
		goto out;
	m = NULL;
	if (nng_recvmsg(s, &m, 0) != 0)
		goto out;
	*rep_len = nng_msg_len(m);
	out      = malloc(*rep_len ? *rep_len : 1);
	memcpy(out, nng_msg_body(m), *rep_len);
out:
	nng_msg_free(m);
	nng_close(s);
	return out;
}

brq_status
brq_gw_call(const brq_gw *gw, brq_request *req, brq_reply *rep, brq_arena *arena, void **keep)
{
	brq_buf    b;
	brq_limits lim;
	char       err[256];
	size_t     n = 0;
	brq_limits_default(&lim);
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, req), 0, "encode failed");
	*keep = brq_gw_raw(gw, b.data, b.len, &n, 60000);
	brq_buf_fini(&b);
	cr_assert_not_null(*keep, "no reply from the gateway for %s", brq_op_name(req->op));
	cr_assert_eq(brq_reply_decode(rep, req->op, *keep, n, &lim, arena, err, sizeof(err)), BRQ_ST_OK,
		     "reply to %s does not decode: %s", brq_op_name(req->op), err);
	return rep->code;
}

void
brq_gw_start(brq_gw *gw, char *dsn, const char *const *extra_env)
{
	brq_gw_start_args(gw, dsn, extra_env, NULL);
}

/* brq_gw_start with `first` ("KEY=VALUE") added before extra_env. */
static void
start_with(brq_gw *gw, char *dsn, const char *first, const char *const *extra_env)
{
	const char *env[32];
	int         n = 0;
	env[n++]      = first;
	for (int k = 0; extra_env != NULL && extra_env[k] != NULL && n < 31; k++)
		env[n++] = extra_env[k];
	env[n] = NULL;
	brq_gw_start(gw, dsn, env); // the strings are read before it returns
}

void
brq_gw_start_on(brq_gw *gw, char *dsn, const char *const *extra_env, bool tcp)
{
	char listen[64];
	if (!tcp) {
		brq_gw_start(gw, dsn, extra_env);
		return;
	}
	snprintf(listen, sizeof(listen), "BROOQ_LISTEN=tcp://127.0.0.1:%u", brq_t_free_port());
	start_with(gw, dsn, listen, extra_env);
}

uint16_t
brq_gw_start_http(brq_gw *gw, char *dsn, const char *const *extra_env)
{
	char     listen[64];
	uint16_t port = brq_t_free_port();
	snprintf(listen, sizeof(listen), "BROOQ_HTTP_LISTEN=127.0.0.1:%u", port);
	start_with(gw, dsn, listen, extra_env);
	// The RPC listener answers before the HTTP endpoint is up (main.c starts the server
	// first): wait for the endpoint too, so a test's first scrape finds it.
	for (int i = 0; i < 3000; i++) {
		int fd = brq_sock_dial_port(port, 1000);
		if (fd >= 0) {
			close(fd);
			return port;
		}
		usleep(10 * 1000);
	}
	cr_assert_fail("the gateway's HTTP endpoint on 127.0.0.1:%u never accepted; see %s", port, gw->log);
	return port;
}

void
brq_gw_spawn(brq_gw *gw, char *dsn, const char *const *extra_env, const char *const *args)
{
	cr_assert(sodium_init() >= 0);
	memset(gw, 0, sizeof(*gw));
	gw->dsn = dsn;
	snprintf(gw->dir, sizeof(gw->dir), "/tmp/brooq-gw.XXXXXX");
	cr_assert_not_null(mkdtemp(gw->dir));
	snprintf(gw->url, sizeof(gw->url), "ipc://%s/gw.sock", gw->dir);
	// A BROOQ_LISTEN of the caller's (e.g. tcp://) is where the gateway answers.
	for (int k = 0; extra_env != NULL && extra_env[k] != NULL; k++) {
		if (strncmp(extra_env[k], "BROOQ_LISTEN=", 13) == 0)
			snprintf(gw->url, sizeof(gw->url), "%s", extra_env[k] + 13);
		if (strncmp(extra_env[k], "BROOQ_TEST_TLS_CA=", 18) == 0)
			snprintf(gw->tls_ca, sizeof(gw->tls_ca), "%s", extra_env[k] + 18);
		if (strncmp(extra_env[k], "BROOQ_TEST_TLS_CERT_KEY=", 24) == 0)
			snprintf(gw->tls_cert_key, sizeof(gw->tls_cert_key), "%s", extra_env[k] + 24);
	}
	snprintf(gw->worker_token_file, sizeof(gw->worker_token_file), "%s/worker-token", gw->dir);
	snprintf(gw->admin_token_file, sizeof(gw->admin_token_file), "%s/admin-token", gw->dir);
	snprintf(gw->log, sizeof(gw->log), "%s/gateway.log", gw->dir);
	write_token(gw->worker_token_file, gw->worker_token);
	write_token(gw->admin_token_file, gw->admin_token);

	char *env[64];
	int   n = 0;
	char  e_dsn[512], e_listen[350], e_worker[350], e_admin[350];
	snprintf(e_dsn, sizeof(e_dsn), "BROOQ_DSN=%s", dsn);
	snprintf(e_listen, sizeof(e_listen), "BROOQ_LISTEN=%s", gw->url);
	snprintf(e_worker, sizeof(e_worker), "BROOQ_WORKER_TOKEN_FILES=%s", gw->worker_token_file);
	snprintf(e_admin, sizeof(e_admin), "BROOQ_ADMIN_TOKEN_FILES=%s", gw->admin_token_file);
	const char *defaults[] = {e_dsn,
				  e_listen,
				  e_worker,
				  e_admin,
				  "BROOQ_HTTP_LISTEN=off",
				  "BROOQ_LOG_LEVEL=info",
				  "BROOQ_POOL_SIZE=4",
				  "BROOQ_SHUTDOWN_GRACE=5s",
				  NULL};
	for (int i = 0; defaults[i] != NULL; i++) {
		bool   overridden = false;
		size_t kl         = strcspn(defaults[i], "=") + 1;
		for (int k = 0; extra_env != NULL && extra_env[k] != NULL; k++)
			overridden = overridden || strncmp(extra_env[k], defaults[i], kl) == 0;
		if (!overridden)
			env[n++] = (char *) defaults[i];
	}
	for (int k = 0; extra_env != NULL && extra_env[k] != NULL && n < 60; k++)
		env[n++] = (char *) extra_env[k];
	env[n++] = "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1";
	env[n]   = NULL;

	const char *bin    = brq_testdb_bin("brooq-gateway");
	pid_t       parent = getpid();
	pid_t       pid    = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		// A test that fails before stopping its gateway must not leave it running:
		// it is stopped when the test's process (the forking thread) ends.
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
			_exit(127);
		int fd = open(gw->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			dup2(fd, STDOUT_FILENO);
		}
		char *argv[16] = {"brooq-gateway"};
		for (int k = 0; args != NULL && args[k] != NULL && k < 14; k++)
			argv[k + 1] = (char *) args[k];
		execve(bin, argv, env);
		_exit(127);
	}
	gw->pid = pid;
}

const char *
brq_gw_log(const brq_gw *gw)
{
	static char buf[1 << 20];
	FILE       *f = fopen(gw->log, "r");
	size_t      n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

int
brq_gw_count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

void
brq_gw_await_log(const brq_gw *gw, const char *needle, int n, int timeout_ms)
{
	for (int waited = 0; brq_gw_count(brq_gw_log(gw), needle) < n; waited += 20) {
		cr_assert(waited < timeout_ms, "no %d x '%s' in the log after %d ms:\n%s", n, needle,
			  timeout_ms, brq_gw_log(gw));
		usleep(20 * 1000);
	}
}

bool
brq_gw_answers(const brq_gw *gw, int timeout_ms)
{
	// Any reply to a ping means the socket serves.
	brq_buf     b;
	brq_request req = {.op = BRQ_OP_PING, .token = brq_gw_worker(gw)};
	size_t      rl  = 0;
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	void *rep = brq_gw_raw(gw, b.data, b.len, &rl, timeout_ms);
	brq_buf_fini(&b);
	free(rep);
	return rep != NULL;
}

void
brq_gw_start_args(brq_gw *gw, char *dsn, const char *const *extra_env, const char *const *args)
{
	brq_gw_spawn(gw, dsn, extra_env, args);
	for (int i = 0; i < 500; i++) {
		int st;
		if (waitpid(gw->pid, &st, WNOHANG) == gw->pid)
			cr_assert_fail("brooq-gateway exited at start (status %d); see %s", st, gw->log);
		if (brq_gw_answers(gw, 200))
			return;
		usleep(20000);
	}
	cr_assert_fail("brooq-gateway did not come up; see %s", gw->log);
}

void
brq_gw_stop(brq_gw *gw)
{
	int st = 0;
	if (gw->pid <= 0)
		return;
	kill(gw->pid, SIGTERM);
	for (int i = 0; i < 1500; i++) {
		if (waitpid(gw->pid, &st, WNOHANG) == gw->pid)
			break;
		usleep(10000);
		if (i == 1499) {
			kill(gw->pid, SIGKILL);
			waitpid(gw->pid, &st, 0);
		}
	}
	gw->pid    = 0;
	bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!clean) {
		// Said here as well: a failed assertion in a suite's fini is not always shown.
		if (WIFSIGNALED(st))
			fprintf(stderr, "brooq-gateway (%s) died of signal %d (%s); its log:\n", gw->dir,
				WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			fprintf(stderr, "brooq-gateway (%s) exited with status %d; its log:\n", gw->dir,
				WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "cat %s >&2", gw->log);
		(void) system(cmd);
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", gw->dir);
	if (clean)
		(void) system(cmd);
	cr_assert(clean, "brooq-gateway did not exit cleanly (status 0x%x); log kept in %s", st, gw->dir);
}

nng_socket
brq_gw_send_open(const brq_gw *gw, brq_request *req)
{
	nng_socket s;
	nng_msg   *m;
	brq_buf    b;
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, req), 0);
	cr_assert_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	cr_assert_eq(nng_dial(s, gw->url, NULL, 0), 0);
	cr_assert_eq(nng_msg_alloc(&m, 0), 0);
	cr_assert_eq(nng_msg_append(m, b.data, b.len), 0);
	brq_buf_fini(&b);
	cr_assert_eq(nng_sendmsg(s, m, 0), 0);
	return s;
}

long long
brq_gw_metric(uint16_t http_port, const char *sample)
{
	static char buf[1 << 18];
	cr_assert_geq(brq_http_get(http_port, "/metrics", buf, sizeof(buf), 30000), 0,
		      "the HTTP endpoint on 127.0.0.1:%u does not take connections", http_port);
	return brq_http_sample(buf, sample);
}

bool
brq_gw_wait_metric(uint16_t http_port, const char *sample, long long want, int timeout_ms)
{
	for (int waited = 0; brq_gw_metric(http_port, sample) != want; waited += 10) {
		if (waited >= timeout_ms)
			return false;
		brq_t_sleep_ms(10);
	}
	return true;
}

int
brq_gw_run_once(const char *const *env, const char *const *args, const char **out)
{
	static char buf[16384];
	char        path[] = "/tmp/brooq-gw-out.XXXXXX";
	int         fd     = mkstemp(path);
	cr_assert_geq(fd, 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *argv[8] = {"brooq-gateway"};
		for (int i = 0; args[i] != NULL && i < 6; i++)
			argv[i + 1] = (char *) args[i];
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execve(brq_testdb_bin("brooq-gateway"), argv, (char *const *) env);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	ssize_t n          = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void
brq_gw_new_token(char hex[65])
{
	unsigned char raw[32];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, 65, raw, sizeof(raw));
}
