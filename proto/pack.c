// SPDX-License-Identifier: MIT
// msgpack output: the growable buffer, the primitive packers, the element encoders (one map
// each) and the start of an ok reply. The message encoders (encode.c) and the per-op codecs
// (jobs.c, policy.c, schedule.c) write through them.
#include "pack.h"

#include <stdlib.h>
#include <string.h>

#define BUF_RETAIN (64u * 1024u) // capacity kept across resets; more is freed (see proto.h)
#define BUF_MIN    256u

// msgpack-c write callback. Returns non-zero to make msgpack_pack_* fail, and records
// why in b->err so the failure is sticky and has a reason.
static int
buf_write(void *data, const char *p, size_t n)
{
	brq_buf *b = data;

	if (b->err != 0) {
		return -1;
	}
	if (n == 0) {
		return 0; // p may be NULL then, and memcpy(…, NULL, 0) is undefined
	}
	if (n > b->limit - b->len) {
		b->err = BRQ_E2BIG;
		return -1;
	}
	if (n > b->cap - b->len) {
		size_t cap = b->cap < BUF_MIN ? BUF_MIN : b->cap;
		while (cap - b->len < n) {
			cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
		}
		char *d = realloc(b->data, cap);
		if (d == NULL) {
			b->err = BRQ_ENOMEM;
			return -1;
		}
		b->data = d;
		b->cap  = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void
brq_buf_init(brq_buf *b, size_t limit)
{
	b->data  = NULL;
	b->len   = 0;
	b->cap   = 0;
	b->limit = limit == 0 ? SIZE_MAX : limit;
	b->err   = 0;
	msgpack_packer_init(&b->pk, b, buf_write);
}

void
brq_buf_reset(brq_buf *b)
{
	if (b->cap > BUF_RETAIN) {
		free(b->data);
		b->data = NULL;
		b->cap  = 0;
	}
	b->len = 0;
	b->err = 0;
}

void
brq_buf_swap(brq_buf *a, brq_buf *b)
{
	brq_buf_reset(a);
	brq_buf_reset(b);
	char  *data = a->data;
	size_t cap  = a->cap;
	a->data     = b->data;
	a->cap      = b->cap;
	b->data     = data;
	b->cap      = cap;
}

void
brq_buf_fini(brq_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len  = 0;
	b->cap  = 0;
}

int
brq_buf_error(const brq_buf *b)
{
	return b->err;
}

msgpack_packer *
brq_buf_packer(brq_buf *b)
{
	return &b->pk;
}

// ---- Primitives ---------------------------------------------------------------------

// The msgpack_pack_* result carries no reason; b->err does.
#define STICKY(b, call) ((void) (call), (b)->err)

int
brq_pack_map(brq_buf *b, uint32_t pairs)
{
	return STICKY(b, msgpack_pack_map(&b->pk, pairs));
}

int
brq_pack_array(brq_buf *b, uint32_t n)
{
	return STICKY(b, msgpack_pack_array(&b->pk, n));
}

int
brq_pack_str(brq_buf *b, brq_str s)
{
	(void) msgpack_pack_str(&b->pk, s.len);
	if (s.len > 0) {
		(void) msgpack_pack_str_body(&b->pk, s.ptr, s.len);
	}
	return b->err;
}

int
brq_pack_cstr(brq_buf *b, const char *s)
{
	return brq_pack_str(b, brq_str_c(s));
}

int
brq_pack_key(brq_buf *b, const char *key)
{
	return brq_pack_cstr(b, key);
}

int
brq_pack_bin(brq_buf *b, const void *p, uint32_t len)
{
	(void) msgpack_pack_bin(&b->pk, len);
	if (len > 0) {
		(void) msgpack_pack_bin_body(&b->pk, p, len);
	}
	return b->err;
}

int
brq_pack_uint(brq_buf *b, uint64_t v)
{
	return STICKY(b, msgpack_pack_uint64(&b->pk, v));
}

int
brq_pack_int(brq_buf *b, int64_t v)
{
	return STICKY(b, msgpack_pack_int64(&b->pk, v));
}

int
brq_pack_bool(brq_buf *b, bool v)
{
	return STICKY(b, v ? msgpack_pack_true(&b->pk) : msgpack_pack_false(&b->pk));
}

int
brq_pack_nil(brq_buf *b)
{
	return STICKY(b, msgpack_pack_nil(&b->pk));
}

// ---- Element encoders ---------------------------------------------------------------

int
brq_pack_job_spec(brq_buf *b, const brq_job_spec *j)
{
	uint32_t n = 2 + (j->key.len > 0) + j->has_delay_ms + j->has_run_at_ms + j->has_max_attempts +
		j->has_priority;

	brq_pack_map(b, n);
	kv_str(b, "topic", j->topic);
	kv_str(b, "payload", j->payload);
	kv_str_if(b, "key", j->key.len > 0, j->key);
	kv_uint_if(b, "delay_ms", j->has_delay_ms, j->delay_ms);
	kv_int_if(b, "run_at_ms", j->has_run_at_ms, j->run_at_ms);
	kv_uint_if(b, "max_attempts", j->has_max_attempts, j->max_attempts);
	kv_uint_if(b, "priority", j->has_priority, j->priority);
	return b->err;
}

int
brq_pack_settle_item(brq_buf *b, const brq_settle_item *it)
{
	bool     delay = it->outcome == BRQ_OUTCOME_DELAY;
	uint32_t n     = 3 + it->has_error + delay + it->has_chain + it->has_result;

	brq_pack_map(b, n);
	kv_uint(b, "id", it->id);
	kv_lease(b, it->lease);
	kv_cstr(b, "outcome", brq_outcome_name(it->outcome));
	kv_str_if(b, "error", it->has_error, it->error);
	kv_uint_if(b, "delay_ms", delay, it->delay_ms);
	if (it->has_chain) {
		KV_ARRAY(b, "chain", it->chain, it->n_chain, brq_pack_job_spec);
	}
	kv_str_if(b, "result", it->has_result, it->result);
	return b->err;
}

int
brq_pack_enqueue_result(brq_buf *b, const brq_enqueue_result *r)
{
	brq_pack_map(b, 2);
	kv_uint(b, "id", r->id);
	kv_bool(b, "created", r->created);
	return b->err;
}

int
brq_pack_claimed_job(brq_buf *b, const brq_claimed_job *j)
{
	brq_pack_map(b, 8 + (j->attempt_timeout_ms != 0) + (j->max_execution_ms != 0));
	kv_uint(b, "id", j->id);
	kv_str(b, "topic", j->topic);
	kv_str(b, "payload", j->payload);
	kv_uint(b, "attempts", j->attempts);
	kv_uint(b, "max_attempts", j->max_attempts);
	kv_lease(b, j->lease);
	kv_int(b, "lease_until_ms", j->lease_until_ms);
	kv_int(b, "created_at_ms", j->created_at_ms);
	kv_uint_if(b, "attempt_timeout_ms", j->attempt_timeout_ms != 0, j->attempt_timeout_ms);
	kv_uint_if(b, "max_execution_ms", j->max_execution_ms != 0, j->max_execution_ms);
	return b->err;
}

const char *
brq_lost_reason_name(brq_lost_reason r)
{
	switch (r) {
	case BRQ_LOST_NONE: return "";
	case BRQ_LOST_CANCELED: return "canceled";
	case BRQ_LOST_MAX_EXECUTION: return "max_execution";
	default: return "gone";
	}
}

int
brq_pack_lost_reasons(brq_buf *b, const brq_lost_reason *r, uint32_t n)
{
	brq_pack_key(b, "lost_reasons");
	brq_pack_array(b, n);
	for (uint32_t i = 0; i < n; i++) {
		brq_pack_cstr(b, brq_lost_reason_name(r[i]));
	}
	return b->err;
}

int
brq_pack_settle_result(brq_buf *b, const brq_settle_result *r)
{
	brq_pack_map(b, 3);
	kv_uint(b, "id", r->id);
	kv_bool(b, "applied", r->applied);
	r->applied ? kv_cstr(b, "state", brq_state_name(r->state)) : kv_nil(b, "state");
	return b->err;
}

int
brq_pack_job_info(brq_buf *b, const brq_job_info *j)
{
	// result and retry_of are always sent (nil when unset); the timeouts' keys and
	// lost_leases only when set.
	brq_pack_map(b,
		     15 + (j->priority > 0) + j->has_claimed_at_ms + (j->attempt_deadline_ms != 0) +
			     (j->max_execution_deadline_ms != 0) + (j->lost_leases > 0) + j->has_errors);
	kv_uint(b, "id", j->id);
	kv_str(b, "topic", j->topic);
	kv_str(b, "payload", j->payload);
	kv_cstr(b, "state", brq_state_name(j->state));
	kv_uint(b, "attempts", j->attempts);
	kv_uint(b, "max_attempts", j->max_attempts);
	kv_int(b, "available_at_ms", j->available_at_ms);
	kv_opt_str(b, "locked_by", j->has_locked_by, j->locked_by);
	kv_opt_int(b, "locked_until_ms", j->has_locked_until_ms, j->locked_until_ms);
	kv_opt_str(b, "last_error", j->has_last_error, j->last_error);
	kv_opt_str(b, "key", j->has_key, j->key);
	kv_int(b, "created_at_ms", j->created_at_ms);
	kv_int(b, "updated_at_ms", j->updated_at_ms);
	kv_uint_if(b, "priority", j->priority > 0, j->priority);
	// Keys added to protocol v1 later: a client that does not know them skips them.
	kv_opt_str(b, "result", j->has_result, j->result);
	kv_opt_uint(b, "retry_of", j->has_retry_of, j->retry_of);
	kv_int_if(b, "claimed_at_ms", j->has_claimed_at_ms, j->claimed_at_ms);
	kv_int_if(b, "attempt_deadline_ms", j->attempt_deadline_ms != 0, j->attempt_deadline_ms);
	kv_int_if(b, "max_execution_deadline_ms", j->max_execution_deadline_ms != 0,
		  j->max_execution_deadline_ms);
	kv_uint_if(b, "lost_leases", j->lost_leases > 0, j->lost_leases);
	// The attempts' errors: in the job reply only (has_errors), empty when none.
	if (j->has_errors) {
		brq_pack_key(b, "errors");
		brq_pack_array(b, j->n_errors);
		for (uint32_t i = 0; i < j->n_errors; i++) {
			brq_pack_map(b, 3);
			kv_uint(b, "attempt", j->errors[i].attempt);
			kv_int(b, "at_ms", j->errors[i].at_ms);
			kv_str(b, "error", j->errors[i].error);
		}
	}
	return b->err;
}

int
brq_pack_topic_stats(brq_buf *b, const brq_topic_stats *t)
{
	brq_pack_map(b, 2 + BRQ_STATE__COUNT + (t->has_policy ? 3 : 0));
	kv_str(b, "topic", t->topic);
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		kv_uint(b, brq_state_name((brq_state) s), t->count[s]);
	}
	kv_uint(b, "oldest_ready_age_ms", t->oldest_ready_age_ms);
	if (t->has_policy) {
		// Only for a topic with a policy: what an older client ignores (§9).
		kv_bool(b, "paused", t->paused);
		kv_limit(b, "max_running", t->max_running);
		kv_limit(b, "rate_per_s", t->rate_per_s);
	}
	return b->err;
}

// ---- Replies ------------------------------------------------------------------------

int
brq_reply_begin(brq_buf *b, uint64_t rid, uint32_t n_fields)
{
	brq_buf_reset(b);
	brq_pack_map(b, 3 + n_fields);
	kv_uint(b, "v", BRQ_PROTO_VERSION);
	kv_uint(b, "rid", rid);
	kv_cstr(b, "code", brq_status_name(BRQ_ST_OK));
	return b->err;
}
