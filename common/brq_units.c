// SPDX-License-Identifier: MIT
// The one syntax for durations and sizes, and the one text form of an instant (brq_units.h).
#include "brq_units.h"

#include <stdio.h>
#include <string.h>

struct unit {
	const char *name;
	uint64_t    factor;
};

static const struct unit duration_units[] = {
	{"ms", 1}, {"s", 1000}, {"m", 60 * 1000}, {"h", 3600 * 1000}, {"d", 24ull * 3600 * 1000},
};

static const struct unit size_units[] = {
	{"B", 1},
	{"KiB", 1024},
	{"MiB", 1024 * 1024},
	{"GiB", 1024ull * 1024 * 1024},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

// Parses leading decimal digits of s into *v. Returns the number of digits (0 if s
// does not start with a digit) or -1 on overflow.
static int
parse_digits(const char *s, uint64_t *v)
{
	uint64_t acc = 0;
	int      n   = 0;
	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		unsigned d = (unsigned) (s[n] - '0');
		if (acc > (UINT64_MAX - d) / 10)
			return -1;
		acc = acc * 10 + d;
	}
	*v = acc;
	return n;
}

// The leading digits of a non-empty s, as parse_digits; 0 or -1 set *why ("not_a" for
// no digit at all).
static int
lead_digits(const char *s, uint64_t *v, const char **why, const char *not_a)
{
	if (s == NULL || s[0] == '\0') {
		*why = "empty value";
		return -1;
	}
	int nd = parse_digits(s, v);
	if (nd <= 0) {
		*why = nd < 0 ? "value too large" : not_a;
		return -1;
	}
	return nd;
}

// <digits><unit> or bare "0"; the three texts say what went wrong.
static int
parse_with_unit(const char *s, const struct unit *units, size_t n_units, uint64_t *out, const char **why,
		const char *not_a, const char *needs_unit, const char *unknown_unit)
{
	uint64_t v;
	int      nd = lead_digits(s, &v, why, not_a);
	if (nd < 0) {
		return BRQ_EINVAL;
	}
	const char *u = s + nd;
	if (*u == '\0') {
		if (v == 0) {
			*out = 0;
			return 0;
		}
		*why = needs_unit;
		return BRQ_EINVAL;
	}
	for (size_t i = 0; i < n_units; i++) {
		if (strcmp(u, units[i].name) == 0) {
			if (v > UINT64_MAX / units[i].factor) {
				*why = "value too large";
				return BRQ_EINVAL;
			}
			*out = v * units[i].factor;
			return 0;
		}
	}
	*why = unknown_unit;
	return BRQ_EINVAL;
}

int
brq_parse_duration_ms(const char *s, uint64_t *out, const char **why)
{
	return parse_with_unit(s, duration_units, N_OF(duration_units), out, why,
			       "not a duration (e.g. 1500ms, 120s, 2m, 1h, 30d)",
			       "duration needs a unit (e.g. 120s)",
			       "unknown unit or trailing characters (use ms, s, m, h or d)");
}

int
brq_parse_size(const char *s, uint64_t *out, const char **why)
{
	return parse_with_unit(s, size_units, N_OF(size_units), out, why,
			       "not a size (e.g. 512B, 64KiB, 16MiB)", "size needs a unit (e.g. 64KiB)",
			       "unknown unit or trailing characters (use B, KiB, MiB or GiB)");
}

int
brq_parse_u64(const char *s, uint64_t *out, const char **why)
{
	uint64_t    v;
	const char *not_int = "not a non-negative decimal integer";
	int         nd      = lead_digits(s, &v, why, not_int);
	if (nd < 0) {
		return BRQ_EINVAL;
	}
	if (s[nd] != '\0') {
		*why = not_int;
		return BRQ_EINVAL;
	}
	*out = v;
	return 0;
}

// Renders v with the largest unit of `units` that divides it; units[0] has factor 1
// and names what is left.
static const char *
fmt_units(char *buf, size_t cap, uint64_t v, const struct unit *units, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		if (v != 0 && v % units[i].factor == 0) {
			snprintf(buf, cap, "%llu%s", (unsigned long long) (v / units[i].factor),
				 units[i].name);
			return buf;
		}
	}
	snprintf(buf, cap, "%llu%s", (unsigned long long) v, units[0].name);
	return buf;
}

const char *
brq_fmt_duration(char *buf, size_t cap, uint64_t ms)
{
	return fmt_units(buf, cap, ms, duration_units, N_OF(duration_units));
}

const char *
brq_fmt_size(char *buf, size_t cap, uint64_t b)
{
	return fmt_units(buf, cap, b, size_units, N_OF(size_units));
}

const char *
brq_fmt_time_ms(char *buf, size_t cap, int64_t unix_ms)
{
	// Floor division, so that an instant before 1970 still counts its milliseconds
	// forwards from the second it falls in.
	int64_t ms = unix_ms % 1000, secs = unix_ms / 1000;
	if (ms < 0) {
		ms += 1000;
		secs--;
	}
	int64_t sod = secs % 86400, days = secs / 86400;
	if (sod < 0) {
		sod += 86400;
		days--;
	}
	// Days since 1970-01-01 to the proleptic Gregorian date (H. Hinnant's
	// civil_from_days), in eras of 400 years.
	int64_t z   = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	int64_t y = yoe + era * 400 + (m <= 2);
	snprintf(buf, cap, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03lldZ", (long long) y, (long long) m,
		 (long long) d, (long long) (sod / 3600), (long long) (sod / 60 % 60), (long long) (sod % 60),
		 (long long) ms);
	return buf;
}
