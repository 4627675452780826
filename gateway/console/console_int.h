// SPDX-License-Identifier: MIT
// The web console's internals shared by console.c (HTTP, sessions, overview) and console_api.c
// (the operations' work items on the pool).
#ifndef BRQ_GATEWAY_CONSOLE_INT_H
#define BRQ_GATEWAY_CONSOLE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "console.h"
#include "console_json.h"
#include "console_ops.h"
#include "console_rate.h"
#include "console_session.h"
#include "metrics/metrics.h"

// Console work items queued or running on the pool at once; beyond it, 503. Read-only
// (worker-token) sessions hold at most BRQ_CONSOLE_INFLIGHT_RO_MAX of them, so slow reads
// of read-only sessions leave admin sessions the rest.
#define BRQ_CONSOLE_INFLIGHT_MAX    32
#define BRQ_CONSOLE_INFLIGHT_RO_MAX 16
// Largest body of a sign-in (token=..., URL-encoded: the longest token, 3 bytes a byte).
#define BRQ_CONSOLE_LOGIN_BODY_MAX 4096
// A console operation's statements end by then (the session's statement_timeout is longer).
#define BRQ_CONSOLE_DEADLINE_MS 10000
// Largest JSON reply.
#define BRQ_CONSOLE_REPLY_MAX (64u * 1024u * 1024u)

// One endpoint of the API.
typedef enum brq_console_kind {
	BRQ_CK_LOGIN,    // POST: sign in (no session yet)
	BRQ_CK_LOGOUT,   // POST: sign out
	BRQ_CK_SESSION,  // GET: who am I
	BRQ_CK_OVERVIEW, // GET: answered on the HTTP thread, no database
	BRQ_CK_POOL,     // an operation (console_ops.h) run on the pool
} brq_console_kind;

typedef struct brq_console_route {
	const char       *path;   // e.g. "/console/api/cancel"
	const char       *method; // "GET" or "POST"
	brq_console_kind  kind;
	bool              is_action;        // changes the queue: admin sessions only
	bool              is_operator_read; // the pool's capped lane
	brq_console_op_fn op;               // BRQ_CK_POOL
} brq_console_route;

// At most this many topics in one sample of the counters (console_rate.h).
#define BRQ_CONSOLE_SAMPLE_TOPICS 1000

typedef struct brq_console_sample {
	uint64_t                at_ms; // monotonic; 0: empty
	brq_metrics_topic_view *t;     // owned
	size_t                  n;
} brq_console_sample;

struct brq_console {
	brq_console_env       env;
	bool                  is_tls;
	brq_console_sessions *sessions;
	brq_console_throttle *throttle;    // failed sign-ins
	size_t                body_max;    // largest body of a signed-in session's POST
	atomic_int            inflight;    // work items on the pool
	atomic_int            inflight_ro; // of them, read-only sessions'
	pthread_mutex_t       sample_mu;
	brq_console_sample    samples[BRQ_CONSOLE_SAMPLES]; // ring
	size_t                next_sample;
};

// Content type of plain-text answers.
#define BRQ_CONSOLE_TEXT_TYPE "text/plain; charset=utf-8"

// console_reply.c. Replies on the HTTP handler's aio (any thread): status, content type, body, the
// console's security headers, and a Set-Cookie when cookie is not NULL.
void brq_console_reply(brq_console *con, nng_aio *aio, uint16_t status, const char *type, const void *body,
		       size_t len, const char *cookie);
// The protocol's error reply in its JSON form (docs/protocol.md §11), {"code": c, "msg":
// msg}, with status; c is the protocol's status code for the HTTP status (400
// invalid_argument, 401 unauthenticated, 403 permission_denied, 404 not_found, 409
// conflict, 413 too_large, 429 resource_exhausted, 503 unavailable, 500 internal; 405
// method_not_allowed and 501 unimplemented, which the RPC has not).
void brq_console_reply_error(brq_console *con, nng_aio *aio, uint16_t status, const char *msg);
// The same with the code given (an RPC refusal's own; NULL: the status's).
void brq_console_reply_error_code(brq_console *con, nng_aio *aio, uint16_t status, const char *code,
				  const char *msg);
// The same with a Retry-After header of retry_after_s seconds (429, 503), code
// resource_exhausted: a share of the console is spent.
void brq_console_reply_error_retry(brq_console *con, nng_aio *aio, uint16_t status, const char *msg,
				   uint64_t retry_after_s);
// The JSON in j with status (500 when j failed).
void brq_console_reply_json(brq_console *con, nng_aio *aio, uint16_t status, const brq_jw *j,
			    const char *cookie);

// Runs route's operation on the pool with the parameters in *in (taken: zeroed here)
// for who, and replies on aio from the pool thread. 503 at once when the console's slots
// (BRQ_CONSOLE_INFLIGHT_MAX; for a read-only session, BRQ_CONSOLE_INFLIGHT_RO_MAX) are taken.
void brq_console_submit(brq_console *con, nng_aio *aio, const brq_console_route *route, brq_form *in,
			const brq_console_who *who);

// The overview's JSON (no database): the monitor's figures and the counters' rates.
BRQ_MUSTCHECK int brq_console_overview(brq_console *con, brq_jw *out);

#endif
