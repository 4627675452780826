// SPDX-License-Identifier: MIT
// The web console's replies: every answer goes out here, with its security headers (CSP,
// no framing, no caching, HSTS over HTTPS), as JSON or, when even that fails, as text.
// Both the router (console.c) and the pool side (console_api.c) answer through it.
#include "console_int.h"

#include <string.h>

#include "log/log.h"

#define JSON_TYPE "application/json; charset=utf-8"
// No inline script or style anywhere; everything from this origin; no framing.
#define CSP                                                                                             \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

void
brq_console_reply(brq_console *con, nng_aio *aio, uint16_t status, const char *type, const void *body,
		  size_t len, const char *cookie)
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
	if (rv == 0 && cookie != NULL) {
		rv = nng_http_res_set_header(res, "Set-Cookie", cookie);
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
brq_console_reply_error(brq_console *con, nng_aio *aio, uint16_t status, const char *msg)
{
	brq_jw j;
	brq_jw_init(&j, 4096);
	brq_jw_obj(&j);
	brq_jw_kv_cstr(&j, "error", msg);
	brq_jw_end(&j);
	if (j.err != 0) {
		brq_console_reply(con, aio, status, BRQ_CONSOLE_TEXT_TYPE, msg, strlen(msg), NULL);
	} else {
		brq_console_reply(con, aio, status, JSON_TYPE, j.data, j.len, NULL);
	}
	brq_jw_fini(&j);
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
