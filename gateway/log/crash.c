// SPDX-License-Identifier: MIT
// The last words of a gateway that crashes (log.h, its last section). Everything the handler calls is
// async-signal-safe: no stdio, no malloc, no locks (the time: brq_log_format_ts()).

#include "brq_sanitized.h"
#include "log.h"

#include <execinfo.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
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

// v in base 10 or 16.
static void
put_num(line *l, uint64_t v, unsigned base)
{
	char tmp[24];
	int  n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0 && n < (int) sizeof(tmp));
	while (n > 0 && l->len < sizeof(l->buf))
		l->buf[l->len++] = tmp[--n];
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
	l.len += brq_log_format_ts(l.buf + l.len, sizeof(l.buf) - l.len);
	put(&l, " level=error msg=fatal_signal signal=");
	put(&l, sig_name(sig));
	int code = si != NULL ? si->si_code : 0;
	put(&l, code < 0 ? " code=-" : " code=");
	put_num(&l, (uint64_t) (code < 0 ? -(int64_t) code : code), 10);
	if (si != NULL && si->si_code <= 0) { // sent (kill, raise): by whom, not where
		put(&l, " sender_pid=");
		put_num(&l, (uint64_t) si->si_pid, 10);
	} else if (si != NULL) {
		put(&l, " addr=0x");
		put_num(&l, (uint64_t) (uintptr_t) si->si_addr, 16);
	}
	put(&l, " pid=");
	put_num(&l, (uint64_t) getpid(), 10);
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
