/* SPDX-License-Identifier: MIT */
/* A real brooq-gateway process for black-box tests, on a temp ipc:// socket. */
#ifndef BRQ_TEST_GW_H
#define BRQ_TEST_GW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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
	char *dsn;      /* borrowed */
} brq_gw;

/*
 * Starts brooq-gateway against dsn with fresh tokens, and waits until it answers
 * ping. extra_env: NULL or "KEY=VALUE" strings ending with NULL, added to (and
 * overriding) the test defaults. Fails the current test if it does not come up.
 */
void brq_gw_start(brq_gw *gw, char *dsn, const char *const *extra_env);

/* SIGTERM, waits (asserting a clean exit 0 unless `crash_ok`), removes the dir. */
void brq_gw_stop(brq_gw *gw);

/* Sends raw bytes as one request and returns the reply bytes (malloc'd, caller
 * frees) or NULL on timeout/transport error. */
void *brq_gw_raw(const brq_gw *gw, const void *req, size_t len, size_t *rep_len, int timeout_ms);

/* Encodes req (token set by the caller), sends it, decodes the reply for req->op
 * into rep (strings borrow *keep, which the caller frees; arrays from arena).
 * Fails the test on transport or decode errors. Returns rep->code. */
brq_status brq_gw_call(const brq_gw *gw, brq_request *req, brq_reply *rep, brq_arena *arena, void **keep);

/* Shorthand token selection for brq_gw_call. */
brq_str brq_gw_worker(const brq_gw *gw);
brq_str brq_gw_admin(const brq_gw *gw);

#endif
