// SPDX-License-Identifier: MIT
// A schedule's fields checked (schedule_add, BROOQ_SCHEDULES) and its slots' idempotency keys: pure, no
// database.
#include "schedule_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

// True when tz looks like an IANA zone name ("Europe/Berlin", "Etc/GMT+5", "UTC").
static bool
tz_syntax_ok(brq_str tz)
{
	if (tz.len == 0 || tz.len > BRQ_SCHEDULE_TZ_MAX || tz.ptr[0] == '/')
		return false;
	for (uint32_t i = 0; i < tz.len; i++) {
		char ch = tz.ptr[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			ch == '/' || ch == '_' || ch == '-' || ch == '+';
		if (!ok || (ch == '/' && i + 1 < tz.len && tz.ptr[i + 1] == '/'))
			return false;
	}
	return true;
}

int
brq_sched_parse_cron(const brq_schedule *s, brq_cron *c, char *err, size_t errlen)
{
	char expr[BRQ_SCHEDULE_CRON_MAX + 1], why[160];
	if (s->cron.len > BRQ_SCHEDULE_CRON_MAX) {
		snprintf(err, errlen, "cron: longer than %d bytes", BRQ_SCHEDULE_CRON_MAX);
		return BRQ_EINVAL;
	}
	memcpy(expr, s->cron.ptr, s->cron.len);
	expr[s->cron.len] = '\0';
	if (memchr(s->cron.ptr, '\0', s->cron.len) != NULL ||
	    brq_cron_parse(c, expr, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "cron: %s",
			 memchr(s->cron.ptr, '\0', s->cron.len) ? "contains NUL" : why);
		return BRQ_EINVAL;
	}
	return 0;
}

#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), BRQ_EINVAL)

int
brq_sched_check(brq_schedule *s, uint32_t max_payload, char *err, size_t errlen)
{
	if (!brq_topic_valid(s->name.ptr, s->name.len))
		return BAD("name: must match [a-z0-9][a-z0-9._-]* and be at most %d bytes", BRQ_TOPIC_MAX);
	if (!brq_topic_valid(s->topic.ptr, s->topic.len))
		return BAD("topic: must match [a-z0-9][a-z0-9._-]* and be at most %d bytes", BRQ_TOPIC_MAX);
	if (s->payload.len > max_payload)
		return BAD("payload: larger than %" PRIu32 " bytes", max_payload);
	brq_json_err je;
	char         why[160];
	if (s->payload.len > 0 &&
	    !brq_json_valid(s->payload.ptr, s->payload.len, 256, BRQ_JSON_FOR_JSONB, &je)) {
		brq_json_err_text(&je, why, sizeof why);
		return BAD("payload: %s", why);
	}
	if ((s->cron.len > 0) == (s->every_ms > 0))
		return BAD("cron: give exactly one of cron and every_ms");
	if (s->every_ms > 0 && (s->every_ms < BRQ_EVERY_MS_MIN || s->every_ms > BRQ_EVERY_MS_MAX))
		return BAD("every_ms: must be between %" PRIu64 " and %" PRIu64, BRQ_EVERY_MS_MIN,
			   BRQ_EVERY_MS_MAX);
	if (s->every_ms > 0 && s->tz.len > 0)
		return BAD("tz: only with cron (interval slots count from the Unix epoch)");
	brq_cron c;
	if (s->cron.len > 0 && brq_sched_parse_cron(s, &c, err, errlen) != 0)
		return BRQ_EINVAL;
	if (s->tz.len > 0 && !tz_syntax_ok(s->tz))
		return BAD("tz: not a time zone name (e.g. Europe/Berlin, UTC)");
	if (s->tz.len == 0)
		s->tz = brq_str_c("UTC");
	if (s->catch_up_max > BRQ_CATCH_UP_MAX)
		return BAD("catch_up_max: must be between 1 and %d", BRQ_CATCH_UP_MAX);
	if (!s->catch_up && s->catch_up_max > 1)
		return BAD("catch_up_max: only with misfire catch_up");
	if (s->catch_up_max == 0)
		s->catch_up_max = s->catch_up ? 10 : 1;
	if (s->max_attempts > BRQ_ATTEMPTS_MAX)
		return BAD("max_attempts: must be between 1 and %d", BRQ_ATTEMPTS_MAX);
	return 0;
}

#undef BAD

void
brq_sched_key(char *buf, size_t size, brq_str name, int64_t slot_ms)
{
	int64_t sec = slot_ms >= 0 ? slot_ms / 1000 : (slot_ms - 999) / 1000;
	int     ms  = (int) (slot_ms - sec * 1000);
	int     y, mo, d, h, mi, wd;
	brq_cron_civil(sec, &y, &mo, &d, &h, &mi, &wd);
	snprintf(buf, size, "schedule:%.*s@%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (int) name.len, name.ptr, y,
		 mo, d, h, mi, (int) (((sec % 60) + 60) % 60), ms);
}
