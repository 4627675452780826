// SPDX-License-Identifier: MIT
// Cron expressions: parsing the standard 5 fields and finding the next matching minute.
//
// Pure calendar arithmetic on wall-clock time: times here are "local seconds", the
// seconds since 1970-01-01 00:00 of a wall clock read as if it were UTC. Which zone
// that wall clock belongs to, and how a local time maps to an instant (DST), is the
// caller's business (the scheduler asks PostgreSQL, store_schedule.c): this module never
// touches TZ, tzset or the C library's time zone state, so any thread may use it.
//
// Syntax (Vixie cron): "minute hour day-of-month month day-of-week", each field a
// comma-separated list of `*`, `N`, `A-B`, each optionally followed by `/STEP`
// (`N/STEP` means N-max/STEP); months `jan`..`dec` and weekdays `sun`..`sat` by name
// (any case); weekday 0 and 7 are Sunday. Also @yearly, @annually, @monthly, @weekly,
// @daily, @midnight, @hourly. The day rule is Vixie's: when both day-of-month and
// day-of-week are restricted (neither field starts with `*`), a day matches if either
// matches; otherwise both must (so `*/2` in one of them counts as unrestricted).
#ifndef BRQ_GATEWAY_CRON_H
#define BRQ_GATEWAY_CRON_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct brq_cron {
	uint64_t minute;             // bit m set: minute m (0..59) matches
	uint32_t hour;               // bits 0..23
	uint32_t dom;                // bits 1..31
	uint16_t month;              // bits 1..12
	uint8_t  dow;                // bits 0..6, Sunday 0
	bool     dom_star, dow_star; // the field starts with '*' (Vixie's day rule)
} brq_cron;

// Longest expression accepted, in bytes.
#define BRQ_CRON_MAX 256

// Parses expr (NUL-terminated) into *c. Returns 0, or BRQ_EINVAL with a one-line reason
// naming the field in err ("hour: 24 is out of range 0-23"). An expression that can
// never match ("0 0 30 2 *") is refused too.
BRQ_MUSTCHECK int brq_cron_parse(brq_cron *c, const char *expr, char *err, size_t errlen);

// The first matching minute strictly after local second `after` (any value; seconds
// are ignored). Returns 0 and *next, or BRQ_ENOTFOUND when nothing matches within
// nine years (only for expressions brq_cron_parse would refuse).
BRQ_MUSTCHECK int brq_cron_next(const brq_cron *c, int64_t after, int64_t *next);

// True when local second t (a whole minute) matches.
bool brq_cron_matches(const brq_cron *c, int64_t t);

// Civil date of local second t (proleptic Gregorian), and back. Exposed for tests.
void    brq_cron_civil(int64_t t, int *y, int *mo, int *d, int *h, int *mi, int *wd);
int64_t brq_cron_local(int y, int mo, int d, int h, int mi);

#endif
