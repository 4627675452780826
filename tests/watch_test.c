/* SPDX-License-Identifier: MIT */
/* The watch op against a real gateway and PostgreSQL: a watch hears the cancels of running jobs of
 * its topics at once (and nothing else), through any gateway; its cursor, resync, bounds, a peer
 * that goes away, a listener that loses its connection, a stop. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

static char    *dsn;
static brq_gw   gw, gw2;
static bool     gw2_up;
static uint16_t port; /* gw's /metrics */
static PGconn  *db;

static void
setup(void)
{
	dsn  = brq_testdb_create(true);
	port = brq_gw_start_http(&gw, dsn, NULL);
	db   = brq_testdb_connect(dsn);
}

static void
teardown(void)
{
	if (db != NULL)
		PQfinish(db);
	if (gw.pid > 0)
		brq_gw_stop(&gw);
	if (gw2_up)
		brq_gw_stop(&gw2);
	brq_testdb_drop(dsn);
}

/* One suite only (tests/CMakeLists.txt: a suite that forks the gateway runs alone). */
TestSuite(watch, .init = setup, .fini = teardown, .timeout = 120);

#define now_us   brq_t_now_us
#define sleep_ms brq_t_sleep_ms

/* ---- plain calls ------------------------------------------------------------------------ */

static uint64_t
enqueue(const char *topic)
{
	brq_arena    a;
	brq_reply    rep;
	void        *keep = NULL;
	brq_job_spec j    = {.topic = brq_str_c(topic), .payload = brq_str_c("{}")};
	brq_request  req  = {.op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {&j, 1}};
	brq_arena_init(&a);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &a, &keep), BRQ_ST_OK);
	uint64_t id = rep.enqueue.results[0].id;
	free(keep);
	brq_arena_fini(&a);
	return id;
}

/* Claims one job of topic (it must be ready): it is processing from now on. */
static uint64_t
claim(const char *topic)
{
	brq_arena   a;
	brq_reply   rep;
	void       *keep = NULL;
	brq_str     t    = brq_str_c(topic);
	brq_request req  = {.op    = BRQ_OP_CLAIM,
			    .token = brq_gw_worker(&gw),
			    .claim = {.worker = brq_str_c("watch_test"), .topics = &t, .n_topics = 1, .n = 1}};
	brq_arena_init(&a);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &a, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.claim.n_jobs, 1, "nothing to claim in %s", topic);
	uint64_t id = rep.claim.jobs[0].id;
	free(keep);
	brq_arena_fini(&a);
	return id;
}

static void
cancel_via(const brq_gw *g, uint64_t id)
{
	brq_arena   a;
	brq_reply   rep;
	void       *keep = NULL;
	brq_request req  = {.op = BRQ_OP_CANCEL, .token = brq_gw_admin(g), .cancel.id = id};
	brq_arena_init(&a);
	cr_assert_eq(brq_gw_call(g, &req, &rep, &a, &keep), BRQ_ST_OK);
	cr_assert(rep.cancel.canceled);
	free(keep);
	brq_arena_fini(&a);
}

/* ---- watches in flight -------------------------------------------------------------------- */

/* A REQ socket of its own: one connection, any number of watches on it. */
static nng_socket
conn_open(const brq_gw *g)
{
	nng_socket s;
	cr_assert_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	cr_assert_eq(nng_dial(s, g->url, NULL, 0), 0);
	return s;
}

/* One watch sent and its reply awaited in the background. */
typedef struct pending {
	atomic_int done; /* aio completions: the send, then the reply */
	nng_ctx    ctx;
	nng_aio   *aio;
	brq_arena  a;
	brq_reply  rep;
	nng_msg   *msg;
	char       next[BRQ_CURSOR_MAX + 1];
} pending;

static void
pending_cb(void *arg)
{
	atomic_fetch_add(&((pending *) arg)->done, 1);
}

static void
watch_begin(pending *p, nng_socket s, const brq_gw *g, const char *topic, const char *cursor,
	    uint32_t wait_ms)
{
	brq_buf     b;
	nng_msg    *m   = NULL;
	brq_str     t   = brq_str_c(topic);
	brq_request req = {.op    = BRQ_OP_WATCH,
			   .rid   = 5,
			   .token = brq_gw_worker(g),
			   .watch = {.topics      = &t,
				     .n_topics    = 1,
				     .cursor      = brq_str_c(cursor),
				     .has_wait_ms = wait_ms > 0,
				     .wait_ms     = wait_ms}};
	memset(p, 0, sizeof(*p));
	brq_arena_init(&p->a);
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	cr_assert_eq(nng_msg_alloc(&m, 0), 0);
	cr_assert_eq(nng_msg_append(m, b.data, b.len), 0);
	brq_buf_fini(&b);
	cr_assert_eq(nng_ctx_open(&p->ctx, s), 0);
	cr_assert_eq(nng_aio_alloc(&p->aio, pending_cb, p), 0);
	nng_aio_set_timeout(p->aio, 5000);
	nng_aio_set_msg(p->aio, m);
	nng_ctx_send(p->ctx, p->aio);
	nng_aio_wait(p->aio);
	cr_assert_eq(nng_aio_result(p->aio), 0, "watch not sent");
	nng_aio_set_timeout(p->aio, (nng_duration) wait_ms + 20000);
	nng_ctx_recv(p->ctx, p->aio);
}

static bool
watch_is_answered(pending *p)
{
	return atomic_load(&p->done) >= 2;
}

/* Waits for p's reply: its status (the reply in p->rep, its cursor in p->next). */
static brq_status
watch_end(pending *p)
{
	char       err[256];
	brq_limits lim;
	brq_limits_default(&lim);
	nng_aio_wait(p->aio);
	cr_assert_eq(nng_aio_result(p->aio), 0, "no reply to the watch: %s",
		     nng_strerror(nng_aio_result(p->aio)));
	p->msg = nng_aio_get_msg(p->aio);
	cr_assert_eq(brq_reply_decode(&p->rep, BRQ_OP_WATCH, nng_msg_body(p->msg), nng_msg_len(p->msg), &lim,
				      &p->a, err, sizeof(err)),
		     BRQ_ST_OK, "%s", err);
	if (p->rep.code == BRQ_ST_OK) {
		memcpy(p->next, p->rep.watch.next.ptr, p->rep.watch.next.len);
		p->next[p->rep.watch.next.len] = '\0';
	}
	return p->rep.code;
}

static void
pending_fini(pending *p)
{
	nng_aio_stop(p->aio);
	nng_aio_free(p->aio);
	nng_ctx_close(p->ctx);
	nng_msg_free(p->msg);
	brq_arena_fini(&p->a);
}

/* A watch answered at once (wait_ms 0): its reply in *p (pending_fini it). */
static void
watch_now(pending *p, nng_socket s, const brq_gw *g, const char *topic, const char *cursor)
{
	watch_begin(p, s, g, topic, cursor, 0);
	cr_assert_eq(watch_end(p), BRQ_ST_OK, "watch: %.*s", (int) p->rep.msg.len, p->rep.msg.ptr);
}

/* A fresh cursor of g for topic (a first watch: resync), once g's listener listens
 * (before, the cursor is one no epoch accepts: "0000000000000000.0"). */
static void
fresh_cursor(nng_socket s, const brq_gw *g, const char *topic, char out[BRQ_CURSOR_MAX + 1])
{
	int64_t until = now_us() + 10000000;
	do {
		pending p;
		watch_now(&p, s, g, topic, "");
		cr_assert(p.rep.watch.resync, "a first watch is a resync");
		cr_assert_eq(p.rep.watch.n_canceled, 0);
		strcpy(out, p.next);
		pending_fini(&p);
	} while (strncmp(out, "0000000000000000.", 17) == 0 && now_us() < until && (sleep_ms(20), true));
	cr_assert_neq(strncmp(out, "0000000000000000.", 17), 0, "the listener never listened");
}

/* Waits until p is parked (the gateway's brooq_watches at want, p unanswered: true) or
 * answered (false); one neither within 10 s fails the test. */
static bool
watch_parks(pending *p, uint16_t http_port, long long want)
{
	for (int waited = 0; waited < 10000; waited += 10) {
		if (watch_is_answered(p))
			return false;
		if (brq_gw_metric(http_port, "brooq_watches") == want && !watch_is_answered(p))
			return true;
		sleep_ms(10);
	}
	cr_assert_fail("the watch neither parked nor was answered in 10 s");
	return false;
}

/* ---- tests --------------------------------------------------------------------------------- */

Test(watch, hears_at_once_the_cancel_of_a_running_job_of_its_topic_and_nothing_else)
{
	nng_socket s = conn_open(&gw);
	char       c0[BRQ_CURSOR_MAX + 1];
	cr_assert(brq_gw_wait_metric(port, "brooq_cancel_listener_up", 1, 10000),
		  "the listener never listened");
	fresh_cursor(s, &gw, "t.a", c0);
	pending p;
	watch_now(&p, s, &gw, "t.a", c0); /* our own cursor: nothing to tell, no resync */
	cr_assert_not(p.rep.watch.resync);
	cr_assert_eq(p.rep.watch.n_canceled, 0);
	pending_fini(&p);

	enqueue("t.a");
	enqueue("t.b");
	uint64_t run_a = claim("t.a"), run_b = claim("t.b");
	uint64_t pend_a = enqueue("t.a");

	watch_begin(&p, s, &gw, "t.a", c0, 30000);
	cr_assert(brq_gw_wait_metric(port, "brooq_watches", 1, 5000), "the watch never parked");
	cancel_via(&gw, pend_a); /* not running: not announced */
	cancel_via(&gw, run_b);  /* running, another topic */
	/* Once the gateway has heard run_b's cancel (the only one announced), a watch it
	 * wrongly woke has its answer on the way: no fixed wait. A late wrong answer is
	 * caught below too: it would not hold exactly run_a. */
	cr_assert(brq_gw_wait_metric(port, "brooq_cancels_heard_total", 1, 10000),
		  "run_b's cancel was never heard");
	cr_assert_not(watch_is_answered(&p), "woken by a cancel it does not watch");

	cancel_via(&gw, run_a);
	int64_t t0 = now_us();
	cr_assert_eq(watch_end(&p), BRQ_ST_OK);
	double ms = (double) (now_us() - t0) / 1000.0;
	fprintf(stderr, "watch_test: a parked watch heard the cancel %.1f ms after the cancel's answer\n",
		ms);
	cr_assert_lt(ms, 5000.0);
	cr_assert_not(p.rep.watch.resync);
	cr_assert_eq(p.rep.watch.n_canceled, 1, "got %u ids", p.rep.watch.n_canceled);
	cr_assert_eq(p.rep.watch.canceled[0], run_a);
	char c1[BRQ_CURSOR_MAX + 1];
	strcpy(c1, p.next);
	pending_fini(&p);

	watch_now(&p, s, &gw, "t.a", c1); /* told once per cursor */
	cr_assert_eq(p.rep.watch.n_canceled, 0);
	pending_fini(&p);
	watch_now(&p, s, &gw, "t.a", c0); /* an older cursor hears it again */
	cr_assert_eq(p.rep.watch.n_canceled, 1);
	cr_assert_eq(p.rep.watch.canceled[0], run_a);
	pending_fini(&p);
	watch_now(&p, s, &gw, "t.b", c0); /* and t.b's watch its own */
	cr_assert_eq(p.rep.watch.n_canceled, 1);
	cr_assert_eq(p.rep.watch.canceled[0], run_b);
	pending_fini(&p);
	watch_now(&p, s, &gw, "t.a", "0123456789abcdef.1"); /* not one of ours */
	cr_assert(p.rep.watch.resync);
	pending_fini(&p);
	nng_close(s);
}

Test(watch, hears_a_cancel_made_through_another_gateway)
{
	brq_gw_start(&gw2, dsn, NULL);
	gw2_up       = true;
	nng_socket s = conn_open(&gw);
	char       c0[BRQ_CURSOR_MAX + 1];
	cr_assert(brq_gw_wait_metric(port, "brooq_cancel_listener_up", 1, 10000));
	fresh_cursor(s, &gw, "t.x", c0);
	enqueue("t.x");
	uint64_t id = claim("t.x");
	pending  p;
	watch_begin(&p, s, &gw, "t.x", c0, 30000);
	cr_assert(brq_gw_wait_metric(port, "brooq_watches", 1, 5000));
	cancel_via(&gw2, id);
	int64_t t0 = now_us();
	cr_assert_eq(watch_end(&p), BRQ_ST_OK);
	fprintf(stderr, "watch_test: a cancel through another gateway reached the watch in %.1f ms\n",
		(double) (now_us() - t0) / 1000.0);
	cr_assert_eq(p.rep.watch.n_canceled, 1);
	cr_assert_eq(p.rep.watch.canceled[0], id);
	pending_fini(&p);

	/* gw's cursor means nothing to gw2: resync, and a cursor of gw2's own. */
	nng_socket s2 = conn_open(&gw2);
	watch_now(&p, s2, &gw2, "t.x", c0);
	cr_assert(p.rep.watch.resync);
	cr_assert_eq(p.rep.watch.n_canceled, 0);
	pending_fini(&p);
	nng_close(s2);
	nng_close(s);
}

Test(watch, a_connection_holds_at_most_sixteen_and_the_gateway_max_watches)
{
	nng_socket s = conn_open(&gw);
	pending    p[17];
	char       c[BRQ_CURSOR_MAX + 1];
	/* Without a cursor a watch is answered at once. Its share of s would come back only
	 * once its reply has left (quota.h), which the gateway may learn after we read it: the
	 * cursor is the gateway's, so another connection asks for it. */
	nng_socket s0 = conn_open(&gw);
	fresh_cursor(s0, &gw, "t.q", c);
	nng_close(s0);
	for (int i = 0; i < 16; i++)
		watch_begin(&p[i], s, &gw, "t.q", c, 30000);
	cr_assert(brq_gw_wait_metric(port, "brooq_watches", 16, 5000));
	watch_begin(&p[16], s, &gw, "t.q", c, 30000);
	cr_assert_eq(watch_end(&p[16]), BRQ_ST_RESOURCE_EXHAUSTED);
	cr_assert(memmem(p[16].rep.msg.ptr, p[16].rep.msg.len, "on this connection", 18) != NULL, "%.*s",
		  (int) p[16].rep.msg.len, p[16].rep.msg.ptr);
	pending_fini(&p[16]);
	/* Another connection still may. */
	nng_socket s2 = conn_open(&gw);
	pending    q;
	watch_now(&q, s2, &gw, "t.q", c);
	pending_fini(&q);
	/* The peer goes away: its parked watches go with it, at once. */
	nng_close(s);
	cr_assert(brq_gw_wait_metric(port, "brooq_watches", 0, 5000),
		  "watches of a closed connection stayed");
	for (int i = 0; i < 16; i++)
		pending_fini(&p[i]);
	nng_close(s2);

	/* A gateway with BROOQ_MAX_WATCHES=1: the second watch anywhere is refused. */
	static const char *env[] = {"BROOQ_MAX_WATCHES=1", NULL};
	uint16_t           port2 = brq_gw_start_http(&gw2, dsn, env);
	gw2_up                   = true;
	nng_socket a = conn_open(&gw2), b = conn_open(&gw2);
	char       c2[BRQ_CURSOR_MAX + 1];
	cr_assert(brq_gw_wait_metric(port2, "brooq_cancel_listener_up", 1, 10000));
	fresh_cursor(a, &gw2, "t.q", c2);
	/* Parked: it answers only at a cancel or in 30 s. A watch answered before it parked
	 * is asked again: told to resync (the gateway's listener reconnected, as it may on a
	 * loaded machine), from the cursor it gave; refused for BROOQ_MAX_WATCHES, because the
	 * one watch allowed was still the cursor's: an answered watch gives its share back
	 * when its reply has left (the send's completion, quota.h), and we may read the reply
	 * before the gateway hears that it left. A share that never came back fails the test
	 * within 5 s. */
	int64_t until = now_us() + 5000000;
	watch_begin(&p[0], a, &gw2, "t.q", c2, 30000);
	int resyncs = 0;
	while (!watch_parks(&p[0], port2, 1)) {
		brq_status st = watch_end(&p[0]);
		if (st == BRQ_ST_RESOURCE_EXHAUSTED) {
			cr_assert(memmem(p[0].rep.msg.ptr, p[0].rep.msg.len, "BROOQ_MAX_WATCHES", 17) != NULL,
				  "%.*s", (int) p[0].rep.msg.len, p[0].rep.msg.ptr);
			cr_assert_lt(now_us(), until, "the cursor's watch never gave its share back");
			sleep_ms(10);
		} else {
			cr_assert_eq(st, BRQ_ST_OK, "%.*s", (int) p[0].rep.msg.len, p[0].rep.msg.ptr);
			cr_assert_lt(resyncs++, 5, "the first watch never parked");
			strcpy(c2, p[0].next);
		}
		fprintf(stderr, "watch_test: the first watch was answered before it parked (%s); again\n",
			st == BRQ_ST_OK ? "resync" : "the cursor's share not back yet");
		pending_fini(&p[0]);
		watch_begin(&p[0], a, &gw2, "t.q", c2, 30000);
	}
	cr_assert_not(watch_is_answered(&p[0]));
	watch_begin(&p[1], b, &gw2, "t.q", c2, 30000);
	cr_assert_eq(watch_end(&p[1]), BRQ_ST_RESOURCE_EXHAUSTED);
	cr_assert(memmem(p[1].rep.msg.ptr, p[1].rep.msg.len, "BROOQ_MAX_WATCHES", 17) != NULL);
	pending_fini(&p[1]);
	nng_close(a); /* ends p[0] */
	pending_fini(&p[0]);
	nng_close(b);
}

Test(watch, a_listener_that_lost_its_connection_has_its_watches_resync)
{
	nng_socket s = conn_open(&gw);
	char       c0[BRQ_CURSOR_MAX + 1];
	cr_assert(brq_gw_wait_metric(port, "brooq_cancel_listener_up", 1, 10000));
	fresh_cursor(s, &gw, "t.l", c0);
	pending p;
	watch_begin(&p, s, &gw, "t.l", c0, 30000);
	cr_assert(brq_gw_wait_metric(port, "brooq_watches", 1, 5000));
	/* Cancels announced while it reconnects are not heard: the watch must say so. */
	cr_assert_eq(
		brq_testdb_int(db,
			       "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
			       " WHERE application_name = 'brooq-listener' AND datname = current_database()"),
		1);
	cr_assert_eq(watch_end(&p), BRQ_ST_OK);
	cr_assert(p.rep.watch.resync, "a watch across a lost LISTEN was not told to resync");
	char c1[BRQ_CURSOR_MAX + 1];
	strcpy(c1, p.next);
	pending_fini(&p);
	cr_assert(brq_gw_wait_metric(port, "brooq_cancel_listener_up", 1, 10000));
	/* With the new connection's cursor, cancels are heard again. */
	enqueue("t.l");
	uint64_t id = claim("t.l");
	watch_begin(&p, s, &gw, "t.l", c1, 30000);
	cancel_via(&gw, id);
	cr_assert_eq(watch_end(&p), BRQ_ST_OK);
	cr_assert_not(p.rep.watch.resync);
	cr_assert_eq(p.rep.watch.n_canceled, 1);
	cr_assert_eq(p.rep.watch.canceled[0], id);
	pending_fini(&p);
	nng_close(s);
}

Test(watch, a_stopping_gateway_answers_its_parked_watches)
{
	nng_socket s = conn_open(&gw);
	char       c0[BRQ_CURSOR_MAX + 1];
	cr_assert(brq_gw_wait_metric(port, "brooq_cancel_listener_up", 1, 10000));
	fresh_cursor(s, &gw, "t.s", c0);
	pending p;
	watch_begin(&p, s, &gw, "t.s", c0, 60000);
	cr_assert(brq_gw_wait_metric(port, "brooq_watches", 1, 5000));
	int64_t t0 = now_us();
	brq_gw_stop(&gw); /* asserts a clean exit */
	gw.pid = 0;
	cr_assert_eq(watch_end(&p), BRQ_ST_OK);
	cr_assert_lt(now_us() - t0, 15 * 1000000, "the stop waited for the watch's wait");
	cr_assert_eq(p.rep.watch.n_canceled, 0);
	pending_fini(&p);
	nng_close(s);
}
