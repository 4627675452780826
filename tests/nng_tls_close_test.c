/* SPDX-License-Identifier: MIT */
/* The NNG brooq links (deploy/nng/tls-close-send.patch): a tls+tcp pipe that closes while
 * one of its transfers is finishing does not wedge NNG's reap thread.
 *
 * The tls transport writes a message in several steps on one lower aio and issues each
 * next step from that aio's callback. In unpatched 1.5.2 a pipe closed between a step's
 * completion and its callback got the next step issued on the closed aio, refused with
 * no callback: the REP pipe's send stayed queued forever and rep0_pipe_stop, on the reap
 * thread, waited for it for good. Every later teardown queues behind that thread, so
 * nng_close of any socket with pipes hangs (the gateway's self-probe, SIGTERM) and
 * closed connections keep their descriptors.
 *
 * The first test makes that order certain with the public API: it occupies every NNG
 * task thread (callbacks that wait), sends a reply, whose first step completes and
 * whose callback then waits for a thread, and closes the pipe meanwhile. The second
 * is how it was seen: peers that send requests, stop reading the replies, and go away;
 * it also catches the patch's second hole, a connection that failed under a pipe which
 * reads nothing: its reply then waited forever on a dead connection, the pipe never
 * closed, and the server answered nobody.
 * Both then require a new client to be served and closed, and the server to close,
 * within bounds (unpatched, both closes hang). Certificates: tests/support/tls_certs.sh. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <nng/supplemental/util/platform.h>

#include "tutil.h"

/* A close that has not returned by then is taken for hung (it returns in milliseconds;
 * the bound leaves room for a loaded machine and the sanitizer build). */
#define CLOSE_BOUND_MS 8000
#define REPLY_BOUND_MS 5000
#define N_HOLD         64 /* more callbacks than NNG has task threads (2 per CPU, at most 16) */
#define N_WORKERS      8
#define N_PEERS        40
#define REQ_LEN        65536

TestSuite(nng_tls_close, .timeout = 60);

static char            dir[64];
static char            url[64];
static nng_tls_config *client_cfg;
static nng_socket      srv;

static void
run(const char *cmd)
{
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

/* The whole file as a string; the caller frees it. */
static char *
slurp(const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	char  *buf = calloc(1, 16384);
	size_t n   = fread(buf, 1, 16383, f);
	fclose(f);
	cr_assert_gt(n, 0);
	return buf;
}

/* Certificates, the server: a REP socket listening on tls+tcp, and the clients' config. */
static void
setup(void)
{
	const char *src = getenv("BROOQ_SOURCE_DIR");
	cr_assert_not_null(src, "BROOQ_SOURCE_DIR is set by ctest");
	snprintf(dir, sizeof(dir), "/tmp/brq_tls_close_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "%s/tests/support/tls_certs.sh %s", src, dir);
	run(cmd);
	snprintf(url, sizeof(url), "tls+tcp://127.0.0.1:%d", brq_t_free_port());

	nng_tls_config *cfg;
	nng_listener    l;
	char           *cert = slurp("server.pem"), *key = slurp("server.key");
	cr_assert_eq(nng_tls_config_alloc(&cfg, NNG_TLS_MODE_SERVER), 0);
	cr_assert_eq(nng_tls_config_own_cert(cfg, cert, key, NULL), 0);
	free(cert);
	free(key);
	cr_assert_eq(nng_rep0_open(&srv), 0);
	cr_assert_eq(nng_socket_set_size(srv, NNG_OPT_RECVMAXSZ, 0), 0);
	cr_assert_eq(nng_listener_create(&l, srv, url), 0);
	cr_assert_eq(nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg), 0);
	cr_assert_eq(nng_listener_start(l, 0), 0);
	nng_tls_config_free(cfg); /* the listener holds its own reference */
	cr_assert_eq(nng_tls_config_alloc(&client_cfg, NNG_TLS_MODE_CLIENT), 0);
	cr_assert_eq(nng_tls_config_auth_mode(client_cfg, NNG_TLS_AUTH_MODE_NONE), 0);
}

static void
teardown(void)
{
	nng_tls_config_free(client_cfg);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	run(cmd);
}

static void *
close_thread(void *arg)
{
	nng_close(*(nng_socket *) arg);
	return NULL;
}

/* nng_close(s) on a thread of its own; false if it has not returned within bound_ms
 * (the thread is then left behind, hung). */
static bool
close_within(nng_socket s, int bound_ms)
{
	static nng_socket sockets[8];
	static int        n;
	nng_socket       *sp = &sockets[n++ % 8];
	*sp                  = s;
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, close_thread, sp), 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += bound_ms / 1000;
	ts.tv_nsec += (long) (bound_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

/* A new client (REQ over TLS, as the self-probe dials) gets its reply from the server's
 * echo, and its own socket closes. */
static void
assert_new_client_served(const char *when)
{
	nng_socket r;
	nng_dialer d;
	cr_assert_eq(nng_req0_open(&r), 0);
	cr_assert_eq(nng_socket_set_ms(r, NNG_OPT_RECVTIMEO, REPLY_BOUND_MS), 0);
	cr_assert_eq(nng_socket_set_ms(r, NNG_OPT_SENDTIMEO, REPLY_BOUND_MS), 0);
	cr_assert_eq(nng_dialer_create(&d, r, url), 0);
	cr_assert_eq(nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, client_cfg), 0);
	cr_assert_eq(nng_dialer_start(d, 0), 0, "%s: dial", when);
	char  *buf = NULL;
	size_t sz  = 0;
	int    rv  = nng_send(r, "ping", 4, 0);
	if (rv == 0)
		rv = nng_recv(r, &buf, &sz, NNG_FLAG_ALLOC);
	cr_assert_eq(rv, 0, "%s: a new client got no reply: %s", when, nng_strerror(rv));
	cr_assert(sz == 4 && memcmp(buf, "ping", 4) == 0);
	nng_free(buf, sz);
	cr_assert(close_within(r, CLOSE_BOUND_MS),
		  "%s: a client socket did not close (NNG's reap thread is stuck)", when);
}

/* The server's echo: N_WORKERS contexts, each receiving and sending the request back. */
typedef struct worker {
	nng_ctx  ctx;
	nng_aio *aio;
	bool     sending;
} worker;

static worker workers[N_WORKERS];

static void
worker_cb(void *arg)
{
	worker *w = arg;
	if (w->sending) {
		if (nng_aio_result(w->aio) != 0)
			nng_msg_free(nng_aio_get_msg(w->aio));
		w->sending = false;
		nng_ctx_recv(w->ctx, w->aio);
		return;
	}
	if (nng_aio_result(w->aio) != 0)
		return; /* the socket closed */
	w->sending = true;
	nng_ctx_send(w->ctx, w->aio);
}

static void
start_echo(void)
{
	for (int i = 0; i < N_WORKERS; i++) {
		cr_assert_eq(nng_ctx_open(&workers[i].ctx, srv), 0);
		cr_assert_eq(nng_aio_alloc(&workers[i].aio, worker_cb, &workers[i]), 0);
		nng_ctx_recv(workers[i].ctx, workers[i].aio);
	}
}

static void
stop_echo(void)
{
	for (int i = 0; i < N_WORKERS; i++) {
		nng_aio_stop(workers[i].aio);
		nng_msg_free(nng_aio_get_msg(workers[i].aio));
		nng_aio_free(workers[i].aio);
	}
}

/* A REQ peer by hand over a raw TLS stream, which reads only when asked to. */
static nng_stream *
peer_dial(void)
{
	nng_stream_dialer *d;
	nng_aio           *aio;
	cr_assert_eq(nng_stream_dialer_alloc(&d, url), 0);
	cr_assert_eq(nng_stream_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, client_cfg), 0);
	cr_assert_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
	nng_aio_set_timeout(aio, REPLY_BOUND_MS);
	nng_stream_dialer_dial(d, aio);
	nng_aio_wait(aio);
	cr_assert_eq(nng_aio_result(aio), 0, "dial: %s", nng_strerror(nng_aio_result(aio)));
	nng_stream *s = nng_aio_get_output(aio, 0);
	nng_aio_free(aio);
	nng_stream_dialer_free(d);
	return s;
}

/* Sends all of buf; the NNG error when a step takes longer than timeout_ms. */
static int
peer_send(nng_stream *s, const void *buf, size_t len, int timeout_ms)
{
	nng_aio *aio;
	int      rv = 0;
	cr_assert_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
	nng_aio_set_timeout(aio, timeout_ms);
	for (size_t off = 0; off < len && rv == 0; off += nng_aio_count(aio)) {
		nng_iov iov = {.iov_buf = (char *) buf + off, .iov_len = len - off};
		cr_assert_eq(nng_aio_set_iov(aio, 1, &iov), 0);
		nng_stream_send(s, aio);
		nng_aio_wait(aio);
		rv = nng_aio_result(aio);
	}
	nng_aio_free(aio);
	return rv;
}

/* The SP header of a REQ peer, then one request of body_len bytes (request id first). */
static int
peer_request(nng_stream *s, int id, size_t body_len, int timeout_ms)
{
	static const unsigned char hdr[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
	unsigned char             *m      = calloc(1, 8 + 8 + body_len);
	size_t                     n      = 0;
	if (id == 0) {
		memcpy(m, hdr, sizeof(hdr));
		n = sizeof(hdr);
	}
	for (int k = 0; k < 8; k++)
		m[n++] = (unsigned char) ((uint64_t) body_len >> (56 - 8 * k));
	m[n++] = 0x80;
	m[n++] = (unsigned char) (id >> 16);
	m[n++] = (unsigned char) (id >> 8);
	m[n++] = (unsigned char) id;
	n += body_len - 4;
	int rv = peer_send(s, m, n, timeout_ms);
	free(m);
	return rv;
}

static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  hold_cv = PTHREAD_COND_INITIALIZER;
static bool            holding;
static atomic_int      held;

static void
hold_cb(void *arg)
{
	(void) arg;
	atomic_fetch_add(&held, 1);
	pthread_mutex_lock(&hold_mu);
	while (holding)
		pthread_cond_wait(&hold_cv, &hold_mu);
	pthread_mutex_unlock(&hold_mu);
}

Test(nng_tls_close, a_pipe_closed_between_two_steps_of_a_reply_leaves_the_reap_thread_free, .init = setup,
     .fini = teardown)
{
	nng_stream *peer = peer_dial();
	cr_assert_eq(peer_request(peer, 0, 20, REPLY_BOUND_MS), 0);
	nng_ctx  ctx;
	nng_aio *aio;
	cr_assert_eq(nng_ctx_open(&ctx, srv), 0);
	cr_assert_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
	nng_aio_set_timeout(aio, REPLY_BOUND_MS);
	nng_ctx_recv(ctx, aio);
	nng_aio_wait(aio);
	cr_assert_eq(nng_aio_result(aio), 0, "the request: %s", nng_strerror(nng_aio_result(aio)));
	nng_pipe pipe = nng_msg_get_pipe(nng_aio_get_msg(aio));

	/* Every task thread waits in hold_cb (the count stops growing once all are). */
	nng_aio *hold[N_HOLD];
	holding = true;
	for (int i = 0; i < N_HOLD; i++) {
		cr_assert_eq(nng_aio_alloc(&hold[i], hold_cb, NULL), 0);
		nng_sleep_aio(0, hold[i]);
	}
	for (int last = -1; last != atomic_load(&held);) {
		last = atomic_load(&held);
		nng_msleep(200);
	}
	cr_assert_gt(atomic_load(&held), 0);
	cr_assert_lt(atomic_load(&held), N_HOLD, "more task threads than callbacks to hold them");
	/* The reply's first step (its length) is written here; its callback must wait. */
	nng_aio_set_timeout(aio, NNG_DURATION_DEFAULT);
	nng_ctx_send(ctx, aio);
	cr_assert_eq(nng_pipe_close(pipe), 0);
	pthread_mutex_lock(&hold_mu);
	holding = false;
	pthread_cond_broadcast(&hold_cv);
	pthread_mutex_unlock(&hold_mu);
	nng_aio_wait(aio);
	if (nng_aio_result(aio) != 0)
		nng_msg_free(nng_aio_get_msg(aio));
	for (int i = 0; i < N_HOLD; i++)
		nng_aio_free(hold[i]);
	nng_stream_close(peer);
	nng_stream_free(peer);

	start_echo();
	assert_new_client_served("after the close");
	cr_assert(close_within(srv, CLOSE_BOUND_MS),
		  "the server socket did not close (NNG's reap thread is stuck)");
	stop_echo();
	nng_aio_free(aio);
}

Test(nng_tls_close, peers_that_stop_reading_and_go_away_leave_the_server_serving_and_closable, .init = setup,
     .fini = teardown)
{
	start_echo();
	/* Two waves: the second hole (a connection failed under a pipe that reads nothing)
	 * shows in about 2 of 3 waves without its fix, the first in every one. */
	for (int wave = 0; wave < 2; wave++) {
		int sent = 0;
		for (int c = 0; c < N_PEERS; c++) {
			nng_stream *peer = peer_dial();
			/* A few requests up to a few MiB: the server replies into buffers nobody
			 * reads, and stops reading once its workers are all blocked sending; the
			 * peer's send then times out and it goes away with the replies unread. */
			int n = 1 + (c * 7) % 30;
			for (int i = 0; i < n && peer_request(peer, i, REQ_LEN, 200) == 0; i++)
				sent++;
			nng_stream_close(peer);
			nng_stream_free(peer);
		}
		cr_assert_gt(sent, N_PEERS);
		assert_new_client_served(wave == 0 ? "after the first peers left"
						   : "after the second peers left");
	}
	cr_assert(close_within(srv, CLOSE_BOUND_MS),
		  "the server socket did not close (NNG's reap thread is stuck)");
	stop_echo();
}
