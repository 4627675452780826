/* SPDX-License-Identifier: MIT */
/* brooqctl as operators run it: the built binary against a real gateway, output and exit codes. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "brq_version.h"
#include "gw.h"
#include "testdb.h"

static char  *dsn;
static brq_gw gw;

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, NULL);
	/* Only what each test passes explicitly. */
	unsetenv("BROOQ_URL");
	unsetenv("BROOQ_TOKEN_FILE");
}

static void
teardown(void)
{
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(brooqctl, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ----------------------------------------------------------------------- */

/* Appends s single-quoted for /bin/sh. */
static void
sq(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);
	cr_assert(n + 2 < cap);
	out[n++] = '\'';
	for (; *s != '\0'; s++) {
		if (*s == '\'') {
			cr_assert(n + 4 < cap);
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			cr_assert(n + 1 < cap);
			out[n++] = *s;
		}
	}
	cr_assert(n + 1 < cap);
	out[n++] = '\'';
	out[n]   = '\0';
}

/*
 * Runs brooqctl with the given arguments (each quoted for the shell; NULL ends
 * them), stdout and stderr together into *out (malloc'd; caller frees), and
 * returns its exit code. `input`, when not NULL, is fed to stdin.
 */
static int run_v(const char *input, const char *redirect, char **out, va_list ap);

static int
run_in(const char *input, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = run_v(input, " 2>&1", out, ap);
	va_end(ap);
	return rc;
}

/* Like run_in without input, stdout into *out and stderr into *err (both malloc'd). */
static int
run_split(char **out, char **err, ...)
{
	char    path[300], redirect[320];
	va_list ap;
	snprintf(path, sizeof(path), "%s/stderr.txt", gw.dir);
	snprintf(redirect, sizeof(redirect), " 2>%s", path);
	va_start(ap, err);
	int rc = run_v(NULL, redirect, out, ap);
	va_end(ap);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	*err      = calloc(1, 8192);
	size_t n  = fread(*err, 1, 8191, f);
	(*err)[n] = '\0';
	fclose(f);
	unlink(path);
	return rc;
}

/* The command line of brooqctl with the arguments of ap (each quoted), input fed to
 * stdin when not NULL, redirect appended; runs it and returns its exit code with
 * its stdout in *out. */
static int
run_v(const char *input, const char *redirect, char **out, va_list ap)
{
	char cmd[8192] = "";
	if (input != NULL) {
		strcat(cmd, "printf '%s' ");
		sq(cmd, sizeof(cmd), input);
		strcat(cmd, " | ");
	}
	sq(cmd, sizeof(cmd), brq_testdb_bin("brooqctl"));
	for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
		strcat(cmd, " ");
		sq(cmd, sizeof(cmd), a);
	}
	strcat(cmd, redirect);

	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t cap = 4096, len = 0;
	char  *buf = malloc(cap);
	size_t got;
	while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += got;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = '\0';
	int st   = pclose(p);
	cr_assert(WIFEXITED(st), "brooqctl did not exit normally: %s", cmd);
	*out = buf;
	return WEXITSTATUS(st);
}

#define run(out, ...)       run_in(NULL, out, __VA_ARGS__, (const char *) NULL)
#define runs(out, err, ...) run_split(out, err, __VA_ARGS__, (const char *) NULL)
#define W                   "--url", gw.url, "--token-file", gw.worker_token_file
#define A                   "--url", gw.url, "--token-file", gw.admin_token_file

/* The id in "enqueued job N". */
static unsigned long long
enqueued_id(const char *out)
{
	unsigned long long id = 0;
	const char        *p  = strstr(out, "enqueued job ");
	cr_assert_not_null(p, "output: %s", out);
	cr_assert_eq(sscanf(p, "enqueued job %llu", &id), 1);
	return id;
}

static void
no_tokens_in(const char *out)
{
	cr_assert(strstr(out, gw.worker_token) == NULL, "the worker token was printed: %s", out);
	cr_assert(strstr(out, gw.admin_token) == NULL, "the admin token was printed: %s", out);
}

/* ---- a tiny JSON checker: exactly one value, RFC 8259 syntax ----------------------------- */

static const char *json_value(const char *p);

static const char *
json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
		p++;
	return p;
}

static const char *
json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (;;) {
		unsigned char ch = (unsigned char) *p++;
		if (ch == '"')
			return p;
		if (ch < 0x20)
			return NULL; /* raw control characters (and the end of text) are invalid */
		if (ch == '\\') {
			ch = (unsigned char) *p++;
			if (ch == 'u') {
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char) *p++))
						return NULL;
			} else if (strchr("\"\\/bfnrt", ch) == NULL || ch == '\0') {
				return NULL;
			}
		}
	}
}

static const char *
json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '"')
		return json_string(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		p          = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				if ((p = json_string(json_ws(p))) == NULL)
					return NULL;
				p = json_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			if ((p = json_value(p)) == NULL)
				return NULL;
			p = json_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	static const char *const words[] = {"true", "false", "null"};
	for (int i = 0; i < 3; i++)
		if (strncmp(p, words[i], strlen(words[i])) == 0)
			return p + strlen(words[i]);
	const char *start = p;
	if (*p == '-')
		p++;
	while (isdigit((unsigned char) *p) || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')
		p++;
	return p > start ? p : NULL;
}

static void
assert_one_json_object(const char *out)
{
	cr_assert_eq(out[0], '{', "not a JSON object: %s", out);
	const char *end = json_value(out);
	cr_assert_not_null(end, "invalid JSON: %s", out);
	cr_assert_str_eq(json_ws(end), "", "trailing text after the JSON object: %s", out);
}

/* ---- tests -------------------------------------------------------------------------------- */

Test(brooqctl, enqueue_then_job_shows_every_field)
{
	char *out;
	cr_assert_eq(
		run(&out, W, "enqueue", "mail.send", "{\"to\":\"x\"}", "--key", "k1", "--max-attempts", "4"),
		0, "%s", out);
	unsigned long long id = enqueued_id(out);
	free(out);

	char ids[32];
	snprintf(ids, sizeof(ids), "%llu", id);
	cr_assert_eq(run(&out, W, "job", ids), 0, "%s", out);
	static const char *const want[] = {
		"id ",    "topic ",        "mail.send",   "state ",        "pending",        "attempts ",
		"0 of 4", "available_at ", "locked_by ",  "locked_until ", "last_error ",    "key ",
		"k1",     "created_at ",   "updated_at ", "payload ",      "{\"to\": \"x\"}"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(out, want[i]) != NULL, "'%s' missing from:\n%s", want[i], out);
	/* ISO-8601 UTC with milliseconds: 20YY-MM-DDTHH:MM:SS.mmmZ */
	const char *t = strstr(out, "created_at");
	int         y, mo, d, h, mi, s, ms;
	cr_assert_eq(sscanf(t, "created_at %4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &y, &mo, &d, &h, &mi, &s, &ms), 7,
		     "%s", t);
	cr_assert(y >= 2024);
	free(out);

	/* The same key again: the same job, not enqueued twice, still exit 0. */
	cr_assert_eq(run(&out, W, "enqueue", "mail.send", "{}", "--key", "k1"), 0, "%s", out);
	cr_assert(strstr(out, ids) != NULL && strstr(out, "already exists") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, json_output_is_one_object_with_the_key_fields)
{
	char *out;
	cr_assert_eq(run(&out, W, "--json", "enqueue", "report.build", "{\"q\":[1,2]}", "--key",
			 "quote\"back\\slash\nnl", "--delay", "1h"),
		     0, "%s", out);
	assert_one_json_object(out);
	unsigned long long id = 0;
	cr_assert_eq(sscanf(out, "{\"id\":%llu,", &id), 1, "%s", out);
	cr_assert(strstr(out, "\"created\":true") != NULL, "%s", out);
	free(out);

	char ids[32], want_id[64];
	snprintf(ids, sizeof(ids), "%llu", id);
	cr_assert_eq(run(&out, W, "job", ids, "--json"), 0, "%s", out);
	assert_one_json_object(out);
	/* The job reply's JSON form (docs/protocol.md §11): the job under "job", each
	 * instant as its *_ms integer and its RFC 3339 text. */
	snprintf(want_id, sizeof(want_id), "{\"job\":{\"id\":%llu,", id);
	cr_assert(strncmp(out, want_id, strlen(want_id)) == 0, "%s", out);
	static const char *const want[] = {
		"\"topic\":\"report.build\"",
		"\"state\":\"pending\"",
		"\"attempts\":0",
		"\"locked_by\":null",
		"\"locked_until_ms\":null,\"locked_until\":null",
		"\"last_error\":null",
		"\"payload\":{\"q\": [1, 2]}",
		"\"key\":\"quote\\\"back\\\\slash\\nnl\"",
		"\"available_at_ms\":",
		"\"available_at\":\"20",
		"Z\"",
		"\"result\":null,\"retry_of\":null",
		"\"lost_leases\":0,\"errors\":[]}}",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(out, want[i]) != NULL, "'%s' missing from: %s", want[i], out);
	free(out);

	cr_assert_eq(run(&out, W, "stats", "--json"), 0, "%s", out);
	assert_one_json_object(out);
	cr_assert(strncmp(out, "{\"terminal_age_ms\":", 19) == 0, "%s", out);
	cr_assert(strstr(out, ",\"topics\":[{\"topic\":\"report.build\",\"pending\":1,") != NULL, "%s", out);
	free(out);

	cr_assert_eq(run(&out, W, "ping", "--json"), 0, "%s", out);
	assert_one_json_object(out);
	cr_assert(strstr(out, "\"server\":\"brooq-gateway ") != NULL, "%s", out);
	free(out);

	/* Errors are objects too (and the message still goes to stderr). */
	cr_assert_eq(run(&out, W, "--json", "job", "777777"), 1, "%s", out);
	cr_assert(strstr(out, "{\"code\":\"not_found\"") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, stats_prints_a_table)
{
	char *out;
	cr_assert_eq(run(&out, W, "enqueue", "a.topic", "{}"), 0, "%s", out);
	free(out);
	cr_assert_eq(run(&out, W, "stats"), 0, "%s", out);
	cr_assert(strstr(out, "TOPIC") != NULL && strstr(out, "PENDING") != NULL, "%s", out);
	cr_assert(strstr(out, "a.topic") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, cancel_needs_the_admin_token)
{
	char *out;
	cr_assert_eq(run(&out, W, "enqueue", "t", "{}"), 0, "%s", out);
	char ids[32];
	snprintf(ids, sizeof(ids), "%llu", enqueued_id(out));
	free(out);

	cr_assert_eq(run(&out, W, "cancel", ids), 4, "%s", out);
	cr_assert(strstr(out, "permission denied") != NULL, "%s", out);
	free(out);
	cr_assert_eq(run(&out, W, "job", ids), 0, "%s", out);
	cr_assert(strstr(out, "pending") != NULL, "a refused cancel changes nothing: %s", out);
	free(out);

	cr_assert_eq(run(&out, A, "cancel", ids), 0, "%s", out);
	cr_assert(strstr(out, "canceled") != NULL, "%s", out);
	free(out);
	cr_assert_eq(run(&out, A, "--json", "cancel", ids), 0, "canceling twice is still canceled: %s", out);
	cr_assert(strstr(out, "\"state\":\"canceled\",\"canceled\":false") != NULL, "%s", out);
	free(out);
	cr_assert_eq(run(&out, W, "job", ids), 0, "%s", out);
	cr_assert(strstr(out, "canceled") != NULL, "%s", out);
	free(out);

	cr_assert_eq(run(&out, A, "cancel", "99999"), 1, "%s", out);
	free(out);
}

Test(brooqctl, job_of_an_unknown_id_exits_1)
{
	char *out;
	cr_assert_eq(run(&out, W, "job", "123456789"), 1, "%s", out);
	cr_assert(strstr(out, "not found") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, a_refused_payload_exits_1)
{
	char *out;
	cr_assert_eq(run(&out, W, "enqueue", "t", "{not json"), 1, "%s", out);
	cr_assert(strstr(out, "invalid argument") != NULL, "%s", out);
	free(out);
	cr_assert_eq(run(&out, W, "enqueue", "Bad Topic", "{}"), 1, "%s", out);
	free(out);
}

Test(brooqctl, the_payload_can_come_from_stdin)
{
	char *out;
	cr_assert_eq(run_in("{\"from\":\"stdin\"}\n", &out, W, "enqueue", "t", "-", (const char *) NULL), 0,
		     "%s", out);
	char ids[32];
	snprintf(ids, sizeof(ids), "%llu", enqueued_id(out));
	free(out);
	cr_assert_eq(run(&out, W, "job", ids), 0, "%s", out);
	cr_assert(strstr(out, "{\"from\": \"stdin\"}") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, a_gateway_nobody_runs_is_unreachable_exit_3_without_waiting_out_the_timeout)
{
	char url[400], *out, *err;
	snprintf(url, sizeof(url), "ipc://%s/nobody.sock", gw.dir);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The default 10 s timeout: nothing listens, so nothing is waited for. */
	cr_assert_eq(runs(&out, &err, "--url", url, "--token-file", gw.worker_token_file, "ping"), 3, "%s",
		     err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double dt = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* The bound is the behaviour: brooqctl does not wait out its timeout for a gateway
	 * nobody runs. It is half the timeout, not a figure for speed: on a loaded machine
	 * starting brooqctl and failing the dial took 1,030 and 1,180 ms, where it usually
	 * takes a few. */
	cr_assert(dt < 5000, "took %.0f ms: waited for the 10 s timeout", dt);
	cr_assert(strncmp(err, "brooqctl: ping: gateway unreachable: cannot connect to ", 55) == 0, "%s",
		  err);
	cr_assert(strstr(err, "nothing was sent") != NULL, "%s", err);
	cr_assert(strstr(err, "may have run") == NULL, "%s", err);
	cr_assert_str_empty(out);
	free(out);
	free(err);
	cr_assert_eq(run(&out, "--url", url, "--token-file", gw.worker_token_file, "--json", "stats"), 3,
		     "%s", out);
	cr_assert(strstr(out, "{\"code\":\"unreachable\",") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, usage_errors_exit_2)
{
	char             *out;
	const char *const cases[][6] = {
		{NULL},
		{"frobnicate", NULL},
		{"job", NULL},
		{"job", "abc", NULL},
		{"job", "0", NULL},
		{"job", "1", "2", NULL},
		{"enqueue", "only.topic", NULL},
		{"enqueue", "t", "", NULL},
		{"--timeout", "5x", "ping", NULL},
		{"--timeout", "5", "ping", NULL},
		{"--timeout", "0", "ping", NULL},
		{"--delay", "30", "enqueue", "t", "{}", NULL},
		{"--delay", "soon", "enqueue", "t", "{}", NULL},
		{"--max-attempts", "-1", "enqueue", "t", NULL},
		{"--key", "k", "job", "1", NULL},
		{"ping", "extra", NULL},
		{"stats", "--bogus", NULL},
		{"--url", NULL},
		{"--tls-ca", NULL},
		{"ping", "--tls-server-name=", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *c = cases[i];
		int                rc;
		/* The token file is there; only the command line is wrong. */
		if (c[0] == NULL)
			rc = run(&out, "--token-file", gw.worker_token_file);
		else if (c[1] == NULL)
			rc = run(&out, "--token-file", gw.worker_token_file, c[0]);
		else if (c[2] == NULL)
			rc = run(&out, "--token-file", gw.worker_token_file, c[0], c[1]);
		else if (c[3] == NULL)
			rc = run(&out, "--token-file", gw.worker_token_file, c[0], c[1], c[2]);
		else if (c[4] == NULL)
			rc = run(&out, "--token-file", gw.worker_token_file, c[0], c[1], c[2], c[3]);
		else
			rc = run(&out, "--token-file", gw.worker_token_file, c[0], c[1], c[2], c[3], c[4]);
		cr_assert_eq(rc, 2, "case %zu (%s): exit %d: %s", i, c[0] ? c[0] : "(none)", rc, out);
		free(out);
	}
	/* No token file at all. */
	cr_assert_eq(run(&out, "--url", gw.url, "ping"), 2, "%s", out);
	cr_assert(strstr(out, "token") != NULL, "%s", out);
	free(out);
	/* Help is not an error. */
	cr_assert_eq(run(&out, "--help"), 0, "%s", out);
	cr_assert(strstr(out, "Exit codes") != NULL, "%s", out);
	free(out);
}

Test(brooqctl, a_token_on_the_command_line_is_refused_and_never_echoed)
{
	char *out;
	cr_assert_eq(run(&out, "--url", gw.url, "--token", gw.worker_token, "ping"), 2, "%s", out);
	no_tokens_in(out);
	free(out);
	char opt[100];
	snprintf(opt, sizeof(opt), "--token=%s", gw.admin_token);
	cr_assert_eq(run(&out, "--url", gw.url, opt, "ping"), 2, "%s", out);
	no_tokens_in(out);
	free(out);
}

Test(brooqctl, the_token_never_appears_in_any_output)
{
	char *out, bad[400], wrong[400];
	cr_assert_eq(run(&out, W, "enqueue", "t", "{}", "--json"), 0, "%s", out);
	no_tokens_in(out);
	free(out);
	const char *const cmds[][2] = {
		{"ping", NULL}, {"stats", NULL}, {"job", "1"}, {"job", "424242"}, {"cancel", "1"}};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		for (int json = 0; json < 2; json++) {
			if (cmds[i][1] != NULL)
				(void) run(&out, W, json ? "--json" : "--url", json ? "--json" : gw.url,
					   cmds[i][0], cmds[i][1]);
			else
				(void) run(&out, W, json ? "--json" : "--url", json ? "--json" : gw.url,
					   cmds[i][0]);
			no_tokens_in(out);
			free(out);
		}
	}
	/* A wrong token: unauthenticated, exit 4, and the file's content is not shown. */
	snprintf(wrong, sizeof(wrong), "%s/wrong-token", gw.dir);
	FILE *f = fopen(wrong, "w");
	fputs("ffffffffffffffffffffffffffffffffwrongwrongwrong\n", f);
	fclose(f);
	cr_assert_eq(run(&out, "--url", gw.url, "--token-file", wrong, "ping"), 4, "%s", out);
	cr_assert(strstr(out, "unauthenticated") != NULL, "%s", out);
	cr_assert(strstr(out, "wrongwrong") == NULL, "%s", out);
	free(out);
	/* A token file too short: exit 4 before any request; content not shown. */
	snprintf(bad, sizeof(bad), "%s/short-token", gw.dir);
	f = fopen(bad, "w");
	fputs("shortsecret\n", f);
	fclose(f);
	cr_assert_eq(run(&out, "--url", gw.url, "--token-file", bad, "stats"), 4, "%s", out);
	cr_assert(strstr(out, "shortsecret") == NULL, "%s", out);
	free(out);
}

Test(brooqctl, url_and_token_file_come_from_the_environment)
{
	char *out;
	setenv("BROOQ_URL", gw.url, 1);
	setenv("BROOQ_TOKEN_FILE", gw.worker_token_file, 1);
	cr_assert_eq(run(&out, "ping"), 0, "%s", out);
	cr_assert(strstr(out, "brooq-gateway") != NULL, "%s", out);
	free(out);
	/* The option wins over the environment. */
	cr_assert_eq(run(&out, "--token-file", gw.admin_token_file, "cancel", "99999"), 1, "%s", out);
	free(out);
}

static void assert_json_error(const char *out, int rc, const char *name);

Test(brooqctl, migrate_still_works)
{
	char *out;
	cr_assert_eq(run(&out, "migrate", "status", "--dsn", dsn), 0, "%s", out);
	free(out);
	cr_assert_eq(run(&out, "migrate"), 2, "%s", out);
	free(out);
	/* --json too (migrate_test checks its objects): one object, errors as well. */
	char *err;
	cr_assert_eq(runs(&out, &err, "migrate", "status", "--dsn", dsn, "--json"), 0, "%s", err);
	assert_one_json_object(out);
	cr_assert(strncmp(out, "{\"version\":", 11) == 0, "%s", out);
	cr_assert(strstr(out,
			 ",\"migrations\":[{\"version\":1,\"name\":\"00001_job.sql\",\"applied\":true,"
			 "\"applied_at_ms\":") != NULL,
		  "%s", out);
	free(out);
	free(err);
	cr_assert_eq(runs(&out, &err, "--json", "migrate"), 2);
	assert_json_error(out, 2, "usage");
	free(out);
	free(err);
}

/* ---- conventions: --version, --help, --json on every error, write errors ------------------ */

Test(brooqctl, both_programs_print_the_build_version)
{
	char *out, *err, want[64];
	snprintf(want, sizeof(want), "brooqctl %s\n", BROOQ_VERSION);
	cr_assert_eq(runs(&out, &err, "--version"), 0, "%s", err);
	cr_assert_str_eq(out, want);
	cr_assert_str_empty(err);
	free(out);
	free(err);

	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s --version", brq_testdb_bin("brooq-gateway"));
	FILE *p         = popen(cmd, "r");
	char  line[128] = "";
	cr_assert_not_null(fgets(line, sizeof(line), p));
	cr_assert_eq(WEXITSTATUS(pclose(p)), 0);
	snprintf(want, sizeof(want), "brooq-gateway %s\n", BROOQ_VERSION);
	cr_assert_str_eq(line, want);
}

Test(brooqctl, every_command_has_its_help_on_stdout_with_exit_0)
{
	static const char *const cmds[] = {"ping", "enqueue", "job", "cancel", "stats", "migrate"};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *out, *err, want[64];
		snprintf(want, sizeof(want), "brooqctl %s", cmds[i]);
		/* After the command, before it, and as `help CMD`. */
		cr_assert_eq(runs(&out, &err, cmds[i], "--help"), 0, "%s --help: %s", cmds[i], err);
		cr_assert(strncmp(out, "usage: brooqctl ", 16) == 0, "%s: %s", cmds[i], out);
		cr_assert(strstr(out, cmds[i]) != NULL, "%s: %s", cmds[i], out);
		cr_assert_str_empty(err);
		if (strcmp(cmds[i], "migrate") != 0)
			cr_assert(strstr(out, "--token-file") != NULL, "no common options: %s", out);
		char *again, *err2;
		cr_assert_eq(runs(&again, &err2, strcmp(cmds[i], "migrate") == 0 ? cmds[i] : "--help",
				  strcmp(cmds[i], "migrate") == 0 ? "-h" : cmds[i]),
			     0);
		cr_assert_str_eq(again, out);
		free(again);
		free(err2);
		if (strcmp(cmds[i], "migrate") != 0) {
			cr_assert_eq(runs(&again, &err2, "help", cmds[i]), 0);
			cr_assert_str_eq(again, out);
			free(again);
			free(err2);
		}
		free(out);
		free(err);
	}
}

/* One JSON object on stdout with the error keys, its "exit" equal to the exit code. */
static void
assert_json_error(const char *out, int rc, const char *name)
{
	char want[96];
	assert_one_json_object(out);
	snprintf(want, sizeof(want), "{\"code\":\"%s\",\"msg\":\"", name);
	cr_assert(strncmp(out, want, strlen(want)) == 0, "want %s...: %s", want, out);
	snprintf(want, sizeof(want), ",\"exit\":%d", rc);
	cr_assert(strstr(out, want) != NULL, "exit %d not in %s", rc, out);
}

Test(brooqctl, every_error_path_prints_one_json_object_with_its_exit_code)
{
	char *out, *err, bad_tok[400], nobody[400], ids[96], done_id[32];
	snprintf(bad_tok, sizeof(bad_tok), "%s/short-token", gw.dir);
	FILE *f = fopen(bad_tok, "w");
	fputs("short\n", f);
	fclose(f);
	snprintf(nobody, sizeof(nobody), "ipc://%s/nobody.sock", gw.dir);

	/* A job that is done, for `cancel` of a terminal job. */
	brq_request  req   = {.op = BRQ_OP_ENQUEUE, .token = brq_gw_worker(&gw)};
	brq_job_spec spec  = {.topic = brq_str_c("t.done"), .payload = brq_str_c("{}")};
	req.enqueue.jobs   = &spec;
	req.enqueue.n_jobs = 1;
	brq_reply rep;
	brq_arena arena;
	void     *keep;
	brq_arena_init(&arena);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK);
	unsigned long long id = rep.enqueue.results[0].id;
	free(keep);
	brq_arena_fini(&arena);
	PGconn *db = brq_testdb_connect(dsn);
	snprintf(ids, sizeof(ids), "UPDATE job SET state = 'done' WHERE id = %llu", id);
	brq_testdb_exec(db, ids);
	PQfinish(db);
	snprintf(done_id, sizeof(done_id), "%llu", id);

	static const struct {
		int         rc;
		const char *name;
		const char *args[6];
	} cases[] = {
		{2, "usage", {"job", "abc"}},
		{2, "usage", {"job"}},
		{2, "usage", {"frobnicate"}},
		{2, "usage", {"--timeout", "5", "ping"}},
		{2, "usage", {"--bogus", "stats"}},
		{2, "usage", {"enqueue", "t", ""}},
		{2, "usage", {"--token", "x", "ping"}},
		{2, "usage", {"migrate", "status"}},
		{1, "not_found", {"job", "777777"}},
		{1, "invalid_argument", {"enqueue", "t", "{nope"}},
		{1, "invalid_argument", {"enqueue", "Bad Topic", "{}"}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].args;
		int rc = runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "--json",
			      a[0], a[1] != NULL ? a[1] : "--json", a[2] != NULL ? a[2] : "--json");
		cr_assert_eq(rc, cases[i].rc, "case %zu (%s): exit %d: %s", i, a[0], rc, err);
		assert_json_error(out, rc, cases[i].name);
		cr_assert_str_not_empty(err, "case %zu: nothing on stderr", i);
		free(out);
		free(err);
	}

	/* No token file at all; one too short; a wrong one; not admin; unreachable. */
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--json", "ping"), 2);
	assert_json_error(out, 2, "usage");
	free(out);
	free(err);
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", bad_tok, "--json", "ping"), 4);
	assert_json_error(out, 4, "token");
	free(out);
	free(err);
	cr_assert_eq(
		runs(&out, &err, "--url", gw.url, "--token-file", "/nonexistent/token", "--json", "stats"),
		4);
	assert_json_error(out, 4, "token");
	free(out);
	free(err);
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "--json",
			  "cancel", done_id),
		     4);
	assert_json_error(out, 4, "permission_denied");
	free(out);
	free(err);
	cr_assert_eq(
		runs(&out, &err, "--url", nobody, "--token-file", gw.worker_token_file, "--json", "ping"), 3);
	assert_json_error(out, 3, "unreachable");
	free(out);
	free(err);

	/* cancel of a done job: an error with the same keys, and the job's state. */
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.admin_token_file, "--json",
			  "cancel", done_id),
		     1, "%s", err);
	assert_json_error(out, 1, "not_cancelable");
	cr_assert(strstr(out, "\"state\":\"done\",\"canceled\":false}") != NULL, "%s", out);
	cr_assert(strstr(err, "not cancelable") != NULL, "%s", err);
	free(out);
	free(err);
}

Test(brooqctl, errors_name_the_command_once)
{
	char *out, *err;
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "job", "999"),
		     1);
	cr_assert_str_eq(err, "brooqctl: job: not found: job 999 not found\n");
	free(out);
	free(err);
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "frob"), 2);
	cr_assert_str_eq(err, "brooqctl: unknown command 'frob' (see brooqctl --help)\n");
	free(out);
	free(err);
}

Test(brooqctl, output_that_cannot_be_written_is_an_error)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s --url %s --token-file %s %%s >/dev/full 2>/dev/null",
		 brq_testdb_bin("brooqctl"), gw.url, gw.worker_token_file);
	static const char *const args[] = {"ping", "--json stats", "enqueue t.full {}", "--version",
					   "--help"};
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		char line[1200];
		snprintf(line, sizeof(line), cmd, args[i]);
		int st = system(line);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "`%s` exited %d", args[i], WEXITSTATUS(st));
	}
}

Test(brooqctl, durations_share_the_gateways_syntax)
{
	char *out, *err;
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "--timeout", "5",
			  "ping"),
		     2);
	cr_assert(strstr(err, "duration needs a unit (e.g. 120s)") != NULL, "%s", err);
	free(out);
	free(err);
	/* Units the gateway takes (d included), and a bare 0. */
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "--timeout",
			  "1d", "enqueue", "t.later", "{}", "--delay", "2d"),
		     0, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(runs(&out, &err, "--url", gw.url, "--token-file", gw.worker_token_file, "enqueue",
			  "t.now", "{}", "--delay", "0"),
		     0, "%s", err);
	free(out);
	free(err);
	PGconn *db = brq_testdb_connect(dsn);
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM job WHERE topic = 't.later' AND available_at > "
				    "now() + interval '47 hours'"),
		     1);
	PQfinish(db);
}

/* The paragraph of a man page source that starts with `start` (up to the blank line),
 * its lines joined with spaces (malloc'd). Fails the test when there is none. */
static char *
man_paragraph(const char *page, const char *start)
{
	char path[512], line[1024];
	snprintf(path, sizeof(path), "%s/docs/man/%s", getenv("BROOQ_SOURCE_DIR"), page);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "cannot read %s", path);
	char  *par = calloc(1, 8192);
	bool   in  = false;
	size_t n   = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (!in && strncmp(line, start, strlen(start)) != 0)
			continue;
		if (in && line[0] == '\0')
			break;
		in = true;
		n += (size_t) snprintf(par + n, 8192 - n, "%s ", line);
		cr_assert_lt(n, 8192);
	}
	fclose(f);
	cr_assert(in, "%s has no paragraph starting \"%s\"", path, start);
	return par;
}

/* The *bold* words of a man page paragraph made only of letters (a list of units),
 * concatenated as "|ms|s|...|". */
static void
man_units(const char *par, char *out, size_t cap)
{
	snprintf(out, cap, "|");
	for (const char *p = strchr(par, '*'); p != NULL; p = strchr(p, '*')) {
		const char *end = strchr(p + 1, '*');
		if (end == NULL)
			break;
		size_t len = (size_t) (end - p - 1), k = 0;
		while (k < len && islower((unsigned char) p[1 + k]))
			k++;
		if (len > 0 && k == len)
			snprintf(out + strlen(out), cap - strlen(out), "%.*s|", (int) len, p + 1);
		p = end + 1;
	}
}

/* brooqctl(1) says what the tool does with durations, and the same as brooq-gateway(8):
 * every example and unit it lists is taken, a bare number other than 0 is refused. */
Test(brooqctl, the_man_page_states_the_duration_syntax_it_takes)
{
	char *par  = man_paragraph("brooqctl.1.scd", "Durations _D_ ");
	char *gpar = man_paragraph("brooq-gateway.8.scd", "Every setting is an environment variable");
	char *gdur = strstr(gpar, "Durations need a unit"), *sizes = strstr(gpar, "Sizes need a unit");
	char  units[128], gunits[128], *out, *err;
	cr_assert(gdur != NULL && sizes != NULL, "brooq-gateway(8) on units: %s", gpar);
	*sizes = '\0';
	man_units(par, units, sizeof(units));
	man_units(gdur, gunits, sizeof(gunits));
	cr_assert_str_eq(units, gunits, "brooqctl(1) lists the units %s, brooq-gateway(8) %s", units, gunits);
	cr_assert(strstr(par, "A bare number other than *0* is refused (exit 2)") != NULL,
		  "brooqctl(1) no longer says bare numbers are refused: %s", par);

	/* Every unit it lists, and every example it gives (*500ms*, ...), is taken. */
	for (const char *u = strtok(units, "|"); u != NULL; u = strtok(NULL, "|")) {
		char d[32];
		snprintf(d, sizeof(d), "7%s", u);
		cr_assert_eq(runs(&out, &err, W, "enqueue", "t.units", "{}", "--delay", d), 0, "%s: %s", d,
			     err);
		free(out);
		free(err);
	}
	int examples = 0;
	for (const char *p = strchr(par, '*'); p != NULL && strchr(p + 1, '*') != NULL;) {
		const char *end = strchr(p + 1, '*');
		char        d[32];
		snprintf(d, sizeof(d), "%.*s", (int) (end - p - 1), p + 1);
		if (isdigit((unsigned char) d[0]) && isalpha((unsigned char) d[strlen(d) - 1])) {
			cr_assert_eq(runs(&out, &err, W, "enqueue", "t.units", "{}", "--delay", d), 0,
				     "%s: %s", d, err);
			free(out);
			free(err);
			examples++;
		}
		p = strchr(end + 1, '*');
	}
	cr_assert_geq(examples, 4, "brooqctl(1) gives %d examples of durations: %s", examples, par);

	/* ... and the bare numbers as it says: 0 is zero, 5 is refused as a usage error. */
	cr_assert_eq(runs(&out, &err, W, "enqueue", "t.units", "{}", "--delay", "5"), 2, "%s", out);
	cr_assert(strstr(err, "duration needs a unit") != NULL, "%s", err);
	free(out);
	free(err);
	cr_assert_eq(runs(&out, &err, W, "enqueue", "t.units", "{}", "--delay", "0"), 0, "%s", err);
	free(out);
	free(err);
	free(par);
	free(gpar);
}
