// SPDX-License-Identifier: MIT
// The web console's schedule operations: the schedules (through the RPC's `schedule_list`).
#include "console_ops.h"

// GET /console/api/schedules. 200: {"schedules":[schedule...]}, the RPC's `schedule_list` in
// its JSON form (docs/protocol.md §7.15, §11): every key, null where the reply has none
// (cron and tz of an interval, every_ms of a cron schedule, max_attempts at the topic's
// default, next_slot when disabled, last_slot before the first), the payload as JSON.
int
brq_console_op_schedules(brq_console_call *call)
{
	brq_request req = {.op = BRQ_OP_SCHEDULE_LIST};
	brq_reply   rep;
	int         status = brq_console_rpc(call, &req, &rep);
	if (status != 200)
		return status;
	const brq_schedule *s = rep.schedule_list.schedules;
	uint32_t            n = rep.schedule_list.n_schedules;
	brq_jw             *o = call->out;
	brq_jw_key(o, "schedules");
	brq_jw_arr(o);
	for (uint32_t i = 0; i < n; i++) {
		bool is_cron = s[i].cron.len > 0;
		brq_jw_obj(o);
		brq_jw_kv_str(o, "name", s[i].name.ptr, s[i].name.len);
		brq_jw_kv_str(o, "topic", s[i].topic.ptr, s[i].topic.len);
		brq_console_json_text(o, "payload", s[i].payload);
		brq_jw_key(o, "cron");
		if (is_cron)
			brq_jw_str(o, s[i].cron.ptr, s[i].cron.len);
		else
			brq_jw_null(o);
		brq_jw_key(o, "tz");
		if (is_cron && s[i].tz.len > 0)
			brq_jw_str(o, s[i].tz.ptr, s[i].tz.len);
		else
			brq_jw_null(o);
		brq_jw_kv_opt_u64(o, "every_ms", s[i].every_ms, !is_cron);
		brq_jw_kv_cstr(o, "misfire", s[i].catch_up ? "catch_up" : "skip");
		brq_jw_kv_u64(o, "catch_up_max", s[i].catch_up_max);
		brq_jw_kv_opt_u64(o, "max_attempts", s[i].max_attempts, s[i].max_attempts > 0);
		brq_jw_kv_bool(o, "enabled", s[i].enabled);
		brq_jw_kv_instant(o, "next_slot", s[i].next_slot_ms, s[i].next_slot_ms != 0);
		brq_jw_kv_instant(o, "last_slot", s[i].last_slot_ms, s[i].last_slot_ms != 0);
		brq_jw_kv_str(o, "source", s[i].source.ptr, s[i].source.len);
		brq_jw_end(o);
	}
	brq_jw_end(o);
	return 200;
}
