// SPDX-License-Identifier: MIT
// Value parsers of the gateway configuration (booleans, hosts; durations, sizes and integers are
// common/brq_units.h's) and its problem list.
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
brq_config_problems_init(brq_config_problems *p)
{
	memset(p, 0, sizeof(*p));
}

void
brq_config_problems_fini(brq_config_problems *p)
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
brq_config_problem_add(brq_config_problems *p, const char *fmt, ...)
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
