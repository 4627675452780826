// SPDX-License-Identifier: MIT
// The web console: pages and a JSON API under /console/ on the gateway's HTTP endpoint
// (docs/console.md).
//
//   /console/            the page (console/index.html, app.js, style.css: embedded in the
//                        binary at build time, nothing fetched at run time)
//   /console/api/...     JSON: sign-in, session, overview, job, enqueue, cancel, and the
//                        list, retry, delete, pause/resume and schedules of issue 15
//
// Security: a session cookie (HttpOnly, SameSite=Strict, Path=/console, Max-Age; Secure
// over HTTPS) after signing in with a token in a POST body (never a URL: a query naming
// "token" is refused); X-CSRF-Token on every POST; a worker token's session is
// read-only; Content-Security-Policy without inline script, X-Frame-Options: DENY;
// requests a browser marks cross-site are refused. Actions are logged with the role,
// the token's fingerprint and the session tag (console_session.h), never the token.
//
// Threads: the handler runs on NNG's HTTP threads and never blocks: sessions and the
// overview (the monitor's figures and the gateway's counters, metrics.h) are answered
// there; everything that reads or writes the database is a work item on the RPC's pool
// (work.h `internal`), in the operator-read lane for reads, and its reply is sent from
// the pool thread.
#ifndef BRQ_GATEWAY_CONSOLE_H
#define BRQ_GATEWAY_CONSOLE_H

#include "brq_base.h"

#include "auth.h"
#include "config/config.h"
#include "http.h"
#include "rpc/rpc.h"

// What the console uses of the gateway (all borrowed: they must outlive the console,
// and the pool must run until brq_http_stop() has returned).
typedef struct brq_console_env {
	const brq_config *cfg;
	const brq_auth   *auth;
	brq_pool         *pool; // where its database work runs
	const brq_ops    *ops;  // the RPC's operations
	const brq_limits *lim;  // the RPC's request limits
} brq_console_env;

typedef struct brq_console brq_console; // opaque

// Adds the /console handler to the running endpoint http. 0 and *out (free with
// brq_console_free() after brq_http_stop()), or BRQ_ENOMEM / BRQ_EIO (logged).
BRQ_MUSTCHECK int brq_console_start(brq_http *http, const brq_console_env *env, brq_console **out);

// Frees the console. Call after brq_http_stop(): no handler may run. NULL is a no-op.
void brq_console_free(brq_console *c);

#endif
