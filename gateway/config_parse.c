// SPDX-License-Identifier: MIT
// Value parsers of the gateway configuration (durations, sizes, integers, booleans, hosts) and its problem
// list.
#include "config.h"
#include "config_parse.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// --- problems ---------------------------------------------------------------------

void
brq_config_problems_init(struct brq_config_problems *p)
{
	memset(p, 0, sizeof(*p));
}

void
brq_config_problems_fini(struct brq_config_problems *p)
{
	if (p == NULL) {
		return;
	}
	for (size_t i = 0; i < p->count; i++) {
		free(p->lines[i]);
	}
	free(p->lines);
	memset(p, 0, sizeof(*p));
}

void
brq_config_problem_add(struct brq_config_problems *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->is_oom = true;
		return;
	}
	if (p->count == p->cap) {
		size_t ncap = p->cap == 0 ? 8 : p->cap * 2;
		char **nl   = realloc(p->lines, ncap * sizeof(*nl));
		if (nl == NULL) {
			p->is_oom = true;
			return;
		}
		p->lines = nl;
		p->cap   = ncap;
	}
	char *line = malloc((size_t) n + 1);
	if (line == NULL) {
		p->is_oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, (size_t) n + 1, fmt, ap);
	va_end(ap);
	// One problem is one line: a path with a newline in it must not forge another.
	for (char *c = line; *c != '\0'; c++) {
		if ((unsigned char) *c < 0x20 || *c == 0x7f) {
			*c = '?';
		}
	}
	p->lines[p->count++] = line;
}

// --- value parsers ----------------------------------------------------------------

// Parses leading decimal digits of s into *v. Returns the number of digits (0 if s
// does not start with a digit) or -1 on overflow.
static int
parse_digits(const char *s, uint64_t *v)
{
	uint64_t acc = 0;
	int      n   = 0;
	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		unsigned d = (unsigned) (s[n] - '0');
		if (acc > (UINT64_MAX - d) / 10) {
			return -1;
		}
		acc = acc * 10 + d;
	}
	*v = acc;
	return n;
}

struct unit {
	const char *name;
	uint64_t    factor;
};

static const struct unit duration_units[] = {
	{"ms", 1}, {"s", MS_PER_S}, {"m", MS_PER_M}, {"h", MS_PER_H}, {"d", MS_PER_D},
};

static const struct unit size_units[] = {
	{"B", 1},
	{"KiB", KIB},
	{"MiB", MIB},
	{"GiB", GIB},
};

// <digits><unit> or bare "0". Shared by durations and sizes.
static int
parse_with_unit(const char *s, const struct unit *units, size_t n_units, uint64_t *out, const char **why,
		const char *what)
{
	uint64_t v;
	if (s == NULL || s[0] == '\0') {
		*why = "empty value";
		return BRQ_EINVAL;
	}
	int nd = parse_digits(s, &v);
	if (nd < 0) {
		*why = "value too large";
		return BRQ_EINVAL;
	}
	if (nd == 0) {
		*why = what;
		return BRQ_EINVAL;
	}
	const char *u = s + nd;
	if (*u == '\0') {
		if (v == 0) {
			*out = 0;
			return 0;
		}
		*why = units == duration_units ? "duration needs a unit (e.g. 120s)"
					       : "size needs a unit (e.g. 64KiB)";
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
	*why = units == duration_units ? "unknown unit or trailing characters (use ms, s, m, h or d)"
				       : "unknown unit or trailing characters (use B, KiB, MiB or GiB)";
	return BRQ_EINVAL;
}

int
brq_config_parse_duration_ms(const char *s, uint64_t *out, const char **why)
{
	return parse_with_unit(s, duration_units, sizeof(duration_units) / sizeof(duration_units[0]), out,
			       why, "not a duration (e.g. 1500ms, 120s, 2m, 1h, 30d)");
}

int
brq_config_parse_size(const char *s, uint64_t *out, const char **why)
{
	return parse_with_unit(s, size_units, sizeof(size_units) / sizeof(size_units[0]), out, why,
			       "not a size (e.g. 512B, 64KiB, 16MiB)");
}

int
brq_config_parse_uint(const char *s, uint64_t *out, const char **why)
{
	uint64_t v;
	if (s == NULL || s[0] == '\0') {
		*why = "empty value";
		return BRQ_EINVAL;
	}
	int nd = parse_digits(s, &v);
	if (nd < 0) {
		*why = "value too large";
		return BRQ_EINVAL;
	}
	if (nd == 0 || s[nd] != '\0') {
		*why = "not a non-negative decimal integer";
		return BRQ_EINVAL;
	}
	*out = v;
	return 0;
}

int
brq_config_parse_bool(const char *s, bool *out, const char **why)
{
	static const char *const yes[] = {"true", "1", "yes"};
	static const char *const no[]  = {"false", "0", "no"};
	for (size_t i = 0; s != NULL && i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	*why = "not a boolean (use true/false, 1/0 or yes/no)";
	return BRQ_EINVAL;
}

// Renders v with the largest unit of `units` that divides it ("90s", "2m",
// "1500ms"; "16MiB"); units[0] has factor 1 and names what is left.
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
brq_config_fmt_duration(char *buf, size_t cap, uint64_t ms)
{
	return fmt_units(buf, cap, ms, duration_units, sizeof(duration_units) / sizeof(duration_units[0]));
}

const char *
brq_config_fmt_size(char *buf, size_t cap, uint64_t b)
{
	return fmt_units(buf, cap, b, size_units, sizeof(size_units) / sizeof(size_units[0]));
}

bool
brq_config_host_is_loopback(const char *host)
{
	struct in_addr  a4;
	struct in6_addr a6;
	if (strcasecmp(host, "localhost") == 0) {
		return true;
	}
	if (inet_pton(AF_INET, host, &a4) == 1) {
		return (ntohl(a4.s_addr) >> 24) == 127;
	}
	if (inet_pton(AF_INET6, host, &a6) == 1) {
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	}
	return false;
}
