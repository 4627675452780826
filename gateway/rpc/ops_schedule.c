// SPDX-License-Identifier: MIT
// The schedule operations' policy (admin): schedule_add, schedule_list, schedule_remove.
#include "ops_schedule.h"

#include <stdio.h>
#include <string.h>

#include "log/log.h"
#include "schedule_check.h"

// A store failure as the reply's status (as ops.c maps them).
static brq_status
store_status(int rv)
{
	switch (rv) {
	case BRQ_EUNAVAIL:
	case BRQ_ETIMEDOUT:
	case BRQ_ECONFLICT: return BRQ_ST_UNAVAILABLE;
	case BRQ_EINVAL: return BRQ_ST_INVALID_ARGUMENT;
	case BRQ_ENOTFOUND: return BRQ_ST_NOT_FOUND;
	default: return BRQ_ST_INTERNAL;
	}
}

// schedule_add: checked first (nothing is written for bad input), then upserted
// with its first slot after now; a zone PostgreSQL does not know is refused by the
// statement that computes that slot, before anything is written.
static brq_status
op_add(const brq_ops *o, brq_store_conn *c, brq_work *w, char *msg, size_t msglen)
{
	brq_schedule *s = &w->req.schedule_add;
	char          why[256];
	bool          created;
	if (brq_sched_check(s, (uint32_t) o->cfg->max_payload_bytes, why, sizeof(why)) != 0) {
		snprintf(msg, msglen, "schedule_add.%s", why);
		return BRQ_ST_INVALID_ARGUMENT;
	}
	int64_t next_ms;
	int     rv = brq_sched_upsert(c, s, false, &created, &next_ms);
	if (rv != 0) {
		snprintf(msg, msglen, "schedule_add: %s%s", brq_store_errmsg(c),
			 store_status(rv) == BRQ_ST_UNAVAILABLE ? "; retry later" : "");
		return store_status(rv);
	}
	BRQ_LOG_INFO("schedule_added", "name=%.*s topic=%.*s created=%s", (int) s->name.len, s->name.ptr,
		     (int) s->topic.len, s->topic.ptr, created ? "true" : "false");
	brq_reply rep                 = {.op = BRQ_OP_SCHEDULE_ADD, .rid = w->req.rid, .code = BRQ_ST_OK};
	rep.schedule_add.created      = created;
	rep.schedule_add.next_slot_ms = next_ms;
	return brq_reply_encode(&w->out, &rep) == 0 ? BRQ_ST_OK : BRQ_ST_INTERNAL;
}

brq_status
brq_ops_schedule(const brq_ops *o, brq_store_conn *c, brq_work *w, char *msg, size_t msglen)
{
	brq_reply rep = {.op = w->req.op, .rid = w->req.rid, .code = BRQ_ST_OK};
	int       rv  = 0;
	switch (w->req.op) {
	case BRQ_OP_SCHEDULE_ADD: return op_add(o, c, w, msg, msglen);
	case BRQ_OP_SCHEDULE_LIST:
		rv = brq_store_sched_list(c, &rep.schedule_list.schedules, &rep.schedule_list.n_schedules);
		break;
	case BRQ_OP_SCHEDULE_REMOVE:
		rv = brq_store_sched_remove(c, w->req.schedule_remove.name);
		if (rv == 0)
			BRQ_LOG_INFO("schedule_removed", "name=%.*s", (int) w->req.schedule_remove.name.len,
				     w->req.schedule_remove.name.ptr);
		break;
	default: snprintf(msg, msglen, "op %s not handled", brq_op_name(w->req.op)); return BRQ_ST_INTERNAL;
	}
	if (rv != 0) {
		snprintf(msg, msglen, "%s: %s%s", brq_op_name(w->req.op), brq_store_errmsg(c),
			 store_status(rv) == BRQ_ST_UNAVAILABLE ? "; retry later" : "");
		return store_status(rv);
	}
	return brq_reply_encode(&w->out, &rep) == 0 ? BRQ_ST_OK : BRQ_ST_INTERNAL;
}
