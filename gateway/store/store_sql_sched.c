// SPDX-License-Identifier: MIT
// The statement texts of the schedules (store_schedule.c): due slots, their zones and
// the admin's schedule table, for brq_store_sql_build (store_sql.c).
#include "store_sql_sched.h"

#include "store_sql.h"

static const char *const sched_cols[] = {SCHED_COLS(BRQ_COL_EXPR)};
static const char *const tz_cols[]    = {TZ_COLS(BRQ_COL_EXPR)};
static const char *const znow_cols[]  = {ZNOW_COLS(BRQ_COL_EXPR)};

// Indexed by brq_stmt: only the BRQ_STMT_SCHED_* entries are set.
static const brq_sql_text texts[BRQ_STMT__COUNT] = {
	// Schedules (store_schedule.c, migration 00008). Slots travel as unix ms (int8) and
	// local wall-clock times as "local seconds" (cron.h); only these statements turn
	// one into the other, with PostgreSQL's time zone rules (the system's tzdata), so
	// the gateway never touches TZ or tzset.
	// The earliest due schedule no other gateway holds. The row lock is held until
	// the slots are enqueued and next_slot advanced in the same transaction: two
	// gateways never enqueue the same slot, and a crash in between rolls both back
	// (invariant 16).
	[BRQ_STMT_SCHED_DUE] = {"SELECT ", BRQ_COLS(sched_cols),
				" FROM schedule s WHERE s.enabled AND s.next_slot <= now()"
				" ORDER BY s.next_slot LIMIT 1 FOR UPDATE SKIP LOCKED"},
	// $1 local seconds (int8[]), $2 zone. `l AT TIME ZONE zone` reads a wall clock
	// in the zone; reading the instant back tells whether that wall clock exists (a
	// DST gap gives another one).
	[BRQ_STMT_SCHED_TZ]       = {"SELECT ", BRQ_COLS(tz_cols),
				     " FROM (SELECT i.o, i.l, i.l AT TIME ZONE $2 AS u FROM (SELECT a.o,"
					   " to_timestamp(a.x::float8) AT TIME ZONE 'UTC' AS l"
					   " FROM unnest($1::int8[]) WITH ORDINALITY AS a(x, o)) i) t ORDER BY t.o"},
	[BRQ_STMT_SCHED_ZONE_NOW] = {"SELECT ", BRQ_COLS(znow_cols)},
	// $1 name, $2 next slot (ms; NULL: none ever again, disabled), $3 last slot
	// enqueued (ms; NULL: unchanged).
	[BRQ_STMT_SCHED_ADVANCE] = {"UPDATE schedule SET next_slot = to_timestamp($2::int8 / 1000.0),"
				    " enabled = $2::int8 IS NOT NULL AND enabled,"
				    " last_slot = coalesce(to_timestamp($3::int8 / 1000.0), last_slot),"
				    " updated_at = now() WHERE name = $1"},
	// $1 name, $2 topic, $3 payload, $4 cron, $5 tz, $6 every_ms, $7 misfire, $8
	// catch_up_max, $9 max_attempts, $10 next slot (ms), $11 source. A replacement
	// that keeps the timing (cron, tz, every_ms) keeps the slot it owes: the
	// gateways' start-up upsert of configured schedules must not forget slots missed
	// while they were down.
	[BRQ_STMT_SCHED_UPSERT] =
		{"INSERT INTO schedule AS s (name, topic, payload, cron, tz, every_ms, misfire,"
		 " catch_up_max, max_attempts, next_slot, source) VALUES ($1, $2, $3::jsonb, $4,"
		 " $5, $6::int8, $7, $8::int4, $9::int4, to_timestamp($10::int8 / 1000.0), $11)"
		 " ON CONFLICT (name) DO UPDATE SET topic = EXCLUDED.topic,"
		 " payload = EXCLUDED.payload, cron = EXCLUDED.cron, tz = EXCLUDED.tz,"
		 " every_ms = EXCLUDED.every_ms, misfire = EXCLUDED.misfire,"
		 " catch_up_max = EXCLUDED.catch_up_max, max_attempts = EXCLUDED.max_attempts,"
		 " next_slot = CASE WHEN s.enabled AND s.cron IS NOT DISTINCT FROM EXCLUDED.cron"
		 "  AND s.tz = EXCLUDED.tz AND s.every_ms IS NOT DISTINCT FROM EXCLUDED.every_ms"
		 "  THEN s.next_slot ELSE EXCLUDED.next_slot END,"
		 " enabled = true, source = EXCLUDED.source, updated_at = now()"
		 " RETURNING (s.xmax = 0), (extract(epoch FROM s.next_slot) * 1000)::int8"},
	[BRQ_STMT_SCHED_LIST]   = {"SELECT ", BRQ_COLS(sched_cols), " FROM schedule s ORDER BY s.name"},
	[BRQ_STMT_SCHED_REMOVE] = {"DELETE FROM schedule WHERE name = $1 RETURNING name"},
};

void
brq_store_sql_sched(FILE *f, brq_stmt st)
{
	brq_store_sql_text(f, &texts[st]);
}
