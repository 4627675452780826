// SPDX-License-Identifier: MIT
// Fuzz target: the client's reply decoder (proto/reply_dec.c) for every operation.
// Beyond "no crash, no leak, no UB" it checks, for every input and every op:
//   * the verdict is ok or invalid_argument, a failure has a one-line printable message;
//   * the envelope (rid, code) reads the same whatever the op;
//   * a decoded reply re-encodes (brq_reply_encode, the gateway's encoder) to a message
//     that decodes to the same fields (an error message cut to BRQ_MSG_MAX at a UTF-8
//     boundary), and encoding that again gives the same bytes.
//
// Input: one reply message (the seeds are the examples of docs/protocol.md); it is
// decoded as the reply to each of the eight operations in turn.
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "proto.h"

static bool
str_eq(brq_str a, brq_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool
opt_str_eq(bool ha, brq_str a, bool hb, brq_str b)
{
	return ha == hb && (!ha || str_eq(a, b));
}

static bool
settled_eq(const brq_settle_result *a, const brq_settle_result *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		// The state of a result that was not applied is not on the wire.
		if (a[i].id != b[i].id || a[i].applied != b[i].applied ||
		    (a[i].applied && a[i].state != b[i].state)) {
			return false;
		}
	}
	return true;
}

static bool
claimed_eq(const brq_claimed_job *a, const brq_claimed_job *b)
{
	return a->id == b->id && str_eq(a->topic, b->topic) && str_eq(a->payload, b->payload) &&
		a->attempts == b->attempts && a->max_attempts == b->max_attempts &&
		memcmp(a->lease, b->lease, BRQ_LEASE_LEN) == 0 && a->lease_until_ms == b->lease_until_ms &&
		a->created_at_ms == b->created_at_ms;
}

static bool
job_info_eq(const brq_job_info *a, const brq_job_info *b)
{
	return a->id == b->id && str_eq(a->topic, b->topic) && str_eq(a->payload, b->payload) &&
		a->state == b->state && a->attempts == b->attempts && a->max_attempts == b->max_attempts &&
		a->available_at_ms == b->available_at_ms &&
		opt_str_eq(a->has_locked_by, a->locked_by, b->has_locked_by, b->locked_by) &&
		a->has_locked_until_ms == b->has_locked_until_ms &&
		(!a->has_locked_until_ms || a->locked_until_ms == b->locked_until_ms) &&
		opt_str_eq(a->has_last_error, a->last_error, b->has_last_error, b->last_error) &&
		opt_str_eq(a->has_key, a->key, b->has_key, b->key) && a->created_at_ms == b->created_at_ms &&
		a->updated_at_ms == b->updated_at_ms && a->priority == b->priority &&
		opt_str_eq(a->has_result, a->result, b->has_result, b->result) &&
		a->has_retry_of == b->has_retry_of && (!a->has_retry_of || a->retry_of == b->retry_of);
}

static bool
policy_eq(const brq_topic_policy *a, const brq_topic_policy *b)
{
	return str_eq(a->topic, b->topic) && a->paused == b->paused && a->max_running == b->max_running &&
		a->rate_per_s == b->rate_per_s && a->running == b->running;
}

// list, retry, delete.
static bool
admin_eq(const brq_reply *a, const brq_reply *b)
{
	switch (a->op) {
	case BRQ_OP_LIST:
		if (a->list.n_jobs != b->list.n_jobs ||
		    !opt_str_eq(a->list.has_next, a->list.next, b->list.has_next, b->list.next)) {
			return false;
		}
		for (uint32_t i = 0; i < a->list.n_jobs; i++) {
			if (!job_info_eq(&a->list.jobs[i], &b->list.jobs[i])) {
				return false;
			}
		}
		return true;
	case BRQ_OP_RETRY:
		return a->retry.retried == b->retry.retried && a->retry.n_ids == b->retry.n_ids &&
			(a->retry.n_ids == 0 ||
			 memcmp(a->retry.ids, b->retry.ids, a->retry.n_ids * sizeof(uint64_t)) == 0);
	case BRQ_OP_DELETE: return a->del.id == b->del.id && a->del.deleted == b->del.deleted;
	default: return false;
	}
}

static bool
stats_eq(const brq_stats_rep *a, const brq_stats_rep *b)
{
	if (a->n_topics != b->n_topics) {
		return false;
	}
	for (uint32_t i = 0; i < a->n_topics; i++) {
		const brq_topic_stats *x = &a->topics[i], *y = &b->topics[i];
		if (!str_eq(x->topic, y->topic) || memcmp(x->count, y->count, sizeof x->count) != 0 ||
		    x->oldest_ready_age_ms != y->oldest_ready_age_ms || x->has_policy != y->has_policy) {
			return false;
		}
		if (x->has_policy &&
		    (x->paused != y->paused || x->max_running != y->max_running ||
		     x->rate_per_s != y->rate_per_s)) {
			return false;
		}
	}
	return true;
}

static bool
schedule_eq(const brq_schedule *x, const brq_schedule *y)
{
	return str_eq(x->name, y->name) && str_eq(x->topic, y->topic) && str_eq(x->payload, y->payload) &&
		str_eq(x->cron, y->cron) && str_eq(x->tz, y->tz) && x->every_ms == y->every_ms &&
		x->catch_up == y->catch_up && x->catch_up_max == y->catch_up_max &&
		x->max_attempts == y->max_attempts && x->enabled == y->enabled &&
		x->next_slot_ms == y->next_slot_ms && x->last_slot_ms == y->last_slot_ms &&
		str_eq(x->source, y->source);
}

// The op fields of two ok replies to `op`.
static bool
fields_eq(const brq_reply *a, const brq_reply *b)
{
	switch (a->op) {
	case BRQ_OP_PING: return str_eq(a->ping.server, b->ping.server);
	case BRQ_OP_ENQUEUE:
		if (a->enqueue.n_results != b->enqueue.n_results) {
			return false;
		}
		for (uint32_t i = 0; i < a->enqueue.n_results; i++) {
			if (a->enqueue.results[i].id != b->enqueue.results[i].id ||
			    a->enqueue.results[i].created != b->enqueue.results[i].created) {
				return false;
			}
		}
		return true;
	case BRQ_OP_CLAIM:
		if (a->claim.n_jobs != b->claim.n_jobs || a->claim.has_settled != b->claim.has_settled ||
		    a->claim.n_settled != b->claim.n_settled) {
			return false;
		}
		for (uint32_t i = 0; i < a->claim.n_jobs; i++) {
			if (!claimed_eq(&a->claim.jobs[i], &b->claim.jobs[i])) {
				return false;
			}
		}
		return settled_eq(a->claim.settled, b->claim.settled, a->claim.n_settled);
	case BRQ_OP_HEARTBEAT:
		return a->heartbeat.n_extended == b->heartbeat.n_extended &&
			a->heartbeat.lease_until_ms == b->heartbeat.lease_until_ms &&
			(a->heartbeat.n_extended == 0 ||
			 memcmp(a->heartbeat.extended, b->heartbeat.extended,
				a->heartbeat.n_extended * sizeof(bool)) == 0);
	case BRQ_OP_SETTLE:
		return a->settle.n_results == b->settle.n_results &&
			settled_eq(a->settle.results, b->settle.results, a->settle.n_results);
	case BRQ_OP_CANCEL:
		return a->cancel.state == b->cancel.state && a->cancel.canceled == b->cancel.canceled;
	case BRQ_OP_JOB: return job_info_eq(&a->job.job, &b->job.job);
	case BRQ_OP_STATS: return stats_eq(&a->stats, &b->stats);
	case BRQ_OP_PAUSE:
	case BRQ_OP_RESUME:
	case BRQ_OP_TOPIC_LIMITS: return policy_eq(&a->policy.policy, &b->policy.policy);
	case BRQ_OP_TOPICS:
		if (a->topics.n_topics != b->topics.n_topics) {
			return false;
		}
		for (uint32_t i = 0; i < a->topics.n_topics; i++) {
			if (!policy_eq(&a->topics.topics[i], &b->topics.topics[i])) {
				return false;
			}
		}
		return true;
	case BRQ_OP_SCHEDULE_ADD:
		return a->schedule_add.created == b->schedule_add.created &&
			a->schedule_add.next_slot_ms == b->schedule_add.next_slot_ms;
	case BRQ_OP_SCHEDULE_LIST:
		if (a->schedule_list.n_schedules != b->schedule_list.n_schedules) {
			return false;
		}
		for (uint32_t i = 0; i < a->schedule_list.n_schedules; i++) {
			if (!schedule_eq(&a->schedule_list.schedules[i], &b->schedule_list.schedules[i])) {
				return false;
			}
		}
		return true;
	case BRQ_OP_SCHEDULE_REMOVE: return true;
	case BRQ_OP_WATCH:
		return a->watch.n_canceled == b->watch.n_canceled && a->watch.resync == b->watch.resync &&
			a->watch.next.len == b->watch.next.len &&
			memcmp(a->watch.next.ptr, b->watch.next.ptr, a->watch.next.len) == 0 &&
			(a->watch.n_canceled == 0 ||
			 memcmp(a->watch.canceled, b->watch.canceled,
				a->watch.n_canceled * sizeof(uint64_t)) == 0);
	default: return admin_eq(a, b); // list, retry, delete
	}
}

static void
check_errtext(const char *err)
{
	FUZZ_CHECK(err[0] != '\0');
	for (const char *c = err; *c != '\0'; c++) {
		FUZZ_CHECK(*c >= 0x20 && *c < 0x7f);
	}
}

// Encodes d1 as the gateway would, decodes that and compares; encodes again, same bytes.
static void
check_round_trip(const brq_reply *d1, const brq_limits *lim)
{
	brq_buf   e1, e2;
	brq_arena arena;
	brq_reply d2;
	char      err[BRQ_ERRTEXT_MAX];

	brq_buf_init(&e1, 0);
	brq_buf_init(&e2, 0);
	brq_arena_init(&arena);
	FUZZ_CHECK(brq_reply_encode(&e1, d1) == 0);
	brq_status st = brq_reply_decode(&d2, d1->op, e1.data, e1.len, lim, &arena, err, sizeof err);
	if (st != BRQ_ST_OK) {
		fprintf(stderr, "fuzz: re-encoded %s reply does not decode: %s\n", brq_op_name(d1->op), err);
	}
	FUZZ_CHECK(st == BRQ_ST_OK);
	FUZZ_CHECK(d2.op == d1->op && d2.rid == d1->rid && d2.code == d1->code);
	FUZZ_CHECK(brq_str_eq(d2.code_name, brq_status_name(d1->code)));
	if (d1->code == BRQ_ST_OK) {
		FUZZ_CHECK(d2.msg.len == 0);
		FUZZ_CHECK(fields_eq(d1, &d2));
	} else {
		/* An error's msg goes out as well-formed UTF-8 of at most BRQ_MSG_MAX bytes
		 * (proto/encode.c: every byte that starts no character becomes U+FFFD). */
		char    clean[BRQ_MSG_MAX];
		brq_str cut = {clean,
			       (uint32_t) brq_utf8_scrub(d1->msg.ptr, d1->msg.len, clean, sizeof clean)};
		FUZZ_CHECK(str_eq(d2.msg, cut));
		FUZZ_CHECK(brq_utf8_valid(d2.msg.ptr, d2.msg.len, false));
	}
	FUZZ_CHECK(brq_reply_encode(&e2, &d2) == 0);
	FUZZ_CHECK(e1.len == e2.len && memcmp(e1.data, e2.data, e1.len) == 0);
	brq_arena_fini(&arena);
	brq_buf_fini(&e2);
	brq_buf_fini(&e1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	brq_limits lim;
	brq_arena  arena;
	bool       have_env = false;
	uint64_t   env_rid  = 0;
	brq_status env_code = BRQ_ST_OK;

	brq_limits_default(&lim);
	brq_arena_init(&arena);
	for (int op = BRQ_OP_NONE + 1; op < BRQ_OP__COUNT; op++) {
		brq_reply rep;
		char      err[BRQ_ERRTEXT_MAX];

		brq_arena_reset(&arena);
		brq_status st =
			brq_reply_decode(&rep, (brq_op) op, data, size, &lim, &arena, err, sizeof err);
		FUZZ_CHECK(st == BRQ_ST_OK || st == BRQ_ST_INVALID_ARGUMENT);
		FUZZ_CHECK(rep.op == (brq_op) op);
		if (st != BRQ_ST_OK) {
			check_errtext(err);
			continue;
		}
		FUZZ_CHECK(rep.code < BRQ_ST__COUNT);
		int known = brq_status_lookup(rep.code_name.ptr, rep.code_name.len);
		FUZZ_CHECK(rep.code == (known < 0 ? BRQ_ST_INTERNAL : (brq_status) known));
		// The envelope does not depend on the op the caller asked for.
		if (have_env) {
			FUZZ_CHECK(rep.rid == env_rid && rep.code == env_code);
		}
		have_env = true;
		env_rid  = rep.rid;
		env_code = rep.code;
		check_round_trip(&rep, &lim);
	}
	brq_arena_fini(&arena);
	return 0;
}
