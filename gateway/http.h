// SPDX-License-Identifier: MIT
// HTTP endpoint for operators: GET /metrics (Prometheus text format) and GET /healthz.
//
// Served by NNG's HTTP server on cfg->http_host:cfg->http_port (127.0.0.1:8090 by
// default). Handlers run on NNG's threads and never touch the database: /metrics
// renders the in-memory registry (metrics.h) and /healthz asks its checks, functions
// that only read a timestamp or a flag (brq_monitor_healthy in monitor.h: the
// database answers; brq_selfprobe_healthy in selfprobe.h: the RPC listener answers).
//
//   GET /metrics  200  text/plain; version=0.0.4; charset=utf-8   brq_metrics_render()
//                 500  when rendering ran out of memory
//   GET /healthz  200  "ok\n"                     every check true
//                 503  one line per failing check, in order, e.g.
//                      "database unavailable\n" or "rpc listener not answering\n"
//   other paths   404; other methods on the two paths 405 (NNG's own replies).
//   HEAD is answered like GET without a body. No authentication: bind to loopback.
//
// Limits (deploy/nng/http-limits.patch; the table in docs/security.md): loopback TCP is
// open to every local user, so no connection may hold more than its share.
//   - a new connection must send a request's headers within cfg->http_header_timeout_ms,
//     an answered one its next request's within cfg->http_idle_timeout_ms, a body within
//     BRQ_HTTP_BODY_TIMEOUT_MS, and read a reply within BRQ_HTTP_WRITE_TIMEOUT_MS: else
//     it is closed;
//   - at most cfg->http_max_connections are open: a new one beyond is closed at once;
//   - a request's line and headers take at most BRQ_HTTP_HEADER_BYTES_MAX;
//   - a body is read only when the handler's gate accepts it after seeing the headers
//     (/metrics and /healthz: none; the console: a signed-in session's POST or a
//     sign-in), and all the bodies held at once take at most
//     BRQ_HTTP_BODY_BUDGET_BODIES * brq_http_body_max(cfg) bytes (beyond: 503, closed).
#ifndef BRQ_GATEWAY_HTTP_H
#define BRQ_GATEWAY_HTTP_H

#include "brq_base.h"

#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "config/config.h"

// One health check behind /healthz. Returns true when its part of the gateway works
// (the database answered recently; the RPC listener answered our own ping recently),
// false otherwise. Called on an NNG thread for every request, possibly concurrently:
// it must be thread-safe and must never block.
typedef bool (*brq_http_health_fn)(void *arg);

typedef struct brq_http_check brq_http_check;

// One /healthz check: healthy when fn(arg) is true (fn NULL: always healthy).
// `failing` is the line the 503 body carries when it is not, without the newline.
struct brq_http_check {
	brq_http_health_fn fn;
	void              *arg;
	const char        *failing; // static storage, e.g. "database unavailable"
};

#define BRQ_HTTP_BODY_TIMEOUT_MS    30000
#define BRQ_HTTP_WRITE_TIMEOUT_MS   30000
#define BRQ_HTTP_HEADER_BYTES_MAX   8192
#define BRQ_HTTP_BODY_BUDGET_BODIES 4

// The largest request body any handler reads: an enqueue of the largest payload
// (cfg->max_payload_bytes), URL-encoded (3 bytes a byte at worst), and its other fields.
size_t brq_http_body_max(const brq_config *cfg);

// At most this many checks.
#define BRQ_HTTP_MAX_CHECKS 4

// A running HTTP endpoint (opaque).
typedef struct brq_http brq_http; // opaque

// Starts serving on cfg->http_host:cfg->http_port. A port of 0 binds an ephemeral
// port (tests; see brq_http_port). Logs a warning when the host is not loopback (the
// configuration already refuses that unless http_allow_nonloopback is set).
//   fn, arg: the /healthz probe; fn NULL means "always healthy". arg is borrowed and
//            must stay valid until brq_http_stop() returns.
//   cfg:     read during the call only.
// Returns 0 and sets *out (owned by the caller, release with brq_http_stop()).
// With cfg->http_enabled false, returns 0 and sets *out to NULL (nothing to stop).
// On failure returns BRQ_EUNAVAIL (port taken), BRQ_EINVAL (bad host), BRQ_ENOMEM or BRQ_EIO,
// logs why, and leaves *out untouched. The one check is named "database unavailable".
BRQ_MUSTCHECK int brq_http_start(const brq_config *cfg, brq_http_health_fn fn, void *arg, brq_http **out);

// The same with n (0..BRQ_HTTP_MAX_CHECKS, else BRQ_EINVAL) /healthz checks, copied; each
// check's arg must stay valid until brq_http_stop() returns.
BRQ_MUSTCHECK int brq_http_start_checks(const brq_config *cfg, const brq_http_check *checks, size_t n,
					brq_http **out);

// The TCP port actually bound (useful when started with port 0); 0 for NULL.
uint16_t brq_http_port(const brq_http *h);

// NNG's server behind h, for more handlers (console.c adds /console); borrowed until
// brq_http_stop(). NULL for NULL.
nng_http_server *brq_http_server(brq_http *h);

// True when h serves HTTPS (BROOQ_HTTP_TLS_CERT_FILE).
bool brq_http_is_tls(const brq_http *h);

// Stops the listener, closes every connection, waits for running handlers, and
// frees h. After it returns, fn is never called again. NULL is a no-op.
void brq_http_stop(brq_http *h);

#endif // BRQ_GATEWAY_HTTP_H
