/* SPDX-License-Identifier: MIT */
/* RPC transport: the connection, a pool of REQ contexts; one request and one reply per call, never re-sent.
 */
#include "rpc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <sodium.h>

#include "brq_clock.h"
#include "err.h"

/* An ipc:// dialler only reconnects when a call asks (connect_locked): its own timer
 * is pushed out of the way (about 24 days), so that it never races a fresh dial. */
#define IPC_RECONNECT_MS INT32_MAX

/*
 * A context and its aio, used by one call at a time. The aio has no callback:
 * the calling thread waits on it (nng_aio_wait), so nothing here runs on NNG's
 * threads.
 */
struct brq_slot {
	brq_slot *next; /* idle list */
	nng_ctx   ctx;
	nng_aio  *aio;
	brq_buf   out; /* encoded request; wiped after each use (it holds the token) */
};

/* ---- the connection ------------------------------------------------------------------- */

/* Counts connections: every pipe that got ADD_PRE gets exactly one REM_POST. */
static void
pipe_event(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	brq_rpc *r = arg;
	(void) p;
	pthread_mutex_lock(&r->pipe_mu);
	if (ev == NNG_PIPE_EV_ADD_PRE)
		r->n_pipes++;
	else if (ev == NNG_PIPE_EV_REM_POST && r->n_pipes > 0)
		r->n_pipes--;
	pthread_cond_broadcast(&r->pipe_cv);
	pthread_mutex_unlock(&r->pipe_mu);
}

static int
n_pipes(brq_rpc *r)
{
	pthread_mutex_lock(&r->pipe_mu);
	int n = r->n_pipes;
	pthread_mutex_unlock(&r->pipe_mu);
	return n;
}

/* A new dialler for r->url; *d is valid only on 0. */
static int
dialer_new(brq_rpc *r, nng_dialer *d)
{
	int rv = nng_dialer_create(d, r->sock, r->url);
	if (rv == 0 && r->dial_on_demand)
		rv = nng_dialer_set_ms(*d, NNG_OPT_RECONNMINT, IPC_RECONNECT_MS);
	if (rv == 0 && r->tls != NULL)
		rv = nng_dialer_set_ptr(*d, NNG_OPT_TLS_CONFIG, r->tls);
	return rv;
}

/* Replaces the dialler with one that dials synchronously. Under dial_mu. Returns 0 or
 * NNG's error (nothing listening: NNG_ENOENT, NNG_ECONNREFUSED). */
static int
dial_sync_locked(brq_rpc *r)
{
	nng_dialer d;
	int        rv;
	if (r->aborted)
		return NNG_ECLOSED;
	if (r->dialer_on) {
		(void) nng_dialer_close(r->dialer);
		r->dialer_on = false;
	}
	if ((rv = dialer_new(r, &d)) != 0)
		return rv;
	if ((rv = nng_dialer_start(d, 0)) != 0) {
		(void) nng_dialer_close(d);
		return rv;
	}
	r->dialer    = d;
	r->dialer_on = true;
	return 0;
}

/* Waits until a connection is up or the monotonic deadline passes. */
static bool
wait_pipe(brq_rpc *r, uint64_t deadline_ms)
{
	struct timespec ts = brq_deadline_at(deadline_ms);
	pthread_mutex_lock(&r->pipe_mu);
	while (r->n_pipes == 0 && brq_now_ms() < deadline_ms)
		(void) pthread_cond_timedwait(&r->pipe_cv, &r->pipe_mu, &ts);
	bool up = r->n_pipes > 0;
	pthread_mutex_unlock(&r->pipe_mu);
	return up;
}

/* Why a tcp:// or tls+tcp:// connection did not come up, from the dialler's counters
 * (NNG's statistics: "auth" counts NNG_EPEERAUTH and NNG_ECRYPTO, "other" a peer that
 * closed the connection before it was up, "refused" nothing listening); else "". */
static const char *
dial_failures(brq_rpc *r, char *buf, size_t cap)
{
	static const char *const names[] = {"auth", "other", "refused"};
	nng_stat                *all     = NULL, *d, *st;
	uint64_t                 n[3]    = {0, 0, 0};
	buf[0]                           = '\0';
	/* The dialler of a tcp:// or tls+tcp:// client is made at open, never replaced. */
	if (r->dial_on_demand || nng_stats_get(&all) != 0)
		return buf;
	for (int i = 0; i < 3 && (d = nng_stat_find_dialer(all, r->dialer)) != NULL; i++)
		if ((st = nng_stat_find(d, names[i])) != NULL)
			n[i] = nng_stat_value(st);
	nng_stats_free(all);
	if (n[0] > 0)
		snprintf(
			buf, cap,
			": %llu TLS handshake%s failed (the gateway's certificate: not vouched for by the CA "
			"file, expired, or without the server name; or our client certificate, refused by "
			"the gateway)",
			(unsigned long long) n[0], n[0] == 1 ? "" : "s");
	else if (n[1] > 0)
		snprintf(buf, cap, ": the gateway closed %llu connection%s before %s up (%s)",
			 (unsigned long long) n[1], n[1] == 1 ? "" : "s", n[1] == 1 ? "it was" : "they were",
			 r->tls != NULL ? "a TLS handshake it refused: it requires a client certificate that "
					  "its CA vouches for, or does not speak TLS on this port"
					: "it may expect tls+tcp:// on this port");
	else if (n[2] > 0)
		snprintf(buf, cap, ": connection refused (nothing listens there)");
	return buf;
}

/* Makes sure a connection is up before a request is sent: 0, or BRQ_EUNAVAIL. */
static int
connect_for(brq_rpc *r, const char *op, uint64_t deadline_ms, int64_t total_ms)
{
	if (n_pipes(r) > 0)
		return 0;
	if (r->dial_on_demand) {
		pthread_mutex_lock(&r->dial_mu);
		int rv = n_pipes(r) > 0 ? 0 : dial_sync_locked(r);
		pthread_mutex_unlock(&r->dial_mu);
		if (rv != 0)
			return brq_fail(BRQ_EUNAVAIL, "%s: cannot connect to %s: %s (nothing was sent)", op,
					r->url, nng_strerror(rv));
	}
	if (!wait_pipe(r, deadline_ms)) {
		char why[256];
		return brq_fail(BRQ_EUNAVAIL, "%s: no connection to %s within %lld ms%s (nothing was sent)",
				op, r->url, (long long) total_ms, dial_failures(r, why, sizeof(why)));
	}
	return 0;
}

int
brq_rpc_open(brq_rpc *r, const char *url, int timeout_ms, const char *token, size_t token_len,
	     nng_tls_config *tls)
{
	int err = BRQ_ENOMEM, rv;

	memset(r, 0, sizeof(*r));
	if (strlen(url) >= sizeof(r->url))
		return brq_fail(BRQ_EINVAL, "client_open: url too long");
	snprintf(r->url, sizeof(r->url), "%s", url);
	r->timeout_ms     = timeout_ms;
	r->token          = token;
	r->token_len      = token_len;
	r->dial_on_demand = strncmp(url, "ipc://", 6) == 0;
	atomic_init(&r->next_rid, 1);
	brq_limits_default(&r->lim);
	(void) brq_fail(BRQ_ENOMEM, "client_open: cannot create a mutex");
	if (pthread_mutex_init(&r->mtx, NULL) != 0)
		return BRQ_ENOMEM;
	if (pthread_mutex_init(&r->dial_mu, NULL) != 0)
		goto fail_mtx;
	if (pthread_mutex_init(&r->pipe_mu, NULL) != 0)
		goto fail_dial_mu;
	if (brq_cond_init_monotonic(&r->pipe_cv) != 0)
		goto fail_pipe_mu;

	if ((rv = nng_req0_open(&r->sock)) != 0) {
		(void) brq_fail(err, "client_open: cannot open a REQ socket: %s", nng_strerror(rv));
		goto fail_cv;
	}
	if (tls != NULL) {
		nng_tls_config_hold(tls); /* released after the socket: its dialler uses it */
		r->tls = tls;
	}
	/* No silent re-send (a re-sent claim would leak a lease). Set on the socket
	 * before any context is opened: req0 contexts copy the socket's value at open
	 * (NNG-NOTES §2.3.8). With it off, a lost connection fails outstanding
	 * requests rather than re-sending them on reconnect (see exchange). */
	if ((rv = nng_socket_set_ms(r->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE)) != 0 ||
	    (rv = nng_pipe_notify(r->sock, NNG_PIPE_EV_ADD_PRE, pipe_event, r)) != 0 ||
	    (rv = nng_pipe_notify(r->sock, NNG_PIPE_EV_REM_POST, pipe_event, r)) != 0) {
		(void) brq_fail(err, "client_open: cannot configure the socket: %s", nng_strerror(rv));
		goto fail_sock;
	}
	/* A URL NNG cannot dial fails here; a gateway that is not up yet does not. */
	if ((rv = dialer_new(r, &r->dialer)) == 0) {
		r->dialer_on = true;
		rv           = nng_dialer_start(r->dialer, r->dial_on_demand ? 0 : NNG_FLAG_NONBLOCK);
		if (rv != 0 && r->dial_on_demand) {
			(void) nng_dialer_close(r->dialer); /* the first call dials again */
			r->dialer_on = false;
			rv           = 0;
		}
	}
	if (rv != 0) {
		err = rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EINVAL;
		(void) brq_fail(err, "client_open: url %s: %s", url, nng_strerror(rv));
		goto fail_sock;
	}
	brq_msg_clear();
	return 0;

fail_sock:
	nng_close(r->sock); /* closes the dialler too */
	if (r->tls != NULL)
		nng_tls_config_free(r->tls);
fail_cv:
	pthread_cond_destroy(&r->pipe_cv);
fail_pipe_mu:
	pthread_mutex_destroy(&r->pipe_mu);
fail_dial_mu:
	pthread_mutex_destroy(&r->dial_mu);
fail_mtx:
	pthread_mutex_destroy(&r->mtx);
	return err;
}

/* ---- slot pool ------------------------------------------------------------------------ */

static void
slot_free(brq_slot *s)
{
	if (s == NULL)
		return;
	/* Closing the context drops any request it still holds, so a request whose
	 * call has failed can never go out later (e.g. on reconnect). */
	(void) nng_ctx_close(s->ctx);
	nng_aio_free(s->aio);
	brq_buf_fini(&s->out);
	free(s);
}

/* Pops an idle slot or makes a new one: 0, BRQ_ENOMEM or BRQ_EINVAL (socket closed). */
static int
slot_get(brq_rpc *r, brq_slot **out)
{
	brq_slot *s;
	int       rv;

	pthread_mutex_lock(&r->mtx);
	if ((s = r->idle) != NULL) {
		r->idle = s->next;
		r->n_idle--;
	}
	pthread_mutex_unlock(&r->mtx);
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return brq_fail(BRQ_ENOMEM, "out of memory");
		brq_buf_init(&s->out, 0);
		if ((rv = nng_aio_alloc(&s->aio, NULL, NULL)) != 0) {
			brq_buf_fini(&s->out);
			free(s);
			return brq_fail(BRQ_ENOMEM, "cannot allocate an aio: %s", nng_strerror(rv));
		}
		if ((rv = nng_ctx_open(&s->ctx, r->sock)) != 0) {
			nng_aio_free(s->aio);
			brq_buf_fini(&s->out);
			free(s);
			return brq_fail(rv == NNG_ECLOSED ? BRQ_EINVAL : BRQ_ENOMEM,
					"cannot open a REQ context: %s", nng_strerror(rv));
		}
	}
	s->next = NULL;
	*out    = s;
	return 0;
}

/* Returns a slot to the pool, or closes it when the call did not end cleanly
 * (its context may still hold the request) or the pool is full. */
static void
slot_put(brq_rpc *r, brq_slot *s, bool reusable)
{
	if (reusable) {
		pthread_mutex_lock(&r->mtx);
		if (r->n_idle < BRQ_RPC_IDLE_MAX) {
			s->next = r->idle;
			r->idle = s;
			r->n_idle++;
			s = NULL;
		}
		pthread_mutex_unlock(&r->mtx);
	}
	slot_free(s);
}

void
brq_rpc_close(brq_rpc *r)
{
	pthread_mutex_lock(&r->mtx);
	brq_slot *s = r->idle;
	r->idle     = NULL;
	r->n_idle   = 0;
	pthread_mutex_unlock(&r->mtx);
	while (s != NULL) {
		brq_slot *next = s->next;
		slot_free(s);
		s = next;
	}
	/* Pipe events run until the socket is closed: the locks outlive it. */
	nng_close(r->sock);
	if (r->tls != NULL)
		nng_tls_config_free(r->tls);
	pthread_cond_destroy(&r->pipe_cv);
	pthread_mutex_destroy(&r->pipe_mu);
	pthread_mutex_destroy(&r->dial_mu);
	pthread_mutex_destroy(&r->mtx);
}

void
brq_rpc_abort(brq_rpc *r)
{
	pthread_mutex_lock(&r->dial_mu);
	r->aborted = true;
	nng_close(r->sock);
	pthread_mutex_unlock(&r->dial_mu);
}

/* ---- one call --------------------------------------------------------------------------- */

void
brq_call_init(brq_call *k, brq_op op)
{
	memset(k, 0, sizeof(*k));
	k->req.op = op;
	brq_arena_init(&k->arena);
}

void
brq_call_fini(brq_call *k)
{
	nng_msg_free(k->msg);
	k->msg = NULL;
	brq_arena_fini(&k->arena);
}

/* A failed send (nothing reached the gateway) or receive (the request may have run). */
static int
transport_fail(const brq_rpc *r, int rv, bool sent, int64_t timeout_ms, const char *op)
{
	if (rv == NNG_ENOMEM)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory in the transport", op);
	if (!sent && rv == NNG_ETIMEDOUT)
		return brq_fail(BRQ_EUNAVAIL, "%s: no connection to %s within %lld ms (nothing was sent)", op,
				r->url, (long long) timeout_ms);
	if (!sent)
		return brq_fail(BRQ_EUNAVAIL, "%s: %s: %s (nothing was sent)", op, r->url, nng_strerror(rv));
	if (rv == NNG_ETIMEDOUT)
		return brq_fail(BRQ_ETIMEDOUT,
				"%s: no reply from %s within %lld ms (the request may have run)", op, r->url,
				(long long) timeout_ms);
	return brq_fail(BRQ_EUNAVAIL, "%s: %s: connection lost: %s (the request may have run)", op, r->url,
			nng_strerror(rv));
}

/*
 * Hands the request message to NNG and waits for the reply until the monotonic
 * deadline. Takes m in every case. On success the reply is on k->msg.
 *
 * REQ completes the send once the request is on a connection (before that, nothing
 * has left this process); the receive then waits for the reply.
 *
 * Never a silent re-send: the resend timer is off (brq_rpc_open), and with it off
 * NNG 1.5.2's REQ fails an outstanding request with NNG_ECONNRESET when its
 * connection closes (req0_pipe_close, ctx->retry <= 0) instead of queueing it for
 * the next connection; the call then reports BRQ_EUNAVAIL. The test client_restart
 * guards this.
 */
static int
exchange(brq_rpc *r, brq_slot *s, nng_msg *m, uint64_t deadline_ms, int64_t total_ms, brq_call *k)
{
	const char *op  = brq_op_name(k->req.op);
	uint64_t    now = brq_now_ms();
	int         rv;

	nng_aio_set_timeout(s->aio, now < deadline_ms ? (nng_duration) (deadline_ms - now) : 1);
	nng_aio_set_msg(s->aio, m);
	nng_ctx_send(s->ctx, s->aio);
	m = NULL;
	nng_aio_wait(s->aio);
	if ((rv = nng_aio_result(s->aio)) != 0) {
		/* On failure the message is still ours (nng_ctx_send(3)); it holds the token. */
		m = nng_aio_get_msg(s->aio);
		nng_aio_set_msg(s->aio, NULL);
		if (m != NULL)
			sodium_memzero(nng_msg_body(m), nng_msg_len(m));
		nng_msg_free(m);
		return transport_fail(r, rv, false, total_ms, op);
	}

	/* One deadline for both halves: the receive gets what the send left. */
	now = brq_now_ms();
	nng_aio_set_timeout(s->aio, now < deadline_ms ? (nng_duration) (deadline_ms - now) : 1);
	nng_ctx_recv(s->ctx, s->aio);
	nng_aio_wait(s->aio);
	if ((rv = nng_aio_result(s->aio)) != 0)
		return transport_fail(r, rv, true, total_ms, op);
	k->msg = nng_aio_get_msg(s->aio);
	nng_aio_set_msg(s->aio, NULL);
	return 0;
}

/* The request as a message, with this call's rid and the token; the encoding
 * buffer is wiped. 0, BRQ_EINVAL (cannot be encoded) or BRQ_ENOMEM. */
static int
encode(brq_rpc *r, brq_slot *s, brq_call *k, nng_msg **out)
{
	nng_msg *m   = NULL;
	k->req.rid   = atomic_fetch_add(&r->next_rid, 1);
	k->req.token = (brq_str) {r->token, (uint32_t) r->token_len};
	int rv       = brq_request_encode(&s->out, &k->req);
	k->req.token = (brq_str) {NULL, 0};
	if (rv == 0 && nng_msg_alloc(&m, s->out.len) == 0)
		memcpy(nng_msg_body(m), s->out.data, s->out.len);
	if (s->out.data != NULL)
		sodium_memzero(s->out.data, s->out.len);
	brq_buf_reset(&s->out);
	if (rv == BRQ_E2BIG || rv == BRQ_EINVAL)
		return brq_fail(BRQ_EINVAL, "%s: request cannot be encoded", brq_op_name(k->req.op));
	if (rv != 0 || m == NULL)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory", brq_op_name(k->req.op));
	*out = m;
	return 0;
}

int
brq_rpc_call(brq_rpc *r, brq_call *k, uint32_t extra_ms)
{
	const char *op    = brq_op_name(k->req.op);
	int64_t     total = (int64_t) r->timeout_ms + (int64_t) extra_ms;
	brq_slot   *s     = NULL;
	nng_msg    *m     = NULL;
	int         rv;
	char        why[BRQ_ERRTEXT_MAX];

	if (total > INT32_MAX)
		total = INT32_MAX;
	uint64_t deadline = brq_now_ms() + (uint64_t) total;
	/* 1. A connection first: "nothing listens" must never look like "no answer". */
	if ((rv = connect_for(r, op, deadline, total)) != 0)
		return rv;
	if ((rv = slot_get(r, &s)) != 0)
		return rv;
	/* 2. Encode, with the time this call will still wait (the gateway neither starts
	 *    nor keeps work we gave up on); send and wait for the reply. A slot whose call
	 *    failed is closed, so its context cannot deliver the request later. */
	uint64_t now      = brq_now_ms();
	k->req.timeout_ms = now < deadline ? (uint32_t) (deadline - now) : 1;
	if ((rv = encode(r, s, k, &m)) != 0) {
		slot_put(r, s, true);
		return rv;
	}
	rv = exchange(r, s, m, deadline, total, k);
	slot_put(r, s, rv == 0);
	if (rv != 0)
		return rv;

	/* 3. Decode; the reply must answer this request. */
	brq_status st = brq_reply_decode(&k->rep, k->req.op, nng_msg_body(k->msg), nng_msg_len(k->msg),
					 &r->lim, &k->arena, why, sizeof(why));
	if (st == BRQ_ST_INTERNAL)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory decoding the reply", op);
	if (st != BRQ_ST_OK)
		return brq_fail(BRQ_EINTERNAL, "%s: malformed reply: %s", op, why);
	/* rid 0 on an error reply: the gateway could not read the request's envelope. */
	if (k->rep.rid != k->req.rid && !(k->rep.rid == 0 && k->rep.code != BRQ_ST_OK))
		return brq_fail(BRQ_EINTERNAL, "%s: reply is for request %llu, not %llu", op,
				(unsigned long long) k->rep.rid, (unsigned long long) k->req.rid);
	return 0;
}

/* The public result of a call that returned rv: a failure of the call itself, or the
 * reply's status, whose gateway message then becomes the calling thread's message. */
static brooq_err
call_result(const brq_call *k, int rv)
{
	if (rv != 0)
		return brq_err_public(rv);
	if (k->rep.code != BRQ_ST_OK) {
		brq_str text = k->rep.msg.len > 0 ? k->rep.msg : k->rep.code_name;
		brq_msg_set(text.ptr, text.len);
	}
	return brq_err_from_status(k->rep.code);
}

brooq_err
brq_call_run(brq_rpc *r, brq_call *k, int rv, uint32_t extra_ms, brq_call_out_fn copy, void *out, void *out2)
{
	if (rv == 0)
		rv = brq_rpc_call(r, k, extra_ms);
	brooq_err err = call_result(k, rv);
	if (err == BROOQ_OK && copy != NULL)
		err = brq_err_public(copy(k, out, out2));
	brq_call_fini(k);
	return err;
}
