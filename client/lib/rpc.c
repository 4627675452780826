/* SPDX-License-Identifier: MIT */
/* RPC transport: a pool of REQ contexts; one request and one reply per call, never re-sent. */
#include "client.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nng/supplemental/util/platform.h>
#include <sodium.h>

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

/* Pops an idle slot or makes a new one. */
static brooq_err
slot_get(brooq_client *c, brq_slot **out)
{
	brq_slot *s;
	int       rv;

	pthread_mutex_lock(&c->mtx);
	if ((s = c->idle) != NULL) {
		c->idle = s->next;
		c->n_idle--;
	}
	pthread_mutex_unlock(&c->mtx);
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return brq_fail(BROOQ_ENOMEM, "out of memory");
		brq_buf_init(&s->out, 0);
		if ((rv = nng_aio_alloc(&s->aio, NULL, NULL)) != 0) {
			brq_buf_fini(&s->out);
			free(s);
			return brq_fail(BROOQ_ENOMEM, "cannot allocate an aio: %s", nng_strerror(rv));
		}
		if ((rv = nng_ctx_open(&s->ctx, c->sock)) != 0) {
			nng_aio_free(s->aio);
			brq_buf_fini(&s->out);
			free(s);
			return brq_fail(rv == NNG_ECLOSED ? BROOQ_EINVAL : BROOQ_ENOMEM,
					"cannot open a REQ context: %s", nng_strerror(rv));
		}
	}
	s->next = NULL;
	*out    = s;
	return BROOQ_OK;
}

/* Returns a slot to the pool, or closes it when the call did not end cleanly
 * (its context may still hold the request) or the pool is full. */
static void
slot_put(brooq_client *c, brq_slot *s, bool reusable)
{
	if (reusable) {
		pthread_mutex_lock(&c->mtx);
		if (c->n_idle < BRQ_CLIENT_IDLE_MAX) {
			s->next = c->idle;
			c->idle = s;
			c->n_idle++;
			s = NULL;
		}
		pthread_mutex_unlock(&c->mtx);
	}
	slot_free(s);
}

void
brq_rpc_drain(brooq_client *c)
{
	pthread_mutex_lock(&c->mtx);
	brq_slot *s = c->idle;
	c->idle     = NULL;
	c->n_idle   = 0;
	pthread_mutex_unlock(&c->mtx);
	while (s != NULL) {
		brq_slot *next = s->next;
		slot_free(s);
		s = next;
	}
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

static brooq_err
transport_fail(const brooq_client *c, int rv, bool sent, nng_duration timeout_ms, const char *op)
{
	if (rv == NNG_ETIMEDOUT && !sent)
		return brq_fail(BROOQ_ETIMEDOUT, "%s: no connection to %s within %d ms", op, c->url,
				(int) timeout_ms);
	if (rv == NNG_ETIMEDOUT)
		return brq_fail(BROOQ_ETIMEDOUT,
				"%s: no reply from %s within %d ms (the request may have run)", op, c->url,
				(int) timeout_ms);
	if (rv == NNG_ENOMEM)
		return brq_fail(BROOQ_ENOMEM, "%s: out of memory in the transport", op);
	return brq_fail(BROOQ_ECONNECT, "%s: %s: %s%s", op, c->url, nng_strerror(rv),
			sent ? " (the request may have run)" : "");
}

/*
 * Hands the request message to NNG and waits for the reply within timeout_ms.
 * Takes m in every case. On success the reply is on k->msg.
 *
 * Never a silent re-send: the resend timer is off (brooq_client_open), and with
 * it off NNG 1.5.2's REQ fails an outstanding request with NNG_ECONNRESET when
 * its connection closes (req0_pipe_close, ctx->retry <= 0) instead of queueing
 * it for the next connection; the call then reports BROOQ_ECONNECT. The test
 * client_restart guards this.
 */
static brooq_err
exchange(brooq_client *c, brq_slot *s, nng_msg *m, nng_duration timeout_ms, brq_call *k)
{
	const char *op       = brq_op_name(k->req.op);
	nng_time    deadline = nng_clock() + (nng_time) timeout_ms;
	int         rv;

	nng_aio_set_timeout(s->aio, timeout_ms);
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
		return transport_fail(c, rv, false, timeout_ms, op);
	}

	/* One deadline for both halves: the receive gets what the send left. */
	nng_time     now  = nng_clock();
	nng_duration left = now < deadline ? (nng_duration) (deadline - now) : 1;
	nng_aio_set_timeout(s->aio, left);
	nng_ctx_recv(s->ctx, s->aio);
	nng_aio_wait(s->aio);
	if ((rv = nng_aio_result(s->aio)) != 0)
		return transport_fail(c, rv, true, timeout_ms, op);
	k->msg = nng_aio_get_msg(s->aio);
	nng_aio_set_msg(s->aio, NULL);
	return BROOQ_OK;
}

brooq_err
brq_rpc_call(brooq_client *c, brq_call *k, uint32_t extra_ms)
{
	int64_t   total = (int64_t) c->timeout_ms + (int64_t) extra_ms;
	brq_slot *s     = NULL;
	nng_msg  *m     = NULL;
	brooq_err err;
	int       rv;
	char      why[BRQ_ERRTEXT_MAX];

	if (total > INT32_MAX)
		total = INT32_MAX;
	if ((err = slot_get(c, &s)) != BROOQ_OK)
		return err;

	/* 1. Encode with this call's rid and the token, copy into a message, wipe. */
	k->req.rid   = atomic_fetch_add(&c->next_rid, 1);
	k->req.token = (brq_str) {c->token, (uint32_t) c->token_len};
	rv           = brq_request_encode(&s->out, &k->req);
	k->req.token = (brq_str) {NULL, 0};
	if (rv == 0 && nng_msg_alloc(&m, s->out.len) == 0)
		memcpy(nng_msg_body(m), s->out.data, s->out.len);
	if (s->out.data != NULL)
		sodium_memzero(s->out.data, s->out.len);
	brq_buf_reset(&s->out);
	if (rv != 0 || m == NULL) {
		slot_put(c, s, true);
		if (rv == BRQ_E2BIG || rv == BRQ_EINVAL)
			return brq_fail(BROOQ_EINVAL, "%s: request cannot be encoded",
					brq_op_name(k->req.op));
		return brq_fail(BROOQ_ENOMEM, "%s: out of memory", brq_op_name(k->req.op));
	}

	/* 2. Send and wait for the reply. A slot whose call failed is closed, so its
	 *    context cannot deliver the request later. */
	err = exchange(c, s, m, (nng_duration) total, k);
	slot_put(c, s, err == BROOQ_OK);
	if (err != BROOQ_OK)
		return err;

	/* 3. Decode; the reply must answer this request. */
	brq_status st = brq_reply_decode(&k->rep, k->req.op, nng_msg_body(k->msg), nng_msg_len(k->msg),
					 &c->lim, &k->arena, why, sizeof(why));
	if (st == BRQ_ST_INTERNAL)
		return brq_fail(BROOQ_ENOMEM, "%s: out of memory decoding the reply", brq_op_name(k->req.op));
	if (st != BRQ_ST_OK)
		return brq_fail(BROOQ_EPROTO, "%s: malformed reply: %s", brq_op_name(k->req.op), why);
	/* rid 0 on an error reply: the gateway could not read the request's rid. */
	if (k->rep.rid != k->req.rid && !(k->rep.rid == 0 && k->rep.code != BRQ_ST_OK))
		return brq_fail(BROOQ_EPROTO, "%s: reply is for request %llu, not %llu",
				brq_op_name(k->req.op), (unsigned long long) k->rep.rid,
				(unsigned long long) k->req.rid);
	if (k->rep.code != BRQ_ST_OK) {
		brq_str text = k->rep.msg.len > 0 ? k->rep.msg : k->rep.code_name;
		brq_msg_set(text.ptr, text.len);
		return brq_err_from_status(k->rep.code);
	}
	return BROOQ_OK;
}
