/* SPDX-License-Identifier: MIT */
/* brooqctl output and argument helpers: integers, JSON strings and members. */
#include "fmt.h"

#include <stdio.h>
#include <string.h>

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
brq_ctl_json_instant(FILE *f, const char *name, int64_t ms, bool has)
{
	char t[BRQ_TIME_TEXT_MAX];
	if (!has) {
		fprintf(f, ",\"%s_ms\":null,\"%s\":null", name, name);
		return;
	}
	fprintf(f, ",\"%s_ms\":%lld,\"%s\":\"%s\"", name, (long long) ms, name,
		brq_fmt_time_ms(t, sizeof(t), ms));
}

void
brq_ctl_json_opt_u64(FILE *f, const char *name, uint64_t v, bool has)
{
	if (has)
		fprintf(f, ",\"%s\":%llu", name, (unsigned long long) v);
	else
		fprintf(f, ",\"%s\":null", name);
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
