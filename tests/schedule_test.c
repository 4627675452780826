/* SPDX-License-Identifier: MIT */
/* Periodic jobs (gateway/background/scheduler.c, migration 00008): slots across DST, misfire
 * policies, and exactly one job per slot with two gateways on one database. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cron.h"
#include "store/db.h"
#include "gw.h"
#include "metrics/metrics.h"
#include "background/scheduler.h"
#include "store/store.h"
#include "testdb.h"

static char          *dsn;
static PGconn        *db;
static brq_config     cfg;
static brq_store     *store;
static brq_store_conn conn;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	free(cfg.dsn);
	cfg.dsn              = strdup(dsn);
	cfg.schedule_tick_ms = 0; /* no thread: the tests tick */
	cr_assert_eq(brq_store_new(&cfg, &store), 0);
	brq_store_conn_init(&conn, store, &(brq_store_conn_opts) {.name = "test", .role = BRQ_STORE_JANITOR});
	cr_assert(brq_store_ready(&conn), "%s", brq_store_errmsg(&conn));
	cr_assert_eq(brq_metrics_init("test"), 0);
}

static void
teardown(void)
{
	brq_metrics_fini();
	brq_store_conn_fini(&conn);
	brq_store_free(store);
	brq_config_fini(&cfg);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(slots, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(misfire, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(store, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(gateways, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ------------------------------------------------------------------------ */

/* Queries of the test database (tests/support/testdb.h). */
#define sql_int(...) brq_testdb_intf(db, __VA_ARGS__)

/* Unix ms of a timestamptz literal. */
static int64_t
ms_of(const char *ts)
{
	return sql_int("SELECT (extract(epoch FROM '%s'::timestamptz) * 1000)::int8", ts);
}

/* ms on the wall clock of tz, in local seconds. */
static int64_t
local_of(int64_t ms, const char *tz)
{
	return sql_int("SELECT floor(extract(epoch FROM to_timestamp(%" PRId64
		       " / 1000.0) AT TIME ZONE '%s'))::int8",
		       ms, tz);
}

/* "YYYY-MM-DD HH:MM" UTC of ms (static buffer). */
static const char *
utc(int64_t ms)
{
	static char buf[32];
	int         y, mo, d, h, mi, wd;
	brq_cron_civil(ms / 1000, &y, &mo, &d, &h, &mi, &wd);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d", y, mo, d, h, mi);
	return buf;
}

static brq_schedule
cron_schedule(const char *expr, const char *tz)
{
	brq_schedule s = {.name  = brq_str_c("s"),
			  .topic = brq_str_c("t"),
			  .cron  = brq_str_c(expr),
			  .tz    = brq_str_c(tz)};
	char         err[200];
	cr_assert_eq(brq_sched_check(&s, 1 << 20, err, sizeof(err)), 0, "%s", err);
	return s;
}

/* The first slot of s strictly after ms. */
static int64_t
next_after(const brq_schedule *s, int64_t ms)
{
	int64_t  due[1], next;
	uint32_t n_due;
	uint64_t skipped;
	int rv = brq_sched_slots(&conn, s, ms + 1, 0, ms, local_of(ms, s->tz.ptr), 1, due, &n_due, &skipped,
				 &next);
	cr_assert_eq(rv, 0, "%s", brq_store_errmsg(&conn));
	cr_assert_eq(n_due, 0);
	brq_store_reset(&conn);
	return next;
}

/* The slots of s after `from` (exclusive) up to `to` (inclusive) as "HH:MM" UTC times
 * joined by spaces (static buffer). */
static const char *
slots_between(const brq_schedule *s, const char *from, const char *to)
{
	static char out[2048];
	out[0]    = '\0';
	int64_t t = ms_of(from), end = ms_of(to);
	while ((t = next_after(s, t)) <= end)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", out[0] ? " " : "",
			 utc(t) + 11);
	return out;
}

/* ---- slots across DST ------------------------------------------------------------- */

Test(slots, berlin_spring_forward_skips_the_wall_clock_time_that_does_not_exist)
{
	brq_schedule s = cron_schedule("30 2 * * *", "Europe/Berlin");
	/* 2026-03-29 02:00 CET jumps to 03:00 CEST: 02:30 never happens that day. */
	cr_assert_str_eq(utc(next_after(&s, ms_of("2026-03-27 12:00Z"))), "2026-03-28 01:30");
	cr_assert_str_eq(utc(next_after(&s, ms_of("2026-03-28 12:00Z"))), "2026-03-30 00:30");
}

Test(slots, berlin_half_hours_around_spring_forward_follow_real_time)
{
	brq_schedule s = cron_schedule("*/30 * * * *", "Europe/Berlin");
	/* 00:00Z = 01:00 CET ... 01:00Z = 03:00 CEST: every real half hour, once. */
	cr_assert_str_eq(slots_between(&s, "2026-03-28 23:59Z", "2026-03-29 02:00Z"),
			 "00:00 00:30 01:00 01:30 02:00");
}

Test(slots, berlin_fall_back_fires_a_repeated_wall_clock_time_once)
{
	brq_schedule s = cron_schedule("30 2 * * *", "Europe/Berlin");
	/* 2026-10-25 03:00 CEST falls back to 02:00 CET: 02:30 happens twice (00:30Z and
	 * 01:30Z); one slot only. */
	/* PostgreSQL reads a repeated wall-clock time as the later instant (standard
	 * time): docs/operations.md says so. */
	cr_assert_str_eq(slots_between(&s, "2026-10-24 12:00Z", "2026-10-25 12:00Z"), "01:30");
	cr_assert_str_eq(utc(next_after(&s, ms_of("2026-10-25 12:00Z"))), "2026-10-26 01:30");
}

Test(slots, new_york_spring_forward_and_fall_back)
{
	brq_schedule s = cron_schedule("0 2 * * *", "America/New_York");
	/* 2026-03-08 02:00 EST jumps to 03:00 EDT: no 02:00 that day. */
	cr_assert_str_eq(utc(next_after(&s, ms_of("2026-03-07 12:00Z"))), "2026-03-09 06:00");
	brq_schedule h = cron_schedule("0 * * * *", "America/New_York");
	/* 2026-11-01 02:00 EDT falls back to 01:00 EST: 24 wall-clock hours, each once,
	 * over 25 real hours. */
	const char *day = slots_between(&h, "2026-11-01 03:59Z", "2026-11-02 04:59Z");
	int         n   = 0;
	for (const char *p = day; *p; p++)
		n += *p == ':';
	cr_assert_eq(n, 24, "%s", day);
	/* 01:00 once, at 06:00Z (EST): no slot at 05:00Z (01:00 EDT). */
	cr_assert(strstr(day, "04:00 06:00 07:00") != NULL, "%s", day);
}

Test(slots, utc_and_fixed_intervals)
{
	brq_schedule s = cron_schedule("15 9 * * mon", "UTC");
	cr_assert_str_eq(utc(next_after(&s, ms_of("2026-12-01 00:00Z"))), "2026-12-07 09:15");
	brq_schedule e = {.name = brq_str_c("e"), .topic = brq_str_c("t"), .every_ms = 90000};
	char         err[200];
	cr_assert_eq(brq_sched_check(&e, 1 << 20, err, sizeof(err)), 0, "%s", err);
	/* Whole multiples of 90 s since the epoch. */
	cr_assert_eq(next_after(&e, 90000 * 1000 + 5), 90000 * 1001);
	int64_t  due[3], next;
	uint32_t n;
	uint64_t skipped;
	cr_assert_eq(brq_sched_slots(&conn, &e, 90000, 0, 90000 * 10 + 1, 0, 3, due, &n, &skipped, &next), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(skipped, 7, "slots 1..7 left out, 8..10 kept");
	cr_assert(due[0] == 90000 * 8 && due[1] == 90000 * 9 && due[2] == 90000 * 10);
	cr_assert_eq(next, 90000 * 11);
}

Test(slots, check_refuses_bad_fields_naming_them)
{
	static const struct {
		brq_schedule s;
		const char  *why;
	} bad[] = {
		{{.name = {"Bad", 3}, .topic = {"t", 1}, .every_ms = 1000}, "name:"},
		{{.name = {"n", 1}, .topic = {"T!", 2}, .every_ms = 1000}, "topic:"},
		{{.name = {"n", 1}, .topic = {"t", 1}}, "cron: give exactly one"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .every_ms = 1000, .cron = {"* * * * *", 9}},
		 "cron: give exactly one"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .every_ms = 999}, "every_ms:"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .every_ms = 1000, .tz = {"UTC", 3}},
		 "tz: only with cron"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .cron = {"* * * *", 7}}, "cron: expected 5 fields"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .cron = {"* * * * *", 9}, .tz = {"../etc", 6}}, "tz:"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .every_ms = 1000, .payload = {"{", 1}}, "payload:"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .every_ms = 1000, .catch_up_max = 2},
		 "catch_up_max: only"},
		{{.name         = {"n", 1},
		  .topic        = {"t", 1},
		  .every_ms     = 1000,
		  .catch_up     = true,
		  .catch_up_max = 1001},
		 "catch_up_max:"},
		{{.name = {"n", 1}, .topic = {"t", 1}, .every_ms = 1000, .max_attempts = 1001},
		 "max_attempts:"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_schedule s        = bad[i].s;
		char         err[200] = "";
		cr_assert_eq(brq_sched_check(&s, 1 << 20, err, sizeof(err)), BRQ_EINVAL, "case %zu accepted",
			     i);
		cr_assert(strstr(err, bad[i].why) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, err,
			  bad[i].why);
	}
}

Test(slots, misfire_policy_keeps_on_time_slots_and_bounds_missed_ones)
{
	/* Slots every second up to now = 100 s; on time: after now - grace. */
	int64_t      due[20];
	brq_schedule skip = {.every_ms = 1000, .catch_up_max = 1};
	brq_schedule cu   = {.every_ms = 1000, .catch_up = true, .catch_up_max = 3};
	for (int i = 0; i < 20; i++)
		due[i] = (81 + i) * 1000; /* 81 s .. 100 s; 80 older ones dropped */
	uint32_t first, keep;
	uint64_t skipped;
	/* Grace 5 s: 96..100 on time. skip: those only; catch_up 3: plus 93..95. */
	brq_sched_misfire(&skip, 100000, 5000, due, 20, 80, &first, &keep, &skipped);
	cr_assert(first == 15 && keep == 5 && skipped == 95, "%u %u %lu", first, keep,
		  (unsigned long) skipped);
	brq_sched_misfire(&cu, 100000, 5000, due, 20, 80, &first, &keep, &skipped);
	cr_assert(first == 12 && keep == 8 && skipped == 92, "%u %u %lu", first, keep,
		  (unsigned long) skipped);
	/* Nothing on time (all older than the grace): skip keeps the latest missed. */
	brq_sched_misfire(&skip, 200000, 5000, due, 20, 80, &first, &keep, &skipped);
	cr_assert(first == 19 && keep == 1 && skipped == 99);
	brq_sched_misfire(&cu, 200000, 5000, due, 20, 80, &first, &keep, &skipped);
	cr_assert(first == 17 && keep == 3 && skipped == 97);
	/* A tick that found two slots of a 1 s schedule (it came late) loses neither. */
	brq_sched_misfire(&skip, 100000, 60000, due + 18, 2, 0, &first, &keep, &skipped);
	cr_assert(first == 0 && keep == 2 && skipped == 0);
	/* The due array's capacity covers every on-time slot and the missed ones kept. */
	cr_assert_geq(brq_sched_due_cap(&skip, 60000), 61 + 1);
	cr_assert_geq(brq_sched_due_cap(&cu, 60000), 61 + 3);
}

/* ---- the store: upsert keeps the slot owed, unknown zones, remove ------------------ */

Test(store, upsert_refuses_an_unknown_zone_and_keeps_the_owed_slot_on_replace)
{
	brq_schedule s = cron_schedule("0 3 * * *", "Mars/Olympus");
	bool         created;
	cr_assert_eq(brq_sched_upsert(&conn, &s, false, &created, NULL), BRQ_EINVAL);
	cr_assert(strstr(brq_store_errmsg(&conn), "Mars/Olympus") != NULL, "%s", brq_store_errmsg(&conn));
	brq_store_reset(&conn);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule"), 0, "nothing written");

	s = cron_schedule("0 3 * * *", "Europe/Berlin");
	cr_assert_eq(brq_sched_upsert(&conn, &s, false, &created, NULL), 0, "%s", brq_store_errmsg(&conn));
	cr_assert(created);
	brq_store_reset(&conn);
	brq_testdb_exec(db, "UPDATE schedule SET next_slot = '2020-01-01Z'");
	/* Same timing, new payload: the owed slot stays (slots missed are not forgotten). */
	s.payload = brq_str_c("{\"v\":2}");
	cr_assert_eq(brq_sched_upsert(&conn, &s, true, &created, NULL), 0);
	cr_assert(!created);
	brq_store_reset(&conn);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot = '2020-01-01Z' AND source = "
			     "'config' AND payload = '{\"v\":2}'"),
		     1);
	/* New timing: the next slot is recomputed from now. */
	s.cron = brq_str_c("0 4 * * *");
	cr_assert_eq(brq_sched_upsert(&conn, &s, true, &created, NULL), 0);
	brq_store_reset(&conn);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot > now()"
			     " AND extract(hour FROM next_slot AT TIME ZONE 'Europe/Berlin') = 4"),
		     1);
	cr_assert_eq(brq_store_sched_remove(&conn, brq_str_c("s")), 0);
	cr_assert_eq(brq_store_sched_remove(&conn, brq_str_c("s")), BRQ_ENOTFOUND);
	brq_store_reset(&conn);
}

/* ---- misfire: slots missed while no gateway ran ------------------------------------ */

static brq_sched sc;

/* A scheduler without its thread (tick 0), ticked by hand. */
static void
tick(void)
{
	cr_assert_eq(brq_sched_start(&sc, &cfg, store, NULL, NULL), 0);
	cr_assert_geq(brq_sched_tick(&sc), 0, "%s", brq_store_errmsg(&sc.bg.conn));
	brq_sched_stop(&sc);
}

/* Returns once the database's clock is at least `margin` seconds clear of the next
 * minute, so that "this minute's" slot stays the same one until the test has ticked and
 * counted: a tick that straddles the minute finds the next slot due too, and rightly
 * enqueues it (seen under load: seven jobs where the test counted six). */
static void
clear_of_minute_edge(int margin)
{
	int64_t sec = sql_int("SELECT extract(second FROM clock_timestamp())::int");
	if (sec >= 60 - margin)
		usleep((useconds_t) (61 - sec) * 1000 * 1000);
}

/* Inserts schedule `name` every 60 s owing the slot 10 whole minutes ago. */
static void
insert_missed(const char *name, const char *misfire, int catch_up_max)
{
	char sql[512];
	clear_of_minute_edge(10);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO schedule (name, topic, every_ms, misfire, catch_up_max, next_slot)"
		 " VALUES ('%s', 'report', 60000, '%s', %d, date_trunc('minute', now()) - interval '10 "
		 "minutes')",
		 name, misfire, catch_up_max);
	brq_testdb_exec(db, sql);
}

Test(misfire, skip_enqueues_only_the_latest_missed_slot)
{
	insert_missed("s", "skip", 1);
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 1);
	/* The latest slot: the minute the tick ran in (last_slot), not an older one. */
	cr_assert_eq(sql_int("SELECT count(*) FROM job, schedule s WHERE idempotency_key = 'schedule:s@' ||"
			     " to_char(s.last_slot AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
			     " AND s.last_slot > now() - interval '1 minute' AND s.last_slot <= now()"),
		     1, "the latest slot (this minute)");
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot > now() AND last_slot <= now()"),
		     1);
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 1, "a second tick owes nothing");
}

Test(misfire, catch_up_enqueues_the_latest_k_missed_slots_oldest_first)
{
	insert_missed("c", "catch_up", 4);
	tick();
	/* This minute's slot is on time; of the ten missed, the latest four. */
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 'report'"), 5);
	/* In slot order by id. */
	cr_assert_eq(sql_int("SELECT count(*) FROM (SELECT id, idempotency_key, lag(idempotency_key) OVER "
			     "(ORDER BY id) AS prev"
			     " FROM job) x WHERE prev IS NOT NULL AND prev >= idempotency_key"),
		     0);
	cr_assert_eq(sql_int("SELECT count(*) FROM job, schedule s WHERE idempotency_key = 'schedule:c@' ||"
			     " to_char((s.last_slot - interval '4 minutes') AT TIME ZONE 'UTC',"
			     " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AND s.last_slot > now() - interval '1 "
			     "minute'"),
		     1);
	cr_assert_eq(sql_int("SELECT count(*) FROM job, schedule s WHERE idempotency_key = 'schedule:c@' ||"
			     " to_char((s.last_slot - interval '5 minutes') AT TIME ZONE 'UTC',"
			     " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"),
		     0, "the fifth missed slot is left out");
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 5);
}

Test(misfire, a_cron_schedule_catches_up_in_its_zone)
{
	clear_of_minute_edge(10);
	brq_testdb_exec(db,
			"INSERT INTO schedule (name, topic, cron, tz, misfire, catch_up_max, next_slot)"
			" VALUES ('m', 'report', '* * * * *', 'Asia/Kolkata', 'catch_up', 5,"
			" date_trunc('minute', now()) - interval '30 minutes')");
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 6, "five missed and this minute's");
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot = last_slot + interval '1 minute'"
			     " AND next_slot > now() AND last_slot > now() - interval '1 minute'"),
		     1);
}

Test(misfire, a_slot_already_enqueued_is_not_enqueued_again)
{
	/* next_slot set back by hand (or a crash after a commit that was not seen): the
	 * idempotency key keeps it one job. */
	insert_missed("s", "catch_up", 3);
	tick();
	brq_testdb_exec(db, "UPDATE schedule SET next_slot = last_slot - interval '2 minutes'");
	tick();
	/* The slots again (one more only if a new minute began in between), each
	 * still one job, and the tick went on past them. */
	long long n = sql_int("SELECT count(*) FROM job");
	cr_assert(n == 4 || n == 5, "%lld jobs", n);
	cr_assert_eq(sql_int("SELECT count(DISTINCT idempotency_key) FROM job"), n);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot > now()"), 1);
}

/* The fault seam: fails the statement or command named `fail_what` once. */
static const char *fail_what;
static bool
fail_once(const char *what)
{
	if (fail_what == NULL || strcmp(what, fail_what) != 0)
		return false;
	fail_what = NULL;
	return true;
}

Test(misfire, a_crash_between_enqueue_and_advance_writes_nothing_and_the_slot_comes_once)
{
	insert_missed("c", "catch_up", 3);
	static const char *const points[] = {"brq_sched_advance", "COMMIT"};
	for (size_t i = 0; i < 2; i++) {
		/* The connection is lost after the jobs' INSERT ran: the transaction, and
		 * the enqueue in it, is gone. */
		fail_what         = points[i];
		brq_db_fault_hook = fail_once;
		cr_assert_eq(brq_sched_start(&sc, &cfg, store, NULL, NULL), 0);
		cr_assert_lt(brq_sched_tick(&sc), 0, "the tick reports the failure");
		brq_sched_stop(&sc);
		brq_db_fault_hook = NULL;
		cr_assert_null(fail_what, "the fault was reached: %s", points[i]);
		cr_assert_eq(sql_int("SELECT count(*) FROM job"), 0, "nothing enqueued (%s)", points[i]);
		cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot < now() AND last_slot IS "
				     "NULL"),
			     1);
	}
	tick();
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 4);
	cr_assert_eq(sql_int("SELECT count(DISTINCT idempotency_key) FROM job"), 4);
	/* In slot order: ids ascend with the slots' keys. */
	cr_assert_eq(sql_int("SELECT count(*) FROM (SELECT idempotency_key, lag(idempotency_key) OVER (ORDER "
			     "BY id)"
			     " AS prev FROM job) x WHERE prev >= idempotency_key"),
		     0);
}

Test(misfire, a_row_that_cannot_be_computed_is_disabled_and_does_not_block_others)
{
	brq_testdb_exec(db,
			"INSERT INTO schedule (name, topic, cron, tz, next_slot) VALUES"
			" ('bad', 'report', '* * * * *', 'No/Such_Zone', now() - interval '1 hour')");
	insert_missed("good", "skip", 1);
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE name = 'bad' AND NOT enabled"), 1);
	tick();
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE idempotency_key LIKE 'schedule:good@%%'"), 1);
}

/* ---- two gateways, one database --------------------------------------------------- */

/* Jobs created according to the gateway's debug log: the sum of created=N. */
static int
created_in_log(const brq_gw *g)
{
	const char *log = brq_gw_log(g);
	int         n   = 0;
	for (const char *p = log; (p = strstr(p, "msg=schedule_enqueued")) != NULL; p++) {
		const char *c   = strstr(p, "created=");
		const char *eol = strchr(p, '\n');
		if (c != NULL && (eol == NULL || c < eol))
			n += atoi(c + 8);
	}
	return n;
}

Test(gateways, two_gateways_enqueue_each_one_second_slot_exactly_once)
{
	static const char *const env[] = {
		"BROOQ_SCHEDULE_TICK=100ms", "BROOQ_LOG_LEVEL=debug",
		"BROOQ_SCHEDULES=tick|topic=tick|every=1s|misfire=catch_up|catch_up_max=5;"
		"tock|topic=tock|every=1s;" /* skip: on-time slots are never skipped */
		"nightly|topic=report|cron=30 2 * * *|tz=Europe/Berlin|payload={\"kind\":\"nightly\"}",
		NULL};
	/* b ticks at another period, so that which gateway comes first after a slot
	 * changes from slot to slot: both take slots, and race for them. */
	const char *env_b[8];
	memcpy(env_b, env, sizeof(env));
	env_b[0] = "BROOQ_SCHEDULE_TICK=130ms";
	brq_gw a, b;
	brq_gw_start(&a, dsn, env);
	brq_gw_start(&b, dsn, env_b);
	sleep(5);
	/* Stop the slots, let ticks in flight end, then read both logs (stop removes them). */
	brq_testdb_exec(db, "UPDATE schedule SET enabled = false");
	usleep(500 * 1000);
	int ca = created_in_log(&a), cb = created_in_log(&b);
	int failed = brq_gw_count(brq_gw_log(&a), "scheduler_statement_failed") +
		brq_gw_count(brq_gw_log(&b), "scheduler_statement_failed");
	brq_gw_stop(&a);
	brq_gw_stop(&b);
	long long jobs = 0;
	for (int k = 0; k < 2; k++) {
		const char *t = k == 0 ? "tick" : "tock";
		long long   n = sql_int("SELECT count(*) FROM job WHERE topic = '%s'", t);
		cr_assert_geq(n, 3, "%s: a 1 s schedule over ~5 s", t);
		cr_assert_eq(sql_int("SELECT count(DISTINCT idempotency_key) FROM job WHERE topic = '%s'", t),
			     n);
		/* No slot missing between the first and the last: consecutive seconds. */
		cr_assert_eq(
			sql_int("SELECT (extract(epoch FROM max(s) - min(s)))::int8 + 1 FROM (SELECT"
				" (substr(idempotency_key, 15, 23) || 'Z')::timestamptz AS s FROM job WHERE "
				"topic = '%s') x",
				t),
			n, "%s", t);
		jobs += n;
	}
	/* Both gateways' schedulers together created exactly the jobs that exist: no
	 * slot was enqueued twice (a duplicate would be created=0 or an error). */
	cr_log_info("two gateways: %lld jobs, created by a %d, by b %d", jobs, ca, cb);
	cr_assert_eq(ca + cb, jobs, "created a=%d b=%d jobs=%lld", ca, cb, jobs);
	cr_assert_eq(failed, 0);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic NOT IN ('tick', 'tock')"), 0);
	/* The configured schedules are in the table, marked as such. */
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE source = 'config'"), 3);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE name = 'nightly' AND payload = "
			     "'{\"kind\":\"nightly\"}' AND tz = 'Europe/Berlin'"),
		     1);
}

Test(gateways, a_gateway_with_the_scheduler_off_still_declares_its_schedules)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0", "BROOQ_LOG_LEVEL=debug",
					  "BROOQ_SCHEDULES=fast|topic=fast|every=1s", NULL};
	brq_gw                   a;
	brq_gw_start(&a, dsn, env);
	brq_gw_await_log(&a, "msg=schedule_configured name=fast created=true", 1, 5000);
	sleep(2);
	brq_gw_stop(&a);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE name = 'fast' AND source = 'config'"), 1);
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 0, "no scheduler ran: nothing enqueued");
}

Test(gateways, a_restart_catches_up_slots_missed_while_every_gateway_was_down)
{
	static const char *const env[] = {
		"BROOQ_SCHEDULE_TICK=100ms",
		"BROOQ_SCHEDULES=m|topic=m|every=60s|misfire=catch_up|catch_up_max=3", NULL};
	brq_gw a, b;
	brq_gw_start(&a, dsn, env);
	brq_gw_await_log(&a, "schedule_configured", 1, 5000);
	brq_gw_stop(&a);
	/* Down for ten minutes (simulated): the slot owed is ten minutes old. Two
	 * gateways come back and race for it. */
	brq_testdb_exec(db, "DELETE FROM job");
	/* Clear of a minute boundary: "this minute's" slot must stay the same one until
	 * both gateways have caught up (a few seconds), or one slot more is on time. */
	clear_of_minute_edge(15);
	brq_testdb_exec(
		db, "UPDATE schedule SET next_slot = date_trunc('minute', now()) - interval '10 minutes'");
	brq_gw_start(&a, dsn, env);
	brq_gw_start(&b, dsn, env);
	for (int i = 0; i < 50 && sql_int("SELECT count(*) FROM job") < 4; i++)
		usleep(100 * 1000);
	usleep(500 * 1000); /* more ticks of both: nothing more may come */
	brq_gw_stop(&a);
	brq_gw_stop(&b);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 'm'"), 4,
		     "catch_up_max missed slots and this minute's");
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE next_slot > now()"), 1);
}

/* ---- the admin operations over the wire ------------------------------------------ */

TestSuite(ops, .init = setup, .fini = teardown, .timeout = 60);

static brq_gw    ogw;
static brq_arena oarena;
static brq_status
ocall(brq_request *req, brq_reply *rep, bool admin)
{
	void *keep    = NULL;
	req->token    = admin ? brq_gw_admin(&ogw) : brq_gw_worker(&ogw);
	brq_status st = brq_gw_call(&ogw, req, rep, &oarena, &keep);
	/* Strings of rep borrow keep: the tests read them before the next call. */
	static void *last;
	free(last);
	last = keep;
	return st;
}

Test(ops, add_list_replace_remove_round_trip)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0", NULL};
	brq_gw_start(&ogw, dsn, env);
	brq_arena_init(&oarena);
	brq_request req = {.op = BRQ_OP_SCHEDULE_ADD, .rid = 1};
	brq_reply   rep;
	req.schedule_add = (brq_schedule) {.name         = brq_str_c("nightly"),
					   .topic        = brq_str_c("report.build"),
					   .payload      = brq_str_c("{\"full\":true}"),
					   .cron         = brq_str_c("30 2 * * *"),
					   .tz           = brq_str_c("Europe/Berlin"),
					   .catch_up     = true,
					   .catch_up_max = 3,
					   .max_attempts = 2};
	cr_assert_eq(ocall(&req, &rep, true), BRQ_ST_OK, "%.*s", (int) rep.msg.len, rep.msg.ptr);
	cr_assert(rep.schedule_add.created);
	int64_t first = rep.schedule_add.next_slot_ms;
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE name = 'nightly' AND next_slot = "
			     "to_timestamp(%" PRId64 " / 1000.0) AND next_slot > now() AND source = 'admin'"
			     " AND extract(hour FROM next_slot AT TIME ZONE 'Europe/Berlin') = 2",
			     first),
		     1);
	/* Same name, same timing: replaced, the owed slot kept. */
	req.schedule_add.payload = brq_str_c("{\"full\":false}");
	cr_assert_eq(ocall(&req, &rep, true), BRQ_ST_OK);
	cr_assert(!rep.schedule_add.created);
	cr_assert_eq(rep.schedule_add.next_slot_ms, first);

	brq_request add2 = {.op = BRQ_OP_SCHEDULE_ADD, .rid = 2};
	add2.schedule_add =
		(brq_schedule) {.name = brq_str_c("beat"), .topic = brq_str_c("ping"), .every_ms = 30000};
	cr_assert_eq(ocall(&add2, &rep, true), BRQ_ST_OK);
	cr_assert_eq(rep.schedule_add.next_slot_ms % 30000, 0);

	brq_request list = {.op = BRQ_OP_SCHEDULE_LIST, .rid = 3};
	cr_assert_eq(ocall(&list, &rep, true), BRQ_ST_OK);
	cr_assert_eq(rep.schedule_list.n_schedules, 2);
	brq_schedule *b = &rep.schedule_list.schedules[0], *n = &rep.schedule_list.schedules[1];
	cr_assert(brq_str_eq(b->name, "beat") && b->every_ms == 30000 && b->cron.len == 0 && !b->catch_up &&
		  b->catch_up_max == 1 && b->enabled && brq_str_eq(b->source, "admin"));
	cr_assert(brq_str_eq(n->name, "nightly") && brq_str_eq(n->cron, "30 2 * * *") &&
		  brq_str_eq(n->tz, "Europe/Berlin") && n->catch_up && n->catch_up_max == 3 &&
		  n->max_attempts == 2 && brq_str_eq(n->payload, "{\"full\": false}") &&
		  n->next_slot_ms == first && n->last_slot_ms == 0);

	brq_request rm          = {.op = BRQ_OP_SCHEDULE_REMOVE, .rid = 4};
	rm.schedule_remove.name = brq_str_c("beat");
	cr_assert_eq(ocall(&rm, &rep, true), BRQ_ST_OK);
	cr_assert_eq(ocall(&rm, &rep, true), BRQ_ST_NOT_FOUND);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule"), 1);
	brq_arena_fini(&oarena);
	brq_gw_stop(&ogw);
}

Test(ops, bad_input_and_the_worker_role_are_refused_with_nothing_changed)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0", NULL};
	brq_gw_start(&ogw, dsn, env);
	brq_arena_init(&oarena);
	brq_testdb_exec(db,
			"INSERT INTO schedule (name, topic, every_ms, next_slot) VALUES ('keep', 't', 60000, "
			"'2030-01-01Z')");
	static const struct {
		brq_schedule s;
		brq_status   st;
		const char  *why;
	} bad[] = {
		{{.name = {"keep", 4}, .topic = {"t", 1}, .cron = {"61 * * * *", 10}},
		 BRQ_ST_INVALID_ARGUMENT,
		 "schedule_add.cron: minute: 61 is out of range 0-59"},
		{{.name  = {"keep", 4},
		  .topic = {"t", 1},
		  .cron  = {"0 3 * * *", 9},
		  .tz    = {"Mars/Olympus", 12}},
		 BRQ_ST_INVALID_ARGUMENT,
		 "Mars/Olympus"},
		{{.name = {"keep", 4}, .topic = {"t", 1}, .cron = {"0 3 * * *", 9}, .every_ms = 60000},
		 BRQ_ST_INVALID_ARGUMENT,
		 "exactly one of cron and every_ms"},
		{{.name = {"keep", 4}, .topic = {"t", 1}}, BRQ_ST_INVALID_ARGUMENT, "exactly one"},
		{{.name = {"keep", 4}, .topic = {"t", 1}, .every_ms = 60000, .payload = {"{x", 2}},
		 BRQ_ST_INVALID_ARGUMENT,
		 "schedule_add.payload"},
		{{.name = {"keep", 4}, .topic = {"t", 1}, .every_ms = 60000, .catch_up_max = 5},
		 BRQ_ST_INVALID_ARGUMENT,
		 "catch_up_max: only with misfire catch_up"},
		{{.name = {"Keep", 4}, .topic = {"t", 1}, .every_ms = 60000},
		 BRQ_ST_INVALID_ARGUMENT,
		 "name"},
		{{.name = {"keep", 4}, .topic = {"t", 1}, .every_ms = 500},
		 BRQ_ST_INVALID_ARGUMENT,
		 "every_ms"},
	};
	char *before = brq_testdb_value(db, "SELECT string_agg(s::text, ',') FROM schedule s");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_request req = {.op = BRQ_OP_SCHEDULE_ADD, .rid = i + 1, .schedule_add = bad[i].s};
		brq_reply   rep;
		brq_status  st = ocall(&req, &rep, true);
		char        msg[300];
		snprintf(msg, sizeof(msg), "%.*s", (int) rep.msg.len, rep.msg.ptr);
		cr_assert_eq(st, bad[i].st, "case %zu: %s", i, msg);
		cr_assert(strstr(msg, bad[i].why) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, msg,
			  bad[i].why);
	}
	brq_request ok = {.op = BRQ_OP_SCHEDULE_ADD, .rid = 99};
	ok.schedule_add =
		(brq_schedule) {.name = brq_str_c("keep"), .topic = brq_str_c("t"), .every_ms = 1000};
	brq_reply rep;
	cr_assert_eq(ocall(&ok, &rep, false), BRQ_ST_PERMISSION_DENIED);
	brq_request list = {.op = BRQ_OP_SCHEDULE_LIST, .rid = 100};
	cr_assert_eq(ocall(&list, &rep, false), BRQ_ST_PERMISSION_DENIED);
	brq_request rm          = {.op = BRQ_OP_SCHEDULE_REMOVE, .rid = 101};
	rm.schedule_remove.name = brq_str_c("keep");
	cr_assert_eq(ocall(&rm, &rep, false), BRQ_ST_PERMISSION_DENIED);
	char *after = brq_testdb_value(db, "SELECT string_agg(s::text, ',') FROM schedule s");
	cr_assert_str_eq(after, before, "nothing changed");
	free(before);
	free(after);
	brq_arena_fini(&oarena);
	brq_gw_stop(&ogw);
}

/* A reply quotes request text (here a cron field) whatever bytes it held, yet its msg is
 * UTF-8 (protocol.md §4): a byte that starts no character reads as U+FFFD, and a
 * character quoted from valid UTF-8 stays whole. */
Test(ops, a_reply_quoting_bytes_that_are_not_utf8_is_still_utf8)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0", NULL};
	brq_gw_start(&ogw, dsn, env);
	brq_arena_init(&oarena);
	static const struct {
		const char *cron, *want;
	} cases[] = {
		{"\xff\xfe * * * *",
		 "schedule_add.cron: minute: \"\xef\xbf\xbd\xef\xbf\xbd\" is not a number"},
		{"0 \xc3 * * *", "schedule_add.cron: hour: \"\xef\xbf\xbd\" is not a number"},
		{"1\xe9 * * * *",
		 "schedule_add.cron: minute: unexpected \"\xef\xbf\xbd\" in \"1\xef\xbf\xbd\""},
		/* Valid UTF-8 is quoted as it is, never cut inside a character. */
		{"1\xc3\xa9 * * * *", "schedule_add.cron: minute: unexpected \"\xc3\xa9\" in \"1\xc3\xa9\""},
		{"a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 * * * *",
		 "schedule_add.cron: minute: "
		 "\"a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\" "
		 "is not a number"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		brq_request req  = {.op = BRQ_OP_SCHEDULE_ADD, .rid = i + 1};
		req.schedule_add = (brq_schedule) {
			.name = brq_str_c("bad"), .topic = brq_str_c("t"), .cron = brq_str_c(cases[i].cron)};
		brq_reply rep;
		cr_assert_eq(ocall(&req, &rep, true), BRQ_ST_INVALID_ARGUMENT, "case %zu", i);
		cr_assert(brq_utf8_valid(rep.msg.ptr, rep.msg.len, true), "case %zu: msg not UTF-8: %.*s", i,
			  (int) rep.msg.len, rep.msg.ptr);
		cr_assert(brq_str_eq(rep.msg, cases[i].want), "case %zu: \"%.*s\", want \"%s\"", i,
			  (int) rep.msg.len, rep.msg.ptr, cases[i].want);
	}
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule"), 0);
	brq_arena_fini(&oarena);
	brq_gw_stop(&ogw);
}

/* ---- brooqctl schedule ------------------------------------------------------------- */

/* Runs brooqctl with the gateway's URL and admin token; *out gets stdout+stderr
 * (malloc'd). Returns the exit code. */
static int
ctl(const char *args, char **out)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "%s --url '%s' --token-file '%s' %s 2>&1", brq_testdb_bin("brooqctl"),
		 ogw.url, ogw.admin_token_file, args);
	return brq_testdb_run(cmd, out);
}

Test(ops, brooqctl_schedule_add_list_remove)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0", NULL};
	brq_gw_start(&ogw, dsn, env);
	char *out;
	cr_assert_eq(ctl("schedule add nightly report --cron '30 2 * * mon-fri' --tz America/New_York"
			 " --misfire catch_up --catch-up-max 2 --payload '{\"a\":1}' --max-attempts 3",
			 &out),
		     0, "%s", out);
	cr_assert(strstr(out, "schedule nightly added; next slot 20") != NULL, "%s", out);
	free(out);
	cr_assert_eq(ctl("schedule add beat ping --every 15s", &out), 0, "%s", out);
	free(out);
	cr_assert_eq(ctl("schedule list", &out), 0, "%s", out);
	cr_assert(strstr(out, "cron '30 2 * * mon-fri' America/New_York") != NULL, "%s", out);
	cr_assert(strstr(out, "every 15s") != NULL && strstr(out, "catch_up(2)") != NULL, "%s", out);
	free(out);
	cr_assert_eq(ctl("--json schedule list", &out), 0, "%s", out);
	cr_assert(strstr(out, "\"name\":\"nightly\"") != NULL && strstr(out, "\"max_attempts\":3") != NULL &&
			  strstr(out, "\"source\":\"admin\"") != NULL,
		  "%s", out);
	free(out);
	/* Refused: both kinds, a bad cron (the gateway's message names the field), a
	 * schedule option on another command. */
	cr_assert_eq(ctl("schedule add x t --cron '* * * * *' --every 1s", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(ctl("schedule add x t --cron '* * * * 9'", &out), 1, "%s", out);
	cr_assert(strstr(out, "cron: day-of-week: 9 is out of range 0-7") != NULL, "%s", out);
	free(out);
	cr_assert_eq(ctl("stats --cron '* * * * *'", &out), 2, "%s", out);
	free(out);
	cr_assert_eq(ctl("schedule remove beat", &out), 0, "%s", out);
	cr_assert(strstr(out, "schedule beat removed") != NULL, "%s", out);
	free(out);
	cr_assert_eq(ctl("schedule remove beat", &out), 1, "%s", out);
	free(out);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule"), 1);
	brq_gw_stop(&ogw);
}

/* docs/protocol.md §7.14: a payload over max_payload is too_large, like an enqueue's; a
 * zone name in another case is PostgreSQL's to resolve (it is case-insensitive): kept as
 * given, and the slots are the zone's. */
Test(ops, an_oversized_payload_is_too_large_and_a_zone_name_in_lower_case_is_the_zone)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0", "BROOQ_MAX_PAYLOAD=1KiB", NULL};
	brq_gw_start(&ogw, dsn, env);
	brq_arena_init(&oarena);
	char big[1100];
	memset(big, ' ', sizeof(big) - 1);
	big[0]               = '1';
	big[sizeof(big) - 1] = '\0';
	brq_request req      = {.op = BRQ_OP_SCHEDULE_ADD, .rid = 1};
	brq_reply   rep;
	req.schedule_add = (brq_schedule) {.name     = brq_str_c("big"),
					   .topic    = brq_str_c("t"),
					   .payload  = brq_str_c(big),
					   .every_ms = 60000};
	cr_assert_eq(ocall(&req, &rep, true), BRQ_ST_TOO_LARGE, "%.*s", (int) rep.msg.len, rep.msg.ptr);
	cr_assert(rep.msg.len >= 20 && memcmp(rep.msg.ptr, "schedule_add.payload", 20) == 0, "%.*s",
		  (int) rep.msg.len, rep.msg.ptr);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule"), 0);

	int64_t slot[2];
	for (int i = 0; i < 2; i++) {
		req.schedule_add =
			(brq_schedule) {.name  = brq_str_c(i == 0 ? "lower" : "upper"),
					.topic = brq_str_c("t"),
					.cron  = brq_str_c("30 2 * * *"),
					.tz    = brq_str_c(i == 0 ? "europe/berlin" : "Europe/Berlin")};
		cr_assert_eq(ocall(&req, &rep, true), BRQ_ST_OK, "%.*s", (int) rep.msg.len, rep.msg.ptr);
		slot[i] = rep.schedule_add.next_slot_ms;
	}
	cr_assert_eq(slot[0], slot[1], "europe/berlin is Europe/Berlin");
	brq_request list = {.op = BRQ_OP_SCHEDULE_LIST, .rid = 3};
	cr_assert_eq(ocall(&list, &rep, true), BRQ_ST_OK);
	cr_assert_eq(rep.schedule_list.n_schedules, 2);
	cr_assert(brq_str_eq(rep.schedule_list.schedules[0].tz, "europe/berlin"), "kept as given");
	brq_arena_fini(&oarena);
	brq_gw_stop(&ogw);
}

/* docs/protocol.md §7.14-7.15: schedule_add over a schedule a gateway's BROOQ_SCHEDULES
 * declares replaces it (source admin) until a gateway declaring it starts again, which
 * writes the declared schedule back (source config). */
Test(gateways, schedule_add_over_a_declared_schedule_lasts_until_a_gateway_declaring_it_starts)
{
	static const char *const env[] = {"BROOQ_SCHEDULE_TICK=0",
					  "BROOQ_SCHEDULES=beat|topic=ping|every=60s", NULL};
	brq_gw_start(&ogw, dsn, env);
	brq_gw_await_log(&ogw, "schedule_configured", 1, 5000);
	brq_arena_init(&oarena);
	brq_request req = {.op = BRQ_OP_SCHEDULE_ADD, .rid = 1};
	brq_reply   rep;
	req.schedule_add =
		(brq_schedule) {.name = brq_str_c("beat"), .topic = brq_str_c("pong"), .every_ms = 30000};
	cr_assert_eq(ocall(&req, &rep, true), BRQ_ST_OK, "%.*s", (int) rep.msg.len, rep.msg.ptr);
	cr_assert_not(rep.schedule_add.created, "the declared schedule is replaced");
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE name = 'beat' AND topic = 'pong'"
			     " AND every_ms = 30000 AND source = 'admin'"),
		     1);
	brq_arena_fini(&oarena);
	brq_gw_stop(&ogw);
	brq_gw_start(&ogw, dsn, env);
	brq_gw_await_log(&ogw, "schedule_configured", 1, 5000);
	brq_gw_stop(&ogw);
	cr_assert_eq(sql_int("SELECT count(*) FROM schedule WHERE name = 'beat' AND topic = 'ping'"
			     " AND every_ms = 60000 AND source = 'config'"),
		     1);
}
