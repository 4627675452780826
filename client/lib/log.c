/* SPDX-License-Identifier: MIT */
/* libbrooq-client log events: the sink a client was opened with, and the default stderr line. */
#include "log.h"

#include "client.h"

#include <stdio.h>
#include <string.h>

/* A line longer than this is cut (a gateway message is at most 1 KiB). */
#define LINE_MAX_BYTES 2048

typedef struct line {
	char   buf[LINE_MAX_BYTES];
	size_t n;
} line;

static void
put(line *l, const char *s, size_t len)
{
	if (l->n + len >= sizeof(l->buf))
		len = sizeof(l->buf) - 1 - l->n;
	memcpy(l->buf + l->n, s, len);
	l->n += len;
}

static void
puts_(line *l, const char *s)
{
	put(l, s, strlen(s));
}

/* A value as is when it is a plain word, else quoted with \" \\ and \xNN escapes. */
static void
put_value(line *l, const char *v)
{
	bool plain = v[0] != '\0';
	for (const unsigned char *p = (const unsigned char *) v; *p != '\0' && plain; p++)
		plain = *p > 0x20 && *p != 0x7f && *p != '"' && *p != '=' && *p != '\\';
	if (plain) {
		puts_(l, v);
		return;
	}
	put(l, "\"", 1);
	for (const unsigned char *p = (const unsigned char *) v; *p != '\0'; p++) {
		char esc[8];
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char) *p;
			put(l, esc, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			puts_(l, esc);
		} else {
			put(l, (const char *) p, 1);
		}
	}
	put(l, "\"", 1);
}

const char *
brooq_log_level_name(brooq_log_level level)
{
	switch (level) {
	case BROOQ_LOG_DEBUG: return "debug";
	case BROOQ_LOG_INFO: return "info";
	case BROOQ_LOG_WARN: return "warn";
	case BROOQ_LOG_ERROR: return "error";
	}
	return "unknown";
}

/* One line, written with one fputs so that lines from several threads do not mix. */
void
brooq_log_stderr(brooq_log_level level, const char *msg, const brooq_log_field *fields, size_t n_fields,
		 void *arg)
{
	line l = {.n = 0};
	(void) arg;
	puts_(&l, "level=");
	puts_(&l, brooq_log_level_name(level));
	puts_(&l, " msg=");
	put_value(&l, msg != NULL ? msg : "");
	for (size_t i = 0; i < n_fields; i++) {
		put(&l, " ", 1);
		puts_(&l, fields[i].key != NULL ? fields[i].key : "field");
		put(&l, "=", 1);
		put_value(&l, fields[i].value != NULL ? fields[i].value : "");
	}
	if (l.n == sizeof(l.buf) - 1)
		l.n = sizeof(l.buf) - 2; /* room for the newline of a cut line */
	l.buf[l.n++] = '\n';
	l.buf[l.n]   = '\0';
	fputs(l.buf, stderr);
}

void
brq_log(const brooq_client *c, brooq_log_level level, const char *msg, const brooq_log_field *fields,
	size_t n)
{
	c->log(level, msg, fields, n, c->log_arg);
}

const char *
brq_log_u64(char *buf, uint64_t v)
{
	snprintf(buf, 24, "%llu", (unsigned long long) v);
	return buf;
}
