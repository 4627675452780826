/* SPDX-License-Identifier: MIT */
/* libbrooq-client transport: one REQ socket, its connection, a pool of contexts, one call. */
#ifndef BRQ_CLIENT_RPC_H
#define BRQ_CLIENT_RPC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "brooq/brooq.h"
#include "brq_base.h"
#include "proto.h"

/* Default per-call timeout when brooq_client_opts.timeout_ms is 0. */
#define BRQ_RPC_TIMEOUT_MS 10000
/* Idle (ctx, aio) pairs kept for reuse; more are closed when their call ends. */
#define BRQ_RPC_IDLE_MAX 32

typedef struct brq_slot brq_slot;

/*
 * One REQ socket; calls borrow a slot (an nng_ctx with its own aio) from a pool, so
 * calls from many threads are in flight at once. Every slot is either on `idle` or
 * owned by exactly one running call.
 *
 * Connecting: a call never sends without a connection, so "nothing listens" is told
 * apart from "sent, no answer". Over ipc:// a call that finds no connection dials at
 * once, synchronously (a local connect answers at once): nothing listening fails the
 * call with BRQ_EUNAVAIL. Over tcp:// (where a synchronous dial to a silent host
 * could hang for minutes) NNG dials in the background and a call waits for the
 * connection up to its own deadline.
 */
typedef struct brq_rpc {
	nng_socket      sock;
	nng_dialer      dialer;
	bool            dialer_on;      /* under dial_mu */
	bool            aborted;        /* under dial_mu: brq_rpc_abort closed the socket */
	bool            dial_on_demand; /* ipc://: a call dials synchronously */
	pthread_mutex_t dial_mu;        /* one dialler at a time */
	pthread_mutex_t pipe_mu;        /* n_pipes, with pipe_cv */
	pthread_cond_t  pipe_cv;        /* signalled when a connection comes up */
	int             n_pipes;        /* connections being set up or up */

	pthread_mutex_t   mtx;    /* guards idle, n_idle */
	brq_slot         *idle;   /* singly linked through next */
	unsigned          n_idle; /* <= BRQ_RPC_IDLE_MAX */
	_Atomic(uint64_t) next_rid;

	nng_tls_config *tls;        /* tls+tcp://: set on every dialler (a reference held); else NULL */
	const char     *token;      /* borrowed (the client's locked copy) */
	size_t          token_len;  /* 1..BRQ_TOKEN_MAX */
	int             timeout_ms; /* per call, on top of a claim's wait; > 0 */
	brq_limits      lim;        /* reply decoding limits */
	char            url[512];   /* for messages */
} brq_rpc;

/*
 * Opens the socket for url with the per-call timeout_ms (> 0); token[0..token_len)
 * is borrowed until brq_rpc_close. tls: the configuration of a tls+tcp:// url (NULL
 * for other URLs); r holds its own reference from here on, the caller keeps its own.
 * Tries to connect once (ipc://) or starts the background dialler (tcp://,
 * tls+tcp://); a gateway that is not there yet is no error.
 * Returns 0, BRQ_EINVAL (a URL NNG cannot dial; message set) or BRQ_ENOMEM. On
 * failure nothing is left open.
 */
int brq_rpc_open(brq_rpc *r, const char *url, int timeout_ms, const char *token, size_t token_len,
		 nng_tls_config *tls) BRQ_MUSTCHECK;
/* Closes every slot and the socket. No call may be running. */
void brq_rpc_close(brq_rpc *r);
/* Closes r's socket from another thread while a call may be running on it: that call
 * fails at once (NNG_ECLOSED), and no dialler is made after. Never while a dialler is
 * being replaced (NNG 1.5.2 panics when a socket's close and a dialler's close race).
 * r must still be closed with brq_rpc_close. */
void brq_rpc_abort(brq_rpc *r);

/*
 * One request and its reply. brq_call_init() before filling req (op and fields;
 * rid and token are set by brq_rpc_call); arrays the request needs may come from
 * `arena`. After brq_rpc_call() returns 0, `rep` is the decoded reply: its strings
 * borrow `msg` and its arrays live in `arena`, both valid until brq_call_fini(),
 * which every path must call.
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
 * Sends k->req and waits for its reply, at most the timeout plus extra_ms (a claim's
 * wait), connecting first when needed. Returns 0 when k->rep holds the decoded reply
 * to this request, whatever its status code (the caller maps it); else, with the
 * calling thread's message set: BRQ_EINVAL (cannot be encoded), BRQ_ENOMEM,
 * BRQ_EUNAVAIL (no connection: nothing was sent; or the connection broke after
 * sending: the request may have run; the message says which), BRQ_ETIMEDOUT (sent,
 * no reply in time: it may have run), BRQ_EINTERNAL (a reply that cannot be decoded
 * or answers another request). Never re-sends.
 */
int brq_rpc_call(brq_rpc *r, brq_call *k, uint32_t extra_ms) BRQ_MUSTCHECK;

/* Copies what a public call returns out of k's OK reply (k->req says what was asked)
 * to the caller's outputs out and out2 (as given to brq_call_run). Returns 0, or a
 * negative BRQ_E* (message set); on failure it leaves nothing for the caller to free. */
typedef int (*brq_call_out_fn)(const brq_call *k, void *out, void *out2);

/*
 * The rest of a public call whose request k was filled with result rv: when rv is 0,
 * sends it over r (brq_rpc_call with extra_ms) and, on an OK reply, runs
 * copy(k, out, out2) (copy may be NULL). Finishes k on every path. Returns the public
 * code: a failure of filling, of the call itself or of copy (brq_err_public), or else
 * the reply's status, whose gateway message then becomes the calling thread's message.
 */
brooq_err brq_call_run(brq_rpc *r, brq_call *k, int rv, uint32_t extra_ms, brq_call_out_fn copy, void *out,
		       void *out2);

#endif
