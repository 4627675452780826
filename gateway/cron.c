// SPDX-License-Identifier: MIT
// Cron expressions: the 5-field parser and the next matching minute, on wall-clock time only.
#include "cron.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

// Search horizon of brq_cron_next: a 29 February can be 8 years away (2096 -> 2104).
#define HORIZON_YEARS 9

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
					  "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const dow_names[]   = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

// One field's rules: its name for messages, its range, and its names (value of names[i]
// is first + i).
typedef struct field {
	const char        *name;
	int                lo, hi;
	const char *const *names;
	int                n_names, first;
} field;

static const field fields[5] = {
	{"minute", 0, 59, NULL, 0, 0},          {"hour", 0, 23, NULL, 0, 0},
	{"day-of-month", 1, 31, NULL, 0, 0},    {"month", 1, 12, month_names, 12, 1},
	{"day-of-week", 0, 7, dow_names, 7, 0},
};

// ---- civil calendar (H. Hinnant's days_from_civil / civil_from_days) --------------------

static int64_t
days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t  era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned) (y - era * 400);
	unsigned doy = (unsigned) ((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1);
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t) doe - 719468;
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

void
brq_cron_civil(int64_t t, int *y, int *mo, int *d, int *h, int *mi, int *wd)
{
	int64_t z   = floor_div(t, 86400);
	int64_t sec = t - z * 86400;
	*h          = (int) (sec / 3600);
	*mi         = (int) (sec % 3600 / 60);
	*wd         = (int) ((z % 7 + 7 + 4) % 7); // 1970-01-01 was a Thursday
	z += 719468;
	int64_t  era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned) (z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp  = (5 * doy + 2) / 153;
	*d           = (int) (doy - (153 * mp + 2) / 5 + 1);
	*mo          = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y           = (int) ((int64_t) yoe + era * 400 + (*mo <= 2));
}

int64_t
brq_cron_local(int y, int mo, int d, int h, int mi)
{
	return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

static bool
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
days_in(int y, int mo)
{
	static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return mo == 2 && is_leap(y) ? 29 : n[mo - 1];
}

// ---- parsing -------------------------------------------------------------------------------

// Reads a number or (where the field has names) a name at *p; advances *p. Returns 0 and
// *v, or BRQ_EINVAL with err set.
static int
value(const field *f, const char **p, int *v, char *err, size_t errlen)
{
	const char *s = *p;
	if (isdigit((unsigned char) *s)) {
		long n = 0;
		while (isdigit((unsigned char) *s) && n < 1000)
			n = n * 10 + (*s++ - '0');
		if (isdigit((unsigned char) *s) || n < f->lo || n > f->hi) {
			snprintf(err, errlen, "%s: %.*s is out of range %d-%d", f->name,
				 (int) strspn(*p, "0123456789"), *p, f->lo, f->hi);
			return BRQ_EINVAL;
		}
		*v = (int) n;
		*p = s;
		return 0;
	}
	for (int i = 0; i < f->n_names; i++) {
		if (strncasecmp(s, f->names[i], 3) == 0 && !isalpha((unsigned char) s[3])) {
			*v = f->first + i;
			*p = s + 3;
			return 0;
		}
	}
	// Quoted up to 20 bytes, never cut inside a UTF-8 character.
	size_t len = brq_utf8_truncate(s, strcspn(s, ",-/"), 20);
	snprintf(err, errlen, "%s: \"%.*s\" is not a %s", f->name, (int) len, s,
		 f->names != NULL ? "number or name" : "number");
	return BRQ_EINVAL;
}

// Parses one list item at *p ("*", "N", "A-B", each with an optional "/STEP") into bits.
static int
item(const field *f, const char **p, uint64_t *bits, char *err, size_t errlen)
{
	int a = f->lo, b = f->hi, step = 1;
	if (**p == '*') {
		(*p)++;
	} else {
		if (value(f, p, &a, err, errlen) != 0)
			return BRQ_EINVAL;
		b = a;
		if (**p == '-') {
			(*p)++;
			if (value(f, p, &b, err, errlen) != 0)
				return BRQ_EINVAL;
			if (b < a) {
				snprintf(err, errlen, "%s: range %d-%d is reversed", f->name, a, b);
				return BRQ_EINVAL;
			}
		} else if (**p == '/') {
			b = f->hi; // "N/STEP": from N to the end of the range
		}
	}
	if (**p == '/') {
		(*p)++;
		const char *s = *p;
		long        n = 0;
		while (isdigit((unsigned char) **p) && n < 1000)
			n = n * 10 + (*(*p)++ - '0');
		if (*p == s || n < 1 || n > f->hi) {
			snprintf(err, errlen, "%s: step must be a number 1-%d", f->name, f->hi);
			return BRQ_EINVAL;
		}
		step = (int) n;
	}
	for (int v = a; v <= b; v += step)
		*bits |= (uint64_t) 1 << v;
	return 0;
}

// Parses one whole field s[0..len) into bits.
static int
parse_field(const field *f, const char *s, size_t len, uint64_t *bits, char *err, size_t errlen)
{
	char buf[BRQ_CRON_MAX + 1];
	memcpy(buf, s, len);
	buf[len]      = '\0';
	const char *p = buf;
	*bits         = 0;
	for (;;) {
		if (item(f, &p, bits, err, errlen) != 0)
			return BRQ_EINVAL;
		if (*p == '\0')
			return 0;
		if (*p != ',') {
			// The whole character, not its first byte alone.
			size_t n = brq_utf8_seq_len((const uint8_t *) p, strlen(p));
			snprintf(err, errlen, "%s: unexpected \"%.*s\" in \"%s\"", f->name,
				 n > 0 ? (int) n : 1, p, buf);
			return BRQ_EINVAL;
		}
		p++;
	}
}

// The @ macros, as their 5-field forms.
static const char *
macro(const char *s)
{
	static const struct {
		const char *name, *expr;
	} m[] = {
		{"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
		{"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
		{"@hourly", "0 * * * *"},
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (strcasecmp(s, m[i].name) == 0)
			return m[i].expr;
	return NULL;
}

// Refuses a day-of-month list that no selected month ever reaches ("30 2", "31 4,6").
static int
check_reachable(const brq_cron *c, char *err, size_t errlen)
{
	if (c->dom_star || !c->dow_star)
		return 0; // every month has days matching, or the weekday rule matches some
	for (int mo = 1; mo <= 12; mo++) {
		if (!(c->month & (1u << mo)))
			continue;
		int max = mo == 2 ? 29 : days_in(2001, mo);
		for (int d = 1; d <= max; d++)
			if (c->dom & (1u << d))
				return 0;
	}
	snprintf(err, errlen, "day-of-month: no selected day occurs in any selected month");
	return BRQ_EINVAL;
}

int
brq_cron_parse(brq_cron *c, const char *expr, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (strlen(expr) > BRQ_CRON_MAX) {
		snprintf(err, errlen, "longer than %d bytes", BRQ_CRON_MAX);
		return BRQ_EINVAL;
	}
	while (isspace((unsigned char) *expr))
		expr++;
	if (*expr == '@') {
		const char *m = macro(expr);
		if (m == NULL) {
			snprintf(err, errlen,
				 "unknown macro \"%.20s\" (@yearly, @monthly, @weekly, "
				 "@daily, @hourly)",
				 expr);
			return BRQ_EINVAL;
		}
		expr = m;
	}
	uint64_t    bits[5];
	const char *p = expr;
	for (int i = 0; i < 5; i++) {
		while (isspace((unsigned char) *p))
			p++;
		size_t len = strcspn(p, " \t\n\r\v\f");
		if (len == 0) {
			snprintf(err, errlen,
				 "expected 5 fields (minute hour day-of-month month "
				 "day-of-week), found %d",
				 i);
			return BRQ_EINVAL;
		}
		if (i == 2)
			c->dom_star = *p == '*';
		if (i == 4)
			c->dow_star = *p == '*';
		if (parse_field(&fields[i], p, len, &bits[i], err, errlen) != 0)
			return BRQ_EINVAL;
		p += len;
	}
	while (isspace((unsigned char) *p))
		p++;
	if (*p != '\0') {
		snprintf(err, errlen,
			 "expected 5 fields (minute hour day-of-month month day-of-week), "
			 "found more");
		return BRQ_EINVAL;
	}
	c->minute = bits[0];
	c->hour   = (uint32_t) bits[1];
	c->dom    = (uint32_t) bits[2];
	c->month  = (uint16_t) bits[3];
	c->dow    = (uint8_t) ((bits[4] | (bits[4] >> 7)) & 0x7f); // 7 is Sunday too
	return check_reachable(c, err, errlen);
}

// ---- matching ------------------------------------------------------------------------------

static bool
day_matches(const brq_cron *c, int d, int wd)
{
	bool dom = (c->dom >> d) & 1, dow = (c->dow >> wd) & 1;
	return c->dom_star || c->dow_star ? dom && dow : dom || dow;
}

bool
brq_cron_matches(const brq_cron *c, int64_t t)
{
	int y, mo, d, h, mi, wd;
	brq_cron_civil(t, &y, &mo, &d, &h, &mi, &wd);
	return ((c->minute >> mi) & 1) && ((c->hour >> h) & 1) && ((c->month >> mo) & 1) &&
		day_matches(c, d, wd);
}

// The next day at 00:00, carrying into the month and the year.
static void
next_day(int *y, int *mo, int *d, int *h, int *mi)
{
	*h = 0, *mi = 0;
	if (++*d > days_in(*y, *mo)) {
		*d = 1;
		if (++*mo > 12)
			*mo = 1, ++*y;
	}
}

// The next hour at :00, carrying into the day.
static void
next_hour(int *y, int *mo, int *d, int *h, int *mi)
{
	*mi = 0;
	if (++*h > 23)
		next_day(y, mo, d, h, mi);
}

int
brq_cron_next(const brq_cron *c, int64_t after, int64_t *next)
{
	int y, mo, d, h, mi, wd;
	brq_cron_civil(floor_div(after, 60) * 60 + 60, &y, &mo, &d, &h, &mi, &wd);
	int y_end = y + HORIZON_YEARS;
	// Advance the first field that does not match, resetting the finer ones: each
	// step moves forward, so this ends (at the horizon at the latest).
	while (y <= y_end) {
		if (!((c->month >> mo) & 1)) {
			d = 1, h = 0, mi = 0;
			if (++mo > 12)
				mo = 1, y++;
			continue;
		}
		int64_t days = days_from_civil(y, mo, d);
		wd           = (int) ((days % 7 + 7 + 4) % 7);
		if (!day_matches(c, d, wd)) {
			next_day(&y, &mo, &d, &h, &mi);
			continue;
		}
		if (!((c->hour >> h) & 1)) {
			next_hour(&y, &mo, &d, &h, &mi);
			continue;
		}
		while (mi < 60 && !((c->minute >> mi) & 1))
			mi++;
		if (mi == 60) {
			next_hour(&y, &mo, &d, &h, &mi);
			continue;
		}
		*next = days * 86400 + h * 3600 + mi * 60;
		return 0;
	}
	return BRQ_ENOTFOUND;
}
