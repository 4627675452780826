// SPDX-License-Identifier: MIT
// HTTP endpoint: serves /metrics and /healthz with NNG's HTTP server, never touching the database.
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "log/log.h"
#include "metrics/metrics.h"
#include "tls.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CONTENT_TYPE    "text/plain; charset=utf-8"
#define HEALTHY_BODY         "ok\n"
#define DATABASE_FAILING     "database unavailable"
// Room for an enqueue's fields besides its payload.
#define BODY_SLACK 4096

struct brq_http {
	nng_http_server *server; // our hold on NNG's (shared, refcounted) server
	brq_http_check   checks[BRQ_HTTP_MAX_CHECKS];
	size_t           n_checks;
	uint16_t         port;   // as bound
	bool             is_tls; // HTTPS (cfg->http_tls_cert_file)
};

// NNG's error as ours: an address in use is BRQ_EUNAVAIL (another process holds
// it: retrying later may help).
static int
nng_to_err(int rv)
{
	switch (rv) {
	case NNG_ENOMEM: return BRQ_ENOMEM;
	case NNG_EADDRINUSE: return BRQ_EUNAVAIL;
	case NNG_EADDRINVAL:
	case NNG_EINVAL: return BRQ_EINVAL;
	default: return BRQ_EIO;
	}
}

// Completes the handler's aio with res as the reply; NNG sends and frees it. With
// res NULL (no memory even for a reply) the connection is dropped instead.
static void
finish(nng_aio *aio, nng_http_res *res)
{
	if (res == NULL) {
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

// A reply with a body copied from body/len. Returns NULL on allocation failure.
static nng_http_res *
reply(uint16_t status, const char *content_type, const void *body, size_t len)
{
	nng_http_res *res;
	if (nng_http_res_alloc(&res) != 0) {
		return NULL;
	}
	if (nng_http_res_set_status(res, status) != 0 ||
	    nng_http_res_set_header(res, "Content-Type", content_type) != 0 ||
	    nng_http_res_set_header(res, "Cache-Control", "no-store") != 0 ||
	    nng_http_res_copy_data(res, body, len) != 0) {
		nng_http_res_free(res);
		return NULL;
	}
	return res;
}

static brq_http *
handler_owner(nng_aio *aio)
{
	nng_http_handler *hd = nng_aio_get_input(aio, 1);
	return nng_http_handler_get_data(hd);
}

// GET /metrics. Renders the registry; the render holds no lock the RPC path waits on
// for long (see metrics.c).
static void
metrics_cb(nng_aio *aio)
{
	char         *text = NULL;
	size_t        len  = 0;
	nng_http_res *res  = NULL;

	if (brq_metrics_render(&text, &len) == 0) {
		res = reply(NNG_HTTP_STATUS_OK, METRICS_CONTENT_TYPE, text, len);
		free(text);
	} else {
		BRQ_LOG_WARN("http_metrics_render_failed", "reason=oom");
		if (nng_http_res_alloc_error(&res, NNG_HTTP_STATUS_INTERNAL_SERVER_ERROR) != 0) {
			res = NULL;
		}
	}
	finish(aio, res);
}

// GET /healthz. The checks only read a timestamp: no database or RPC work on NNG's
// threads. 503 names every failing check, one line each.
static void
healthz_cb(nng_aio *aio)
{
	brq_http *h = handler_owner(aio);
	char      body[BRQ_HTTP_MAX_CHECKS * 64];
	size_t    len = 0;
	for (size_t i = 0; i < h->n_checks; i++) {
		const brq_http_check *c = &h->checks[i];
		if (c->fn == NULL || c->fn(c->arg)) {
			continue;
		}
		int n = snprintf(body + len, sizeof(body) - len, "%s\n", c->failing);
		len += n > 0 && (size_t) n < sizeof(body) - len ? (size_t) n : 0;
	}
	nng_http_res *res;
	if (len == 0) {
		res = reply(NNG_HTTP_STATUS_OK, TEXT_CONTENT_TYPE, HEALTHY_BODY, sizeof(HEALTHY_BODY) - 1);
	} else {
		res = reply(NNG_HTTP_STATUS_SERVICE_UNAVAILABLE, TEXT_CONTENT_TYPE, body, len);
	}
	finish(aio, res);
}

// Allocates a GET handler for path and registers it; on success the server owns it.
static int
add_handler(brq_http *h, const char *path, void (*cb)(nng_aio *))
{
	nng_http_handler *hd;
	int               rv = nng_http_handler_alloc(&hd, path, cb);
	if (rv != 0) {
		return rv;
	}
	// No request body is accepted on these GET endpoints.
	if ((rv = nng_http_handler_collect_body(hd, true, 0)) != 0 ||
	    (rv = nng_http_handler_set_data(hd, h, NULL)) != 0 ||
	    (rv = nng_http_server_add_handler(h->server, hd)) != 0) {
		nng_http_handler_free(hd);
		return rv;
	}
	return 0;
}

size_t
brq_http_body_max(const brq_config *cfg)
{
	return (size_t) cfg->max_payload_bytes * 3 + BODY_SLACK;
}

// The server's limits (http.h), set before it starts.
static int
set_limits(nng_http_server *srv, const brq_config *cfg)
{
	nng_http_server_limits lim = {
		.header_timeout   = (nng_duration) cfg->http_header_timeout_ms,
		.idle_timeout     = (nng_duration) cfg->http_idle_timeout_ms,
		.body_timeout     = BRQ_HTTP_BODY_TIMEOUT_MS,
		.write_timeout    = BRQ_HTTP_WRITE_TIMEOUT_MS,
		.max_conns        = cfg->http_max_connections,
		.max_header_bytes = BRQ_HTTP_HEADER_BYTES_MAX,
		.body_budget      = BRQ_HTTP_BODY_BUDGET_BODIES * brq_http_body_max(cfg),
	};
	return nng_http_server_set_limits(srv, &lim);
}

int
brq_http_start(const brq_config *cfg, brq_http_health_fn fn, void *arg, brq_http **out)
{
	brq_http_check check = {.fn = fn, .arg = arg, .failing = DATABASE_FAILING};
	return brq_http_start_checks(cfg, &check, 1, out);
}

// The port the server listens on (the configured one, or the one the kernel chose for 0).
static uint16_t
bound_port(nng_http_server *srv, uint16_t configured)
{
	nng_sockaddr sa;
	if (nng_http_server_get_addr(srv, &sa) == 0) {
		if (sa.s_family == NNG_AF_INET) {
			return ntohs(sa.s_in.sa_port);
		}
		if (sa.s_family == NNG_AF_INET6) {
			return ntohs(sa.s_in6.sa_port);
		}
	}
	return configured;
}

int
brq_http_start_checks(const brq_config *cfg, const brq_http_check *checks, size_t n, brq_http **out)
{
	brq_http *h   = NULL;
	nng_url  *url = NULL;
	char      buf[300];
	int       rv;

	if (!cfg->http_enabled) {
		*out = NULL;
		return 0;
	}
	if (cfg->http_host == NULL || strlen(cfg->http_host) > 255 || n > BRQ_HTTP_MAX_CHECKS) {
		return BRQ_EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (checks[i].failing == NULL || strlen(checks[i].failing) > 62) {
			return BRQ_EINVAL;
		}
	}
	// IPv6 literals are kept without brackets in the config; a URL needs them.
	bool        is_v6  = strchr(cfg->http_host, ':') != NULL;
	const char *scheme = cfg->http_tls_cert_file != NULL ? "https" : "http";
	snprintf(buf, sizeof(buf), is_v6 ? "%s://[%s]:%u" : "%s://%s:%u", scheme, cfg->http_host,
		 (unsigned) cfg->http_port);
	if (!brq_config_host_is_loopback(cfg->http_host)) {
		BRQ_LOG_WARN("http_nonloopback",
			     "host=%s port=%u note=\"/metrics and /healthz have no authentication\"",
			     BRQ_LOG_Q(cfg->http_host), (unsigned) cfg->http_port);
	}

	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		return BRQ_ENOMEM;
	}
	if (n > 0) {
		memcpy(h->checks, checks, n * sizeof(*checks));
	}
	h->n_checks = n;

	if ((rv = nng_url_parse(&url, buf)) != 0 || (rv = nng_http_server_hold(&h->server, url)) != 0) {
		h->server = NULL;
		goto fail;
	}
	// HTTPS (config_console.c): set before the server starts.
	h->is_tls = cfg->http_tls_cert_file != NULL;
	if (brq_tls_http_setup(h->server, cfg) != 0) {
		rv = NNG_EINVAL;
		goto fail;
	}
	if ((rv = set_limits(h->server, cfg)) != 0 || (rv = add_handler(h, "/metrics", metrics_cb)) != 0 ||
	    (rv = add_handler(h, "/healthz", healthz_cb)) != 0 ||
	    (rv = nng_http_server_start(h->server)) != 0) {
		goto fail;
	}

	h->port = bound_port(h->server, cfg->http_port);
	nng_url_free(url);
	BRQ_LOG_INFO(
		"http_listen",
		"host=%s port=%u scheme=%s header_timeout_ms=%llu idle_timeout_ms=%llu max_connections=%u",
		BRQ_LOG_Q(cfg->http_host), (unsigned) h->port, scheme,
		(unsigned long long) cfg->http_header_timeout_ms,
		(unsigned long long) cfg->http_idle_timeout_ms, (unsigned) cfg->http_max_connections);
	*out = h;
	return 0;

fail:
	BRQ_LOG_ERROR("http_start_failed", "host=%s port=%u reason=%s", BRQ_LOG_Q(cfg->http_host),
		      (unsigned) cfg->http_port, BRQ_LOG_Q(nng_strerror(rv)));
	if (h->server != NULL) {
		// Releasing the last hold frees the server and the handlers it owns.
		nng_http_server_release(h->server);
	}
	if (url != NULL) {
		nng_url_free(url);
	}
	free(h);
	return nng_to_err(rv);
}

uint16_t
brq_http_port(const brq_http *h)
{
	return h != NULL ? h->port : 0;
}

nng_http_server *
brq_http_server(brq_http *h)
{
	return h != NULL ? h->server : NULL;
}

bool
brq_http_is_tls(const brq_http *h)
{
	return h != NULL && h->is_tls;
}

void
brq_http_stop(brq_http *h)
{
	if (h == NULL) {
		return;
	}
	// 1. Stop: closes the listener and every connection, and (NNG 1.5.2) waits until
	//    the connections are reaped, so no handler runs after it returns.
	// 2. Release our hold: the last one frees the server and its handlers.
	// 3. Only then free what the handlers point at.
	nng_http_server_stop(h->server);
	nng_http_server_release(h->server);
	BRQ_LOG_INFO("http_stopped", "port=%u", (unsigned) h->port);
	free(h);
}
