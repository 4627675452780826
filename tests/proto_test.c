// SPDX-License-Identifier: MIT
// Tests of proto/: round trips of every request and reply, every decode error path, the
// JSON validator, the arena and buffer, and a bounded deterministic fuzz loop.
#include <criterion/criterion.h>

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpread.h"
#include "proto.h"

// ---- Fixture ------------------------------------------------------------------------

static brq_limits  L;
static brq_arena   A;
static brq_buf     B;
static brq_request R;
static brq_reply   P;
static char        E[BRQ_ERRTEXT_MAX];

static void
setup(void)
{
	brq_limits_default(&L);
	brq_arena_init(&A);
	brq_buf_init(&B, 0);
	E[0] = '\0';
}

static void
teardown(void)
{
	brq_arena_fini(&A);
	brq_buf_fini(&B);
}

TestSuite(codec, .init = setup, .fini = teardown);
TestSuite(envelope, .init = setup, .fini = teardown);
TestSuite(fields, .init = setup, .fini = teardown);
TestSuite(reply, .init = setup, .fini = teardown);
TestSuite(json);
TestSuite(text);
TestSuite(status);
TestSuite(arena);
TestSuite(buf);
TestSuite(fuzz, .init = setup, .fini = teardown);

// ---- A tiny text -> msgpack builder for hand-made (and broken) messages ---------------
//
//   {key: value, 'key': value}  map (commas optional; bare keys are strings)
//   [a, b]                      array
//   'text' "text"               str; escapes \\ \' \" \n \xHH; 'ab'*3 repeats
//   x'00ff'                     bin; x'00'*16 repeats
//   12  -3  1.5                 smallest int encoding / float64
//   u8:1 u16:1 u32:1 u64:1 i8:-1 i16:1 i32:1 i64:1   a forced int encoding
//   nil true false              the constants
//   r'c1'                       raw bytes, counted as one value

static void
raw(brq_buf *b, const void *p, size_t n)
{
	msgpack_packer *pk = brq_buf_packer(b);
	(void) pk->callback(pk->data, p, n);
}

static void
skip_sep(const char **s)
{
	while (**s == ' ' || **s == ',' || **s == '\n' || **s == '\t') {
		(*s)++;
	}
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10;
}

// Reads a quoted string (with escapes) into out; returns its length.
static size_t
quoted(const char **s, char *out, size_t cap)
{
	char   q = *(*s)++;
	size_t n = 0;
	while (**s != q) {
		cr_assert(**s != '\0', "mp: unterminated string");
		char c = *(*s)++;
		if (c == '\\') {
			c = *(*s)++;
			if (c == 'n') {
				c = '\n';
			} else if (c == 'x') {
				c = (char) (hexval((*s)[0]) * 16 + hexval((*s)[1]));
				*s += 2;
			}
		}
		cr_assert(n < cap, "mp: string too long");
		out[n++] = c;
	}
	(*s)++;
	return n;
}

// Applies an optional "*N" repeat to out[0..n); returns the new length.
static size_t
repeat(const char **s, char *out, size_t n, size_t cap)
{
	if (**s != '*') {
		return n;
	}
	(*s)++;
	size_t times = strtoul(*s, (char **) s, 10);
	cr_assert(n * times <= cap, "mp: repeat too long");
	for (size_t t = 1; t < times; t++) {
		memcpy(out + t * n, out, n);
	}
	return n * times;
}

static void mp_value(brq_buf *b, const char **s);

static void
mp_forced_int(brq_buf *b, const char **s)
{
	char     kind = **s;
	unsigned bits = (unsigned) strtoul(*s + 1, (char **) s, 10);
	cr_assert(**s == ':', "mp: bad forced int");
	(*s)++;
	uint64_t u = kind == 'u' ? (uint64_t) strtoull(*s, (char **) s, 10)
				 : (uint64_t) strtoll(*s, (char **) s, 10);
	uint8_t  out[9];
	unsigned w = bits / 8;
	out[0]     = kind == 'u' ? (uint8_t) (0xcc +
                                          (w == 1           ? 0
						       : w == 2 ? 1
						       : w == 4 ? 2
								: 3))
				 : (uint8_t) (0xd0 +
                                          (w == 1           ? 0
						       : w == 2 ? 1
						       : w == 4 ? 2
								: 3));
	for (unsigned k = 0; k < w; k++) {
		out[1 + k] = (uint8_t) (u >> (8 * (w - 1 - k)));
	}
	raw(b, out, 1 + w);
}

static void
mp_container(brq_buf *b, const char **s)
{
	bool     is_map = *(*s)++ == '{';
	char     close  = is_map ? '}' : ']';
	brq_buf  tmp;
	uint32_t n = 0;

	brq_buf_init(&tmp, 0);
	for (;;) {
		skip_sep(s);
		if (**s == close) {
			(*s)++;
			break;
		}
		cr_assert(**s != '\0', "mp: unterminated container");
		if (is_map && (isalpha((unsigned char) **s) || **s == '_') &&
		    !((**s == 'x' || **s == 'r') && (*s)[1] == '\'')) {
			const char *k = *s;
			while (isalnum((unsigned char) **s) || **s == '_' || **s == '.') {
				(*s)++;
			}
			(void) msgpack_pack_str(brq_buf_packer(&tmp), (size_t) (*s - k));
			(void) msgpack_pack_str_body(brq_buf_packer(&tmp), k, (size_t) (*s - k));
		} else if (is_map) {
			mp_value(&tmp, s);
		}
		if (is_map) {
			skip_sep(s);
			cr_assert(**s == ':', "mp: expected ':' at %s", *s);
			(*s)++;
		}
		mp_value(&tmp, s);
		n++;
	}
	if (is_map) {
		brq_pack_map(b, n);
	} else {
		brq_pack_array(b, n);
	}
	raw(b, tmp.data, tmp.len);
	brq_buf_fini(&tmp);
}

static void
mp_value(brq_buf *b, const char **s)
{
	static char text[1 << 20];
	skip_sep(s);
	char c = **s;
	if (c == '{' || c == '[') {
		mp_container(b, s);
	} else if (c == '\'' || c == '"') {
		size_t n = quoted(s, text, sizeof text);
		n        = repeat(s, text, n, sizeof text);
		(void) msgpack_pack_str(brq_buf_packer(b), n);
		(void) msgpack_pack_str_body(brq_buf_packer(b), text, n);
	} else if ((c == 'x' || c == 'r') && (*s)[1] == '\'') {
		(*s)++;
		char   hex[4096];
		size_t hn = quoted(s, hex, sizeof hex);
		size_t n  = 0;
		for (size_t i = 0; i + 1 < hn; i += 2) {
			text[n++] = (char) (hexval(hex[i]) * 16 + hexval(hex[i + 1]));
		}
		n = repeat(s, text, n, sizeof text);
		if (c == 'x') {
			brq_pack_bin(b, text, (uint32_t) n);
		} else {
			raw(b, text, n);
		}
	} else if ((c == 'u' || c == 'i') && isdigit((unsigned char) (*s)[1])) {
		mp_forced_int(b, s);
	} else if (strncmp(*s, "nil", 3) == 0) {
		*s += 3;
		brq_pack_nil(b);
	} else if (strncmp(*s, "true", 4) == 0) {
		*s += 4;
		brq_pack_bool(b, true);
	} else if (strncmp(*s, "false", 5) == 0) {
		*s += 5;
		brq_pack_bool(b, false);
	} else {
		char       *end;
		const char *p = *s;
		while (*p == '-' || isdigit((unsigned char) *p)) {
			p++;
		}
		if (*p == '.') {
			double d = strtod(*s, &end);
			(void) msgpack_pack_double(brq_buf_packer(b), d);
		} else if (c == '-') {
			long long v = strtoll(*s, &end, 10);
			brq_pack_int(b, v);
		} else {
			unsigned long long v = strtoull(*s, &end, 10);
			cr_assert(end != *s, "mp: bad token at %s", *s);
			brq_pack_uint(b, v);
		}
		*s = end;
	}
}

// Replaces b's contents with the message described by src.
static void
mp(brq_buf *b, const char *src)
{
	brq_buf_reset(b);
	mp_value(b, &src);
	skip_sep(&src);
	cr_assert(*src == '\0', "mp: trailing text %s", src);
	cr_assert(brq_buf_error(b) == 0);
}

static brq_status
decode_req(const char *src)
{
	mp(&B, src);
	brq_arena_reset(&A);
	E[0] = '\0';
	return brq_request_decode(&R, B.data, B.len, &L, &A, E, sizeof E);
}

static brq_status
decode_raw(const void *p, size_t n)
{
	brq_arena_reset(&A);
	return brq_request_decode(&R, p, n, &L, &A, E, sizeof E);
}

// One row of an error table: the message, the status, and a substring of the text.
typedef struct {
	const char *src;
	brq_status  st;
	const char *msg;
} row;

static void
check_rows(const row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		brq_status st = decode_req(rows[i].src);
		cr_expect_eq(st, rows[i].st, "%s\n  -> %s (%s), want %s", rows[i].src, brq_status_name(st), E,
			     brq_status_name(rows[i].st));
		if (rows[i].msg != NULL) {
			cr_expect(strstr(E, rows[i].msg) != NULL, "%s\n  -> message \"%s\", want \"%s\"",
				  rows[i].src, E, rows[i].msg);
		}
	}
}

#define ROWS(t) check_rows((t), sizeof(t) / sizeof((t)[0]))

// ---- Sample messages: every op, minimal and full ------------------------------------

static const uint8_t LEASE_A[BRQ_LEASE_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static brq_job_spec JOBS[3] = {
	{.topic = {"a", 1}, .payload = {"{}", 2}},
	{.topic            = {"email.send", 10},
	 .payload          = {"{\"to\":\"x@y\"}", 12},
	 .key              = {"k1", 2},
	 .has_delay_ms     = true,
	 .delay_ms         = 1500,
	 .has_max_attempts = true,
	 .max_attempts     = 7,
	 .has_priority     = true,
	 .priority         = 1},
	{.topic            = {"z9._-", 5},
	 .payload          = {"[1,\"\\u00e9\",null]", 17},
	 .key              = {"   ", 3},
	 .has_run_at_ms    = true,
	 .run_at_ms        = 1700000000123,
	 .has_max_attempts = true,
	 .max_attempts     = 1000},
};

static brq_str TOPICS[2] = {{"email.send", 10}, {"b", 1}};

static brq_settle_item ITEMS[5] = {
	{.id = 1, .outcome = BRQ_OUTCOME_DONE, .has_chain = true, .chain = JOBS, .n_chain = 2},
	{.id = 2, .outcome = BRQ_OUTCOME_FAIL, .has_error = true, .error = {"boom", 4}},
	{.id = 3, .outcome = BRQ_OUTCOME_DELAY, .delay_ms = 0},
	{.id = 4, .outcome = BRQ_OUTCOME_PRESERVE, .has_error = true, .error = {"", 0}},
	{.id = INT64_MAX, .outcome = BRQ_OUTCOME_CANCEL},
};

static brq_lease_ref LEASES[2] = {{.id = 5}, {.id = 6}};

#define N_SAMPLE_REQ 12

// Fills out[] with sample requests covering every op and every optional field.
static void
sample_requests(brq_request out[N_SAMPLE_REQ])
{
	for (int i = 0; i < 5; i++) {
		memcpy(ITEMS[i].lease, LEASE_A, BRQ_LEASE_LEN);
		ITEMS[i].lease[0] = (uint8_t) i;
	}
	memcpy(LEASES[0].lease, LEASE_A, BRQ_LEASE_LEN);
	memset(LEASES[1].lease, 0xff, BRQ_LEASE_LEN);
	memset(out, 0, sizeof(brq_request) * N_SAMPLE_REQ);
	for (int i = 0; i < N_SAMPLE_REQ; i++) {
		out[i].token = brq_str_c("secret-token");
		out[i].rid   = (uint64_t) i * 1000;
	}
	out[0].op         = BRQ_OP_PING;
	out[1].op         = BRQ_OP_STATS;
	out[1].rid        = UINT64_MAX;
	out[1].token      = (brq_str) {"\x00\x01\xff", 3};
	out[2].op         = BRQ_OP_ENQUEUE;
	out[2].enqueue    = (brq_enqueue_req) {JOBS, 1};
	out[3].op         = BRQ_OP_ENQUEUE;
	out[3].enqueue    = (brq_enqueue_req) {JOBS, 3};
	out[4].op         = BRQ_OP_CLAIM;
	out[4].claim      = (brq_claim_req) {.worker = {"w", 1}, .topics = TOPICS, .n_topics = 1, .n = 1};
	out[5].op         = BRQ_OP_CLAIM;
	out[5].claim      = (brq_claim_req) {.worker       = {"host/\xc3\xa9", 7},
					     .topics       = TOPICS,
					     .n_topics     = 2,
					     .n            = 1000,
					     .has_lease_ms = true,
					     .lease_ms     = 86400000,
					     .has_wait_ms  = true,
					     .wait_ms      = 300000,
					     .has_settle   = true,
					     .settle       = ITEMS,
					     .n_settle     = 5};
	out[6].op         = BRQ_OP_CLAIM;
	out[6].claim      = (brq_claim_req) {.worker      = {"w", 1},
					     .topics      = TOPICS,
					     .n_topics    = 1,
					     .n           = 3,
					     .has_wait_ms = true,
					     .wait_ms     = 0,
					     .has_settle  = true};
	out[7].op         = BRQ_OP_HEARTBEAT;
	out[7].heartbeat  = (brq_heartbeat_req) {LEASES, 2, false, 0};
	out[8].op         = BRQ_OP_HEARTBEAT;
	out[8].heartbeat  = (brq_heartbeat_req) {LEASES, 1, true, 1000};
	out[9].op         = BRQ_OP_SETTLE;
	out[9].settle     = (brq_settle_req) {ITEMS, 5};
	out[10].op        = BRQ_OP_CANCEL;
	out[10].cancel.id = 1;
	out[11].op        = BRQ_OP_JOB;
	out[11].job.id    = 9007199254740993ull;
}

static brq_enqueue_result ERES[2]  = {{1, true}, {UINT64_MAX, false}};
static brq_claimed_job    CJOBS[2] = {
	   {.id             = 10,
	    .topic          = {"a", 1},
	    .payload        = {"{}", 2},
	    .attempts       = 1,
	    .max_attempts   = 5,
	    .lease_until_ms = 1700000000000,
	    .created_at_ms  = -5},
	   {.id                 = 11,
	    .topic              = {"b.c", 3},
	    .payload            = {"[]", 2},
	    .attempts           = UINT32_MAX,
	    .max_attempts       = 1000,
	    .lease_until_ms     = INT64_MAX,
	    .created_at_ms      = INT64_MIN,
	    .attempt_timeout_ms = 60000,
	    .max_execution_ms   = UINT64_MAX},
};
static brq_settle_result SRES[3] = {
	{1, true, BRQ_STATE_DONE}, {2, false, BRQ_STATE_PENDING}, {3, true, BRQ_STATE_DEAD}};
static bool            EXT[3]    = {true, false, true};
static brq_lost_reason WHY[3]    = {BRQ_LOST_NONE, BRQ_LOST_MAX_EXECUTION, BRQ_LOST_NONE};
static brq_topic_stats TSTATS[2] = {
	{.topic = {"a", 1}, .count = {1, 2, 3, 4, 5, 6}, .oldest_ready_age_ms = 0},
	{.topic = {"b", 1}, .count = {UINT64_MAX, 0, 0, 0, 0, 0}, .oldest_ready_age_ms = 99},
};

#define N_SAMPLE_REP 13

static void
sample_replies(brq_reply out[N_SAMPLE_REP])
{
	memset(out, 0, sizeof(brq_reply) * N_SAMPLE_REP);
	memcpy(CJOBS[0].lease, LEASE_A, BRQ_LEASE_LEN);
	for (int i = 0; i < N_SAMPLE_REP; i++) {
		out[i].rid = (uint64_t) i + 77;
	}
	out[0].op          = BRQ_OP_PING;
	out[0].ping.server = brq_str_c("brooq-gateway 0.1.0");
	out[1].op          = BRQ_OP_ENQUEUE;
	out[1].enqueue     = (brq_enqueue_rep) {ERES, 2};
	out[2].op          = BRQ_OP_CLAIM;
	out[2].claim       = (brq_claim_rep) {CJOBS, 2, false, NULL, 0};
	out[3].op          = BRQ_OP_CLAIM;
	out[3].claim       = (brq_claim_rep) {CJOBS, 0, true, SRES, 3};
	out[4].op          = BRQ_OP_HEARTBEAT;
	out[4].heartbeat   = (brq_heartbeat_rep) {EXT, 3, 1700000000000, WHY};
	out[5].op          = BRQ_OP_SETTLE;
	out[5].settle      = (brq_settle_rep) {SRES, 3};
	out[6].op          = BRQ_OP_CANCEL;
	out[6].cancel      = (brq_cancel_rep) {BRQ_STATE_CANCELED, true};
	out[7].op          = BRQ_OP_CANCEL;
	out[7].cancel      = (brq_cancel_rep) {BRQ_STATE_DONE, false};
	out[8].op          = BRQ_OP_JOB;
	out[8].job.job     = (brq_job_info) {.id              = 5,
					     .topic           = {"a", 1},
					     .payload         = {"{\"a\": 1}", 8},
					     .state           = BRQ_STATE_PENDING,
					     .attempts        = 0,
					     .max_attempts    = 5,
					     .available_at_ms = 1,
					     .created_at_ms   = 2,
					     .updated_at_ms   = 3};
	out[9].op          = BRQ_OP_JOB;
	out[9].job.job     = (brq_job_info) {.id                  = 6,
					     .topic               = {"b", 1},
					     .payload             = {"1", 1},
					     .state               = BRQ_STATE_PROCESSING,
					     .attempts            = 2,
					     .max_attempts        = 5,
					     .available_at_ms     = 1,
					     .has_locked_by       = true,
					     .locked_by           = {"w1", 2},
					     .has_locked_until_ms = true,
					     .locked_until_ms     = 44,
					     .has_last_error      = true,
					     .last_error          = {"e", 1},
					     .has_key             = true,
					     .key                 = {"", 0},
					     .created_at_ms       = 2,
					     .updated_at_ms       = 3,
					     .lost_leases         = 4};
	out[10].op         = BRQ_OP_STATS;
	out[10].stats      = (brq_stats_rep) {TSTATS, 2, true, 20000, true};
	out[11].op         = BRQ_OP_STATS;
	out[11].stats      = (brq_stats_rep) {NULL, 0};
	out[12].op         = BRQ_OP_CLAIM;
	out[12].code       = BRQ_ST_RESOURCE_EXHAUSTED;
	out[12].msg        = brq_str_c("too many concurrent long-polls");
}

// ---- Deep equality ------------------------------------------------------------------

static void
expect_str(brq_str a, brq_str b, const char *what)
{
	cr_expect(a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0),
		  "%s: \"%.*s\" != \"%.*s\"", what, (int) a.len, a.ptr ? a.ptr : "", (int) b.len,
		  b.ptr ? b.ptr : "");
}

static void
expect_job_spec(const brq_job_spec *a, const brq_job_spec *b)
{
	expect_str(a->topic, b->topic, "topic");
	expect_str(a->payload, b->payload, "payload");
	expect_str(a->key, b->key, "key");
	cr_expect_eq(a->has_delay_ms, b->has_delay_ms);
	if (a->has_delay_ms) {
		cr_expect_eq(a->delay_ms, b->delay_ms);
	}
	cr_expect_eq(a->has_run_at_ms, b->has_run_at_ms);
	if (a->has_run_at_ms) {
		cr_expect_eq(a->run_at_ms, b->run_at_ms);
	}
	cr_expect_eq(a->has_max_attempts, b->has_max_attempts);
	if (a->has_max_attempts) {
		cr_expect_eq(a->max_attempts, b->max_attempts);
	}
	cr_expect_eq(a->has_priority, b->has_priority);
	if (a->has_priority) {
		cr_expect_eq(a->priority, b->priority);
	}
}

static void
expect_settle_item(const brq_settle_item *a, const brq_settle_item *b)
{
	cr_expect_eq(a->id, b->id);
	cr_expect(memcmp(a->lease, b->lease, BRQ_LEASE_LEN) == 0, "lease differs");
	cr_expect_eq(a->outcome, b->outcome);
	cr_expect_eq(a->has_error, b->has_error);
	expect_str(a->error, b->error, "error");
	if (a->outcome == BRQ_OUTCOME_DELAY) {
		cr_expect_eq(a->delay_ms, b->delay_ms);
	}
	cr_expect_eq(a->has_chain, b->has_chain);
	cr_assert_eq(a->n_chain, b->n_chain);
	for (uint32_t i = 0; i < a->n_chain; i++) {
		expect_job_spec(&a->chain[i], &b->chain[i]);
	}
}

static void
expect_request(const brq_request *a, const brq_request *b)
{
	cr_assert_eq(a->op, b->op);
	cr_expect_eq(a->rid, b->rid);
	expect_str(a->token, b->token, "token");
	switch (a->op) {
	case BRQ_OP_ENQUEUE:
		cr_assert_eq(a->enqueue.n_jobs, b->enqueue.n_jobs);
		for (uint32_t i = 0; i < a->enqueue.n_jobs; i++) {
			expect_job_spec(&a->enqueue.jobs[i], &b->enqueue.jobs[i]);
		}
		break;
	case BRQ_OP_CLAIM:
		expect_str(a->claim.worker, b->claim.worker, "worker");
		cr_assert_eq(a->claim.n_topics, b->claim.n_topics);
		for (uint32_t i = 0; i < a->claim.n_topics; i++) {
			expect_str(a->claim.topics[i], b->claim.topics[i], "topics[i]");
		}
		cr_expect_eq(a->claim.n, b->claim.n);
		cr_expect_eq(a->claim.has_lease_ms, b->claim.has_lease_ms);
		cr_expect_eq(a->claim.lease_ms, b->claim.lease_ms);
		cr_expect_eq(a->claim.has_wait_ms, b->claim.has_wait_ms);
		cr_expect_eq(a->claim.wait_ms, b->claim.wait_ms);
		cr_expect_eq(a->claim.has_settle, b->claim.has_settle);
		cr_assert_eq(a->claim.n_settle, b->claim.n_settle);
		for (uint32_t i = 0; i < a->claim.n_settle; i++) {
			expect_settle_item(&a->claim.settle[i], &b->claim.settle[i]);
		}
		break;
	case BRQ_OP_HEARTBEAT:
		cr_assert_eq(a->heartbeat.n_leases, b->heartbeat.n_leases);
		for (uint32_t i = 0; i < a->heartbeat.n_leases; i++) {
			cr_expect_eq(a->heartbeat.leases[i].id, b->heartbeat.leases[i].id);
			cr_expect(memcmp(a->heartbeat.leases[i].lease, b->heartbeat.leases[i].lease,
					 BRQ_LEASE_LEN) == 0);
		}
		cr_expect_eq(a->heartbeat.has_lease_ms, b->heartbeat.has_lease_ms);
		cr_expect_eq(a->heartbeat.lease_ms, b->heartbeat.lease_ms);
		break;
	case BRQ_OP_SETTLE:
		cr_assert_eq(a->settle.n_items, b->settle.n_items);
		for (uint32_t i = 0; i < a->settle.n_items; i++) {
			expect_settle_item(&a->settle.items[i], &b->settle.items[i]);
		}
		break;
	case BRQ_OP_CANCEL: cr_expect_eq(a->cancel.id, b->cancel.id); break;
	case BRQ_OP_JOB: cr_expect_eq(a->job.id, b->job.id); break;
	default: break;
	}
}

static void
expect_settle_result(const brq_settle_result *a, const brq_settle_result *b)
{
	cr_expect_eq(a->id, b->id);
	cr_expect_eq(a->applied, b->applied);
	if (a->applied) {
		cr_expect_eq(a->state, b->state);
	}
}

static void
expect_reply(const brq_reply *a, const brq_reply *b)
{
	cr_assert_eq(a->op, b->op);
	cr_expect_eq(a->rid, b->rid);
	cr_assert_eq(a->code, b->code);
	expect_str(a->msg, b->msg, "msg");
	expect_str(brq_str_c(brq_status_name(a->code)), b->code_name, "code_name");
	if (a->code != BRQ_ST_OK) {
		return;
	}
	switch (a->op) {
	case BRQ_OP_PING: expect_str(a->ping.server, b->ping.server, "server"); break;
	case BRQ_OP_ENQUEUE:
		cr_assert_eq(a->enqueue.n_results, b->enqueue.n_results);
		for (uint32_t i = 0; i < a->enqueue.n_results; i++) {
			cr_expect_eq(a->enqueue.results[i].id, b->enqueue.results[i].id);
			cr_expect_eq(a->enqueue.results[i].created, b->enqueue.results[i].created);
		}
		break;
	case BRQ_OP_CLAIM:
		cr_assert_eq(a->claim.n_jobs, b->claim.n_jobs);
		for (uint32_t i = 0; i < a->claim.n_jobs; i++) {
			const brq_claimed_job *x = &a->claim.jobs[i], *y = &b->claim.jobs[i];
			cr_expect_eq(x->id, y->id);
			expect_str(x->topic, y->topic, "topic");
			expect_str(x->payload, y->payload, "payload");
			cr_expect_eq(x->attempts, y->attempts);
			cr_expect_eq(x->max_attempts, y->max_attempts);
			cr_expect(memcmp(x->lease, y->lease, BRQ_LEASE_LEN) == 0);
			cr_expect_eq(x->lease_until_ms, y->lease_until_ms);
			cr_expect_eq(x->created_at_ms, y->created_at_ms);
			cr_expect_eq(x->attempt_timeout_ms, y->attempt_timeout_ms);
			cr_expect_eq(x->max_execution_ms, y->max_execution_ms);
		}
		cr_expect_eq(a->claim.has_settled, b->claim.has_settled);
		cr_assert_eq(a->claim.n_settled, b->claim.n_settled);
		for (uint32_t i = 0; i < a->claim.n_settled; i++) {
			expect_settle_result(&a->claim.settled[i], &b->claim.settled[i]);
		}
		break;
	case BRQ_OP_HEARTBEAT:
		cr_assert_eq(a->heartbeat.n_extended, b->heartbeat.n_extended);
		for (uint32_t i = 0; i < a->heartbeat.n_extended; i++) {
			cr_expect_eq(a->heartbeat.extended[i], b->heartbeat.extended[i]);
		}
		cr_expect_eq(a->heartbeat.lease_until_ms, b->heartbeat.lease_until_ms);
		cr_assert_eq(a->heartbeat.lost_reasons != NULL, b->heartbeat.lost_reasons != NULL);
		for (uint32_t i = 0; a->heartbeat.lost_reasons != NULL && i < a->heartbeat.n_extended; i++) {
			cr_expect_eq(a->heartbeat.lost_reasons[i], b->heartbeat.lost_reasons[i]);
		}
		break;
	case BRQ_OP_SETTLE:
		cr_assert_eq(a->settle.n_results, b->settle.n_results);
		for (uint32_t i = 0; i < a->settle.n_results; i++) {
			expect_settle_result(&a->settle.results[i], &b->settle.results[i]);
		}
		break;
	case BRQ_OP_CANCEL:
		cr_expect_eq(a->cancel.state, b->cancel.state);
		cr_expect_eq(a->cancel.canceled, b->cancel.canceled);
		break;
	case BRQ_OP_JOB: {
		const brq_job_info *x = &a->job.job, *y = &b->job.job;
		cr_expect_eq(x->id, y->id);
		expect_str(x->topic, y->topic, "topic");
		expect_str(x->payload, y->payload, "payload");
		cr_expect_eq(x->state, y->state);
		cr_expect_eq(x->attempts, y->attempts);
		cr_expect_eq(x->max_attempts, y->max_attempts);
		cr_expect_eq(x->available_at_ms, y->available_at_ms);
		cr_expect_eq(x->has_locked_by, y->has_locked_by);
		expect_str(x->locked_by, y->locked_by, "locked_by");
		cr_expect_eq(x->has_locked_until_ms, y->has_locked_until_ms);
		cr_expect_eq(x->locked_until_ms, y->locked_until_ms);
		cr_expect_eq(x->has_last_error, y->has_last_error);
		expect_str(x->last_error, y->last_error, "last_error");
		cr_expect_eq(x->has_key, y->has_key);
		expect_str(x->key, y->key, "key");
		cr_expect_eq(x->created_at_ms, y->created_at_ms);
		cr_expect_eq(x->updated_at_ms, y->updated_at_ms);
		cr_expect_eq(x->lost_leases, y->lost_leases);
		break;
	}
	case BRQ_OP_STATS:
		cr_assert_eq(a->stats.n_topics, b->stats.n_topics);
		cr_expect_eq(a->stats.has_terminal_age, b->stats.has_terminal_age);
		cr_expect_eq(a->stats.terminal_age_ms, b->stats.terminal_age_ms);
		cr_expect_eq(a->stats.terminal_estimated, b->stats.terminal_estimated);
		for (uint32_t i = 0; i < a->stats.n_topics; i++) {
			expect_str(a->stats.topics[i].topic, b->stats.topics[i].topic, "topic");
			for (int s = 0; s < BRQ_STATE__COUNT; s++) {
				cr_expect_eq(a->stats.topics[i].count[s], b->stats.topics[i].count[s]);
			}
			cr_expect_eq(a->stats.topics[i].oldest_ready_age_ms,
				     b->stats.topics[i].oldest_ready_age_ms);
		}
		break;
	default: break;
	}
}

// ---- Round trips --------------------------------------------------------------------

Test(codec, every_request_survives_encode_then_decode)
{
	brq_request in[N_SAMPLE_REQ];
	sample_requests(in);
	for (int i = 0; i < N_SAMPLE_REQ; i++) {
		cr_assert_eq(brq_request_encode(&B, &in[i]), 0);
		brq_arena_reset(&A);
		brq_status st = brq_request_decode(&R, B.data, B.len, &L, &A, E, sizeof E);
		cr_assert_eq(st, BRQ_ST_OK, "sample %d (%s): %s", i, brq_op_name(in[i].op), E);
		expect_request(&in[i], &R);
	}
}

Test(codec, every_reply_survives_encode_then_decode)
{
	brq_reply in[N_SAMPLE_REP];
	sample_replies(in);
	for (int i = 0; i < N_SAMPLE_REP; i++) {
		cr_assert_eq(brq_reply_encode(&B, &in[i]), 0);
		brq_arena_reset(&A);
		brq_status st = brq_reply_decode(&P, in[i].op, B.data, B.len, &L, &A, E, sizeof E);
		cr_assert_eq(st, BRQ_ST_OK, "sample %d (%s): %s", i, brq_op_name(in[i].op), E);
		expect_reply(&in[i], &P);
	}
}

Test(codec, streaming_reply_equals_the_typed_encoder)
{
	brq_reply in[N_SAMPLE_REP];
	brq_buf   s;

	sample_replies(in);
	brq_buf_init(&s, 0);
	cr_assert_eq(brq_reply_encode(&B, &in[2]), 0);
	cr_assert_eq(brq_reply_begin(&s, in[2].rid, 1), 0);
	brq_pack_key(&s, "jobs");
	brq_pack_array(&s, in[2].claim.n_jobs);
	for (uint32_t i = 0; i < in[2].claim.n_jobs; i++) {
		brq_pack_claimed_job(&s, &in[2].claim.jobs[i]);
	}
	cr_assert_eq(brq_buf_error(&s), 0);
	cr_assert_eq(s.len, B.len);
	cr_assert(memcmp(s.data, B.data, B.len) == 0);
	brq_buf_fini(&s);
}

Test(codec, error_reply_carries_code_and_formatted_message)
{
	cr_assert_eq(brq_reply_encode_error(&B, 42, BRQ_ST_NOT_FOUND, "job %d: not found", 17), 0);
	cr_assert_eq(brq_reply_decode(&P, BRQ_OP_JOB, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_expect_eq(P.code, BRQ_ST_NOT_FOUND);
	cr_expect_eq(P.rid, 42);
	expect_str(P.msg, brq_str_c("job 17: not found"), "msg");
}

Test(codec, error_reply_message_is_cut_at_a_character_boundary)
{
	char long_msg[2000];
	// "é" is 2 bytes; 1023 of them put a boundary at 1024 + the cut must not split one.
	for (int i = 0; i < 1000; i++) {
		long_msg[2 * i]     = '\xc3';
		long_msg[2 * i + 1] = '\xa9';
	}
	brq_reply rep = {.op = BRQ_OP_PING, .code = BRQ_ST_INTERNAL};
	rep.msg       = (brq_str) {long_msg + 1, 1999}; // starts mid-character
	cr_assert_eq(brq_reply_encode(&B, &rep), 0);
	cr_assert_eq(brq_reply_decode(&P, BRQ_OP_PING, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_expect_leq(P.msg.len, BRQ_MSG_MAX);
	// The stray continuation byte reads as U+FFFD: the whole msg is UTF-8.
	cr_expect(brq_utf8_valid(P.msg.ptr, P.msg.len, true));
	cr_expect(P.msg.len >= 3 && memcmp(P.msg.ptr, "\xef\xbf\xbd\xc3\xa9", 5) == 0);
}

Test(codec, error_reply_message_is_utf8_whatever_bytes_it_quotes)
{
	cr_assert_eq(brq_reply_encode_error(&B, 7, BRQ_ST_INVALID_ARGUMENT, "cron: \"%s\" is not a number",
					    "\xff\xc3(\xed\xa0\x80\xc3\xa9"),
		     0);
	cr_assert_eq(brq_reply_decode(&P, BRQ_OP_PING, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	// 0xff, a cut-off lead, and a UTF-16 surrogate's 3 bytes each become U+FFFD; é stays.
	expect_str(
		P.msg,
		brq_str_c("cron: \"\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9\" "
			  "is not a "
			  "number"),
		"msg");
	// Growing by replacement, it is still cut to BRQ_MSG_MAX at a character boundary.
	char bad[BRQ_MSG_MAX];
	memset(bad, '\xff', sizeof bad);
	brq_reply rep = {.op = BRQ_OP_PING, .code = BRQ_ST_INTERNAL, .msg = {bad, sizeof bad}};
	cr_assert_eq(brq_reply_encode(&B, &rep), 0);
	cr_assert_eq(brq_reply_decode(&P, BRQ_OP_PING, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_expect_eq(P.msg.len, BRQ_MSG_MAX / 3 * 3);
	cr_expect(brq_utf8_valid(P.msg.ptr, P.msg.len, true));
}

/* brq_str_eq matches every map key against field names; it looks at the first byte and
 * a bounded length, so each edge of "exactly this string" is checked here. */
Test(codec, str_eq_is_exact_at_every_edge)
{
	cr_expect(brq_str_eq((brq_str) {"", 0}, ""));
	cr_expect(!brq_str_eq((brq_str) {"", 0}, "n"));
	cr_expect(!brq_str_eq((brq_str) {"n", 1}, ""));
	cr_expect(brq_str_eq((brq_str) {"topics", 6}, "topics"));
	cr_expect(!brq_str_eq((brq_str) {"topic", 5}, "topics"), "a prefix of the literal");
	cr_expect(!brq_str_eq((brq_str) {"topicsx", 7}, "topics"), "the literal is a prefix");
	cr_expect(!brq_str_eq((brq_str) {"topicz", 6}, "topics"), "last byte differs");
	cr_expect(!brq_str_eq((brq_str) {"Topics", 6}, "topics"), "first byte differs");
	cr_expect(!brq_str_eq((brq_str) {"topics\0", 7}, "topics"), "an embedded NUL is a byte");
	cr_expect(!brq_str_eq((brq_str) {"to\0ics", 6}, "topics"));
	cr_expect(brq_str_eq((brq_str) {"topics-and-more", 6}, "topics"), "only a.len bytes are a's");
}

Test(codec, integers_decode_from_every_msgpack_int_encoding)
{
	static const char *ns[] = {"5", "u8:5", "u16:5", "u32:5", "u64:5", "i8:5", "i16:5", "i32:5", "i64:5"};
	char               src[256];
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		snprintf(src, sizeof src,
			 "{v:1, op:'claim', token:'t', rid:%s, worker:'w', topics:['a'], n:%s}", ns[i],
			 ns[i]);
		cr_expect_eq(decode_req(src), BRQ_ST_OK, "%s: %s", src, E);
		cr_expect_eq(R.claim.n, 5);
		cr_expect_eq(R.rid, 5);
	}
	cr_expect_eq(decode_req("{v:1, op:'job', token:'t', rid:u64:18446744073709551615, id:i64:9}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.rid, UINT64_MAX);
	cr_expect_eq(R.job.id, 9);
}

Test(codec, run_at_ms_accepts_signed_and_unsigned_encodings)
{
	cr_assert_eq(
		decode_req(
			"{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', run_at_ms:i64:1700000000000}]}"),
		BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.enqueue.jobs[0].run_at_ms, 1700000000000);
	cr_assert_eq(decode_req("{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', run_at_ms:u32:17}]}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.enqueue.jobs[0].run_at_ms, 17);
}

Test(codec, unknown_keys_are_ignored_at_every_level)
{
	cr_assert_eq(decode_req("{v:1, op:'enqueue', token:'t', future:{a:[1,2,{b:x'00'}]}, "
				"jobs:[{topic:'a', payload:'{}', shiny:nil, extra:[1.5, -3]}], zz:'z'}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.enqueue.n_jobs, 1);
	cr_assert_eq(decode_req("{v:1, op:'ping', token:'t', anything:[[[]]]}"), BRQ_ST_OK, "%s", E);
	cr_assert_eq(decode_req("{v:1, op:'stats', token:'t', ext:r'd40102'}"), BRQ_ST_OK, "%s", E);
	cr_assert_eq(decode_req("{v:1, op:'heartbeat', leases:[{id:1, lease:x'00'*16, note:'x'}]}"),
		     BRQ_ST_OK, "%s", E);
}

Test(codec, empty_key_means_no_key_and_spaces_are_a_real_key)
{
	cr_assert_eq(decode_req("{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', key:''}]}"), BRQ_ST_OK,
		     "%s", E);
	cr_expect_eq(R.enqueue.jobs[0].key.len, 0);
	cr_assert_eq(decode_req("{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', key:'   '}]}"), BRQ_ST_OK,
		     "%s", E);
	expect_str(R.enqueue.jobs[0].key, brq_str_c("   "), "key");
	cr_assert_eq(decode_req("{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', key:'k'*256}]}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.enqueue.jobs[0].key.len, 256);
}

Test(codec, decoded_strings_point_into_the_message_buffer)
{
	cr_assert_eq(decode_req("{v:1, op:'enqueue', token:'tok', jobs:[{topic:'abc', payload:'[]'}]}"),
		     BRQ_ST_OK);
	const char *lo = B.data, *hi = B.data + B.len;
	cr_expect(R.token.ptr >= lo && R.token.ptr + R.token.len <= hi);
	cr_expect(R.enqueue.jobs[0].topic.ptr >= lo && R.enqueue.jobs[0].topic.ptr < hi);
	cr_expect(R.enqueue.jobs[0].payload.ptr >= lo && R.enqueue.jobs[0].payload.ptr < hi);
}

Test(codec, limits_at_their_maximum_are_accepted)
{
	char src[512];
	snprintf(src, sizeof src,
		 "{v:1, op:'claim', worker:'w'*128, topics:['t'*128], n:1000, lease_ms:86400000, "
		 "wait_ms:300000}");
	cr_expect_eq(decode_req(src), BRQ_ST_OK, "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'claim', worker:'w', topics:['t'], n:1, lease_ms:1000}"), BRQ_ST_OK,
		     "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', "
				"delay_ms:315360000000, max_attempts:1000}]}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'enqueue', jobs:[{topic:'a', payload:'1', "
				"run_at_ms:253402300799999}]}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'job', id:9223372036854775807}"), BRQ_ST_OK, "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'settle', items:[{id:1, lease:x'ab'*16, outcome:'fail', "
				"error:'e'*65536}]}"),
		     BRQ_ST_OK, "%s", E);
}

Test(codec, payload_of_exactly_max_payload_is_accepted_and_one_more_byte_is_too_large)
{
	size_t       n   = L.max_payload;
	char        *pl  = malloc(n + 1);
	brq_job_spec job = {.topic = {"a", 1}};
	brq_request  q   = {.op = BRQ_OP_ENQUEUE, .enqueue = {&job, 1}};

	// A JSON string "aaaa...a" of exactly n bytes, then n + 1.
	memset(pl, 'a', n + 1);
	pl[0]       = '"';
	pl[n - 1]   = '"';
	job.payload = (brq_str) {pl, (uint32_t) n};
	cr_assert_eq(brq_request_encode(&B, &q), 0);
	cr_expect_eq(decode_raw(B.data, B.len), BRQ_ST_OK, "%s", E);
	pl[n - 1]   = 'a';
	pl[n]       = '"';
	job.payload = (brq_str) {pl, (uint32_t) n + 1};
	cr_assert_eq(brq_request_encode(&B, &q), 0);
	cr_expect_eq(decode_raw(B.data, B.len), BRQ_ST_TOO_LARGE);
	cr_expect(strstr(E, "enqueue.jobs[0].payload") != NULL, "%s", E);
	free(pl);
}

// ---- Envelope -----------------------------------------------------------------------

Test(envelope, rejects_a_top_level_value_that_is_not_a_map)
{
	static const row rows[] = {
		{"[1, 2]", BRQ_ST_INVALID_ARGUMENT, "message: must be a map"},
		{"'ping'", BRQ_ST_INVALID_ARGUMENT, "message: must be a map"},
		{"5", BRQ_ST_INVALID_ARGUMENT, "message: must be a map"},
		{"nil", BRQ_ST_INVALID_ARGUMENT, "message: must be a map"},
		{"x'8100'", BRQ_ST_INVALID_ARGUMENT, "message: must be a map"},
	};
	ROWS(rows);
}

Test(envelope, rejects_bad_or_missing_version)
{
	static const row rows[] = {
		{"{op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: required unsigned integer"},
		{"{v:2, op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: unsupported protocol version 2"},
		{"{v:0, op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: unsupported protocol version 0"},
		{"{v:-1, op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: unsupported protocol version -1"},
		{"{v:'1', op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: must be an unsigned integer"},
		{"{v:1.0, op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: must be an unsigned integer"},
		{"{v:u64:1, op:'ping'}", BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(envelope, rejects_missing_ill_typed_and_unknown_ops)
{
	static const row rows[] = {
		{"{v:1}", BRQ_ST_INVALID_ARGUMENT, "op: required string"},
		{"{v:1, op:3}", BRQ_ST_INVALID_ARGUMENT, "op: must be a string"},
		{"{v:1, op:x'70696e67'}", BRQ_ST_INVALID_ARGUMENT, "op: must be a string"},
		{"{v:1, op:'nope'}", BRQ_ST_INVALID_ARGUMENT, "op: unknown operation \"nope\""},
		{"{v:1, op:'PING'}", BRQ_ST_INVALID_ARGUMENT, "op: unknown operation"},
		{"{v:1, op:'unknown'}", BRQ_ST_INVALID_ARGUMENT, "op: unknown operation"},
		{"{v:1, op:''}", BRQ_ST_INVALID_ARGUMENT, "op: unknown operation"},
		{"{v:1, op:'ping '}", BRQ_ST_INVALID_ARGUMENT, "op: unknown operation"},
	};
	ROWS(rows);
	// Bytes that are not a plain name are not echoed back.
	cr_expect_eq(decode_req("{v:1, op:'\\x1b[31m'}"), BRQ_ST_INVALID_ARGUMENT);
	cr_expect(strchr(E, '\x1b') == NULL);
}

Test(envelope, checks_token_type_and_length_but_not_presence)
{
	static const row rows[] = {
		{"{v:1, op:'ping', token:5}", BRQ_ST_INVALID_ARGUMENT, "token: must be a string or binary"},
		{"{v:1, op:'ping', token:''}", BRQ_ST_INVALID_ARGUMENT, "token: must be 1..1024 bytes"},
		{"{v:1, op:'ping', token:x''}", BRQ_ST_INVALID_ARGUMENT, "token: must be 1..1024 bytes"},
		{"{v:1, op:'ping', token:'t'*1025}", BRQ_ST_INVALID_ARGUMENT,
		 "token: 1025 bytes exceeds 1024"},
		{"{v:1, op:'ping', token:'t'*1024}", BRQ_ST_OK, NULL},
		{"{v:1, op:'ping', token:x'00ff'}", BRQ_ST_OK, NULL},
		{"{v:1, op:'ping'}", BRQ_ST_OK, NULL},
	};
	ROWS(rows);
	cr_expect_eq(R.token.len, 0, "an absent token is left for authentication to refuse");
}

Test(envelope, rejects_ill_typed_rid)
{
	static const row rows[] = {
		{"{v:1, op:'ping', rid:-1}", BRQ_ST_INVALID_ARGUMENT, "rid: must be 0..18446744073709551615"},
		{"{v:1, op:'ping', rid:'7'}", BRQ_ST_INVALID_ARGUMENT, "rid: must be an unsigned integer"},
		{"{v:1, op:'ping', rid:nil}", BRQ_ST_INVALID_ARGUMENT, "rid: must be an unsigned integer"},
	};
	ROWS(rows);
}

Test(envelope, rejects_duplicate_and_non_string_keys)
{
	static const row rows[] = {
		{"{v:1, v:1, op:'ping'}", BRQ_ST_INVALID_ARGUMENT, "v: duplicate key"},
		{"{v:1, op:'ping', 1:2}", BRQ_ST_INVALID_ARGUMENT, "message: map keys must be strings"},
		{"{v:1, op:'ping', x'76':1}", BRQ_ST_INVALID_ARGUMENT, "message: map keys must be strings"},
		{"{v:1, op:'enqueue', jobs:[{topic:'a', topic:'b', payload:'1'}]}", BRQ_ST_INVALID_ARGUMENT,
		 "enqueue.jobs[0].topic: duplicate key"},
		{"{v:1, op:'enqueue', jobs:[{nil:1, topic:'a', payload:'1'}]}", BRQ_ST_OK, NULL},
		{"{v:1, op:'enqueue', jobs:[{[1]:1, topic:'a', payload:'1'}]}", BRQ_ST_INVALID_ARGUMENT,
		 "enqueue.jobs[0]: map keys must be strings"},
	};
	ROWS(rows);
}

/* Element paths are written per index (brq_dec_elems): the bad element's index in full,
 * several digits included, and the elements before it decoded without complaint. */
Test(envelope, names_the_bad_element_by_its_full_index)
{
	char src[8192];
	int  at = snprintf(src, sizeof src, "{v:1, op:'enqueue', jobs:[");
	for (int i = 0; i < 150 && at < (int) sizeof src - 64; i++)
		at += snprintf(src + at, sizeof src - (size_t) at, "%s{topic:'%s', payload:'1'}",
			       i ? "," : "", i == 103 ? "" : "a");
	cr_assert_lt(at, (int) sizeof src - 4);
	snprintf(src + at, sizeof src - (size_t) at, "]}");
	cr_expect_eq(decode_req(src), BRQ_ST_INVALID_ARGUMENT);
	cr_expect(strncmp(E, "enqueue.jobs[103].topic: ", 25) == 0, "%s", E);
}

Test(envelope, echoes_rid_whenever_the_message_is_a_well_formed_map)
{
	cr_expect_eq(decode_req("{v:1, op:'claim', token:'t', rid:77, worker:'w', topics:['a'], n:0}"),
		     BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(R.rid, 77);
	cr_expect_eq(R.op, BRQ_OP_CLAIM);
	cr_expect_str_eq(E, "claim.n: must be 1..1000");
	cr_expect_eq(decode_req("{v:9, rid:78, op:'claim'}"), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(R.rid, 78);
	cr_expect_eq(R.op, BRQ_OP_NONE);
	cr_expect_eq(decode_req("{v:1, rid:79, op:'bogus'}"), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(R.rid, 79);
	cr_expect_eq(R.op, BRQ_OP_NONE);
	cr_expect_eq(decode_req("{v:1, rid:80, op:'ping', token:''}"), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(R.rid, 80);
	cr_expect_eq(R.token.len, 0, "token is only set on success");
	// Broken structure: nothing can be trusted, rid stays 0.
	mp(&B, "{rid:81, v:1, op:'ping'}");
	cr_expect_eq(decode_raw(B.data, B.len - 1), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(R.rid, 0);
}

// The rid rules of docs/protocol.md §4, one row each: the rid is echoed whenever the
// envelope could be read (a map of str keys, no envelope key twice, rid a uint), and
// only then; the operation's own fields come later and never lose it.
Test(envelope, echoes_the_rid_exactly_when_the_envelope_was_read)
{
	static const struct {
		const char *src;
		brq_status  st;
		uint64_t    rid;
		const char *msg;
	} rows[] = {
		// Failures inside the operation's fields: echoed.
		{"{v:1, op:'enqueue', rid:11, jobs:[{1:2, topic:'a', payload:'1'}]}", BRQ_ST_INVALID_ARGUMENT,
		 11, "enqueue.jobs[0]: map keys must be strings"},
		{"{v:1, op:'claim', rid:12, worker:'w', topics:['a'], n:1, n:2}", BRQ_ST_INVALID_ARGUMENT, 12,
		 "claim.n: duplicate key"},
		{"{v:1, op:'settle', rid:13, items:[{id:1, id:2}]}", BRQ_ST_INVALID_ARGUMENT, 13,
		 "settle.items[0].id: duplicate key"},
		{"{v:1, op:'enqueue', rid:14, jobs:[{topic:'a', payload:'1'*70000}]}", BRQ_ST_TOO_LARGE, 14,
		 "enqueue.jobs[0].payload: 70000 bytes exceeds max_payload 65536"},
		// Failures of the envelope after the rid was read: echoed.
		{"{v:2, op:'ping', rid:15}", BRQ_ST_INVALID_ARGUMENT, 15,
		 "v: unsupported protocol version 2"},
		{"{op:'ping', rid:16}", BRQ_ST_INVALID_ARGUMENT, 16, "v: required unsigned integer"},
		{"{v:1, op:'bogus', rid:17}", BRQ_ST_INVALID_ARGUMENT, 17, "op: unknown operation \"bogus\""},
		{"{v:1, op:'ping', rid:18, token:''}", BRQ_ST_INVALID_ARGUMENT, 18,
		 "token: must be 1..1024 bytes"},
		// timeout_ms is an envelope key (§3): checked in step 1, before the token,
		// and a bad value echoes the rid.
		{"{v:1, op:'ping', rid:19, timeout_ms:4294967296}", BRQ_ST_INVALID_ARGUMENT, 19,
		 "timeout_ms: must be 0..4294967295"},
		{"{v:1, op:'ping', rid:20, timeout_ms:'5'}", BRQ_ST_INVALID_ARGUMENT, 20,
		 "timeout_ms: must be an unsigned integer"},
		{"{v:1, op:'ping', rid:27, timeout_ms:-1}", BRQ_ST_INVALID_ARGUMENT, 27,
		 "timeout_ms: must be 0..4294967295"},
		{"{v:1, op:'ping', rid:28, timeout_ms:nil}", BRQ_ST_INVALID_ARGUMENT, 28,
		 "timeout_ms: must be an unsigned integer"},
		{"{v:1, op:'ping', rid:29, timeout_ms:4294967295}", BRQ_ST_OK, 29, ""},
		// The envelope cannot be read: 0.
		{"{1:2, v:1, op:'ping', rid:21}", BRQ_ST_INVALID_ARGUMENT, 0,
		 "message: map keys must be strings"},
		{"{v:1, op:'ping', rid:22, op:'ping'}", BRQ_ST_INVALID_ARGUMENT, 0, "op: duplicate key"},
		{"{v:1, op:'ping', rid:23, rid:23}", BRQ_ST_INVALID_ARGUMENT, 0, "rid: duplicate key"},
		{"{v:1, op:'ping', rid:30, timeout_ms:1, timeout_ms:1}", BRQ_ST_INVALID_ARGUMENT, 0,
		 "timeout_ms: duplicate key"},
		{"{v:1, op:'ping', rid:'24'}", BRQ_ST_INVALID_ARGUMENT, 0,
		 "rid: must be an unsigned integer"},
		{"{v:1, op:'ping', rid:-25}", BRQ_ST_INVALID_ARGUMENT, 0,
		 "rid: must be 0..18446744073709551615"},
		{"[{v:1, op:'ping', rid:26}]", BRQ_ST_INVALID_ARGUMENT, 0, "message: must be a map"},
		// Rule 3 before rule 2: inside an unknown key's value anything well-formed goes.
		{"{v:1, op:'ping', rid:31, x:{1:2, [nil]:{x'00':3}}}", BRQ_ST_OK, 31, ""},
		{"{v:1, op:'enqueue', rid:32, jobs:[{topic:'a', payload:'1', zz:{1:2}}]}", BRQ_ST_OK, 32, ""},
		// Repeated unknown keys are ignored like any unknown key.
		{"{v:1, op:'ping', rid:33, x:1, x:2}", BRQ_ST_OK, 33, ""},
	};
	L.max_payload = 65536;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		brq_status st = decode_req(rows[i].src);
		cr_expect_eq(st, rows[i].st, "row %zu %s: status %d: %s", i, rows[i].src, st, E);
		cr_expect_eq(R.rid, rows[i].rid, "row %zu %s: rid %llu", i, rows[i].src,
			     (unsigned long long) R.rid);
		cr_expect_str_eq(E, rows[i].msg, "row %zu %s", i, rows[i].src);
	}
	// Over max_request: refused before anything is read, rid 0.
	mp(&B, "{v:1, op:'ping', rid:41, pad:'p'*100}");
	L.max_request = (uint32_t) B.len - 1;
	cr_expect_eq(decode_raw(B.data, B.len), BRQ_ST_TOO_LARGE);
	cr_expect_eq(R.rid, 0);
	// Trailing bytes: the structure is broken, rid 0.
	L.max_request = 1u << 20;
	mp(&B, "{v:1, op:'ping', rid:42}");
	char buf[64];
	memcpy(buf, B.data, B.len);
	buf[B.len] = (char) 0xc0;
	cr_expect_eq(decode_raw(buf, B.len + 1), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(R.rid, 0);
}

Test(envelope, decodes_without_looking_at_op_fields)
{
	mp(&B, "{v:1, op:'settle', token:'tok', rid:3, items:'garbage'}");
	brq_status st = brq_request_decode_envelope(&R, B.data, B.len, &L, E, sizeof E);
	cr_assert_eq(st, BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.op, BRQ_OP_SETTLE);
	cr_expect_eq(R.rid, 3);
	expect_str(R.token, brq_str_c("tok"), "token");
	st = brq_request_decode_body(&R, &L, &A, E, sizeof E);
	cr_expect_eq(st, BRQ_ST_INVALID_ARGUMENT);
	cr_expect_str_eq(E, "settle.items: must be an array");
	cr_expect_eq(R.rid, 3, "rid survives stage 2");
}

Test(envelope, body_without_envelope_is_an_internal_error)
{
	memset(&R, 0, sizeof R);
	cr_expect_eq(brq_request_decode_body(&R, &L, &A, E, sizeof E), BRQ_ST_INTERNAL);
}

Test(envelope, rejects_a_message_over_max_request_as_too_large)
{
	mp(&B, "{v:1, op:'ping', pad:'p'*100}");
	L.max_request = (uint32_t) B.len - 1;
	cr_expect_eq(decode_raw(B.data, B.len), BRQ_ST_TOO_LARGE);
	cr_expect(strstr(E, "exceeds max_request") != NULL, "%s", E);
	L.max_request = (uint32_t) B.len;
	cr_expect_eq(decode_raw(B.data, B.len), BRQ_ST_OK, "%s", E);
}

Test(codec, rejects_trailing_bytes)
{
	mp(&B, "{v:1, op:'ping'}");
	char buf[64];
	memcpy(buf, B.data, B.len);
	buf[B.len] = (char) 0xc0;
	cr_expect_eq(decode_raw(buf, B.len + 1), BRQ_ST_INVALID_ARGUMENT);
	cr_expect(strstr(E, "trailing bytes") != NULL, "%s", E);
	memcpy(buf + B.len, B.data, B.len); // two messages back to back
	cr_expect_eq(decode_raw(buf, 2 * B.len), BRQ_ST_INVALID_ARGUMENT);
}

Test(codec, rejects_truncated_message)
{
	brq_request in[N_SAMPLE_REQ];
	sample_requests(in);
	for (int i = 0; i < N_SAMPLE_REQ; i++) {
		cr_assert_eq(brq_request_encode(&B, &in[i]), 0);
		// Copy each prefix into an exact-size heap block so ASan sees any overread.
		for (size_t cut = 0; cut < B.len; cut++) {
			char *p = malloc(cut == 0 ? 1 : cut);
			memcpy(p, B.data, cut);
			brq_status st = decode_raw(p, cut);
			cr_expect_eq(st, BRQ_ST_INVALID_ARGUMENT, "sample %d cut at %zu: %s", i, cut, E);
			cr_expect_eq(R.rid, 0);
			free(p);
		}
	}
}

Test(codec, rejects_garbage_bytes)
{
	static const struct {
		const char *bytes;
		size_t      len;
	} g[] = {
		{"", 0},
		{"\xc1", 1},
		{"\x81\xc1\x01", 3},
		{"\xff\xff\xff\xff", 4},
		{"GET / HTTP/1.1\r\n\r\n", 18},
		{"{\"v\":1,\"op\":\"ping\"}", 19},
		{"\x81\xa1v", 3},
		{"\xdb\xff\xff\xff\xff", 5},
	};
	for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
		brq_status st = decode_raw(g[i].bytes, g[i].len);
		cr_expect_eq(st, BRQ_ST_INVALID_ARGUMENT, "garbage %zu: %s", i, E);
	}
}

Test(codec, rejects_huge_claimed_counts_before_allocating)
{
	// 5 bytes claiming 2^31 (array32) or 2^32-1 pairs (map32): refused by the pre-scan.
	cr_expect_eq(decode_raw("\xdd\x7f\xff\xff\xff", 5), BRQ_ST_INVALID_ARGUMENT);
	cr_expect(strstr(E, "container count exceeds message size") != NULL, "%s", E);
	cr_expect_eq(decode_raw("\xdf\xff\xff\xff\xff", 5), BRQ_ST_INVALID_ARGUMENT);
	cr_expect_eq(decode_raw("\xdc\xff\xff", 3), BRQ_ST_INVALID_ARGUMENT);
	// Inside an otherwise valid envelope.
	static const row rows[] = {
		{"{v:1, op:'enqueue', jobs:r'ddffffffff'}", BRQ_ST_INVALID_ARGUMENT, "container count"},
		{"{v:1, op:'claim', worker:'w', topics:r'dd00010000', n:1}", BRQ_ST_INVALID_ARGUMENT,
		 "container count"},
		{"{v:1, op:'ping', x:r'dfffffffff'}", BRQ_ST_INVALID_ARGUMENT, "container count"},
		{"{v:1, op:'ping', x:r'dbffffffff'}", BRQ_ST_INVALID_ARGUMENT, "truncated"},
		{"{v:1, op:'ping', x:r'c6ffffffff'}", BRQ_ST_INVALID_ARGUMENT, "truncated"},
		{"{v:1, op:'ping', x:r'c9ffffffff01'}", BRQ_ST_INVALID_ARGUMENT, "truncated"},
	};
	ROWS(rows);
}

Test(codec, rejects_nesting_deeper_than_max_depth)
{
	// Top-level map is depth 1; seven arrays inside make 8 (the default limit).
	cr_expect_eq(decode_req("{v:1, op:'ping', x:[[[[[[[1]]]]]]]}"), BRQ_ST_OK, "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'ping', x:[[[[[[[[1]]]]]]]]}"), BRQ_ST_INVALID_ARGUMENT);
	cr_expect(strstr(E, "nesting too deep") != NULL, "%s", E);
	cr_expect_eq(decode_req("{v:1, op:'ping', x:[[[[[[[{}]]]]]]]}"), BRQ_ST_INVALID_ARGUMENT,
		     "an empty container still counts as a level");
	// A million levels are refused without recursion.
	size_t   n    = 1000000;
	uint8_t *deep = malloc(n + 1);
	memset(deep, 0x91, n);
	deep[n] = 0x01;
	cr_expect_eq(decode_raw(deep, n + 1), BRQ_ST_INVALID_ARGUMENT);
	free(deep);
}

Test(codec, max_depth_five_is_enough_for_a_settle_with_chain)
{
	const char *src = "{v:1, op:'settle', items:[{id:1, lease:x'00'*16, outcome:'done', "
			  "chain:[{topic:'a', payload:'{}'}]}]}";
	L.max_depth     = 5;
	cr_expect_eq(decode_req(src), BRQ_ST_OK, "%s", E);
	L.max_depth = 4;
	cr_expect_eq(decode_req(src), BRQ_ST_INVALID_ARGUMENT);
}

// ---- Op fields ----------------------------------------------------------------------

#define ENQ(job)      "{v:1, op:'enqueue', token:'t', jobs:[" job "]}"
#define CLAIM(f)      "{v:1, op:'claim', token:'t', " f "}"
#define CLAIM_OK(f)   CLAIM("worker:'w', topics:['a'], n:1, " f)
#define HB(f)         "{v:1, op:'heartbeat', token:'t', " f "}"
#define SETTLE(items) "{v:1, op:'settle', token:'t', items:[" items "]}"
#define LEASE16       "x'00'*16"
#define IA            BRQ_ST_INVALID_ARGUMENT

Test(fields, enqueue_rejects_missing_and_ill_typed_fields)
{
	static const row rows[] = {
		{"{v:1, op:'enqueue'}", IA, "enqueue.jobs: required array"},
		{"{v:1, op:'enqueue', jobs:{}}", IA, "enqueue.jobs: must be an array"},
		{ENQ(""), IA, "enqueue.jobs: must have 1..1000 entries"},
		{ENQ("5"), IA, "enqueue.jobs[0]: must be a map"},
		{ENQ("{payload:'1'}"), IA, "enqueue.jobs[0].topic: required string"},
		{ENQ("{topic:5, payload:'1'}"), IA, "enqueue.jobs[0].topic: must be a string"},
		{ENQ("{topic:x'61', payload:'1'}"), IA, "enqueue.jobs[0].topic: must be a string"},
		{ENQ("{topic:nil, payload:'1'}"), IA, "enqueue.jobs[0].topic: must be a string"},
		{ENQ("{topic:'a'}"), IA, "enqueue.jobs[0].payload: required string"},
		{ENQ("{topic:'a', payload:{}}"), IA, "enqueue.jobs[0].payload: must be a string"},
		{ENQ("{topic:'a', payload:x'7b7d'}"), IA, "enqueue.jobs[0].payload: must be a string"},
		{ENQ("{topic:'a', payload:'1'}, {topic:'a', payload:'1'}, {topic:'a', payload:'1'}, "
		     "{payload:'1'}"),
		 IA, "enqueue.jobs[3].topic: required string"},
		{ENQ("{topic:'a', payload:'1', key:5}"), IA, "enqueue.jobs[0].key: must be a string"},
		{ENQ("{topic:'a', payload:'1', key:nil}"), IA, "enqueue.jobs[0].key: must be a string"},
		{ENQ("{topic:'a', payload:'1', key:'k'*257}"), IA,
		 "enqueue.jobs[0].key: 257 bytes exceeds 256"},
		{ENQ("{topic:'a', payload:'1', key:'a\\x00b'}"), IA, "key: must be valid UTF-8 without NUL"},
		{ENQ("{topic:'a', payload:'1', key:'\\xff'}"), IA, "key: must be valid UTF-8 without NUL"},
		{ENQ("{topic:'a', payload:'1', key:'\\xed\\xa0\\x80'}"), IA, "key: must be valid UTF-8"},
		{ENQ("{topic:'a', payload:'1', delay_ms:-1}"), IA, "delay_ms: must be 0..315360000000"},
		{ENQ("{topic:'a', payload:'1', delay_ms:315360000001}"), IA,
		 "delay_ms: must be 0..315360000000"},
		{ENQ("{topic:'a', payload:'1', delay_ms:'5'}"), IA, "delay_ms: must be an unsigned integer"},
		{ENQ("{topic:'a', payload:'1', delay_ms:1.5}"), IA, "delay_ms: must be an unsigned integer"},
		{ENQ("{topic:'a', payload:'1', run_at_ms:-1}"), IA, "run_at_ms: must be 0..253402300799999"},
		{ENQ("{topic:'a', payload:'1', run_at_ms:253402300800000}"), IA, "run_at_ms: must be 0.."},
		{ENQ("{topic:'a', payload:'1', run_at_ms:u64:18446744073709551615}"), IA,
		 "run_at_ms: must be 0.."},
		{ENQ("{topic:'a', payload:'1', run_at_ms:'x'}"), IA, "run_at_ms: must be an integer"},
		{ENQ("{topic:'a', payload:'1', max_attempts:0}"), IA, "max_attempts: must be 1..1000"},
		{ENQ("{topic:'a', payload:'1', max_attempts:1001}"), IA, "max_attempts: must be 1..1000"},
		{ENQ("{topic:'a', payload:'1', priority:0}"), IA, "priority: must be 1..9"},
		{ENQ("{topic:'a', payload:'1', priority:10}"), IA, "priority: must be 1..9"},
		{ENQ("{topic:'a', payload:'1', priority:'1'}"), IA, "priority: must be"},
		{ENQ("{topic:'a', payload:'1', max_attempts:true}"), IA,
		 "max_attempts: must be an unsigned integer"},
	};
	ROWS(rows);
}

Test(fields, delay_ms_and_run_at_ms_together_are_rejected)
{
	static const row rows[] = {
		{ENQ("{topic:'a', payload:'1', delay_ms:0, run_at_ms:0}"), IA,
		 "enqueue.jobs[0].run_at_ms: not allowed together with delay_ms"},
		{ENQ("{topic:'a', payload:'1', delay_ms:10}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'a', payload:'1', run_at_ms:10}"), BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(fields, topics_must_be_lowercase_and_1_to_128_bytes)
{
	static const row rows[] = {
		{ENQ("{topic:'Email', payload:'1'}"), IA, "enqueue.jobs[0].topic: invalid topic"},
		{ENQ("{topic:'EMAIL.SEND', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'t'*129, payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'-a', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'.a', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'_a', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'a b', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'a/b', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'caf\\xc3\\xa9', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'a\\x00', payload:'1'}"), IA, "invalid topic"},
		{ENQ("{topic:'t'*128, payload:'1'}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'a', payload:'1'}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'0', payload:'1'}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'a-b_c.d', payload:'1'}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'9..--__', payload:'1'}"), BRQ_ST_OK, NULL},
		{CLAIM("worker:'w', topics:['a', 'B'], n:1"), IA, "claim.topics[1]: invalid topic"},
		{CLAIM("worker:'w', topics:['-x'], n:1"), IA, "claim.topics[0]: invalid topic"},
	};
	ROWS(rows);
}

Test(fields, payload_must_be_valid_json)
{
	static const row rows[] = {
		{ENQ("{topic:'a', payload:''}"), IA, "enqueue.jobs[0].payload: invalid JSON at byte 0"},
		{ENQ("{topic:'a', payload:'{'}"), IA, "invalid JSON at byte 1"},
		{ENQ("{topic:'a', payload:'{a:1}'}"), IA, "invalid JSON at byte 1: expected string key"},
		{ENQ("{topic:'a', payload:'{\"a\":1'}"), IA, "invalid JSON"},
		{ENQ("{topic:'a', payload:'01'}"), IA, "invalid JSON at byte 1"},
		{ENQ("{topic:'a', payload:'NaN'}"), IA, "invalid JSON"},
		{ENQ("{topic:'a', payload:'[1,]'}"), IA, "invalid JSON at byte 3"},
		{ENQ("{topic:'a', payload:'[1e131071]'}"), IA,
		 "enqueue.jobs[0].payload: number at byte 1 would print as 131072 characters (at most 1000)"},
		{ENQ("{topic:'a', payload:'[1e131072]'}"), IA,
		 "enqueue.jobs[0].payload: number at byte 1 is out of PostgreSQL numeric's range"},
		{ENQ("{topic:'a', payload:'1.7976931348623157e308'}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'a', payload:'\"\\x01\"'}"), IA, "control character"},
		{ENQ("{topic:'a', payload:'\"\\\\u0000\"'}"), IA, "\\u0000 is not allowed"},
		{ENQ("{topic:'a', payload:'\"\\\\ud800\"'}"), IA, "lone high surrogate"},
		{ENQ("{topic:'a', payload:'\"\\xff\"'}"), IA, "invalid UTF-8"},
		{ENQ("{topic:'a', payload:'{} {}'}"), IA, "trailing characters"},
		{ENQ("{topic:'a', payload:'['*257}"), IA, "nesting too deep"},
		{ENQ("{topic:'a', payload:' {\"a\": [1, 2.5e-3, true, null, \"x\"]} '}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'a', payload:'\"\"'}"), BRQ_ST_OK, NULL},
		{ENQ("{topic:'a', payload:'null'}"), BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(fields, payload_over_max_payload_is_too_large_and_named)
{
	L.max_payload           = 4;
	static const row rows[] = {
		{ENQ("{topic:'a', payload:'12345'}"), BRQ_ST_TOO_LARGE,
		 "enqueue.jobs[0].payload: 5 bytes exceeds max_payload 4"},
		{ENQ("{topic:'a', payload:'1234'}"), BRQ_ST_OK, NULL},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', chain:[{topic:'a', payload:'[1,2,3]'}]}"),
		 BRQ_ST_TOO_LARGE, "settle.items[0].chain[0].payload: 7 bytes exceeds max_payload 4"},
	};
	ROWS(rows);
}

Test(fields, claim_rejects_missing_ill_typed_and_out_of_range_fields)
{
	static const row rows[] = {
		{CLAIM("topics:['a'], n:1"), IA, "claim.worker: required string"},
		{CLAIM("worker:5, topics:['a'], n:1"), IA, "claim.worker: must be a string"},
		{CLAIM("worker:'', topics:['a'], n:1"), IA, "claim.worker: must be 1..128 bytes"},
		{CLAIM("worker:'w'*129, topics:['a'], n:1"), IA, "claim.worker: 129 bytes exceeds 128"},
		{CLAIM("worker:'\\xc3', topics:['a'], n:1"), IA, "claim.worker: must be valid UTF-8"},
		{CLAIM("worker:'w', n:1"), IA, "claim.topics: required array"},
		{CLAIM("worker:'w', topics:'a', n:1"), IA, "claim.topics: must be an array"},
		{CLAIM("worker:'w', topics:[], n:1"), IA, "claim.topics: must have 1..64 entries"},
		{CLAIM("worker:'w', topics:[5], n:1"), IA, "claim.topics[0]: must be a string"},
		{CLAIM("worker:'w', topics:['a']"), IA, "claim.n: required unsigned integer"},
		{CLAIM("worker:'w', topics:['a'], n:0"), IA, "claim.n: must be 1..1000"},
		{CLAIM("worker:'w', topics:['a'], n:1001"), IA, "claim.n: must be 1..1000"},
		{CLAIM("worker:'w', topics:['a'], n:-1"), IA, "claim.n: must be 1..1000"},
		{CLAIM("worker:'w', topics:['a'], n:i8:-1"), IA, "claim.n: must be 1..1000"},
		{CLAIM("worker:'w', topics:['a'], n:'1'"), IA, "claim.n: must be an unsigned integer"},
		{CLAIM("worker:'w', topics:['a'], n:true"), IA, "claim.n: must be an unsigned integer"},
		{CLAIM_OK("lease_ms:999"), IA, "claim.lease_ms: must be 1000..86400000"},
		{CLAIM_OK("lease_ms:86400001"), IA, "claim.lease_ms: must be 1000..86400000"},
		{CLAIM_OK("lease_ms:nil"), IA, "claim.lease_ms: must be an unsigned integer"},
		{CLAIM_OK("wait_ms:300001"), IA, "claim.wait_ms: must be 0..300000"},
		{CLAIM_OK("wait_ms:-1"), IA, "claim.wait_ms: must be 0..300000"},
		{CLAIM_OK("settle:5"), IA, "claim.settle: must be an array"},
		{CLAIM_OK("settle:[{id:1, lease:x'00'*15, outcome:'done'}]"), IA,
		 "claim.settle[0].lease: must be binary of exactly 16 bytes"},
		{CLAIM_OK("settle:[]"), BRQ_ST_OK, NULL},
		{CLAIM_OK("wait_ms:0"), BRQ_ST_OK, NULL},
	};
	ROWS(rows);
	cr_expect(R.claim.has_wait_ms && R.claim.wait_ms == 0);
	cr_expect(!R.claim.has_settle && !R.claim.has_lease_ms);
}

Test(fields, claim_accepts_64_topics_and_rejects_65)
{
	char src[2048];
	int  n = snprintf(src, sizeof src, "{v:1, op:'claim', worker:'w', n:1, topics:[");
	for (int i = 0; i < 64; i++) {
		n += snprintf(src + n, sizeof src - (size_t) n, "'t%d',", i);
	}
	snprintf(src + n, sizeof src - (size_t) n, "]}");
	cr_expect_eq(decode_req(src), BRQ_ST_OK, "%s", E);
	cr_expect_eq(R.claim.n_topics, 64);
	snprintf(src + n, sizeof src - (size_t) n, "'x']}");
	cr_expect_eq(decode_req(src), IA);
	cr_expect_str_eq(E, "claim.topics: 65 entries exceeds the limit of 64");
}

Test(fields, heartbeat_rejects_bad_leases)
{
	static const row rows[] = {
		{HB(""), IA, "heartbeat.leases: required array"},
		{HB("leases:[]"), IA, "heartbeat.leases: must have 1..1000 entries"},
		{HB("leases:[5]"), IA, "heartbeat.leases[0]: must be a map"},
		{HB("leases:[{id:1}]"), IA, "heartbeat.leases[0].lease: required binary"},
		{HB("leases:[{lease:" LEASE16 "}]"), IA, "heartbeat.leases[0].id: required unsigned integer"},
		{HB("leases:[{id:1, lease:x'00'*15}]"), IA, "lease: must be binary of exactly 16 bytes"},
		{HB("leases:[{id:1, lease:x'00'*17}]"), IA, "lease: must be binary of exactly 16 bytes"},
		{HB("leases:[{id:1, lease:x''}]"), IA, "lease: must be binary of exactly 16 bytes"},
		{HB("leases:[{id:1, lease:'a'*16}]"), IA, "lease: must be binary of exactly 16 bytes"},
		{HB("leases:[{id:0, lease:" LEASE16 "}]"), IA,
		 "heartbeat.leases[0].id: must be 1..9223372036854775807"},
		{HB("leases:[{id:9223372036854775808, lease:" LEASE16 "}]"), IA,
		 "id: must be 1..9223372036854775807"},
		{HB("leases:[{id:-3, lease:" LEASE16 "}]"), IA, "id: must be 1..9223372036854775807"},
		{HB("leases:[{id:1, lease:" LEASE16 "}], lease_ms:5"), IA,
		 "heartbeat.lease_ms: must be 1000..86400000"},
		{HB("leases:[{id:1, lease:" LEASE16 "}], lease_ms:5000"), BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(fields, settle_checks_outcome_delay_chain_and_error)
{
	static const row rows[] = {
		{"{v:1, op:'settle'}", IA, "settle.items: required array"},
		{SETTLE(""), IA, "settle.items: must have 1..1000 entries"},
		{SETTLE("{lease:" LEASE16 ", outcome:'done'}"), IA,
		 "settle.items[0].id: required unsigned integer"},
		{SETTLE("{id:1, outcome:'done'}"), IA, "settle.items[0].lease: required binary"},
		{SETTLE("{id:1, lease:x'00'*8, outcome:'done'}"), IA,
		 "settle.items[0].lease: must be binary of exactly 16"},
		{SETTLE("{id:1, lease:" LEASE16 "}"), IA, "settle.items[0].outcome: required string"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:1}"), IA,
		 "settle.items[0].outcome: must be a string"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'DONE'}"), IA,
		 "settle.items[0].outcome: must be one of done|fail|delay|preserve|cancel"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'retry'}"), IA, "outcome: must be one of"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'delay'}"), IA,
		 "settle.items[0].delay_ms: required unsigned integer"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'delay', delay_ms:-5}"), IA,
		 "settle.items[0].delay_ms: must be 0..315360000000"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'delay', delay_ms:5}"), BRQ_ST_OK, NULL},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'fail', delay_ms:5}"), IA,
		 "settle.items[0].delay_ms: only allowed with outcome delay"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', delay_ms:5}"), IA,
		 "delay_ms: only allowed"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'fail', chain:[]}"), IA,
		 "settle.items[0].chain: only allowed with outcome done"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'cancel', chain:[{topic:'a', payload:'1'}]}"), IA,
		 "chain: only allowed with outcome done"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'delay', delay_ms:1, chain:[]}"), IA,
		 "chain: only allowed with outcome done"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'preserve', chain:nil}"), IA,
		 "chain: only allowed with outcome done"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', chain:5}"), IA,
		 "settle.items[0].chain: must be an array"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', chain:[{topic:'A', payload:'1'}]}"), IA,
		 "settle.items[0].chain[0].topic: invalid topic"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', chain:[{topic:'a', payload:'1'}]}"),
		 BRQ_ST_OK, NULL},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', chain:[]}"), BRQ_ST_OK, NULL},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'fail', error:5}"), IA,
		 "settle.items[0].error: must be a string"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'fail', error:'e'*65537}"), BRQ_ST_TOO_LARGE,
		 "settle.items[0].error: 65537 bytes exceeds 65536"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'fail', error:'\\xc0\\x80'}"), IA,
		 "settle.items[0].error: must be valid UTF-8 without NUL"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', error:'ignored'}"), BRQ_ST_OK, NULL},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done'}, {id:2, lease:" LEASE16 ", outcome:'x'}"),
		 IA, "settle.items[1].outcome"},
	};
	ROWS(rows);
}

Test(fields, cancel_and_job_need_a_valid_id)
{
	static const row rows[] = {
		{"{v:1, op:'cancel'}", IA, "cancel.id: required unsigned integer"},
		{"{v:1, op:'cancel', id:0}", IA, "cancel.id: must be 1..9223372036854775807"},
		{"{v:1, op:'cancel', id:-5}", IA, "cancel.id: must be 1..9223372036854775807"},
		{"{v:1, op:'cancel', id:'5'}", IA, "cancel.id: must be an unsigned integer"},
		{"{v:1, op:'job', id:u64:9223372036854775808}", IA, "job.id: must be 1..9223372036854775807"},
		{"{v:1, op:'job', id:[1]}", IA, "job.id: must be an unsigned integer"},
		{"{v:1, op:'job', id:1}", BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(fields, policy_ops_need_a_valid_topic_and_limits_in_range)
{
	static const row rows[] = {
		{"{v:1, op:'pause'}", IA, "pause.topic: required string"},
		{"{v:1, op:'pause', topic:'A'}", IA, "pause.topic: invalid topic"},
		{"{v:1, op:'resume', topic:5}", IA, "resume.topic: must be a string"},
		{"{v:1, op:'resume', topic:'a'}", BRQ_ST_OK, NULL},
		{"{v:1, op:'topic_limits', topic:'a'}", IA,
		 "topic_limits.max_running: give max_running or rate_per_s"},
		{"{v:1, op:'topic_limits', topic:'a', max_running:1000001}", IA,
		 "topic_limits.max_running: must be 0..1000000"},
		{"{v:1, op:'topic_limits', topic:'a', rate_per_s:-1}", IA,
		 "topic_limits.rate_per_s: must be 0..1000000"},
		{"{v:1, op:'topic_limits', topic:'a', rate_per_s:'1'}", IA,
		 "topic_limits.rate_per_s: must be"},
		{"{v:1, op:'topic_limits', topic:'a', max_running:nil}", BRQ_ST_OK, NULL},
		{"{v:1, op:'topic_limits', topic:'a', max_running:0, rate_per_s:1000000}", BRQ_ST_OK, NULL},
		{"{v:1, op:'topics', anything:[1]}", BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(fields, arrays_over_max_batch_are_too_large_and_n_over_it_is_invalid)
{
	L.max_batch             = 3;
	static const row rows[] = {
		{ENQ("{topic:'a', payload:'1'}, {topic:'a', payload:'1'}, {topic:'a', payload:'1'}, "
		     "{topic:'a', payload:'1'}"),
		 BRQ_ST_TOO_LARGE, "enqueue.jobs: 4 entries exceeds the limit of 3"},
		{ENQ("{topic:'a', payload:'1'}, {topic:'a', payload:'1'}, {topic:'a', payload:'1'}"),
		 BRQ_ST_OK, NULL},
		{CLAIM("worker:'w', topics:['a'], n:4"), IA, "claim.n: must be 1..3"},
		{HB("leases:[1,2,3,4]"), BRQ_ST_TOO_LARGE,
		 "heartbeat.leases: 4 entries exceeds the limit of 3"},
		{SETTLE("1,2,3,4"), BRQ_ST_TOO_LARGE, "settle.items: 4 entries exceeds the limit of 3"},
		{CLAIM_OK("settle:[1,2,3,4]"), BRQ_ST_TOO_LARGE, "claim.settle: 4 entries exceeds"},
		{SETTLE("{id:1, lease:" LEASE16 ", outcome:'done', chain:[1,2,3,4]}"), BRQ_ST_TOO_LARGE,
		 "settle.items[0].chain: 4 entries exceeds"},
		// The chain limit is per request, summed over items.
		{SETTLE("{id:1, lease:" LEASE16
			", outcome:'done', chain:[{topic:'a', payload:'1'}, {topic:'a', payload:'1'}]},"
			"{id:2, lease:" LEASE16
			", outcome:'done', chain:[{topic:'a', payload:'1'}, {topic:'a', payload:'1'}]}"),
		 BRQ_ST_TOO_LARGE,
		 "settle.items[1].chain: more than max_batch (3) chained jobs in one request"},
		{SETTLE("{id:1, lease:" LEASE16
			", outcome:'done', chain:[{topic:'a', payload:'1'}, {topic:'a', payload:'1'}]},"
			"{id:2, lease:" LEASE16 ", outcome:'done', chain:[{topic:'a', payload:'1'}]}"),
		 BRQ_ST_OK, NULL},
	};
	ROWS(rows);
}

Test(fields, wait_ms_is_bounded_by_the_configured_maximum)
{
	L.max_wait_ms           = 50;
	static const row rows[] = {
		{CLAIM_OK("wait_ms:50"), BRQ_ST_OK, NULL},
		{CLAIM_OK("wait_ms:51"), IA, "claim.wait_ms: must be 0..50"},
	};
	ROWS(rows);
}

Test(fields, settle_decodes_every_outcome)
{
	cr_assert_eq(decode_req(SETTLE("{id:1, lease:x'01'*16, outcome:'done'},"
				       "{id:2, lease:x'02'*16, outcome:'fail', error:'bad'},"
				       "{id:3, lease:x'03'*16, outcome:'delay', delay_ms:250},"
				       "{id:4, lease:x'04'*16, outcome:'preserve'},"
				       "{id:5, lease:x'05'*16, outcome:'cancel'}")),
		     BRQ_ST_OK, "%s", E);
	cr_assert_eq(R.settle.n_items, 5);
	for (uint32_t i = 0; i < 5; i++) {
		cr_expect_eq(R.settle.items[i].id, i + 1);
		cr_expect_eq(R.settle.items[i].outcome, (brq_outcome) i);
		cr_expect_eq(R.settle.items[i].lease[15], i + 1);
	}
	cr_expect_eq(R.settle.items[2].delay_ms, 250);
	cr_expect(R.settle.items[1].has_error);
	expect_str(R.settle.items[1].error, brq_str_c("bad"), "error");
}

// ---- Replies (client side) ----------------------------------------------------------

static brq_status
decode_rep(brq_op op, const char *src)
{
	mp(&B, src);
	brq_arena_reset(&A);
	E[0] = '\0';
	return brq_reply_decode(&P, op, B.data, B.len, &L, &A, E, sizeof E);
}

Test(reply, unknown_status_code_is_an_error_that_keeps_its_name)
{
	cr_assert_eq(decode_rep(BRQ_OP_PING, "{v:1, rid:4, code:'some_future_code', msg:'later'}"),
		     BRQ_ST_OK);
	cr_expect_eq(P.code, BRQ_ST_INTERNAL);
	expect_str(P.code_name, brq_str_c("some_future_code"), "code_name");
	expect_str(P.msg, brq_str_c("later"), "msg");
	cr_expect_eq(P.rid, 4);
}

Test(reply, error_reply_needs_no_op_fields_and_msg_is_optional)
{
	cr_assert_eq(decode_rep(BRQ_OP_CLAIM, "{v:1, code:'unavailable'}"), BRQ_ST_OK, "%s", E);
	cr_expect_eq(P.code, BRQ_ST_UNAVAILABLE);
	cr_expect_eq(P.msg.len, 0);
	cr_expect_eq(P.rid, 0);
}

Test(reply, rejects_malformed_replies)
{
	static const struct {
		brq_op      op;
		const char *src;
		const char *msg;
	} rows[] = {
		{BRQ_OP_PING, "{code:'ok', server:'s'}", "v: required unsigned integer"},
		{BRQ_OP_PING, "{v:2, code:'ok', server:'s'}", "v: unsupported protocol version 2"},
		{BRQ_OP_PING, "{v:1, server:'s'}", "code: required string"},
		{BRQ_OP_PING, "{v:1, code:5}", "code: must be a string"},
		{BRQ_OP_PING, "{v:1, code:'internal', msg:5}", "msg: must be a string"},
		{BRQ_OP_PING, "{v:1, code:'ok'}", "ping.server: required string"},
		{BRQ_OP_PING, "[1]", "message: must be a map"},
		{BRQ_OP_ENQUEUE, "{v:1, code:'ok', results:[{id:1}]}",
		 "enqueue.results[0].created: required boolean"},
		{BRQ_OP_ENQUEUE, "{v:1, code:'ok', results:[{id:-1, created:true}]}",
		 "enqueue.results[0].id"},
		{BRQ_OP_CLAIM, "{v:1, code:'ok'}", "claim.jobs: required array"},
		{BRQ_OP_CLAIM,
		 "{v:1, code:'ok', jobs:[{id:1, topic:'a', payload:'1', attempts:1, max_attempts:1, "
		 "lease:x'00'*15, lease_until_ms:1, created_at_ms:1}]}",
		 "claim.jobs[0].lease: must be binary of exactly 16 bytes"},
		{BRQ_OP_CLAIM,
		 "{v:1, code:'ok', jobs:[{id:1, topic:'a', payload:'1', attempts:4294967296, max_attempts:1, "
		 "lease:x'00'*16, lease_until_ms:1, created_at_ms:1}]}",
		 "claim.jobs[0].attempts: must be 0..4294967295"},
		{BRQ_OP_CLAIM, "{v:1, code:'ok', jobs:[], settled:[{id:1, applied:true}]}",
		 "claim.settled[0].state: required string"},
		{BRQ_OP_SETTLE, "{v:1, code:'ok', results:[{id:1, applied:false, state:'done'}]}",
		 "settle.results[0].state: must be nil when not applied"},
		{BRQ_OP_SETTLE, "{v:1, code:'ok', results:[{id:1, applied:true, state:'gone'}]}",
		 "settle.results[0].state: unknown job state"},
		{BRQ_OP_HEARTBEAT, "{v:1, code:'ok', extended:[true, 1], lease_until_ms:5}",
		 "heartbeat.extended[1]: must be a boolean"},
		{BRQ_OP_HEARTBEAT, "{v:1, code:'ok', extended:[]}",
		 "heartbeat.lease_until_ms: required integer"},
		{BRQ_OP_HEARTBEAT,
		 "{v:1, code:'ok', extended:[true, false], lease_until_ms:5, lost_reasons:['']}",
		 "heartbeat.lost_reasons: must have one entry per lease"},
		{BRQ_OP_HEARTBEAT, "{v:1, code:'ok', extended:[false], lease_until_ms:5, lost_reasons:[1]}",
		 "heartbeat.lost_reasons[0]: must be a string"},
		{BRQ_OP_CLAIM,
		 "{v:1, code:'ok', jobs:[{id:1, topic:'a', payload:'1', attempts:1, max_attempts:1, "
		 "lease:x'00'*16, lease_until_ms:1, created_at_ms:1, attempt_timeout_ms:-1}]}",
		 "claim.jobs[0].attempt_timeout_ms"},
		{BRQ_OP_CANCEL, "{v:1, code:'ok', state:'canceled'}", "cancel.canceled: required boolean"},
		{BRQ_OP_JOB, "{v:1, code:'ok'}", "job.job: required map"},
		{BRQ_OP_JOB, "{v:1, code:'ok', job:[]}", "job.job: must be a map"},
		{BRQ_OP_STATS, "{v:1, code:'ok', topics:[{topic:'a'}]}", "stats.topics[0].pending: required"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		brq_status st = decode_rep(rows[i].op, rows[i].src);
		cr_expect_eq(st, BRQ_ST_INVALID_ARGUMENT, "%s -> %s", rows[i].src, E);
		cr_expect(strstr(E, rows[i].msg) != NULL, "%s\n  -> \"%s\", want \"%s\"", rows[i].src, E,
			  rows[i].msg);
	}
}

Test(reply, nullable_job_fields_accept_nil_and_absence)
{
	cr_assert_eq(decode_rep(BRQ_OP_JOB,
				"{v:1, code:'ok', job:{id:1, topic:'a', payload:'{}', state:'dead', "
				"attempts:5, max_attempts:5, available_at_ms:1, locked_by:nil, "
				"locked_until_ms:nil, last_error:'x', created_at_ms:0, "
				"updated_at_ms:-1, future:1}}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect(!P.job.job.has_locked_by && !P.job.job.has_locked_until_ms && !P.job.job.has_key);
	cr_expect(P.job.job.has_last_error);
	cr_expect_eq(P.job.job.state, BRQ_STATE_DEAD);
	cr_expect_eq(P.job.job.updated_at_ms, -1);
}

// Timeouts: optional keys; absent, they read as none; a reason word this build does
// not know reads as "gone".
Test(reply, timeout_keys_are_optional_and_unknown_lost_reasons_read_as_gone)
{
	cr_assert_eq(decode_rep(BRQ_OP_CLAIM,
				"{v:1, code:'ok', jobs:[{id:1, topic:'a', payload:'1', attempts:1, "
				"max_attempts:1, lease:x'00'*16, lease_until_ms:1, created_at_ms:1}]}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(P.claim.jobs[0].attempt_timeout_ms, 0);
	cr_expect_eq(P.claim.jobs[0].max_execution_ms, 0);
	cr_assert_eq(decode_rep(BRQ_OP_CLAIM,
				"{v:1, code:'ok', jobs:[{id:1, topic:'a', payload:'1', attempts:1, "
				"max_attempts:1, lease:x'00'*16, lease_until_ms:1, created_at_ms:1, "
				"attempt_timeout_ms:250, max_execution_ms:4294967296}]}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_eq(P.claim.jobs[0].attempt_timeout_ms, 250);
	cr_expect_eq(P.claim.jobs[0].max_execution_ms, 4294967296ull);

	cr_assert_eq(decode_rep(BRQ_OP_HEARTBEAT, "{v:1, code:'ok', extended:[false], lease_until_ms:5}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect_null(P.heartbeat.lost_reasons, "an older gateway: no reasons");
	cr_assert_eq(
		decode_rep(BRQ_OP_HEARTBEAT,
			   "{v:1, code:'ok', extended:[true, false, false, false, false], lease_until_ms:5, "
			   "lost_reasons:['', 'canceled', 'max_execution', 'gone', 'eaten by a grue']}"),
		BRQ_ST_OK, "%s", E);
	brq_lost_reason want[] = {BRQ_LOST_NONE, BRQ_LOST_CANCELED, BRQ_LOST_MAX_EXECUTION, BRQ_LOST_GONE,
				  BRQ_LOST_GONE};
	for (int i = 0; i < 5; i++)
		cr_expect_eq(P.heartbeat.lost_reasons[i], want[i], "reason %d", i);

	cr_assert_eq(decode_rep(BRQ_OP_JOB,
				"{v:1, code:'ok', job:{id:1, topic:'a', payload:'{}', state:'processing', "
				"attempts:1, max_attempts:5, available_at_ms:1, locked_by:'w', "
				"locked_until_ms:9, last_error:nil, created_at_ms:0, updated_at_ms:2, "
				"claimed_at_ms:2, attempt_deadline_ms:302}}"),
		     BRQ_ST_OK, "%s", E);
	cr_expect(P.job.job.has_claimed_at_ms);
	cr_expect_eq(P.job.job.claimed_at_ms, 2);
	cr_expect_eq(P.job.job.attempt_deadline_ms, 302);
	cr_expect_eq(P.job.job.max_execution_deadline_ms, 0);
	cr_expect_eq(P.job.job.lost_leases, 0, "absent: none lost (and an older gateway's reply)");

	cr_assert_eq(
		decode_rep(BRQ_OP_JOB,
			   "{v:1, code:'ok', job:{id:1, topic:'a', payload:'{}', state:'dead', "
			   "attempts:5, max_attempts:2, available_at_ms:1, locked_by:nil, "
			   "locked_until_ms:nil, last_error:'quarantined', created_at_ms:0, updated_at_ms:2, "
			   "lost_leases:5}}"),
		BRQ_ST_OK, "%s", E);
	cr_expect_eq(P.job.job.lost_leases, 5);
}

Test(reply, rejects_truncated_replies)
{
	brq_reply in[N_SAMPLE_REP];
	sample_replies(in);
	for (int i = 0; i < N_SAMPLE_REP; i++) {
		cr_assert_eq(brq_reply_encode(&B, &in[i]), 0);
		for (size_t cut = 0; cut < B.len; cut++) {
			char *p = malloc(cut == 0 ? 1 : cut);
			memcpy(p, B.data, cut);
			brq_arena_reset(&A);
			brq_status st = brq_reply_decode(&P, in[i].op, p, cut, &L, &A, E, sizeof E);
			cr_expect_eq(st, BRQ_ST_INVALID_ARGUMENT, "reply %d cut at %zu", i, cut);
			free(p);
		}
	}
}

// ---- JSON validator -----------------------------------------------------------------

typedef struct {
	const char *text;
	size_t      len; // 0: strlen(text)
	bool        ok;
	size_t      off; // expected error offset when !ok
} jrow;

static void
check_json(const jrow *rows, size_t n, uint32_t depth, unsigned flags)
{
	for (size_t i = 0; i < n; i++) {
		size_t       len = rows[i].len ? rows[i].len : strlen(rows[i].text);
		brq_json_err je  = {0, NULL};
		bool         ok  = brq_json_valid(rows[i].text, len, depth, flags, &je);
		cr_expect_eq(ok, rows[i].ok, "json %zu [%s]: %s at %zu", i, rows[i].text,
			     je.reason ? je.reason : "", je.offset);
		if (!rows[i].ok && ok == rows[i].ok) {
			cr_expect_eq(je.offset, rows[i].off, "json %zu [%s]: offset %zu (%s), want %zu", i,
				     rows[i].text, je.offset, je.reason, rows[i].off);
		}
	}
}

Test(json, accepts_valid_documents)
{
	static const jrow rows[] = {
		{"0", 0, true, 0},
		{"-0", 0, true, 0},
		{"1.5e+10", 0, true, 0},
		{"-12.0E-3", 0, true, 0},
		{"123456789012345678901234567890", 0, true, 0},
		{"true", 0, true, 0},
		{"false", 0, true, 0},
		{"null", 0, true, 0},
		{"\"\"", 0, true, 0},
		{" \t\r\n[] \n", 0, true, 0},
		{"{}", 0, true, 0},
		{"{\"a\":{\"b\":[1,{\"c\":null}]},\"d\":\"e\"}", 0, true, 0},
		{"{\"a\":1,\"a\":2}", 0, true, 0}, // duplicates are not checked
		{"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 0, true, 0},
		{"\"\\u00e9\\uD83D\\uDE00\"", 0, true, 0}, // é and a surrogate pair
		{"\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", 0, true, 0},
		{"\"\\u0000\"", 0, true, 0}, // valid JSON; only refused with the flag
		{"\"\x7f\"", 0, true, 0},    // DEL is not a control character in JSON
	};
	check_json(rows, sizeof rows / sizeof rows[0], 64, 0);
}

Test(json, rejects_invalid_documents_at_the_right_offset)
{
	static const jrow rows[] = {
		{"", 0, false, 0},
		{"   ", 0, false, 3},
		{"\xef\xbb\xbf{}", 0, false, 0}, // BOM
		{"{", 0, false, 1},
		{"}", 0, false, 0},
		{"[1,]", 0, false, 3},
		{"[,1]", 0, false, 1},
		{"{\"a\"}", 0, false, 4},
		{"{\"a\":}", 0, false, 5},
		{"{\"a\":1,}", 0, false, 7},
		{"{a:1}", 0, false, 1},
		{"{'a':1}", 0, false, 1},
		{"[1 2]", 0, false, 3},
		{"[1]]", 0, false, 3},
		{"{} x", 0, false, 3},
		{"01", 0, false, 1},
		{"-", 0, false, 1},
		{"+1", 0, false, 0},
		{".5", 0, false, 0},
		{"1.", 0, false, 2},
		{"1.e5", 0, false, 2},
		{"1e", 0, false, 2},
		{"1e+", 0, false, 3},
		{"0x10", 0, false, 1},
		{"NaN", 0, false, 0},
		{"Infinity", 0, false, 0},
		{"tru", 0, false, 3},
		{"nulL", 0, false, 3},
		{"\"abc", 0, false, 4},
		{"\"a\tb\"", 0, false, 2},
		{"\"a\nb\"", 0, false, 2},
		{"\"\x1f\"", 0, false, 1},
		{"\"\\x\"", 0, false, 1},
		{"\"\\u12\"", 0, false, 1},
		{"\"\\u12g4\"", 0, false, 1},
		{"\"\\uD800\"", 0, false, 1},        // lone high surrogate
		{"\"\\uDC00\"", 0, false, 1},        // lone low surrogate
		{"\"\\uD800\\u0041\"", 0, false, 1}, // high followed by a non-low
		{"\"\\uD800x\"", 0, false, 1},
		{"\"\xff\"", 0, false, 1},
		{"\"\xc0\x80\"", 0, false, 1},         // overlong NUL
		{"\"\xed\xa0\x80\"", 0, false, 1},     // UTF-8 encoded surrogate
		{"\"\xf4\x90\x80\x80\"", 0, false, 1}, // above U+10FFFF
		{"\"\xe2\x82\"", 0, false, 1},         // truncated sequence
		{"[\"a\0b\"]", 6, false, 3},           // raw NUL
		{"\xc3\xa9", 0, false, 0},             // non-ASCII outside a string
	};
	check_json(rows, sizeof rows / sizeof rows[0], 64, 0);
}

Test(json, flags_change_surrogate_and_nul_escape_handling)
{
	static const jrow lone_ok[] = {
		{"\"\\uD800\"", 0, true, 0},
		{"\"\\uDC00\\uD800\"", 0, true, 0},
		{"\"\\uD800\\u0041\"", 0, true, 0},
	};
	check_json(lone_ok, 3, 64, BRQ_JSON_ALLOW_LONE_SURROGATES);
	static const jrow nul[] = {
		{"\"\\u0000\"", 0, false, 1},
		{"[\"ok\", \"a\\u0000\"]", 0, false, 9},
		{"\"\\u0001\"", 0, true, 0},
	};
	check_json(nul, 3, 64, BRQ_JSON_REJECT_NUL_ESCAPE);
}

Test(json, nesting_is_limited_without_recursion)
{
	size_t n    = 100000;
	char  *deep = malloc(2 * n);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	brq_json_err je;
	cr_expect(!brq_json_valid(deep, 2 * n, 256, 0, &je));
	cr_expect_eq(je.offset, 256);
	cr_expect(brq_json_valid(deep + n - 256, 512, 256, 0, NULL), "exactly 256 levels");
	cr_expect(!brq_json_valid(deep, 2 * n, UINT32_MAX, 0, &je), "depth is capped");
	cr_expect_eq(je.offset, BRQ_JSON_DEPTH_CAP);
	cr_expect(brq_json_valid("1", 1, 0, 0, NULL), "scalars have depth 0");
	cr_expect(!brq_json_valid("[]", 2, 0, 0, NULL));
	// Objects and arrays mixed: the kind of each level is remembered.
	const char *mixed = "[{\"a\":[{\"b\":[]}]}]";
	cr_expect(brq_json_valid(mixed, strlen(mixed), 5, 0, NULL));
	cr_expect(!brq_json_valid(mixed, strlen(mixed), 4, 0, NULL));
	const char *crossed = "[{\"a\":[{\"b\":[]]}]}";
	cr_expect(!brq_json_valid(crossed, strlen(crossed), 5, 0, NULL));
	free(deep);
}

// ---- JSON numbers as PostgreSQL numeric holds and prints them -------------------------
// Every printed length and refusal below was read from PostgreSQL 15
// (select length('<n>'::jsonb::text)).

typedef struct {
	const char    *text;
	bool           ok;
	brq_json_fault fault;   // when !ok
	uint64_t       printed; // when fault is BRQ_JSON_NUMBER_LONG
	size_t         off;     // when !ok
} nrow;

static void
check_numbers(const nrow *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char  *t  = rows[i].text;
		brq_json_err je = {0, NULL};
		bool         ok = brq_json_valid(t, strlen(t), 64, BRQ_JSON_FOR_JSONB, &je);
		cr_expect_eq(ok, rows[i].ok, "number %zu [%.40s]: %s", i, t, je.reason ? je.reason : "");
		cr_expect(brq_json_valid(t, strlen(t), 64, 0, NULL), "[%.40s] is valid JSON", t);
		if (ok || rows[i].ok) {
			continue;
		}
		cr_expect_eq(je.fault, rows[i].fault, "number %zu [%.40s]: fault %d (%s)", i, t, je.fault,
			     je.reason);
		cr_expect_eq(je.offset, rows[i].off, "number %zu [%.40s]: offset %zu", i, t, je.offset);
		if (rows[i].fault == BRQ_JSON_NUMBER_LONG) {
			cr_expect_eq(je.printed, rows[i].printed, "number %zu [%.40s]: printed %" PRIu64, i,
				     t, je.printed);
			cr_expect_eq(je.limit, BRQ_JSON_NUMBER_PRINT_MAX);
		}
	}
}

// s followed by n copies of c and then tail, in a static buffer per slot.
static const char *
spell(int slot, const char *s, char c, size_t n, const char *tail)
{
	static char buf[8][20000];
	size_t      k = strlen(s);
	cr_assert(k + n + strlen(tail) < sizeof buf[0]);
	memcpy(buf[slot], s, k);
	memset(buf[slot] + k, c, n);
	strcpy(buf[slot] + k + n, tail);
	return buf[slot];
}

Test(json_numbers, ordinary_numbers_and_every_double_are_accepted)
{
	static const nrow rows[] = {
		{"0", true},
		{"-0", true},
		{"[1, -2, 3.25, 1e2, 1E+2, 2.5e-3, 1.5e-10]", true},
		{"9007199254740993", true},
		{"1.7976931348623157e308", true},   // largest double: 309 digits
		{"-1.7976931348623157e+308", true}, // 310
		{"2.2250738585072014e-308", true},  // smallest normal: "0." and 324 digits
		{"-2.2250738585072014e-308", true}, // 327
		{"5e-324", true},                   // smallest subnormal: 326
		{"-4.9e-324", true},                // 328, the longest double
		{"0e1073741822", true},             // prints "0"; the largest exponent numeric_in takes
		{"-0.0e+1073741822", true},
	};
	check_numbers(rows, sizeof rows / sizeof rows[0]);
}

Test(json_numbers, a_number_may_print_as_1000_characters_and_no_more)
{
	const nrow rows[] = {
		{"1e999", true}, // "1" and 999 zeros
		{"1e1000", false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{"-1e998", true},
		{"-1e999", false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{"1e-998", true}, // "0." and 998 digits
		{"1e-999", false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{"-1e-998", false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{"1.5e-997", true},
		{"1.5e-998", false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{spell(0, "1", '0', 999, ""), true},
		{spell(1, "1", '0', 1000, ""), false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{spell(2, "0.", '0', 997, "1"), true},
		{spell(3, "0.", '0', 998, "1"), false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		// Trailing zeros count: numeric keeps the written scale ("1.50" prints "1.50").
		{spell(4, "0.", '0', 998, ""), true},
		{spell(5, "0.", '0', 999, ""), false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{"0e-998", true},
		{"-0e-999", false, BRQ_JSON_NUMBER_LONG, 1001, 0}, // zero: no sign
		{"1.000e-996", false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{"[true, 1e131071]", false, BRQ_JSON_NUMBER_LONG, 131072, 7},
		{"{\"a\": -1e131071}", false, BRQ_JSON_NUMBER_LONG, 131073, 6},
		{"0.1e131072", false, BRQ_JSON_NUMBER_LONG, 131072, 0},
		{"0.00001e131076", false, BRQ_JSON_NUMBER_LONG, 131072, 0}, // numeric holds it
		{"1.000e-16380", false, BRQ_JSON_NUMBER_LONG, 16385, 0},
		{"0.0e-16382", false, BRQ_JSON_NUMBER_LONG, 16385, 0},
	};
	check_numbers(rows, sizeof rows / sizeof rows[0]);
}

Test(json_numbers, numbers_numeric_cannot_hold_are_refused_as_out_of_range)
{
	const nrow rows[] = {
		{"1e131072", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"[0, 9.99e131072]", false, BRQ_JSON_NUMBER_RANGE, 0, 4},
		{"0.00001e131077", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"1e-16384", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"1.000e-16381", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"0.0e-16383", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"0e-1073741822", false, BRQ_JSON_NUMBER_RANGE, 0, 0}, // scale, not exponent
		{"0e1073741823", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"-0e-1073741823", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"1e2147483648", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{"1e99999999999999999999999999999999", false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		// Exponent digit strings of any length, leading zeros included, without overflow.
		{spell(0, "1e", '9', 15000, ""), false, BRQ_JSON_NUMBER_RANGE, 0, 0},
		{spell(1, "[1e-", '9', 15000, "]"), false, BRQ_JSON_NUMBER_RANGE, 0, 1},
		{spell(2, "0E+", '0', 15000, "1073741822"), true},
		{spell(3, "1e", '0', 15000, "999"), true},
		{spell(4, "1e", '0', 15000, "1000"), false, BRQ_JSON_NUMBER_LONG, 1001, 0},
		{spell(5, "1e-", '0', 15000, "1"), true},
		{spell(6, "1e", '1', 15000, ""), false, BRQ_JSON_NUMBER_RANGE, 0, 0},
	};
	check_numbers(rows, sizeof rows / sizeof rows[0]);
}

// "[" and n copies of "1e999," with the last ',' a ']': 6n + 1 bytes, each number
// printing 995 bytes longer than written.
static char *
many_1e999(size_t n, size_t *len)
{
	char *t = malloc(6 * n + 2);
	t[0]    = '[';
	for (size_t k = 0; k < n; k++) {
		memcpy(t + 1 + 6 * k, "1e999,", 6);
	}
	t[6 * n] = ']';
	*len     = 6 * n + 1;
	return t;
}

Test(json_numbers, numbers_together_grow_by_at_most_64KiB_and_twice_the_text)
{
	size_t       len;
	brq_json_err je = {0, NULL};
	// 66 numbers: 65670 bytes more, allowed 65536 + 2 * 397 = 66330.
	char *t = many_1e999(66, &len);
	cr_expect(brq_json_valid(t, len, 8, BRQ_JSON_FOR_JSONB, &je), "%s", je.reason);
	free(t);
	// 67: the 67th (at byte 1 + 66 * 6) brings 66665, allowed 65536 + 2 * 403 = 66342.
	t = many_1e999(67, &len);
	cr_expect(!brq_json_valid(t, len, 8, BRQ_JSON_FOR_JSONB, &je));
	cr_expect_eq(je.fault, BRQ_JSON_NUMBERS_GROWTH);
	cr_expect_eq(je.offset, 397);
	cr_expect_eq(je.printed, 66665);
	cr_expect_eq(je.limit, 66342);
	cr_expect(brq_json_valid(t, len, 8, BRQ_JSON_REJECT_NUL_ESCAPE, NULL), "only with the flag");
	free(t);

	// A long text of small doubles grows by less than twice itself: "1e-10" (5 bytes)
	// prints as "0.0000000001" (12).
	size_t n = 150000;
	t        = malloc(6 * n + 2);
	t[0]     = '[';
	for (size_t k = 0; k < n; k++) {
		memcpy(t + 1 + 6 * k, "1e-10,", 6);
	}
	t[6 * n] = ']';
	cr_expect(brq_json_valid(t, 6 * n + 1, 8, BRQ_JSON_FOR_JSONB, &je), "%s", je.reason);
	// "1e-99" prints 101 bytes: 96 more for 6, past 65536 + 2 * len somewhere.
	for (size_t k = 0; k < n; k++) {
		memcpy(t + 1 + 6 * k, "1e-99,", 6);
	}
	t[6 * n] = ']';
	cr_expect(!brq_json_valid(t, 6 * n + 1, 8, BRQ_JSON_FOR_JSONB, &je));
	cr_expect_eq(je.fault, BRQ_JSON_NUMBERS_GROWTH);
	free(t);
}

Test(json_numbers, the_error_text_names_the_number_and_the_bound)
{
	static const struct {
		const char *text, *want;
	} rows[] = {
		{"[1e131071]", "number at byte 1 would print as 131072 characters (at most 1000)"},
		{"[1e131072]",
		 "number at byte 1 is out of PostgreSQL numeric's range: more than 131072 "
		 "digits before the decimal point"},
		{"1e-16384",
		 "number at byte 0 is out of PostgreSQL numeric's range: more than 16383 "
		 "digits after the decimal point"},
		{"0e1073741823",
		 "number at byte 0 is out of PostgreSQL numeric's range: exponent magnitude over 1073741822"},
		{"[1,]", "invalid JSON at byte 3: expected value"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		brq_json_err je = {0, NULL};
		char         buf[160];
		cr_assert(!brq_json_valid(rows[i].text, strlen(rows[i].text), 8, BRQ_JSON_FOR_JSONB, &je));
		brq_json_err_text(&je, buf, sizeof buf);
		cr_expect_str_eq(buf, rows[i].want);
	}
	size_t       len;
	brq_json_err je = {0, NULL};
	char         buf[160];
	char        *t = many_1e999(67, &len);
	cr_assert(!brq_json_valid(t, len, 8, BRQ_JSON_FOR_JSONB, &je));
	brq_json_err_text(&je, buf, sizeof buf);
	cr_expect_str_eq(buf,
			 "numbers up to byte 397 would print 66665 bytes longer than written (at "
			 "most 66342 for this text)");
	free(t);
}

// ---- Text ---------------------------------------------------------------------------

Test(text, utf8_validation_follows_the_unicode_table)
{
	static const struct {
		const char *s;
		size_t      len;
		bool        ok;
	} rows[] = {
		{"", 0, true},
		{"plain", 5, true},
		{"\xc3\xa9", 2, true},
		{"\xef\xbf\xbf", 3, true},
		{"\xf4\x8f\xbf\xbf", 4, true},
		{"\xc2", 1, false},
		{"\xc1\xbf", 2, false},
		{"\xe0\x9f\xbf", 3, false},
		{"\xed\xbf\xbf", 3, false},
		{"\xf0\x8f\xbf\xbf", 4, false},
		{"\xf5\x80\x80\x80", 4, false},
		{"\x80", 1, false},
		{"a\0b", 3, false},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		cr_expect_eq(brq_utf8_valid(rows[i].s, rows[i].len, true), rows[i].ok, "row %zu", i);
	}
	cr_expect(brq_utf8_valid("a\0b", 3, false), "NUL is allowed when asked");
}

Test(text, truncation_never_splits_a_character)
{
	const char *s = "ab\xc3\xa9\xe2\x82\xac"; // a b é €
	cr_expect_eq(brq_utf8_truncate(s, 7, 100), 7);
	cr_expect_eq(brq_utf8_truncate(s, 7, 7), 7);
	cr_expect_eq(brq_utf8_truncate(s, 7, 6), 4);
	cr_expect_eq(brq_utf8_truncate(s, 7, 5), 4);
	cr_expect_eq(brq_utf8_truncate(s, 7, 4), 4);
	cr_expect_eq(brq_utf8_truncate(s, 7, 3), 2);
	cr_expect_eq(brq_utf8_truncate(s, 7, 0), 0);
	cr_expect_eq(brq_utf8_truncate("\x80\x80\x80\x80\x80", 5, 4), 4, "not UTF-8: byte cut");
}

Test(text, scrubbing_replaces_what_is_not_utf8_and_cuts_at_a_character)
{
	char out[32];
	// a, é, a NUL (valid), a lone continuation byte, an overlong "/", a surrogate, €.
	const char *s = "a\xc3\xa9\0\x80\xc0\xaf\xed\xa0\x80\xe2\x82\xac";
	size_t      n = brq_utf8_scrub(s, 13, out, sizeof out);
	const char *w = "a\xc3\xa9\0\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			"\xe2\x82\xac";
	cr_expect_eq(n, 25);
	cr_expect(memcmp(out, w, 25) == 0);
	cr_expect(brq_utf8_valid(out, n, false));
	cr_expect_eq(brq_utf8_scrub(s, 13, out, 24), 22, "€ does not fit whole");
	cr_expect_eq(brq_utf8_scrub(s, 13, out, 6), 4, "nor a U+FFFD");
	cr_expect_eq(brq_utf8_scrub(s, 13, out, 2), 1, "nor é");
	cr_expect_eq(brq_utf8_scrub(s, 13, out, 0), 0);
	cr_expect_eq(brq_utf8_scrub("plain", 5, out, sizeof out), 5);
}

Test(text, topic_validation)
{
	cr_expect(brq_topic_valid("email.send", 10));
	cr_expect(!brq_topic_valid("", 0));
	cr_expect(!brq_topic_valid("Email", 5));
	cr_expect(!brq_topic_valid("-a", 2));
	char t[130];
	memset(t, 'a', sizeof t);
	cr_expect(brq_topic_valid(t, 128));
	cr_expect(!brq_topic_valid(t, 129));
}

// ---- Status tables ------------------------------------------------------------------

Test(status, every_enum_value_round_trips_through_its_wire_string)
{
	for (int i = 0; i < BRQ_ST__COUNT; i++) {
		const char *n = brq_status_name((brq_status) i);
		cr_expect_eq(brq_status_lookup(n, strlen(n)), i);
	}
	for (int i = BRQ_OP_NONE + 1; i < BRQ_OP__COUNT; i++) {
		const char *n = brq_op_name((brq_op) i);
		cr_expect_eq(brq_op_lookup(n, strlen(n)), i);
	}
	for (int i = 0; i < BRQ_STATE__COUNT; i++) {
		const char *n = brq_state_name((brq_state) i);
		cr_expect_eq(brq_state_lookup(n, strlen(n)), i);
	}
	for (int i = 0; i < BRQ_OUTCOME__COUNT; i++) {
		const char *n = brq_outcome_name((brq_outcome) i);
		cr_expect_eq(brq_outcome_lookup(n, strlen(n)), i);
	}
	cr_expect_str_eq(brq_status_name(BRQ_ST_RESOURCE_EXHAUSTED), "resource_exhausted");
	cr_expect_str_eq(brq_state_name(BRQ_STATE_CANCELED), "canceled");
	cr_expect_str_eq(brq_status_name((brq_status) 99), "?");
	cr_expect_eq(brq_op_lookup("unknown", 7), -1);
	cr_expect_eq(brq_state_lookup("cancelled", 9), -1);
	cr_expect_eq(brq_status_lookup("ok ", 3), -1);
	cr_expect_eq(brq_status_lookup("o", 1), -1);
}

// ---- Arena and buffer ---------------------------------------------------------------

Test(arena, reuses_its_chunks_after_reset)
{
	brq_arena a;
	brq_arena_init(&a);
	void *p1 = brq_arena_alloc(&a, 10, 100);
	// Three chunks (16 KiB, 20,000 bytes, 16 KiB): within the 64 KiB kept across resets.
	void *p2 = brq_arena_alloc(&a, 1, 20000); // bigger than a chunk
	void *p3 = brq_arena_alloc(&a, 3, 8);
	cr_assert(p1 && p2 && p3);
	memset(p2, 0xab, 20000);
	brq_arena_reset(&a);
	void *q1 = brq_arena_alloc(&a, 10, 100);
	void *q2 = brq_arena_alloc(&a, 1, 20000);
	void *q3 = brq_arena_alloc(&a, 3, 8);
	cr_expect_eq(q1, p1);
	cr_expect_eq(q2, p2);
	cr_expect_eq(q3, p3);
	cr_expect_eq(((unsigned char *) q2)[19999], 0, "memory is zeroed");
	brq_arena_fini(&a);
}

Test(arena, allocations_are_aligned_and_overflow_is_refused)
{
	brq_arena a;
	brq_arena_init(&a);
	for (int i = 1; i < 50; i++) {
		void *p = brq_arena_alloc(&a, 1, (size_t) i);
		cr_expect_eq((uintptr_t) p % _Alignof(max_align_t), 0);
	}
	cr_expect_null(brq_arena_alloc(&a, SIZE_MAX / 2, 4));
	cr_expect_not_null(brq_arena_alloc(&a, 0, 8), "empty arrays get a pointer");
	brq_arena_reset(&a);
	brq_arena_fini(&a);
	brq_arena_fini(&a); // twice is harmless
}

Test(arena, drops_memory_beyond_the_retained_budget)
{
	brq_arena a;
	brq_arena_init(&a);
	cr_assert_not_null(brq_arena_alloc(&a, 1, 4u << 20));
	brq_arena_reset(&a);
	cr_expect_null(a.head, "a 4 MiB one-off chunk is freed on reset");
	brq_arena_fini(&a);
}

Test(buf, limit_makes_a_sticky_error_and_reset_clears_it)
{
	brq_buf b;
	brq_buf_init(&b, 8);
	cr_expect_eq(brq_pack_cstr(&b, "1234567"), 0);
	cr_expect_eq(b.len, 8);
	cr_expect_eq(brq_pack_uint(&b, 1), BRQ_E2BIG);
	cr_expect_eq(brq_pack_nil(&b), BRQ_E2BIG, "later small writes fail too");
	cr_expect_eq(brq_buf_error(&b), BRQ_E2BIG);
	cr_expect_eq(b.len, 8);
	brq_buf_reset(&b);
	cr_expect_eq(brq_buf_error(&b), 0);
	cr_expect_eq(brq_pack_nil(&b), 0);
	brq_buf_fini(&b);
}

Test(buf, whole_message_encoders_replace_the_contents_without_reallocating)
{
	brq_buf b;
	brq_buf_init(&b, 0);
	brq_request q = {.op = BRQ_OP_CANCEL, .cancel = {5}};
	cr_assert_eq(brq_request_encode(&b, &q), 0);
	size_t len  = b.len;
	char  *data = b.data;
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(brq_request_encode(&b, &q), 0);
	}
	cr_expect_eq(b.len, len);
	cr_expect_eq(b.data, data);
	brq_request none = {.op = BRQ_OP_NONE};
	cr_expect_eq(brq_request_encode(&b, &none), BRQ_EINVAL);
	brq_buf_fini(&b);
}

Test(codec, binary_tokens_are_sent_as_bin)
{
	brq_request q = {.op = BRQ_OP_PING, .token = {"\xff\xfe", 2}};
	cr_assert_eq(brq_request_encode(&B, &q), 0);
	cr_assert_eq(decode_raw(B.data, B.len), BRQ_ST_OK);
	expect_str(R.token, q.token, "token");
	bool found = false;
	for (size_t i = 0; i + 4 <= B.len; i++) {
		found = found || memcmp(B.data + i, "\xc4\x02\xff\xfe", 4) == 0;
	}
	cr_expect(found, "bin8 header");
}

// ---- Fuzz ---------------------------------------------------------------------------

static uint64_t
rnd(uint64_t *s)
{
	// xorshift64*: deterministic, so a failure reproduces.
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static void
check_decoded_request_is_sane(const brq_request *q)
{
	if (q->op == BRQ_OP_ENQUEUE) {
		cr_assert(q->enqueue.n_jobs >= 1 && q->enqueue.n_jobs <= L.max_batch);
		for (uint32_t i = 0; i < q->enqueue.n_jobs; i++) {
			const brq_job_spec *j = &q->enqueue.jobs[i];
			cr_assert(brq_topic_valid(j->topic.ptr, j->topic.len));
			cr_assert(brq_json_valid(j->payload.ptr, j->payload.len, 256, 0, NULL));
			cr_assert(!(j->has_delay_ms && j->has_run_at_ms));
		}
	} else if (q->op == BRQ_OP_CLAIM) {
		cr_assert(q->claim.n >= 1 && q->claim.n <= L.max_batch);
		cr_assert(q->claim.n_topics >= 1 && q->claim.n_topics <= BRQ_TOPICS_MAX);
	}
}

Test(fuzz, random_mutations_of_valid_messages_never_crash_and_get_a_defined_status)
{
	enum { ROUNDS = 200000, MAXLEN = 1024 };
	brq_request reqs[N_SAMPLE_REQ];
	brq_reply   reps[N_SAMPLE_REP];
	struct {
		char   bytes[MAXLEN];
		size_t len;
		brq_op op;
	} seeds[N_SAMPLE_REQ + N_SAMPLE_REP];
	static const uint8_t special[] = {0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1,
					  0xc2, 0xc3, 0xc4, 0xc6, 0xc9, 0xca, 0xcb, 0xcc, 0xcf, 0xd0, 0xd3,
					  0xd4, 0xd8, 0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff};
	size_t               n_seeds   = 0;
	uint64_t             s         = 0x9e3779b97f4a7c15u;
	uint32_t             counts[BRQ_ST__COUNT] = {0};
	char                 m[MAXLEN + 16];

	sample_requests(reqs);
	sample_replies(reps);
	for (int i = 0; i < N_SAMPLE_REQ; i++, n_seeds++) {
		cr_assert_eq(brq_request_encode(&B, &reqs[i]), 0);
		cr_assert_leq(B.len, (size_t) MAXLEN);
		memcpy(seeds[n_seeds].bytes, B.data, B.len);
		seeds[n_seeds].len = B.len;
		seeds[n_seeds].op  = BRQ_OP_NONE; // a request
	}
	for (int i = 0; i < N_SAMPLE_REP; i++, n_seeds++) {
		cr_assert_eq(brq_reply_encode(&B, &reps[i]), 0);
		memcpy(seeds[n_seeds].bytes, B.data, B.len);
		seeds[n_seeds].len = B.len;
		seeds[n_seeds].op  = reps[i].op;
	}

	for (int round = 0; round < ROUNDS; round++) {
		size_t k   = rnd(&s) % n_seeds;
		size_t len = seeds[k].len;
		memcpy(m, seeds[k].bytes, len);
		int muts = 1 + (int) (rnd(&s) % 4);
		for (int t = 0; t < muts && len > 0; t++) {
			size_t at = rnd(&s) % len;
			switch (rnd(&s) % 6) {
			case 0: m[at] ^= (char) (1u << (rnd(&s) % 8)); break;
			case 1: m[at] = (char) rnd(&s); break;
			case 2: m[at] = (char) special[rnd(&s) % sizeof special]; break;
			case 3: // insert a byte
				if (len < MAXLEN) {
					memmove(m + at + 1, m + at, len - at);
					m[at] = (char) special[rnd(&s) % sizeof special];
					len++;
				}
				break;
			case 4: // delete a byte
				memmove(m + at, m + at + 1, len - at - 1);
				len--;
				break;
			default: len = at; break; // truncate
			}
		}
		// Exact-size copy so ASan flags any read past the end.
		char *p = malloc(len == 0 ? 1 : len);
		memcpy(p, m, len);
		brq_arena_reset(&A);
		if (seeds[k].op == BRQ_OP_NONE) {
			brq_status st = brq_request_decode(&R, p, len, &L, &A, E, sizeof E);
			cr_assert(st >= BRQ_ST_OK && st < BRQ_ST__COUNT);
			cr_assert(st == BRQ_ST_OK || E[0] != '\0', "every failure says why");
			counts[st]++;
			if (st == BRQ_ST_OK) {
				check_decoded_request_is_sane(&R);
			}
		} else {
			brq_status st = brq_reply_decode(&P, seeds[k].op, p, len, &L, &A, E, sizeof E);
			cr_assert(st == BRQ_ST_OK || st == BRQ_ST_INVALID_ARGUMENT);
		}
		free(p);
	}
	cr_expect_gt(counts[BRQ_ST_OK], 0, "some mutations stay valid");
	cr_expect_gt(counts[BRQ_ST_INVALID_ARGUMENT], 0);
}

// ---- docs/protocol.md stays in step with the encoder --------------------------------

static char *
slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char  *s = malloc(cap);
	size_t got;
	while ((got = fread(s + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n - 1 == 0) {
			cap *= 2;
			s = realloc(s, cap);
		}
	}
	s[n] = '\0';
	*len = n;
	return s;
}

static void
trim(const char **p, size_t *n)
{
	while (*n > 0 && isspace((unsigned char) (*p)[0])) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && isspace((unsigned char) (*p)[*n - 1])) {
		(*n)--;
	}
}

Test(docs, protocol_examples_match_the_generator_output)
{
	const char *src = getenv("BROOQ_SOURCE_DIR");
	const char *bin = getenv("BROOQ_TEST_BIN_DIR");
	char        path[4096];

	if (src == NULL || bin == NULL) {
		cr_skip_test("BROOQ_SOURCE_DIR/BROOQ_TEST_BIN_DIR not set (run through ctest)");
	}
	snprintf(path, sizeof path, "%s/brooq_proto_examples", bin);
	FILE *gen = fopen(path, "r");
	if (gen == NULL) {
		cr_skip_test("%s not built", path);
	}
	fclose(gen);
	gen = popen(path, "r");
	cr_assert_not_null(gen);
	size_t glen;
	char  *out = slurp(gen, &glen);
	cr_assert_eq(pclose(gen), 0);

	snprintf(path, sizeof path, "%s/docs/protocol.md", src);
	FILE *doc = fopen(path, "r");
	cr_assert_not_null(doc, "%s", path);
	size_t dlen;
	char  *md = slurp(doc, &dlen);
	fclose(doc);

	const char *begin = strstr(md, "<!-- BEGIN GENERATED EXAMPLES");
	cr_assert_not_null(begin);
	begin           = strstr(begin, "-->") + 3;
	const char *end = strstr(begin, "<!-- END GENERATED EXAMPLES -->");
	cr_assert_not_null(end);
	size_t      n1 = (size_t) (end - begin), n2 = glen;
	const char *p1 = begin, *p2 = out;
	trim(&p1, &n1);
	trim(&p2, &n2);
	cr_expect(n1 == n2 && memcmp(p1, p2, n1) == 0,
		  "docs/protocol.md examples differ from brooq_proto_examples output; regenerate");
	free(out);
	free(md);
}
