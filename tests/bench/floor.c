// SPDX-License-Identifier: MIT
// The transport's floor: NNG req/rep round trips over ipc with an echo server, no brooq at all;
// and under it, the kernel's: the same request and reply over a bare Unix socket.
//
// The NNG server runs in a child process with the gateway's pattern (one rep0 socket,
// many contexts, each an aio state machine that replies from NNG's callback thread);
// the clients are threads with a REQ socket each. What a ping costs above this is
// brooq's own (client library, decoding, auth, reply encoding). What the NNG echo
// costs above the bare socket is NNG's: its poller and task-queue threads hand each
// message on (docs/benchmarks.md, "the transport").
#include "bench.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#define ECHO_CTXS 64

typedef struct echo {
	nng_aio *aio;
	nng_ctx  ctx;
	bool     sending;
} echo;

static void
echo_cb(void *arg)
{
	echo *e  = arg;
	int   rv = nng_aio_result(e->aio);
	if (rv == NNG_ECLOSED)
		return;
	if (!e->sending && rv == 0) {
		nng_msg *m = nng_aio_get_msg(e->aio);
		e->sending = true;
		nng_aio_set_msg(e->aio, m);
		nng_ctx_send(e->ctx, e->aio);
		return;
	}
	if (e->sending && rv != 0)
		nng_msg_free(nng_aio_get_msg(e->aio));
	e->sending = false;
	nng_ctx_recv(e->ctx, e->aio);
}

static void
echo_server(const char *url)
{
	nng_socket  s;
	static echo e[ECHO_CTXS];
	if (nng_rep0_open(&s) != 0)
		_exit(1);
	for (int i = 0; i < ECHO_CTXS; i++)
		if (nng_aio_alloc(&e[i].aio, echo_cb, &e[i]) != 0 || nng_ctx_open(&e[i].ctx, s) != 0)
			_exit(1);
	if (nng_listen(s, url, NULL, 0) != 0)
		_exit(1);
	for (int i = 0; i < ECHO_CTXS; i++)
		nng_ctx_recv(e[i].ctx, e[i].aio);
	for (;;)
		pause();
}

// One client of either floor: a thread timing round trips until `seconds` have passed.
typedef struct rt_client {
	pthread_t          th;
	const char        *url; // the NNG floor's
	int                fd;  // the bare socket's: its end of the pair
	double             seconds;
	pthread_barrier_t *bar;
	bench_samples      lat;
} rt_client;

// Joins the n clients and reports their round trips under scen as the "raw" column:
// p50, p99 and calls per second. Frees their samples.
static void
join_and_report(const bench_opts *o, rt_client *t, int n, const char *scen)
{
	bench_samples all = {0};
	for (int i = 0; i < n; i++) {
		pthread_join(t[i].th, NULL);
		bench_samples_merge(&all, &t[i].lat);
		bench_samples_free(&t[i].lat);
	}
	bench_sort(all.v, all.n);
	bench_result(o, scen, "raw", "rtt_p50", "us", (double) bench_pct(all.v, all.n, 0.50) / 1e3);
	bench_result(o, scen, "raw", "rtt_p99", "us", (double) bench_pct(all.v, all.n, 0.99) / 1e3);
	bench_result(o, scen, "raw", "rate", "calls/s", (double) all.n / o->seconds);
	bench_samples_free(&all);
}

static void *
floor_main(void *arg)
{
	rt_client *t = arg;
	nng_socket s;
	if (nng_req0_open(&s) != 0 || nng_dial(s, t->url, NULL, NNG_FLAG_NONBLOCK) != 0)
		bench_die("floor: cannot dial %s", t->url);
	char payload[64];
	memset(payload, 'x', sizeof(payload));
	// Connected before the clock starts: one unmeasured round trip.
	for (int warm = 0; warm < 2; warm++) {
		if (nng_send(s, payload, sizeof(payload), 0) != 0)
			bench_die("floor: send");
		char  *buf = NULL;
		size_t len = 0;
		if (nng_recv(s, &buf, &len, NNG_FLAG_ALLOC) != 0)
			bench_die("floor: recv");
		nng_free(buf, len);
	}
	pthread_barrier_wait(t->bar);
	int64_t end = bench_now_ns() + (int64_t) (t->seconds * 1e9);
	for (;;) {
		int64_t t0 = bench_now_ns();
		if (t0 >= end)
			break;
		nng_msg *m;
		if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, payload, sizeof(payload)) != 0 ||
		    nng_sendmsg(s, m, 0) != 0)
			bench_die("floor: send");
		if (nng_recvmsg(s, &m, 0) != 0)
			bench_die("floor: recv");
		nng_msg_free(m);
		bench_samples_add(&t->lat, bench_now_ns() - t0);
	}
	nng_close(s);
	return NULL;
}

int
bench_floor(const bench_opts *o)
{
	char url[128];
	snprintf(url, sizeof(url), "ipc:///tmp/brooq-bench-floor-%ld.sock", (long) getpid());
	pid_t pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0)
		echo_server(url);
	bench_sleep_ns(200 * 1000000LL);

	int               n = o->producers;
	rt_client        *t = calloc((size_t) n, sizeof(*t));
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned) n);
	for (int i = 0; i < n; i++) {
		t[i] = (rt_client) {.url = url, .seconds = o->seconds, .bar = &bar};
		if (pthread_create(&t[i].th, NULL, floor_main, &t[i]) != 0)
			bench_die("pthread_create");
	}
	// Reported as the "raw" column of the ping rows: the floor under the gateway.
	char scen[32];
	snprintf(scen, sizeof(scen), "ping_c%d", n);
	join_and_report(o, t, n, scen);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(url + strlen("ipc://"));
	pthread_barrier_destroy(&bar);
	free(t);
	return 0;
}

// ---- the bare socket ------------------------------------------------------------------------

#define SOCK_MSG 64 // the NNG floor's payload size

// Reads or writes exactly SOCK_MSG bytes; false at end of stream or on an error.
static bool
sock_io(int fd, char *buf, bool rd)
{
	for (size_t at = 0; at < SOCK_MSG;) {
		ssize_t k = rd ? read(fd, buf + at, SOCK_MSG - at) : write(fd, buf + at, SOCK_MSG - at);
		if (k <= 0)
			return false;
		at += (size_t) k;
	}
	return true;
}

// The echo side: one blocking thread per connection, in the child process (killed
// by the parent once every client is done; a thread whose client closed just ends).
static void *
sock_echo_main(void *arg)
{
	int  fd = (int) (intptr_t) arg;
	char buf[SOCK_MSG];
	while (sock_io(fd, buf, true) && sock_io(fd, buf, false)) {
	}
	return NULL;
}

static void *
sock_main(void *arg)
{
	rt_client *t = arg;
	char       buf[SOCK_MSG];
	memset(buf, 'x', sizeof(buf));
	pthread_barrier_wait(t->bar);
	int64_t end = bench_now_ns() + (int64_t) (t->seconds * 1e9);
	for (;;) {
		int64_t t0 = bench_now_ns();
		if (t0 >= end)
			break;
		if (!sock_io(t->fd, buf, false) || !sock_io(t->fd, buf, true))
			bench_die("socket-ping: the echo went away");
		bench_samples_add(&t->lat, bench_now_ns() - t0);
	}
	return NULL;
}

// socket-ping: round trips of 64 bytes over a Unix stream socket pair per client,
// echoed by a thread of a child process: the kernel's part of any ipc round trip.
int
bench_socket_floor(const bench_opts *o)
{
	int        n = o->producers;
	rt_client *t = calloc((size_t) n, sizeof(*t));
	int(*sv)[2]  = calloc((size_t) n, sizeof(*sv));
	if (t == NULL || sv == NULL)
		bench_die("out of memory");
	for (int i = 0; i < n; i++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) != 0)
			bench_die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0) {
		for (int i = 0; i < n; i++) {
			pthread_t th;
			close(sv[i][0]);
			if (pthread_create(&th, NULL, sock_echo_main, (void *) (intptr_t) sv[i][1]) != 0)
				_exit(1);
		}
		for (;;)
			pause();
	}
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned) n);
	for (int i = 0; i < n; i++) {
		close(sv[i][1]);
		t[i] = (rt_client) {.fd = sv[i][0], .seconds = o->seconds, .bar = &bar};
		if (pthread_create(&t[i].th, NULL, sock_main, &t[i]) != 0)
			bench_die("pthread_create");
	}
	char scen[32];
	snprintf(scen, sizeof(scen), "socket_ping_c%d", n);
	join_and_report(o, t, n, scen);
	// The sockets close only now: a client done early must not end the echo under
	// the others (each echo thread ends when its client's socket closes).
	kill(pid, SIGKILL);
	for (int i = 0; i < n; i++)
		close(t[i].fd);
	waitpid(pid, NULL, 0);
	pthread_barrier_destroy(&bar);
	free(sv);
	free(t);
	return 0;
}
