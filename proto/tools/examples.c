// SPDX-License-Identifier: MIT
// Prints the request/reply examples of docs/protocol.md, encoded by the real encoder and
// checked by the real decoder, as Markdown on stdout.
#include "proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpread.h"

// The lease token every example shows (an initializer of a lease member).
#define LEASE                                                                                             \
	{                                                                                                 \
		0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, \
			0xff                                                                              \
	}

static void
die(const char *what)
{
	fprintf(stderr, "examples: %s\n", what);
	exit(1);
}

// Renders one (trusted, pre-scanned) msgpack value in a JSON-like notation, bin as
// h'..', so the reader can line the hex up with the fields.
static void
render(brq_rd *r, int indent)
{
	brq_mp_head h;
	if (brq_mp_head_read(r->p, r->end, &h) != 0) {
		die("render: bad msgpack");
	}
	switch (h.kind) {
	case BRQ_MP_NIL:
		printf("nil");
		r->p += 1;
		return;
	case BRQ_MP_BOOL:
		printf(h.b ? "true" : "false");
		r->p += 1;
		return;
	case BRQ_MP_UINT:
		printf("%" PRIu64, h.u);
		r->p += h.hdr;
		return;
	case BRQ_MP_NINT:
		printf("%" PRId64, h.i);
		r->p += h.hdr;
		return;
	case BRQ_MP_STR:
		putchar('"');
		for (uint64_t i = 0; i < h.n; i++) {
			char c = (char) r->p[h.hdr + i];
			if (c == '"' || c == '\\') {
				putchar('\\');
			}
			putchar(c);
		}
		putchar('"');
		r->p += h.hdr + h.n;
		return;
	case BRQ_MP_BIN:
		printf("h'");
		for (uint64_t i = 0; i < h.n; i++) {
			printf("%02x", r->p[h.hdr + i]);
		}
		printf("'");
		r->p += h.hdr + h.n;
		return;
	case BRQ_MP_ARRAY:
	case BRQ_MP_MAP: {
		bool map = h.kind == BRQ_MP_MAP;
		r->p += h.hdr;
		printf(map ? "{" : "[");
		for (uint64_t i = 0; i < h.n; i++) {
			printf("\n%*s", indent + 2, "");
			if (map) {
				render(r, indent + 2);
				printf(": ");
			}
			render(r, indent + 2);
			if (i + 1 < h.n) {
				putchar(',');
			}
		}
		if (h.n > 0) {
			printf("\n%*s", indent, "");
		}
		printf(map ? "}" : "]");
		return;
	}
	default: die("render: unexpected type");
	}
}

static void
show(const char *title, const brq_buf *b)
{
	brq_rd r = {(const uint8_t *) b->data, (const uint8_t *) b->data + b->len};

	printf("%s (%zu bytes):\n\n```\n", title, b->len);
	render(&r, 0);
	printf("\n```\n\n```\n");
	for (size_t i = 0; i < b->len; i++) {
		printf("%02x%s", (uint8_t) b->data[i], (i % 32 == 31 || i + 1 == b->len) ? "\n" : " ");
	}
	printf("```\n\n");
}

// Prints "### <op>", then the request and the reply of op (rid 7, token example-token),
// each rendered and in hex; both are checked by the real decoders first. req or rep
// NULL: one without fields.
static void
example(brq_op op, brq_request *req, brq_reply *rep)
{
	brq_request req0 = {.op = op};
	brq_reply   rep0 = {.op = op};
	brq_buf     b;
	brq_arena   a;
	brq_limits  lim;
	brq_request dreq;
	brq_reply   drep;
	char        err[BRQ_ERRTEXT_MAX];

	req        = req != NULL ? req : &req0;
	rep        = rep != NULL ? rep : &rep0;
	req->op    = op;
	rep->op    = op;
	req->token = brq_str_c("example-token");
	req->rid   = 7;
	rep->rid   = 7;
	brq_limits_default(&lim);
	brq_arena_init(&a);
	brq_buf_init(&b, 0);

	printf("### %s\n\n", brq_op_name(op));
	if (brq_request_encode(&b, req) != 0) {
		die("request encode");
	}
	if (brq_request_decode(&dreq, b.data, b.len, &lim, &a, err, sizeof err) != BRQ_ST_OK) {
		die(err);
	}
	show("Request", &b);
	if (brq_reply_encode(&b, rep) != 0) {
		die("reply encode");
	}
	if (brq_reply_decode(&drep, op, b.data, b.len, &lim, &a, err, sizeof err) != BRQ_ST_OK) {
		die(err);
	}
	show("Reply", &b);
	brq_buf_fini(&b);
	brq_arena_fini(&a);
}

// ping, enqueue.
static void
core_examples(void)
{
	brq_job_spec jobs[2] = {
		{.topic   = brq_str_c("email.send"),
		 .payload = brq_str_c("{\"to\":\"a@example.com\"}"),
		 .key     = brq_str_c("welcome-42")},
		{.topic            = brq_str_c("report.build"),
		 .payload          = brq_str_c("[1,2]"),
		 .has_delay_ms     = true,
		 .delay_ms         = 60000,
		 .has_max_attempts = true,
		 .max_attempts     = 3,
		 .has_priority     = true,
		 .priority         = 2},
	};
	brq_enqueue_result eres[2] = {{101, true}, {57, false}};

	example(BRQ_OP_PING, NULL, &(brq_reply) {.ping.server = brq_str_c("brooq-gateway 0.1.0")});
	example(BRQ_OP_ENQUEUE, &(brq_request) {.enqueue = {.jobs = jobs, .n_jobs = 2}},
		&(brq_reply) {.enqueue = {.results = eres, .n_results = 2}});
}

// claim, heartbeat.
static void
lease_examples(void)
{
	brq_str         topics[1] = {brq_str_c("email.send")};
	brq_settle_item done      = {.id = 99, .lease = LEASE, .outcome = BRQ_OUTCOME_DONE};
	// Both jobs the heartbeat and settle examples below hold: the enqueue example's
	// 101, and 102, on its second attempt.
	brq_claimed_job   cj[2] = {{.id                 = 101,
				    .topic              = brq_str_c("email.send"),
				    .payload            = brq_str_c("{\"to\":\"a@example.com\"}"),
				    .attempts           = 1,
				    .max_attempts       = 5,
				    .lease              = LEASE,
				    .lease_until_ms     = 1700000030000,
				    .created_at_ms      = 1699999990000,
				    .attempt_timeout_ms = 60000,
				    .max_execution_ms   = 300000},
				   {.id                 = 102,
				    .topic              = brq_str_c("email.send"),
				    .payload            = brq_str_c("{\"to\":\"b@example.com\"}"),
				    .attempts           = 2,
				    .max_attempts       = 5,
				    .lease              = LEASE,
				    .lease_until_ms     = 1700000030000,
				    .created_at_ms      = 1699999991000,
				    .attempt_timeout_ms = 60000,
				    .max_execution_ms   = 300000}};
	brq_settle_result sres1 = {99, true, BRQ_STATE_DONE};
	example(BRQ_OP_CLAIM,
		&(brq_request) {.claim = {.worker       = brq_str_c("host1/pid42"),
					  .topics       = topics,
					  .n_topics     = 1,
					  .n            = 2,
					  .has_lease_ms = true,
					  .lease_ms     = 30000,
					  .has_wait_ms  = true,
					  .wait_ms      = 10000,
					  .has_settle   = true,
					  .settle       = &done,
					  .n_settle     = 1}},
		&(brq_reply) {.claim = {.jobs        = cj,
					.n_jobs      = 2,
					.has_settled = true,
					.settled     = &sres1,
					.n_settled   = 1}});

	brq_lease_ref   lr[2]  = {{.id = 101, .lease = LEASE}, {.id = 102, .lease = LEASE}};
	bool            ext[2] = {true, false};
	brq_lost_reason why[2] = {BRQ_LOST_NONE, BRQ_LOST_CANCELED};
	example(BRQ_OP_HEARTBEAT,
		&(brq_request) {
			.heartbeat = {.leases = lr, .n_leases = 2, .has_lease_ms = true, .lease_ms = 30000}},
		&(brq_reply) {.heartbeat = {.extended       = ext,
					    .n_extended     = 2,
					    .lease_until_ms = 1700000060000,
					    .lost_reasons   = why}});
}

// settle, cancel, job, stats.
static void
settle_and_read_examples(void)
{
	brq_job_spec    chain    = {.topic = brq_str_c("email.audit"), .payload = brq_str_c("{}")};
	brq_settle_item items[3] = {
		{.id        = 101,
		 .lease     = LEASE,
		 .outcome   = BRQ_OUTCOME_FAIL,
		 .has_error = true,
		 .error     = brq_str_c("smtp timeout")},
		{.id = 102, .lease = LEASE, .outcome = BRQ_OUTCOME_DELAY, .delay_ms = 5000},
		{.id         = 103,
		 .lease      = LEASE,
		 .outcome    = BRQ_OUTCOME_DONE,
		 .has_chain  = true,
		 .chain      = &chain,
		 .n_chain    = 1,
		 .has_result = true,
		 .result     = brq_str_c("{\"sent\":1}")},
	};
	brq_settle_result sres[3] = {
		{101, true, BRQ_STATE_FAILED}, {102, false, BRQ_STATE_PENDING}, {103, true, BRQ_STATE_DONE}};
	example(BRQ_OP_SETTLE, &(brq_request) {.settle = {.items = items, .n_items = 3}},
		&(brq_reply) {.settle = {.results = sres, .n_results = 3}});

	example(BRQ_OP_CANCEL, &(brq_request) {.cancel.id = 101},
		&(brq_reply) {.cancel = {.state = BRQ_STATE_CANCELED, .canceled = true}});

	example(BRQ_OP_JOB, &(brq_request) {.job.id = 101},
		&(brq_reply) {.job.job = {
				      .id                  = 101,
				      .topic               = brq_str_c("email.send"),
				      .payload             = brq_str_c("{\"to\": \"a@example.com\"}"),
				      .state               = BRQ_STATE_PROCESSING,
				      .attempts            = 1,
				      .max_attempts        = 5,
				      .available_at_ms     = 1699999990000,
				      .has_locked_by       = true,
				      .locked_by           = brq_str_c("host1/pid42"),
				      .has_locked_until_ms = true,
				      .locked_until_ms     = 1700000030000,
				      .has_key             = true,
				      .key                 = brq_str_c("welcome-42"),
				      .created_at_ms       = 1699999990000,
				      .updated_at_ms       = 1700000000000,
				      .priority            = 1,
			      }});

	brq_topic_stats ts = {.topic               = brq_str_c("email.send"),
			      .count               = {12, 1, 2, 340, 3, 4},
			      .oldest_ready_age_ms = 1500};
	example(BRQ_OP_STATS, NULL,
		&(brq_reply) {.stats = {.topics           = &ts,
					.n_topics         = 1,
					.has_terminal_age = true,
					.terminal_age_ms  = 20000}});
}

// Pause, resume, topic limits, topics (issue 15.2-3).
static void
policy_examples(void)
{
	brq_topic_policy pol = {.topic = brq_str_c("email.send"), .paused = true, .running = 3};
	example(BRQ_OP_PAUSE, &(brq_request) {.pause.topic = pol.topic}, &(brq_reply) {.policy.policy = pol});

	pol.paused = false;
	example(BRQ_OP_RESUME, &(brq_request) {.resume.topic = pol.topic},
		&(brq_reply) {.policy.policy = pol});

	pol.max_running = 10;
	pol.rate_per_s  = 50;
	example(BRQ_OP_TOPIC_LIMITS,
		&(brq_request) {.topic_limits = {.topic           = pol.topic,
						 .has_max_running = true,
						 .max_running     = 10,
						 .has_rate_per_s  = true,
						 .rate_per_s      = 50}},
		&(brq_reply) {.policy.policy = pol});

	brq_topic_policy pols[2] = {pol, {.topic = brq_str_c("report.build"), .paused = true}};
	example(BRQ_OP_TOPICS, NULL, &(brq_reply) {.topics = {.topics = pols, .n_topics = 2}});
}

// list, retry, delete.
static void
admin_examples(void)
{
	char next[BRQ_CURSOR_MAX];
	brq_list_cursor(88, next);
	brq_job_info j = {
		.id              = 88,
		.topic           = brq_str_c("email.send"),
		.payload         = brq_str_c("{\"to\": \"b@example.com\"}"),
		.state           = BRQ_STATE_DEAD,
		.attempts        = 5,
		.max_attempts    = 5,
		.available_at_ms = 1699999990000,
		.has_last_error  = true,
		.last_error      = brq_str_c("smtp timeout"),
		.created_at_ms   = 1699999900000,
		.updated_at_ms   = 1699999990000,
		.has_retry_of    = true,
		.retry_of        = 61,
	};
	example(BRQ_OP_LIST,
		&(brq_request) {.list = {.topic     = brq_str_c("email.send"),
					 .has_state = true,
					 .state     = BRQ_STATE_DEAD,
					 .cursor    = brq_str_c("v1.90"),
					 .limit     = 1}},
		&(brq_reply) {.list = {.jobs = &j, .n_jobs = 1, .has_next = true, .next = brq_str_c(next)}});

	uint64_t ids[2] = {120, 121};
	example(BRQ_OP_RETRY,
		&(brq_request) {
			.retry = {.topic = brq_str_c("email.send"), .state = BRQ_STATE_DEAD, .limit = 100}},
		&(brq_reply) {.retry = {.retried = 2, .ids = ids, .n_ids = 2}});

	example(BRQ_OP_DELETE, &(brq_request) {.del.id = 88},
		&(brq_reply) {.del = {.id = 88, .deleted = true}});
}

// schedule_add, schedule_list, schedule_remove (issue 15.4).
static void
schedule_examples(void)
{
	example(BRQ_OP_SCHEDULE_ADD,
		&(brq_request) {.schedule_add = {.name         = brq_str_c("nightly"),
						 .topic        = brq_str_c("report.build"),
						 .payload      = brq_str_c("{\"full\":true}"),
						 .cron         = brq_str_c("30 2 * * *"),
						 .tz           = brq_str_c("Europe/Berlin"),
						 .catch_up     = true,
						 .catch_up_max = 3}},
		&(brq_reply) {.schedule_add = {.created = true, .next_slot_ms = 1700011800000}});

	brq_schedule sl[2] = {
		{.name         = brq_str_c("heartbeat"),
		 .topic        = brq_str_c("ping"),
		 .payload      = brq_str_c("{}"),
		 .every_ms     = 30000,
		 .catch_up_max = 1,
		 .enabled      = true,
		 .next_slot_ms = 1700000010000,
		 .last_slot_ms = 1699999980000,
		 .source       = brq_str_c("config")},
		{.name         = brq_str_c("nightly"),
		 .topic        = brq_str_c("report.build"),
		 .payload      = brq_str_c("{\"full\": true}"),
		 .cron         = brq_str_c("30 2 * * *"),
		 .tz           = brq_str_c("Europe/Berlin"),
		 .catch_up     = true,
		 .catch_up_max = 3,
		 .enabled      = true,
		 .next_slot_ms = 1700011800000,
		 .source       = brq_str_c("admin")},
	};
	example(BRQ_OP_SCHEDULE_LIST, NULL,
		&(brq_reply) {.schedule_list = {.schedules = sl, .n_schedules = 2}});

	example(BRQ_OP_SCHEDULE_REMOVE, &(brq_request) {.schedule_remove.name = brq_str_c("nightly")}, NULL);
}

// watch (issue 27.7): a worker's long-poll for the cancels of its running jobs.
static void
watch_examples(void)
{
	brq_str  topics[2]   = {brq_str_c("email.send"), brq_str_c("report.build")};
	uint64_t canceled[1] = {101};
	example(BRQ_OP_WATCH,
		&(brq_request) {.watch = {.topics      = topics,
					  .n_topics    = 2,
					  .cursor      = brq_str_c("9f86d081884c7d65.1041"),
					  .has_wait_ms = true,
					  .wait_ms     = 30000}},
		&(brq_reply) {.watch = {.canceled   = canceled,
					.n_canceled = 1,
					.next       = brq_str_c("9f86d081884c7d65.1042"),
					.resync     = false}});
}

int
main(void)
{
	core_examples();
	lease_examples();
	settle_and_read_examples();
	policy_examples();
	admin_examples();
	schedule_examples();
	watch_examples();

	// An error reply, as the gateway answers a claim with n = 0.
	brq_buf b;
	brq_buf_init(&b, 0);
	if (brq_reply_encode_error(&b, 7, BRQ_ST_INVALID_ARGUMENT, "claim.n: must be 1..%d", 1000) != 0) {
		die("error encode");
	}
	printf("### error reply\n\n");
	show("Reply", &b);
	brq_buf_fini(&b);
	return 0;
}
