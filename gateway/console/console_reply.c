// SPDX-License-Identifier: MIT
// The web console's replies: every answer goes out here, with its security headers (CSP,
// no framing, no caching, HSTS over HTTPS), as JSON or, when even that fails, as text.
// Both the router (console.c) and the pool side (console_api.c) answer through it.
#include "console_int.h"

#include <stdio.h>
#include <string.h>

#include "log/log.h"

#define JSON_TYPE "application/json; charset=utf-8"
// No inline script or style anywhere; everything from this origin; no framing.
#define CSP                                                                                             \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// The reply, with one more header hname: hval when hname is not NULL.
static void
reply_with(brq_console *con, nng_aio *aio, uint16_t status, const char *type, const void *body, size_t len,
	   const char *hname, const char *hval)
{
	nng_http_res *res;
	if (nng_http_res_alloc(&res) != 0) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	int rv = nng_http_res_set_status(res, status);
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "Content-Type", type);
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "Cache-Control", "no-store");
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "Content-Security-Policy", CSP);
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "X-Frame-Options", "DENY");
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "X-Content-Type-Options", "nosniff");
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "Referrer-Policy", "no-referrer");
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "Cross-Origin-Opener-Policy", "same-origin");
	rv     = rv != 0 ? rv : nng_http_res_set_header(res, "Cross-Origin-Resource-Policy", "same-origin");
	if (rv == 0 && con->is_tls) {
		rv = nng_http_res_set_header(res, "Strict-Transport-Security", "max-age=31536000");
	}
	if (rv == 0 && hname != NULL) {
		rv = nng_http_res_set_header(res, hname, hval);
	}
	if (rv == 0 && len > 0) {
		rv = nng_http_res_copy_data(res, body, len);
	}
	if (rv != 0) {
		nng_http_res_free(res);
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

void
brq_console_reply(brq_console *con, nng_aio *aio, uint16_t status, const char *type, const void *body,
		  size_t len, const char *cookie)
{
	reply_with(con, aio, status, type, body, len, cookie != NULL ? "Set-Cookie" : NULL, cookie);
}

// The protocol's status code an HTTP status stands for (console_int.h).
static const char *
code_of(uint16_t status)
{
	switch (status) {
	case 400: return "invalid_argument";
	case 401: return "unauthenticated";
	case 403: return "permission_denied";
	case 404: return "not_found";
	case 405: return "method_not_allowed";
	case 409: return "conflict";
	case 413: return "too_large";
	case 429: return "resource_exhausted";
	case 501: return "unimplemented";
	case 503: return "unavailable";
	default: return "internal";
	}
}

// {"code": code, "msg": msg}, with the extra header hname: hval when hname is not NULL.
static void
error_with(brq_console *con, nng_aio *aio, uint16_t status, const char *code, const char *msg,
	   const char *hname, const char *hval)
{
	brq_jw j;
	brq_jw_init(&j, 4096);
	brq_jw_obj(&j);
	brq_jw_kv_cstr(&j, "code", code != NULL ? code : code_of(status));
	brq_jw_kv_cstr(&j, "msg", msg);
	brq_jw_end(&j);
	if (j.err != 0) {
		reply_with(con, aio, status, BRQ_CONSOLE_TEXT_TYPE, msg, strlen(msg), hname, hval);
	} else {
		reply_with(con, aio, status, JSON_TYPE, j.data, j.len, hname, hval);
	}
	brq_jw_fini(&j);
}

void
brq_console_reply_error(brq_console *con, nng_aio *aio, uint16_t status, const char *msg)
{
	error_with(con, aio, status, NULL, msg, NULL, NULL);
}

void
brq_console_reply_error_code(brq_console *con, nng_aio *aio, uint16_t status, const char *code,
			     const char *msg)
{
	error_with(con, aio, status, code, msg, NULL, NULL);
}

void
brq_console_reply_error_retry(brq_console *con, nng_aio *aio, uint16_t status, const char *msg,
			      uint64_t retry_after_s)
{
	char secs[24];
	snprintf(secs, sizeof(secs), "%llu", (unsigned long long) retry_after_s);
	error_with(con, aio, status, "resource_exhausted", msg, "Retry-After", secs);
}

void
brq_console_reply_json(brq_console *con, nng_aio *aio, uint16_t status, const brq_jw *j, const char *cookie)
{
	if (j->err != 0) {
		BRQ_LOG_WARN("console_reply_failed", "error=%s", brq_err_name(j->err));
		brq_console_reply_error(con, aio, 500,
					j->err == BRQ_E2BIG ? "reply too large" : "out of memory");
		return;
	}
	brq_console_reply(con, aio, status, JSON_TYPE, j->data, j->len, cookie);
}
