// SPDX-License-Identifier: MIT
// Structured logging: one key=value line per event, written to stderr.
//
// Line format (logfmt):
//
//   ts=2026-11-30T12:00:00.123Z level=info msg=startup listen=ipc:///run/brooq/gateway.sock
//
// `ts` is UTC with milliseconds, `level` one of debug|info|warn|error, `msg` the event
// name (use the same names as the metrics), then the caller's fields.
//
// Thread safety: every call formats into a stack buffer and emits the whole line with
// one write(2), so lines from different threads never interleave (lines are at most
// BRQ_LOG_LINE_MAX bytes, which is <= PIPE_BUF, so this holds for pipes and journald
// stream sockets as well). The level and the output fd are atomics; they may be changed
// at any time.
//
// Secrets: never pass tokens, DSNs or payloads. Values that may contain spaces, '"',
// '=' or control characters must go through brq_log_quote() (or BRQ_LOG_Q()).
#ifndef BRQ_GATEWAY_LOG_H
#define BRQ_GATEWAY_LOG_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>

// Maximum length of one line including the trailing '\n'. Longer lines are cut and end
// in " truncated=true" (an open quoted value is closed first).
#define BRQ_LOG_LINE_MAX 4096

// Buffer size used by BRQ_LOG_Q(); longer values are cut (see brq_log_quote()).
#define BRQ_LOG_QUOTE_MAX 512

enum brq_log_level {
	BRQ_LOG_LVL_DEBUG = 0,
	BRQ_LOG_LVL_INFO  = 1,
	BRQ_LOG_LVL_WARN  = 2,
	BRQ_LOG_LVL_ERROR = 3,
};

// Sets the global minimum level (default: info). Events below it are dropped before
// their arguments are formatted.
void brq_log_set_level(enum brq_log_level level);

enum brq_log_level brq_log_get_level(void);

// Parses "debug", "info", "warn" or "error" (exact, lowercase). Returns 0 and writes
// *out on success; -EINVAL (out untouched) otherwise.
BRQ_MUSTCHECK int brq_log_parse_level(const char *s, enum brq_log_level *out);

// Wire name of a level ("debug" ...); "unknown" for out-of-range values.
const char *brq_log_level_name(enum brq_log_level level);

// True if an event at `level` would be written.
bool brq_log_enabled(enum brq_log_level level);

// Output seam: lines go to this fd (default STDERR_FILENO). Returns the previous fd.
// The fd stays owned by the caller; the logger never closes it. Tests point it at a
// pipe and read the lines back.
int brq_log_set_fd(int fd);

// Writes one event. `msg` is the event name (quoted if needed); `fmt` (printf-style,
// may be NULL for "no fields") formats the fields, e.g. "op=%s req=%s". Any control
// character produced by `fmt` is replaced by '?' so that one call is always one line.
// Does not check the level: use the BRQ_LOG_* macros.
void brq_log_write(enum brq_log_level level, const char *msg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

// Renders `val` as a logfmt value into buf (capacity cap >= 8) and returns buf.
// Values that are non-empty and contain no space, '"', '=', '\\', or control
// characters (bytes < 0x20 and 0x7f) are copied as they are; others are wrapped in
// double quotes with '"' and '\\' backslash-escaped, \n \r \t spelled as such and other
// control bytes as \xHH. Bytes >= 0x80 pass through (UTF-8). A value that does not
// fit is cut at an escape boundary and ends in "..." (still closed by its quote when
// quoted). NULL renders as "(null)". Never fails.
char *brq_log_quote(char *buf, size_t cap, const char *val);

// Quotes `val` into a temporary buffer that lives until the end of the enclosing
// block: BRQ_LOG_INFO("listen", "addr=%s", BRQ_LOG_Q(addr));
#define BRQ_LOG_Q(val) brq_log_quote((char[BRQ_LOG_QUOTE_MAX]) {0}, BRQ_LOG_QUOTE_MAX, (val))

// The level is tested BEFORE the arguments are evaluated or formatted. Usage:
//   BRQ_LOG_INFO("startup", "pool_size=%u", n);
//   BRQ_LOG_WARN("retention_backlog", NULL);
#define BRQ_LOG_AT(lvl, msg, ...)                                 \
	do {                                                      \
		if (brq_log_enabled(lvl))                         \
			brq_log_write((lvl), (msg), __VA_ARGS__); \
	} while (0)

#define BRQ_LOG_DEBUG(msg, ...) BRQ_LOG_AT(BRQ_LOG_LVL_DEBUG, msg, __VA_ARGS__)
#define BRQ_LOG_INFO(msg, ...)  BRQ_LOG_AT(BRQ_LOG_LVL_INFO, msg, __VA_ARGS__)
#define BRQ_LOG_WARN(msg, ...)  BRQ_LOG_AT(BRQ_LOG_LVL_WARN, msg, __VA_ARGS__)
#define BRQ_LOG_ERROR(msg, ...) BRQ_LOG_AT(BRQ_LOG_LVL_ERROR, msg, __VA_ARGS__)

#endif // BRQ_GATEWAY_LOG_H
