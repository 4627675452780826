// SPDX-License-Identifier: MIT
// The web console's HTTP side: routing, security headers, sessions and CSRF, the embedded page, the
// overview.
#include "console.h"
#include "console_assets.h"
#include "console_int.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "brq_clock.h"
#include "log/log.h"
#include "metrics/metrics.h"

#define COOKIE_NAME "brooq_session"

// Sign-in refusals are logged through limits: a flood writes a few lines and a count.
static brq_log_limit sign_in_failed_limit =
	BRQ_LOG_LIMIT_INIT("console_sign_in_failed", BRQ_LOG_LVL_WARN, 5, 10000);
static brq_log_limit sign_in_throttled_limit =
	BRQ_LOG_LIMIT_INIT("console_sign_in_throttled", BRQ_LOG_LVL_WARN, 5, 10000);

static const brq_console_route routes[] = {
	{"/console/api/login", "POST", BRQ_CK_LOGIN, false, false, NULL},
	{"/console/api/logout", "POST", BRQ_CK_LOGOUT, false, false, NULL},
	{"/console/api/session", "GET", BRQ_CK_SESSION, false, false, NULL},
	{"/console/api/overview", "GET", BRQ_CK_OVERVIEW, false, false, NULL},
	{"/console/api/job", "GET", BRQ_CK_POOL, false, true, brq_console_op_job},
	{"/console/api/jobs", "GET", BRQ_CK_POOL, false, true, brq_console_op_jobs},
	{"/console/api/topics", "GET", BRQ_CK_POOL, false, true, brq_console_op_topics},
	{"/console/api/schedules", "GET", BRQ_CK_POOL, false, true, brq_console_op_schedules},
	{"/console/api/history", "GET", BRQ_CK_POOL, false, true, brq_console_op_history},
	{"/console/api/workers", "GET", BRQ_CK_POOL, false, true, brq_console_op_workers},
	{"/console/api/worker_jobs", "GET", BRQ_CK_POOL, false, true, brq_console_op_worker_jobs},
	{"/console/api/enqueue", "POST", BRQ_CK_POOL, true, false, brq_console_op_enqueue},
	{"/console/api/cancel", "POST", BRQ_CK_POOL, true, false, brq_console_op_cancel},
	{"/console/api/retry", "POST", BRQ_CK_POOL, true, false, brq_console_op_retry},
	{"/console/api/delete", "POST", BRQ_CK_POOL, true, false, brq_console_op_delete},
	// Bulk: an action for admin sessions, in the capped lane all the same: a call's
	// seconds of one-job statements never take the hot path's connections.
	{"/console/api/jobs_count", "GET", BRQ_CK_POOL, false, true, brq_console_op_jobs_count},
	{"/console/api/bulk", "POST", BRQ_CK_POOL, true, true, brq_console_op_bulk},
	{"/console/api/pause", "POST", BRQ_CK_POOL, true, false, brq_console_op_pause},
	{"/console/api/resume", "POST", BRQ_CK_POOL, true, false, brq_console_op_resume},
};
#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

// ---- requests --------------------------------------------------------------------------------

// The value of cookie `name` in the Cookie header, or NULL (*len set).
static const char *
cookie_value(nng_http_req *req, const char *name, size_t *len)
{
	const char *h = nng_http_req_get_header(req, "Cookie");
	size_t      n = strlen(name);
	while (h != NULL && *h != '\0') {
		while (*h == ' ' || *h == ';') {
			h++;
		}
		size_t part = strcspn(h, ";");
		if (part > n && strncmp(h, name, n) == 0 && h[n] == '=') {
			*len = part - n - 1;
			return h + n + 1;
		}
		h += part;
	}
	return NULL;
}

// True when the query string names a parameter "token" (in any case): a token in a URL
// lands in histories, proxies' logs and Referer headers, so such requests are refused
// whatever their path.
static bool
has_token_param(const char *query)
{
	while (query != NULL && *query != '\0') {
		size_t part = strcspn(query, "&");
		size_t name = strcspn(query, "=&");
		if (name == 5 && strncasecmp(query, "token", 5) == 0) {
			return true;
		}
		query += part + (query[part] == '&');
	}
	return false;
}

// A request a browser made on behalf of another site: Sec-Fetch-Site says so, or an
// Origin that is not this endpoint's (scheme and Host). Requests without either (curl)
// pass: they carry no ambient cookie unless their user gave one.
static bool
is_cross_site(brq_console *con, nng_http_req *req)
{
	const char *site   = nng_http_req_get_header(req, "Sec-Fetch-Site");
	const char *origin = nng_http_req_get_header(req, "Origin");
	const char *host   = nng_http_req_get_header(req, "Host");
	if (site != NULL && strcmp(site, "cross-site") == 0) {
		return true;
	}
	if (origin == NULL) {
		return false;
	}
	char want[320];
	snprintf(want, sizeof(want), "%s://%s", con->is_tls ? "https" : "http", host != NULL ? host : "");
	return strcmp(origin, want) != 0;
}

// The request's parameters: the query of a GET, the form body of a POST.
static int
params(nng_http_req *req, bool is_post, const char *query, brq_form *f, const char **why)
{
	if (!is_post) {
		return brq_form_parse(f, query != NULL ? query : "", query != NULL ? strlen(query) : 0, why);
	}
	void  *body;
	size_t len;
	nng_http_req_get_data(req, &body, &len);
	const char *type = nng_http_req_get_header(req, "Content-Type");
	if (len > 0 && (type == NULL || strncasecmp(type, "application/x-www-form-urlencoded", 33) != 0)) {
		*why = "the body must be application/x-www-form-urlencoded";
		memset(f, 0, sizeof(*f));
		return BRQ_EINVAL;
	}
	return brq_form_parse(f, body, len, why);
}

// The connection's peer: its address as the throttle's key and, in text, for the log
// ("peer=127.0.0.1:50312"; "peer=unknown").
static void
peer_of(nng_http_conn *conn, brq_console_peer *key, char *text, size_t cap)
{
	nng_sockaddr sa;
	char         host[INET6_ADDRSTRLEN];
	memset(key, 0, sizeof(*key));
	snprintf(text, cap, "peer=unknown");
	if (conn == NULL || nng_http_conn_peer_addr(conn, &sa) != 0) {
		return;
	}
	if (sa.s_family == NNG_AF_INET && inet_ntop(AF_INET, &sa.s_in.sa_addr, host, sizeof(host)) != NULL) {
		memcpy(key->addr, &sa.s_in.sa_addr, 4);
		key->len = 4;
		snprintf(text, cap, "peer=%s:%u", host, (unsigned) ntohs(sa.s_in.sa_port));
	} else if (sa.s_family == NNG_AF_INET6 &&
		   inet_ntop(AF_INET6, sa.s_in6.sa_addr, host, sizeof(host)) != NULL) {
		memcpy(key->addr, sa.s_in6.sa_addr, 16);
		key->len = 16;
		snprintf(text, cap, "peer=[%s]:%u", host, (unsigned) ntohs(sa.s_in6.sa_port));
	}
}

// True when the request announced a body that was not read (the gate refused it).
static bool
is_body_refused(nng_http_req *req)
{
	const char *cl = nng_http_req_get_header(req, "Content-Length");
	void       *body;
	size_t      len;
	nng_http_req_get_data(req, &body, &len);
	return cl != NULL && strtoull(cl, NULL, 10) > 0 && len == 0;
}

static void
session_json(brq_jw *j, const brq_console_who *who)
{
	brq_jw_obj(j);
	brq_jw_kv_cstr(j, "role", brq_auth_role_name(who->role));
	brq_jw_kv_bool(j, "read_only", who->role != BRQ_ROLE_ADMIN);
	brq_jw_kv_cstr(j, "csrf", who->csrf);
	brq_jw_kv_cstr(j, "token_fp", who->token_fp);
	brq_jw_kv_instant(j, "expires_at", (int64_t) who->expires_wall_ms, true);
	brq_jw_end(j);
}

// POST /console/api/login, token=... in the body. The body is wiped once read. A peer
// whose failures are throttled gets 429 before its token is looked at.
static void
login(brq_console *con, nng_aio *aio, nng_http_req *req, nng_http_conn *conn)
{
	brq_form         f;
	const char      *why;
	brq_console_who  who;
	char             sid[BRQ_CONSOLE_SID_LEN + 1];
	void            *body;
	size_t           blen;
	brq_console_peer peer;
	char             peer_text[80];
	peer_of(conn, &peer, peer_text, sizeof(peer_text));
	uint64_t wait_ms = brq_console_throttle_wait_ms(con->throttle, &peer);
	if (wait_ms > 0) {
		BRQ_LOG_LIMITED(&sign_in_throttled_limit, BRQ_LOG_LVL_WARN, "console_sign_in_throttled",
				"%s retry_after_ms=%llu", peer_text, (unsigned long long) wait_ms);
		brq_console_reply_error_retry(con, aio, 429,
					      "too many failed sign-ins from this address; retry later",
					      (wait_ms + 999) / 1000);
		return;
	}
	if (is_body_refused(req)) {
		brq_console_reply_error(con, aio, 413, "sign-in body too large");
		return;
	}
	int rv = params(req, true, NULL, &f, &why);
	nng_http_req_get_data(req, &body, &blen);
	if (body != NULL) {
		sodium_memzero(body, blen);
	}
	const brq_str *tok = rv == 0 ? brq_form_get(&f, "token") : NULL;
	size_t         len = tok != NULL ? tok->len : 0;
	// As token files are read: trailing whitespace is not part of the token.
	while (len > 0 && strchr(" \t\r\n", tok->ptr[len - 1]) != NULL) {
		len--;
	}
	rv = len > 0 ? brq_console_session_open(con->sessions, tok->ptr, len, sid, &who) : BRQ_ENOTFOUND;
	brq_form_fini(&f);
	if (rv != 0) {
		brq_metrics_auth_failure();
		brq_console_throttle_fail(con->throttle, &peer);
		BRQ_LOG_LIMITED(&sign_in_failed_limit, BRQ_LOG_LVL_WARN, "console_sign_in_failed",
				"reason=%s token_bytes=%zu %s", len == 0 ? "no_token" : "unknown_token", len,
				peer_text);
		brq_console_reply_error(con, aio, 401, "sign-in refused: unknown token");
		return;
	}
	char cookie[256];
	snprintf(cookie, sizeof(cookie),
		 COOKIE_NAME "=%s; Path=/console; Max-Age=%llu; HttpOnly; SameSite=Strict%s", sid,
		 (unsigned long long) (con->env.cfg->console_session_ttl_ms / 1000 > 0
					       ? con->env.cfg->console_session_ttl_ms / 1000
					       : 1),
		 con->is_tls ? "; Secure" : "");
	sodium_memzero(sid, sizeof(sid));
	BRQ_LOG_INFO("console_sign_in", "role=%s token_fp=%s session=%s", brq_auth_role_name(who.role),
		     who.token_fp, who.tag);
	brq_jw j;
	brq_jw_init(&j, 4096);
	session_json(&j, &who);
	brq_console_reply_json(con, aio, 200, &j, cookie);
	sodium_memzero(cookie, sizeof(cookie));
	brq_jw_fini(&j);
}

static void
logout(brq_console *con, nng_aio *aio, nng_http_req *req, const brq_console_who *who)
{
	size_t      len;
	const char *sid = cookie_value(req, COOKIE_NAME, &len);
	brq_console_session_close(con->sessions, sid, sid != NULL ? len : 0);
	BRQ_LOG_INFO("console_sign_out", "role=%s token_fp=%s session=%s", brq_auth_role_name(who->role),
		     who->token_fp, who->tag);
	brq_jw j;
	brq_jw_init(&j, 256);
	brq_jw_obj(&j);
	brq_jw_kv_bool(&j, "signed_out", true);
	brq_jw_end(&j);
	brq_console_reply_json(
		con, aio, 200, &j,
		con->is_tls ? COOKIE_NAME "=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure"
			    : COOKIE_NAME "=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict");
	brq_jw_fini(&j);
}

// The static files: GET (and HEAD) only.
static void
serve_asset(brq_console *con, nng_aio *aio, const char *path, bool is_get)
{
	if (strcmp(path, "/console") == 0 || strcmp(path, "/console/index.html") == 0) {
		path = "/console/";
	}
	for (size_t i = 0; i < brq_console_n_assets; i++) {
		const brq_console_asset *a = &brq_console_assets[i];
		if (strcmp(a->path, path) == 0) {
			if (!is_get) {
				brq_console_reply(con, aio, 405, BRQ_CONSOLE_TEXT_TYPE,
						  "method not allowed\n", 19, NULL);
			} else {
				brq_console_reply(con, aio, 200, a->type, a->data, a->len, NULL);
			}
			return;
		}
	}
	brq_console_reply(con, aio, 404, BRQ_CONSOLE_TEXT_TYPE, "not found\n", 10, NULL);
}

// Why check_access refused a request.
typedef enum access {
	ACCESS_OK,
	ACCESS_NO_SESSION, // 401
	ACCESS_BAD_CSRF,   // 403
	ACCESS_READ_ONLY,  // 403: an action in a worker token's session
} access;

// The checks every API request but sign-in passes, in order: a session, and for a POST
// the CSRF token and, for an action, an admin session. ACCESS_OK and *who, or why not.
static access
check_access(brq_console *con, nng_http_req *req, const brq_console_route *r, brq_console_who *who)
{
	size_t      len;
	const char *sid = cookie_value(req, COOKIE_NAME, &len);
	if (sid == NULL || brq_console_session_get(con->sessions, sid, len, who) != 0) {
		return ACCESS_NO_SESSION;
	}
	if (strcmp(r->method, "POST") == 0) {
		const char *csrf = nng_http_req_get_header(req, "X-CSRF-Token");
		if (!brq_console_csrf_ok(who, csrf, csrf != NULL ? strlen(csrf) : 0)) {
			return ACCESS_BAD_CSRF;
		}
	}
	if (r->is_action && who->role != BRQ_ROLE_ADMIN) {
		return ACCESS_READ_ONLY;
	}
	return ACCESS_OK;
}

// check_access, answering a refusal (401, 403); false when the request was answered. A
// body the gate refused although the request passes was too large: 413.
static bool
authorize(brq_console *con, nng_aio *aio, nng_http_req *req, const brq_console_route *r, brq_console_who *who)
{
	switch (check_access(con, req, r, who)) {
	case ACCESS_NO_SESSION:
		brq_console_reply_error(con, aio, 401, "sign in first (POST /console/api/login)");
		return false;
	case ACCESS_BAD_CSRF:
		BRQ_LOG_WARN("console_csrf_refused", "path=%s session=%s token_fp=%s", r->path, who->tag,
			     who->token_fp);
		brq_console_reply_error(
			con, aio, 403,
			"missing or wrong X-CSRF-Token header (GET /console/api/session gives it)");
		return false;
	case ACCESS_READ_ONLY:
		brq_console_reply_error(con, aio, 403, "read-only session: signed in with a worker token");
		return false;
	case ACCESS_OK: break;
	}
	if (is_body_refused(req)) {
		brq_console_reply_error(con, aio, 413, "request body too large");
		return false;
	}
	return true;
}

// The route of path and method (HEAD as GET), or NULL; *path_known when some route has path.
static const brq_console_route *
find_route(const char *path, const char *method, bool *path_known)
{
	const brq_console_route *r = NULL;
	*path_known                = false;
	for (size_t i = 0; i < N_ROUTES; i++) {
		if (strcmp(routes[i].path, path) == 0) {
			*path_known = true;
			if (strcmp(routes[i].method, method) == 0 ||
			    (strcmp(method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0)) {
				r = &routes[i];
			}
		}
	}
	return r;
}

static void
api(brq_console *con, nng_aio *aio, nng_http_req *req, nng_http_conn *conn, const char *path,
    const char *query, const char *method)
{
	bool                     path_known;
	const brq_console_route *r = find_route(path, method, &path_known);
	if (r == NULL) {
		brq_console_reply_error(con, aio, path_known ? 405 : 404,
					path_known ? "method not allowed" : "no such endpoint");
		return;
	}
	if (r->kind == BRQ_CK_LOGIN) {
		login(con, aio, req, conn);
		return;
	}
	brq_console_who who;
	if (!authorize(con, aio, req, r, &who)) {
		return;
	}
	brq_jw j;
	switch (r->kind) {
	case BRQ_CK_LOGOUT: logout(con, aio, req, &who); return;
	case BRQ_CK_SESSION:
		brq_jw_init(&j, 4096);
		session_json(&j, &who);
		brq_console_reply_json(con, aio, 200, &j, NULL);
		brq_jw_fini(&j);
		return;
	case BRQ_CK_OVERVIEW:
		brq_jw_init(&j, BRQ_CONSOLE_REPLY_MAX);
		if (brq_console_overview(con, &j) != 0) {
			brq_console_reply_error(con, aio, 500, "overview: out of memory");
		} else {
			brq_console_reply_json(con, aio, 200, &j, NULL);
		}
		brq_jw_fini(&j);
		return;
	default: break;
	}
	brq_form    f;
	const char *why;
	if (params(req, strcmp(r->method, "POST") == 0, query, &f, &why) != 0) {
		brq_form_fini(&f);
		brq_console_reply_error(con, aio, 400, why != NULL ? why : "out of memory");
		return;
	}
	brq_console_submit(con, aio, r, &f, &who); // takes f
}

// The body gate (http-limits.patch), on an NNG thread with the server's lock held, before
// any body is read: how many body bytes this request may send. A sign-in from a peer
// that is not throttled gets BRQ_CONSOLE_LOGIN_BODY_MAX; a POST of the API that passes
// check_access (a session, its CSRF token, its role) gets con->body_max; everything else
// none. A refused body is never read (the handler answers, then the connection closes),
// so a peer without a session cannot make the gateway hold its bodies.
static size_t
body_gate(nng_http_req *req, nng_http_conn *conn, void *data)
{
	brq_console     *con = data;
	const char      *uri = nng_http_req_get_uri(req);
	char             path[64];
	size_t           plen = strcspn(uri, "?");
	bool             path_known;
	brq_console_who  who;
	brq_console_peer peer;
	char             peer_text[80];
	if (plen >= sizeof(path)) {
		return 0;
	}
	memcpy(path, uri, plen);
	path[plen]                 = '\0';
	const brq_console_route *r = find_route(path, nng_http_req_get_method(req), &path_known);
	if (r == NULL || strcmp(r->method, "POST") != 0) {
		return 0;
	}
	if (r->kind == BRQ_CK_LOGIN) {
		peer_of(conn, &peer, peer_text, sizeof(peer_text));
		return brq_console_throttle_wait_ms(con->throttle, &peer) == 0 ? BRQ_CONSOLE_LOGIN_BODY_MAX
									       : 0;
	}
	return check_access(con, req, r, &who) == ACCESS_OK ? con->body_max : 0;
}

// The one handler of the /console tree, on an NNG thread: never blocks.
static void
handler_cb(nng_aio *aio)
{
	nng_http_req     *req = nng_aio_get_input(aio, 0);
	nng_http_handler *h   = nng_aio_get_input(aio, 1);
	brq_console      *con = nng_http_handler_get_data(h);
	const char       *uri = nng_http_req_get_uri(req);
	const char       *met = nng_http_req_get_method(req);
	char              path[256];

	// The path without its query; only the console's own short paths exist.
	size_t plen = strcspn(uri, "?");
	if (plen >= sizeof(path)) {
		brq_console_reply(con, aio, 404, BRQ_CONSOLE_TEXT_TYPE, "not found\n", 10, NULL);
		return;
	}
	memcpy(path, uri, plen);
	path[plen]        = '\0';
	const char *query = uri[plen] == '?' ? uri + plen + 1 : NULL;
	if (has_token_param(query)) {
		// The URL is never logged: it may hold a token.
		BRQ_LOG_WARN("console_token_in_url",
			     "note=\"refused; a token goes in the body of POST /console/api/login\"");
		brq_console_reply_error(
			con, aio, 400,
			"a token never goes in a URL: sign in with POST /console/api/login (form body)");
		return;
	}
	if (is_cross_site(con, req)) {
		brq_console_reply_error(con, aio, 403, "cross-site request refused");
		return;
	}
	if (strncmp(path, "/console/api/", 13) == 0) {
		api(con, aio, req, nng_aio_get_input(aio, 2), path, query, met);
		return;
	}
	serve_asset(con, aio, path, strcmp(met, "GET") == 0 || strcmp(met, "HEAD") == 0);
}

// ---- overview --------------------------------------------------------------------------------

static void
sample_free(brq_console_sample *s)
{
	free(s->t);
	memset(s, 0, sizeof(*s));
}

size_t
brq_console_rate_baseline(const uint64_t *at_ms, size_t n, uint64_t now)
{
	size_t best = n;
	for (size_t i = 0; i < n; i++) {
		uint64_t age = now >= at_ms[i] ? now - at_ms[i] : 0;
		if (at_ms[i] != 0 && age >= BRQ_CONSOLE_SAMPLE_MS && age <= BRQ_CONSOLE_RATE_WINDOW_MS &&
		    (best == n || at_ms[i] < at_ms[best])) {
			best = i;
		}
	}
	return best;
}

// The sample to compare now's counters with (brq_console_rate_baseline; under
// sample_mu). NULL when none is.
static const brq_console_sample *
baseline(brq_console *con, uint64_t now)
{
	uint64_t at[BRQ_CONSOLE_SAMPLES];
	for (size_t i = 0; i < BRQ_CONSOLE_SAMPLES; i++) {
		at[i] = con->samples[i].at_ms;
	}
	size_t i = brq_console_rate_baseline(at, BRQ_CONSOLE_SAMPLES, now);
	return i < BRQ_CONSOLE_SAMPLES ? &con->samples[i] : NULL;
}

// Keeps a copy of t as a sample when the last one is older than the sample period
// (under sample_mu); a copy that cannot be made is skipped.
static void
keep_sample(brq_console *con, uint64_t now, const brq_metrics_topic_view *t, size_t n)
{
	size_t last = (con->next_sample + BRQ_CONSOLE_SAMPLES - 1) % BRQ_CONSOLE_SAMPLES;
	if (con->samples[last].at_ms != 0 && now - con->samples[last].at_ms < BRQ_CONSOLE_SAMPLE_MS) {
		return;
	}
	n                     = n < BRQ_CONSOLE_SAMPLE_TOPICS ? n : BRQ_CONSOLE_SAMPLE_TOPICS;
	brq_console_sample *s = &con->samples[con->next_sample];
	sample_free(s);
	if ((s->t = malloc((n > 0 ? n : 1) * sizeof(*t))) == NULL) {
		return;
	}
	memcpy(s->t, t, n * sizeof(*t));
	s->n             = n;
	s->at_ms         = now;
	con->next_sample = (con->next_sample + 1) % BRQ_CONSOLE_SAMPLES;
}

static const brq_metrics_topic_view *
find_topic(const brq_console_sample *s, const brq_metrics_topic_view *t)
{
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		if (s->t[i].topic_len == t->topic_len && memcmp(s->t[i].topic, t->topic, t->topic_len) == 0) {
			return &s->t[i];
		}
	}
	return NULL;
}

static void
rate(brq_jw *out, const char *key, uint64_t now_count, const uint64_t *then_count, uint64_t window_ms)
{
	brq_jw_key(out, key);
	if (then_count == NULL || window_ms == 0) {
		brq_jw_null(out);
	} else {
		uint64_t d = now_count >= *then_count ? now_count - *then_count : 0;
		brq_jw_dbl(out, (double) d * 60000.0 / (double) window_ms);
	}
}

// One topic of the overview: the stats reply's topic in its JSON form (docs/protocol.md
// §7.9, §11; its counts and oldest_ready_age_ms, from the monitor's last count, not its
// policy keys), then this gateway's rates and totals.
static void
topic_json(brq_jw *out, const brq_metrics_topic_view *t, const brq_metrics_topic_view *then,
	   uint64_t window_ms)
{
	brq_jw_obj(out);
	brq_jw_kv_str(out, "topic", t->topic, t->topic_len);
	// The states in the protocol's order (pending, processing, failed, done, dead, canceled).
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		brq_jw_kv_u64(out, brq_state_name((brq_state) s), t->jobs[s]);
	}
	// The gauge is in seconds (Prometheus's unit); the JSON form counts ms, rounded.
	// Nothing ready is null, not 0 (the gauge's 0): "none" is never a number (§11).
	double age_ms = t->oldest_ready_age_s > 0 ? t->oldest_ready_age_s * 1000.0 + 0.5 : 0;
	brq_jw_kv_opt_u64(out, "oldest_ready_age_ms", age_ms < 1e18 ? (uint64_t) age_ms : 0,
			  t->oldest_ready_age_s > 0);
	rate(out, "started_per_min", t->claimed, then != NULL ? &then->claimed : NULL, window_ms);
	rate(out, "finished_per_min", t->settled, then != NULL ? &then->settled : NULL, window_ms);
	brq_jw_kv_u64(out, "enqueued_total", t->enqueued);
	brq_jw_kv_u64(out, "claimed_total", t->claimed);
	brq_jw_kv_u64(out, "settled_total", t->settled);
	brq_jw_kv_u64(out, "dead_total", t->dead);
	brq_jw_end(out);
}

int
brq_console_overview(brq_console *con, brq_jw *out)
{
	brq_metrics_topic_view *t;
	size_t                  n;
	if (brq_metrics_topics_read(&t, &n) != 0) {
		return BRQ_ENOMEM;
	}
	pthread_mutex_lock(&con->sample_mu);
	uint64_t                  now       = brq_now_ms();
	const brq_console_sample *base      = baseline(con, now);
	uint64_t                  window_ms = base != NULL ? now - base->at_ms : 0;
	uint64_t                  counted_at;
	bool                      estimated, db_up;
	brq_metrics_depth_info(&counted_at, &estimated, &db_up);
	brq_jw_obj(out);
	brq_jw_kv_instant(out, "at", brq_wall_ms(), true);
	brq_jw_kv_opt_u64(out, "rate_window_ms", window_ms, base != NULL);
	// When the counts were taken, and whether they can be trusted as they stand: the
	// page shows their age, not "now", while the database is away (docs/console.md).
	brq_jw_kv_instant(out, "counted_at", (int64_t) counted_at, counted_at != 0);
	brq_jw_kv_bool(out, "terminal_estimated", estimated);
	brq_jw_kv_bool(out, "database_up", db_up);
	brq_jw_key(out, "topics");
	brq_jw_arr(out);
	for (size_t i = 0; i < n; i++) {
		topic_json(out, &t[i], find_topic(base, &t[i]), window_ms);
	}
	brq_jw_end(out);
	brq_jw_end(out);
	keep_sample(con, now, t, n);
	pthread_mutex_unlock(&con->sample_mu);
	free(t);
	return 0;
}

// ---- lifecycle -------------------------------------------------------------------------------

int
brq_console_start(brq_http *http, const brq_console_env *env, brq_console **out)
{
	nng_http_handler *h;
	brq_console      *con = calloc(1, sizeof(*con));
	if (con == NULL) {
		return BRQ_ENOMEM;
	}
	con->env    = *env;
	con->is_tls = brq_http_is_tls(http);
	pthread_mutex_init(&con->sample_mu, NULL);
	if (brq_console_sessions_new(env->auth, env->cfg->console_session_ttl_ms, BRQ_CONSOLE_SESSIONS_MAX,
				     &con->sessions) != 0 ||
	    brq_console_throttle_new(&con->throttle) != 0) {
		brq_console_free(con);
		return BRQ_ENOMEM;
	}
	con->body_max = brq_http_body_max(env->cfg);
	int rv        = nng_http_handler_alloc(&h, "/console", handler_cb);
	if (rv == 0) {
		// Every method: the handler answers 405 itself, with the console's headers.
		if ((rv = nng_http_handler_set_method(h, NULL)) != 0 ||
		    (rv = nng_http_handler_set_tree(h)) != 0 ||
		    (rv = nng_http_handler_collect_body(h, true, con->body_max)) != 0 ||
		    (rv = nng_http_handler_set_body_gate(h, body_gate)) != 0 ||
		    (rv = nng_http_handler_set_data(h, con, NULL)) != 0 ||
		    (rv = nng_http_server_add_handler(brq_http_server(http), h)) != 0) {
			nng_http_handler_free(h);
		}
	}
	if (rv != 0) {
		BRQ_LOG_ERROR("console_start_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		brq_console_free(con);
		return rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EIO;
	}
	BRQ_LOG_INFO("console_ready", "path=/console/ https=%s session_ttl_ms=%llu",
		     con->is_tls ? "true" : "false", (unsigned long long) env->cfg->console_session_ttl_ms);
	*out = con;
	return 0;
}

void
brq_console_free(brq_console *con)
{
	if (con == NULL) {
		return;
	}
	brq_console_sessions_free(con->sessions);
	brq_console_throttle_free(con->throttle);
	for (size_t i = 0; i < BRQ_CONSOLE_SAMPLES; i++) {
		sample_free(&con->samples[i]);
	}
	pthread_mutex_destroy(&con->sample_mu);
	free(con);
}
