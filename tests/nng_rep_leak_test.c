/* SPDX-License-Identifier: MIT */
/* The NNG brooq links (deploy/nng/rep0-reply-leak.patch, NNG issue #1713): a reply sent
 * while its pipe is closing is freed, not lost.
 *
 * rep0_pipe_close closes the pipe's send aio, then takes the socket lock and removes the
 * pipe. A reply sent in between still finds the pipe and hands its message to the
 * closed aio; unpatched 1.5.2's transport then drops the send without a callback and
 * nothing frees the message (about 1 % of connect, send, close connections in brooq).
 * The window is a few instructions wide, so the test holds it open: the binary is linked
 * with -Wl,--wrap=nni_aio_close (tests/CMakeLists.txt), and the first nni_aio_close
 * after the test arms it, which is rep0_pipe_close's (the server is otherwise idle),
 * waits inside the window until the reply has been sent.
 *
 * The messages are counted with the rx budget (deploy/nng/rx-budget.patch): the server
 * sends each received request back as its reply, so each one is charged to the budget
 * until it is freed. Every message must be freed once the socket is closed; in the
 * sanitizer build a lost one is also a LeakSanitizer report. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>

#include "tutil.h"

#define ROUNDS   8
#define BODY_LEN 20 /* request id + 16 bytes */
#define WAIT_S   3

/* The test seam: NNG's own nni_aio_close, and this file's wrapper around it. */
void __real_nni_aio_close(void *aio);
void __wrap_nni_aio_close(void *aio);

static atomic_int armed;
static sem_t      in_window; /* rep0_pipe_close is between its aio close and its lock */
static sem_t      replied;   /* the reply has been sent: let the close go on */

static struct timespec
deadline(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_S;
	return ts;
}

void
__wrap_nni_aio_close(void *aio)
{
	__real_nni_aio_close(aio);
	if (atomic_exchange(&armed, 0)) {
		sem_post(&in_window);
		struct timespec ts = deadline();
		while (sem_timedwait(&replied, &ts) != 0 && errno == EINTR) {
		}
	}
}

/* A connected raw client socket: tcp to 127.0.0.1:port, or ipc at path. */
static int
dial_raw(bool ipc, const char *path, int port)
{
	int fd = socket(ipc ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	int rv;
	if (ipc) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		rv = connect(fd, (struct sockaddr *) &a, sizeof(a));
	} else {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
		a.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
		rv                   = connect(fd, (struct sockaddr *) &a, sizeof(a));
	}
	cr_assert_eq(rv, 0, "connect: %s", strerror(errno));
	return fd;
}

/* A REQ peer by hand: the SP header, one request (ipc frames carry a type byte), then
 * the server's header read, so that the close that follows is an orderly one. */
static void
send_request(int fd, bool ipc, int id)
{
	unsigned char       b[64];
	size_t              n      = 0;
	const unsigned char hdr[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0}; /* req0 */
	memcpy(b, hdr, sizeof(hdr));
	n = sizeof(hdr);
	if (ipc)
		b[n++] = 1;
	for (int k = 0; k < 8; k++)
		b[n++] = k == 7 ? BODY_LEN : 0;
	b[n++] = 0x80; /* the request id, end of the backtrace */
	b[n++] = 0;
	b[n++] = 0;
	b[n++] = (unsigned char) id;
	memset(b + n, 'x', BODY_LEN - 4);
	n += BODY_LEN - 4;
	cr_assert_eq(write(fd, b, n), (ssize_t) n);
	size_t got = 0;
	while (got < 8) {
		ssize_t r = read(fd, b + got, 8 - got);
		cr_assert_gt(r, 0, "the server's SP header");
		got += (size_t) r;
	}
}

static void
reply_as_pipe_closes(bool ipc)
{
	char path[64], url[96];
	int  port = brq_t_free_port();
	snprintf(path, sizeof(path), "/tmp/brq_rep_leak_%d.sock", (int) getpid());
	if (ipc)
		snprintf(url, sizeof(url), "ipc://%s", path);
	else
		snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	cr_assert_eq(sem_init(&in_window, 0, 0), 0);
	cr_assert_eq(sem_init(&replied, 0, 0), 0);
	nng_rx_budget_set((size_t) 1 << 40, 0, 0); /* charge every message, refuse none */

	nng_socket s;
	nng_ctx    ctx;
	nng_aio   *aio;
	cr_assert_eq(nng_rep0_open(&s), 0);
	cr_assert_eq(nng_listen(s, url, NULL, 0), 0);
	cr_assert_eq(nng_ctx_open(&ctx, s), 0);
	cr_assert_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
	int held = 0;
	for (int r = 0; r < ROUNDS; r++) {
		int fd = dial_raw(ipc, path, port);
		send_request(fd, ipc, r);
		nng_ctx_recv(ctx, aio);
		nng_aio_wait(aio);
		cr_assert_eq(nng_aio_result(aio), 0, "round %d: receive", r);
		atomic_store(&armed, 1);
		close(fd); /* the server sees the end of the stream and closes the pipe */
		struct timespec ts = deadline();
		if (sem_timedwait(&in_window, &ts) == 0)
			held++;
		nng_ctx_send(ctx, aio); /* the request goes back as the reply */
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0)
			nng_msg_free(nng_aio_get_msg(aio));
		sem_post(&replied);
		atomic_store(&armed, 0);
	}
	nng_aio_free(aio);
	nng_close(s);
	unlink(path);
	cr_assert_eq(held, ROUNDS, "the close was held open in %d of %d rounds: the test proves nothing",
		     held, ROUNDS);
	uint64_t used = 1, refused;
	for (int i = 0; i < 200 && used != 0; i++) {
		nng_rx_budget_stats(&used, &refused);
		if (used != 0)
			nng_msleep(10);
	}
	cr_assert_eq(used, 0, "%llu of %d replies sent as their pipe closed were never freed",
		     (unsigned long long) (used / BODY_LEN), ROUNDS);
}

Test(nng_rep_leak, a_reply_sent_as_its_tcp_pipe_closes_is_freed, .timeout = 60)
{
	reply_as_pipe_closes(false);
}

Test(nng_rep_leak, a_reply_sent_as_its_ipc_pipe_closes_is_freed, .timeout = 60)
{
	reply_as_pipe_closes(true);
}
