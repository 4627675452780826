/* SPDX-License-Identifier: MIT */
/* Bad input against a real gateway: each gets its status, changes nothing, and the gateway keeps serving. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "gw.h"
#include "testdb.h"

static char     *dsn;
static PGconn   *db;
static brq_gw    gw;
static brq_arena arena;

static void
setup(void)
{
	static const char *env[] = {"BROOQ_MAX_PAYLOAD=64KiB", "BROOQ_MAX_REQUEST=1MiB",
				    "BROOQ_MAX_BATCH=100", NULL};
	dsn                      = brq_testdb_create(true);
	db                       = brq_testdb_connect(dsn);
	brq_gw_start(&gw, dsn, env);
	brq_arena_init(&arena);
	/* One job in place, so "changes nothing" has something to not change. */
	brq_testdb_exec(db, "INSERT INTO job (topic, payload) VALUES ('t', '{\"a\":1}')");
}

static void
teardown(void)
{
	brq_arena_fini(&arena);
	brq_gw_stop(&gw);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(input, .init = setup, .fini = teardown, .timeout = 120);

/* The table as it is: any change shows as a different digest. */
static char *
digest(void)
{
	return brq_testdb_value(db,
				"SELECT md5(coalesce(string_agg(j::text, ',' ORDER BY id), '')) FROM job j");
}

/* Sends raw bytes; decodes the reply as one to `op` (error replies decode as any
 * op); returns its status. */
static brq_status
send_op(brq_op op, const void *buf, size_t len)
{
	size_t     n   = 0;
	void      *rep = brq_gw_raw(&gw, buf, len, &n, 10000);
	brq_reply  r;
	brq_limits lim;
	char       err[256];
	brq_limits_default(&lim);
	cr_assert_not_null(rep, "no reply to %zu bytes of bad input", len);
	cr_assert_eq(brq_reply_decode(&r, op, rep, n, &lim, &arena, err, sizeof(err)), BRQ_ST_OK, "%s", err);
	cr_assert(r.code == BRQ_ST_OK || r.msg.len > 0, "an error reply without a message");
	brq_status st = r.code;
	free(rep);
	return st;
}

static brq_status
send_raw(const void *buf, size_t len)
{
	return send_op(BRQ_OP_PING, buf, len);
}

static void
assert_still_serving(void)
{
	brq_request req = {.op = BRQ_OP_PING, .token = brq_gw_worker(&gw)};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK, "gateway stopped serving");
	free(keep);
}

static size_t
encode(brq_request *req, unsigned char **out)
{
	brq_buf b;
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, req), 0);
	*out = malloc(b.len);
	memcpy(*out, b.data, b.len);
	size_t n = b.len;
	brq_buf_fini(&b);
	return n;
}

Test(input, answers_garbage_with_invalid_argument)
{
	char       *before  = digest();
	const char *cases[] = {"",
			       "\xc1",
			       "hello",
			       "\x93\x01\x02\x03",
			       "\x81\xa2op",
			       "\xdf\xff\xff\xff\xff",
			       "\xdd\x7f\xff\xff\xff\x00"};
	size_t      lens[]  = {0, 1, 5, 4, 4, 5, 6};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		cr_assert_eq(send_raw(cases[i], lens[i]), BRQ_ST_INVALID_ARGUMENT, "case %zu", i);
	char *after = digest();
	cr_assert_str_eq(before, after);
	free(before);
	free(after);
	assert_still_serving();
}

Test(input, answers_every_truncation_of_a_valid_request_with_invalid_argument)
{
	brq_job_spec j = {
		.topic = brq_str_c("t"), .payload = brq_str_c("{\"x\":[1,2,3]}"), .key = brq_str_c("k")};
	brq_request req = {
		.op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {.jobs = &j, .n_jobs = 1}};
	unsigned char *buf;
	size_t         n      = encode(&req, &buf);
	char          *before = digest();
	for (size_t cut = 0; cut < n; cut++)
		cr_assert_eq(send_raw(buf, cut), BRQ_ST_INVALID_ARGUMENT, "cut at %zu of %zu", cut, n);
	char *after = digest();
	cr_assert_str_eq(before, after, "a truncated request changed data");
	free(before);
	free(after);
	/* The whole message works. */
	cr_assert_eq(send_op(BRQ_OP_ENQUEUE, buf, n), BRQ_ST_OK);
	free(buf);
}

Test(input, answers_an_unknown_op_and_wrong_types_with_invalid_argument)
{
	/* Hand-made maps: {"v":1,"op":"explode","token":T} and friends. */
	char tok[80];
	int  tl = snprintf(tok, sizeof(tok), "\xa5token\xd9\x40%s", gw.worker_token);
	char msg[256];
	int  n;
	n = snprintf(msg, sizeof(msg),
		     "\x83\xa1v\x01\xa2op\xa7"
		     "explode%s",
		     tok);
	cr_assert_eq(send_raw(msg, (size_t) n), BRQ_ST_INVALID_ARGUMENT);
	n = snprintf(msg, sizeof(msg),
		     "\x83\xa1v\xa1"
		     "1\xa2op\xa4ping%s",
		     tok); /* v as a string */
	cr_assert_eq(send_raw(msg, (size_t) n), BRQ_ST_INVALID_ARGUMENT);
	n = snprintf(msg, sizeof(msg), "\x83\xa1v\x02\xa2op\xa4ping%s", tok); /* unsupported version */
	cr_assert_eq(send_raw(msg, (size_t) n), BRQ_ST_INVALID_ARGUMENT);
	n = snprintf(msg, sizeof(msg), "\x83\xa1v\x01\xa2op\x07%s", tok); /* op as an int */
	cr_assert_eq(send_raw(msg, (size_t) n), BRQ_ST_INVALID_ARGUMENT);
	/* enqueue whose jobs is a map */
	n = snprintf(msg, sizeof(msg),
		     "\x84\xa1v\x01\xa2op\xa7"
		     "enqueue%s\xa4jobs\x80",
		     tok);
	cr_assert_eq(send_raw(msg, (size_t) n), BRQ_ST_INVALID_ARGUMENT);
	/* claim with n = -1 */
	n = snprintf(msg, sizeof(msg),
		     "\x86\xa1v\x01\xa2op\xa5"
		     "claim%s\xa6worker\xa1w\xa6topics\x91\xa1t\xa1n\xff",
		     tok);
	cr_assert_eq(send_raw(msg, (size_t) n), BRQ_ST_INVALID_ARGUMENT);
	(void) tl;
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing'"), 0);
	assert_still_serving();
}

Test(input, refuses_invalid_json_and_bad_topics_and_inserts_nothing)
{
	brq_job_spec jobs[2] = {{.topic = brq_str_c("t"), .payload = brq_str_c("{}")},
				{.topic = brq_str_c("t"), .payload = brq_str_c("{nope")}};
	brq_request  req     = {
		     .op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {.jobs = jobs, .n_jobs = 2}};
	brq_reply rep;
	void     *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_INVALID_ARGUMENT);
	cr_assert_not_null(memmem(rep.msg.ptr, rep.msg.len, "jobs[1].payload", 15), "%.*s", (int) rep.msg.len,
			   rep.msg.ptr);
	free(keep);
	jobs[1] = (brq_job_spec) {.topic = brq_str_c("Email.Send"), .payload = brq_str_c("{}")};
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_INVALID_ARGUMENT);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 1, "a refused batch inserted rows");
}

/* 1e131071 is valid JSON that jsonb stores in a few bytes but prints as 131072 digits on
 * every read (docs/protocol.md §5): refused before the database sees it, in a batch too. */
Test(input, refuses_numbers_that_print_too_long_and_inserts_nothing)
{
	cr_assert_eq(brq_testdb_int(db, "SELECT length('[1e131071]'::jsonb::text)"), 131074,
		     "PostgreSQL itself would store it");
	brq_job_spec jobs[2] = {{.topic = brq_str_c("t"), .payload = brq_str_c("{}")},
				{.topic = brq_str_c("t"), .payload = brq_str_c("[1e131071]")}};
	brq_request  req     = {
		     .op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {.jobs = jobs, .n_jobs = 2}};
	brq_reply rep;
	void     *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_INVALID_ARGUMENT);
	const char *want =
		"enqueue.jobs[1].payload: number at byte 1 would print as 131072 characters (at most 1000)";
	cr_assert(rep.msg.len == strlen(want) && memcmp(rep.msg.ptr, want, rep.msg.len) == 0, "%.*s",
		  (int) rep.msg.len, rep.msg.ptr);
	free(keep);
	/* One the database would refuse: the gateway's answer, not the database's. */
	jobs[0].payload = brq_str_c("{\"a\": [0, -1e131072]}");
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_INVALID_ARGUMENT);
	cr_assert_not_null(memmem(rep.msg.ptr, rep.msg.len,
				  "jobs[0].payload: number at byte 10 is out of PostgreSQL numeric's range",
				  71),
			   "%.*s", (int) rep.msg.len, rep.msg.ptr);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 1, "a refused batch inserted rows");
	/* Every double is fine, the largest and the smallest written in full. */
	jobs[0].payload    = brq_str_c("[1.7976931348623157e308, -2.2250738585072014e-308, 5e-324]");
	req.enqueue.n_jobs = 1;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK, "%.*s", (int) rep.msg.len,
		     rep.msg.ptr);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 2);
}

Test(input, refuses_an_oversize_payload_and_an_oversize_batch_with_too_large)
{
	size_t big = 65 * 1024;
	char  *p   = malloc(big + 3);
	p[0]       = '"';
	memset(p + 1, 'a', big);
	p[big + 1]       = '"';
	p[big + 2]       = '\0';
	brq_job_spec j   = {.topic = brq_str_c("t"), .payload = brq_str_c(p)};
	brq_request  req = {
		 .op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply rep;
	void     *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_TOO_LARGE);
	free(keep);
	free(p);
	brq_job_spec many[101];
	for (int i = 0; i < 101; i++)
		many[i] = (brq_job_spec) {.topic = brq_str_c("t"), .payload = brq_str_c("{}")};
	req.enqueue = (brq_enqueue_req) {.jobs = many, .n_jobs = 101};
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_TOO_LARGE);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 1);
}

Test(input, answers_a_message_over_the_request_limit_with_too_large)
{
	/* 1 MiB limit; 1.1 MiB is answered (between the limit and the transport ceiling). */
	size_t         n   = 1100 * 1024;
	unsigned char *buf = calloc(1, n);
	buf[0]             = 0x80; /* an empty map, then junk: size is checked first */
	cr_assert_eq(send_raw(buf, n), BRQ_ST_TOO_LARGE);
	free(buf);
	/* Far beyond the ceiling, NNG drops the connection: no reply, and no harm. */
	n   = 4 * 1024 * 1024;
	buf = calloc(1, n);
	size_t rl;
	void  *rep = brq_gw_raw(&gw, buf, n, &rl, 1000);
	cr_assert_null(rep);
	free(buf);
	assert_still_serving();
}

/* ---- the rid of error replies (docs/protocol.md §4), over the wire ---------------------------- */

/* A message written byte by byte: these are malformed on purpose, which no encoder
 * produces. Sizes stay small except the payload of raw_str. */
typedef struct raw {
	unsigned char *b;
	size_t         n, cap;
} raw;

static void
raw_put(raw *r, const void *p, size_t n)
{
	if (r->n + n > r->cap) {
		r->cap = (r->n + n) * 2;
		r->b   = realloc(r->b, r->cap);
		cr_assert_not_null(r->b);
	}
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void
raw_byte(raw *r, unsigned char c)
{
	raw_put(r, &c, 1);
}

/* A msgpack str: fixstr, str8 or str32. */
static void
raw_str(raw *r, const char *s, size_t n)
{
	if (n < 32) {
		raw_byte(r, (unsigned char) (0xa0 | n));
	} else if (n < 256) {
		raw_byte(r, 0xd9);
		raw_byte(r, (unsigned char) n);
	} else {
		unsigned char h[5] = {0xdb, (unsigned char) (n >> 24), (unsigned char) (n >> 16),
				      (unsigned char) (n >> 8), (unsigned char) n};
		raw_put(r, h, 5);
	}
	raw_put(r, s, n);
}

static void
raw_cstr(raw *r, const char *s)
{
	raw_str(r, s, strlen(s));
}

/* The envelope keys after a map header: v 1, op, the worker token, rid (< 128). */
static void
raw_envelope(raw *r, const char *op, unsigned rid)
{
	raw_cstr(r, "v");
	raw_byte(r, 1);
	raw_cstr(r, "op");
	raw_cstr(r, op);
	raw_cstr(r, "token");
	raw_cstr(r, gw.worker_token);
	raw_cstr(r, "rid");
	raw_byte(r, (unsigned char) rid);
}

/* Sends r, returns the reply's status and its rid in *rid; frees r. */
static brq_status
send_rid(raw *r, uint64_t *rid)
{
	size_t     n   = 0;
	void      *rep = brq_gw_raw(&gw, r->b, r->n, &n, 10000);
	brq_reply  rp;
	brq_limits lim;
	char       err[256];
	brq_limits_default(&lim);
	cr_assert_not_null(rep, "no reply");
	cr_assert_eq(brq_reply_decode(&rp, BRQ_OP_PING, rep, n, &lim, &arena, err, sizeof(err)), BRQ_ST_OK,
		     "%s", err);
	*rid = rp.rid;
	free(rep);
	free(r->b);
	*r = (raw) {0};
	return rp.code;
}

Test(input, echoes_the_rid_once_the_envelope_is_read_and_only_then)
{
	char    *before = digest();
	raw      r      = {0};
	uint64_t rid;

	/* A non-str key inside jobs[0]: refused, rid echoed. */
	raw_byte(&r, 0x85);
	raw_envelope(&r, "enqueue", 41);
	raw_cstr(&r, "jobs");
	raw_byte(&r, 0x91);
	raw_byte(&r, 0x83);
	raw_byte(&r, 0x01);
	raw_byte(&r, 0x02);
	raw_cstr(&r, "topic");
	raw_cstr(&r, "a");
	raw_cstr(&r, "payload");
	raw_cstr(&r, "1");
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(rid, 41);

	/* claim.n twice: refused, rid echoed. */
	raw_byte(&r, 0x88);
	raw_envelope(&r, "claim", 42);
	raw_cstr(&r, "worker");
	raw_cstr(&r, "w");
	raw_cstr(&r, "topics");
	raw_byte(&r, 0x91);
	raw_cstr(&r, "a");
	raw_cstr(&r, "n");
	raw_byte(&r, 1);
	raw_cstr(&r, "n");
	raw_byte(&r, 2);
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(rid, 42);

	/* A payload over max_payload (64 KiB here): too_large, rid echoed. */
	size_t big = 70000;
	char  *p   = malloc(big);
	memset(p, '1', big);
	raw_byte(&r, 0x85);
	raw_envelope(&r, "enqueue", 43);
	raw_cstr(&r, "jobs");
	raw_byte(&r, 0x91);
	raw_byte(&r, 0x82);
	raw_cstr(&r, "topic");
	raw_cstr(&r, "a");
	raw_cstr(&r, "payload");
	raw_str(&r, p, big);
	free(p);
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_TOO_LARGE);
	cr_expect_eq(rid, 43);

	/* No token: unauthenticated, rid echoed. */
	raw_byte(&r, 0x83);
	raw_cstr(&r, "v");
	raw_byte(&r, 1);
	raw_cstr(&r, "op");
	raw_cstr(&r, "stats");
	raw_cstr(&r, "rid");
	raw_byte(&r, 44);
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_UNAUTHENTICATED);
	cr_expect_eq(rid, 44);

	/* A top-level non-str key: the envelope cannot be read, rid 0. */
	raw_byte(&r, 0x85);
	raw_byte(&r, 0x01);
	raw_byte(&r, 0x02);
	raw_envelope(&r, "ping", 45);
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(rid, 0);

	/* op twice: rid 0. */
	raw_byte(&r, 0x85);
	raw_envelope(&r, "ping", 46);
	raw_cstr(&r, "op");
	raw_cstr(&r, "ping");
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(rid, 0);

	/* Over max_request (1 MiB here), under the transport ceiling: too_large, rid 0. */
	big = 1100 * 1024;
	p   = malloc(big);
	memset(p, 'x', big);
	raw_byte(&r, 0x85);
	raw_envelope(&r, "ping", 47);
	raw_cstr(&r, "pad");
	raw_str(&r, p, big);
	free(p);
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_TOO_LARGE);
	cr_expect_eq(rid, 0);

	/* A non-str key inside an unknown key's value: ignored, ok, rid echoed. */
	raw_byte(&r, 0x85);
	raw_envelope(&r, "ping", 48);
	raw_cstr(&r, "x");
	raw_byte(&r, 0x81);
	raw_byte(&r, 0x01);
	raw_byte(&r, 0x02);
	cr_expect_eq(send_rid(&r, &rid), BRQ_ST_OK);
	cr_expect_eq(rid, 48);

	char *after = digest();
	cr_assert_str_eq(before, after, "bad input changed the table");
	free(before);
	free(after);
	assert_still_serving();
}

Test(input, answers_a_wrong_or_missing_token_with_unauthenticated_and_never_logs_it)
{
	char bad[65];
	memcpy(bad, gw.worker_token, 65);
	bad[10]          = bad[10] == 'a' ? 'b' : 'a';
	brq_job_spec j   = {.topic = brq_str_c("t"), .payload = brq_str_c("{}")};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .token = {bad, 64}, .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply    rep;
	void        *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_UNAUTHENTICATED);
	free(keep);
	req.token = (brq_str) {gw.worker_token, 63}; /* a prefix is not the token */
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_UNAUTHENTICATED);
	free(keep);
	req.token = (brq_str) {NULL, 0};
	brq_buf b;
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	cr_assert_eq(send_raw(b.data, b.len), BRQ_ST_UNAUTHENTICATED);
	brq_buf_fini(&b);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 1);

	char cmd[512];
	snprintf(cmd, sizeof(cmd), "grep -c auth_failed %s", gw.log);
	FILE *f     = popen(cmd, "r");
	int   count = 0;
	cr_assert_eq(fscanf(f, "%d", &count), 1);
	pclose(f);
	cr_assert_geq(count, 3, "auth failures not logged");
	snprintf(cmd, sizeof(cmd), "grep -q -e %.20s -e %.20s %s", bad, gw.admin_token, gw.log);
	cr_assert_neq(system(cmd), 0, "a token appears in the gateway log");
}

Test(input, refuses_cancel_with_a_worker_token_and_changes_nothing)
{
	char       *before = digest();
	brq_request req    = {.op = BRQ_OP_CANCEL, .token = brq_gw_worker(&gw), .cancel = {.id = 1}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_PERMISSION_DENIED);
	free(keep);
	char *after = digest();
	cr_assert_str_eq(before, after);
	free(before);
	free(after);
	req.token = brq_gw_admin(&gw);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK);
	cr_assert(rep.cancel.canceled);
	free(keep);
}

Test(input, fuzzed_requests_never_stop_the_gateway)
{
	brq_job_spec j = {.topic = brq_str_c("t"), .payload = brq_str_c("{\"x\":1}"), .key = brq_str_c("k")};
	brq_request  req = {
		 .op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw), .enqueue = {.jobs = &j, .n_jobs = 1}};
	unsigned char *buf;
	size_t         n    = encode(&req, &buf);
	unsigned       seed = 12345;
	for (int i = 0; i < 300; i++) {
		unsigned char m[256];
		memcpy(m, buf, n);
		for (int k = 0; k < 3; k++) {
			seed               = seed * 1103515245u + 12345u;
			m[(seed >> 8) % n] = (unsigned char) (seed >> 16);
		}
		size_t rl;
		void  *rep = brq_gw_raw(&gw, m, n, &rl, 10000);
		cr_assert_not_null(rep, "no reply to mutation %d", i);
		free(rep);
	}
	free(buf);
	assert_still_serving();
}

Test(config, bad_configuration_lists_every_problem_and_exits_2)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "env -i BROOQ_LEASE=120 BROOQ_POOL_SIZE=0 BROOQ_LISTEN=http://x BROOQ_DSN='host=/x "
		 "password=hunter2'"
		 " %s 2>&1",
		 brq_testdb_bin("brooq-gateway"));
	FILE  *p = popen(cmd, "r");
	char   out[8192];
	size_t len = fread(out, 1, sizeof(out) - 1, p);
	out[len]   = '\0';
	int st     = pclose(p);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, "BROOQ_LEASE"), "%s", out);
	cr_assert_not_null(strstr(out, "BROOQ_POOL_SIZE"), "%s", out);
	cr_assert_not_null(strstr(out, "BROOQ_LISTEN"), "%s", out);
	cr_assert_not_null(strstr(out, "token"), "missing tokens not reported: %s", out);
	cr_assert_null(strstr(out, "hunter2"), "the DSN password was printed");
}

Test(input, creates_the_ipc_socket_with_mode_0660)
{
	char        path[400];
	struct stat st;
	snprintf(path, sizeof(path), "%s/gw.sock", gw.dir);
	cr_assert_eq(stat(path, &st), 0, "no socket at %s", path);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0660, "socket mode %o", st.st_mode & 0777);
}
