/* SPDX-License-Identifier: MIT */
/* Cron expressions (gateway/cron.c): parsing, the day rule, the next matching minute. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cron.h"

/* Local seconds of "YYYY-MM-DD HH:MM". */
static int64_t
at(const char *s)
{
	int y, mo, d, h, mi;
	cr_assert_eq(sscanf(s, "%d-%d-%d %d:%d", &y, &mo, &d, &h, &mi), 5, "%s", s);
	return brq_cron_local(y, mo, d, h, mi);
}

/* "YYYY-MM-DD HH:MM" of local seconds t (static buffer). */
static const char *
fmt(int64_t t)
{
	static char buf[32];
	int         y, mo, d, h, mi, wd;
	brq_cron_civil(t, &y, &mo, &d, &h, &mi, &wd);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d", y, mo, d, h, mi);
	return buf;
}

static brq_cron
parse(const char *expr)
{
	brq_cron c;
	char     err[128] = "";
	cr_assert_eq(brq_cron_parse(&c, expr, err, sizeof(err)), 0, "%s: %s", expr, err);
	return c;
}

/* The next n matches after `from` must be exactly want[0..n). */
static void
expect_seq(const char *expr, const char *from, const char *const *want, int n)
{
	brq_cron c = parse(expr);
	int64_t  t = at(from);
	for (int i = 0; i < n; i++) {
		int64_t next;
		cr_assert_eq(brq_cron_next(&c, t, &next), 0, "%s after %s", expr, fmt(t));
		cr_assert_str_eq(fmt(next), want[i], "%s: match %d after %s", expr, i + 1, from);
		cr_assert(brq_cron_matches(&c, next));
		t = next;
	}
}

#define SEQ(expr, from, ...)                                                    \
	do {                                                                    \
		static const char *const w_[] = {__VA_ARGS__};                  \
		expect_seq(expr, from, w_, (int) (sizeof(w_) / sizeof(w_[0]))); \
	} while (0)

Test(civil, round_trips_dates_and_weekdays)
{
	int y, mo, d, h, mi, wd;
	brq_cron_civil(0, &y, &mo, &d, &h, &mi, &wd);
	cr_assert(y == 1970 && mo == 1 && d == 1 && wd == 4, "1970-01-01 was a Thursday");
	brq_cron_civil(at("2000-02-29 23:59"), &y, &mo, &d, &h, &mi, &wd);
	cr_assert(y == 2000 && mo == 2 && d == 29 && h == 23 && mi == 59 && wd == 2);
	brq_cron_civil(at("1969-12-31 12:00"), &y, &mo, &d, &h, &mi, &wd);
	cr_assert(y == 1969 && mo == 12 && d == 31 && h == 12 && wd == 3);
	for (int64_t t = at("2024-01-01 00:00"); t < at("2029-01-01 00:00"); t += 86400 + 3600 + 60)
		cr_assert_eq(at(fmt(t)), t - t % 60, "%s", fmt(t));
}

Test(next, every_minute_and_steps)
{
	SEQ("* * * * *", "2026-03-01 10:00", "2026-03-01 10:01", "2026-03-01 10:02");
	SEQ("*/15 * * * *", "2026-03-01 10:07", "2026-03-01 10:15", "2026-03-01 10:30", "2026-03-01 10:45",
	    "2026-03-01 11:00");
	SEQ("5/20 * * * *", "2026-03-01 10:00", "2026-03-01 10:05", "2026-03-01 10:25", "2026-03-01 10:45",
	    "2026-03-01 11:05");
	SEQ("10-20/5 8-9 * * *", "2026-03-01 08:12", "2026-03-01 08:15", "2026-03-01 08:20",
	    "2026-03-01 09:10", "2026-03-01 09:15", "2026-03-01 09:20", "2026-03-02 08:10");
}

Test(next, is_strictly_after_and_ignores_seconds)
{
	brq_cron c = parse("30 12 * * *");
	int64_t  next;
	cr_assert_eq(brq_cron_next(&c, at("2026-05-05 12:30"), &next), 0);
	cr_assert_str_eq(fmt(next), "2026-05-06 12:30", "a match at `after` itself is not next");
	cr_assert_eq(brq_cron_next(&c, at("2026-05-05 12:29") + 59, &next), 0);
	cr_assert_str_eq(fmt(next), "2026-05-05 12:30");
}

Test(next, lists_ranges_and_names)
{
	SEQ("0 9,17 * * mon-fri", "2026-12-04 17:00", /* a Friday */ "2026-12-07 09:00", "2026-12-07 17:00",
	    "2026-12-08 09:00");
	SEQ("0 0 1 jan,Jul *", "2026-02-01 00:00", "2026-07-01 00:00", "2027-01-01 00:00");
	SEQ("0 12 * FEB-mar SUN", "2026-01-01 00:00", "2026-02-01 12:00", "2026-02-08 12:00");
	SEQ("0 0 * * 7", "2026-12-01 00:00", "2026-12-06 00:00", "2026-12-13 00:00");
	SEQ("0 0 * * 5-7", "2026-12-01 00:00", "2026-12-04 00:00", "2026-12-05 00:00", "2026-12-06 00:00",
	    "2026-12-11 00:00");
}

Test(next, macros)
{
	SEQ("@hourly", "2026-12-01 10:10", "2026-12-01 11:00");
	SEQ("@daily", "2026-12-01 10:10", "2026-12-02 00:00");
	SEQ("@midnight", "2026-12-01 10:10", "2026-12-02 00:00");
	SEQ("@weekly", "2026-12-01 10:10", "2026-12-06 00:00");
	SEQ("@monthly", "2026-12-01 10:10", "2027-01-01 00:00");
	SEQ("@yearly", "2026-12-01 10:10", "2027-01-01 00:00");
	SEQ("@ANNUALLY", "2026-12-01 10:10", "2027-01-01 00:00");
}

Test(day_rule, both_restricted_means_either)
{
	/* Vixie: the 13th OR any Friday. */
	SEQ("0 0 13 * 5", "2026-11-01 00:00", "2026-11-06 00:00", "2026-11-13 00:00", "2026-11-20 00:00",
	    "2026-11-27 00:00", "2026-12-04 00:00", "2026-12-11 00:00", "2026-12-13 00:00");
}

Test(day_rule, a_star_field_means_both)
{
	/* Day-of-week restricted, day-of-month "*": only Mondays. */
	SEQ("0 0 * * 1", "2026-11-30 00:00", "2026-12-07 00:00");
	/* "*\/2" starts with '*': counts as unrestricted, so odd days that are Mondays. */
	SEQ("0 0 */2 * 1", "2026-11-01 00:00", "2026-11-09 00:00", "2026-11-23 00:00", "2026-12-07 00:00");
}

Test(next, month_ends_and_leap_days)
{
	SEQ("0 0 31 * *", "2026-01-31 00:00", "2026-03-31 00:00", "2026-05-31 00:00");
	SEQ("0 0 29 2 *", "2026-01-01 00:00", "2028-02-29 00:00", "2032-02-29 00:00");
	SEQ("0 0 29 2 *", "2096-03-01 00:00", "2104-02-29 00:00");
	SEQ("59 23 31 12 *", "2026-12-31 23:59", "2027-12-31 23:59");
}

Test(parse, fields_hold_the_right_bits)
{
	brq_cron c = parse("0,30 */6 1-3 */4 1-5/2");
	cr_assert_eq(c.minute, (1ull << 0) | (1ull << 30));
	cr_assert_eq(c.hour, (1u << 0) | (1u << 6) | (1u << 12) | (1u << 18));
	cr_assert_eq(c.dom, (1u << 1) | (1u << 2) | (1u << 3));
	cr_assert_eq(c.month, (1u << 1) | (1u << 5) | (1u << 9));
	cr_assert_eq(c.dow, (1u << 1) | (1u << 3) | (1u << 5));
	cr_assert(!c.dom_star && !c.dow_star);
	c = parse("  * * * * *  ");
	cr_assert(c.dom_star && c.dow_star);
	cr_assert_eq(c.dow, 0x7f);
}

/* Every refused expression, with the words its message must contain. */
Test(parse, refuses_bad_expressions_with_a_reason)
{
	static const struct {
		const char *expr, *why;
	} bad[] = {
		{"", "expected 5 fields"},
		{"* * * *", "found 4"},
		{"* * * * * *", "found more"},
		{"60 * * * *", "minute: 60 is out of range 0-59"},
		{"* 24 * * *", "hour: 24 is out of range 0-23"},
		{"* * 0 * *", "day-of-month: 0 is out of range 1-31"},
		{"* * 32 * *", "day-of-month: 32"},
		{"* * * 13 *", "month: 13 is out of range 1-12"},
		{"* * * * 8", "day-of-week: 8 is out of range 0-7"},
		{"* * * foo *", "month: \"foo\" is not a number or name"},
		{"* * * * monday", "day-of-week: \"monday\""},
		{"x * * * *", "minute: \"x\" is not a number"},
		{"5-1 * * * *", "minute: range 5-1 is reversed"},
		{"*/0 * * * *", "minute: step must be"},
		{"*/ * * * *", "minute: step must be"},
		{"1,,2 * * * *", "minute"},
		{"1;2 * * * *", "minute: unexpected"},
		{"* * 30 2 *", "day-of-month: no selected day occurs"},
		{"* * 31 4,6,9,11 *", "no selected day occurs"},
		{"@every 5m", "unknown macro"},
		{"99999999999999999999 * * * *", "minute"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_cron c;
		char     err[160] = "";
		cr_assert_eq(brq_cron_parse(&c, bad[i].expr, err, sizeof(err)), BRQ_EINVAL, "\"%s\" accepted",
			     bad[i].expr);
		cr_assert(strstr(err, bad[i].why) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", bad[i].expr,
			  err, bad[i].why);
	}
	char long_expr[BRQ_CRON_MAX + 10];
	memset(long_expr, '*', sizeof(long_expr) - 1);
	long_expr[sizeof(long_expr) - 1] = '\0';
	brq_cron c;
	char     err[160];
	cr_assert_eq(brq_cron_parse(&c, long_expr, err, sizeof(err)), BRQ_EINVAL);
}

Test(parse, thirty_first_is_fine_when_the_weekday_is_restricted_too)
{
	/* The 31st of February OR any Monday: Mondays of February match. */
	SEQ("0 0 31 2 1", "2026-01-31 00:00", "2026-02-02 00:00");
}

/* docs/protocol.md §7.14 lists the dialect a client may send: these forms, each pinned
 * (accepted ones by their matches, refused ones by their message). */
Test(parse, the_dialect_the_protocol_documents)
{
	/* Day-of-week 7 is Sunday, alone, in a range and as a range's end. */
	SEQ("0 0 * * 7", "2026-12-01 00:00", "2026-12-06 00:00");
	SEQ("0 0 * * 0-7", "2026-12-01 00:00", "2026-12-02 00:00", "2026-12-03 00:00");
	SEQ("0 0 * * sat-7", "2026-12-01 00:00", "2026-12-05 00:00", "2026-12-06 00:00", "2026-12-12 00:00");
	/* Names in any case, alone and in ranges; macros in any case. */
	SEQ("0 0 1 JAN *", "2026-12-01 00:00", "2027-01-01 00:00");
	SEQ("0 0 * Dec Mon-Wed", "2026-12-01 00:00", "2026-12-02 00:00", "2026-12-07 00:00");
	SEQ("@MIDNIGHT", "2026-12-01 10:10", "2026-12-02 00:00");
	SEQ("@Annually", "2026-12-01 10:10", "2027-01-01 00:00");
	/* N/STEP runs from N to the field's end. */
	SEQ("50/5 * * * *", "2026-12-01 10:00", "2026-12-01 10:50", "2026-12-01 10:55", "2026-12-01 11:50");
	static const struct {
		const char *expr, *why;
	} bad[] = {
		{"@reboot", "unknown macro"},
		{"@every 1h", "unknown macro"},
		{"*/0 * * * *", "minute: step must be a number 1-59"},
		{"0 0 * * 1/0", "day-of-week: step must be"},
		{"30-10 * * * *", "minute: range 30-10 is reversed"},
		{"0 0 * * fri-mon", "day-of-week: range 5-1 is reversed"},
		{"0 0 * dec-jan *", "month: range 12-1 is reversed"},
		{"0 0 ? * *", "day-of-month"},
		{"0 0 L * *", "day-of-month"},
		{"0 0 * * 1#2", "day-of-week"},
		{"0 0 * * 5L", "day-of-week"},
		{"H * * * *", "minute"},
		{"0 0 * * sunday", "day-of-week"},
		{"0 * * * * *", "found more"}, /* a seconds field */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_cron c;
		char     err[160] = "";
		cr_assert_eq(brq_cron_parse(&c, bad[i].expr, err, sizeof(err)), BRQ_EINVAL, "\"%s\" accepted",
			     bad[i].expr);
		cr_assert(strstr(err, bad[i].why) != NULL, "\"%s\": message \"%s\" lacks \"%s\"", bad[i].expr,
			  err, bad[i].why);
	}
}
