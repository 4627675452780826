// SPDX-License-Identifier: MIT
// The web console's schedule operations: the schedules (through the RPC's `schedule_list`).
#include "console_ops.h"

#include <stdio.h>

// GET /console/api/schedules. 200: {"schedules":[{"name", "topic", "spec", "time_zone",
// "missed", "next_at_ms", "last_at_ms", "catch_up_max", "enabled", "source"}]}: spec is the
// cron expression or "every N ms", time_zone null for an interval, missed the misfire
// policy ("skip" or "catch_up"), next_at_ms null when disabled, last_at_ms null before
// the first slot. The RPC's `schedule_list`.
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
		char every[48];
		brq_jw_obj(o);
		brq_jw_kv_str(o, "name", s[i].name.ptr, s[i].name.len);
		brq_jw_kv_str(o, "topic", s[i].topic.ptr, s[i].topic.len);
		brq_jw_key(o, "spec");
		snprintf(every, sizeof(every), "every %llu ms", (unsigned long long) s[i].every_ms);
		if (s[i].cron.len > 0)
			brq_jw_str(o, s[i].cron.ptr, s[i].cron.len);
		else
			brq_jw_cstr(o, every);
		brq_jw_key(o, "time_zone");
		if (s[i].cron.len > 0)
			brq_jw_str(o, s[i].tz.ptr, s[i].tz.len);
		else
			brq_jw_null(o);
		brq_jw_kv_cstr(o, "missed", s[i].catch_up ? "catch_up" : "skip");
		brq_jw_kv_u64(o, "catch_up_max", s[i].catch_up_max);
		brq_jw_kv_bool(o, "enabled", s[i].enabled);
		brq_jw_key(o, "next_at_ms");
		if (s[i].enabled && s[i].next_slot_ms != 0)
			brq_jw_i64(o, s[i].next_slot_ms);
		else
			brq_jw_null(o);
		brq_jw_key(o, "last_at_ms");
		if (s[i].last_slot_ms != 0)
			brq_jw_i64(o, s[i].last_slot_ms);
		else
			brq_jw_null(o);
		brq_jw_kv_str(o, "source", s[i].source.ptr, s[i].source.len);
		brq_jw_end(o);
	}
	brq_jw_end(o);
	return 200;
}
