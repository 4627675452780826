// SPDX-License-Identifier: MIT
// The last words of a gateway that crashes (crash.h). Everything the handler calls is
// async-signal-safe: no stdio, no malloc, no locks; the time is formatted by hand
// because gmtime_r() takes glibc's time-zone lock.
#include "crash.h"

#include "brq_sanitized.h"

#include <execinfo.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FRAMES_MAX 64

static int  crash_fd = 2;
static bool crash_journal;

typedef struct line {
	char   buf[256];
	size_t len;
} line;

static void
put(line *l, const char *s)
{
	size_t n = strlen(s);
	if (n > sizeof(l->buf) - l->len)
		n = sizeof(l->buf) - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

// v in base 10 or 16, at least `width` digits.
static void
put_num(line *l, uint64_t v, unsigned base, int width)
{
	char tmp[24];
	int  n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0 && n < (int) sizeof(tmp));
	while (n < width && n < (int) sizeof(tmp))
		tmp[n++] = '0';
	while (n > 0 && l->len < sizeof(l->buf))
		l->buf[l->len++] = tmp[--n];
}

// "ts=YYYY-MM-DDTHH:MM:SS.mmmZ" from days since the epoch (civil-from-days, the
// proleptic Gregorian calendar), as log.c writes it.
static void
put_ts(line *l)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0) {
		put(l, "ts=unknown");
		return;
	}
	uint64_t secs = (uint64_t) ts.tv_sec, z = secs / 86400 + 719468;
	uint64_t era = z / 146097, doe = z - era * 146097;
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	uint64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	uint64_t y = yoe + era * 400 + (m <= 2), s = secs % 86400;
	put(l, "ts=");
	put_num(l, y, 10, 4);
	put(l, "-");
	put_num(l, m, 10, 2);
	put(l, "-");
	put_num(l, d, 10, 2);
	put(l, "T");
	put_num(l, s / 3600, 10, 2);
	put(l, ":");
	put_num(l, s / 60 % 60, 10, 2);
	put(l, ":");
	put_num(l, s % 60, 10, 2);
	put(l, ".");
	put_num(l, (uint64_t) ts.tv_nsec / 1000000, 10, 3);
	put(l, "Z");
}

static const char *
sig_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGABRT: return "SIGABRT";
	default: return "other";
	}
}

static void
on_fatal(int sig, siginfo_t *si, void *ctx)
{
	(void) ctx;
	line  l = {.len = 0};
	void *frames[FRAMES_MAX];
	if (crash_journal)
		put(&l, "<2>");
	put_ts(&l);
	put(&l, " level=error msg=fatal_signal signal=");
	put(&l, sig_name(sig));
	int code = si != NULL ? si->si_code : 0;
	put(&l, code < 0 ? " code=-" : " code=");
	put_num(&l, (uint64_t) (code < 0 ? -(int64_t) code : code), 10, 1);
	if (si != NULL && si->si_code <= 0) { // sent (kill, raise): by whom, not where
		put(&l, " sender_pid=");
		put_num(&l, (uint64_t) si->si_pid, 10, 1);
	} else if (si != NULL) {
		put(&l, " addr=0x");
		put_num(&l, (uint64_t) (uintptr_t) si->si_addr, 16, 1);
	}
	put(&l, " pid=");
	put_num(&l, (uint64_t) getpid(), 10, 1);
	put(&l, "\n");
	if (write(crash_fd, l.buf, l.len) < 0) {
		// Nowhere left to say it: the frames below fail the same way.
	}
	int n = backtrace(frames, FRAMES_MAX);
	backtrace_symbols_fd(frames, n, crash_fd);
	// SA_RESETHAND restored the default action: returning re-runs the faulting
	// instruction (SIGSEGV, SIGBUS, SIGILL, SIGFPE), raising it again ends the rest.
	if (sig == SIGABRT || (si != NULL && si->si_code <= 0))
		raise(sig);
}

void
brq_crash_install(int fd, bool journal)
{
	if (BRQ_SANITIZED) // AddressSanitizer's own report says more
		return;
	void *warm[1];
	crash_fd      = fd;
	crash_journal = journal;
	// The first backtrace() loads libgcc_s (malloc, dlopen): do it now, not in a handler.
	(void) backtrace(warm, 1);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal;
	sa.sa_flags     = SA_SIGINFO | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		(void) sigaction(sigs[i], &sa, NULL);
}
