// SPDX-License-Identifier: MIT
// Tests for gateway/log/log.c and log_limit.c: line format, quoting, levels, one line per call, journald
// priorities, rate limits.
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log/log.h"

// Every test runs in its own process (Criterion forks), so the global level and fd
// set here do not leak between tests.
static int pipe_fds[2] = {-1, -1};

static void
capture(void)
{
	cr_assert_eq(pipe(pipe_fds), 0);
	cr_assert_eq(fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK), 0);
	brq_log_set_fd(pipe_fds[1]);
}

static void
uncapture(void)
{
	brq_log_set_fd(STDERR_FILENO);
	for (int i = 0; i < 2; i++) {
		if (pipe_fds[i] >= 0) {
			close(pipe_fds[i]);
			pipe_fds[i] = -1;
		}
	}
}

// Everything written so far (NUL-terminated, static buffer).
static const char *
captured(void)
{
	static char buf[65536];
	size_t      len = 0;
	for (;;) {
		ssize_t n = read(pipe_fds[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) {
			break;
		}
		len += (size_t) n;
	}
	buf[len] = '\0';
	return buf;
}

static size_t
count_char(const char *s, char c)
{
	size_t n = 0;
	for (; *s != '\0'; s++) {
		n += *s == c;
	}
	return n;
}

static bool
matches(const char *re, const char *s)
{
	regex_t rx;
	cr_assert_eq(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0, "bad regex %s", re);
	int rc = regexec(&rx, s, 0, NULL, 0);
	regfree(&rx);
	return rc == 0;
}

TestSuite(log, .init = capture, .fini = uncapture);

Test(log, writes_timestamp_level_event_and_fields_on_one_line)
{
	BRQ_LOG_INFO("startup", "pool_size=%d listen=%s", 4, "ipc:///tmp/x.sock");
	const char *out = captured();
	cr_assert(matches("^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
			  "level=info msg=startup pool_size=4 listen=ipc:///tmp/x.sock\n$",
			  out),
		  "got: %s", out);
}

/* The timestamp is formatted by hand (async-signal-safe, for crash.c): it is the
 * current UTC time to the second, as gmtime_r and strftime give it, and cut, not
 * overrun, in a short buffer. */
Test(log, the_timestamp_is_now_in_utc)
{
	char got[64], before[40], after[40], tiny[8];
	for (int i = 0; i < 3; i++) {
		time_t    t0 = time(NULL);
		size_t    n  = brq_log_format_ts(got, sizeof(got));
		time_t    t1 = time(NULL);
		struct tm a, b;
		gmtime_r(&t0, &a);
		gmtime_r(&t1, &b);
		strftime(before, sizeof(before), "ts=%Y-%m-%dT%H:%M:%S.", &a);
		strftime(after, sizeof(after), "ts=%Y-%m-%dT%H:%M:%S.", &b);
		cr_assert_eq(n, strlen(got));
		cr_assert_eq(n, 27, "%s", got);
		cr_assert(strncmp(got, before, 23) == 0 || strncmp(got, after, 23) == 0, "%s, not %s or %s",
			  got, before, after);
		cr_assert(matches("^ts=[0-9-]{10}T[0-9:]{8}\\.[0-9]{3}Z$", got), "%s", got);
		usleep(300 * 1000);
	}
	memset(tiny, 'x', sizeof(tiny));
	cr_assert_eq(brq_log_format_ts(tiny, sizeof(tiny)), 7);
	cr_assert_eq(strlen(tiny), 7, "not NUL-terminated within its buffer");
	cr_assert_eq(strncmp(tiny, "ts=", 3), 0);
}

Test(log, writes_each_level_name)
{
	brq_log_set_level(BRQ_LOG_LVL_DEBUG);
	BRQ_LOG_DEBUG("a", "k=1");
	BRQ_LOG_INFO("b", "k=2");
	BRQ_LOG_WARN("c", "k=3");
	BRQ_LOG_ERROR("d", "k=4");
	const char *out = captured();
	cr_assert(matches(" level=debug msg=a k=1\n.* level=info msg=b k=2\n.* level=warn msg=c "
			  "k=3\n.* level=error msg=d k=4\n$",
			  out),
		  "got: %s", out);
	cr_assert_eq(count_char(out, '\n'), 4);
}

Test(log, accepts_an_event_without_fields)
{
	BRQ_LOG_WARN("retention_backlog", NULL);
	BRQ_LOG_WARN("retention_backlog", "%s", "");
	const char *out = captured();
	cr_assert(matches("level=warn msg=retention_backlog\n.*level=warn msg=retention_backlog\n$", out),
		  "got: %s", out);
}

Test(log, quotes_an_event_name_that_needs_it)
{
	BRQ_LOG_INFO("two words", NULL);
	cr_assert(matches("msg=\"two words\"\n$", captured()));
}

static int evaluations;

static int
observed(void)
{
	evaluations++;
	return 42;
}

Test(log, does_not_evaluate_or_format_arguments_below_the_level)
{
	brq_log_set_level(BRQ_LOG_LVL_WARN);
	BRQ_LOG_DEBUG("hidden", "v=%d", observed());
	BRQ_LOG_INFO("hidden", "v=%d", observed());
	cr_assert_eq(evaluations, 0);
	cr_assert_str_empty(captured());

	BRQ_LOG_WARN("shown", "v=%d", observed());
	BRQ_LOG_ERROR("shown", "v=%d", observed());
	cr_assert_eq(evaluations, 2);
	const char *out = captured();
	cr_assert_eq(count_char(out, '\n'), 2);
	cr_assert(matches("msg=shown v=42\n.*msg=shown v=42\n$", out));
}

Test(log, default_level_is_info)
{
	cr_assert_eq(brq_log_get_level(), BRQ_LOG_LVL_INFO);
	cr_assert_not(brq_log_enabled(BRQ_LOG_LVL_DEBUG));
	cr_assert(brq_log_enabled(BRQ_LOG_LVL_INFO));
	cr_assert(brq_log_enabled(BRQ_LOG_LVL_ERROR));
}

Test(log, parses_level_names_and_rejects_others)
{
	brq_log_level l = BRQ_LOG_LVL_ERROR;
	cr_assert_eq(brq_log_parse_level("debug", &l), 0);
	cr_assert_eq(l, BRQ_LOG_LVL_DEBUG);
	cr_assert_eq(brq_log_parse_level("info", &l), 0);
	cr_assert_eq(l, BRQ_LOG_LVL_INFO);
	cr_assert_eq(brq_log_parse_level("warn", &l), 0);
	cr_assert_eq(l, BRQ_LOG_LVL_WARN);
	cr_assert_eq(brq_log_parse_level("error", &l), 0);
	cr_assert_eq(l, BRQ_LOG_LVL_ERROR);
	const char *bad[] = {"", "INFO", "warning", "info ", "trace", "err"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_neq(brq_log_parse_level(bad[i], &l), 0, "accepted '%s'", bad[i]);
	}
	cr_assert_neq(brq_log_parse_level(NULL, &l), 0);
	cr_assert_eq(l, BRQ_LOG_LVL_ERROR, "output must be untouched on failure");
	cr_assert_str_eq(brq_log_level_name(BRQ_LOG_LVL_WARN), "warn");
	cr_assert_str_eq(brq_log_level_name((brq_log_level) 17), "unknown");
}

Test(log, quote_leaves_plain_values_alone_and_quotes_the_rest)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"plain", "plain"},
		{"ipc:///run/brooq/gateway.sock", "ipc:///run/brooq/gateway.sock"},
		{"h\xc3\xa9llo", "h\xc3\xa9llo"},
		{"", "\"\""},
		{"two words", "\"two words\""},
		{"a=b", "\"a=b\""},
		{"say \"hi\"", "\"say \\\"hi\\\"\""},
		{"back\\slash", "\"back\\\\slash\""},
		{"line\nbreak", "\"line\\nbreak\""},
		{"cr\rtab\t", "\"cr\\rtab\\t\""},
		{"bell\x07", "\"bell\\x07\""},
		{"del\x7f", "\"del\\x7f\""},
		{NULL, "(null)"},
	};
	char buf[64];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_str_eq(brq_log_quote(buf, sizeof(buf), cases[i].in), cases[i].want, "case %zu", i);
	}
	cr_assert_str_eq(BRQ_LOG_Q("x y"), "\"x y\"");
}

Test(log, quote_cuts_long_values_safely)
{
	char big[300];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	char buf[16];
	cr_assert_str_eq(brq_log_quote(buf, sizeof(buf), big), "aaaaaaaaaaaa...");

	memset(big, ' ', sizeof(big) - 1);
	cr_assert_str_eq(brq_log_quote(buf, sizeof(buf), big), "\"          ...\"");

	// An escape sequence is never split: "\"" is 2 bytes, so the cut falls before it.
	cr_assert_str_eq(brq_log_quote(buf, sizeof(buf), "abcdefghi\"\"\"\"\"\""), "\"abcdefghi...\"");

	// A UTF-8 character is never split (\xc3\xa9 is one character).
	cr_assert_str_eq(brq_log_quote(buf, sizeof(buf), "aaaaaaaaaaa\xc3\xa9zzzz"), "aaaaaaaaaaa...");
	cr_assert_str_eq(brq_log_quote(buf, sizeof(buf), " aaaaaaaa\xc3\xa9zzzz"), "\" aaaaaaaa...\"");

	// Too small a buffer gives an empty string, never an overflow.
	char tiny[4] = "xyz";
	cr_assert_str_eq(brq_log_quote(tiny, sizeof(tiny), "abc"), "");
}

Test(log, control_characters_from_the_format_cannot_start_a_new_line)
{
	BRQ_LOG_INFO("evil", "a=%s b=%s", "x\nts=forged level=error", "y\rz");
	const char *out = captured();
	cr_assert_eq(count_char(out, '\n'), 1, "got: %s", out);
	cr_assert(matches("msg=evil a=x\\?ts=forged level=error b=y\\?z\n$", out), "got: %s", out);
}

Test(log, one_call_is_one_line)
{
	for (int i = 0; i < 50; i++) {
		BRQ_LOG_INFO("tick", "i=%d", i);
	}
	const char *out = captured();
	cr_assert_eq(count_char(out, '\n'), 50);
	cr_assert(matches("msg=tick i=0\n", out));
	cr_assert(matches("msg=tick i=49\n$", out));
}

Test(log, truncates_a_long_line_to_the_limit_and_marks_it)
{
	static char big[10000];
	memset(big, 'x', sizeof(big) - 1);
	BRQ_LOG_INFO("big", "v=%s", big);
	const char *out = captured();
	size_t      len = strlen(out);
	cr_assert_leq(len, BRQ_LOG_LINE_MAX);
	cr_assert_eq(count_char(out, '\n'), 1);
	cr_assert(matches("msg=big v=x+ truncated=true\n$", out), "tail: %s", out + len - 40);
}

Test(log, truncation_closes_an_open_quoted_value)
{
	static char big[10000];
	memset(big, 'x', sizeof(big) - 1);
	big[0] = ' ';
	BRQ_LOG_INFO("big", "v=%s", BRQ_LOG_Q(big)); // quoted, then cut by BRQ_LOG_QUOTE_MAX
	BRQ_LOG_INFO("big", "v=\"%s\"", big);        // quoted by hand, cut by the line limit
	const char *out = captured();
	cr_assert_eq(count_char(out, '\n'), 2);
	const char *second = strchr(out, '\n') + 1;
	cr_assert(matches("v=\" x+\\.\\.\\.\"\n", out));
	cr_assert(matches("v=\" x+\" truncated=true\n$", second), "got tail: %s",
		  second + strlen(second) - 40);
	cr_assert_leq(strlen(second), BRQ_LOG_LINE_MAX);
	cr_assert_eq(count_char(second, '"') % 2, 0, "quotes must balance");
}

Test(log, keeps_errno)
{
	errno = ENOENT;
	BRQ_LOG_ERROR("open_failed", "path=%s", "/x");
	cr_assert_eq(errno, ENOENT);
}

struct writer_arg {
	int id;
};

static void *
writer(void *arg)
{
	const struct writer_arg *w = arg;
	for (int i = 0; i < 200; i++) {
		BRQ_LOG_INFO("concurrent", "thread=%d i=%d pad=%0300d", w->id, i, 0);
	}
	return NULL;
}

Test(log, lines_from_threads_never_interleave)
{
	char path[] = "/tmp/brq_log_test_XXXXXX";
	int  fd     = mkstemp(path);
	cr_assert_geq(fd, 0);
	int afd = open(path, O_WRONLY | O_APPEND);
	cr_assert_geq(afd, 0);
	brq_log_set_fd(afd);

	pthread_t         th[8];
	struct writer_arg args[8];
	for (int i = 0; i < 8; i++) {
		args[i].id = i;
		cr_assert_eq(pthread_create(&th[i], NULL, writer, &args[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
	}
	brq_log_set_fd(STDERR_FILENO);
	close(afd);

	FILE *f = fdopen(fd, "r");
	cr_assert_not_null(f);
	char    line[1024];
	int     n = 0;
	regex_t rx;
	cr_assert_eq(regcomp(&rx, "^ts=[^ ]+ level=info msg=concurrent thread=[0-7] i=[0-9]+ pad=0{300}\n$",
			     REG_EXTENDED | REG_NOSUB),
		     0);
	while (fgets(line, sizeof(line), f) != NULL) {
		cr_assert_eq(regexec(&rx, line, 0, NULL, 0), 0, "mangled line: %s", line);
		n++;
	}
	regfree(&rx);
	fclose(f);
	unlink(path);
	cr_assert_eq(n, 8 * 200);
}

// ---- journald priority prefixes ----------------------------------------------------------

static void
set_journal_stream_of(int fd)
{
	struct stat st;
	char        v[64];
	cr_assert_eq(fstat(fd, &st), 0);
	snprintf(v, sizeof(v), "%ju:%ju", (uintmax_t) st.st_dev, (uintmax_t) st.st_ino);
	cr_assert_eq(setenv("JOURNAL_STREAM", v, 1), 0);
}

Test(log, prefixes_syslog_priorities_when_journal_stream_names_the_fd)
{
	set_journal_stream_of(pipe_fds[1]);
	cr_assert(brq_log_detect_journal(pipe_fds[1]));
	brq_log_set_level(BRQ_LOG_LVL_DEBUG);
	BRQ_LOG_DEBUG("a", NULL);
	BRQ_LOG_INFO("b", NULL);
	BRQ_LOG_WARN("c", NULL);
	BRQ_LOG_ERROR("d", "k=%d", 1);
	const char *out = captured();
	cr_assert(matches("^<7>ts=[^ ]+ level=debug msg=a\n<6>ts=[^ ]+ level=info msg=b\n"
			  "<4>ts=[^ ]+ level=warn msg=c\n<3>ts=[^ ]+ level=error msg=d k=1\n$",
			  out),
		  "got: %s", out);
}

Test(log, no_prefix_when_stderr_is_redirected_elsewhere_or_the_variable_is_bad)
{
	int other[2];
	cr_assert_eq(pipe(other), 0);
	// The journal's stream is another fd (ours was redirected, e.g. 2>file).
	set_journal_stream_of(other[1]);
	cr_assert_not(brq_log_detect_journal(pipe_fds[1]));
	BRQ_LOG_WARN("c", NULL);
	const char *bad[] = {"", "1", "1:", ":1", "1:2:3", "x:y", "1:2x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(setenv("JOURNAL_STREAM", bad[i], 1), 0);
		cr_assert_not(brq_log_detect_journal(pipe_fds[1]), "JOURNAL_STREAM=%s", bad[i]);
	}
	unsetenv("JOURNAL_STREAM");
	cr_assert_not(brq_log_detect_journal(pipe_fds[1]));
	BRQ_LOG_WARN("d", NULL);
	const char *out = captured();
	cr_assert(matches("^ts=[^ ]+ level=warn msg=c\nts=[^ ]+ level=warn msg=d\n$", out), "got: %s", out);
	close(other[0]);
	close(other[1]);
}

// ---- rate limits ---------------------------------------------------------------------------

static size_t
count_lines_with(const char *out, const char *needle)
{
	size_t n = 0;
	for (const char *p = out; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
		n++;
	}
	return n;
}

// Sum of suppressed=N over every summary line for `event`.
static unsigned long long
suppressed_total(const char *out, const char *event)
{
	char               key[128];
	unsigned long long sum = 0;
	snprintf(key, sizeof(key), "msg=log_suppressed event=%s suppressed=", event);
	for (const char *p = out; (p = strstr(p, key)) != NULL; p += strlen(key)) {
		sum += strtoull(p + strlen(key), NULL, 10);
	}
	return sum;
}

static brq_log_limit burst_limit = BRQ_LOG_LIMIT_INIT("flood", BRQ_LOG_LVL_WARN, 5, 60000);

Test(log, a_limit_writes_the_first_burst_and_reports_the_rest_at_the_final_flush)
{
	for (int i = 0; i < 10000; i++) {
		BRQ_LOG_LIMITED(&burst_limit, BRQ_LOG_LVL_WARN, "flood", "i=%d", i);
	}
	brq_log_limit_flush(false); // the window (60 s) has not ended: nothing yet
	cr_assert_eq(count_lines_with(captured(), "msg=log_suppressed"), 0);
	brq_log_limit_flush(true);
	const char *out = captured();
	cr_assert_eq(count_lines_with(out, "msg=flood "), 0, "already read");
	cr_assert_eq(suppressed_total(out, "flood"), 9995, "got: %s", out);
	cr_assert(matches("^ts=[^ ]+ level=warn msg=log_suppressed event=flood suppressed=9995 "
			  "interval_ms=60000 burst=5\n$",
			  out),
		  "got: %s", out);
}

static brq_log_limit short_limit = BRQ_LOG_LIMIT_INIT("short", BRQ_LOG_LVL_WARN, 3, 100);

Test(log, a_limit_reports_at_the_next_event_after_the_window_and_at_a_periodic_flush)
{
	for (int i = 0; i < 50; i++) {
		BRQ_LOG_LIMITED(&short_limit, BRQ_LOG_LVL_WARN, "short", "i=%d", i);
	}
	usleep(150 * 1000);
	// The next event closes the window: its summary first, then a fresh burst.
	BRQ_LOG_LIMITED(&short_limit, BRQ_LOG_LVL_WARN, "short", "i=%d", 50);
	const char *out = captured();
	cr_assert(matches("^(ts=[^ ]+ level=warn msg=short i=[0-2]\n){3}"
			  "ts=[^ ]+ level=warn msg=log_suppressed event=short suppressed=47 [^\n]*\n"
			  "ts=[^ ]+ level=warn msg=short i=50\n$",
			  out),
		  "got: %s", out);
	for (int i = 51; i < 60; i++) {
		BRQ_LOG_LIMITED(&short_limit, BRQ_LOG_LVL_WARN, "short", "i=%d", i);
	}
	usleep(150 * 1000);
	brq_log_limit_flush(false); // the window ended with 7 dropped: reported without a new event
	out = captured();
	cr_assert_eq(count_lines_with(out, "msg=short "), 2, "got: %s", out);
	cr_assert_eq(suppressed_total(out, "short"), 7, "got: %s", out);
	brq_log_limit_flush(true); // nothing left to report
	cr_assert_str_eq(captured(), "");
}

static int evaluated;

static int
count_eval(void)
{
	return ++evaluated;
}

static brq_log_limit eval_limit = BRQ_LOG_LIMIT_INIT("eval", BRQ_LOG_LVL_WARN, 2, 60000);

Test(log, a_limit_does_not_evaluate_arguments_of_dropped_lines)
{
	for (int i = 0; i < 10; i++) {
		BRQ_LOG_LIMITED(&eval_limit, BRQ_LOG_LVL_WARN, "eval", "n=%d", count_eval());
	}
	cr_assert_eq(evaluated, 2);
}

struct flood_arg {
	int n;
};

static brq_log_limit thread_limit = BRQ_LOG_LIMIT_INIT("threads", BRQ_LOG_LVL_WARN, 10, 60000);

static void *
flood(void *arg)
{
	struct flood_arg *a = arg;
	for (int i = 0; i < a->n; i++) {
		BRQ_LOG_LIMITED(&thread_limit, BRQ_LOG_LVL_WARN, "threads", "i=%d", i);
	}
	return NULL;
}

Test(log, a_limit_counts_exactly_across_threads)
{
	pthread_t        th[8];
	struct flood_arg a = {.n = 2500};
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(pthread_create(&th[i], NULL, flood, &a), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
	}
	brq_log_limit_flush(true);
	const char *out = captured();
	cr_assert_eq(count_lines_with(out, "msg=threads "), 10);
	cr_assert_eq(suppressed_total(out, "threads"), 8 * 2500 - 10, "got: %s", out);
}
