// SPDX-License-Identifier: MIT
// Prints the request/reply examples of docs/protocol.md, encoded by the real encoder and
// checked by the real decoder, as Markdown on stdout.
#include "proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples.h"
#include "mpread.h"

const uint8_t LEASE[BRQ_LEASE_LEN] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
				      0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};

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

void
example(const char *name, brq_request *req, brq_reply *rep)
{
	brq_buf     b;
	brq_arena   a;
	brq_limits  lim;
	brq_request dreq;
	brq_reply   drep;
	char        err[BRQ_ERRTEXT_MAX];

	brq_limits_default(&lim);
	brq_arena_init(&a);
	brq_buf_init(&b, 0);
	req->token = brq_str_c("example-token");
	req->rid   = 7;
	rep->rid   = 7;

	printf("### %s\n\n", name);
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
	if (brq_reply_decode(&drep, rep->op, b.data, b.len, &lim, &a, err, sizeof err) != BRQ_ST_OK) {
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
	brq_request req;
	brq_reply   rep;

	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op          = BRQ_OP_PING;
	rep.op          = BRQ_OP_PING;
	rep.ping.server = brq_str_c("brooq-gateway 0.1.0");
	example("ping", &req, &rep);

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
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op                = BRQ_OP_ENQUEUE;
	req.enqueue.jobs      = jobs;
	req.enqueue.n_jobs    = 2;
	rep.op                = BRQ_OP_ENQUEUE;
	rep.enqueue.results   = eres;
	rep.enqueue.n_results = 2;
	example("enqueue", &req, &rep);
}

// claim, heartbeat.
static void
lease_examples(void)
{
	brq_request req;
	brq_reply   rep;

	brq_str         topics[1] = {brq_str_c("email.send")};
	brq_settle_item done      = {.id = 99, .outcome = BRQ_OUTCOME_DONE};
	memcpy(done.lease, LEASE, sizeof LEASE);
	brq_claimed_job cj = {.id                 = 101,
			      .topic              = brq_str_c("email.send"),
			      .payload            = brq_str_c("{\"to\":\"a@example.com\"}"),
			      .attempts           = 1,
			      .max_attempts       = 5,
			      .lease_until_ms     = 1700000030000,
			      .created_at_ms      = 1699999990000,
			      .attempt_timeout_ms = 60000,
			      .max_execution_ms   = 300000};
	memcpy(cj.lease, LEASE, sizeof LEASE);
	brq_settle_result sres1 = {99, true, BRQ_STATE_DONE};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op                 = BRQ_OP_CLAIM;
	req.claim.worker       = brq_str_c("host1/pid42");
	req.claim.topics       = topics;
	req.claim.n_topics     = 1;
	req.claim.n            = 2;
	req.claim.has_lease_ms = true;
	req.claim.lease_ms     = 30000;
	req.claim.has_wait_ms  = true;
	req.claim.wait_ms      = 10000;
	req.claim.has_settle   = true;
	req.claim.settle       = &done;
	req.claim.n_settle     = 1;
	rep.op                 = BRQ_OP_CLAIM;
	rep.claim.jobs         = &cj;
	rep.claim.n_jobs       = 1;
	rep.claim.has_settled  = true;
	rep.claim.settled      = &sres1;
	rep.claim.n_settled    = 1;
	example("claim", &req, &rep);

	brq_lease_ref lr[2] = {{.id = 101}, {.id = 102}};
	memcpy(lr[0].lease, LEASE, sizeof LEASE);
	memcpy(lr[1].lease, LEASE, sizeof LEASE);
	bool            ext[2] = {true, false};
	brq_lost_reason why[2] = {BRQ_LOST_NONE, BRQ_LOST_CANCELED};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op                       = BRQ_OP_HEARTBEAT;
	req.heartbeat.leases         = lr;
	req.heartbeat.n_leases       = 2;
	req.heartbeat.has_lease_ms   = true;
	req.heartbeat.lease_ms       = 30000;
	rep.op                       = BRQ_OP_HEARTBEAT;
	rep.heartbeat.extended       = ext;
	rep.heartbeat.n_extended     = 2;
	rep.heartbeat.lease_until_ms = 1700000060000;
	rep.heartbeat.lost_reasons   = why;
	example("heartbeat", &req, &rep);
}

// settle, cancel, job, stats.
static void
settle_and_read_examples(void)
{
	brq_request req;
	brq_reply   rep;

	brq_job_spec    chain    = {.topic = brq_str_c("email.audit"), .payload = brq_str_c("{}")};
	brq_settle_item items[3] = {
		{.id        = 101,
		 .outcome   = BRQ_OUTCOME_FAIL,
		 .has_error = true,
		 .error     = brq_str_c("smtp timeout")},
		{.id = 102, .outcome = BRQ_OUTCOME_DELAY, .delay_ms = 5000},
		{.id         = 103,
		 .outcome    = BRQ_OUTCOME_DONE,
		 .has_chain  = true,
		 .chain      = &chain,
		 .n_chain    = 1,
		 .has_result = true,
		 .result     = brq_str_c("{\"sent\":1}")},
	};
	for (int i = 0; i < 3; i++) {
		memcpy(items[i].lease, LEASE, sizeof LEASE);
	}
	brq_settle_result sres[3] = {
		{101, true, BRQ_STATE_FAILED}, {102, false, BRQ_STATE_PENDING}, {103, true, BRQ_STATE_DONE}};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op               = BRQ_OP_SETTLE;
	req.settle.items     = items;
	req.settle.n_items   = 3;
	rep.op               = BRQ_OP_SETTLE;
	rep.settle.results   = sres;
	rep.settle.n_results = 3;
	example("settle", &req, &rep);

	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op              = BRQ_OP_CANCEL;
	req.cancel.id       = 101;
	rep.op              = BRQ_OP_CANCEL;
	rep.cancel.state    = BRQ_STATE_CANCELED;
	rep.cancel.canceled = true;
	example("cancel", &req, &rep);

	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op      = BRQ_OP_JOB;
	req.job.id  = 101;
	rep.op      = BRQ_OP_JOB;
	rep.job.job = (brq_job_info) {
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
		.priority            = 5,
	};
	example("job", &req, &rep);

	brq_topic_stats ts = {.topic               = brq_str_c("email.send"),
			      .count               = {12, 1, 2, 340, 3, 4},
			      .oldest_ready_age_ms = 1500};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op             = BRQ_OP_STATS;
	rep.op             = BRQ_OP_STATS;
	rep.stats.topics   = &ts;
	rep.stats.n_topics = 1;
	example("stats", &req, &rep);
}

// Pause, resume, topic limits, topics (issue 15.2-3).
static void
policy_examples(void)
{
	brq_request req;
	brq_reply   rep;

	brq_topic_policy pol = {.topic = brq_str_c("email.send"), .paused = true, .running = 3};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op            = BRQ_OP_PAUSE;
	req.pause.topic   = brq_str_c("email.send");
	rep.op            = BRQ_OP_PAUSE;
	rep.policy.policy = pol;
	example("pause", &req, &rep);

	pol.paused = false;
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op            = BRQ_OP_RESUME;
	req.resume.topic  = brq_str_c("email.send");
	rep.op            = BRQ_OP_RESUME;
	rep.policy.policy = pol;
	example("resume", &req, &rep);

	pol.max_running = 10;
	pol.rate_per_s  = 50;
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op            = BRQ_OP_TOPIC_LIMITS;
	req.topic_limits  = (brq_topic_limits_req) {.topic           = brq_str_c("email.send"),
						    .has_max_running = true,
						    .max_running     = 10,
						    .has_rate_per_s  = true,
						    .rate_per_s      = 50};
	rep.op            = BRQ_OP_TOPIC_LIMITS;
	rep.policy.policy = pol;
	example("topic_limits", &req, &rep);

	brq_topic_policy pols[2] = {pol, {.topic = brq_str_c("report.build"), .paused = true}};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op              = BRQ_OP_TOPICS;
	rep.op              = BRQ_OP_TOPICS;
	rep.topics.topics   = pols;
	rep.topics.n_topics = 2;
	example("topics", &req, &rep);
}

// schedule_add, schedule_list, schedule_remove (issue 15.4).
static void
schedule_examples(void)
{
	brq_request req;
	brq_reply   rep;

	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op                        = BRQ_OP_SCHEDULE_ADD;
	req.schedule_add              = (brq_schedule) {.name         = brq_str_c("nightly"),
							.topic        = brq_str_c("report.build"),
							.payload      = brq_str_c("{\"full\":true}"),
							.cron         = brq_str_c("30 2 * * *"),
							.tz           = brq_str_c("Europe/Berlin"),
							.catch_up     = true,
							.catch_up_max = 3};
	rep.op                        = BRQ_OP_SCHEDULE_ADD;
	rep.schedule_add.created      = true;
	rep.schedule_add.next_slot_ms = 1700011800000;
	example("schedule_add", &req, &rep);

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
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op                        = BRQ_OP_SCHEDULE_LIST;
	rep.op                        = BRQ_OP_SCHEDULE_LIST;
	rep.schedule_list.schedules   = sl;
	rep.schedule_list.n_schedules = 2;
	example("schedule_list", &req, &rep);

	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op                   = BRQ_OP_SCHEDULE_REMOVE;
	req.schedule_remove.name = brq_str_c("nightly");
	rep.op                   = BRQ_OP_SCHEDULE_REMOVE;
	example("schedule_remove", &req, &rep);
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
