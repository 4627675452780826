/* SPDX-License-Identifier: MIT */
/* The soak's attacks on the RPC endpoint: raw connections speaking SP by hand
 * (tests/support/sp.h, as any local process could), and libbrooq-client for the enqueues of
 * huge JSON numbers. Each loop ends with the attack (soak_running) and is bounded in
 * connections; it counts what the gateway did to it and never asserts: the report says
 * what happened. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <brooq/brooq.h>

#include "proto.h"
#include "soak.h"
#include "sp.h"
#include "tutil.h"

#define MAX_CONNS      100000 /* per thread: a bound on the reconnect loops */
#define PIPELINE       20000  /* requests a never-reading peer sends on one connection */
#define READS_IN_AIR   48
#define BIG_BYTES      (4 * 1024 * 1024 - 4096) /* just under the default request limit */
#define WRONG_TOKEN    "0000000000000000000000000000000000000000000000000000000000000000"
#define STALL_PAUSE_MS 100

bool
soak_running(void)
{
	return atomic_load(&soak.on) && brq_t_now_us() < soak.until_us;
}

bool
soak_await_close(int fd)
{
	while (soak_running()) {
		struct pollfd p = {.fd = fd, .events = POLLRDHUP};
		if (poll(&p, 1, 100) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
			return true;
	}
	return false;
}

/* The connection ended: by the gateway (closed) or by the attack's end (open_end). */
static void
conn_ended(soak_attack *a, int fd, bool by_gateway)
{
	atomic_fetch_add(by_gateway ? &a->t.closed : &a->t.open_end, 1);
	close(fd);
}

/* ---- 1. peers that pipeline requests and never read ------------------------------------ */

void *
soak_never_reads(void *arg)
{
	soak_attack *a     = arg;
	const char  *token = a->kind == 0 ? WRONG_TOKEN : soak.evil_token;
	brq_request  req   = {.op = BRQ_OP_PING, .rid = 1, .token = {token, strlen(token)}};
	size_t       len;
	void        *msg = brq_sp_request(&req, 0, &len);
	for (int c = 0; msg != NULL && c < MAX_CONNS && soak_running(); c++) {
		int fd = brq_sp_connect(soak.gw.url, 200);
		if (fd < 0) {
			atomic_fetch_add(&a->t.other, 1);
			brq_t_sleep_ms(50);
			continue;
		}
		atomic_fetch_add(&a->t.conns, 1);
		int rv = 1;
		for (int i = 0; i < PIPELINE && rv == 1 && soak_running(); i++)
			if ((rv = brq_sp_send(fd, 1, msg, len)) == 1)
				atomic_fetch_add(&a->t.sent, 1);
		/* Blocked (0) or all sent: the gateway must close it; gone (-1): it did. */
		conn_ended(a, fd, rv < 0 || soak_await_close(fd));
		brq_t_sleep_ms(20);
	}
	free(msg);
	return NULL;
}

/* ---- 2. one token's operator reads from several connections, read back -------------- */

/* Keeps READS_IN_AIR stats in flight on fd until the attack ends or the connection does;
 * true when the gateway ended it. */
static bool
stats_conn(soak_attack *a, int fd, unsigned char *rep, size_t cap)
{
	brq_limits lim;
	brq_arena  arena;
	uint32_t   id     = 0;
	int        in_air = 0;
	bool       gone   = false;
	brq_limits_default(&lim);
	brq_arena_init(&arena);
	while (!gone && (soak_running() || in_air > 0)) {
		while (soak_running() && in_air < READS_IN_AIR) {
			brq_request req = {.op = BRQ_OP_STATS, .rid = ++id};
			req.token       = (brq_str) {soak.evil_token, strlen(soak.evil_token)};
			if (brq_sp_send_request(fd, id, &req) != 1)
				break;
			atomic_fetch_add(&a->t.sent, 1);
			in_air++;
		}
		size_t len;
		if (brq_sp_recv_reply(fd, rep, cap, &len) != 1) {
			gone = true;
			break;
		}
		in_air--;
		brq_reply r;
		char      err[256];
		brq_arena_reset(&arena);
		if (brq_reply_decode(&r, BRQ_OP_STATS, rep, len, &lim, &arena, err, sizeof(err)) != BRQ_ST_OK)
			atomic_fetch_add(&a->t.other, 1);
		else if (r.code == BRQ_ST_RESOURCE_EXHAUSTED)
			atomic_fetch_add(&a->t.refused, 1);
		else
			atomic_fetch_add(r.code == BRQ_ST_OK ? &a->t.answered : &a->t.other, 1);
	}
	brq_arena_fini(&arena);
	return gone && soak_running();
}

void *
soak_stats_reader(void *arg)
{
	soak_attack   *a   = arg;
	size_t         cap = 1 << 20;
	unsigned char *rep = malloc(cap);
	for (int c = 0; rep != NULL && c < MAX_CONNS && soak_running(); c++) {
		int fd = brq_sp_connect(soak.gw.url, 5000);
		if (fd < 0) {
			atomic_fetch_add(&a->t.other, 1);
			brq_t_sleep_ms(50);
			continue;
		}
		atomic_fetch_add(&a->t.conns, 1);
		conn_ended(a, fd, stats_conn(a, fd, rep, cap));
	}
	free(rep);
	return NULL;
}

/* ---- 3. stalled bodies: the length of a big message, then nothing -------------------- */

void *
soak_stalled_body(void *arg)
{
	soak_attack *a = arg;
	for (int c = 0; c < MAX_CONNS && soak_running(); c++) {
		int fd = brq_sp_connect(soak.gw.url, 1000);
		if (fd < 0) {
			atomic_fetch_add(&a->t.other, 1);
			brq_t_sleep_ms(STALL_PAUSE_MS);
			continue;
		}
		atomic_fetch_add(&a->t.conns, 1);
		int rv = brq_sp_send_head(fd, 1, BIG_BYTES);
		if (rv == 1)
			atomic_fetch_add(&a->t.sent, 1);
		conn_ended(a, fd, rv < 0 || soak_await_close(fd));
		brq_t_sleep_ms(STALL_PAUSE_MS);
	}
	return NULL;
}

/* ---- 4. big requests with a wrong token (memory_test's flood) ------------------------ */

static void  *flood_msg;
static size_t flood_len;

void
soak_flood_init(void)
{
	/* A ping with a wrong token and a big unknown key: the gateway must read all of it
	 * before it can tell the token is wrong. */
	static const char wrong[] = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
	brq_request       req     = {.op = BRQ_OP_PING, .rid = 1, .token = {wrong, sizeof(wrong) - 1}};
	flood_msg                 = brq_sp_request(&req, BIG_BYTES, &flood_len);
}

void
soak_flood_fini(void)
{
	free(flood_msg);
	flood_msg = NULL;
}

/* Sends the big ping and reads its answer until the attack or the connection ends;
 * true when the gateway ended it. */
static bool
flood_conn(soak_attack *a, int fd, unsigned char *rep, size_t cap)
{
	while (soak_running()) {
		size_t len;
		if (brq_sp_send(fd, 1, flood_msg, flood_len) != 1)
			return soak_running();
		atomic_fetch_add(&a->t.sent, 1);
		if (brq_sp_recv_reply(fd, rep, cap, &len) != 1)
			return soak_running();
		atomic_fetch_add(&a->t.refused, 1); /* unauthenticated, or too large */
	}
	return false;
}

void *
soak_big_flood(void *arg)
{
	soak_attack   *a   = arg;
	size_t         cap = 1 << 16;
	unsigned char *rep = malloc(cap);
	for (int c = 0; rep != NULL && flood_msg != NULL && c < MAX_CONNS && soak_running(); c++) {
		int fd = brq_sp_connect(soak.gw.url, 2000);
		if (fd < 0) {
			atomic_fetch_add(&a->t.other, 1);
			brq_t_sleep_ms(5);
			continue;
		}
		atomic_fetch_add(&a->t.conns, 1);
		conn_ended(a, fd, flood_conn(a, fd, rep, cap));
	}
	free(rep);
	return NULL;
}

/* ---- 5. enqueues of JSON numbers that print far longer than they are written --------- */

#define NUM_BATCH 100

/* "[1e999,1e999,...]" of about 60 KiB: ~12,000 numbers of 1000 printed digits each,
 * ~12 MB on every read if it were stored. malloc'd. */
static char *
many_numbers(void)
{
	size_t n = 60 * 1024 / 6;
	char  *s = malloc(n * 6 + 3), *p = s;
	if (s == NULL)
		return NULL;
	*p++ = '[';
	for (size_t i = 0; i < n; i++) {
		memcpy(p, "1e999,", 6);
		p += 6;
	}
	p[-1] = ']';
	*p    = '\0';
	return s;
}

void *
soak_huge_numbers(void *arg)
{
	soak_attack         *a    = arg;
	brooq_client_opts    o    = {.size       = sizeof(o),
				     .url        = soak.gw.url,
				     .token_file = soak.evil_token_file,
				     .timeout_ms = 5000};
	brooq_client        *c    = NULL;
	char                *many = many_numbers();
	brooq_job_spec       specs[NUM_BATCH];
	brooq_enqueue_result res[NUM_BATCH];
	for (size_t i_ = 0; i_ < NUM_BATCH; i_++)
		res[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	for (int i = 0; i < NUM_BATCH; i++)
		specs[i] = (brooq_job_spec) {
			.size = sizeof(brooq_job_spec), .topic = "soak.evil", .payload = "[1e131071]"};
	if (many == NULL || brooq_client_open(&o, &c) != BROOQ_OK) {
		atomic_fetch_add(&a->t.other, 1);
		goto out;
	}
	atomic_fetch_add(&a->t.conns, 1);
	for (long i = 0; i < MAX_CONNS * 10L && soak_running(); i++) {
		brooq_job_spec one = {.size = sizeof(brooq_job_spec), .topic = "soak.evil", .payload = many};
		brooq_err      e =
                        i % 2 == 0 ? brooq_enqueue(c, specs, NUM_BATCH, res) : brooq_enqueue(c, &one, 1, res);
		atomic_fetch_add(&a->t.sent, 1);
		if (e == BROOQ_EINVALID_ARGUMENT)
			atomic_fetch_add(&a->t.refused, 1);
		else if (e == BROOQ_OK)
			atomic_fetch_add(&a->t.answered, 1); /* stored: the check did not hold */
		else
			atomic_fetch_add(&a->t.other, 1);
	}
	atomic_fetch_add(&a->t.open_end, 1);
out:
	brooq_client_close(c);
	free(many);
	return NULL;
}
