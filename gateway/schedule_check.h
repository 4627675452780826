// SPDX-License-Identifier: MIT
// A schedule's fields checked (schedule_add, BROOQ_SCHEDULES) and its slots' idempotency keys: pure, no
// database.
#ifndef BRQ_GATEWAY_SCHEDULE_CHECK_H
#define BRQ_GATEWAY_SCHEDULE_CHECK_H

#include "brq_base.h"

#include <stddef.h>
#include <stdint.h>

#include "cron.h"
#include "proto.h"

// Checks a schedule's fields as schedule_add and the configuration take them
// (name, topic, payload JSON, exactly one of cron and every_ms, the cron expression,
// tz's syntax, catch_up_max, max_attempts) and fills the defaults (tz "UTC",
// catch_up_max). Returns 0, or BRQ_EINVAL with "field: reason" in err.
BRQ_MUSTCHECK int brq_sched_check(brq_schedule *s, uint32_t max_payload, char *err, size_t errlen);

// Parses s->cron into *c. Returns 0, or BRQ_EINVAL with "cron: reason" in err.
BRQ_MUSTCHECK int brq_sched_parse_cron(const brq_schedule *s, brq_cron *c, char *err, size_t errlen);

// The idempotency key of slot slot_ms of schedule name into buf (>= BRQ_KEY_MAX + 1):
// "schedule:<name>@<slot as UTC ISO 8601 with milliseconds>".
void brq_sched_key(char *buf, size_t size, brq_str name, int64_t slot_ms);

#endif
