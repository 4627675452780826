// SPDX-License-Identifier: MIT
// Fuzz target: the gateway's request decoder (proto/request_dec.c), both stages and the
// one-call form. Beyond "no crash, no leak, no UB" it checks, for every input:
//   * a failure has a one-line printable message, and stage 1's documented outputs;
//   * the two stages and brq_request_decode() agree;
//   * a decoded request satisfies every limit the gateway relies on (ranges, topics,
//     UTF-8, JSON payloads, batch sizes), and decodes the same under looser limits;
//   * it re-encodes (brq_request_encode) to a message that decodes to the same fields,
//     and encoding that again gives the same bytes;
//   * what the zero-copy reader's pre-scan accepts (proto/mpread.c), msgpack-c's own
//     unpacker reads as exactly the same values, byte for byte.
//
// Input: one request message (the seeds are the examples of docs/protocol.md).
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "mpread.h"
#include "proto.h"

// Tight limits, so that the fuzzer reaches every "too large" path with small inputs.
static const brq_limits TIGHT = {
	.max_batch      = 8,
	.max_payload    = 512,
	.max_wait_ms    = 300000,
	.max_request    = 3072,
	.max_depth      = 8,
	.max_json_depth = 16,
};

static bool
str_eq(brq_str a, brq_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool
job_eq(const brq_job_spec *a, const brq_job_spec *b)
{
	return str_eq(a->topic, b->topic) && str_eq(a->payload, b->payload) && str_eq(a->key, b->key) &&
		a->has_delay_ms == b->has_delay_ms && a->delay_ms == b->delay_ms &&
		a->has_run_at_ms == b->has_run_at_ms && a->run_at_ms == b->run_at_ms &&
		a->has_max_attempts == b->has_max_attempts && a->max_attempts == b->max_attempts &&
		a->has_priority == b->has_priority && a->priority == b->priority;
}

static bool
item_eq(const brq_settle_item *a, const brq_settle_item *b)
{
	if (a->id != b->id || memcmp(a->lease, b->lease, BRQ_LEASE_LEN) != 0 || a->outcome != b->outcome ||
	    a->has_error != b->has_error || !str_eq(a->error, b->error) || a->delay_ms != b->delay_ms ||
	    a->has_chain != b->has_chain || a->n_chain != b->n_chain || a->has_result != b->has_result ||
	    !str_eq(a->result, b->result)) {
		return false;
	}
	for (uint32_t i = 0; i < a->n_chain; i++) {
		if (!job_eq(&a->chain[i], &b->chain[i])) {
			return false;
		}
	}
	return true;
}

static bool
items_eq(const brq_settle_item *a, const brq_settle_item *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!item_eq(&a[i], &b[i])) {
			return false;
		}
	}
	return true;
}

static bool
claim_eq(const brq_claim_req *a, const brq_claim_req *b)
{
	if (!str_eq(a->worker, b->worker) || a->n_topics != b->n_topics || a->n != b->n ||
	    a->has_lease_ms != b->has_lease_ms || a->lease_ms != b->lease_ms ||
	    a->has_wait_ms != b->has_wait_ms || a->wait_ms != b->wait_ms || a->has_settle != b->has_settle ||
	    a->n_settle != b->n_settle) {
		return false;
	}
	for (uint32_t i = 0; i < a->n_topics; i++) {
		if (!str_eq(a->topics[i], b->topics[i])) {
			return false;
		}
	}
	return items_eq(a->settle, b->settle, a->n_settle);
}

static bool
req_eq(const brq_request *a, const brq_request *b)
{
	if (a->rid != b->rid || a->op != b->op || !str_eq(a->token, b->token)) {
		return false;
	}
	switch (a->op) {
	case BRQ_OP_ENQUEUE:
		if (a->enqueue.n_jobs != b->enqueue.n_jobs) {
			return false;
		}
		for (uint32_t i = 0; i < a->enqueue.n_jobs; i++) {
			if (!job_eq(&a->enqueue.jobs[i], &b->enqueue.jobs[i])) {
				return false;
			}
		}
		return true;
	case BRQ_OP_CLAIM: return claim_eq(&a->claim, &b->claim);
	case BRQ_OP_HEARTBEAT:
		if (a->heartbeat.n_leases != b->heartbeat.n_leases ||
		    a->heartbeat.has_lease_ms != b->heartbeat.has_lease_ms ||
		    a->heartbeat.lease_ms != b->heartbeat.lease_ms) {
			return false;
		}
		for (uint32_t i = 0; i < a->heartbeat.n_leases; i++) {
			const brq_lease_ref *x = &a->heartbeat.leases[i], *y = &b->heartbeat.leases[i];
			if (x->id != y->id || memcmp(x->lease, y->lease, BRQ_LEASE_LEN) != 0) {
				return false;
			}
		}
		return true;
	case BRQ_OP_SETTLE:
		return a->settle.n_items == b->settle.n_items &&
			items_eq(a->settle.items, b->settle.items, a->settle.n_items);
	case BRQ_OP_CANCEL: return a->cancel.id == b->cancel.id;
	case BRQ_OP_JOB: return a->job.id == b->job.id;
	case BRQ_OP_PAUSE: return str_eq(a->pause.topic, b->pause.topic);
	case BRQ_OP_RESUME: return str_eq(a->resume.topic, b->resume.topic);
	case BRQ_OP_TOPIC_LIMITS: {
		const brq_topic_limits_req *x = &a->topic_limits, *y = &b->topic_limits;
		return str_eq(x->topic, y->topic) && x->has_max_running == y->has_max_running &&
			x->max_running == y->max_running && x->has_rate_per_s == y->has_rate_per_s &&
			x->rate_per_s == y->rate_per_s;
	}
	case BRQ_OP_LIST:
		return str_eq(a->list.topic, b->list.topic) && a->list.has_state == b->list.has_state &&
			(!a->list.has_state || a->list.state == b->list.state) &&
			a->list.has_created_after_ms == b->list.has_created_after_ms &&
			a->list.created_after_ms == b->list.created_after_ms &&
			a->list.has_created_before_ms == b->list.has_created_before_ms &&
			a->list.created_before_ms == b->list.created_before_ms &&
			str_eq(a->list.key, b->list.key) && str_eq(a->list.cursor, b->list.cursor) &&
			a->list.before_id == b->list.before_id && a->list.limit == b->list.limit;
	case BRQ_OP_RETRY:
		return a->retry.id == b->retry.id &&
			(a->retry.id > 0 ||
			 (str_eq(a->retry.topic, b->retry.topic) && a->retry.state == b->retry.state &&
			  a->retry.limit == b->retry.limit));
	case BRQ_OP_DELETE: return a->del.id == b->del.id;
	case BRQ_OP_SCHEDULE_ADD: {
		const brq_schedule *x = &a->schedule_add, *y = &b->schedule_add;
		return str_eq(x->name, y->name) && str_eq(x->topic, y->topic) &&
			str_eq(x->payload, y->payload) && str_eq(x->cron, y->cron) && str_eq(x->tz, y->tz) &&
			x->every_ms == y->every_ms && x->catch_up == y->catch_up &&
			x->catch_up_max == y->catch_up_max && x->max_attempts == y->max_attempts;
	}
	case BRQ_OP_SCHEDULE_REMOVE: return str_eq(a->schedule_remove.name, b->schedule_remove.name);
	case BRQ_OP_WATCH:
		if (a->watch.n_topics != b->watch.n_topics || !str_eq(a->watch.cursor, b->watch.cursor) ||
		    a->watch.has_wait_ms != b->watch.has_wait_ms || a->watch.wait_ms != b->watch.wait_ms) {
			return false;
		}
		for (uint32_t i = 0; i < a->watch.n_topics; i++) {
			if (!str_eq(a->watch.topics[i], b->watch.topics[i])) {
				return false;
			}
		}
		return true;
	default: return true;
	}
}

// ---- What a decoded request guarantees (proto.h, docs/protocol.md) ------------------

static void
check_job(const brq_job_spec *j, const brq_limits *lim)
{
	FUZZ_CHECK(brq_topic_valid(j->topic.ptr, j->topic.len));
	FUZZ_CHECK(j->payload.len <= lim->max_payload);
	FUZZ_CHECK(brq_json_valid(j->payload.ptr, j->payload.len, lim->max_json_depth, BRQ_JSON_FOR_JSONB,
				  NULL));
	FUZZ_CHECK(j->key.len <= BRQ_KEY_MAX && brq_utf8_valid(j->key.ptr, j->key.len, true));
	FUZZ_CHECK(!(j->has_delay_ms && j->has_run_at_ms));
	FUZZ_CHECK(!j->has_delay_ms || j->delay_ms <= BRQ_DELAY_MS_MAX);
	FUZZ_CHECK(!j->has_run_at_ms || (j->run_at_ms >= 0 && j->run_at_ms <= BRQ_RUN_AT_MS_MAX));
	FUZZ_CHECK(!j->has_max_attempts || (j->max_attempts >= 1 && j->max_attempts <= BRQ_ATTEMPTS_MAX));
	FUZZ_CHECK(!j->has_priority || (j->priority >= BRQ_PRIORITY_MIN && j->priority <= BRQ_PRIORITY_MAX));
}

// Returns the number of chained jobs.
static uint32_t
check_items(const brq_settle_item *items, uint32_t n, const brq_limits *lim)
{
	uint32_t chained = 0;
	FUZZ_CHECK(n <= lim->max_batch);
	for (uint32_t i = 0; i < n; i++) {
		const brq_settle_item *it = &items[i];
		FUZZ_CHECK(it->id >= 1 && it->id <= BRQ_ID_MAX);
		FUZZ_CHECK(it->outcome < BRQ_OUTCOME__COUNT);
		FUZZ_CHECK(!it->has_error ||
			   (it->error.len <= BRQ_ERROR_WIRE_MAX &&
			    brq_utf8_valid(it->error.ptr, it->error.len, true)));
		FUZZ_CHECK(it->outcome == BRQ_OUTCOME_DELAY ? it->delay_ms <= BRQ_DELAY_MS_MAX
							    : it->delay_ms == 0);
		FUZZ_CHECK(!it->has_chain || it->outcome == BRQ_OUTCOME_DONE);
		FUZZ_CHECK(it->has_chain || it->n_chain == 0);
		FUZZ_CHECK(!it->has_result ||
			   (it->outcome == BRQ_OUTCOME_DONE && it->result.len <= lim->max_payload &&
			    brq_json_valid(it->result.ptr, it->result.len, lim->max_json_depth,
					   BRQ_JSON_FOR_JSONB, NULL)));
		for (uint32_t k = 0; k < it->n_chain; k++) {
			check_job(&it->chain[k], lim);
		}
		chained += it->n_chain;
	}
	// One request writes at most max_batch chained jobs in all.
	FUZZ_CHECK(chained <= lim->max_batch);
	return chained;
}

static void
check_request(const brq_request *req, const brq_limits *lim)
{
	FUZZ_CHECK(req->op > BRQ_OP_NONE && req->op < BRQ_OP__COUNT);
	FUZZ_CHECK(req->token.len <= BRQ_TOKEN_MAX);
	switch (req->op) {
	case BRQ_OP_ENQUEUE:
		FUZZ_CHECK(req->enqueue.n_jobs >= 1 && req->enqueue.n_jobs <= lim->max_batch);
		for (uint32_t i = 0; i < req->enqueue.n_jobs; i++) {
			check_job(&req->enqueue.jobs[i], lim);
		}
		break;
	case BRQ_OP_CLAIM: {
		const brq_claim_req *c = &req->claim;
		FUZZ_CHECK(c->worker.len >= 1 && c->worker.len <= BRQ_WORKER_MAX);
		FUZZ_CHECK(brq_utf8_valid(c->worker.ptr, c->worker.len, true));
		FUZZ_CHECK(c->n_topics >= 1 && c->n_topics <= BRQ_TOPICS_MAX);
		for (uint32_t i = 0; i < c->n_topics; i++) {
			FUZZ_CHECK(brq_topic_valid(c->topics[i].ptr, c->topics[i].len));
		}
		FUZZ_CHECK(c->n >= 1 && c->n <= lim->max_batch);
		FUZZ_CHECK(!c->has_lease_ms ||
			   (c->lease_ms >= BRQ_LEASE_MS_MIN && c->lease_ms <= BRQ_LEASE_MS_MAX));
		FUZZ_CHECK(!c->has_wait_ms || c->wait_ms <= lim->max_wait_ms);
		FUZZ_CHECK(c->has_settle || c->n_settle == 0);
		(void) check_items(c->settle, c->n_settle, lim);
		break;
	}
	case BRQ_OP_HEARTBEAT:
		FUZZ_CHECK(req->heartbeat.n_leases >= 1 && req->heartbeat.n_leases <= lim->max_batch);
		for (uint32_t i = 0; i < req->heartbeat.n_leases; i++) {
			FUZZ_CHECK(req->heartbeat.leases[i].id >= 1 &&
				   req->heartbeat.leases[i].id <= BRQ_ID_MAX);
		}
		FUZZ_CHECK(!req->heartbeat.has_lease_ms ||
			   (req->heartbeat.lease_ms >= BRQ_LEASE_MS_MIN &&
			    req->heartbeat.lease_ms <= BRQ_LEASE_MS_MAX));
		break;
	case BRQ_OP_SETTLE:
		FUZZ_CHECK(req->settle.n_items >= 1);
		(void) check_items(req->settle.items, req->settle.n_items, lim);
		break;
	case BRQ_OP_CANCEL: FUZZ_CHECK(req->cancel.id >= 1 && req->cancel.id <= BRQ_ID_MAX); break;
	case BRQ_OP_JOB: FUZZ_CHECK(req->job.id >= 1 && req->job.id <= BRQ_ID_MAX); break;
	case BRQ_OP_PAUSE: FUZZ_CHECK(brq_topic_valid(req->pause.topic.ptr, req->pause.topic.len)); break;
	case BRQ_OP_RESUME: FUZZ_CHECK(brq_topic_valid(req->resume.topic.ptr, req->resume.topic.len)); break;
	case BRQ_OP_TOPIC_LIMITS: {
		const brq_topic_limits_req *q = &req->topic_limits;
		FUZZ_CHECK(brq_topic_valid(q->topic.ptr, q->topic.len));
		FUZZ_CHECK(q->has_max_running || q->has_rate_per_s);
		FUZZ_CHECK(q->max_running <= BRQ_TOPIC_LIMIT_MAX && q->rate_per_s <= BRQ_TOPIC_LIMIT_MAX);
		break;
	}
	case BRQ_OP_LIST:
		FUZZ_CHECK(req->list.limit >= 1 && req->list.limit <= BRQ_LIST_MAX);
		FUZZ_CHECK(req->list.topic.len == 0 ||
			   brq_topic_valid(req->list.topic.ptr, req->list.topic.len));
		/* A key needs no topic (issue 28.8): it is valid text of at most BRQ_KEY_MAX. */
		FUZZ_CHECK(req->list.key.len <= BRQ_KEY_MAX &&
			   brq_utf8_valid(req->list.key.ptr, req->list.key.len, true));
		FUZZ_CHECK((req->list.cursor.len == 0) == (req->list.before_id == 0));
		FUZZ_CHECK(req->list.before_id <= BRQ_ID_MAX);
		FUZZ_CHECK(!req->list.has_created_after_ms || !req->list.has_created_before_ms ||
			   req->list.created_after_ms < req->list.created_before_ms);
		break;
	case BRQ_OP_RETRY:
		FUZZ_CHECK(req->retry.id > 0 ||
			   ((req->retry.state == BRQ_STATE_DEAD || req->retry.state == BRQ_STATE_CANCELED) &&
			    req->retry.limit >= 1 && req->retry.limit <= BRQ_RETRY_MAX &&
			    brq_topic_valid(req->retry.topic.ptr, req->retry.topic.len)));
		FUZZ_CHECK(req->retry.id <= BRQ_ID_MAX);
		break;
	case BRQ_OP_DELETE: FUZZ_CHECK(req->del.id >= 1 && req->del.id <= BRQ_ID_MAX); break;
	case BRQ_OP_SCHEDULE_ADD: {
		const brq_schedule *s = &req->schedule_add;
		FUZZ_CHECK(brq_topic_valid(s->name.ptr, s->name.len));
		FUZZ_CHECK(brq_topic_valid(s->topic.ptr, s->topic.len));
		FUZZ_CHECK(s->payload.len <= lim->max_payload);
		FUZZ_CHECK(s->cron.len <= BRQ_SCHEDULE_CRON_MAX && s->tz.len <= BRQ_SCHEDULE_TZ_MAX);
		FUZZ_CHECK(s->every_ms == 0 ||
			   (s->every_ms >= BRQ_EVERY_MS_MIN && s->every_ms <= BRQ_EVERY_MS_MAX));
		FUZZ_CHECK(s->catch_up_max <= BRQ_CATCH_UP_MAX && s->max_attempts <= BRQ_ATTEMPTS_MAX);
		break;
	}
	case BRQ_OP_SCHEDULE_REMOVE:
		FUZZ_CHECK(brq_topic_valid(req->schedule_remove.name.ptr, req->schedule_remove.name.len));
		break;
	case BRQ_OP_WATCH:
		FUZZ_CHECK(req->watch.n_topics >= 1 && req->watch.n_topics <= BRQ_TOPICS_MAX);
		for (uint32_t i = 0; i < req->watch.n_topics; i++) {
			FUZZ_CHECK(brq_topic_valid(req->watch.topics[i].ptr, req->watch.topics[i].len));
		}
		FUZZ_CHECK(req->watch.cursor.len <= BRQ_CURSOR_MAX);
		FUZZ_CHECK(!req->watch.has_wait_ms || req->watch.wait_ms <= lim->max_wait_ms);
		break;
	default: break;
	}
}

// ---- The msgpack reader against msgpack-c's unpacker (test code only) ---------------

// The value at r is o: same kind, value, length and bytes, recursively. Advances r.
static void
same_value(brq_rd *r, const msgpack_object *o)
{
	brq_mp_head h;
	FUZZ_CHECK(brq_mp_head_read(r->p, r->end, &h) == 0);
	const uint8_t *body = r->p + h.hdr;
	r->p                = body;
	switch (o->type) {
	case MSGPACK_OBJECT_NIL: FUZZ_CHECK(h.kind == BRQ_MP_NIL); return;
	case MSGPACK_OBJECT_BOOLEAN: FUZZ_CHECK(h.kind == BRQ_MP_BOOL && h.b == o->via.boolean); return;
	case MSGPACK_OBJECT_POSITIVE_INTEGER: FUZZ_CHECK(h.kind == BRQ_MP_UINT && h.u == o->via.u64); return;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: FUZZ_CHECK(h.kind == BRQ_MP_NINT && h.i == o->via.i64); return;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64: FUZZ_CHECK(h.kind == BRQ_MP_FLOAT); return;
	case MSGPACK_OBJECT_STR:
		FUZZ_CHECK(h.kind == BRQ_MP_STR && h.n == o->via.str.size);
		FUZZ_CHECK(h.n == 0 || memcmp(body, o->via.str.ptr, h.n) == 0);
		break;
	case MSGPACK_OBJECT_BIN:
		FUZZ_CHECK(h.kind == BRQ_MP_BIN && h.n == o->via.bin.size);
		FUZZ_CHECK(h.n == 0 || memcmp(body, o->via.bin.ptr, h.n) == 0);
		break;
	case MSGPACK_OBJECT_EXT:
		// n counts the ext type byte too.
		FUZZ_CHECK(h.kind == BRQ_MP_EXT && h.n == 1 + (uint64_t) o->via.ext.size);
		FUZZ_CHECK((int8_t) body[0] == o->via.ext.type);
		break;
	case MSGPACK_OBJECT_ARRAY:
		FUZZ_CHECK(h.kind == BRQ_MP_ARRAY && h.n == o->via.array.size);
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			same_value(r, &o->via.array.ptr[i]);
		}
		return;
	case MSGPACK_OBJECT_MAP:
		FUZZ_CHECK(h.kind == BRQ_MP_MAP && h.n == o->via.map.size);
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			same_value(r, &o->via.map.ptr[i].key);
			same_value(r, &o->via.map.ptr[i].val);
		}
		return;
	default: FUZZ_CHECK(!"a msgpack-c type the reader does not know");
	}
	r->p += h.n;
}

// Reads the message with msgpack-c and checks the reader against it. Returns false
// (and leaves u empty) when the pre-scan refuses the message.
static bool
check_reader(const uint8_t *data, size_t size, const brq_limits *lim, msgpack_unpacked *u)
{
	size_t      off;
	const char *why;

	msgpack_unpacked_init(u);
	// msgpack-c allocates from container counts before reading the elements: it is only
	// given what the pre-scan accepted (counts bounded by the bytes left).
	if (!brq_mp_check(data, size, lim->max_depth, &off, &why)) {
		FUZZ_CHECK(off <= size && why != NULL);
		return false;
	}
	size_t used = 0;
	FUZZ_CHECK(msgpack_unpack_next(u, (const char *) data, size, &used) == MSGPACK_UNPACK_SUCCESS);
	FUZZ_CHECK(used == size);
	brq_rd r = {data, data + size};
	same_value(&r, &u->data);
	FUZZ_CHECK(r.p == r.end);
	// Skipping the whole value lands at the end too.
	brq_rd s = {data, data + size};
	FUZZ_CHECK(brq_mp_skip(&s) == 0 && s.p == s.end);
	return true;
}

static bool
obj_str_eq(const msgpack_object *o, const char *lit)
{
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(lit) &&
		memcmp(o->via.str.ptr, lit, o->via.str.size) == 0;
}

// What stage 1 must leave in rid and op for a message msgpack-c read as top, success or
// not (proto.h): the rid once the map and its keys passed and "rid" is a valid uint, the
// op once "v" and "op" passed too.
static void
expected_envelope(const msgpack_object *top, uint64_t *rid, brq_op *op)
{
	static const char *const keys[] = {"rid", "v", "op", "token"};
	const msgpack_object    *val[4] = {NULL, NULL, NULL, NULL};

	*rid = 0;
	*op  = BRQ_OP_NONE;
	if (top->type != MSGPACK_OBJECT_MAP) {
		return;
	}
	for (uint32_t i = 0; i < top->via.map.size; i++) {
		const msgpack_object *key = &top->via.map.ptr[i].key;
		if (key->type != MSGPACK_OBJECT_STR) {
			return;
		}
		for (int k = 0; k < 4; k++) {
			if (obj_str_eq(key, keys[k])) {
				if (val[k] != NULL) {
					return; // a key twice
				}
				val[k] = &top->via.map.ptr[i].val;
			}
		}
	}
	if (val[0] != NULL) {
		if (val[0]->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
			return;
		}
		*rid = val[0]->via.u64;
	}
	if (val[1] == NULL || val[1]->type != MSGPACK_OBJECT_POSITIVE_INTEGER || val[1]->via.u64 != 1 ||
	    val[2] == NULL || val[2]->type != MSGPACK_OBJECT_STR) {
		return;
	}
	int k = brq_op_lookup(val[2]->via.str.ptr, val[2]->via.str.size);
	*op   = k < 0 ? BRQ_OP_NONE : (brq_op) k;
}

// A failure's message: one line of printable ASCII, never empty (it goes into a reply
// and into the gateway's log).
static void
check_errtext(const char *err)
{
	FUZZ_CHECK(err[0] != '\0');
	for (const char *c = err; *c != '\0'; c++) {
		FUZZ_CHECK(*c >= 0x20 && *c < 0x7f);
	}
}

// Encodes d1, decodes it again and compares; encodes the result and compares bytes.
static void
check_round_trip(const brq_request *d1)
{
	brq_limits  loose;
	brq_buf     e1, e2;
	brq_arena   arena;
	brq_request d2;
	char        err[BRQ_ERRTEXT_MAX];

	// The re-encoded message may be a few bytes longer ("rid" is always sent; a short
	// token may go as bin); the fields are already within the tight limits.
	loose             = TIGHT;
	loose.max_request = UINT32_MAX;
	brq_buf_init(&e1, 0);
	brq_buf_init(&e2, 0);
	brq_arena_init(&arena);
	FUZZ_CHECK(brq_request_encode(&e1, d1) == 0);
	brq_status st = brq_request_decode(&d2, e1.data, e1.len, &loose, &arena, err, sizeof err);
	if (st != BRQ_ST_OK) {
		fprintf(stderr, "fuzz: re-encoded request does not decode: %s\n", err);
	}
	FUZZ_CHECK(st == BRQ_ST_OK);
	FUZZ_CHECK(req_eq(d1, &d2));
	FUZZ_CHECK(brq_request_encode(&e2, &d2) == 0);
	FUZZ_CHECK(e1.len == e2.len && memcmp(e1.data, e2.data, e1.len) == 0);
	brq_arena_fini(&arena);
	brq_buf_fini(&e2);
	brq_buf_fini(&e1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	brq_request req, one, dflt;
	brq_arena   arena;
	brq_limits  lim = TIGHT, def;
	char        err[BRQ_ERRTEXT_MAX], err1[BRQ_ERRTEXT_MAX];

	msgpack_unpacked u;
	uint64_t         want_rid = 0;
	brq_op           want_op  = BRQ_OP_NONE;

	brq_arena_init(&arena);
	if (check_reader(data, size, &lim, &u) && size <= lim.max_request) {
		expected_envelope(&u.data, &want_rid, &want_op);
	}
	msgpack_unpacked_destroy(&u);
	brq_status st = brq_request_decode_envelope(&req, data, size, &lim, err, sizeof err);
	FUZZ_CHECK(req.rid == want_rid && req.op == want_op);
	if (st != BRQ_ST_OK) {
		check_errtext(err);
		FUZZ_CHECK(req.token.len == 0); // set only on success
	} else {
		FUZZ_CHECK(req.op > BRQ_OP_NONE && req.op < BRQ_OP__COUNT);
		st = brq_request_decode_body(&req, &lim, &arena, err, sizeof err);
		if (st != BRQ_ST_OK) {
			check_errtext(err);
		}
	}
	FUZZ_CHECK(st == BRQ_ST_OK || st == BRQ_ST_INVALID_ARGUMENT || st == BRQ_ST_TOO_LARGE);

	// The one-call form: the same verdict, message and fields.
	brq_status st1 = brq_request_decode(&one, data, size, &lim, &arena, err1, sizeof err1);
	FUZZ_CHECK(st1 == st);
	FUZZ_CHECK(strcmp(err, err1) == 0);
	FUZZ_CHECK(one.rid == req.rid && one.op == req.op);

	if (st == BRQ_ST_OK) {
		FUZZ_CHECK(req_eq(&req, &one));
		check_request(&req, &lim);
		// Looser limits accept what tighter ones did, with the same fields.
		brq_limits_default(&def);
		FUZZ_CHECK(brq_request_decode(&dflt, data, size, &def, &arena, err1, sizeof err1) ==
			   BRQ_ST_OK);
		FUZZ_CHECK(req_eq(&req, &dflt));
		check_round_trip(&req);
	}
	brq_arena_fini(&arena);
	return 0;
}
