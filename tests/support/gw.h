/* SPDX-License-Identifier: MIT */
/* A real brooq-gateway process for black-box tests, on a temp ipc:// socket. */
#ifndef BRQ_TEST_GW_H
#define BRQ_TEST_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nng/nng.h>

#include "proto.h"

typedef struct brq_gw {
	pid_t pid;
	char  dir[256];         /* temp dir: socket, token files, log */
	char  url[300];         /* ipc://DIR/gw.sock, or the BROOQ_LISTEN given in extra_env */
	char  worker_token[65]; /* 64 hex chars */
	char  admin_token[65];
	char  worker_token_file[300];
	char  admin_token_file[300];
	char  log[300]; /* the gateway's stderr */
	/* A tls+tcp:// url: what this helper's own connections use, from the pseudo
	 * variables BROOQ_TEST_TLS_CA (verify the gateway against this CA; without it,
	 * verify nothing) and BROOQ_TEST_TLS_CERT_KEY (a PEM file holding a client
	 * certificate and its key) in extra_env. */
	char  tls_ca[300];
	char  tls_cert_key[300];
	char *dsn; /* borrowed */
} brq_gw;

/*
 * Starts brooq-gateway against dsn with fresh tokens, and waits until it answers
 * ping. extra_env: NULL or "KEY=VALUE" strings ending with NULL, added to (and
 * overriding) the test defaults. Fails the current test if it does not come up.
 */
void brq_gw_start(brq_gw *gw, char *dsn, const char *const *extra_env);

/* brq_gw_start, listening on tcp://127.0.0.1 at a free port instead of ipc:// when tcp
 * (gw->url says where): for the cases a test runs on both transports. */
void brq_gw_start_on(brq_gw *gw, char *dsn, const char *const *extra_env, bool tcp);

/* brq_gw_start with /metrics (BROOQ_HTTP_LISTEN) on a free loopback port, returned. */
uint16_t brq_gw_start_http(brq_gw *gw, char *dsn, const char *const *extra_env);

/* Same, with command-line arguments (NULL-terminated, after argv[0]; NULL: none). */
void brq_gw_start_args(brq_gw *gw, char *dsn, const char *const *extra_env, const char *const *args);

/* Only the first half of brq_gw_start_args: sets up *gw and starts the process, without
 * waiting for it to answer. */
void brq_gw_spawn(brq_gw *gw, char *dsn, const char *const *extra_env, const char *const *args);

/* The gateway's log so far (static buffer, up to 1 MiB; valid until the next call). */
const char *brq_gw_log(const brq_gw *gw);

/* Occurrences of needle in hay. */
int brq_gw_count(const char *hay, const char *needle);

/* Waits until the log holds at least n occurrences of needle; fails the test (showing
 * the log) after timeout_ms. */
void brq_gw_await_log(const brq_gw *gw, const char *needle, int n, int timeout_ms);

/* Sends one ping on a fresh connection: true when the gateway answered within timeout_ms. */
bool brq_gw_answers(const brq_gw *gw, int timeout_ms);

/* SIGTERM, waits (asserting a clean exit 0 unless `crash_ok`), removes the dir. */
void brq_gw_stop(brq_gw *gw);

/* A fresh random token as 64 hex digits and a NUL, into hex. */
void brq_gw_new_token(char hex[65]);

/* Runs `brooq-gateway ARGS` (at most 6) once, with exactly the environment ENV (both
 * NULL-terminated), and waits for it: --check-config, start-up refusals. Returns its
 * exit status (-1: killed); *out gets its stdout and stderr (a static buffer, valid
 * until the next call). */
int brq_gw_run_once(const char *const *env, const char *const *args, const char **out);

/* Sends raw bytes as one request and returns the reply bytes (malloc'd, caller
 * frees) or NULL on timeout/transport error. */
void *brq_gw_raw(const brq_gw *gw, const void *req, size_t len, size_t *rep_len, int timeout_ms);

/* Encodes req (token set by the caller), sends it, decodes the reply for req->op
 * into rep (strings borrow *keep, which the caller frees; arrays from arena).
 * Fails the test on transport or decode errors. Returns rep->code. */
brq_status brq_gw_call(const brq_gw *gw, brq_request *req, brq_reply *rep, brq_arena *arena, void **keep);

/* Sends req (token set by the caller) on an ipc socket of its own and returns the
 * socket without reading the reply: a peer that goes away when the caller closes it,
 * or one that is still there but never reads. Fails the test on transport errors. */
nng_socket brq_gw_send_open(const brq_gw *gw, brq_request *req);

/* The value of one sample line of the gateway's /metrics on 127.0.0.1:http_port (the
 * whole sample name with its labels, e.g. `x_total{topic="t"}`), or -1 when absent.
 * Fails the test when the port does not answer. */
long long brq_gw_metric(uint16_t http_port, const char *sample);
/* Polls brq_gw_metric until sample reads want: true, or false after timeout_ms. */
bool brq_gw_wait_metric(uint16_t http_port, const char *sample, long long want, int timeout_ms);

/* Shorthand token selection for brq_gw_call. */
brq_str brq_gw_worker(const brq_gw *gw);
brq_str brq_gw_admin(const brq_gw *gw);

#endif
