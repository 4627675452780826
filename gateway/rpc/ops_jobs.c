// SPDX-License-Identifier: MIT
// The operators' operations: list (a page of jobs), retry (terminal jobs as new jobs),
// delete (a terminal job). Admin role only
// (brq_op_admin_only in proto/status.c, the one list).
#include "ops_jobs.h"

#include <inttypes.h>
#include <stdio.h>

#include "log/log.h"
#include "metrics/metrics.h"

// Bytes of a job row in a list reply besides its strings (keys, numbers), rounded up.
#define LISTED_JOB_OVERHEAD 256

// How many of jobs[0..n) fit a reply of `budget` bytes (at least one): a page of big
// payloads ends early, and its "next" continues after the last row sent.
static uint32_t
fit_page(const brq_job_info *jobs, uint32_t n, uint64_t budget)
{
	uint64_t size = LISTED_JOB_OVERHEAD;
	for (uint32_t i = 0; i < n; i++) {
		const brq_job_info *j = &jobs[i];
		uint64_t one = LISTED_JOB_OVERHEAD + j->topic.len + j->payload.len + j->locked_by.len +
			j->last_error.len + j->key.len + j->result.len;
		if (i > 0 && size + one > budget)
			return i;
		size += one;
	}
	return n;
}

static brq_status
op_list(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	brq_job_info *jobs;
	uint32_t      n;
	bool          more;
	char          next[BRQ_CURSOR_MAX];
	int           rv = brq_store_list(c, &w->req.list, &jobs, &n, &more);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "list");
	uint32_t fit = fit_page(jobs, n, o->cfg->max_request_bytes);
	more         = more || fit < n;
	if (more)
		brq_list_cursor(jobs[fit - 1].id, next);
	brq_buf *b = &w->out;
	brq_reply_begin(b, w->req.rid, 2);
	brq_pack_key(b, "jobs");
	brq_pack_array(b, fit);
	for (uint32_t i = 0; i < fit; i++)
		brq_pack_job_info(b, &jobs[i]);
	brq_pack_key(b, "next");
	if (more)
		brq_pack_cstr(b, next);
	else
		brq_pack_nil(b);
	return BRQ_ST_OK;
}

static brq_status
op_retry(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	const brq_retry_req *q = &w->req.retry;
	brq_store_retried    out;
	int                  rv = brq_store_retry(c, q, &out);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "retry");
	if (q->id > 0 && out.n_ids == 0)
		return brq_ops_fail(r, BRQ_ST_CONFLICT,
				    "retry: job %" PRIu64 " is %s; only dead or canceled jobs can be retried",
				    q->id, brq_state_name(out.state));
	if (out.retried > 0) {
		// New pending jobs, ready now: wake the claims that wait for their topic.
		brq_metrics_topic_add(out.topic.ptr, out.topic.len, BRQ_MT_RETRIED, out.retried);
		brq_waiters_wake(o->waiters, out.topic.ptr, out.topic.len, out.retried);
		BRQ_LOG_INFO("jobs_retried", "topic=%.*s retried=%" PRIu32 " first=%" PRIu64,
			     (int) out.topic.len, out.topic.ptr, out.retried, out.ids[0]);
	}
	brq_reply rep = {.op    = BRQ_OP_RETRY,
			 .rid   = w->req.rid,
			 .code  = BRQ_ST_OK,
			 .retry = {.retried = out.retried, .ids = out.ids, .n_ids = out.n_ids}};
	if (brq_reply_encode(&w->out, &rep) != 0)
		return brq_ops_fail(r, BRQ_ST_INTERNAL, "retry: out of memory encoding the reply");
	return BRQ_ST_OK;
}

static brq_status
op_delete(brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	uint64_t  id = w->req.del.id;
	bool      deleted;
	brq_state state = BRQ_STATE_PENDING;
	brq_str   topic;
	int       rv = brq_store_delete(c, id, &deleted, &state, &topic);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "delete");
	if (!deleted)
		return brq_ops_fail(r, BRQ_ST_CONFLICT,
				    "delete: job %" PRIu64
				    " is %s; only done, dead or canceled jobs can be deleted",
				    id, brq_state_name(state));
	brq_metrics_topic_add(topic.ptr, topic.len, BRQ_MT_DELETED, 1);
	BRQ_LOG_INFO("job_deleted", "id=%" PRIu64 " topic=%.*s", id, (int) topic.len, topic.ptr);
	brq_reply rep = {.op   = BRQ_OP_DELETE,
			 .rid  = w->req.rid,
			 .code = BRQ_ST_OK,
			 .del  = {.id = id, .deleted = true}};
	if (brq_reply_encode(&w->out, &rep) != 0)
		return brq_ops_fail(r, BRQ_ST_INTERNAL, "delete: out of memory encoding the reply");
	return BRQ_ST_OK;
}

brq_status
brq_ops_jobs(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	switch (w->req.op) {
	case BRQ_OP_LIST: return op_list(o, c, w, r);
	case BRQ_OP_RETRY: return op_retry(o, c, w, r);
	case BRQ_OP_DELETE: return op_delete(c, w, r);
	default: return brq_ops_fail(r, BRQ_ST_INTERNAL, "op %s not handled", brq_op_name(w->req.op));
	}
}
