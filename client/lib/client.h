/* SPDX-License-Identifier: MIT */
/* libbrooq-client internals shared by its files: the client handle, errors, the RPC call. */
#ifndef BRQ_CLIENT_H
#define BRQ_CLIENT_H

#include "brooq/brooq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

#include "proto.h"

/* Default per-call timeout when brooq_client_opts.timeout_ms is 0. */
#define BRQ_CLIENT_TIMEOUT_MS 10000
/* Idle (ctx, aio) pairs kept for reuse; more are closed when their call ends. */
#define BRQ_CLIENT_IDLE_MAX 32

typedef struct brq_slot brq_slot;

/*
 * One REQ socket; calls borrow a slot (an nng_ctx with its own aio) from a pool,
 * so calls from many threads are in flight at once. Every slot is either on
 * `idle` or owned by exactly one running call.
 */
struct brooq_client {
	nng_socket        sock;
	pthread_mutex_t   mtx;        /* guards idle, n_idle */
	brq_slot         *idle;       /* singly linked through next */
	unsigned          n_idle;     /* <= BRQ_CLIENT_IDLE_MAX */
	_Atomic(uint64_t) next_rid;   /* request ids, from 1 */
	char             *token;      /* sodium_malloc'd (locked, guarded), read-only */
	size_t            token_len;  /* 32..BRQ_TOKEN_MAX */
	int               timeout_ms; /* per call, on top of a claim's wait; > 0 */
	brq_limits        lim;        /* reply decoding limits */
	char              url[512];   /* for messages only */
};

/*
 * One request and its reply. brq_call_init() before filling req (op and fields;
 * rid and token are set by brq_rpc_call); arrays the request needs may come from
 * `arena`. After brq_rpc_call() returns BROOQ_OK, `rep` is the decoded ok reply:
 * its strings borrow `msg` and its arrays live in `arena`, both valid until
 * brq_call_fini(), which every path must call.
 */
typedef struct brq_call {
	brq_request req;
	brq_reply   rep;
	nng_msg    *msg;
	brq_arena   arena;
} brq_call;

void brq_call_init(brq_call *k, brq_op op);
void brq_call_fini(brq_call *k);

/*
 * Sends k->req and waits for its reply, at most the client's timeout plus
 * extra_ms (a claim's wait). Returns BROOQ_OK only for an ok reply; a gateway
 * error status is mapped to its brooq_err with the gateway's message kept for
 * brooq_last_message(); local and transport failures set a local message.
 * Never re-sends: a lost connection fails the call with BROOQ_ECONNECT.
 */
brooq_err brq_rpc_call(brooq_client *c, brq_call *k, uint32_t extra_ms) BRQ_MUSTCHECK;

/* Closes every pooled slot (client close; no call may be running). */
void brq_rpc_drain(brooq_client *c);

/* ---- thread-local message (brooq_last_message) --------------------------------- */

/* Empties the calling thread's message (every public call starts with this). */
void brq_msg_clear(void);
/* Formats the message and returns err, for `return brq_fail(BROOQ_EINVAL, ...)`. */
brooq_err brq_fail(brooq_err err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Keeps s[0..len) (not NUL-terminated; cut to fit) as the message. */
void brq_msg_set(const char *s, size_t len);

/* The brooq_err of a gateway status (BRQ_ST_OK gives BROOQ_OK). */
brooq_err brq_err_from_status(brq_status st);

#endif
