/* SPDX-License-Identifier: MIT */
/* The web console (issue 16): its text formats and sessions as units, its settings, and its HTTP
 * API against a real gateway and PostgreSQL (sign-in, cookies, CSRF, read-only sessions,
 * headers, the operations and their refusals, HTTPS). The overview's speed with 1M jobs is
 * measured by the benchmark (tests/bench/run.sh, group console). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sodium.h>

#include "auth.h"
#include "brq_clock.h"
#include "config/config.h"
#include "console/console_rate.h"
#include "console/console_json.h"
#include "console/console_session.h"
#include "gw.h"
#include "rawhttp.h"
#include "testdb.h"
#include "tutil.h"

/* ---- units: JSON and forms ------------------------------------------------------------ */

Test(json, escapes_what_could_break_out_and_counts_commas)
{
	brq_jw j;
	brq_jw_init(&j, 4096);
	brq_jw_obj(&j);
	brq_jw_key(&j, "s");
	brq_jw_cstr(&j, "a\"b\\c\n<script>&\x01");
	brq_jw_key(&j, "a");
	brq_jw_arr(&j);
	brq_jw_u64(&j, 1);
	brq_jw_i64(&j, -2);
	brq_jw_null(&j);
	brq_jw_bool(&j, true);
	brq_jw_raw(&j, "{\"x\":[1]}", 9);
	brq_jw_end(&j);
	brq_jw_key(&j, "bad");
	brq_jw_str(&j,
		   "\xff"
		   "ok",
		   3);
	brq_jw_end(&j);
	cr_assert_eq(j.err, 0);
	cr_assert_str_eq(j.data,
			 "{\"s\":\"a\\\"b\\\\c\\n\\u003cscript\\u003e\\u0026\\u0001\",\"a\":[1,-2,null,true,{"
			 "\"x\":[1]}],"
			 "\"bad\":\"\xef\xbf\xbdok\"}");
	cr_assert(brq_json_valid(j.data, j.len, 16, 0, NULL));
	brq_jw_reset(&j);
	brq_jw_end(&j); /* nothing open */
	cr_assert_neq(j.err, 0);
	brq_jw_fini(&j);
	brq_jw_init(&j, 8);
	brq_jw_cstr(&j, "longer than eight");
	cr_assert_eq(j.err, BRQ_E2BIG);
	brq_jw_fini(&j);
}

Test(form, decodes_fields_and_refuses_what_is_ambiguous)
{
	brq_form    f;
	const char *why;
	const char *t = "topic=email.send&payload=%7B%22a%22%3A1%7D&key=a+b&empty=&flag";
	cr_assert_eq(brq_form_parse(&f, t, strlen(t), &why), 0);
	cr_assert_eq(f.n, 5);
	cr_assert_str_eq(brq_form_get(&f, "payload")->ptr, "{\"a\":1}");
	cr_assert_str_eq(brq_form_get(&f, "key")->ptr, "a b");
	cr_assert_eq(brq_form_get(&f, "empty")->len, 0);
	cr_assert_null(brq_form_get(&f, "nope"));
	uint64_t v;
	cr_assert_eq(brq_form_u64(&f, "empty", 0, 10, &v), BRQ_ENOTFOUND);
	cr_assert_eq(brq_form_u64(&f, "key", 0, 10, &v), BRQ_EINVAL);
	brq_form_fini(&f);
	const char *bad[] = {"a=1&a=2", "a=%zz", "a=%4", "a=%00", "x=%"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(brq_form_parse(&f, bad[i], strlen(bad[i]), &why), BRQ_EINVAL, "%s", bad[i]);
		cr_assert_not_null(why);
		brq_form_fini(&f);
	}
	cr_assert_eq(brq_form_parse(&f, "n=18446744073709551615", 22, &why), 0);
	cr_assert_eq(brq_form_u64(&f, "n", 0, UINT64_MAX, &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	brq_form_fini(&f);
	cr_assert_eq(brq_form_parse(&f, "n=18446744073709551616", 22, &why), 0);
	cr_assert_eq(brq_form_u64(&f, "n", 0, UINT64_MAX, &v), BRQ_EINVAL);
	brq_form_fini(&f);
}

/* ---- units: sessions ----------------------------------------------------------------- */

static uint64_t fake_now = 1000;
static uint64_t
fake_clock(void)
{
	return fake_now;
}

/* Two token files (admin, worker) in dir, and an auth over them. */
static void
auth_with(brq_auth *a, const char *dir, const char *admin, const char *worker)
{
	char                pa[300], pw[300];
	brq_config_problems p;
	snprintf(pa, sizeof(pa), "%s/admin", dir);
	snprintf(pw, sizeof(pw), "%s/worker", dir);
	FILE *f = fopen(pa, "w");
	fputs(admin, f);
	fclose(f);
	f = fopen(pw, "w");
	fputs(worker, f);
	fclose(f);
	chmod(pa, 0600);
	chmod(pw, 0600);
	const char *ad[] = {pa}, *wk[] = {pw};
	brq_config_problems_init(&p);
	cr_assert_eq(brq_auth_init(a, wk, 1, ad, 1, &p), 0);
	brq_config_problems_fini(&p);
}

#define ADMIN_T  "admin-token-0123456789abcdef0123456789abcdef"
#define WORKER_T "worker-token-0123456789abcdef0123456789abcde"

/* The overview's rate window (docs/console.md: at most 80 s): the baseline is the oldest
 * sample between 5 and 80 s old; samples further back, left from before a pause in
 * watching, are never used (they made a rate average over ~1,000 s, issue 28). */
Test(rate, window_is_between_five_and_eighty_seconds)
{
	const uint64_t now = 10000000;
	/* Watched all along: samples every 6 s, the oldest 96 s back. */
	uint64_t at[BRQ_CONSOLE_SAMPLES];
	for (size_t i = 0; i < BRQ_CONSOLE_SAMPLES; i++)
		at[i] = now - 6000 * (BRQ_CONSOLE_SAMPLES - i);
	size_t b = brq_console_rate_baseline(at, BRQ_CONSOLE_SAMPLES, now);
	cr_assert_lt(b, (size_t) BRQ_CONSOLE_SAMPLES);
	cr_assert_eq(now - at[b], 78000, "the oldest within 80 s: %llu", (unsigned long long) (now - at[b]));
	/* A pause in watching: one sample from 1,000 s ago, one from 3 s ago. No rate. */
	uint64_t gap[3] = {now - 1000000, now - 3000, 0};
	cr_assert_eq(brq_console_rate_baseline(gap, 3, now), 3);
	/* Then one 5 s old: that one, never the 1,000 s old one. */
	gap[2] = now - 5000;
	cr_assert_eq(brq_console_rate_baseline(gap, 3, now), 2);
	/* Exactly 80 s is inside, 80.001 s is not; empty slots (0) never count. */
	uint64_t edge[3] = {now - 80001, now - 80000, 0};
	cr_assert_eq(brq_console_rate_baseline(edge, 3, now), 1);
	cr_assert_eq(brq_console_rate_baseline(edge, 0, now), 0);
}

Test(session, signs_in_by_role_expires_evicts_and_revokes)
{
	char dir[] = "/tmp/brooq-console-sess.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	brq_auth a;
	auth_with(&a, dir, ADMIN_T, WORKER_T);
	brq_console_now_ms = fake_clock;
	brq_console_sessions *s;
	cr_assert_eq(brq_console_sessions_new(&a, 1000, 3, &s), 0);
	char            sid[BRQ_CONSOLE_SID_LEN + 1], sid2[BRQ_CONSOLE_SID_LEN + 1];
	brq_console_who who, got;

	cr_assert_eq(brq_console_session_open(s, "nope-nope-nope-nope-nope-nope-nope", 34, sid, &who),
		     BRQ_ENOTFOUND);
	cr_assert_eq(brq_console_sessions_count(s), 0);
	cr_assert_eq(brq_console_session_open(s, ADMIN_T, strlen(ADMIN_T), sid, &who), 0);
	cr_assert_eq(who.role, BRQ_ROLE_ADMIN);
	cr_assert_eq(strlen(sid), BRQ_CONSOLE_SID_LEN);
	cr_assert_eq(strlen(who.csrf), BRQ_CONSOLE_CSRF_LEN);
	/* The fingerprint: the first 4 bytes of the token's unkeyed BLAKE2b-256. */
	unsigned char h[32];
	char          fp[9];
	crypto_generichash(h, 32, (const unsigned char *) ADMIN_T, strlen(ADMIN_T), NULL, 0);
	sodium_bin2hex(fp, sizeof(fp), h, 4);
	cr_assert_str_eq(who.token_fp, fp);
	cr_assert_eq(brq_console_session_get(s, sid, strlen(sid), &got), 0);
	cr_assert_str_eq(got.csrf, who.csrf);
	cr_assert(brq_console_csrf_ok(&got, who.csrf, strlen(who.csrf)));
	char wrong[BRQ_CONSOLE_CSRF_LEN + 1];
	memcpy(wrong, who.csrf, sizeof(wrong));
	wrong[0] = wrong[0] == 'A' ? 'B' : 'A';
	cr_assert_not(brq_console_csrf_ok(&got, wrong, strlen(wrong)));
	cr_assert_not(brq_console_csrf_ok(&got, NULL, 0));
	sid[3] = sid[3] == 'x' ? 'y' : 'x';
	cr_assert_eq(brq_console_session_get(s, sid, strlen(sid), &got), BRQ_ENOTFOUND);

	/* Expiry: ttl after sign-in. */
	cr_assert_eq(brq_console_session_open(s, WORKER_T, strlen(WORKER_T), sid2, &who), 0);
	cr_assert_eq(who.role, BRQ_ROLE_WORKER);
	fake_now += 999;
	cr_assert_eq(brq_console_session_get(s, sid2, strlen(sid2), &got), 0);
	fake_now += 1;
	cr_assert_eq(brq_console_session_get(s, sid2, strlen(sid2), &got), BRQ_ENOTFOUND);

	/* Bounded: a fourth sign-in drops the one used least recently. */
	char ids[4][BRQ_CONSOLE_SID_LEN + 1];
	for (int i = 0; i < 3; i++) {
		fake_now += 1;
		cr_assert_eq(brq_console_session_open(s, ADMIN_T, strlen(ADMIN_T), ids[i], &who), 0);
	}
	fake_now += 1;
	cr_assert_eq(brq_console_session_get(s, ids[0], BRQ_CONSOLE_SID_LEN, &got),
		     0); /* used: not the oldest now */
	fake_now += 1;
	cr_assert_eq(brq_console_session_open(s, ADMIN_T, strlen(ADMIN_T), ids[3], &who), 0);
	cr_assert_eq(brq_console_sessions_count(s), 3);
	cr_assert_eq(brq_console_session_get(s, ids[1], BRQ_CONSOLE_SID_LEN, &got), BRQ_ENOTFOUND);
	cr_assert_eq(brq_console_session_get(s, ids[0], BRQ_CONSOLE_SID_LEN, &got), 0);

	/* A token removed (a reload publishing another set) ends its sessions. */
	brq_auth_set       *set;
	brq_config_problems p;
	char                pw[300];
	snprintf(pw, sizeof(pw), "%s/worker", dir);
	const char *wk[] = {pw};
	brq_config_problems_init(&p);
	cr_assert_eq(brq_auth_prepare(&a, wk, 1, NULL, 0, &set, &p), 0);
	brq_config_problems_fini(&p);
	cr_assert_eq(brq_console_sessions_count(s), 3);
	brq_auth_publish(&a, set);
	/* At once, not at their next use: the three admin sessions are gone. */
	cr_assert_eq(brq_console_sessions_count(s), 0, "the reload itself ends the revoked token's sessions");
	/* And for good: the token coming back does not bring its sessions back. */
	char pa[300];
	snprintf(pa, sizeof(pa), "%s/admin", dir);
	const char *ad[] = {pa};
	brq_config_problems_init(&p);
	cr_assert_eq(brq_auth_prepare(&a, wk, 1, ad, 1, &set, &p), 0);
	brq_config_problems_fini(&p);
	brq_auth_publish(&a, set);
	cr_assert_eq(brq_console_session_get(s, ids[0], BRQ_CONSOLE_SID_LEN, &got), BRQ_ENOTFOUND);

	brq_console_session_close(s, ids[3], BRQ_CONSOLE_SID_LEN);
	brq_console_sessions_free(s);
	brq_auth_fini(&a);
	brq_console_now_ms = brq_now_ms;
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* ---- settings -------------------------------------------------------------------------- */

typedef struct kv {
	const char *k, *v;
} kv;
static const kv *cur_env;
static const char *
lookup(const char *name, void *arg)
{
	(void) arg;
	for (const kv *e = cur_env; e != NULL && e->k != NULL; e++)
		if (strcmp(e->k, name) == 0)
			return e->v;
	if (strcmp(name, "BROOQ_DSN") == 0)
		return "host=/nonexistent dbname=x";
	if (strcmp(name, "BROOQ_ADMIN_TOKEN_FILES") == 0)
		return "/nonexistent/admin";
	return NULL;
}

static brq_config          cfg;
static brq_config_problems probs;

static int
load(const kv *env)
{
	cur_env = env;
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	return brq_config_load(&cfg, NULL, lookup, NULL, &probs);
}

static bool
has_problem(const char *needle)
{
	for (size_t i = 0; i < probs.count; i++)
		if (strstr(probs.lines[i], needle) != NULL)
			return true;
	return false;
}

Test(settings, console_beyond_loopback_only_when_asked_and_over_https)
{
	cr_assert_eq(load((kv[]) {{NULL, NULL}}), 0);
	cr_assert(cfg.console_enabled, "on by default with the loopback default");
	cr_assert_eq(cfg.console_session_ttl_ms, 8ull * 3600 * 1000);
	cr_assert_null(cfg.http_tls_cert_file);

	/* A remote Prometheus setup from before the console: the console stays off. */
	cr_assert_eq(load((kv[]) {{"BROOQ_HTTP_LISTEN", "0.0.0.0:9100"},
				  {"BROOQ_HTTP_ALLOW_NONLOOPBACK", "true"},
				  {NULL, NULL}}),
		     0);
	cr_assert_not(cfg.console_enabled);

	cr_assert_eq(load((kv[]) {{"BROOQ_HTTP_LISTEN", "0.0.0.0:9100"},
				  {"BROOQ_HTTP_ALLOW_NONLOOPBACK", "true"},
				  {"BROOQ_CONSOLE", "on"},
				  {NULL, NULL}}),
		     BRQ_EINVAL);
	cr_assert(has_problem(
		"BROOQ_CONSOLE: on with the non-loopback BROOQ_HTTP_LISTEN host 0.0.0.0 needs HTTPS"));

	cr_assert_eq(load((kv[]) {{"BROOQ_HTTP_LISTEN", "off"}, {"BROOQ_CONSOLE", "on"}, {NULL, NULL}}),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_CONSOLE: on, but BROOQ_HTTP_LISTEN is off"));
	cr_assert_eq(load((kv[]) {{"BROOQ_CONSOLE", "yes"}, {NULL, NULL}}), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_CONSOLE: must be on or off"));
	cr_assert_eq(load((kv[]) {{"BROOQ_CONSOLE", "off"}, {NULL, NULL}}), 0);
	cr_assert_not(cfg.console_enabled);

	cr_assert_eq(load((kv[]) {{"BROOQ_CONSOLE_SESSION_TTL", "30m"}, {NULL, NULL}}), 0);
	cr_assert_eq(cfg.console_session_ttl_ms, 30ull * 60 * 1000);
	cr_assert_eq(load((kv[]) {{"BROOQ_CONSOLE_SESSION_TTL", "8d"}, {NULL, NULL}}), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_CONSOLE_SESSION_TTL: must be between"));
	cr_assert_eq(load((kv[]) {{"BROOQ_CONSOLE_SESSION_TTL", "60"}, {NULL, NULL}}), BRQ_EINVAL);

	cr_assert_eq(load((kv[]) {{"BROOQ_HTTP_TLS_CERT_FILE", "/nonexistent/c.pem"}, {NULL, NULL}}),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_HTTP_TLS_KEY_FILE: required with BROOQ_HTTP_TLS_CERT_FILE"));
	cr_assert_eq(load((kv[]) {{"BROOQ_HTTP_TLS_CERT_FILE", "/nonexistent/c.pem"},
				  {"BROOQ_HTTP_TLS_KEY_FILE", "/nonexistent/k.pem"},
				  {NULL, NULL}}),
		     BRQ_EINVAL);
	cr_assert(has_problem("/nonexistent/c.pem: cannot open"));
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
}

/* ---- HTTP against a real gateway ----------------------------------------------------------- */

typedef struct console_gw {
	brq_gw   gw;
	char    *dsn;
	uint16_t port;
	char     cookie[128]; /* "Cookie: brooq_session=...\r\n" */
	char     csrf_h[128]; /* "X-CSRF-Token: ...\r\n" */
} console_gw;

static void
cgw_start(console_gw *c, const char *const *more)
{
	const char *env[12] = {NULL};
	int         n       = 0;
	c->dsn              = brq_testdb_create(true);
	env[n++]            = "BROOQ_POLL_INTERVAL=100ms";
	for (int i = 0; more != NULL && more[i] != NULL && n < 11; i++)
		env[n++] = more[i];
	c->port = brq_gw_start_http(&c->gw, c->dsn, env);
	/* The RPC listener answers before the HTTP endpoint is up, and the endpoint before
	 * the console's handlers are on it (a request in between gets NNG's own 404; CI
	 * saw that once under ASan): wait for the console's word, or for its being off. */
	for (int waited = 0;; waited += 20) {
		const char *log = brq_gw_log(&c->gw);
		if (brq_gw_count(log, "msg=console_ready") + brq_gw_count(log, "msg=console_off") > 0)
			break;
		cr_assert_lt(waited, 10000, "the console never came up:\n%s", log);
		brq_t_sleep_ms(20);
	}
}

static void
cgw_stop(console_gw *c)
{
	const char *log = brq_gw_log(&c->gw);
	/* Never a token in the log, whatever the test did. */
	cr_assert_null(strstr(log, c->gw.admin_token), "admin token in the log");
	cr_assert_null(strstr(log, c->gw.worker_token), "worker token in the log");
	brq_gw_stop(&c->gw);
	brq_testdb_drop(c->dsn);
}

/* Signs in with token: the session's headers into c, the reply into r. */
static void
sign_in(console_gw *c, const char *token, brq_http_reply *r)
{
	brq_http_sign_in(c->port, token, c->cookie, c->csrf_h, r);
}

/* Headers plus the session cookie and the CSRF header. */
static const char *
authed(const console_gw *c)
{
	static char h[300];
	snprintf(h, sizeof(h), "%s%s", c->cookie, c->csrf_h);
	return h;
}

static long long
job_count(const char *dsn, const char *where)
{
	PGconn *pg = brq_testdb_connect(dsn);
	char    sql[256];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM job WHERE %s", where);
	long long n = brq_testdb_int(pg, sql);
	PQfinish(pg);
	return n;
}

Test(api, pages_carry_the_security_headers_and_no_inline_script)
{
	console_gw     c;
	brq_http_reply r;
	cgw_start(&c, NULL);
	brq_http(c.port, "GET", "/console/", "", NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_not_null(strstr(r.head, "Content-Security-Policy: default-src 'none'; script-src 'self';"));
	cr_assert_null(strstr(r.head, "unsafe-inline"));
	cr_assert_not_null(strstr(r.head, "X-Frame-Options: DENY"));
	cr_assert_not_null(strstr(r.head, "X-Content-Type-Options: nosniff"));
	cr_assert_not_null(strstr(r.head, "Content-Type: text/html; charset=utf-8"));
	/* Every script element has a src: nothing inline. */
	for (const char *p = strstr(r.body, "<script"); p != NULL; p = strstr(p + 1, "<script"))
		cr_assert_eq(strncmp(p, "<script src=", 12), 0, "inline script: %.40s", p);
	cr_assert_null(strstr(r.body, " on"), "no inline event handler attributes");
	brq_http(c.port, "GET", "/console/app.js", "", NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_not_null(strstr(r.head, "Content-Type: text/javascript; charset=utf-8"));
	brq_http(c.port, "GET", "/console/nope.js", "", NULL, &r);
	cr_assert_eq(r.status, 404);
	brq_http(c.port, "GET", "/console/api/overview", "", NULL, &r);
	cr_assert_eq(r.status, 401);
	cr_assert_not_null(strstr(r.head, "X-Frame-Options: DENY"));
	brq_http(c.port, "GET", "/console/api/nothing", "", NULL, &r);
	cr_assert_eq(r.status, 404);
	/* /metrics is where it was. */
	brq_http(c.port, "GET", "/metrics", "", NULL, &r);
	cr_assert_eq(r.status, 200);
	cgw_stop(&c);
}

Test(api, sign_in_refuses_wrong_tokens_urls_and_other_sites)
{
	console_gw     c;
	brq_http_reply r;
	char           path[256];
	cgw_start(&c, NULL);
	brq_http(c.port, "POST", "/console/api/login", "", "token=0123456789abcdef0123456789abcdef0123", &r);
	cr_assert_eq(r.status, 401);
	cr_assert_null(strstr(r.head, "Set-Cookie"));
	brq_http(c.port, "GET", "/console/api/login", "", NULL, &r);
	cr_assert_eq(r.status, 405);
	/* A token in a URL is refused on any path, and the URL is not logged. */
	snprintf(path, sizeof(path), "/console/api/session?token=%s", c.gw.admin_token);
	brq_http(c.port, "GET", path, "", NULL, &r);
	cr_assert_eq(r.status, 400);
	snprintf(path, sizeof(path), "/console/?x=1&Token=%s", c.gw.admin_token);
	brq_http(c.port, "GET", path, "", NULL, &r);
	cr_assert_eq(r.status, 400);
	/* Another site's page cannot sign a browser in. */
	char body[128];
	snprintf(body, sizeof(body), "token=%s", c.gw.admin_token);
	brq_http(c.port, "POST", "/console/api/login", "Origin: http://evil.example\r\n", body, &r);
	cr_assert_eq(r.status, 403);
	brq_http(c.port, "POST", "/console/api/login", "Sec-Fetch-Site: cross-site\r\n", body, &r);
	cr_assert_eq(r.status, 403);
	/* Trailing whitespace (a token file read whole) is not part of the token. */
	snprintf(body, sizeof(body), "token=%s%%0A", c.gw.admin_token);
	brq_http(c.port, "POST", "/console/api/login", "", body, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_not_null(strstr(r.head, "; Path=/console; Max-Age=28800; HttpOnly; SameSite=Strict"), "%s",
			   r.head);
	cr_assert_null(strstr(r.head, "Secure"), "no Secure flag over plain HTTP");
	const char *log = brq_gw_log(&c.gw);
	cr_assert_geq(brq_gw_count(log, "console_sign_in_failed"), 1);
	cr_assert_eq(brq_gw_count(log, "console_token_in_url"), 2);
	brq_http(c.port, "GET", "/metrics", "", NULL, &r);
	cr_assert_not_null(strstr(r.body, "brooq_auth_failures_total 1\n"), "a failed sign-in is counted");
	cgw_stop(&c);
}

Test(api, actions_need_the_csrf_token_and_an_admin_session)
{
	console_gw     c;
	brq_http_reply r;
	cgw_start(&c, NULL);
	PGconn   *pg = brq_testdb_connect(c.dsn);
	long long id =
		brq_testdb_int(pg, "INSERT INTO job (topic, payload) VALUES ('t.one', '{}') RETURNING id");
	char body[64];
	snprintf(body, sizeof(body), "id=%lld", id);
	sign_in(&c, c.gw.admin_token, &r);

	brq_http(c.port, "POST", "/console/api/cancel", c.cookie, body, &r);
	cr_assert_eq(r.status, 403, "%s", r.body);
	cr_assert_not_null(strstr(r.body, "X-CSRF-Token"));
	char wrong[300];
	snprintf(wrong, sizeof(wrong), "%sX-CSRF-Token: %s\r\n", c.cookie,
		 "A23456789012345678901234567890123456789012");
	brq_http(c.port, "POST", "/console/api/cancel", wrong, body, &r);
	cr_assert_eq(r.status, 403);
	cr_assert_eq(job_count(c.dsn, "state = 'pending'"), 1, "nothing changed");
	/* A form body only: JSON bodies are not read as forms. */
	brq_http(c.port, "POST", "/console/api/cancel", authed(&c), NULL, &r);
	cr_assert_eq(r.status, 400);
	cr_assert_not_null(strstr(r.body, "id: required"));

	brq_http(c.port, "POST", "/console/api/cancel", authed(&c), body, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"state\":\"canceled\",\"canceled\":true"));
	cr_assert_eq(job_count(c.dsn, "state = 'canceled'"), 1);
	brq_http(c.port, "POST", "/console/api/cancel", authed(&c), body, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_not_null(strstr(r.body, "\"canceled\":false"), "a terminal job is reported as it is");
	brq_http(c.port, "POST", "/console/api/cancel", authed(&c), "id=999999", &r);
	cr_assert_eq(r.status, 404);

	/* A worker token's session reads but does not act. */
	console_gw w = c;
	sign_in(&w, c.gw.worker_token, &r);
	cr_assert_not_null(strstr(r.body, "\"role\":\"worker\",\"read_only\":true"));
	char q[64];
	snprintf(q, sizeof(q), "/console/api/job?id=%lld", id);
	brq_http(c.port, "GET", q, w.cookie, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_not_null(strstr(r.body, "\"state\":\"canceled\""));
	brq_http(c.port, "POST", "/console/api/enqueue", authed(&w), "topic=t.two&payload=%7B%7D", &r);
	cr_assert_eq(r.status, 403);
	cr_assert_not_null(strstr(r.body, "read-only"));
	cr_assert_eq(job_count(c.dsn, "topic = 't.two'"), 0);

	/* Sign-out ends the session. */
	brq_http(c.port, "POST", "/console/api/logout", authed(&c), "", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_not_null(strstr(r.head, "Max-Age=0"));
	brq_http(c.port, "GET", "/console/api/session", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 401);

	const char *log = brq_gw_log(&c.gw);
	char        line[160];
	snprintf(
		line, sizeof(line),
		"console_action action=cancel id=%lld state=canceled canceled=true role=admin token_fp=", id);
	cr_assert_not_null(strstr(log, line), "the action is logged with who did it");
	cr_assert_geq(brq_gw_count(log, "console_csrf_refused"), 2);
	PQfinish(pg);
	cgw_stop(&c);
}

Test(api, enqueue_and_job_go_through_the_rpc_validation)
{
	console_gw     c;
	brq_http_reply r;
	cgw_start(&c, NULL);
	sign_in(&c, c.gw.admin_token, &r);
	brq_http(c.port, "POST", "/console/api/enqueue", authed(&c),
		 "topic=mail.out&payload=%7B%22to%22%3A%22x%40y%22%7D&key=k-1&delay_ms=60000&max_attempts=3&"
		 "priority=2",
		 &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"created\":true"));
	long long id = atoll(strstr(r.body, "\"id\":") + 5);
	cr_assert_eq(
		job_count(c.dsn,
			  "topic = 'mail.out' AND idempotency_key = 'k-1' AND max_attempts = 3 AND priority "
			  "= 2 AND "
			  "available_at > now() + interval '50 seconds' AND payload = '{\"to\":\"x@y\"}'"),
		1);
	/* The same key again: the same job, not created (invariant 8). */
	brq_http(c.port, "POST", "/console/api/enqueue", authed(&c), "topic=mail.out&payload=%7B%7D&key=k-1",
		 &r);
	cr_assert_eq(r.status, 200);
	cr_assert_not_null(strstr(r.body, "\"created\":false"));
	cr_assert_eq(atoll(strstr(r.body, "\"id\":") + 5), id);
	const struct {
		const char *body, *msg;
		int         status;
	} bad[] = {
		{"payload=%7B%7D", "topic: required", 400},
		{"topic=Mail&payload=%7B%7D", "topic: must match", 400},
		{"topic=m&payload=%7Bx", "payload: invalid JSON", 400},
		{"topic=m&payload=%5B1e131071%5D",
		 "payload: number at byte 1 would print as 131072 characters", 400},
		{"topic=m", "payload: required", 400},
		{"topic=m&payload=1&max_attempts=0", "max_attempts: must be", 400},
		{"topic=m&payload=1&priority=10", "priority: must be 1..9", 400},
		{"topic=m&payload=1&delay_ms=-1", "delay_ms: must be", 400},
		{"topic=m&payload=1&topic=n", "given twice", 400},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		brq_http(c.port, "POST", "/console/api/enqueue", authed(&c), bad[i].body, &r);
		cr_assert_eq(r.status, bad[i].status, "%s: %d %s", bad[i].body, r.status, r.body);
		cr_assert_not_null(strstr(r.body, bad[i].msg), "%s: %s", bad[i].body, r.body);
	}
	cr_assert_eq(job_count(c.dsn, "true"), 1, "nothing refused was written");
	char q[64];
	snprintf(q, sizeof(q), "/console/api/job?id=%lld", id);
	brq_http(c.port, "GET", q, c.cookie, NULL, &r);
	cr_assert_eq(r.status, 200);
	/* The job's JSON form (docs/protocol.md §11): the protocol's keys in its order. */
	cr_assert_not_null(strstr(r.body, "\"payload\":{\"to\": \"x@y\"},\"state\":\"pending\""), "%s",
			   r.body);
	cr_assert_not_null(strstr(r.body, "\"key\":\"k-1\",\"created_at_ms\":"), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"priority\":2,\"result\":null,\"retry_of\":null,"), "%s", r.body);
	brq_http(c.port, "GET", "/console/api/job?id=abc", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 400);
	brq_http(c.port, "GET", "/console/api/job?id=424242", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 404);

	/* The overview: depth from the monitor, no database on the request path. */
	for (int i = 0; i < 50; i++) {
		brq_http(c.port, "GET", "/console/api/overview", c.cookie, NULL, &r);
		if (strstr(r.body, "\"failed\":0,\"done\":0") != NULL &&
		    strstr(r.body, "\"pending\":1") != NULL)
			break;
		brq_t_sleep_ms(100);
	}
	cr_assert_not_null(strstr(r.body, "{\"topic\":\"mail.out\",\"pending\":1,\"processing\":0,"), "%s",
			   r.body);
	cr_assert_not_null(strstr(r.body, "\"canceled\":0,\"oldest_ready_age_ms\":"), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"enqueued_total\":1"), "%s", r.body);
	cgw_stop(&c);
}

Test(api, issue15_operations_check_their_parameters)
{
	console_gw     c;
	brq_http_reply r;
	cgw_start(&c, NULL);
	sign_in(&c, c.gw.admin_token, &r);
	const struct {
		const char *method, *path, *body;
		int         status;
		const char *msg;
	} calls[] = {
		{"GET", "/console/api/jobs?state=zombie", NULL, 400,
		 "{\"code\":\"invalid_argument\",\"msg\":\"state: must be"},
		{"GET", "/console/api/jobs?limit=201", NULL, 400, "limit: must be"},
		{"GET", "/console/api/jobs?created_after_ms=5&created_before_ms=4", NULL, 400,
		 "created_after_ms"},
		{"GET", "/console/api/jobs?cursor=nope", NULL, 400, "list.cursor: not a cursor of this list"},
		{"GET", "/console/api/topics", NULL, 200, "{\"topics\":[]}"},
		{"GET", "/console/api/schedules", NULL, 200, "{\"schedules\":[]}"},
		{"POST", "/console/api/retry", "id=7", 404, "job 7 not found"},
		{"POST", "/console/api/retry", "topic=a&state=done", 400, "dead or canceled"},
		{"POST", "/console/api/delete", "id=x", 400, "id: must be"},
		{"POST", "/console/api/delete", "id=7", 404,
		 "{\"code\":\"not_found\",\"msg\":\"delete: job 7 not found\"}"},
		{"POST", "/console/api/pause", "topic=A", 400, "topic"},
		{"POST", "/console/api/pause", "topic=a", 200,
		 "{\"policy\":{\"topic\":\"a\",\"paused\":true,\"max_running\":null,\"rate_per_s\":null,"
		 "\"running\":0}}"},
		{"GET", "/console/api/topics", NULL, 200,
		 "{\"topics\":[{\"topic\":\"a\",\"paused\":true,\"max_running\":null,\"rate_per_s\":null,"
		 "\"running\":0}]}"},
		{"POST", "/console/api/resume", "", 400, "topic: required"},
		{"POST", "/console/api/resume", "topic=a", 200,
		 "{\"policy\":{\"topic\":\"a\",\"paused\":false,\"max_running\":null,\"rate_per_s\":null,"
		 "\"running\":0}}"},
		{"GET", "/console/api/topics", NULL, 200, "{\"topics\":[]}"},
	};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		brq_http(c.port, calls[i].method, calls[i].path, authed(&c), calls[i].body, &r);
		cr_assert_eq(r.status, calls[i].status, "%s %s: %d %s", calls[i].method, calls[i].path,
			     r.status, r.body);
		cr_assert_not_null(strstr(r.body, calls[i].msg), "%s: %s", calls[i].path, r.body);
	}
	cgw_stop(&c);
}

/* Issue 15's list, retry and delete through the console, answering docs/console.md's JSON. */
Test(api, lists_retries_and_deletes_jobs)
{
	console_gw     c;
	brq_http_reply r;
	cgw_start(&c, NULL);
	sign_in(&c, c.gw.admin_token, &r);
	PGconn *pg = brq_testdb_connect(c.dsn);
	brq_testdb_exec(
		pg,
		"INSERT INTO job (topic, state, last_error, result, lost_leases) VALUES"
		" ('mail.out', 'dead', 'smtp down', NULL, 0), ('mail.out', 'dead', 'quarantined', NULL, 5),"
		" ('mail.out', 'done', NULL, '{\"sent\": 1}', 0), ('other', 'dead', NULL, NULL, 0),"
		" ('mail.out', 'pending', NULL, NULL, 0)");
	long long first = brq_testdb_int(pg, "SELECT min(id) FROM job");
	PQfinish(pg);

	brq_http(c.port, "GET", "/console/api/jobs?topic=mail.out&state=dead&limit=1", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	char want[128];
	snprintf(want, sizeof(want),
		 "{\"jobs\":[{\"id\":%lld,\"topic\":\"mail.out\",\"payload\":{},\"state\":\"dead\"",
		 first + 1);
	cr_assert_not_null(strstr(r.body, want), "%s", r.body);
	/* The crash-loop quarantine's count (SPEC invariant 18), for the job page. */
	cr_assert_not_null(strstr(r.body, "\"max_attempts\":5,\"available_at_ms\":"), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"lost_leases\":5,\"errors\":null}"), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"next\":\"v1."), "%s", r.body);
	char *next = strstr(r.body, "\"next\":\"") + 8;
	char  path[256];
	snprintf(path, sizeof(path), "/console/api/jobs?topic=mail.out&state=dead&limit=1&cursor=%.*s",
		 (int) strcspn(next, "\""), next);
	brq_http(c.port, "GET", path, c.cookie, NULL, &r);
	snprintf(want, sizeof(want), "{\"jobs\":[{\"id\":%lld,", first);
	cr_assert_not_null(strstr(r.body, want), "%s", r.body);
	cr_assert_not_null(strstr(r.body, "\"next\":null}"), "%s", r.body);
	/* The done job's result, as JSON. */
	brq_http(c.port, "GET", "/console/api/jobs?topic=mail.out&state=done", c.cookie, NULL, &r);
	cr_assert_not_null(strstr(r.body, "\"result\":{\"sent\": 1},\"retry_of\":null"), "%s", r.body);

	/* Retry one, then the rest in bulk; the originals stay. */
	char body[64];
	snprintf(body, sizeof(body), "id=%lld", first);
	brq_http(c.port, "POST", "/console/api/retry", authed(&c), body, &r);
	cr_assert_eq(r.status, 200, "%d %s", r.status, r.body);
	snprintf(want, sizeof(want), "{\"retried\":1,\"ids\":[%lld]}", first + 5);
	cr_assert_str_eq(r.body, want);
	brq_http(c.port, "POST", "/console/api/retry", authed(&c), "topic=mail.out&state=dead&limit=10", &r);
	snprintf(want, sizeof(want), "{\"retried\":1,\"ids\":[%lld]}", first + 6);
	cr_assert_str_eq(r.body, want);
	cr_assert_eq(job_count(c.dsn, "retry_of IS NOT NULL AND state = 'pending'"), 2);
	cr_assert_eq(job_count(c.dsn, "retry_of IS NOT NULL AND lost_leases = 0"), 2, "a retry starts at 0");
	cr_assert_eq(job_count(c.dsn, "state = 'dead'"), 3, "the originals are kept");

	/* Delete: a terminal job goes; a pending one is a conflict. */
	snprintf(body, sizeof(body), "id=%lld", first + 2);
	brq_http(c.port, "POST", "/console/api/delete", authed(&c), body, &r);
	snprintf(want, sizeof(want), "{\"id\":%lld,\"deleted\":true}", first + 2);
	cr_assert_str_eq(r.body, want);
	snprintf(body, sizeof(body), "id=%lld", first + 4);
	brq_http(c.port, "POST", "/console/api/delete", authed(&c), body, &r);
	cr_assert_eq(r.status, 409, "%d %s", r.status, r.body);
	cr_assert_not_null(strstr(r.body, "is pending; only done, dead or canceled"), "%s", r.body);
	cr_assert_eq(job_count(c.dsn, "true"), 6);
	cgw_stop(&c);
}

Test(api, sessions_expire_and_end_when_their_token_is_removed)
{
	console_gw     c;
	brq_http_reply r;
	const char    *more[] = {"BROOQ_CONSOLE_SESSION_TTL=1s", NULL};
	cgw_start(&c, more);
	sign_in(&c, c.gw.admin_token, &r);
	cr_assert_not_null(strstr(r.head, "Max-Age=1;"));
	brq_http(c.port, "GET", "/console/api/session", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 200);
	brq_t_sleep_ms(1100);
	brq_http(c.port, "GET", "/console/api/session", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 401, "expired");
	cgw_stop(&c);

	cgw_start(&c, NULL);
	sign_in(&c, c.gw.worker_token, &r);
	/* The worker token's file now holds another token; SIGHUP reloads. */
	FILE *f = fopen(c.gw.worker_token_file, "w");
	fputs("another-worker-token-0123456789abcdef0123456789", f);
	fclose(f);
	kill(c.gw.pid, SIGHUP);
	brq_gw_await_log(&c.gw, "tokens_reloaded", 1, 5000);
	brq_http(c.port, "GET", "/console/api/session", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 401, "a removed token's session ends");
	cr_assert_eq(brq_gw_count(brq_gw_log(&c.gw), "console_session_revoked"), 1);
	cgw_stop(&c);
}

/* Status of an RPC ping with `token`. */
static brq_status
rpc_ping(const brq_gw *gw, const char *token)
{
	brq_request req = {.op = BRQ_OP_PING, .token = brq_str_c(token)};
	brq_reply   rep;
	brq_arena   a;
	void       *keep = NULL;
	brq_arena_init(&a);
	brq_status st = brq_gw_call(gw, &req, &rep, &a, &keep);
	free(keep);
	brq_arena_fini(&a);
	return st;
}

/* docs/security.md §5: a leaked token is revoked by removing its file and reloading. */
Test(api, removing_a_token_file_and_reloading_revokes_it_console_sessions_included)
{
	char        dir[]  = "/tmp/brooq-console-revoke.XXXXXX", leaked_p[96], kept_p[96], e_list[256];
	const char *leaked = "leaked-worker-token-0123456789abcdef0123456789";
	const char *kept   = "kept-worker-token-0123456789abcdef0123456789ab";
	cr_assert_not_null(mkdtemp(dir));
	snprintf(leaked_p, sizeof(leaked_p), "%s/leaked", dir);
	snprintf(kept_p, sizeof(kept_p), "%s/kept", dir);
	FILE *f = fopen(leaked_p, "w");
	fputs(leaked, f);
	fclose(f);
	f = fopen(kept_p, "w");
	fputs(kept, f);
	fclose(f);
	cr_assert_eq(chmod(leaked_p, 0600) | chmod(kept_p, 0600), 0);
	snprintf(e_list, sizeof(e_list), "BROOQ_WORKER_TOKEN_FILES=%s,%s", leaked_p, kept_p);
	const char    *more[] = {e_list, NULL};
	console_gw     c;
	brq_http_reply r;
	char           leaked_cookie[128];
	cgw_start(&c, more);
	sign_in(&c, leaked, &r);
	memcpy(leaked_cookie, c.cookie, sizeof(leaked_cookie));
	sign_in(&c, kept, &r);
	brq_http(c.port, "GET", "/console/api/session", leaked_cookie, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(rpc_ping(&c.gw, leaked), BRQ_ST_OK);

	cr_assert_eq(unlink(leaked_p), 0);
	kill(c.gw.pid, SIGHUP);
	brq_gw_await_log(&c.gw, "msg=reload_done", 1, 10000);
	const char *log = brq_gw_log(&c.gw);
	char        want[200];
	snprintf(want, sizeof(want), "msg=token_file_missing role=worker path=%s effect=revoked", leaked_p);
	cr_assert_not_null(strstr(log, want), "%s", log);
	/* Ended by the reload itself, before any request of the session's. */
	cr_assert_eq(brq_gw_count(log, "msg=console_session_revoked"), 1, "%s", log);
	cr_assert_eq(rpc_ping(&c.gw, leaked), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(rpc_ping(&c.gw, kept), BRQ_ST_OK);
	brq_http(c.port, "GET", "/console/api/session", leaked_cookie, NULL, &r);
	cr_assert_eq(r.status, 401, "the revoked token's session still answers: %s", r.body);
	brq_http(c.port, "GET", "/console/api/session", c.cookie, NULL, &r);
	cr_assert_eq(r.status, 200, "the other token's session ended too: %s", r.body);
	/* Signing in again with it is refused as well. */
	char body[128];
	snprintf(body, sizeof(body), "token=%s", leaked);
	brq_http(c.port, "POST", "/console/api/login", "", body, &r);
	cr_assert_eq(r.status, 401, "%d %s", r.status, r.body);
	cr_assert_null(strstr(brq_gw_log(&c.gw), leaked), "the leaked token was logged");
	cgw_stop(&c);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(api, console_off_serves_no_console)
{
	console_gw     c;
	brq_http_reply r;
	const char    *more[] = {"BROOQ_CONSOLE=off", NULL};
	cgw_start(&c, more);
	brq_http(c.port, "GET", "/console/", "", NULL, &r);
	cr_assert_eq(r.status, 404);
	brq_http(c.port, "GET", "/metrics", "", NULL, &r);
	cr_assert_eq(r.status, 200, "the rest of the endpoint is served");
	cgw_stop(&c);
}

Test(api, https_endpoint_serves_the_console_with_secure_cookies)
{
	char dir[] = "/tmp/brooq-console-tls.XXXXXX", cmd[512], e_cert[350], e_key[350];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/tests/support/tls_certs.sh %s", getenv("BROOQ_SOURCE_DIR"), dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(e_cert, sizeof(e_cert), "BROOQ_HTTP_TLS_CERT_FILE=%s/server.pem", dir);
	snprintf(e_key, sizeof(e_key), "BROOQ_HTTP_TLS_KEY_FILE=%s/server.key", dir);
	const char *more[] = {e_cert, e_key, NULL};
	console_gw  c;
	cgw_start(&c, more);
	char out[300];
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(cmd, sizeof(cmd),
		 "curl -s --cacert %s/ca.pem -o /dev/null -D %s -X POST --data-urlencode token=%s "
		 "https://localhost:%u/console/api/login",
		 dir, out, c.gw.admin_token, c.port);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	char   head[4096] = "";
	FILE  *f          = fopen(out, "r");
	size_t n          = fread(head, 1, sizeof(head) - 1, f);
	fclose(f);
	head[n] = '\0';
	cr_assert_not_null(strstr(head, "HTTP/1.1 200"), "%s", head);
	cr_assert_not_null(strstr(head, "HttpOnly; SameSite=Strict; Secure"), "%s", head);
	cr_assert_not_null(strstr(head, "Strict-Transport-Security:"), "%s", head);
	/* Plain HTTP on the same port gets no console. */
	snprintf(cmd, sizeof(cmd), "curl -s -o /dev/null --max-time 5 http://127.0.0.1:%u/console/", c.port);
	cr_assert_neq(system(cmd), 0);
	cgw_stop(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(api, schedules_lists_the_schedule_table)
{
	console_gw               c;
	brq_http_reply           r;
	static const char *const more[] = {"BROOQ_SCHEDULE_TICK=0", NULL}; /* rows stay as written */
	cgw_start(&c, more);
	PGconn *db = brq_testdb_connect(c.dsn);
	brq_testdb_exec(db,
			"INSERT INTO schedule (name, topic, cron, tz, misfire, catch_up_max, next_slot)"
			" VALUES ('nightly', 'report', '30 2 * * *', 'Europe/Berlin', 'catch_up', 3,"
			" '2030-01-01T01:30:00Z')");
	brq_testdb_exec(db,
			"INSERT INTO schedule (name, topic, every_ms, next_slot, last_slot, enabled)"
			" VALUES ('beat', 'ping', 30000, NULL, '2029-12-31T23:59:30Z', false)");
	PQfinish(db);
	sign_in(&c, c.gw.admin_token, &r);
	brq_http(c.port, "GET", "/console/api/schedules", authed(&c), NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_not_null(
		strstr(r.body,
		       "{\"name\":\"beat\",\"topic\":\"ping\",\"payload\":{},\"cron\":null,\"tz\":null,"
		       "\"every_ms\":30000,\"misfire\":\"skip\",\"catch_up_max\":1,\"max_attempts\":null,"
		       "\"enabled\":false,\"next_slot_ms\":null,\"next_slot\":null,\"last_slot_ms\":"
		       "1893455970000,"
		       "\"last_slot\":\"2029-12-31T23:59:30.000Z\",\"source\":\"admin\"}"),
		"%s", r.body);
	cr_assert_not_null(
		strstr(r.body,
		       "{\"name\":\"nightly\",\"topic\":\"report\",\"payload\":{},\"cron\":\"30 2 * * *\","
		       "\"tz\":\"Europe/"
		       "Berlin\",\"every_ms\":null,\"misfire\":\"catch_up\",\"catch_up_max\":3,"
		       "\"max_attempts\":null,\"enabled\":true,\"next_slot_ms\":1893461400000,"
		       "\"next_slot\":\"2030-01-01T01:30:00.000Z\",\"last_slot_ms\":null,\"last_slot\":null,"
		       "\"source\":\"admin\"}"),
		"%s", r.body);
	cgw_stop(&c);
}
