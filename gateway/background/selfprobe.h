// SPDX-License-Identifier: MIT
// RPC self-probe: a thread that pings the gateway's own listener over a new
// connection every BROOQ_SELFPROBE_INTERVAL, so /healthz turns 503 when the RPC side
// stops answering although the database is fine (issue 10: one raw connect+close
// wedged NNG 1.5.2's listener, NNG issue #1518, while /healthz still said ok).
//
// Each probe opens a REQ socket, dials cfg->listen (a wildcard tcp:// host such as
// 0.0.0.0 or * is dialled on loopback), sends a real `ping` carrying the probe's own
// worker token and waits for an `ok` reply, at most min(interval, 2 s) for sending and
// as long again for the reply; a fresh connection every time, because a wedged
// listener still serves the connections it accepted before. The token is 32 random
// bytes made at start, registered with auth (brq_auth_add_token) and kept only in
// memory: it is never logged, written or shown.
//
// Healthy when the last successful probe is at most 2 intervals + 2 timeouts old: one
// lost probe does not flip /healthz; two in a row do (at the default 5 s interval,
// /healthz says 503 within about 15 s of the listener going quiet). Unhealthy until the first
// probe succeeds. Logged on changes only (selfprobe_failed with the reason,
// selfprobe_ok), never per probe.
//
// A tls+tcp:// listener is probed over TLS, verifying no certificate (tls.h
// brq_tls_probe_setup: it checks that handshakes complete and the listener answers; an
// expired certificate is logged at start instead).
//
// Off (no thread, brq_selfprobe_healthy true) when BROOQ_SELFPROBE_INTERVAL is 0, when
// the HTTP endpoint is off (nothing would read it), and for tls+tcp:// listeners with
// BROOQ_TLS_CLIENT_AUTH=required: the probe would need a client certificate that
// BROOQ_TLS_CA_FILE accepts, and the gateway holds only its server certificate, which
// need not be one (mbedtls refuses a client certificate whose extended key usage lacks
// clientAuth, and the server's may come from another CA); a probe refused for that
// reason would turn /healthz 503 on a healthy listener.
#ifndef BRQ_GATEWAY_SELFPROBE_H
#define BRQ_GATEWAY_SELFPROBE_H

#include "brq_base.h"

#include <stdbool.h>

#include "auth.h"
#include "config/config.h"

typedef struct brq_selfprobe brq_selfprobe; // opaque

// Step 1, before the server starts (auth is read-only once it serves): makes the
// probe's token and adds it to *auth as a worker token. cfg and auth are borrowed and
// must outlive the probe. Returns 0 and sets *out (NULL when the probe is off), or
// BRQ_ENOMEM (logged; *out untouched, auth unchanged).
BRQ_MUSTCHECK int brq_selfprobe_new(const brq_config *cfg, brq_auth *auth, brq_selfprobe **out);

// Step 2, once the server listens: starts the probe thread; the first probe runs at
// once. NULL is a no-op returning 0. Returns BRQ_EIO when the thread cannot start.
BRQ_MUSTCHECK int brq_selfprobe_start(brq_selfprobe *p);

// Stops the thread (a running probe ends within its timeout), wipes the token and
// frees p. Stop the HTTP endpoint first: it calls brq_selfprobe_healthy(p). NULL is
// a no-op.
void brq_selfprobe_free(brq_selfprobe *p);

// /healthz check (a brq_http_health_fn): true when the listener answered recently, or
// when the probe is off (p NULL). Thread-safe, never blocks.
bool brq_selfprobe_healthy(void *p);

// The URL a probe dials for a listen URL: the same, except a wildcard tcp:// or
// tls+tcp:// host ("", "*", 0.0.0.0, [::]) becomes loopback. Writes at most outlen bytes (NUL
// included). Returns 0, or BRQ_E2BIG when it does not fit. Exposed for tests.
BRQ_MUSTCHECK int brq_selfprobe_dial_url(const char *listen, char *out, size_t outlen);

#endif // BRQ_GATEWAY_SELFPROBE_H
