// SPDX-License-Identifier: MIT
// Structured logging: formats one logfmt line per event and writes it with one write(2).
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// Appended to a line that did not fit; the budget below reserves room for it.
#define TRUNC_MARK     " truncated=true"
#define TRUNC_MARK_LEN (sizeof(TRUNC_MARK) - 1)

// Event names are short identifiers; a longer one is cut by brq_log_quote().
#define MSG_QUOTE_MAX 128

static _Atomic int log_level  = BRQ_LOG_LVL_INFO;
static _Atomic int log_fd     = STDERR_FILENO;
static _Atomic int journal_fd = -1; // lines to this fd get a "<N>" priority prefix

// syslog(3) priorities of the levels, as journald reads them from "<N>" prefixes.
static const char level_prio[] = {
	[BRQ_LOG_LVL_DEBUG] = '7',
	[BRQ_LOG_LVL_INFO]  = '6',
	[BRQ_LOG_LVL_WARN]  = '4',
	[BRQ_LOG_LVL_ERROR] = '3',
};

static const char *const level_names[] = {
	[BRQ_LOG_LVL_DEBUG] = "debug",
	[BRQ_LOG_LVL_INFO]  = "info",
	[BRQ_LOG_LVL_WARN]  = "warn",
	[BRQ_LOG_LVL_ERROR] = "error",
};

static bool
is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static bool
needs_quote(const char *s)
{
	if (*s == '\0') {
		return true;
	}
	for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++) {
		if (*p == ' ' || *p == '"' || *p == '=' || *p == '\\' || is_ctl(*p)) {
			return true;
		}
	}
	return false;
}

// Writes the escaped form of c into out (room for 4 bytes); returns its length.
static size_t
escape_byte(unsigned char c, char out[4])
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '"': memcpy(out, "\\\"", 2); return 2;
	case '\\': memcpy(out, "\\\\", 2); return 2;
	case '\n': memcpy(out, "\\n", 2); return 2;
	case '\r': memcpy(out, "\\r", 2); return 2;
	case '\t': memcpy(out, "\\t", 2); return 2;
	default: break;
	}
	if (is_ctl(c)) {
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 0x0f];
		return 4;
	}
	out[0] = (char) c;
	return 1;
}

static bool
is_utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

// Copies an unquoted value, cutting it (at a UTF-8 boundary) with "..." if needed.
static void
copy_plain(char *buf, size_t cap, const char *val)
{
	size_t len = strlen(val);
	if (len < cap) {
		memcpy(buf, val, len + 1);
		return;
	}
	size_t keep = cap - 4; // "..." + NUL
	while (keep > 0 && is_utf8_cont((unsigned char) val[keep])) {
		keep--;
	}
	memcpy(buf, val, keep);
	memcpy(buf + keep, "...", 4);
}

// Copies a value in double quotes with escapes, cutting it with `..."` if needed.
static void
copy_quoted(char *buf, size_t cap, const char *val)
{
	const unsigned char *in = (const unsigned char *) val;
	char                 esc[4];
	size_t               need = 3; // two quotes + NUL
	for (const unsigned char *p = in; *p != '\0'; p++) {
		need += escape_byte(*p, esc);
	}
	bool   cut   = need > cap;
	size_t limit = cut ? cap - 5 : cap - 2; // room left for `..."`+NUL or `"`+NUL

	size_t pos = 0;
	buf[pos++] = '"';
	size_t i   = 0;
	for (; in[i] != '\0'; i++) {
		size_t n = escape_byte(in[i], esc);
		if (pos + n > limit) {
			break;
		}
		memcpy(buf + pos, esc, n);
		pos += n;
	}
	if (cut) {
		// Do not leave half a UTF-8 sequence: drop the lead and continuation bytes
		// of the character we stopped inside (each was emitted as one raw byte).
		while (i > 0 && is_utf8_cont(in[i])) {
			i--;
			pos--;
		}
		memcpy(buf + pos, "...", 3);
		pos += 3;
	}
	buf[pos++] = '"';
	buf[pos]   = '\0';
}

char *
brq_log_quote(char *buf, size_t cap, const char *val)
{
	if (cap < 8) {
		if (cap > 0) {
			buf[0] = '\0';
		}
		return buf;
	}
	if (val == NULL) {
		val = "(null)";
	}
	if (needs_quote(val)) {
		copy_quoted(buf, cap, val);
	} else {
		copy_plain(buf, cap, val);
	}
	return buf;
}

void
brq_log_set_level(brq_log_level level)
{
	atomic_store_explicit(&log_level, (int) level, memory_order_relaxed);
}

brq_log_level
brq_log_get_level(void)
{
	return (brq_log_level) atomic_load_explicit(&log_level, memory_order_relaxed);
}

int
brq_log_parse_level(const char *s, brq_log_level *out)
{
	if (s == NULL) {
		return BRQ_EINVAL;
	}
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (brq_log_level) i;
			return 0;
		}
	}
	return BRQ_EINVAL;
}

const char *
brq_log_level_name(brq_log_level level)
{
	if ((int) level < 0 || (size_t) level >= sizeof(level_names) / sizeof(level_names[0])) {
		return "unknown";
	}
	return level_names[level];
}

bool
brq_log_enabled(brq_log_level level)
{
	return (int) level >= atomic_load_explicit(&log_level, memory_order_relaxed);
}

int
brq_log_set_fd(int fd)
{
	return atomic_exchange(&log_fd, fd);
}

bool
brq_log_detect_journal(int fd)
{
	const char *v = getenv("JOURNAL_STREAM");
	uintmax_t   dev, ino;
	char        end;
	struct stat st;

	// systemd sets JOURNAL_STREAM=<st_dev>:<st_ino> of the stream it connected to
	// stdout/stderr. A mismatch means stderr was redirected (a file, a pipe):
	// prefixes there would be noise.
	bool is_journal = v != NULL && sscanf(v, "%ju:%ju%c", &dev, &ino, &end) == 2 && fstat(fd, &st) == 0 &&
		(uintmax_t) st.st_dev == dev && (uintmax_t) st.st_ino == ino;
	atomic_store(&journal_fd, is_journal ? fd : -1);
	return is_journal;
}

// Appends c to buf[*n] while there is room before the NUL.
static void
ts_put(char *buf, size_t cap, size_t *n, char c)
{
	if (*n + 1 < cap)
		buf[(*n)++] = c;
}

// Appends v as exactly `width` decimal digits (leading zeros).
static void
ts_digits(char *buf, size_t cap, size_t *n, uint64_t v, int width)
{
	char d[20];
	for (int i = width - 1; i >= 0; i--, v /= 10)
		d[i] = (char) ('0' + v % 10);
	for (int i = 0; i < width; i++)
		ts_put(buf, cap, n, d[i]);
}

size_t
brq_log_format_ts(char *buf, size_t cap)
{
	struct timespec ts;
	size_t          n = 0;
	if (cap == 0)
		return 0;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0) {
		for (const char *p = "ts=unknown"; *p != '\0'; p++)
			ts_put(buf, cap, &n, *p);
		buf[n] = '\0';
		return n;
	}
	// Days since 1970-01-01 to the proleptic Gregorian date (civil_from_days).
	uint64_t secs = (uint64_t) ts.tv_sec, z = secs / 86400 + 719468;
	uint64_t era = z / 146097, doe = z - era * 146097;
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	uint64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	uint64_t y = yoe + era * 400 + (m <= 2), s = secs % 86400;
	const struct {
		char     sep;
		uint64_t v;
		int      width;
	} parts[] = {{'=', y, 4},
		     {'-', m, 2},
		     {'-', d, 2},
		     {'T', s / 3600, 2},
		     {':', s / 60 % 60, 2},
		     {':', s % 60, 2},
		     {'.', (uint64_t) ts.tv_nsec / 1000000, 3}};
	ts_put(buf, cap, &n, 't');
	ts_put(buf, cap, &n, 's');
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		ts_put(buf, cap, &n, parts[i].sep);
		ts_digits(buf, cap, &n, parts[i].v, parts[i].width);
	}
	ts_put(buf, cap, &n, 'Z');
	buf[n] = '\0';
	return n;
}

// Cuts the field section buf[start, *len) so that TRUNC_MARK still fits in a line of
// BRQ_LOG_LINE_MAX bytes (with '\n'), closing a quoted value left open by the cut.
static void
cut_fields(char *buf, size_t start, size_t *len)
{
	size_t end = BRQ_LOG_LINE_MAX - 1 - TRUNC_MARK_LEN - 1; // '\n', mark, '"'
	if (*len < end) {
		end = *len;
	}
	bool in_quote = false;
	bool escaped  = false;
	for (size_t i = start; i < end; i++) {
		if (escaped) {
			escaped = false;
		} else if (in_quote && buf[i] == '\\') {
			escaped = true;
		} else if (buf[i] == '"') {
			in_quote = !in_quote;
		}
	}
	if (escaped) {
		end--; // a lone backslash would escape our closing quote
	}
	if (in_quote) {
		buf[end++] = '"';
	}
	memcpy(buf + end, TRUNC_MARK, TRUNC_MARK_LEN);
	*len = end + TRUNC_MARK_LEN;
}

static void
write_all(int fd, const char *buf, size_t len)
{
	// One write(2) in practice: len <= PIPE_BUF. The loop only covers EINTR and the
	// short writes a full disk or a non-pipe fd may produce; nothing else to do then.
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			return;
		}
		buf += n;
		len -= (size_t) n;
	}
}

void
brq_log_write(brq_log_level level, const char *msg, const char *fmt, ...)
{
	char   line[BRQ_LOG_LINE_MAX];
	char   qmsg[MSG_QUOTE_MAX];
	int    saved_errno = errno; // callers often log right before reporting errno
	int    fd          = atomic_load(&log_fd);
	size_t len         = 0;

	if (fd == atomic_load(&journal_fd) && (int) level >= 0 && (size_t) level < sizeof(level_prio)) {
		line[len++] = '<';
		line[len++] = level_prio[level];
		line[len++] = '>';
	}
	len += brq_log_format_ts(line + len, sizeof(line) - len);
	int n = snprintf(line + len, sizeof(line) - len, " level=%s msg=%s", brq_log_level_name(level),
			 brq_log_quote(qmsg, sizeof(qmsg), msg));
	len += (size_t) n; // bounded: ts (~30) + level (5) + msg (< 128) << line

	if (fmt != NULL && fmt[0] != '\0') {
		size_t  start = len + 1;
		size_t  room  = sizeof(line) - start; // includes the NUL; '\n' replaces it
		va_list ap;
		va_start(ap, fmt);
		n = vsnprintf(line + start, room, fmt, ap);
		va_end(ap);
		if (n > 0) {
			line[len]   = ' ';
			size_t flen = (size_t) n < room ? (size_t) n : room - 1;
			for (size_t i = start; i < start + flen; i++) {
				if (is_ctl((unsigned char) line[i])) {
					line[i] = '?';
				}
			}
			len = start + flen;
			if ((size_t) n >= room) {
				cut_fields(line, start, &len);
			}
		}
	}
	line[len++] = '\n';
	write_all(fd, line, len);
	errno = saved_errno;
}
