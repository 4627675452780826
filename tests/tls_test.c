/* SPDX-License-Identifier: MIT */
/*
 * tls+tcp:// end to end: a real brooq-gateway with certificates made by openssl at test
 * time (tests/support/tls_certs.sh), libbrooq-client and brooqctl against it, real
 * PostgreSQL. A good client connects and real RPCs work; a client with another CA, a
 * plain tcp:// client and a client facing an expired certificate are refused while the
 * gateway keeps serving; with client certificates required, only a client with a
 * certificate from the gateway's CA gets in; the self-probe dials the listener over
 * TLS; a SIGHUP checks replaced certificates and asks for a restart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "rawhttp.h"
#include "testdb.h"
#include "tutil.h"

/* Refused handshakes show as "no connection" once this timeout has passed. */
#define REFUSE_MS 1500

static char  *dsn;
static brq_gw gw;
static char   tmp[64];
static char   certs[96];
static char   url[64];

/* Every suite of this binary has the same .timeout (Criterion 2.4 leaks when suites
 * with different timeouts run in one process; see client_test.c). */
TestSuite(tls, .timeout = 120);
TestSuite(tls_offline, .timeout = 120);

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
run(const char *fmt, ...)
{
	char    cmd[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/* certs/NAME, a few at once. */
static const char *
cert(const char *name)
{
	static char path[8][160];
	static int  slot;
	char       *p = path[slot++ % 8];
	snprintf(p, 160, "%s/%s", certs, name);
	return p;
}

/* Makes the certificates (and client.both: the client's certificate and key in one
 * file, for the test helper's own connections) and a fresh url on a free port. */
static void
make_certs(void)
{
	const char *src = getenv("BROOQ_SOURCE_DIR");
	cr_assert_not_null(src, "BROOQ_SOURCE_DIR is set by ctest");
	snprintf(tmp, sizeof(tmp), "/tmp/brq_tls_test_XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(certs, sizeof(certs), "%s/certs", tmp);
	run("%s/tests/support/tls_certs.sh %s", src, certs);
	run("cat %s/client.pem %s/client.key > %s/client.both && chmod 600 %s/client.both", certs, certs,
	    certs, certs);
	snprintf(url, sizeof(url), "tls+tcp://127.0.0.1:%u", brq_t_free_port());
}

static void
remove_certs(void)
{
	run("rm -rf '%s'", tmp);
}

/* Starts the gateway on url with the server certificate `name` (.pem/.key) and extra
 * settings (NULL-terminated, at most 6). */
static void
start_gw(const char *name, const char *const *extra)
{
	static char e_listen[96], e_cert[200], e_key[200];
	const char *env[16];
	int         n = 0;
	char        pem[64], key[64];
	snprintf(pem, sizeof(pem), "%s.pem", name);
	snprintf(key, sizeof(key), "%s.key", name);
	snprintf(e_listen, sizeof(e_listen), "BROOQ_LISTEN=%s", url);
	snprintf(e_cert, sizeof(e_cert), "BROOQ_TLS_CERT_FILE=%s", cert(pem));
	snprintf(e_key, sizeof(e_key), "BROOQ_TLS_KEY_FILE=%s", cert(key));
	env[n++] = e_listen;
	env[n++] = e_cert;
	env[n++] = e_key;
	for (int i = 0; extra != NULL && extra[i] != NULL && n < 15; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	brq_gw_start(&gw, dsn, env);
}

static void
setup(void)
{
	make_certs();
	dsn = brq_testdb_create(true);
}

static void
teardown(void)
{
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
	remove_certs();
}

/* Opens a client on `u` with the worker token and the given TLS files (NULL: none). */
static brooq_err
open_client(const char *u, const char *ca, const char *cert_file, const char *key_file, brooq_client **c)
{
	brooq_client_opts o = {.size          = sizeof(brooq_client_opts),
			       .url           = u,
			       .token_file    = gw.worker_token_file,
			       .timeout_ms    = REFUSE_MS,
			       .tls_ca_file   = ca,
			       .tls_cert_file = cert_file,
			       .tls_key_file  = key_file};
	*c                  = NULL;
	return brooq_client_open(&o, c);
}

/* A ping through a new client: its result, with the client's message in why. */
static brooq_err
ping_with(const char *u, const char *ca, const char *cert_file, const char *key_file, char *why, size_t cap)
{
	brooq_client *c;
	char          server[64];
	brooq_err     e = open_client(u, ca, cert_file, key_file, &c);
	if (e == BROOQ_OK)
		e = brooq_ping(c, server, sizeof(server));
	snprintf(why, cap, "%s", brooq_last_message());
	brooq_client_close(c);
	return e;
}

static void
assert_serves_good_clients(void)
{
	char why[1024];
	cr_assert_eq(ping_with(url, cert("ca.pem"), NULL, NULL, why, sizeof(why)), BROOQ_OK, "%s", why);
	cr_assert_eq(waitpid(gw.pid, NULL, WNOHANG), 0, "the gateway exited");
}

/* ---- a good client ------------------------------------------------------------------- */

Test(tls, a_client_with_the_ca_connects_and_real_rpcs_work, .init = setup, .fini = teardown)
{
	brooq_client  *c;
	const char    *topics[] = {"tls.job"};
	brooq_job_spec spec     = {
		    .size = sizeof(brooq_job_spec), .topic = "tls.job", .payload = "{\"over\":\"tls\"}"};
	brooq_enqueue_result res  = BROOQ_ENQUEUE_RESULT_INIT;
	brooq_job          **jobs = NULL;
	size_t               n    = 0;
	brooq_job_info      *info = NULL;

	start_gw("server", NULL);
	brq_gw_await_log(&gw, "msg=tls_ready subject=\"CN=localhost\"", 1, 5000);
	cr_assert_eq(open_client(url, cert("ca.pem"), NULL, NULL, &c), BROOQ_OK, "%s", brooq_last_message());
	cr_assert_eq(brooq_enqueue(c, &spec, 1, &res), BROOQ_OK, "%s", brooq_last_message());
	brooq_claim_opts o = {
		.size = sizeof(brooq_claim_opts), .topics = topics, .n_topics = 1, .max_jobs = 1};
	cr_assert_eq(brooq_claim(c, &o, &jobs, &n), BROOQ_OK, "%s", brooq_last_message());
	cr_assert_eq(n, 1);
	cr_assert_eq(jobs[0]->lease.id, res.id);
	brooq_settle_item s = {
		.size = sizeof(brooq_settle_item), .lease = jobs[0]->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result sr = BROOQ_SETTLE_RESULT_INIT;
	cr_assert_eq(brooq_settle(c, &s, 1, &sr), BROOQ_OK, "%s", brooq_last_message());
	cr_assert(sr.applied);
	cr_assert_eq(brooq_job_get(c, res.id, &info), BROOQ_OK, "%s", brooq_last_message());
	cr_assert_eq(info->state, BROOQ_DONE);
	brooq_job_info_free(info);
	brooq_jobs_free(jobs, n);
	brooq_client_close(c);
	cr_assert(strstr(brq_gw_log(&gw), "-----BEGIN") == NULL, "PEM text in the log");
}

/* ---- a worker ------------------------------------------------------------------------ */

static atomic_int tls_handled;

static void
h_count(brooq_job_ctx *j, void *arg)
{
	(void) j;
	(void) arg;
	atomic_fetch_add(&tls_handled, 1);
}

static void *
run_worker(void *w)
{
	return (void *) (intptr_t) brooq_worker_run(w);
}

/* The worker claims over a connection of its own (so a stop can abandon a long-poll):
 * that connection must speak TLS too, with the client's CA. */
Test(tls, a_worker_runs_jobs_over_tls, .init = setup, .fini = teardown)
{
	brooq_client        *c;
	brooq_worker        *w;
	pthread_t            t;
	void                *rv;
	brooq_job_spec       specs[5];
	brooq_enqueue_result res[5];
	for (size_t i_ = 0; i_ < 5; i_++)
		res[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;

	start_gw("server", NULL);
	brq_gw_await_log(&gw, "msg=tls_ready", 1, 5000);
	cr_assert_eq(open_client(url, cert("ca.pem"), NULL, NULL, &c), BROOQ_OK, "%s", brooq_last_message());
	for (int i = 0; i < 5; i++)
		specs[i] = (brooq_job_spec) {
			.size = sizeof(brooq_job_spec), .topic = "tls.work", .payload = "{}"};
	cr_assert_eq(brooq_enqueue(c, specs, 5, res), BROOQ_OK, "%s", brooq_last_message());
	brooq_worker_opts o = {.size = sizeof(o), .threads = 2, .wait_ms = 500};
	cr_assert_eq(brooq_worker_new(c, &o, &w), BROOQ_OK, "%s", brooq_last_message());
	cr_assert_eq(brooq_worker_handle(w, "tls.work", h_count, NULL), BROOQ_OK);
	atomic_store(&tls_handled, 0);
	cr_assert_eq(pthread_create(&t, NULL, run_worker, w), 0);
	for (int i = 0; i < 500 && atomic_load(&tls_handled) < 5; i++)
		usleep(10 * 1000);
	brooq_worker_stop(w);
	pthread_join(t, &rv);
	cr_assert_eq((intptr_t) rv, BROOQ_OK);
	cr_assert_eq(atomic_load(&tls_handled), 5, "the worker ran %d of 5 jobs over TLS",
		     atomic_load(&tls_handled));
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(w, &st);
	cr_assert_eq(st.settled, 5, "settled %llu of 5", (unsigned long long) st.settled);
	brooq_worker_free(w);
	for (int i = 0; i < 5; i++) {
		brooq_job_info *info = NULL;
		cr_assert_eq(brooq_job_get(c, res[i].id, &info), BROOQ_OK, "%s", brooq_last_message());
		cr_assert_eq(info->state, BROOQ_DONE);
		brooq_job_info_free(info);
	}
	brooq_client_close(c);
}

Test(tls, brooqctl_takes_the_ca_by_option_or_environment, .init = setup, .fini = teardown)
{
	char cmd[1024];
	start_gw("server", NULL);
	const char *ctl = brq_testdb_bin("brooqctl");
	snprintf(cmd, sizeof(cmd),
		 "%s ping --url %s --token-file %s --tls-ca %s --timeout 5s | grep -q '^brooq-gateway'", ctl,
		 url, gw.worker_token_file, cert("ca.pem"));
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd),
		 "BROOQ_TLS_CA_FILE=%s BROOQ_URL=%s BROOQ_TOKEN_FILE=%s %s ping --timeout 5s | grep -q "
		 "'^brooq-gateway'",
		 cert("ca.pem"), url, gw.worker_token_file, ctl);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	/* Another CA: unreachable (exit 3), and the message says TLS. */
	snprintf(cmd, sizeof(cmd),
		 "%s ping --url %s --token-file %s --tls-ca=%s --timeout 1500ms 2>&1 | grep -q 'TLS "
		 "handshake'; "
		 "test ${PIPESTATUS[0]} -eq 3",
		 ctl, url, gw.worker_token_file, cert("ca2.pem"));
	char bash[1200];
	snprintf(bash, sizeof(bash), "bash -c '%s'", cmd);
	cr_assert_eq(system(bash), 0, "%s", bash);
}

/* ---- refused clients, and a gateway that goes on serving ------------------------------------ */

Test(tls, a_client_trusting_another_ca_is_refused, .init = setup, .fini = teardown)
{
	char why[1024];
	start_gw("server", NULL);
	cr_assert_eq(ping_with(url, cert("ca2.pem"), NULL, NULL, why, sizeof(why)), BROOQ_ECONNECT, "%s",
		     why);
	cr_assert(strstr(why, "TLS handshake") != NULL, "%s", why);
	cr_assert(strstr(why, "nothing was sent") != NULL, "%s", why);
	assert_serves_good_clients();
}

Test(tls, a_plain_tcp_client_to_the_tls_port_fails_cleanly, .init = setup, .fini = teardown)
{
	char why[1024], plain[64];
	start_gw("server", NULL);
	snprintf(plain, sizeof(plain), "tcp://%s", url + strlen("tls+tcp://"));
	/* For REFUSE_MS, NNG redials: every attempt is a failed handshake at the gateway. */
	cr_assert_eq(ping_with(plain, NULL, NULL, NULL, why, sizeof(why)), BROOQ_ECONNECT, "%s", why);
	cr_assert(strstr(why, "no connection") != NULL, "%s", why);
	assert_serves_good_clients();
	/* And a TLS client facing a plain tcp:// gateway port fails as cleanly. */
	brq_gw_stop(&gw);
	char plain_env[96];
	snprintf(plain_env, sizeof(plain_env), "BROOQ_LISTEN=%s", plain);
	const char *env[] = {plain_env, NULL};
	brq_gw_start(&gw, dsn, env);
	cr_assert_eq(ping_with(url, cert("ca.pem"), NULL, NULL, why, sizeof(why)), BROOQ_ECONNECT, "%s", why);
	cr_assert(brq_gw_answers(&gw, 5000), "the plain gateway stopped answering");
}

/* ---- handshakes that never happen (deploy/nng/rx-timeouts.patch) ---------------------- */

#define SILENT_PEERS 50
/* Seen closed within this (the handshake timeout is 1 s): generous for a loaded machine.
 * Without the patch NNG never closes them (its 10 s negotiation timeout cannot abort a
 * send blocked in the TLS handshake). */
#define SILENT_BOUND_MS 30000

Test(tls, peers_that_never_begin_a_handshake_are_closed, .init = setup, .fini = teardown)
{
	const char *extra[] = {"BROOQ_HANDSHAKE_TIMEOUT=1s", NULL};
	start_gw("server", extra);
	/* The same port without TLS: connections that send nothing at all. */
	const char *tcp = url + strlen("tls+");
	int         fds[SILENT_PEERS];
	for (int i = 0; i < SILENT_PEERS; i++) {
		fds[i] = brq_sock_dial(tcp, 0);
		cr_assert_geq(fds[i], 0, "connect to %s: %s", tcp, strerror(errno));
	}
	double until  = brq_t_now_ms() + SILENT_BOUND_MS;
	int    closed = 0;
	for (int i = 0; i < SILENT_PEERS; i++) {
		closed += brq_sock_closed_by(fds[i], until);
		close(fds[i]);
	}
	fprintf(stderr, "tls_test: %d of %d peers that never began a handshake closed\n", closed,
		SILENT_PEERS);
	cr_expect_eq(closed, SILENT_PEERS, "%d of %d silent peers still connected after %d ms",
		     SILENT_PEERS - closed, SILENT_PEERS, SILENT_BOUND_MS);
	assert_serves_good_clients();
}

Test(tls, an_expired_server_certificate_is_refused_by_the_client, .init = setup, .fini = teardown)
{
	char why[1024];
	start_gw("expired", NULL); /* the helper's own connections verify nothing */
	brq_gw_await_log(&gw, "msg=tls_cert_expired", 1, 5000);
	cr_assert_eq(ping_with(url, cert("ca.pem"), NULL, NULL, why, sizeof(why)), BROOQ_ECONNECT, "%s", why);
	cr_assert(strstr(why, "TLS handshake") != NULL, "%s", why);
	cr_assert(strstr(why, "expired") != NULL, "the message names the likely causes: %s", why);
}

Test(tls, the_certificate_must_carry_the_dialled_name, .init = setup, .fini = teardown)
{
	char          why[1024];
	brooq_client *c;
	char          server[64];
	start_gw("server", NULL);
	/* The certificate names localhost and 127.0.0.1: another name is refused ... */
	brooq_client_opts o = {.size            = sizeof(brooq_client_opts),
			       .url             = url,
			       .token_file      = gw.worker_token_file,
			       .timeout_ms      = REFUSE_MS,
			       .tls_ca_file     = cert("ca.pem"),
			       .tls_server_name = "gw.example"};
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_OK, "%s", brooq_last_message());
	cr_assert_eq(brooq_ping(c, server, sizeof(server)), BROOQ_ECONNECT);
	snprintf(why, sizeof(why), "%s", brooq_last_message());
	cr_assert(strstr(why, "TLS handshake") != NULL, "%s", why);
	brooq_client_close(c);
	/* ... and the name it carries is accepted. */
	o.tls_server_name = "localhost";
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_OK, "%s", brooq_last_message());
	cr_assert_eq(brooq_ping(c, server, sizeof(server)), BROOQ_OK, "%s", brooq_last_message());
	brooq_client_close(c);
}

/* ---- client certificates ------------------------------------------------------------------- */

Test(tls, with_client_auth_required_only_a_certificate_from_the_ca_gets_in, .init = setup, .fini = teardown)
{
	static char e_ca[200], e_helper_ca[200], e_helper_cert[200], e_http[64];
	char        why[1024];
	snprintf(e_http, sizeof(e_http), "BROOQ_HTTP_LISTEN=127.0.0.1:%u", brq_t_free_port());
	snprintf(e_ca, sizeof(e_ca), "BROOQ_TLS_CA_FILE=%s", cert("ca.pem"));
	snprintf(e_helper_ca, sizeof(e_helper_ca), "BROOQ_TEST_TLS_CA=%s", cert("ca.pem"));
	snprintf(e_helper_cert, sizeof(e_helper_cert), "BROOQ_TEST_TLS_CERT_KEY=%s", cert("client.both"));
	const char *extra[] = {e_ca, "BROOQ_TLS_CLIENT_AUTH=required", e_helper_ca, e_helper_cert, e_http,
			       NULL};
	start_gw("server", extra);
	brq_gw_await_log(&gw, "client_auth=required", 1, 5000);

	cr_assert_eq(ping_with(url, cert("ca.pem"), NULL, NULL, why, sizeof(why)), BROOQ_ECONNECT,
		     "no client certificate: %s", why);
	cr_assert(strstr(why, "TLS handshake") != NULL, "%s", why);
	cr_assert_eq(
		ping_with(url, cert("ca.pem"), cert("client2.pem"), cert("client2.key"), why, sizeof(why)),
		BROOQ_ECONNECT, "a certificate from another CA: %s", why);
	cr_assert_eq(ping_with(url, cert("ca.pem"), cert("client.pem"), cert("client.key"), why, sizeof(why)),
		     BROOQ_OK, "%s", why);

	/* A real RPC with the certificate, and the token still decides the role. */
	brooq_client  *c;
	brooq_job_spec spec = {.size = sizeof(brooq_job_spec), .topic = "tls.mtls"};
	cr_assert_eq(open_client(url, cert("ca.pem"), cert("client.pem"), cert("client.key"), &c), BROOQ_OK);
	brooq_enqueue_result res = BROOQ_ENQUEUE_RESULT_INIT;
	cr_assert_eq(brooq_enqueue(c, &spec, 1, &res), BROOQ_OK, "%s", brooq_last_message());
	brooq_state st;
	bool        canceled;
	cr_assert_eq(brooq_cancel(c, res.id, &st, &canceled), BROOQ_EPERMISSION_DENIED,
		     "a worker token, certificate or not");
	brooq_client_close(c);
	/* The self-probe cannot present a client certificate: it is off, and says why. */
	cr_assert(strstr(brq_gw_log(&gw),
			 "msg=selfprobe_off reason=\"tls+tcp listener requires client certificates\"") !=
		  NULL);
}

Test(tls, a_client_certificate_revoked_by_the_cas_crl_is_refused, .init = setup, .fini = teardown)
{
	static char e_ca[200], e_helper_cert[200];
	char        why[1024];
	snprintf(e_ca, sizeof(e_ca), "BROOQ_TLS_CA_FILE=%s", cert("ca-crl.pem")); /* CA, then its CRL */
	snprintf(e_helper_cert, sizeof(e_helper_cert), "BROOQ_TEST_TLS_CERT_KEY=%s", cert("client.both"));
	const char *extra[] = {e_ca, "BROOQ_TLS_CLIENT_AUTH=required", e_helper_cert, NULL};
	start_gw("server", extra);
	cr_assert_eq(
		ping_with(url, cert("ca.pem"), cert("revoked.pem"), cert("revoked.key"), why, sizeof(why)),
		BROOQ_ECONNECT, "a revoked certificate: %s", why);
	cr_assert_eq(ping_with(url, cert("ca.pem"), cert("client.pem"), cert("client.key"), why, sizeof(why)),
		     BROOQ_OK, "%s", why);
}

/* ---- the self-probe, and SIGHUP --------------------------------------------------------------- */

/* GET /healthz on 127.0.0.1:port: the status, 0 when nothing answers. */
static int
healthz(unsigned port)
{
	char buf[512];
	int  status = 0;
	if (brq_http_get((uint16_t) port, "/healthz", buf, sizeof(buf), 5000) <= 0 ||
	    sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = 0;
	return status;
}

Test(tls, the_self_probe_dials_a_wildcard_tls_listener_over_tls, .init = setup, .fini = teardown)
{
	static char e_http[64];
	unsigned    http = brq_t_free_port();
	snprintf(e_http, sizeof(e_http), "BROOQ_HTTP_LISTEN=127.0.0.1:%u", http);
	/* 0.0.0.0: the probe dials 127.0.0.1; the helper dials 0.0.0.0, which is loopback. */
	snprintf(url, sizeof(url), "tls+tcp://0.0.0.0:%u", brq_t_free_port());
	/* 1s: each probe may take 1 s for its handshake on a loaded machine. */
	const char *extra[] = {e_http, "BROOQ_SELFPROBE_INTERVAL=1s", NULL};
	start_gw("server", extra);
	char want[96];
	snprintf(want, sizeof(want), "msg=selfprobe_start url=tls+tcp://127.0.0.1:%s", strrchr(url, ':') + 1);
	brq_gw_await_log(&gw, want, 1, 5000);
	int status = 0;
	for (int i = 0; i < 200 && (status = healthz(http)) != 200; i++)
		usleep(100 * 1000);
	cr_assert_eq(status, 200, "/healthz: a probe that could not speak TLS would fail: %s",
		     brq_gw_log(&gw));
}

Test(tls, sighup_checks_replaced_certificates_and_asks_for_a_restart, .init = setup, .fini = teardown)
{
	char why[1024];
	start_gw("server", NULL);
	/* Rewritten in place (a renewal): the reload names both files, the running
	 * listener keeps the certificate it started with. */
	run("cp %s/expired.pem %s/server.pem && cp %s/expired.key %s/server.key", certs, certs, certs, certs);
	cr_assert_eq(kill(gw.pid, SIGHUP), 0);
	brq_gw_await_log(&gw, "msg=reload_needs_restart changed=BROOQ_TLS_CERT_FILE,BROOQ_TLS_KEY_FILE", 1,
			 5000);
	cr_assert_eq(ping_with(url, cert("ca.pem"), NULL, NULL, why, sizeof(why)), BROOQ_OK,
		     "the old (valid) certificate still serves: %s", why);
	/* A broken replacement fails the reload and changes nothing. */
	run("printf 'garbage\\n' > %s/server.pem", certs);
	cr_assert_eq(kill(gw.pid, SIGHUP), 0);
	brq_gw_await_log(&gw, "msg=reload_failed", 1, 5000);
	cr_assert(strstr(brq_gw_log(&gw), "problem=\"TLS certificate file") != NULL, "%s", brq_gw_log(&gw));
	assert_serves_good_clients();
}

/* ---- the client's settings, without a gateway ------------------------------------------------ */

static brooq_err
open_opts(const brooq_client_opts *o)
{
	brooq_client *c = NULL;
	brooq_err     e = brooq_client_open(o, &c);
	brooq_client_close(c);
	return e;
}

Test(tls_offline, client_tls_settings_are_checked_at_open, .init = make_certs, .fini = remove_certs)
{
	char token[128];
	snprintf(token, sizeof(token), "%s/token", tmp);
	run("head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > %s", token);
	brooq_client_opts o = {.size = sizeof(o), .url = url, .token_file = token};

	unsetenv("BROOQ_TLS_CA_FILE");
	cr_assert_eq(open_opts(&o), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "needs a CA file") != NULL, "%s", brooq_last_message());
	o.tls_ca_file = cert("nope.pem");
	cr_assert_eq(open_opts(&o), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "TLS CA file") != NULL, "%s", brooq_last_message());
	o.tls_ca_file   = cert("ca.pem");
	o.tls_cert_file = cert("client.pem");
	cr_assert_eq(open_opts(&o), BROOQ_EINVAL, "a certificate without its key");
	cr_assert(strstr(brooq_last_message(), "needs its key") != NULL, "%s", brooq_last_message());
	o.tls_key_file = cert("client.key");
	cr_assert_eq(open_opts(&o), BROOQ_OK, "%s", brooq_last_message());
	run("chmod 0644 %s/client.key", certs);
	cr_assert_eq(open_opts(&o), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "mode 0644 lets others read") != NULL, "%s",
		  brooq_last_message());
	cr_assert(strstr(brooq_last_message(), "-----") == NULL);
	run("chmod 0600 %s/client.key", certs);
	o.tls_key_file = cert("client2.key"); /* not the certificate's */
	cr_assert_eq(open_opts(&o), BROOQ_EINVAL);
	o.tls_cert_file = o.tls_key_file = NULL;

	/* The environment fills in what the options leave NULL, for tls+tcp:// only. */
	o.tls_ca_file = NULL;
	setenv("BROOQ_TLS_CA_FILE", cert("ca.pem"), 1);
	cr_assert_eq(open_opts(&o), BROOQ_OK, "%s", brooq_last_message());
	char ipc[128];
	snprintf(ipc, sizeof(ipc), "ipc://%s/none.sock", tmp);
	o.url = ipc;
	cr_assert_eq(open_opts(&o), BROOQ_OK, "the environment's CA is not for ipc://: %s",
		     brooq_last_message());
	unsetenv("BROOQ_TLS_CA_FILE");
	/* An option is: a TLS setting with a plain URL is a mistake worth an error. */
	o.tls_ca_file = cert("ca.pem");
	cr_assert_eq(open_opts(&o), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "tls_* options are for tls+tcp://") != NULL, "%s",
		  brooq_last_message());
}
