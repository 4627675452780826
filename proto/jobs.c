// SPDX-License-Identifier: MIT
// The operators' operations (list, retry, delete): request and reply codecs.
#include "jobs.h"
#include "pack.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BAD BRQ_ST_INVALID_ARGUMENT

// The cursor's form: a version tag, so a later gateway may change what it holds and
// still recognise (and refuse with a clear message) the cursors of this one.
#define CURSOR_PREFIX "v1."

void
brq_list_cursor(uint64_t last_id, char buf[BRQ_CURSOR_MAX])
{
	snprintf(buf, BRQ_CURSOR_MAX, CURSOR_PREFIX "%" PRIu64, last_id);
}

// The id a cursor continues below; false when s is not a cursor of ours.
static bool
cursor_parse(brq_str s, uint64_t *id)
{
	size_t   plen = sizeof(CURSOR_PREFIX) - 1;
	uint64_t v    = 0;
	if (s.len <= plen || s.len > plen + 19 || memcmp(s.ptr, CURSOR_PREFIX, plen) != 0) {
		return false;
	}
	for (uint32_t i = (uint32_t) plen; i < s.len; i++) {
		if (s.ptr[i] < '0' || s.ptr[i] > '9' || (i == plen && s.ptr[i] == '0')) {
			return false;
		}
		v = v * 10 + (uint64_t) (s.ptr[i] - '0'); // 19 digits cannot overflow uint64
	}
	if (v == 0 || v > BRQ_ID_MAX) {
		return false;
	}
	*id = v;
	return true;
}

// ---- Requests: encoding -------------------------------------------------------------

static uint32_t
request_fields(const brq_request *req)
{
	const brq_list_req  *l = &req->list;
	const brq_retry_req *r = &req->retry;
	switch (req->op) {
	case BRQ_OP_LIST:
		return 1 + (l->topic.len > 0) + l->has_state + l->has_created_after_ms +
			l->has_created_before_ms + (l->key.len > 0) + (l->cursor.len > 0);
	case BRQ_OP_RETRY: return r->id > 0 ? 1 : 3;
	case BRQ_OP_DELETE: return 1;
	default: return 0;
	}
}

static void
request_encode(brq_buf *b, const brq_request *req)
{
	const brq_list_req  *l = &req->list;
	const brq_retry_req *r = &req->retry;
	switch (req->op) {
	case BRQ_OP_LIST:
		kv_str_if(b, "topic", l->topic.len > 0, l->topic);
		if (l->has_state) {
			kv_cstr(b, "state", brq_state_name(l->state));
		}
		kv_int_if(b, "created_after_ms", l->has_created_after_ms, l->created_after_ms);
		kv_int_if(b, "created_before_ms", l->has_created_before_ms, l->created_before_ms);
		kv_str_if(b, "key", l->key.len > 0, l->key);
		kv_str_if(b, "cursor", l->cursor.len > 0, l->cursor);
		kv_uint(b, "limit", l->limit);
		break;
	case BRQ_OP_RETRY:
		if (r->id > 0) {
			kv_uint(b, "id", r->id);
			break;
		}
		kv_str(b, "topic", r->topic);
		kv_cstr(b, "state", brq_state_name(r->state));
		kv_uint(b, "limit", r->limit);
		break;
	case BRQ_OP_DELETE: kv_uint(b, "id", req->del.id); break;
	default: break;
	}
}

// ---- Requests: decoding -------------------------------------------------------------

static brq_status
opt_topic(brq_dec *d, const brq_field *f, const char *path, bool required, brq_str *out)
{
	TRY(brq_dec_str(d, f, path, required, false, 0, UINT32_MAX, BAD, out, NULL));
	if (f->at != NULL && !brq_topic_valid(out->ptr, out->len)) {
		return brq_dec_failf(d, BAD, path, "topic",
				     "invalid topic (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)", BRQ_TOPIC_MAX);
	}
	return BRQ_ST_OK;
}

static brq_status
opt_state(brq_dec *d, const brq_field *f, const char *path, bool required, bool *has, brq_state *out)
{
	brq_str s;
	bool    present;
	TRY(brq_dec_str(d, f, path, required, false, 0, UINT32_MAX, BAD, &s, &present));
	if (has != NULL) {
		*has = present;
	}
	if (!present) {
		return BRQ_ST_OK;
	}
	int k = brq_state_lookup(s.ptr, s.len);
	if (k < 0) {
		return brq_dec_failf(d, BAD, path, "state",
				     "must be one of pending|processing|failed|done|dead|canceled");
	}
	*out = (brq_state) k;
	return BRQ_ST_OK;
}

// An optional "limit" of 1..max; def when absent.
static brq_status
opt_limit(brq_dec *d, const brq_field *f, const char *path, uint32_t max, uint32_t def, uint32_t *out)
{
	bool has;

	TRY(brq_dec_u32(d, f, path, false, 1, max, out, &has));
	if (!has) {
		*out = def;
	}
	return BRQ_ST_OK;
}

enum { L_TOPIC, L_STATE, L_AFTER, L_BEFORE, L_KEY, L_CURSOR, L_LIMIT, L__COUNT };

static brq_status
decode_list(brq_dec *d, brq_rd *top, brq_list_req *q)
{
	const char *P           = "list";
	brq_field   f[L__COUNT] = {
		  [L_TOPIC]  = {"topic", NULL},
		  [L_STATE]  = {"state", NULL},
		  [L_AFTER]  = {"created_after_ms", NULL},
		  [L_BEFORE] = {"created_before_ms", NULL},
		  [L_KEY]    = {"key", NULL},
		  [L_CURSOR] = {"cursor", NULL},
		  [L_LIMIT]  = {"limit", NULL},
        };

	TRY(brq_dec_map(d, top, P, f, L__COUNT));
	TRY(opt_topic(d, &f[L_TOPIC], P, false, &q->topic));
	TRY(opt_state(d, &f[L_STATE], P, false, &q->has_state, &q->state));
	TRY(brq_dec_int(d, &f[L_AFTER], P, false, 0, BRQ_RUN_AT_MS_MAX, &q->created_after_ms,
			&q->has_created_after_ms));
	TRY(brq_dec_int(d, &f[L_BEFORE], P, false, 0, BRQ_RUN_AT_MS_MAX, &q->created_before_ms,
			&q->has_created_before_ms));
	if (q->has_created_after_ms && q->has_created_before_ms &&
	    q->created_after_ms >= q->created_before_ms) {
		return brq_dec_failf(d, BAD, P, "created_after_ms", "must be less than created_before_ms");
	}
	// An empty key is "no key", as in enqueue.
	TRY(brq_dec_str(d, &f[L_KEY], P, false, false, 0, BRQ_KEY_MAX, BAD, &q->key, NULL));
	if (!brq_utf8_valid(q->key.ptr, q->key.len, true)) {
		return brq_dec_failf(d, BAD, P, "key", "must be valid UTF-8 without NUL");
	}
	TRY(brq_dec_str(d, &f[L_CURSOR], P, false, false, 0, BRQ_CURSOR_MAX, BAD, &q->cursor, NULL));
	q->before_id = 0;
	if (q->cursor.len > 0 && !cursor_parse(q->cursor, &q->before_id)) {
		return brq_dec_failf(d, BAD, P, "cursor",
				     "not a cursor of this list (pass \"next\" back as given)");
	}
	return opt_limit(d, &f[L_LIMIT], P, BRQ_LIST_MAX, BRQ_LIST_DEFAULT, &q->limit);
}

enum { R_ID, R_TOPIC, R_STATE, R_LIMIT, R__COUNT };

static brq_status
decode_retry(brq_dec *d, brq_rd *top, brq_retry_req *q)
{
	const char *P           = "retry";
	brq_field   f[R__COUNT] = {
		  [R_ID]    = {"id", NULL},
		  [R_TOPIC] = {"topic", NULL},
		  [R_STATE] = {"state", NULL},
		  [R_LIMIT] = {"limit", NULL},
        };

	TRY(brq_dec_map(d, top, P, f, R__COUNT));
	if ((f[R_ID].at != NULL) == (f[R_TOPIC].at != NULL)) {
		return brq_dec_fail(d, BAD, "retry: give either id, or topic with state (bulk)");
	}
	if (f[R_ID].at != NULL) {
		if (f[R_STATE].at != NULL || f[R_LIMIT].at != NULL) {
			return brq_dec_failf(d, BAD, P, f[R_STATE].at != NULL ? "state" : "limit",
					     "only allowed with topic (bulk), not with id");
		}
		return brq_dec_uint(d, &f[R_ID], P, true, 1, BRQ_ID_MAX, &q->id, NULL);
	}
	q->id = 0;
	TRY(opt_topic(d, &f[R_TOPIC], P, true, &q->topic));
	TRY(opt_state(d, &f[R_STATE], P, true, NULL, &q->state));
	if (q->state != BRQ_STATE_DEAD && q->state != BRQ_STATE_CANCELED) {
		return brq_dec_failf(d, BAD, P, "state", "must be dead or canceled");
	}
	return opt_limit(d, &f[R_LIMIT], P, BRQ_RETRY_MAX, BRQ_RETRY_DEFAULT, &q->limit);
}

static brq_status
request_decode(brq_dec *d, brq_rd *top, brq_request *req)
{
	brq_field f[1] = {{"id", NULL}};
	switch (req->op) {
	case BRQ_OP_LIST: return decode_list(d, top, &req->list);
	case BRQ_OP_RETRY: return decode_retry(d, top, &req->retry);
	case BRQ_OP_DELETE:
		TRY(brq_dec_map(d, top, "delete", f, 1));
		return brq_dec_uint(d, &f[0], "delete", true, 1, BRQ_ID_MAX, &req->del.id, NULL);
	default: return BRQ_ST_OK;
	}
}

// ---- Replies --------------------------------------------------------------------------

static int
reply_encode(brq_buf *b, const brq_reply *rep)
{
	switch (rep->op) {
	case BRQ_OP_LIST:
		brq_reply_begin(b, rep->rid, 2);
		KV_ARRAY(b, "jobs", rep->list.jobs, rep->list.n_jobs, brq_pack_job_info);
		kv_opt_str(b, "next", rep->list.has_next, rep->list.next);
		break;
	case BRQ_OP_RETRY:
		brq_reply_begin(b, rep->rid, 2);
		kv_uint(b, "retried", rep->retry.retried);
		brq_pack_key(b, "ids");
		brq_pack_array(b, rep->retry.n_ids);
		for (uint32_t i = 0; i < rep->retry.n_ids; i++) {
			brq_pack_uint(b, rep->retry.ids[i]);
		}
		break;
	case BRQ_OP_DELETE:
		brq_reply_begin(b, rep->rid, 2);
		kv_uint(b, "id", rep->del.id);
		kv_bool(b, "deleted", rep->del.deleted);
		break;
	default: return BRQ_EINVAL;
	}
	return brq_buf_error(b);
}

static brq_status
reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep)
{
	brq_field f[2] = {{NULL, NULL}, {NULL, NULL}};
	switch (rep->op) {
	case BRQ_OP_LIST: f[0].name = "jobs", f[1].name = "next"; break;
	case BRQ_OP_RETRY: f[0].name = "ids", f[1].name = "retried"; break;
	default: f[0].name = "id", f[1].name = "deleted"; break; // delete
	}
	TRY(brq_dec_map(d, top, "", f, 2));
	const char *op = brq_op_name(rep->op);
	switch (rep->op) {
	case BRQ_OP_LIST:
		TRY(brq_dec_list(d, &f[0], op, true, sizeof(brq_job_info), brq_dec_job_info,
				 (void **) &rep->list.jobs, &rep->list.n_jobs, NULL));
		rep->list.has_next = false;
		if (f[1].at == NULL || brq_dec_is_nil(&f[1])) {
			return BRQ_ST_OK;
		}
		rep->list.has_next = true;
		return brq_dec_str(d, &f[1], op, true, false, 1, BRQ_CURSOR_MAX, BAD, &rep->list.next, NULL);
	case BRQ_OP_RETRY:
		TRY(brq_dec_list(d, &f[0], op, true, sizeof(uint64_t), brq_dec_uint_elem,
				 (void **) &rep->retry.ids, &rep->retry.n_ids, NULL));
		return brq_dec_u32(d, &f[1], op, true, 0, UINT32_MAX, &rep->retry.retried, NULL);
	default:
		TRY(brq_dec_uint(d, &f[0], op, true, 0, UINT64_MAX, &rep->del.id, NULL));
		return brq_dec_bool(d, &f[1], op, true, &rep->del.deleted, NULL);
	}
}

const brq_op_codec brq_admin_codec = {request_fields, request_encode, request_decode, reply_encode,
				      reply_decode};
