/* SPDX-License-Identifier: MIT */
/* brooqctl output and argument helpers: integers, JSON strings, UTC timestamps. */
#include "fmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "brq_units.h"

int
brq_ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *why;
	uint64_t    v;
	if (brq_parse_u64(s, &v, &why) != 0 || v < min || v > max)
		return BRQ_EINVAL;
	*out = v;
	return 0;
}

void
brq_ctl_json_str(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char) s[i];
		switch (ch) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (ch < 0x20 || ch == 0x7f)
				fprintf(f, "\\u%04x", ch);
			else
				fputc(ch, f);
		}
	}
	fputc('"', f);
}

void
brq_ctl_json_cstr(FILE *f, const char *s)
{
	if (s == NULL)
		fputs("null", f);
	else
		brq_ctl_json_str(f, s, strlen(s));
}

void
brq_ctl_print_safe(FILE *f, const char *s)
{
	if (s == NULL) {
		fputc('-', f);
		return;
	}
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char) *s;
		if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
}

void
brq_ctl_iso8601(int64_t ms, char *buf, size_t cap)
{
	int64_t   sec = ms / 1000, rem = ms % 1000;
	struct tm tm;
	if (rem < 0) {
		rem += 1000;
		sec -= 1;
	}
	time_t t = (time_t) sec;
	if (gmtime_r(&t, &tm) == NULL) {
		snprintf(buf, cap, "%lld", (long long) ms);
		return;
	}
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int) rem);
}

void
brq_ctl_human_ms(uint64_t ms, char *buf, size_t cap)
{
	if (ms < 1000)
		snprintf(buf, cap, "%llums", (unsigned long long) ms);
	else if (ms < 60000)
		snprintf(buf, cap, "%.1fs", (double) ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, cap, "%llum%02llus", (unsigned long long) (ms / 60000),
			 (unsigned long long) (ms % 60000 / 1000));
	else
		snprintf(buf, cap, "%lluh%02llum", (unsigned long long) (ms / 3600000),
			 (unsigned long long) (ms % 3600000 / 60000));
}
