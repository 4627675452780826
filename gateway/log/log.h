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
// Under systemd (JOURNAL_STREAM names the log fd, see brq_log_detect_journal()) each
// line starts with a syslog priority, "<4>ts=...", so that `journalctl -p warning`
// sees the levels; journald strips the prefix.
//
// Rate limits: events a peer can trigger at will (auth_failed) go through a
// brq_log_limit: the first `burst` per interval are written, the rest are
// counted and reported by one "log_suppressed" line (metrics still count each one).
//
// Secrets: never pass tokens, DSNs or payloads. Values that may contain spaces, '"',
// '=' or control characters must go through brq_log_quote() (or BRQ_LOG_Q()).
#ifndef BRQ_GATEWAY_LOG_H
#define BRQ_GATEWAY_LOG_H

#include "brq_base.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
typedef enum brq_log_level brq_log_level;

// Sets the global minimum level (default: info). Events below it are dropped before
// their arguments are formatted.
void brq_log_set_level(brq_log_level level);

brq_log_level brq_log_get_level(void);

// Parses "debug", "info", "warn" or "error" (exact, lowercase). Returns 0 and writes
// *out on success; BRQ_EINVAL (out untouched) otherwise.
BRQ_MUSTCHECK int brq_log_parse_level(const char *s, brq_log_level *out);

// Wire name of a level ("debug" ...); "unknown" for out-of-range values.
const char *brq_log_level_name(brq_log_level level);

// True if an event at `level` would be written.
bool brq_log_enabled(brq_log_level level);

// Output seam: lines go to this fd (default STDERR_FILENO). Returns the previous fd.
// The fd stays owned by the caller; the logger never closes it. Tests point it at a
// pipe and read the lines back.
int brq_log_set_fd(int fd);

// Checks $JOURNAL_STREAM ("<st_dev>:<st_ino>", set by systemd when stdout/stderr is
// connected to the journal) against fstat(fd). On a match, lines written to fd from
// now on start with "<N>" (N = syslog priority: debug 7, info 6, warn 4, error 3);
// otherwise (unset, malformed, or fd redirected elsewhere) they carry no prefix.
// Returns whether the prefix is on. Call at start, before threads log.
bool brq_log_detect_journal(int fd);

// Writes "ts=YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC, now) into buf, cut to cap - 1 bytes and
// NUL-terminated; returns its length. Async-signal-safe (no locks, no allocation: the
// calendar is computed by hand, gmtime_r() takes glibc's time-zone lock), so
// crash.c's last line uses it too.
size_t brq_log_format_ts(char *buf, size_t cap);

// Writes one event. `msg` is the event name (quoted if needed); `fmt` (printf-style,
// may be NULL for "no fields") formats the fields, e.g. "op=%s req=%s". Any control
// character produced by `fmt` is replaced by '?' so that one call is always one line.
// Does not check the level: use the BRQ_LOG_* macros.
void brq_log_write(brq_log_level level, const char *msg, const char *fmt, ...)
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

typedef struct brq_log_limit brq_log_limit;

// One rate limit for one kind of event. Define it static, with BRQ_LOG_LIMIT_INIT;
// it must live as long as the process (the flush list keeps a pointer to it).
// Fields after interval_ms are private to log_limit.c, guarded by mtx.
struct brq_log_limit {
	const char   *event;       // event name, named by the summary line
	brq_log_level level;       // level of the summary line (the event's level)
	uint32_t      burst;       // lines written per window
	uint32_t      interval_ms; // window length

	pthread_mutex_t mtx;
	uint64_t        window_ms;     // brq_now_ms() when the window opened; 0: no window
	uint32_t        written;       // lines written in the window
	uint64_t        suppressed;    // events dropped in the window, not yet reported
	brq_log_limit  *next;          // flush list (guarded by the list's lock)
	_Atomic(bool)   is_registered; // on the flush list
};

#define BRQ_LOG_LIMIT_INIT(ev, lvl, n, ms)                                        \
	{                                                                         \
		.event = (ev), .level = (lvl), .burst = (n), .interval_ms = (ms), \
		.mtx = PTHREAD_MUTEX_INITIALIZER                                  \
	}

// Counts one event against lim. Returns true when it may be written (one of the first
// `burst` of its window). An event after the window ended first writes the summary of
// the window ("msg=log_suppressed event=E suppressed=N interval_ms=I") if events were
// dropped, then opens a new window. Any thread.
bool brq_log_limit_take(brq_log_limit *lim);

// Writes the summary of every limit whose window has ended (or every limit, when
// is_final) with dropped events, and closes those windows. Call about once a second
// (the gateway's main loop does) and once at exit with is_final. Any thread.
void brq_log_limit_flush(bool is_final);

// Like BRQ_LOG_AT, through a rate limit: arguments are evaluated only for lines that
// are written.
#define BRQ_LOG_LIMITED(lim, lvl, msg, ...)                          \
	do {                                                         \
		if (brq_log_enabled(lvl) && brq_log_limit_take(lim)) \
			brq_log_write((lvl), (msg), __VA_ARGS__);    \
	} while (0)

#define BRQ_LOG_DEBUG(msg, ...) BRQ_LOG_AT(BRQ_LOG_LVL_DEBUG, msg, __VA_ARGS__)
#define BRQ_LOG_INFO(msg, ...)  BRQ_LOG_AT(BRQ_LOG_LVL_INFO, msg, __VA_ARGS__)
#define BRQ_LOG_WARN(msg, ...)  BRQ_LOG_AT(BRQ_LOG_LVL_WARN, msg, __VA_ARGS__)
#define BRQ_LOG_ERROR(msg, ...) BRQ_LOG_AT(BRQ_LOG_LVL_ERROR, msg, __VA_ARGS__)

// --- the last words of a crash (crash.c) ------------------------------------------
// A gateway that crashes writes its last words: one logfmt line naming the signal, then the
// stack of the thread that crashed, written to the log's fd before the default action
// (a core dump, where the system keeps them) ends the process.
//
// Without it a crash leaves a log that simply stops, and nobody can tell a crash from
// a kill. The frames are backtrace_symbols_fd(3)'s lines, "binary(+0xoffset)[0xaddr]",
// which addr2line -e brooq-gateway reads.
//
// Not installed in sanitizer builds: their own reports say more.

// Installs the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (once, before
// threads start). Each handler runs once (SA_RESETHAND), writes to fd (with journald's
// "<2>" priority prefix when journal), and re-raises.
void brq_crash_install(int fd, bool journal);

#endif // BRQ_GATEWAY_LOG_H
