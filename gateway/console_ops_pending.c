// SPDX-License-Identifier: MIT
// The web console's operations that wait for issue 15's queue operations (topic settings,
// pause, resume): parameters checked now, 501 until wired. (schedules, also here, is wired:
// a read of the schedule table.)
//
// To wire one when issue 15 lands: keep its parameter checks, replace the
// brq_console_not_yet() line with the store call on call->c (or brq_ops_run with the
// new op, as console_ops.c does for the existing ones) and write the JSON that
// docs/console.md gives for it into call->out; an action also logs
//   BRQ_LOG_INFO("console_action", "action=<name> ... %s", ..., call->actor);
// The page (console/app.js) and the browser tests (tests/console/pending.test.mjs)
// expect exactly that JSON.
#include "console_ops.h"

#include <stdio.h>
#include <string.h>

// GET /console/api/topics. 200: {"topics":[{"topic", "paused", "concurrency", "rate"}]}
// (concurrency and rate null when unlimited).
int
brq_console_op_topics(brq_console_call *call)
{
	return brq_console_not_yet(call, "pause state and limits");
}

// POST /console/api/pause and /resume: topic. 200: {"topic": t, "paused": true|false}.
int
brq_console_op_pause(brq_console_call *call)
{
	brq_str topic;
	int     status = brq_console_param_topic(call, "topic", true, &topic);
	return status != 0 ? status : brq_console_not_yet(call, "pause");
}

int
brq_console_op_resume(brq_console_call *call)
{
	brq_str topic;
	int     status = brq_console_param_topic(call, "topic", true, &topic);
	return status != 0 ? status : brq_console_not_yet(call, "resume");
}

// GET /console/api/schedules. 200: {"schedules":[{"name", "topic", "spec", "time_zone",
// "missed", "next_at_ms", "last_at_ms", "catch_up_max", "enabled", "source"}]}: spec is the
// cron expression or "every N ms", time_zone null for an interval, missed the misfire
// policy ("skip" or "catch_up"), next_at_ms null when disabled, last_at_ms null before
// the first slot. A read of the schedule table (the store's, as schedule_list).
int
brq_console_op_schedules(brq_console_call *call)
{
	brq_schedule *s;
	uint32_t      n;
	int           rv = brq_store_sched_list(call->c, &s, &n);
	if (rv != 0)
		return brq_console_fail(call, rv == BRQ_EUNAVAIL || rv == BRQ_ETIMEDOUT ? 503 : 500,
					"schedules: %s", brq_store_errmsg(call->c));
	brq_jw *o = call->out;
	brq_jw_obj(o);
	brq_jw_key(o, "schedules");
	brq_jw_arr(o);
	for (uint32_t i = 0; i < n; i++) {
		char every[48];
		brq_jw_obj(o);
		brq_jw_key(o, "name");
		brq_jw_str(o, s[i].name.ptr, s[i].name.len);
		brq_jw_key(o, "topic");
		brq_jw_str(o, s[i].topic.ptr, s[i].topic.len);
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
		brq_jw_key(o, "missed");
		brq_jw_cstr(o, s[i].catch_up ? "catch_up" : "skip");
		brq_jw_key(o, "catch_up_max");
		brq_jw_u64(o, s[i].catch_up_max);
		brq_jw_key(o, "enabled");
		brq_jw_bool(o, s[i].enabled);
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
		brq_jw_key(o, "source");
		brq_jw_str(o, s[i].source.ptr, s[i].source.len);
		brq_jw_end(o);
	}
	brq_jw_end(o);
	brq_jw_end(o);
	return 200;
}
