/* SPDX-License-Identifier: MIT */
/* The codec of list, retry, delete and a settle item's result (proto/jobs.c, request_dec.c,
 * reply_dec.c): round trips, and every refusal with the field it names. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "proto.h"

static brq_buf    B;
static brq_arena  A;
static brq_limits L;
static char       E[BRQ_ERRTEXT_MAX];

static void
setup(void)
{
	brq_buf_init(&B, 0);
	brq_arena_init(&A);
	brq_limits_default(&L);
}

static void
teardown(void)
{
	brq_buf_fini(&B);
	brq_arena_fini(&A);
}

TestSuite(proto_admin, .init = setup, .fini = teardown);

/* Starts a request map of 2 + n pairs: v, op; the caller packs n key/value pairs. */
static void
begin(const char *op, uint32_t n)
{
	brq_buf_reset(&B);
	brq_pack_map(&B, 2 + n);
	brq_pack_key(&B, "v");
	brq_pack_uint(&B, 1);
	brq_pack_key(&B, "op");
	brq_pack_cstr(&B, op);
}

static void
kv_s(const char *k, const char *v)
{
	brq_pack_key(&B, k);
	brq_pack_cstr(&B, v);
}

static void
kv_u(const char *k, uint64_t v)
{
	brq_pack_key(&B, k);
	brq_pack_uint(&B, v);
}

static void
kv_i(const char *k, int64_t v)
{
	brq_pack_key(&B, k);
	brq_pack_int(&B, v);
}

static brq_status
decode(brq_request *r)
{
	cr_assert_eq(brq_buf_error(&B), 0);
	brq_arena_reset(&A);
	E[0] = '\0';
	return brq_request_decode(r, B.data, B.len, &L, &A, E, sizeof E);
}

/* Decodes B; expects status st and, unless msg is NULL, msg within the error text. */
static void
expect_at(int line, brq_status st, const char *msg)
{
	brq_request r;
	brq_status  got = decode(&r);
	cr_expect_eq(got, st, "line %d: %s (%s)", line, brq_status_name(got), E);
	if (msg != NULL)
		cr_expect(strstr(E, msg) != NULL, "line %d: \"%s\", want \"%s\"", line, E, msg);
}
#define EXPECT(st_, msg_) expect_at(__LINE__, (st_), (msg_))

#define IA BRQ_ST_INVALID_ARGUMENT

Test(proto_admin, list_requests_round_trip_with_every_filter)
{
	char cursor[BRQ_CURSOR_MAX];
	brq_list_cursor(12345, cursor);
	cr_assert_str_eq(cursor, "v1.12345");
	brq_request in = {.op = BRQ_OP_LIST, .rid = 9, .token = brq_str_c("t")};
	in.list        = (brq_list_req) {.topic                 = brq_str_c("a.b"),
					 .has_state             = true,
					 .state                 = BRQ_STATE_CANCELED,
					 .has_created_after_ms  = true,
					 .created_after_ms      = 5,
					 .has_created_before_ms = true,
					 .created_before_ms     = 6,
					 .key                   = brq_str_c("k"),
					 .cursor                = brq_str_c(cursor),
					 .limit                 = 1000};
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	brq_request out;
	cr_assert_eq(decode(&out), BRQ_ST_OK, "%s", E);
	cr_assert_eq(out.op, BRQ_OP_LIST);
	cr_assert(brq_str_eq(out.list.topic, "a.b"));
	cr_assert(out.list.has_state && out.list.state == BRQ_STATE_CANCELED);
	cr_assert(out.list.has_created_after_ms && out.list.created_after_ms == 5);
	cr_assert(out.list.has_created_before_ms && out.list.created_before_ms == 6);
	cr_assert(brq_str_eq(out.list.key, "k"));
	cr_assert_eq(out.list.before_id, 12345);
	cr_assert_eq(out.list.limit, 1000);
	/* No field at all: everything, 50 per page. */
	begin("list", 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK);
	cr_assert_eq(out.list.limit, BRQ_LIST_DEFAULT);
	cr_assert_not(out.list.has_state);
	cr_assert_eq(out.list.before_id, 0);
}

Test(proto_admin, list_refuses_bad_filters_naming_them)
{
	begin("list", 1), kv_s("topic", "A");
	EXPECT(IA, "list.topic: invalid topic");
	begin("list", 1), kv_s("state", "sleeping");
	EXPECT(IA, "list.state: must be one of pending|processing|failed|done|dead|canceled");
	begin("list", 1), kv_u("limit", 0);
	EXPECT(IA, "list.limit: must be 1..1000");
	begin("list", 1), kv_u("limit", 1001);
	EXPECT(IA, "list.limit: must be 1..1000");
	begin("list", 1), kv_i("created_after_ms", -1);
	EXPECT(IA, "list.created_after_ms: must be 0..");
	begin("list", 2), kv_i("created_after_ms", 7), kv_i("created_before_ms", 7);
	EXPECT(IA, "list.created_after_ms: must be less than created_before_ms");
	begin("list", 1), kv_s("key", "k"); /* a key alone: every topic's job with it */
	EXPECT(BRQ_ST_OK, NULL);
	begin("list", 2), kv_s("key", "k"), kv_s("topic", "a");
	EXPECT(BRQ_ST_OK, NULL);
	begin("list", 2), kv_s("key", "\xc0\x80"), kv_s("topic", "a");
	EXPECT(IA, "list.key: must be valid UTF-8 without NUL");
	static const char *bad[] = {"x",    "v1.",  "v1.0", "v1.01", "v1.-1", "v1.9223372036854775808",
				    "v2.1", "v1.1 "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		begin("list", 1), kv_s("cursor", bad[i]);
		EXPECT(IA, "list.cursor: not a cursor of this list");
	}
	char longer[80];
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	begin("list", 1), kv_s("cursor", longer);
	EXPECT(IA, "list.cursor: ");
	begin("list", 1), kv_s("cursor", "v1.9223372036854775807");
	EXPECT(BRQ_ST_OK, NULL);
}

Test(proto_admin, retry_is_one_id_or_a_topic_with_dead_or_canceled)
{
	begin("retry", 0);
	EXPECT(IA, "retry: give either id, or topic with state");
	begin("retry", 2), kv_u("id", 5), kv_s("topic", "a");
	EXPECT(IA, "retry: give either id, or topic with state");
	begin("retry", 2), kv_u("id", 5), kv_s("state", "dead");
	EXPECT(IA, "retry.state: only allowed with topic");
	begin("retry", 2), kv_u("id", 5), kv_u("limit", 5);
	EXPECT(IA, "retry.limit: only allowed with topic");
	begin("retry", 1), kv_u("id", 0);
	EXPECT(IA, "retry.id: must be 1..");
	begin("retry", 1), kv_s("topic", "a");
	EXPECT(IA, "retry.state: required string");
	begin("retry", 2), kv_s("topic", "a"), kv_s("state", "done");
	EXPECT(IA, "retry.state: must be dead or canceled");
	begin("retry", 3), kv_s("topic", "a"), kv_s("state", "dead"), kv_u("limit", 1001);
	EXPECT(IA, "retry.limit: must be 1..1000");

	brq_request out;
	begin("retry", 2), kv_s("topic", "a"), kv_s("state", "canceled");
	cr_assert_eq(decode(&out), BRQ_ST_OK, "%s", E);
	cr_assert_eq(out.retry.id, 0);
	cr_assert_eq(out.retry.state, BRQ_STATE_CANCELED);
	cr_assert_eq(out.retry.limit, BRQ_RETRY_DEFAULT);
	brq_request in = {.op = BRQ_OP_RETRY, .retry = {.id = 77}};
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK);
	cr_assert_eq(out.retry.id, 77);
	in = (brq_request) {.op    = BRQ_OP_RETRY,
			    .retry = {.topic = brq_str_c("t"), .state = BRQ_STATE_DEAD, .limit = 3}};
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK);
	cr_assert(brq_str_eq(out.retry.topic, "t") && out.retry.limit == 3 &&
		  out.retry.state == BRQ_STATE_DEAD);
}

Test(proto_admin, delete_needs_a_valid_id)
{
	begin("delete", 0);
	EXPECT(IA, "delete.id: required unsigned integer");
	begin("delete", 1), kv_s("id", "5");
	EXPECT(IA, "delete.id: must be an unsigned integer");
	brq_request in = {.op = BRQ_OP_DELETE, .del = {.id = 9}}, out;
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK);
	cr_assert_eq(out.del.id, 9);
}

/* A settle item with outcome done and the given result (raw msgpack str). */
static void
settle_with_result(const char *outcome, const char *result, size_t len)
{
	static const uint8_t lease[BRQ_LEASE_LEN] = {1};
	begin("settle", 1);
	brq_pack_key(&B, "items");
	brq_pack_array(&B, 1);
	brq_pack_map(&B, 4);
	kv_u("id", 1);
	brq_pack_key(&B, "lease");
	brq_pack_bin(&B, lease, BRQ_LEASE_LEN);
	kv_s("outcome", outcome);
	brq_pack_key(&B, "result");
	brq_pack_str(&B, (brq_str) {result, (uint32_t) len});
}

Test(proto_admin, a_settle_result_is_held_to_the_payload_rules)
{
	settle_with_result("done", "{\"a\":[1,2]}", 11);
	brq_request out;
	cr_assert_eq(decode(&out), BRQ_ST_OK, "%s", E);
	cr_assert(out.settle.items[0].has_result);
	cr_assert(brq_str_eq(out.settle.items[0].result, "{\"a\":[1,2]}"));
	settle_with_result("fail", "{}", 2);
	EXPECT(IA, "settle.items[0].result: only allowed with outcome done");
	settle_with_result("done", "{\"a\":", 5);
	EXPECT(IA, "settle.items[0].result: invalid JSON at byte 5");
	settle_with_result("done", "\"\\u0000\"", 8);
	EXPECT(IA, "settle.items[0].result: invalid JSON");
	settle_with_result("done", "[1e1000]", 8);
	EXPECT(IA, "settle.items[0].result: number at byte 1 would print as 1001 characters (at most 1000)");
	static char big[2000];
	L.max_payload = 1000;
	memset(big, ' ', sizeof(big));
	big[0] = '1';
	settle_with_result("done", big, 1000);
	EXPECT(BRQ_ST_OK, NULL);
	settle_with_result("done", big, 1001);
	EXPECT(BRQ_ST_TOO_LARGE, "settle.items[0].result: 1001 bytes exceeds max_payload 1000");
	/* The encoder writes it only when set, and it comes back. */
	brq_settle_item it = {
		.id = 3, .outcome = BRQ_OUTCOME_DONE, .has_result = true, .result = brq_str_c("[]")};
	brq_request in = {.op = BRQ_OP_SETTLE, .settle = {.items = &it, .n_items = 1}};
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK, "%s", E);
	cr_assert(brq_str_eq(out.settle.items[0].result, "[]"));
	it.has_result = false;
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK);
	cr_assert_not(out.settle.items[0].has_result);
}

Test(proto_admin, replies_round_trip_and_old_job_maps_read_as_no_result)
{
	brq_job_info jobs[2] = {
		{.id            = 8,
		 .topic         = brq_str_c("a"),
		 .payload       = brq_str_c("{}"),
		 .state         = BRQ_STATE_DONE,
		 .has_result    = true,
		 .result        = brq_str_c("{\"ok\": true}"),
		 .has_retry_of  = true,
		 .retry_of      = 3,
		 .created_at_ms = 1},
		{.id = 7, .topic = brq_str_c("a"), .payload = brq_str_c("1"), .state = BRQ_STATE_DEAD},
	};
	brq_reply in = {.op = BRQ_OP_LIST, .rid = 4, .list = {jobs, 2, true, brq_str_c("v1.7")}}, out;
	cr_assert_eq(brq_reply_encode(&B, &in), 0);
	cr_assert_eq(brq_reply_decode(&out, BRQ_OP_LIST, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK, "%s",
		     E);
	cr_assert_eq(out.list.n_jobs, 2);
	cr_assert(out.list.jobs[0].has_result && brq_str_eq(out.list.jobs[0].result, "{\"ok\": true}"));
	cr_assert(out.list.jobs[0].has_retry_of && out.list.jobs[0].retry_of == 3);
	cr_assert_not(out.list.jobs[1].has_result);
	cr_assert_not(out.list.jobs[1].has_retry_of);
	cr_assert(out.list.has_next && brq_str_eq(out.list.next, "v1.7"));
	in.list.has_next = false;
	cr_assert_eq(brq_reply_encode(&B, &in), 0);
	cr_assert_eq(brq_reply_decode(&out, BRQ_OP_LIST, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_assert_not(out.list.has_next);

	uint64_t ids[2] = {10, 11};
	in              = (brq_reply) {.op = BRQ_OP_RETRY, .retry = {2, ids, 2}};
	cr_assert_eq(brq_reply_encode(&B, &in), 0);
	cr_assert_eq(brq_reply_decode(&out, BRQ_OP_RETRY, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_assert(out.retry.retried == 2 && out.retry.n_ids == 2 && out.retry.ids[1] == 11);
	in = (brq_reply) {.op = BRQ_OP_DELETE, .del = {5, true}};
	cr_assert_eq(brq_reply_encode(&B, &in), 0);
	cr_assert_eq(brq_reply_decode(&out, BRQ_OP_DELETE, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_assert(out.del.id == 5 && out.del.deleted);

	/* A job map from a gateway that predates result and retry_of: both absent. */
	brq_buf_reset(&B);
	brq_pack_map(&B, 4);
	brq_pack_key(&B, "v"), brq_pack_uint(&B, 1);
	brq_pack_key(&B, "rid"), brq_pack_uint(&B, 1);
	brq_pack_key(&B, "code"), brq_pack_cstr(&B, "ok");
	brq_pack_key(&B, "job");
	brq_job_info old = jobs[1];
	brq_buf      tmp;
	brq_buf_init(&tmp, 0);
	brq_pack_job_info(&tmp, &old);
	/* Rewrite the map header 15 -> 13 and drop the last two pairs ("result": nil,
	 * "retry_of": nil, 18 bytes), as the older encoder wrote it. */
	cr_assert_eq((uint8_t) tmp.data[0], 0x8f);
	tmp.data[0] = (char) 0x8d;
	tmp.len -= strlen("result") + 2 + strlen("retry_of") + 2;
	msgpack_pack_str_body(brq_buf_packer(&B), tmp.data, tmp.len);
	brq_buf_fini(&tmp);
	cr_assert_eq(brq_reply_decode(&out, BRQ_OP_JOB, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK, "%s",
		     E);
	cr_assert_not(out.job.job.has_result);
	cr_assert_not(out.job.job.has_retry_of);
	cr_assert_eq(out.job.job.id, 7);
}

Test(proto_admin, conflict_is_a_status_of_its_own)
{
	cr_assert_str_eq(brq_status_name(BRQ_ST_CONFLICT), "conflict");
	cr_assert_eq(brq_status_lookup("conflict", 8), BRQ_ST_CONFLICT);
	cr_assert_eq(brq_op_lookup("list", 4), BRQ_OP_LIST);
	cr_assert_eq(brq_op_lookup("retry", 5), BRQ_OP_RETRY);
	cr_assert_eq(brq_op_lookup("delete", 6), BRQ_OP_DELETE);
}

/* watch (issue 27.7): a worker's long-poll for the cancels of its running jobs. */
Test(proto_admin, watch_requests_and_replies_round_trip)
{
	brq_str     topics[2] = {brq_str_c("a.b"), brq_str_c("c")};
	brq_request in        = {.op = BRQ_OP_WATCH, .rid = 3, .token = brq_str_c("t")};
	in.watch              = (brq_watch_req) {.topics      = topics,
						 .n_topics    = 2,
						 .cursor      = brq_str_c("x.1"),
						 .has_wait_ms = true,
						 .wait_ms     = 0};
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	brq_request out;
	cr_assert_eq(decode(&out), BRQ_ST_OK, "%s", E);
	cr_assert_eq(out.op, BRQ_OP_WATCH);
	cr_assert_eq(out.watch.n_topics, 2);
	cr_assert(brq_str_eq(out.watch.topics[1], "c"));
	cr_assert(brq_str_eq(out.watch.cursor, "x.1"));
	cr_assert(out.watch.has_wait_ms && out.watch.wait_ms == 0);
	/* The first watch of a worker: no cursor, no wait. */
	in.watch.cursor      = (brq_str) {NULL, 0};
	in.watch.has_wait_ms = false;
	cr_assert_eq(brq_request_encode(&B, &in), 0);
	cr_assert_eq(decode(&out), BRQ_ST_OK, "%s", E);
	cr_assert_eq(out.watch.cursor.len, 0);
	cr_assert_not(out.watch.has_wait_ms);

	uint64_t  ids[3] = {5, 9223372036854775807ull, 1};
	brq_reply rin    = {.op = BRQ_OP_WATCH, .rid = 3, .watch = {ids, 3, brq_str_c("e.7"), true}}, rout;
	cr_assert_eq(brq_reply_encode(&B, &rin), 0);
	cr_assert_eq(brq_reply_decode(&rout, BRQ_OP_WATCH, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK,
		     "%s", E);
	cr_assert_eq(rout.watch.n_canceled, 3);
	cr_assert_eq(rout.watch.canceled[1], 9223372036854775807ull);
	cr_assert(brq_str_eq(rout.watch.next, "e.7"));
	cr_assert(rout.watch.resync);
	rin.watch = (brq_watch_rep) {NULL, 0, brq_str_c("e.8"), false};
	cr_assert_eq(brq_reply_encode(&B, &rin), 0);
	cr_assert_eq(brq_reply_decode(&rout, BRQ_OP_WATCH, B.data, B.len, &L, &A, E, sizeof E), BRQ_ST_OK);
	cr_assert_eq(rout.watch.n_canceled, 0);
	cr_assert_not(rout.watch.resync);
}

Test(proto_admin, watch_refuses_bad_fields_naming_them)
{
	begin("watch", 0);
	EXPECT(IA, "watch.topics: required");
	begin("watch", 1), brq_pack_key(&B, "topics"), brq_pack_array(&B, 0);
	EXPECT(IA, "watch.topics: ");
	begin("watch", 1), brq_pack_key(&B, "topics"), brq_pack_array(&B, 1), brq_pack_cstr(&B, "A");
	EXPECT(IA, "watch.topics[0]: invalid topic");
	begin("watch", 1), brq_pack_key(&B, "topics"), brq_pack_array(&B, 65);
	for (int i = 0; i < 65; i++)
		brq_pack_cstr(&B, "a");
	EXPECT(IA, "watch.topics: ");
	char longer[BRQ_CURSOR_MAX + 2];
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	begin("watch", 2), brq_pack_key(&B, "topics"), brq_pack_array(&B, 1), brq_pack_cstr(&B, "a");
	kv_s("cursor", longer);
	EXPECT(IA, "watch.cursor: ");
	begin("watch", 2), brq_pack_key(&B, "topics"), brq_pack_array(&B, 1), brq_pack_cstr(&B, "a");
	kv_s("cursor", "");
	EXPECT(IA, "watch.cursor: ");
	/* Any other cursor is the gateway's to read (an unknown one gets resync). */
	begin("watch", 2), brq_pack_key(&B, "topics"), brq_pack_array(&B, 1), brq_pack_cstr(&B, "a");
	kv_s("cursor", "not-one-of-ours");
	EXPECT(BRQ_ST_OK, NULL);
	begin("watch", 2), brq_pack_key(&B, "topics"), brq_pack_array(&B, 1), brq_pack_cstr(&B, "a");
	kv_u("wait_ms", (uint64_t) L.max_wait_ms + 1);
	EXPECT(IA, "watch.wait_ms: must be 0..300000");
	begin("watch", 2), brq_pack_key(&B, "topics"), brq_pack_array(&B, 1), brq_pack_cstr(&B, "a");
	kv_u("wait_ms", L.max_wait_ms);
	EXPECT(BRQ_ST_OK, NULL);
	cr_assert_eq(brq_op_lookup("watch", 5), BRQ_OP_WATCH);
	cr_assert_not(brq_op_admin_only(BRQ_OP_WATCH));
}
