// SPDX-License-Identifier: MIT
// The web console's job operations (job, cancel, enqueue, jobs, retry, delete), run through the
// RPC's own decoder and operations; and the helpers every console operation shares.
#include "console_ops.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log/log.h"

int
brq_console_fail(brq_console_call *call, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(call->err, sizeof(call->err), fmt, ap);
	va_end(ap);
	return status;
}

// ---- parameters ------------------------------------------------------------------------------

int
brq_console_param_id(brq_console_call *call, const char *name, uint64_t *id)
{
	int rv = brq_form_u64(call->in, name, 1, BRQ_ID_MAX, id);
	if (rv == BRQ_ENOTFOUND) {
		return brq_console_fail(call, 400, "%s: required", name);
	}
	if (rv != 0) {
		return brq_console_fail(call, 400, "%s: must be a job id (1..%" PRIu64 ")", name, BRQ_ID_MAX);
	}
	return 0;
}

int
brq_console_param_topic(brq_console_call *call, const char *name, bool required, brq_str *out)
{
	const brq_str *v = brq_form_get(call->in, name);
	if (v == NULL || v->len == 0) {
		return required ? brq_console_fail(call, 400, "%s: required", name) : 0;
	}
	if (!brq_topic_valid(v->ptr, v->len)) {
		return brq_console_fail(call, 400, "%s: must match [a-z0-9][a-z0-9._-]*, at most 128 bytes",
					name);
	}
	*out = *v;
	return 0;
}

int
brq_console_param_state(brq_console_call *call, const char *name, int *state)
{
	const brq_str *v = brq_form_get(call->in, name);
	*state           = -1;
	if (v == NULL || v->len == 0) {
		return 0;
	}
	int s = brq_state_lookup(v->ptr, v->len);
	if (s < 0) {
		return brq_console_fail(
			call, 400, "%s: must be pending, processing, failed, done, dead or canceled", name);
	}
	*state = s;
	return 0;
}

int
brq_console_param_u64(brq_console_call *call, const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
	int rv = brq_form_u64(call->in, name, min, max, out);
	if (rv == BRQ_EINVAL) {
		return brq_console_fail(call, 400, "%s: must be a number in %" PRIu64 "..%" PRIu64, name, min,
					max);
	}
	return 0;
}

// ---- JSON -----------------------------------------------------------------------------------

static void
opt_str(brq_jw *out, const char *key, bool has, brq_str s)
{
	brq_jw_key(out, key);
	if (has) {
		brq_jw_str(out, s.ptr, s.len);
	} else {
		brq_jw_null(out);
	}
}

void
brq_console_json_text(brq_jw *out, const char *key, brq_str s)
{
	brq_jw_key(out, key);
	if (brq_json_valid(s.ptr, s.len, 512, 0, NULL)) {
		brq_jw_raw(out, s.ptr, s.len);
	} else {
		brq_jw_str(out, s.ptr, s.len);
	}
}

void
brq_console_json_job(brq_jw *out, const brq_job_info *j)
{
	// Every key of the job map (docs/protocol.md §7.8) in its order, in the JSON form
	// (§11): each instant twice, nil and absent keys null.
	brq_jw_obj(out);
	brq_jw_kv_u64(out, "id", j->id);
	brq_jw_kv_str(out, "topic", j->topic.ptr, j->topic.len);
	brq_console_json_text(out, "payload", j->payload);
	brq_jw_kv_cstr(out, "state", brq_state_name(j->state));
	brq_jw_kv_u64(out, "attempts", j->attempts);
	brq_jw_kv_u64(out, "max_attempts", j->max_attempts);
	brq_jw_kv_instant(out, "available_at", j->available_at_ms, true);
	opt_str(out, "locked_by", j->has_locked_by, j->locked_by);
	brq_jw_kv_instant(out, "locked_until", j->locked_until_ms, j->has_locked_until_ms);
	opt_str(out, "last_error", j->has_last_error, j->last_error);
	opt_str(out, "key", j->has_key, j->key);
	brq_jw_kv_instant(out, "created_at", j->created_at_ms, true);
	brq_jw_kv_instant(out, "updated_at", j->updated_at_ms, true);
	brq_jw_kv_opt_u64(out, "priority", j->priority, j->priority > 0);
	// The handler's result (JSON, like the payload); null when there is none.
	if (j->has_result) {
		brq_console_json_text(out, "result", j->result);
	} else {
		brq_jw_key(out, "result");
		brq_jw_null(out);
	}
	brq_jw_kv_opt_u64(out, "retry_of", j->retry_of, j->has_retry_of);
	// The latest claim, and while processing the running attempt's deadlines (null: none).
	brq_jw_kv_instant(out, "claimed_at", j->claimed_at_ms, j->has_claimed_at_ms);
	brq_jw_kv_instant(out, "attempt_deadline", j->attempt_deadline_ms, j->attempt_deadline_ms != 0);
	brq_jw_kv_instant(out, "max_execution_deadline", j->max_execution_deadline_ms,
			  j->max_execution_deadline_ms != 0);
	brq_jw_kv_u64(out, "lost_leases", j->lost_leases);
	// The attempts' errors, oldest first: the job reply's; null in a list's rows.
	brq_jw_key(out, "errors");
	if (j->has_errors) {
		brq_jw_arr(out);
		for (uint32_t i = 0; i < j->n_errors; i++) {
			const brq_attempt_error *e = &j->errors[i];
			brq_jw_obj(out);
			brq_jw_kv_u64(out, "attempt", e->attempt);
			brq_jw_kv_instant(out, "at", e->at_ms, true);
			brq_jw_kv_str(out, "error", e->error.ptr, e->error.len);
			brq_jw_end(out);
		}
		brq_jw_end(out);
	} else {
		brq_jw_null(out);
	}
	brq_jw_end(out);
}

// ---- through the RPC ------------------------------------------------------------------------

// The HTTP status for an RPC status.
static int
http_status(brq_status st)
{
	switch (st) {
	case BRQ_ST_OK: return 200;
	case BRQ_ST_INVALID_ARGUMENT: return 400;
	case BRQ_ST_UNAUTHENTICATED: return 401;
	case BRQ_ST_PERMISSION_DENIED: return 403;
	case BRQ_ST_NOT_FOUND: return 404;
	case BRQ_ST_TOO_LARGE: return 413;
	case BRQ_ST_CONFLICT: return 409;
	case BRQ_ST_UNAVAILABLE:
	case BRQ_ST_RESOURCE_EXHAUSTED: return 503;
	default: return 500;
	}
}

// Runs req (op and fields set, strings borrowed) as the RPC runs a request: encoded,
// then decoded and validated by the RPC's decoder with the RPC's limits (the same
// refusals, worded the same), run by brq_ops_run on this pool thread's connection, and
// its reply decoded into *rep (borrowing call->w). Returns 200, or the status of a
// refusal with call->err set.
int
brq_console_rpc(brq_console_call *call, brq_request *req, brq_reply *rep)
{
	brq_work *w = call->w;
	brq_buf   enc;
	char      err[BRQ_ERRTEXT_MAX];
	int       status;

	brq_buf_init(&enc, call->lim->max_request);
	if (brq_request_encode(&enc, req) != 0) {
		status = brq_console_fail(call, enc.err == BRQ_E2BIG ? 413 : 500,
					  "%s: the request is too large", brq_op_name(req->op));
		goto out;
	}
	brq_status st =
		brq_request_decode(&w->req, enc.data, enc.len, call->lim, &w->arena, err, sizeof(err));
	if (st != BRQ_ST_OK) {
		status     = brq_console_fail(call, http_status(st), "%s", err);
		call->code = brq_status_name(st);
		goto out;
	}
	// Never a long-poll here (no claim): the operation always replies.
	(void) brq_ops_run(call->ops, call->c, w);
	st = brq_reply_decode(rep, req->op, w->out.data, w->out.len, call->lim, &w->arena, err, sizeof(err));
	if (st != BRQ_ST_OK) {
		status = brq_console_fail(call, 500, "%s: reply: %s", brq_op_name(req->op), err);
		goto out;
	}
	status = http_status(rep->code);
	if (status != 200) {
		brq_console_fail(call, status, "%.*s", (int) rep->msg.len, rep->msg.ptr);
		call->code = brq_status_name(rep->code);
	}
out:
	brq_buf_fini(&enc);
	return status;
}

// The RPC of an operation on the one job the parameter "id" names (job, cancel, delete),
// the id read into *id (a field of *req): 200, or a refusal's status with call->err set.
static int
rpc_on_id(brq_console_call *call, brq_request *req, uint64_t *id, brq_reply *rep)
{
	int status = brq_console_param_id(call, "id", id);
	return status != 0 ? status : brq_console_rpc(call, req, rep);
}

int
brq_console_op_job(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_JOB};
	brq_reply   rep;
	int         status = rpc_on_id(call, &req, &req.job.id, &rep);
	if (status == 200) {
		brq_jw_key(call->out, "job");
		brq_console_json_job(call->out, &rep.job.job);
	}
	return status;
}

int
brq_console_op_cancel(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_CANCEL};
	brq_reply   rep;
	int         status = rpc_on_id(call, &req, &req.cancel.id, &rep);
	if (status != 200)
		return status;
	const char *state = brq_state_name(rep.cancel.state);
	BRQ_LOG_INFO("console_action", "action=cancel id=%" PRIu64 " state=%s canceled=%s %s", req.cancel.id,
		     state, rep.cancel.canceled ? "true" : "false", call->actor);
	brq_jw_kv_u64(call->out, "id", req.cancel.id);
	brq_jw_kv_cstr(call->out, "state", state);
	brq_jw_kv_bool(call->out, "canceled", rep.cancel.canceled);
	return 200;
}

// enqueue's optional fields.
static int
enqueue_options(brq_console_call *call, brq_job_spec *j)
{
	uint64_t v;
	int      rv = brq_form_u64(call->in, "delay_ms", 0, BRQ_DELAY_MS_MAX, &v);
	if (rv == BRQ_EINVAL) {
		return brq_console_fail(call, 400,
					"delay_ms: must be a number of milliseconds (0..%" PRIu64 ")",
					BRQ_DELAY_MS_MAX);
	}
	if (rv == 0) {
		j->has_delay_ms = true;
		j->delay_ms     = v;
	}
	rv = brq_form_u64(call->in, "max_attempts", 1, BRQ_ATTEMPTS_MAX, &v);
	if (rv == BRQ_EINVAL) {
		return brq_console_fail(call, 400, "max_attempts: must be 1..%d", BRQ_ATTEMPTS_MAX);
	}
	if (rv == 0) {
		j->has_max_attempts = true;
		j->max_attempts     = (uint32_t) v;
	}
	rv = brq_form_u64(call->in, "priority", BRQ_PRIORITY_MIN, BRQ_PRIORITY_MAX, &v);
	if (rv == BRQ_EINVAL) {
		return brq_console_fail(call, 400, "priority: must be %d..%d (1 runs first)",
					BRQ_PRIORITY_MIN, BRQ_PRIORITY_MAX);
	}
	if (rv == 0) {
		j->has_priority = true;
		j->priority     = (uint32_t) v;
	}
	const brq_str *key = brq_form_get(call->in, "key");
	if (key != NULL) {
		j->key = *key; // empty: no key, as on the wire
	}
	return 0;
}

int
brq_console_op_enqueue(brq_console_call *call)
{
	brq_job_spec   job = {0};
	brq_request    req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &job, .n_jobs = 1}};
	brq_reply      rep;
	const brq_str *payload = brq_form_get(call->in, "payload");
	int            status  = brq_console_param_topic(call, "topic", true, &job.topic);
	if (status != 0) {
		return status;
	}
	if (payload == NULL || payload->len == 0) {
		return brq_console_fail(
			call, 400, "payload: required (JSON text, e.g. {} or {\"to\":\"a@example.org\"})");
	}
	job.payload = *payload;
	if ((status = enqueue_options(call, &job)) != 0 ||
	    (status = brq_console_rpc(call, &req, &rep)) != 200) {
		return status;
	}
	if (rep.enqueue.n_results != 1) {
		return brq_console_fail(call, 500, "enqueue: the reply holds %u results",
					rep.enqueue.n_results);
	}
	const brq_enqueue_result *r = &rep.enqueue.results[0];
	BRQ_LOG_INFO("console_action", "action=enqueue id=%" PRIu64 " topic=%.*s created=%s %s", r->id,
		     (int) job.topic.len, job.topic.ptr, r->created ? "true" : "false", call->actor);
	brq_jw_kv_u64(call->out, "id", r->id);
	brq_jw_kv_bool(call->out, "created", r->created);
	return 200;
}

// ---- the job list, retry, delete ----------------------------------------------------------------

// Largest page of the job list.
#define LIST_LIMIT_MAX 200
// Longest list cursor accepted here (the list's own are shorter: the RPC refuses those
// it did not make).
#define CURSOR_MAX 256

int
brq_console_jobs_params(brq_console_call *call, brq_list_req *q)
{
	int      state, status;
	uint64_t after = 0, before = 0, limit = 50;
	if ((status = brq_console_param_topic(call, "topic", false, &q->topic)) != 0 ||
	    (status = brq_console_param_state(call, "state", &state)) != 0 ||
	    (status = brq_console_param_u64(call, "created_after_ms", 0, BRQ_RUN_AT_MS_MAX, &after)) != 0 ||
	    (status = brq_console_param_u64(call, "created_before_ms", 0, BRQ_RUN_AT_MS_MAX, &before)) != 0 ||
	    (status = brq_console_param_u64(call, "limit", 1, LIST_LIMIT_MAX, &limit)) != 0) {
		return status;
	}
	const brq_str *key    = brq_form_get(call->in, "key");
	const brq_str *cursor = brq_form_get(call->in, "cursor");
	if (key != NULL && key->len > BRQ_KEY_MAX) {
		return brq_console_fail(call, 400, "key: at most %d bytes", BRQ_KEY_MAX);
	}
	if (cursor != NULL && cursor->len > CURSOR_MAX) {
		return brq_console_fail(call, 400, "cursor: at most %d bytes (pass back the list's \"next\")",
					CURSOR_MAX);
	}
	if (after != 0 && before != 0 && after >= before) {
		return brq_console_fail(call, 400, "created_after_ms: must be before created_before_ms");
	}
	q->has_state             = state >= 0;
	q->state                 = state >= 0 ? (brq_state) state : BRQ_STATE_PENDING;
	q->has_created_after_ms  = after != 0;
	q->created_after_ms      = (int64_t) after;
	q->has_created_before_ms = before != 0;
	q->created_before_ms     = (int64_t) before;
	q->key                   = key != NULL ? *key : (brq_str) {0};
	q->cursor                = cursor != NULL ? *cursor : (brq_str) {0};
	q->limit                 = (uint32_t) limit;
	return 0;
}

// GET /console/api/jobs. 200: {"jobs":[job...], "next": cursor or null}.
int
brq_console_op_jobs(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_LIST};
	brq_reply   rep;
	int         status = brq_console_jobs_params(call, &req.list);
	if (status != 0 || (status = brq_console_rpc(call, &req, &rep)) != 200) {
		return status;
	}
	brq_jw_key(call->out, "jobs");
	brq_jw_arr(call->out);
	for (uint32_t i = 0; i < rep.list.n_jobs; i++) {
		brq_console_json_job(call->out, &rep.list.jobs[i]);
	}
	brq_jw_end(call->out);
	opt_str(call->out, "next", rep.list.has_next, rep.list.next);
	return 200;
}

// POST /console/api/retry: id, or topic with state (dead or canceled) and limit (1..1000,
// default 100). 200: {"retried": n, "ids": [...]}.
int
brq_console_op_retry(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_RETRY};
	brq_reply   rep;
	uint64_t    limit = BRQ_RETRY_DEFAULT;
	int         state = -1, status;
	if (brq_form_get(call->in, "id") != NULL) {
		status = brq_console_param_id(call, "id", &req.retry.id);
	} else if ((status = brq_console_param_topic(call, "topic", true, &req.retry.topic)) == 0 &&
		   (status = brq_console_param_state(call, "state", &state)) == 0 &&
		   (status = brq_console_param_u64(call, "limit", 1, BRQ_RETRY_MAX, &limit)) == 0 &&
		   state != BRQ_STATE_DEAD && state != BRQ_STATE_CANCELED) {
		status = brq_console_fail(call, 400, "state: required with topic: dead or canceled");
	}
	req.retry.state = req.retry.id > 0 ? BRQ_STATE_DEAD : (brq_state) state;
	req.retry.limit = (uint32_t) limit;
	if (status != 0 || (status = brq_console_rpc(call, &req, &rep)) != 200) {
		return status;
	}
	BRQ_LOG_INFO("console_action", "action=retry id=%" PRIu64 " topic=%.*s retried=%" PRIu32 " %s",
		     req.retry.id, (int) req.retry.topic.len, req.retry.topic.ptr, rep.retry.retried,
		     call->actor);
	brq_jw_kv_u64(call->out, "retried", rep.retry.retried);
	brq_jw_key(call->out, "ids");
	brq_jw_arr(call->out);
	for (uint32_t i = 0; i < rep.retry.n_ids; i++) {
		brq_jw_u64(call->out, rep.retry.ids[i]);
	}
	brq_jw_end(call->out);
	return 200;
}

// POST /console/api/delete: id (a terminal job). 200: {"id": n, "deleted": true}; a job
// in another state: 409.
int
brq_console_op_delete(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_DELETE};
	brq_reply   rep;
	int         status = rpc_on_id(call, &req, &req.del.id, &rep);
	if (status != 200)
		return status;
	BRQ_LOG_INFO("console_action", "action=delete id=%" PRIu64 " %s", req.del.id, call->actor);
	brq_jw_kv_u64(call->out, "id", rep.del.id);
	brq_jw_kv_bool(call->out, "deleted", rep.del.deleted);
	return 200;
}
