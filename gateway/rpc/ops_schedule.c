// SPDX-License-Identifier: MIT
// The schedule operations' policy (admin): schedule_add, schedule_list, schedule_remove.
#include "ops_schedule.h"

#include "log/log.h"
#include "schedule_check.h"

// The ok reply rep into w->out. A reply that cannot be encoded is `internal` with no
// message (it has never had one: the status says all the caller can act on).
static brq_status
encode_reply(brq_work *w, const brq_reply *rep, brq_op_res *r)
{
	if (brq_reply_encode(&w->out, rep) == 0)
		return BRQ_ST_OK;
	return r->code = BRQ_ST_INTERNAL;
}

// schedule_add: checked first (nothing is written for bad input), then upserted
// with its first slot after now; a zone PostgreSQL does not know is refused by the
// statement that computes that slot, before anything is written.
static brq_status
op_add(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	brq_schedule *s = &w->req.schedule_add;
	char          why[256];
	bool          created;
	if (brq_sched_check(s, (uint32_t) o->cfg->max_payload_bytes, why, sizeof(why)) != 0)
		return brq_ops_fail(r, BRQ_ST_INVALID_ARGUMENT, "schedule_add.%s", why);
	int64_t next_ms;
	int     rv = brq_sched_upsert(c, s, false, &created, &next_ms);
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, "schedule_add");
	BRQ_LOG_INFO("schedule_added", "name=%.*s topic=%.*s created=%s", (int) s->name.len, s->name.ptr,
		     (int) s->topic.len, s->topic.ptr, created ? "true" : "false");
	brq_reply rep                 = {.op = BRQ_OP_SCHEDULE_ADD, .rid = w->req.rid, .code = BRQ_ST_OK};
	rep.schedule_add.created      = created;
	rep.schedule_add.next_slot_ms = next_ms;
	return encode_reply(w, &rep, r);
}

brq_status
brq_ops_schedule(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r)
{
	brq_reply rep = {.op = w->req.op, .rid = w->req.rid, .code = BRQ_ST_OK};
	int       rv  = 0;
	switch (w->req.op) {
	case BRQ_OP_SCHEDULE_ADD: return op_add(o, c, w, r);
	case BRQ_OP_SCHEDULE_LIST:
		rv = brq_store_sched_list(c, &rep.schedule_list.schedules, &rep.schedule_list.n_schedules);
		break;
	case BRQ_OP_SCHEDULE_REMOVE:
		rv = brq_store_sched_remove(c, w->req.schedule_remove.name);
		if (rv == 0)
			BRQ_LOG_INFO("schedule_removed", "name=%.*s", (int) w->req.schedule_remove.name.len,
				     w->req.schedule_remove.name.ptr);
		break;
	default: return brq_ops_fail(r, BRQ_ST_INTERNAL, "op %s not handled", brq_op_name(w->req.op));
	}
	if (rv != 0)
		return brq_ops_store_fail(r, c, rv, brq_op_name(w->req.op));
	return encode_reply(w, &rep, r);
}
