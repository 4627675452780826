/* SPDX-License-Identifier: MIT */
/* One JSON vocabulary (docs/protocol.md §11): brooqctl --json and the web console's API give the
 * replies with the keys, in the order, that the section's tables list, and every instant as its
 * *_ms integer and the same instant as RFC 3339 UTC text with milliseconds. The tables are read
 * from the document itself, so the document, brooqctl and the console cannot drift apart; the
 * same job and the same schedules read the same, byte for byte, through brooqctl and the console.
 * Against a real gateway and PostgreSQL; the one time formatter as a unit. */
#define _GNU_SOURCE /* asprintf */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "brq_units.h"
#include "gw.h"
#include "testdb.h"
#include "tutil.h"

/* ---- the one time form ------------------------------------------------------------------- */

/* The form every instant takes: 2026-12-02T04:31:39.521Z, nothing before or after. */
static bool
is_rfc3339_ms_utc(const char *s)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	if (strlen(s) != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; pat[i] != '\0'; i++)
		if (pat[i] == 'd' ? !isdigit((unsigned char) s[i]) : s[i] != pat[i])
			return false;
	return true;
}

Test(time_form, is_rfc3339_utc_with_milliseconds_and_agrees_with_gmtime)
{
	char t[BRQ_TIME_TEXT_MAX];
	cr_assert_str_eq(brq_fmt_time_ms(t, sizeof(t), 0), "1970-01-01T00:00:00.000Z");
	cr_assert_str_eq(brq_fmt_time_ms(t, sizeof(t), 1796185899521), "2026-12-02T04:31:39.521Z");
	cr_assert_str_eq(brq_fmt_time_ms(t, sizeof(t), 951782400000), "2000-02-29T00:00:00.000Z");
	cr_assert_str_eq(brq_fmt_time_ms(t, sizeof(t), 253402300799999), "9999-12-31T23:59:59.999Z");
	cr_assert_str_eq(brq_fmt_time_ms(t, sizeof(t), -1), "1969-12-31T23:59:59.999Z");
	/* Cut, never overrun. */
	cr_assert_str_eq(brq_fmt_time_ms(t, 5, 0), "1970");
	/* Every day from 1900 to 2400 at a varying time of day, against the C library. */
	for (int64_t day = -25567; day < 157054; day += 13) {
		int64_t   ms   = day * 86400000 + (day * 7919 % 86400000 + 86400000) % 86400000;
		time_t    secs = (time_t) (ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
		struct tm tm;
		char      want[64];
		cr_assert_not_null(gmtime_r(&secs, &tm));
		snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			 (int) (((ms % 1000) + 1000) % 1000));
		cr_assert_str_eq(brq_fmt_time_ms(t, sizeof(t), ms), want, "%lld", (long long) ms);
		cr_assert(is_rfc3339_ms_utc(t), "%s", t);
	}
}

/* ---- a small JSON reader: enough to compare key lists and values ------------------------- */

typedef struct jv {
	char        type; /* o(bject) a(rray) s(tring) n(umber) b(oolean) z (null) */
	char       *text; /* s: the string, unescaped (ASCII here); n: the number as written */
	size_t      n;
	char      **keys; /* o: the keys, in order */
	struct jv **vals; /* o, a: the values */
} jv;

static const char *parse_value(const char *p, jv **out);

static const char *
ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static jv *
jv_new(char type)
{
	jv *v = calloc(1, sizeof(*v));
	cr_assert_not_null(v);
	v->type = type;
	return v;
}

static void
jv_free(jv *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < v->n; i++) {
		if (v->keys != NULL)
			free(v->keys[i]);
		jv_free(v->vals[i]);
	}
	free(v->keys);
	free(v->vals);
	free(v->text);
	free(v);
}

/* A string at p (its opening quote) into a malloc'd copy; escapes other than \" \\ \/ and
 * \uXXXX of ASCII do not occur in what this test reads. */
static const char *
parse_string(const char *p, char **out)
{
	cr_assert_eq(*p, '"');
	char  *s = malloc(strlen(p) + 1);
	size_t n = 0;
	for (p++; *p != '"'; p++) {
		cr_assert_neq(*p, '\0', "unterminated string");
		if (*p != '\\') {
			s[n++] = *p;
			continue;
		}
		p++;
		if (*p == 'u') {
			unsigned c;
			cr_assert_eq(sscanf(p + 1, "%4x", &c), 1);
			s[n++] = (char) c;
			p += 4;
		} else {
			s[n++] = *p == 'n' ? '\n' : *p;
		}
	}
	s[n] = '\0';
	*out = s;
	return p + 1;
}

static void
push(jv *v, char *key, jv *val)
{
	v->keys = key != NULL ? realloc(v->keys, (v->n + 1) * sizeof(char *)) : v->keys;
	v->vals = realloc(v->vals, (v->n + 1) * sizeof(jv *));
	if (key != NULL)
		v->keys[v->n] = key;
	v->vals[v->n++] = val;
}

static const char *
parse_value(const char *p, jv **out)
{
	p = ws(p);
	if (*p == '{' || *p == '[') {
		bool obj = *p == '{';
		jv  *v   = jv_new(obj ? 'o' : 'a');
		p        = ws(p + 1);
		while (*p != (obj ? '}' : ']')) {
			char *key = NULL;
			jv   *val;
			if (v->n > 0) {
				cr_assert_eq(*p, ',', "expected , at %.20s", p);
				p = ws(p + 1);
			}
			if (obj) {
				p = ws(parse_string(p, &key));
				cr_assert_eq(*p, ':', "expected : at %.20s", p);
				p++;
			}
			p = ws(parse_value(p, &val));
			push(v, key, val);
		}
		*out = v;
		return p + 1;
	}
	if (*p == '"') {
		jv *v = jv_new('s');
		p     = parse_string(p, &v->text);
		*out  = v;
		return p;
	}
	static const struct {
		const char *word;
		char        type;
	} words[] = {{"true", 'b'}, {"false", 'b'}, {"null", 'z'}};
	for (size_t i = 0; i < 3; i++) {
		if (strncmp(p, words[i].word, strlen(words[i].word)) == 0) {
			*out         = jv_new(words[i].type);
			(*out)->text = strdup(words[i].word);
			return p + strlen(words[i].word);
		}
	}
	size_t len = strspn(p, "-0123456789.eE+");
	cr_assert_gt(len, 0, "not JSON at %.20s", p);
	*out         = jv_new('n');
	(*out)->text = strndup(p, len);
	return p + len;
}

/* The one JSON value of text (a trailing newline allowed); fails the test otherwise. */
static jv *
jv_parse(const char *text)
{
	jv         *v;
	const char *end = ws(parse_value(text, &v));
	cr_assert_eq(*end, '\0', "trailing text after the JSON value: %s", text);
	return v;
}

static jv *
jv_get(const jv *o, const char *key)
{
	cr_assert_eq(o->type, 'o');
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return o->vals[i];
	cr_assert_fail("no key %s", key);
	return NULL;
}

/* ---- the document's tables ---------------------------------------------------------------- */

typedef struct keylist {
	char  *name;
	char  *keys[40];
	size_t n;
} keylist;

static keylist doc[16];
static size_t  n_doc;

/* Reads the "object | keys, in order" table of docs/protocol.md §11: each row's name and
 * its backticked keys. */
static void
read_doc(void)
{
	char *path = NULL, *md = NULL;
	cr_assert(asprintf(&path, "%s/docs/protocol.md", getenv("BROOQ_SOURCE_DIR")) > 0);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	size_t cap = 0;
	cr_assert_gt(getdelim(&md, &cap, '\0', f), 0);
	fclose(f);
	free(path);
	const char *sec = strstr(md, "\n## 11. JSON form\n");
	cr_assert_not_null(sec, "docs/protocol.md has no section 11, JSON form");
	const char *row = strstr(sec, "| object | keys, in order |");
	cr_assert_not_null(row, "§11 has no object table");
	row   = strchr(strchr(row, '\n') + 1, '\n') + 1; /* past the header and |---| */
	n_doc = 0;
	while (strncmp(row, "| ", 2) == 0) {
		const char *bar = strchr(row + 2, '|'), *eol = strchr(row, '\n');
		keylist    *k = &doc[n_doc++];
		cr_assert_lt(n_doc, sizeof(doc) / sizeof(doc[0]));
		k->name = strndup(row + 2, (size_t) (bar - 1 - (row + 2)));
		for (const char *p = bar; (p = strchr(p, '`')) != NULL && p < eol;) {
			const char *q = strchr(p + 1, '`');
			cr_assert_lt(k->n, sizeof(k->keys) / sizeof(k->keys[0]));
			k->keys[k->n++] = strndup(p + 1, (size_t) (q - p - 1));
			p               = q + 1;
		}
		row = eol + 1;
	}
	free(md);
}

static const keylist *
doc_row(const char *name)
{
	for (size_t i = 0; i < n_doc; i++)
		if (strcmp(doc[i].name, name) == 0)
			return &doc[i];
	cr_assert_fail("docs/protocol.md §11 has no row '%s'", name);
	return NULL;
}

static void
free_doc(void)
{
	for (size_t i = 0; i < n_doc; i++) {
		free(doc[i].name);
		for (size_t k = 0; k < doc[i].n; k++)
			free(doc[i].keys[k]);
	}
	n_doc = 0;
}

/* o's keys are exactly the row's (with extra[] after them, for a tool's own: NULL-ended),
 * in that order. */
static void
assert_keys(const jv *o, const char *row, const char *const *extra, const char *who)
{
	const keylist *k = doc_row(row);
	size_t         n = k->n;
	while (extra != NULL && extra[n - k->n] != NULL)
		n++;
	cr_assert_eq(o->type, 'o', "%s: not an object", who);
	for (size_t i = 0; i < n || i < o->n; i++) {
		const char *want = i < k->n ? k->keys[i] : i < n ? extra[i - k->n] : "(nothing)";
		const char *got  = i < o->n ? o->keys[i] : "(nothing)";
		cr_assert_str_eq(got, want, "%s: key %zu is %s, docs/protocol.md §11 (%s) says %s", who, i,
				 got, row, want);
	}
}

/* Each instant of every object in v: X_ms and its twin X (the next key) are both null, or an
 * integer and that instant's RFC 3339 text; every other number is an integer but for the
 * console's rates; no string looks like a time without being one of these. Returns how many
 * instants it saw set. */
static int
assert_times(const jv *v, const char *who)
{
	int seen = 0;
	if (v->type == 'a') {
		for (size_t i = 0; i < v->n; i++)
			seen += assert_times(v->vals[i], who);
		return seen;
	}
	if (v->type != 'o')
		return 0;
	for (size_t i = 0; i < v->n; i++) {
		const char *k    = v->keys[i];
		const jv   *val  = v->vals[i];
		size_t      len  = strlen(k);
		bool        twin = len > 3 && strcmp(k + len - 3, "_ms") == 0 && i + 1 < v->n &&
			strlen(v->keys[i + 1]) == len - 3 && strncmp(v->keys[i + 1], k, len - 3) == 0;
		if (twin) {
			const jv *text = v->vals[i + 1];
			if (val->type == 'z') {
				cr_assert_eq(text->type, 'z', "%s: %s null but %s not", who, k,
					     v->keys[i + 1]);
			} else {
				char t[BRQ_TIME_TEXT_MAX];
				cr_assert_eq(val->type, 'n', "%s: %s", who, k);
				cr_assert_eq(text->type, 's', "%s: %s is not text", who, v->keys[i + 1]);
				cr_assert(is_rfc3339_ms_utc(text->text), "%s: %s is \"%s\"", who,
					  v->keys[i + 1], text->text);
				cr_assert_str_eq(text->text,
						 brq_fmt_time_ms(t, sizeof(t), strtoll(val->text, NULL, 10)),
						 "%s: %s and %s disagree", who, k, v->keys[i + 1]);
				seen++;
			}
			i++;
			continue;
		}
		if (val->type == 'n' && strcmp(k, "started_per_min") != 0 &&
		    strcmp(k, "finished_per_min") != 0)
			cr_assert_eq(strcspn(val->text, ".eE"), strlen(val->text),
				     "%s: %s is not an integer: %s", who, k, val->text);
		if (val->type == 's' && strlen(val->text) >= 10 && isdigit((unsigned char) val->text[0]) &&
		    val->text[4] == '-' && val->text[7] == '-')
			cr_assert_fail("%s: %s is a time without its _ms twin: %s", who, k, val->text);
		if (val->type == 'o' && strcmp(k, "payload") != 0 && strcmp(k, "result") != 0)
			seen += assert_times(val, who);
		if (val->type == 'a')
			seen += assert_times(val, who);
	}
	return seen;
}

/* ---- the gateway, brooqctl and the console ------------------------------------------------- */

static char    *dsn;
static brq_gw   gw;
static uint16_t port;
static char     cookie[160], csrf_h[160];

/* brooqctl --json ARGS with the admin token: its stdout (malloc'd) and exit code. */
static int
ctl(char **out, const char *args)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "%s --url %s --token-file %s --json %s 2>/dev/null",
			   brq_testdb_bin("brooqctl"), gw.url, gw.admin_token_file, args) > 0);
	int rc = brq_testdb_run(cmd, out);
	free(cmd);
	return rc;
}

/* One HTTP request to the console; its status, and its body into body[0..cap). */
static int
http(const char *method, const char *path, const char *form, char *body, size_t cap)
{
	static char        buf[1 << 17];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr    = htonl(INADDR_LOOPBACK);
	int fd                = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	int n = snprintf(buf, sizeof(buf),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n%s%s%s"
			 "Content-Length: %zu\r\n\r\n%s",
			 method, path, port, cookie, strcmp(method, "POST") == 0 ? csrf_h : "",
			 form != NULL ? "Content-Type: application/x-www-form-urlencoded\r\n" : "",
			 form != NULL ? strlen(form) : 0, form != NULL ? form : "");
	cr_assert_eq(write(fd, buf, (size_t) n), n);
	size_t  got = 0;
	ssize_t k;
	while ((k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t) k;
	close(fd);
	buf[got]         = '\0';
	const char *sep  = strstr(buf, "\r\n\r\n");
	const char *sid  = strstr(buf, "Set-Cookie: brooq_session=");
	int         code = atoi(buf + 9);
	cr_assert_not_null(sep, "no HTTP reply: %s", buf);
	if (sid != NULL && cookie[0] == '\0')
		snprintf(cookie, sizeof(cookie), "Cookie: brooq_session=%.*s\r\n",
			 (int) strcspn(sid + 26, ";\r"), sid + 26);
	cr_assert_lt(strlen(sep + 4), cap);
	snprintf(body, cap, "%s", sep + 4);
	return code;
}

static void
start(void)
{
	static const char *const env[] = {"BROOQ_POLL_INTERVAL=100ms", "BROOQ_ATTEMPT_TIMEOUT=10m",
					  "BROOQ_MAX_EXECUTION_TIME=1h", NULL};
	static char              body[4096], form[256];
	read_doc();
	dsn  = brq_testdb_create(true);
	port = brq_gw_start_http(&gw, dsn, env);
	brq_gw_await_log(&gw, "msg=console_ready", 1, 10000);
	cookie[0] = csrf_h[0] = '\0';
	snprintf(form, sizeof(form), "token=%s", gw.admin_token);
	cr_assert_eq(http("POST", "/console/api/login", form, body, sizeof(body)), 200, "%s", body);
	const char *csrf = strstr(body, "\"csrf\":\"");
	cr_assert_not_null(csrf, "%s", body);
	snprintf(csrf_h, sizeof(csrf_h), "X-CSRF-Token: %.*s\r\n", (int) strcspn(csrf + 8, "\""), csrf + 8);
}

static void
stop(void)
{
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
	free_doc();
}

TestSuite(vocab, .init = start, .fini = stop, .timeout = 120);

/* The id of a job enqueued by brooqctl and claimed (processing: a lease, a claim, the
 * topic's deadlines), so that every instant of the job map is set but its result. */
static unsigned long long
processing_job(void)
{
	char *out;
	cr_assert_eq(ctl(&out, "enqueue mail.send '{\"to\":\"a@example.org\"}' --key order-42"), 0, "%s",
		     out);
	jv *e = jv_parse(out);
	assert_times(e, "brooqctl enqueue");
	unsigned long long id = strtoull(jv_get(e, "id")->text, NULL, 10);
	jv_free(e);
	free(out);
	brq_str     topic = brq_str_c("mail.send");
	brq_request req   = {.op = BRQ_OP_CLAIM, .token = brq_gw_worker(&gw)};
	brq_reply   rep;
	brq_arena   arena;
	void       *keep   = NULL;
	req.claim.worker   = brq_str_c("host1/pid42");
	req.claim.topics   = &topic;
	req.claim.n_topics = 1;
	req.claim.n        = 1;
	brq_arena_init(&arena);
	cr_assert_eq(brq_gw_call(&gw, &req, &rep, &arena, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.claim.n_jobs, 1);
	free(keep);
	brq_arena_fini(&arena);
	return id;
}

/* Each attempt's error (migration 00013) in the job map's "errors": §11's "attempt error"
 * keys in order, its instant twice, the same text through both tools, line breaks kept. */
Test(vocab, a_jobs_attempt_errors_read_the_same_through_both_tools_with_the_documented_keys)
{
	unsigned long long id = processing_job();
	char               sql[256], args[64], path[64], *out;
	static char        body[1 << 16];
	PGconn            *db = brq_testdb_connect(dsn);
	snprintf(sql, sizeof(sql),
		 "UPDATE job SET errors = '[{\"attempt\": 1, \"at_ms\": 1796113474000, \"error\": \"a\\nb\"},"
		 " {\"attempt\": 2, \"at_ms\": 1796113476895, \"error\": \"c\"}]' WHERE id = %llu",
		 id);
	brq_testdb_exec(db, sql);
	PQfinish(db);
	snprintf(args, sizeof(args), "job %llu", id);
	snprintf(path, sizeof(path), "/console/api/job?id=%llu", id);
	cr_assert_eq(ctl(&out, args), 0, "%s", out);
	cr_assert_eq(http("GET", path, NULL, body, sizeof(body)), 200, "%s", body);
	jv *c = jv_parse(out), *h = jv_parse(body);
	for (jv *v = c; v != NULL; v = v == c ? h : NULL) {
		const char *who  = v == c ? "brooqctl job" : "console GET job";
		jv         *errs = jv_get(jv_get(v, "job"), "errors");
		cr_assert_eq(errs->type, 'a', "%s", who);
		cr_assert_eq(errs->n, 2, "%s", who);
		assert_keys(errs->vals[0], "attempt error", NULL, who);
		assert_keys(errs->vals[1], "attempt error", NULL, who);
		cr_assert_str_eq(jv_get(errs->vals[0], "error")->text, "a\nb", "%s", who);
		cr_assert_str_eq(jv_get(errs->vals[1], "at")->text, "2026-12-01T08:24:36.895Z", "%s", who);
		/* The job's 7 instants and one per error. */
		cr_assert_eq(assert_times(v, who), 9, "%s", who);
	}
	out[strlen(out) - 1] = '\0';
	cr_assert_str_eq(out, body, "brooqctl and the console give the errors differently");
	jv_free(c);
	jv_free(h);
	free(out);
}

Test(vocab, one_job_reads_the_same_through_brooqctl_and_the_console_with_the_documented_keys)
{
	unsigned long long id = processing_job();
	char              *out, args[64], path[64];
	static char        body[1 << 16];
	snprintf(args, sizeof(args), "job %llu", id);
	snprintf(path, sizeof(path), "/console/api/job?id=%llu", id);
	cr_assert_eq(ctl(&out, args), 0, "%s", out);
	cr_assert_eq(http("GET", path, NULL, body, sizeof(body)), 200, "%s", body);

	jv *c = jv_parse(out), *h = jv_parse(body);
	cr_assert_eq(c->n, 1, "%s", out);
	cr_assert_str_eq(c->keys[0], "job");
	assert_keys(jv_get(c, "job"), "job", NULL, "brooqctl job");
	assert_keys(jv_get(h, "job"), "job", NULL, "console GET job");
	/* Every instant of the map but none is set: available, locked until, created,
	 * updated, claimed, the two deadlines. */
	cr_assert_eq(assert_times(c, "brooqctl job"), 7, "%s", out);
	cr_assert_eq(assert_times(h, "console GET job"), 7, "%s", body);
	/* One vocabulary: the same job is the same text (brooqctl ends its line). */
	cr_assert_eq(out[strlen(out) - 1], '\n');
	out[strlen(out) - 1] = '\0';
	cr_assert_str_eq(out, body, "brooqctl and the console give the job differently");
	jv_free(c);
	jv_free(h);
	free(out);

	/* The list: each row the same job map. */
	cr_assert_eq(ctl(&out, "jobs --limit 5"), 0, "%s", out);
	cr_assert_eq(http("GET", "/console/api/jobs?limit=5", NULL, body, sizeof(body)), 200, "%s", body);
	c = jv_parse(out);
	h = jv_parse(body);
	for (jv *v = c; v != NULL; v = v == c ? h : NULL) {
		const char *who = v == c ? "brooqctl jobs" : "console GET jobs";
		cr_assert_eq(v->n, 2, "%s", who);
		cr_assert_str_eq(v->keys[0], "jobs");
		cr_assert_str_eq(v->keys[1], "next");
		jv *jobs = jv_get(v, "jobs");
		cr_assert_eq(jobs->n, 1, "%s", who);
		assert_keys(jobs->vals[0], "job", NULL, who);
		cr_assert_eq(assert_times(v, who), 7);
	}
	jv_free(c);
	jv_free(h);
	free(out);

	/* An error: the protocol's error reply, code and msg (brooqctl adds its exit code). */
	static const char *const exit_key[] = {"exit", NULL};
	cr_assert_eq(ctl(&out, "job 424242"), 1, "%s", out);
	cr_assert_eq(http("GET", "/console/api/job?id=424242", NULL, body, sizeof(body)), 404, "%s", body);
	c = jv_parse(out);
	h = jv_parse(body);
	assert_keys(c, "error", exit_key, "brooqctl error");
	assert_keys(h, "error", NULL, "console error");
	cr_assert_str_eq(jv_get(c, "code")->text, "not_found");
	cr_assert_str_eq(jv_get(h, "code")->text, "not_found");
	jv_free(c);
	jv_free(h);
	free(out);
}

Test(vocab, stats_policy_and_schedules_have_the_documented_keys)
{
	(void) processing_job();
	char       *out;
	static char body[1 << 16];

	/* The console's session. */
	cr_assert_eq(http("GET", "/console/api/session", NULL, body, sizeof(body)), 200, "%s", body);
	jv *h = jv_parse(body);
	assert_keys(h, "session (console)", NULL, "console GET session");
	cr_assert_eq(assert_times(h, "console GET session"), 1);
	jv_free(h);

	/* stats: brooqctl, and the console's overview (the monitor's count of the same). */
	cr_assert_eq(ctl(&out, "stats"), 0, "%s", out);
	jv *c = jv_parse(out);
	cr_assert_eq(c->n, 2, "%s", out);
	cr_assert_str_eq(c->keys[0], "terminal_age_ms");
	cr_assert_str_eq(c->keys[1], "topics");
	cr_assert_eq(jv_get(c, "terminal_age_ms")->type, 'n', "brooq-gateway sends it: %s", out);
	assert_keys(jv_get(c, "topics")->vals[0], "stats topic", NULL, "brooqctl stats");
	assert_times(c, "brooqctl stats");
	jv_free(c);
	free(out);
	for (int waited = 0;; waited += 100) {
		cr_assert_eq(http("GET", "/console/api/overview", NULL, body, sizeof(body)), 200, "%s", body);
		// The topic shows once the monitor has counted it; counted_at once a count of
		// the terminal states is in too (a later step of the same monitor round).
		if (strstr(body, "\"topic\":\"mail.send\"") != NULL &&
		    strstr(body, "\"counted_at_ms\":null") == NULL)
			break;
		cr_assert_lt(waited, 10000, "the overview never showed the topic with its count time: %s",
			     body);
		brq_t_sleep_ms(100);
	}
	h = jv_parse(body);
	cr_assert_str_eq(h->keys[0], "at_ms");
	cr_assert_str_eq(h->keys[1], "at");
	cr_assert_str_eq(h->keys[2], "rate_window_ms");
	cr_assert_str_eq(h->keys[3], "counted_at_ms");
	cr_assert_str_eq(h->keys[4], "counted_at");
	cr_assert_str_eq(h->keys[5], "terminal_estimated");
	cr_assert_str_eq(h->keys[6], "database_up");
	cr_assert_str_eq(h->keys[7], "topics");
	cr_assert_eq(h->n, 8);
	assert_keys(jv_get(h, "topics")->vals[0], "overview topic (console)", NULL, "console overview");
	/* at and counted_at: the topic was counted, so counted_at is set. */
	cr_assert_eq(assert_times(h, "console overview"), 2);
	jv_free(h);
	/* The overview's topic is the stats topic's counts under their names, then its own. */
	const keylist *st = doc_row("stats topic"), *ov = doc_row("overview topic (console)");
	for (size_t i = 0; i < st->n && strcmp(st->keys[i], "paused") != 0; i++)
		cr_assert_str_eq(ov->keys[i], st->keys[i], "overview topic key %zu", i);

	/* A policy: brooqctl limits and the console's pause, then both lists of them. */
	cr_assert_eq(ctl(&out, "limits mail.send --concurrency 2"), 0, "%s", out);
	cr_assert_eq(http("POST", "/console/api/pause", "topic=mail.send", body, sizeof(body)), 200, "%s",
		     body);
	c = jv_parse(out);
	h = jv_parse(body);
	assert_keys(jv_get(c, "policy"), "policy", NULL, "brooqctl limits");
	assert_keys(jv_get(h, "policy"), "policy", NULL, "console POST pause");
	cr_assert_eq(c->n + h->n, 2);
	jv_free(c);
	jv_free(h);
	free(out);
	cr_assert_eq(ctl(&out, "topics"), 0, "%s", out);
	cr_assert_eq(http("GET", "/console/api/topics", NULL, body, sizeof(body)), 200, "%s", body);
	cr_assert_eq(out[strlen(out) - 1], '\n');
	out[strlen(out) - 1] = '\0';
	cr_assert_str_eq(out, body, "brooqctl and the console give the topics differently");
	c = jv_parse(out);
	assert_keys(jv_get(c, "topics")->vals[0], "policy", NULL, "brooqctl topics");
	jv_free(c);
	free(out);

	/* Schedules: one of each kind, the same text through both. */
	cr_assert_eq(ctl(&out, "schedule add nightly report.build --cron '30 2 * * *' --tz Europe/Berlin"), 0,
		     "%s", out);
	static const char *const add_first[] = {"name", "created", "next_slot_ms", "next_slot"};
	c                                    = jv_parse(out);
	for (size_t i = 0; i < 4; i++)
		cr_assert_str_eq(c->keys[i], add_first[i]);
	cr_assert_eq(assert_times(c, "brooqctl schedule add"), 1);
	jv_free(c);
	free(out);
	cr_assert_eq(ctl(&out, "schedule add beat ping --every 30s"), 0, "%s", out);
	free(out);
	cr_assert_eq(ctl(&out, "schedule list"), 0, "%s", out);
	cr_assert_eq(http("GET", "/console/api/schedules", NULL, body, sizeof(body)), 200, "%s", body);
	out[strlen(out) - 1] = '\0';
	cr_assert_str_eq(out, body, "brooqctl and the console give the schedules differently");
	c       = jv_parse(out);
	jv *all = jv_get(c, "schedules");
	cr_assert_eq(all->n, 2);
	for (size_t i = 0; i < all->n; i++)
		assert_keys(all->vals[i], "schedule", NULL, "schedule list");
	cr_assert_eq(assert_times(c, "schedule list"), 2, "next slots only: %s", out);
	jv_free(c);
	free(out);

	/* brooqctl migrate: the migration object. */
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "BROOQ_DSN='%s' %s migrate status --json", dsn, brq_testdb_bin("brooqctl")) >
		  0);
	cr_assert_eq(brq_testdb_run(cmd, &out), 0, "%s", out);
	free(cmd);
	c = jv_parse(out);
	cr_assert_str_eq(c->keys[0], "version");
	all = jv_get(c, "migrations");
	for (size_t i = 0; i < all->n; i++)
		assert_keys(all->vals[i], "migration (brooqctl)", NULL, "migrate status");
	cr_assert_eq(assert_times(c, "migrate status"), (int) all->n, "every migration applied: %s", out);
	jv_free(c);
	free(out);
}
