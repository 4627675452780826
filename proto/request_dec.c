// SPDX-License-Identifier: MIT
// Request decoding (gateway side): envelope (before authentication), then the fields of each operation.
#include "proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dec.h"
#include "opcodecs.h"

void
brq_limits_default(brq_limits *lim)
{
	lim->max_batch      = 1000;
	lim->max_payload    = 1024u * 1024u;
	lim->max_wait_ms    = 300000;
	lim->max_request    = 4u * 1024u * 1024u;
	lim->max_depth      = 8;
	lim->max_json_depth = 256;
}

// Text that ends up in a PostgreSQL text column.
static brq_status
check_text(brq_dec *d, const char *path, const char *name, brq_str s)
{
	if (!brq_utf8_valid(s.ptr, s.len, true)) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, name,
				     "must be valid UTF-8 without NUL");
	}
	return BRQ_ST_OK;
}

static brq_status
check_topic(brq_dec *d, const char *path, const char *name, brq_str s)
{
	if (!brq_topic_valid(s.ptr, s.len)) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, name,
				     "invalid topic (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)", BRQ_TOPIC_MAX);
	}
	return BRQ_ST_OK;
}

// JSON text bound for a jsonb column that brq_json_valid() refused: invalid_argument
// naming the field, with what was wrong where.
static brq_status
json_fail(brq_dec *d, const char *path, const char *name, const brq_json_err *je)
{
	char why[160];
	brq_json_err_text(je, why, sizeof why);
	return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, name, "%s", why);
}

static brq_status
decode_id(brq_dec *d, const brq_field *f, const char *path, uint64_t *id)
{
	return brq_dec_uint(d, f, path, true, 1, BRQ_ID_MAX, id, NULL);
}

// ---- Job spec (enqueue.jobs[i], chain[i]) -------------------------------------------

enum { J_TOPIC, J_PAYLOAD, J_KEY, J_DELAY, J_RUN_AT, J_MAX_ATTEMPTS, J_PRIORITY, J__COUNT };

static brq_status
decode_job_spec(brq_dec *d, brq_rd *r, const char *path, brq_job_spec *j)
{
	brq_field f[J__COUNT] = {
		[J_TOPIC] = {"topic", NULL},       [J_PAYLOAD] = {"payload", NULL},
		[J_KEY] = {"key", NULL},           [J_DELAY] = {"delay_ms", NULL},
		[J_RUN_AT] = {"run_at_ms", NULL},  [J_MAX_ATTEMPTS] = {"max_attempts", NULL},
		[J_PRIORITY] = {"priority", NULL},
	};
	const brq_limits *lim = d->lim;
	brq_json_err      je;

	TRY(brq_dec_map(d, r, path, f, J__COUNT));

	TRY(brq_dec_str(d, &f[J_TOPIC], path, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &j->topic,
			NULL));
	TRY(check_topic(d, path, "topic", j->topic));

	TRY(brq_dec_str(d, &f[J_PAYLOAD], path, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT,
			&j->payload, NULL));
	if (j->payload.len > lim->max_payload) {
		return brq_dec_failf(d, BRQ_ST_TOO_LARGE, path, "payload",
				     "%" PRIu32 " bytes exceeds max_payload %" PRIu32, j->payload.len,
				     lim->max_payload);
	}
	if (!brq_json_valid(j->payload.ptr, j->payload.len, lim->max_json_depth, BRQ_JSON_FOR_JSONB, &je)) {
		return json_fail(d, path, "payload", &je);
	}

	// An empty key is "no key": it is simply left with len 0.
	TRY(brq_dec_str(d, &f[J_KEY], path, false, false, 0, BRQ_KEY_MAX, BRQ_ST_INVALID_ARGUMENT, &j->key,
			NULL));
	TRY(check_text(d, path, "key", j->key));

	TRY(brq_dec_uint(d, &f[J_DELAY], path, false, 0, BRQ_DELAY_MS_MAX, &j->delay_ms, &j->has_delay_ms));
	TRY(brq_dec_int(d, &f[J_RUN_AT], path, false, 0, BRQ_RUN_AT_MS_MAX, &j->run_at_ms,
			&j->has_run_at_ms));
	if (j->has_delay_ms && j->has_run_at_ms) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "run_at_ms",
				     "not allowed together with delay_ms");
	}
	TRY(brq_dec_u32(d, &f[J_MAX_ATTEMPTS], path, false, 1, BRQ_ATTEMPTS_MAX, &j->max_attempts,
			&j->has_max_attempts));
	TRY(brq_dec_u32(d, &f[J_PRIORITY], path, false, BRQ_PRIORITY_MIN, BRQ_PRIORITY_MAX, &j->priority,
			&j->has_priority));
	return BRQ_ST_OK;
}

static brq_status
job_spec_elem(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return decode_job_spec(d, r, path, out);
}

// ---- Settle item (settle.items[i], claim.settle[i]) ---------------------------------

// The optional "result" of a done item: JSON text held to the payload's rules (size,
// validity), since it is stored and returned like one.
static brq_status
decode_result(brq_dec *d, const brq_field *f, const char *path, brq_settle_item *it)
{
	brq_json_err je;

	if (f->at != NULL && it->outcome != BRQ_OUTCOME_DONE) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "result",
				     "only allowed with outcome done");
	}
	TRY(brq_dec_str(d, f, path, false, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &it->result,
			&it->has_result));
	if (!it->has_result) {
		return BRQ_ST_OK;
	}
	if (it->result.len > d->lim->max_payload) {
		return brq_dec_failf(d, BRQ_ST_TOO_LARGE, path, "result",
				     "%" PRIu32 " bytes exceeds max_payload %" PRIu32, it->result.len,
				     d->lim->max_payload);
	}
	if (!brq_json_valid(it->result.ptr, it->result.len, d->lim->max_json_depth, BRQ_JSON_FOR_JSONB,
			    &je)) {
		return json_fail(d, path, "result", &je);
	}
	return BRQ_ST_OK;
}

enum { S_ID, S_LEASE, S_OUTCOME, S_ERROR, S_DELAY, S_CHAIN, S_RESULT, S__COUNT };

static brq_status
decode_settle_item(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_settle_item *it          = out;
	brq_field        f[S__COUNT] = {
		       [S_ID] = {"id", NULL},           [S_LEASE] = {"lease", NULL},
		       [S_OUTCOME] = {"outcome", NULL}, [S_ERROR] = {"error", NULL},
		       [S_DELAY] = {"delay_ms", NULL},  [S_CHAIN] = {"chain", NULL},
		       [S_RESULT] = {"result", NULL},
        };
	brq_str outcome;
	brq_rd  elems;
	int     oc;

	TRY(brq_dec_map(d, r, path, f, S__COUNT));
	TRY(decode_id(d, &f[S_ID], path, &it->id));
	TRY(brq_dec_lease(d, &f[S_LEASE], path, it->lease));
	TRY(brq_dec_str(d, &f[S_OUTCOME], path, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &outcome,
			NULL));
	oc = brq_outcome_lookup(outcome.ptr, outcome.len);
	if (oc < 0) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "outcome",
				     "must be one of done|fail|delay|preserve|cancel");
	}
	it->outcome = (brq_outcome) oc;

	TRY(brq_dec_str(d, &f[S_ERROR], path, false, false, 0, BRQ_ERROR_WIRE_MAX, BRQ_ST_TOO_LARGE,
			&it->error, &it->has_error));
	TRY(check_text(d, path, "error", it->error));

	if (it->outcome == BRQ_OUTCOME_DELAY) {
		TRY(brq_dec_uint(d, &f[S_DELAY], path, true, 0, BRQ_DELAY_MS_MAX, &it->delay_ms, NULL));
	} else if (f[S_DELAY].at != NULL) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "delay_ms",
				     "only allowed with outcome delay");
	}

	TRY(decode_result(d, &f[S_RESULT], path, it));
	if (f[S_CHAIN].at != NULL && it->outcome != BRQ_OUTCOME_DONE) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "chain",
				     "only allowed with outcome done");
	}
	TRY(brq_dec_array(d, &f[S_CHAIN], path, false, 0, d->lim->max_batch, BRQ_ST_TOO_LARGE, &elems,
			  &it->n_chain, &it->has_chain));
	if (it->has_chain) {
		// One settle request writes at most max_batch chained jobs in all, so a batch
		// of settles cannot turn into max_batch^2 inserts in one transaction.
		if (it->n_chain > d->lim->max_batch - d->chain_total) {
			return brq_dec_failf(d, BRQ_ST_TOO_LARGE, path, "chain",
					     "more than max_batch (%" PRIu32 ") chained jobs in one request",
					     d->lim->max_batch);
		}
		d->chain_total += it->n_chain;
		TRY(brq_dec_elems(d, &elems, it->n_chain, path, "chain", sizeof(brq_job_spec), job_spec_elem,
				  (void **) &it->chain));
	}
	return BRQ_ST_OK;
}

// ---- Lease ref (heartbeat.leases[i]) ------------------------------------------------

static brq_status
decode_lease_ref(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_lease_ref *l    = out;
	brq_field      f[2] = {{"id", NULL}, {"lease", NULL}};

	TRY(brq_dec_map(d, r, path, f, 2));
	TRY(decode_id(d, &f[0], path, &l->id));
	return brq_dec_lease(d, &f[1], path, l->lease);
}

// ---- Operations ---------------------------------------------------------------------
// The top-level map is read again with the operation's own keys, its name as the path:
// a repeated key or a bad value is reported as "claim.n: ...". The envelope has read
// the rid by then, so every failure from here on is answered with it (§4).

// An op's array field of 1..max_batch entries (required; more: too_large), its elements
// decoded by fn into arena storage as "op.<name>[i]".
static brq_status
batch(brq_dec *d, const brq_field *f, const char *op, size_t size, brq_dec_elem_fn fn, void **out,
      uint32_t *n)
{
	brq_rd elems;

	TRY(brq_dec_array(d, f, op, true, 1, d->lim->max_batch, BRQ_ST_TOO_LARGE, &elems, n, NULL));
	return brq_dec_elems(d, &elems, *n, op, f->name, size, fn, out);
}

// An op whose one field, `key`, is such an array (enqueue.jobs, settle.items).
static brq_status
batch_op(brq_dec *d, brq_rd *top, const char *op, const char *key, size_t size, brq_dec_elem_fn fn,
	 void **out, uint32_t *n)
{
	brq_field f[1] = {{key, NULL}};

	TRY(brq_dec_map(d, top, op, f, 1));
	return batch(d, &f[0], op, size, fn, out, n);
}

enum { C_WORKER, C_TOPICS, C_N, C_LEASE, C_WAIT, C_SETTLE, C__COUNT };

static brq_status
decode_claim(brq_dec *d, brq_rd *top, brq_claim_req *q)
{
	brq_field f[C__COUNT] = {
		[C_WORKER] = {"worker", NULL},  [C_TOPICS] = {"topics", NULL}, [C_N] = {"n", NULL},
		[C_LEASE] = {"lease_ms", NULL}, [C_WAIT] = {"wait_ms", NULL},  [C_SETTLE] = {"settle", NULL},
	};
	const char *P = "claim";
	char        path[BRQ_PATH_MAX];
	brq_rd      elems;

	TRY(brq_dec_map(d, top, P, f, C__COUNT));
	TRY(brq_dec_str(d, &f[C_WORKER], P, true, false, 1, BRQ_WORKER_MAX, BRQ_ST_INVALID_ARGUMENT,
			&q->worker, NULL));
	TRY(check_text(d, P, "worker", q->worker));

	TRY(brq_dec_array(d, &f[C_TOPICS], P, true, 1, BRQ_TOPICS_MAX, BRQ_ST_INVALID_ARGUMENT, &elems,
			  &q->n_topics, NULL));
	TRY(brq_dec_alloc(d, q->n_topics, sizeof(brq_str), (void **) &q->topics));
	for (uint32_t i = 0; i < q->n_topics; i++) {
		(void) snprintf(path, sizeof path, "topics[%" PRIu32 "]", i);
		if (brq_mp_read_str(&elems, &q->topics[i]) != 0) {
			return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, P, path, "must be a string");
		}
		TRY(check_topic(d, P, path, q->topics[i]));
	}

	TRY(brq_dec_u32(d, &f[C_N], P, true, 1, d->lim->max_batch, &q->n, NULL));
	TRY(brq_dec_u32(d, &f[C_LEASE], P, false, BRQ_LEASE_MS_MIN, BRQ_LEASE_MS_MAX, &q->lease_ms,
			&q->has_lease_ms));
	TRY(brq_dec_u32(d, &f[C_WAIT], P, false, 0, d->lim->max_wait_ms, &q->wait_ms, &q->has_wait_ms));

	// An empty "settle" is allowed so a worker can always send the key.
	TRY(brq_dec_array(d, &f[C_SETTLE], P, false, 0, d->lim->max_batch, BRQ_ST_TOO_LARGE, &elems,
			  &q->n_settle, &q->has_settle));
	if (!q->has_settle) {
		return BRQ_ST_OK;
	}
	return brq_dec_elems(d, &elems, q->n_settle, P, "settle", sizeof(brq_settle_item), decode_settle_item,
			     (void **) &q->settle);
}

static brq_status
decode_heartbeat(brq_dec *d, brq_rd *top, brq_heartbeat_req *q)
{
	brq_field f[2] = {{"leases", NULL}, {"lease_ms", NULL}};

	TRY(brq_dec_map(d, top, "heartbeat", f, 2));
	TRY(batch(d, &f[0], "heartbeat", sizeof(brq_lease_ref), decode_lease_ref, (void **) &q->leases,
		  &q->n_leases));
	TRY(brq_dec_u32(d, &f[1], "heartbeat", false, BRQ_LEASE_MS_MIN, BRQ_LEASE_MS_MAX, &q->lease_ms,
			&q->has_lease_ms));
	return BRQ_ST_OK;
}

static brq_status
decode_id_op(brq_dec *d, brq_rd *top, const char *op, brq_id_req *q)
{
	brq_field f[1] = {{"id", NULL}};

	TRY(brq_dec_map(d, top, op, f, 1));
	return decode_id(d, &f[0], op, &q->id);
}

// ---- Envelope -----------------------------------------------------------------------

// Echo the op name only when it is short and plain, so the reply never carries bytes
// that could confuse a terminal or a log.
static bool
printable_name(brq_str s)
{
	if (s.len == 0 || s.len > 32) {
		return false;
	}
	for (uint32_t i = 0; i < s.len; i++) {
		char c = s.ptr[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
			return false;
		}
	}
	return true;
}

// "v": this protocol's version; any other number is named in the error.
static brq_status
decode_version(brq_dec *d, const brq_field *f, const char *path, void *obj)
{
	brq_rd   r = brq_dec_at(d, f);
	uint64_t u;
	int64_t  i;

	(void) path;
	(void) obj;
	if (f->at == NULL) {
		return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "v: required unsigned integer");
	}
	if (brq_mp_read_uint(&r, &u) == 0) {
		if (u == BRQ_PROTO_VERSION) {
			return BRQ_ST_OK;
		}
		return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "v: unsupported protocol version %" PRIu64,
				    u);
	}
	if (brq_mp_read_int(&r, &i) == 0) {
		return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "v: unsupported protocol version %" PRId64,
				    i);
	}
	return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "v: must be an unsigned integer");
}

// "op": a known operation.
static brq_status
decode_op(brq_dec *d, const brq_field *f, const char *path, void *obj)
{
	brq_request *req = obj;
	brq_str      op;
	int          k;

	TRY(brq_dec_str(d, f, path, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &op, NULL));
	k = brq_op_lookup(op.ptr, op.len);
	if (k < 0) {
		if (printable_name(op)) {
			return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "op: unknown operation \"%.*s\"",
					    (int) op.len, op.ptr);
		}
		return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "op: unknown operation");
	}
	req->op = (brq_op) k;
	return BRQ_ST_OK;
}

// rid first, so that every later failure can still be answered with it.
static const brq_fdesc envelope_fields[] = {
	{"rid", BRQ_K_U64, 0, .off = offsetof(brq_request, rid)},
	{"v", BRQ_K_FN, 0, .fn = decode_version},
	{"op", BRQ_K_FN, 0, .fn = decode_op},
	{"token", BRQ_K_STR, BRQ_BIN, .off = offsetof(brq_request, token), .min = 1, .max = BRQ_TOKEN_MAX},
	{"timeout_ms", BRQ_K_U32, 0, .off = offsetof(brq_request, timeout_ms)},
};

brq_status
brq_request_decode_envelope(brq_request *req, const void *buf, size_t len, const brq_limits *lim, char *err,
			    size_t errlen)
{
	brq_dec     d = {lim, NULL, err, errlen, (const uint8_t *) buf + len, 0};
	brq_rd      r = {buf, (const uint8_t *) buf + len};
	size_t      off;
	const char *why;

	memset(req, 0, sizeof *req);
	if (err != NULL && errlen > 0) {
		err[0] = '\0';
	}
	// 1. Size, then structure: after this every read below stays inside buf.
	if (len > lim->max_request) {
		return brq_dec_fail(&d, BRQ_ST_TOO_LARGE, "message: %zu bytes exceeds max_request %" PRIu32,
				    len, lim->max_request);
	}
	if (!brq_mp_check(buf, len, lim->max_depth, &off, &why)) {
		return brq_dec_fail(&d, BRQ_ST_INVALID_ARGUMENT, "message: %s at byte %zu", why, off);
	}
	// 2. A map of string keys, no envelope key twice; then its fields. The token is
	// the caller's only when the whole envelope decoded: a field after it that fails
	// (a bad timeout_ms) must not leave it set.
	brq_status st = brq_dec_fields(&d, &r, "", envelope_fields, BRQ_NELEM(envelope_fields), req);
	if (st != BRQ_ST_OK) {
		req->token = (brq_str) {0};
		return st;
	}
	req->body_ = buf;
	req->end_  = r.end;
	return BRQ_ST_OK;
}

brq_status
brq_request_decode_body(brq_request *req, const brq_limits *lim, brq_arena *arena, char *err, size_t errlen)
{
	brq_dec             d      = {lim, arena, err, errlen, req->end_, 0};
	brq_rd              top    = {req->body_, req->end_};
	const brq_op_codec *family = brq_op_codec_of(req->op);

	if (err != NULL && errlen > 0) {
		err[0] = '\0';
	}
	if (req->body_ == NULL || req->op == BRQ_OP_NONE) {
		return brq_dec_fail(&d, BRQ_ST_INTERNAL, "request envelope was not decoded");
	}
	if (family != NULL) {
		return family->request_decode(&d, &top, req);
	}
	switch (req->op) {
	case BRQ_OP_ENQUEUE:
		return batch_op(&d, &top, "enqueue", "jobs", sizeof(brq_job_spec), job_spec_elem,
				(void **) &req->enqueue.jobs, &req->enqueue.n_jobs);
	case BRQ_OP_CLAIM: return decode_claim(&d, &top, &req->claim);
	case BRQ_OP_HEARTBEAT: return decode_heartbeat(&d, &top, &req->heartbeat);
	case BRQ_OP_SETTLE:
		return batch_op(&d, &top, "settle", "items", sizeof(brq_settle_item), decode_settle_item,
				(void **) &req->settle.items, &req->settle.n_items);
	case BRQ_OP_CANCEL: return decode_id_op(&d, &top, "cancel", &req->cancel);
	case BRQ_OP_JOB: return decode_id_op(&d, &top, "job", &req->job);
	default: return BRQ_ST_OK; // ping, stats: no fields (unknown keys are ignored)
	}
}

brq_status
brq_request_decode(brq_request *req, const void *buf, size_t len, const brq_limits *lim, brq_arena *arena,
		   char *err, size_t errlen)
{
	TRY(brq_request_decode_envelope(req, buf, len, lim, err, errlen));
	return brq_request_decode_body(req, lim, arena, err, errlen);
}
