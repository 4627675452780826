// SPDX-License-Identifier: MIT
// The web console's operations that wait for issue 15's queue operations (topic settings,
// pause, resume, schedules): parameters checked now, 501 until wired.
//
// To wire one when issue 15 lands: keep its parameter checks, replace the
// brq_console_not_yet() line with the store call on call->c (or brq_ops_run with the
// new op, as console_ops.c does for the existing ones) and write the JSON that
// docs/console.md gives for it into call->out; an action also logs
//   BRQ_LOG_INFO("console_action", "action=<name> ... %s", ..., call->actor);
// The page (console/app.js) and the browser tests (tests/console/pending.test.mjs)
// expect exactly that JSON.
#include "console_ops.h"

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
// "missed", "next_at_ms", "last_at_ms"}]}.
int
brq_console_op_schedules(brq_console_call *call)
{
	return brq_console_not_yet(call, "schedules");
}
