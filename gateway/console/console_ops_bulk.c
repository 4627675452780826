// SPDX-License-Identifier: MIT
// The web console's bulk actions (issue 28.5): retry, cancel or delete the jobs an operator
// selected, or every job matching the list's filter, a bounded batch per call; and the count
// of the jobs a filter matches, shown before the operator confirms.
//
// Each job goes through the RPC's own single-job operation (retry, cancel, delete by id:
// brq_console_rpc), as the console's one-job actions do: the same statements, wakes of
// parked claims, metrics and log lines, and nothing the RPC could not do. One statement
// per job rather than one per batch: each takes its row's lock for one short statement,
// so a batch never holds hundreds of rows against the claims and settles of the hot path,
// and a job whose state does not allow the action is simply counted as skipped. A call is
// bounded work (SPEC invariant 19): at most BULK_IDS_MAX ids or one page of the list, and
// it stops early after BULK_TIME_MS, saying where to continue. The page loops over the
// calls, showing progress, and may stop between any two.
#include "console_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "brq_clock.h"
#include "log/log.h"

// Ids one call takes in `ids` at most.
#define BULK_IDS_MAX 500
// Jobs of the filter one call takes when `limit` does not say (the list's page, 1..200).
#define BULK_BATCH_DEFAULT 100
// A call stops taking jobs after this long (well within BRQ_CONSOLE_DEADLINE_MS) and says
// where to continue: a loaded database makes batches shorter, not calls longer.
#define BULK_TIME_MS 3000
// jobs_count counts at most this many jobs, and reads at most COUNT_PAGES_MAX list pages.
#define COUNT_MAX       10000
#define COUNT_PAGES_MAX 40

typedef enum bulk_action { BULK_RETRY, BULK_CANCEL, BULK_DELETE, BULK__N } bulk_action;

static const char *const action_names[BULK__N] = {"retry", "cancel", "delete"};

// The ids of one call: parsed from `ids`, or one page of the list.
typedef struct bulk_batch {
	uint64_t *ids;
	uint32_t  n;
	bool      is_filter;
	bool      has_next;                 // is_filter: the list goes on after this page
	char      next[BRQ_CURSOR_MAX + 1]; // is_filter && has_next: its cursor
	brq_str   topic;                    // is_filter: the filter's, for the log
	int       state;                    // is_filter: the filter's, -1 none
} bulk_batch;

// Runs action a on job id through the RPC's single-job operation. 1: done; 0: skipped
// (the job's state does not allow it, it is gone, or was retried before); otherwise the
// refusal's status, negated, with call->err set.
static int
bulk_one(brq_console_call *call, bulk_action a, uint64_t id)
{
	brq_request req = {0};
	brq_reply   rep;
	switch (a) {
	case BULK_RETRY:
		req.op          = BRQ_OP_RETRY;
		req.retry.id    = id;
		req.retry.state = BRQ_STATE_DEAD; // unused with an id, valid for the encoder
		req.retry.limit = BRQ_RETRY_DEFAULT;
		break;
	case BULK_CANCEL:
		req.op        = BRQ_OP_CANCEL;
		req.cancel.id = id;
		break;
	default:
		req.op     = BRQ_OP_DELETE;
		req.del.id = id;
		break;
	}
	int status = brq_console_rpc(call, &req, &rep);
	if (status == 404 || status == 409) {
		call->code = NULL;
		return 0;
	}
	if (status != 200)
		return -status;
	switch (a) {
	case BULK_RETRY: return rep.retry.retried > 0;
	case BULK_CANCEL: return rep.cancel.canceled;
	default: return rep.del.deleted;
	}
}

// `ids`: 1..BULK_IDS_MAX job ids separated by commas, into b (the call's arena). 0 or 400.
static int
parse_ids(brq_console_call *call, const brq_str *v, bulk_batch *b)
{
	b->ids = brq_arena_alloc(&call->w->arena, BULK_IDS_MAX, sizeof(*b->ids));
	if (b->ids == NULL)
		return brq_console_fail(call, 500, "bulk: out of memory");
	const char *p = v->ptr, *end = v->ptr + v->len;
	while (p < end) {
		uint64_t id     = 0;
		bool     digits = false;
		for (; p < end && *p >= '0' && *p <= '9'; p++, digits = true) {
			if (id > (BRQ_ID_MAX - (uint64_t) (*p - '0')) / 10)
				return brq_console_fail(call, 400, "ids: a job id is at most %" PRIu64,
							BRQ_ID_MAX);
			id = id * 10 + (uint64_t) (*p - '0');
		}
		if (!digits || id == 0 || (p < end && *p != ','))
			return brq_console_fail(call, 400, "ids: must be job ids separated by commas");
		if (b->n == BULK_IDS_MAX)
			return brq_console_fail(call, 400, "ids: at most %d at a time", BULK_IDS_MAX);
		b->ids[b->n++] = id;
		p += p < end; // the comma
	}
	return b->n > 0 ? 0 : brq_console_fail(call, 400, "ids: required (or the list's filter with all=1)");
}

// One page of the jobs the list's filter (and `cursor`) matches into b. 0 or a status.
static int
list_page(brq_console_call *call, bulk_batch *b)
{
	brq_request req = {.op = BRQ_OP_LIST};
	brq_reply   rep;
	int         status = brq_console_jobs_params(call, &req.list);
	if (status != 0)
		return status;
	if (brq_form_get(call->in, "limit") == NULL)
		req.list.limit = BULK_BATCH_DEFAULT;
	b->is_filter = true;
	b->topic     = req.list.topic;
	b->state     = req.list.has_state ? (int) req.list.state : -1;
	if ((status = brq_console_rpc(call, &req, &rep)) != 200)
		return status;
	// Copied out: the reply borrows the work item's buffer, which each action reuses.
	b->ids = brq_arena_alloc(&call->w->arena, rep.list.n_jobs > 0 ? rep.list.n_jobs : 1, sizeof(*b->ids));
	if (b->ids == NULL)
		return brq_console_fail(call, 500, "bulk: out of memory");
	for (uint32_t i = 0; i < rep.list.n_jobs; i++)
		b->ids[i] = rep.list.jobs[i].id;
	b->n        = rep.list.n_jobs;
	b->has_next = rep.list.has_next;
	if (b->has_next)
		snprintf(b->next, sizeof(b->next), "%.*s", (int) rep.list.next.len, rep.list.next.ptr);
	return 0;
}

// The action's name from `action` into *a. 0 or 400.
static int
param_action(brq_console_call *call, bulk_action *a)
{
	const brq_str *v = brq_form_get(call->in, "action");
	for (int k = 0; v != NULL && k < BULK__N; k++) {
		if (v->len == strlen(action_names[k]) && memcmp(v->ptr, action_names[k], v->len) == 0) {
			*a = (bulk_action) k;
			return 0;
		}
	}
	return brq_console_fail(call, 400, "action: required: retry, cancel or delete");
}

// POST /console/api/bulk: action (retry, cancel, delete) and either ids (1..500 job ids,
// comma-separated) or all=1 with the list's filter (topic, state, created_after_ms,
// created_before_ms, key), cursor (the previous call's next) and limit (1..200, 100).
// 200: {"action", "processed", "done", "skipped", "next"}: of the batch's jobs, processed
// were handled (in the order given, or the list's), done were changed by the action and
// skipped were not (a state the action does not apply to, gone, retried before); next is
// the cursor to continue the filter with (null: the filter is done; always null with
// ids, whose caller sends the ids after the first `processed` again).
int
brq_console_op_bulk(brq_console_call *call)
{
	bulk_action    a      = BULK_RETRY;
	bulk_batch     b      = {.state = -1};
	const brq_str *ids    = brq_form_get(call->in, "ids");
	const brq_str *all    = brq_form_get(call->in, "all");
	bool           is_all = all != NULL && all->len == 1 && all->ptr[0] == '1';
	int            status = param_action(call, &a);
	if (status != 0)
		return status;
	if ((ids != NULL) == is_all)
		return brq_console_fail(
			call, 400,
			"ids or all=1: one of them (the selected jobs, or all the filter matches)");
	status = is_all ? list_page(call, &b) : parse_ids(call, ids, &b);
	if (status != 0)
		return status;

	uint64_t t0 = brq_now_ms();
	uint32_t i = 0, done = 0, skipped = 0;
	for (; i < b.n && (i == 0 || brq_now_ms() - t0 < BULK_TIME_MS); i++) {
		int rv = bulk_one(call, a, b.ids[i]);
		if (rv < 0) {
			// What this call did is logged; the page shows the refusal and stops.
			status = -rv;
			break;
		}
		if (rv == 1) {
			done++;
			BRQ_LOG_INFO("console_action", "action=%s id=%" PRIu64 " bulk=true %s",
				     action_names[a], b.ids[i], call->actor);
		} else {
			skipped++;
		}
	}
	// Where the filter goes on: after the last job handled when the call stopped early,
	// else after the page.
	char next[BRQ_CURSOR_MAX + 1] = "";
	if (b.is_filter && i < b.n && i > 0)
		brq_list_cursor(b.ids[i - 1], next);
	else if (b.is_filter && i == b.n && b.has_next)
		snprintf(next, sizeof(next), "%s", b.next);
	BRQ_LOG_INFO("console_bulk",
		     "action=%s mode=%s topic=%.*s state=%s batch=%" PRIu32 " processed=%" PRIu32
		     " done=%" PRIu32 " skipped=%" PRIu32 " next=%s status=%d %s",
		     action_names[a], b.is_filter ? "filter" : "ids", (int) b.topic.len, b.topic.ptr,
		     b.state >= 0 ? brq_state_name((brq_state) b.state) : "", b.n, i, done, skipped,
		     next[0] != '\0' ? next : "", status != 0 ? status : 200, call->actor);
	if (status != 0) {
		char why[BRQ_CONSOLE_ERR_MAX];
		snprintf(why, sizeof(why), "%s", call->err);
		return brq_console_fail(call, status,
					"%s: stopped after %" PRIu32 " of %" PRIu32 " (%" PRIu32 " done): %s",
					action_names[a], i, b.n, done, why);
	}
	brq_jw_kv_cstr(call->out, "action", action_names[a]);
	brq_jw_kv_u64(call->out, "processed", i);
	brq_jw_kv_u64(call->out, "done", done);
	brq_jw_kv_u64(call->out, "skipped", skipped);
	brq_jw_key(call->out, "next");
	if (next[0] != '\0')
		brq_jw_str(call->out, next, strlen(next));
	else
		brq_jw_null(call->out);
	return 200;
}

// GET /console/api/jobs_count: the list's filter (as GET jobs, without cursor and limit).
// 200: {"count": n, "more": bool}: n jobs match, exactly when more is false; with more,
// at least n (the count stops at COUNT_MAX, or after COUNT_PAGES_MAX pages when payloads
// make the list's pages short). Counted by reading the list's pages, ids only kept: the
// same statements, plans and limits as the list.
int
brq_console_op_jobs_count(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_LIST};
	brq_reply   rep;
	char        cursor[BRQ_CURSOR_MAX + 1];
	uint64_t    n      = 0;
	bool        more   = true;
	int         status = brq_console_jobs_params(call, &req.list);
	if (status != 0)
		return status;
	req.list.cursor = (brq_str) {0};
	for (int page = 0; page < COUNT_PAGES_MAX && more && n < COUNT_MAX; page++) {
		req.list.limit = BRQ_LIST_MAX;
		if ((status = brq_console_rpc(call, &req, &rep)) != 200)
			return status;
		n += rep.list.n_jobs;
		more = rep.list.has_next;
		if (more) {
			snprintf(cursor, sizeof(cursor), "%.*s", (int) rep.list.next.len, rep.list.next.ptr);
			req.list.cursor = (brq_str) {.ptr = cursor, .len = (uint32_t) strlen(cursor)};
		}
	}
	brq_jw_kv_u64(call->out, "count", n);
	brq_jw_kv_bool(call->out, "more", more);
	return 200;
}
