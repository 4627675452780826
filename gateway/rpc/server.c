// SPDX-License-Identifier: MIT
// The RPC server's work items: the state machine of each, from a request to its reply
// (the socket, the items and the start and stop: server_life.c).
#include "server_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "brq_clock.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "peer.h"

int (*brq_server_msg_alloc)(nng_msg **m, size_t size) = nng_msg_alloc;
void (*brq_server_handback_seam)(const brq_work *w);

// ---- replies ------------------------------------------------------------------------

// The reply message of w->out. When it cannot be allocated, w's spare message
// carries an `internal` error instead (*is_spare set: the peer gets an answer, not a
// timeout and a resend); NULL only when that is gone too.
static nng_msg *
reply_msg(brq_work *w, bool *is_spare)
{
	nng_msg **spare = &w->spare;
	*is_spare       = false;
	nng_msg *m      = NULL;
	if (brq_server_msg_alloc(&m, 0) == 0 && nng_msg_append(m, w->out.data, w->out.len) == 0) {
		if (*spare == NULL && brq_server_msg_alloc(spare, SPARE_MSG_BYTES) == 0)
			nng_msg_clear(*spare);
		return m;
	}
	nng_msg_free(m);
	BRQ_LOG_ERROR("reply_alloc_failed", "op=%s bytes=%zu", brq_op_name(w->req.op), w->out.len);
	if (*spare == NULL)
		return NULL;
	w->code = BRQ_ST_INTERNAL;
	if (brq_reply_encode_error(&w->out, w->req.rid, BRQ_ST_INTERNAL,
				   "out of memory: the reply could not be sent") != 0 ||
	    nng_msg_append(*spare, w->out.data, w->out.len) != 0)
		return NULL;
	m         = *spare;
	*spare    = NULL;
	*is_spare = true;
	return m;
}

// The end of a request: counters, and the request message freed.
static void
finish(brq_server *s, brq_work *w)
{
	if (w->req.op == BRQ_OP_CLAIM)
		brq_waiters_untrack(&s->waiters, w);
	if (w->is_long_poll) {
		atomic_fetch_sub(&s->long_polls, 1);
		w->is_long_poll = false;
	}
	// The request is no longer needed: its strings were copied into the reply, the
	// reply into its message. The storage goes back for the next busy item.
	nng_msg_free(w->msg);
	w->msg = NULL;
	brq_stash_give(&s->stash, &w->arena, &w->out);
}

// Waits for the next request. Also while stopping: requests that arrive during the
// grace period get an `unavailable` answer rather than silence; the socket's close
// ends the receives (NNG_ECLOSED, not re-armed).
void
brq_server_rearm(brq_work *w)
{
	w->state = BRQ_W_RECV;
	nng_ctx_recv(w->ctx, w->aio);
}

// Ends a request without a reply (its peer is gone, or no message could be had).
static void
drop(brq_server *s, brq_work *w)
{
	BRQ_LOG_DEBUG("request_dropped", "op=%s pipe=%u", brq_op_name(w->req.op), w->pipe_id);
	finish(s, w);
	brq_quota_release(&s->quota, &w->quota);
	atomic_fetch_sub(&s->inflight, 1);
	brq_server_rearm(w);
}

// Closes w's connection, whose peer went over its share (quota.h) or stopped reading,
// and ends w without a reply: nobody would read it. The peer's other requests end as
// their replies find the connection gone.
static void
close_conn(brq_server *s, brq_work *w, const char *why)
{
	brq_metrics_conn_closed();
	brq_peer_log_conn_closed(w->pipe, why, w->pipe_id);
	nng_pipe_close(w->pipe);
	drop(s, w);
}

// Sends m as w's reply and re-arms the context when the send completes. Takes w and m.
static void
send_reply(brq_server *s, brq_work *w, nng_msg *m)
{
	brq_metrics_rpc(w->req.op, w->code, brq_now_us() - w->start_us, w->waited);
	finish(s, w);
	w->state = BRQ_W_SEND;
	nng_aio_set_timeout(w->aio, (nng_duration) s->cfg->send_timeout_ms);
	nng_aio_set_msg(w->aio, m);
	m = NULL;
	nng_ctx_send(w->ctx, w->aio);
}

// Replies from an NNG thread (ping, errors before any database work). Takes w.
static void
reply(brq_server *s, brq_work *w)
{
	bool     is_spare;
	nng_msg *m = reply_msg(w, &is_spare);
	if (m == NULL)
		drop(s, w);
	else
		send_reply(s, w, m);
}

// Replies with an error status; msg formatted like printf.
static void __attribute__((format(printf, 4, 5)))
reply_error(brq_server *s, brq_work *w, brq_status code, const char *fmt, ...)
{
	char    text[BRQ_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	w->code = code;
	if (brq_reply_encode_error(&w->out, w->req.rid, code, "%s", text) != 0)
		brq_buf_reset(&w->out);
	reply(s, w);
}

// ---- the state machine -----------------------------------------------------------------

// Starts the long-poll of a claim with a wait, if the limit allows. False when it
// was refused (and answered).
static bool
start_long_poll(brq_server *s, brq_work *w)
{
	if (atomic_fetch_add(&s->long_polls, 1) >= (int) s->cfg->max_waiters) {
		atomic_fetch_sub(&s->long_polls, 1);
		reply_error(s, w, BRQ_ST_RESOURCE_EXHAUSTED,
			    "claim.wait_ms: too many concurrent long-polls (max %u); retry later",
			    s->cfg->max_waiters);
		return false;
	}
	w->is_long_poll = true;
	w->deadline_ms  = brq_now_ms() + w->req.claim.wait_ms;
	return true;
}

// Checks w's token: its role, and its identity for the token's share (quota.h): the
// first bytes of the token's keyed hash, which stands for it in memory.
static brq_role
authenticate(brq_server *s, brq_work *w)
{
	unsigned char h[32];
	if (w->req.token.ptr == NULL || w->req.token.len == 0 || w->req.token.len > BRQ_AUTH_TOKEN_MAX)
		return BRQ_ROLE_NONE;
	brq_auth_hash(s->auth, w->req.token.ptr, w->req.token.len, h);
	brq_role role = brq_auth_check_hash(s->auth, h);
	memcpy(&w->quota.token_key, h, sizeof(w->quota.token_key));
	sodium_memzero(h, sizeof(h));
	return role;
}

// Answers a request that showed no valid token, unless its connection is over the
// share of such requests: then the connection closes (quota.h).
static void
reply_error_anon(brq_server *s, brq_work *w, brq_status code, const char *text)
{
	const char *why;
	if (brq_quota_admit_conn(&s->quota, &w->quota, false, &why) == BRQ_QUOTA_CLOSE)
		close_conn(s, w, why);
	else
		reply_error(s, w, code, "%s", text);
}

// Acts on a quota verdict: true when OK; else refuses w (answered) or closes its
// connection, and counts it.
static bool
quota_ok(brq_server *s, brq_work *w, brq_quota_verdict v, const char *why)
{
	if (v == BRQ_QUOTA_OK)
		return true;
	brq_metrics_quota_refused();
	if (v == BRQ_QUOTA_CLOSE)
		close_conn(s, w, why);
	else
		reply_error(s, w, BRQ_ST_RESOURCE_EXHAUSTED, "%s: %s", brq_op_name(w->req.op), why);
	return false;
}

// Takes w's shares of its token and lane; false when it was refused (and answered).
static bool
admitted(brq_server *s, brq_work *w, bool is_read, bool is_long_poll)
{
	const char       *why = "";
	brq_quota_verdict v   = brq_quota_admit(&s->quota, &w->quota, is_read, is_long_poll, &why);
	return quota_ok(s, w, v, why);
}

// Answers watch w now, or parks it until there is something to say or its wait is over
// (watch.h). On an NNG thread: no database is involved.
static void
watch_answer(brq_server *s, brq_work *w, bool final)
{
	brq_watch_rep rep;
	uint64_t      now = brq_now_ms();
	final             = final || now >= w->deadline_ms;
	if (!brq_watches_answer(&s->watches, w, final, final ? 0 : w->deadline_ms - now, &rep))
		return; // parked: its callback comes back here
	brq_reply r = {.op = BRQ_OP_WATCH, .rid = w->req.rid, .code = BRQ_ST_OK, .watch = rep};
	w->code     = BRQ_ST_OK;
	if (brq_reply_encode(&w->out, &r) != 0) {
		reply_error(s, w, BRQ_ST_INTERNAL, "watch: the reply could not be encoded");
		return;
	}
	reply(s, w);
}

// A watch arrived (decoded, authenticated): it takes its shares (quota.h) and is
// answered or parked.
static void
watch_start(brq_server *s, brq_work *w)
{
	const char *why = NULL;
	if (!admitted(s, w, false, true))
		return;
	if (brq_quota_admit_watch(&s->quota, &w->quota, &why) != BRQ_QUOTA_OK) {
		brq_metrics_quota_refused();
		reply_error(s, w, BRQ_ST_RESOURCE_EXHAUSTED, "watch: %s", why);
		return;
	}
	if (brq_watches_begin(&s->watches, w) != 0) {
		reply_error(s, w, BRQ_ST_INTERNAL, "watch: out of memory");
		return;
	}
	uint64_t wait  = w->req.watch.has_wait_ms ? w->req.watch.wait_ms : 0;
	w->deadline_ms = brq_now_ms() + wait;
	// The answer comes while its caller still waits for it.
	if (w->caller_deadline_ms != 0 && w->caller_deadline_ms < w->deadline_ms)
		w->deadline_ms = w->caller_deadline_ms;
	watch_answer(s, w, wait == 0);
}

// A request arrived: decode, authenticate, validate, then answer at once (ping,
// errors) or hand it to the pool. Runs on an NNG thread: nothing here blocks.
static void
handle_request(brq_server *s, brq_work *w)
{
	char err[BRQ_ERRTEXT_MAX];

	w->start_us = brq_now_us();
	w->pipe     = nng_msg_get_pipe(w->msg);
	w->pipe_id  = (uint32_t) nng_pipe_id(w->pipe);
	w->quota    = (brq_quota_hold) {.pipe_id = w->pipe_id};
	brq_quota_arrive(&s->quota, &w->quota);
	w->waited = w->is_long_poll = w->settled = false;
	atomic_store(&w->orphaned, false);
	w->settle_results     = NULL;
	w->claimed            = NULL;
	w->n_claimed          = 0;
	w->deadline_ms        = 0;
	w->caller_deadline_ms = 0;
	w->role               = BRQ_ROLE_NONE;
	brq_stash_take(&s->stash, &w->arena, &w->out);
	memset(&w->req, 0, sizeof(w->req));
	atomic_fetch_add(&s->inflight, 1);

	brq_status st = brq_request_decode_envelope(&w->req, nng_msg_body(w->msg), nng_msg_len(w->msg),
						    &s->lim, err, sizeof(err));
	if (st != BRQ_ST_OK) {
		reply_error_anon(s, w, st, err);
		return;
	}
	w->caller_deadline_ms = w->req.timeout_ms > 0 ? brq_now_ms() + w->req.timeout_ms : 0;
	// Authenticate before looking at the op's fields: an unauthenticated peer
	// learns nothing about what a valid request would look like.
	w->role = authenticate(s, w);
	if (w->role == BRQ_ROLE_NONE) {
		brq_metrics_auth_failure();
		brq_peer_log_auth_failed(w->pipe, brq_op_name(w->req.op), w->req.rid, w->pipe_id,
					 w->req.token.len);
		reply_error_anon(s, w, BRQ_ST_UNAUTHENTICATED, "missing or unknown bearer token");
		return;
	}
	// The connection's share first, for every request that may be answered: a ping or
	// an error is answered at once, and an answer its peer never reads pins its item
	// as surely as a query's does (a signed-in peer pipelining pings took them all).
	const char       *why = "";
	brq_quota_verdict v   = brq_quota_admit_conn(&s->quota, &w->quota, true, &why);
	if (!quota_ok(s, w, v, why))
		return;
	if (!brq_auth_role_may(w->role, brq_op_admin_only(w->req.op))) {
		reply_error(s, w, BRQ_ST_PERMISSION_DENIED, "%s: needs the admin role",
			    brq_op_name(w->req.op));
		return;
	}
	st = brq_request_decode_body(&w->req, &s->lim, &w->arena, err, sizeof(err));
	if (st != BRQ_ST_OK) {
		reply_error(s, w, st, "%s", err);
		return;
	}
	if (atomic_load(&s->stopping)) {
		reply_error(s, w, BRQ_ST_UNAVAILABLE, "gateway is shutting down");
		return;
	}
	if (w->req.op == BRQ_OP_PING) {
		brq_ops_ping(w);
		reply(s, w);
		return;
	}
	if (w->req.op == BRQ_OP_WATCH) {
		watch_start(s, w);
		return;
	}
	// Operator reads take the pool's capped lane: the hot path always finds a thread.
	w->is_operator_read = w->req.op == BRQ_OP_STATS || w->req.op == BRQ_OP_JOB ||
		w->req.op == BRQ_OP_TOPICS || w->req.op == BRQ_OP_LIST || w->req.op == BRQ_OP_SCHEDULE_LIST;
	bool wants_wait = w->req.op == BRQ_OP_CLAIM && w->req.claim.has_wait_ms && w->req.claim.wait_ms > 0;
	if (!admitted(s, w, w->is_operator_read, wants_wait))
		return;
	if (wants_wait && !start_long_poll(s, w))
		return;
	if (w->req.op == BRQ_OP_CLAIM)
		brq_waiters_track(&s->waiters, w);
	w->state = BRQ_W_DB;
	brq_pool_submit(&s->pool, w);
}

// A taken claim's hand-back, by whichever of its taker and its callback comes second
// (handback() explains the protocol), when the other is done with w: sends the reply
// or drops the claim; true when the claim is to run again (park_over()).
static bool
handback_perform(brq_server *s, brq_work *w)
{
	atomic_store(&w->steal, BRQ_STEAL_NONE);
	switch (w->handback) {
	case BRQ_HANDBACK_SEND:
		send_reply(s, w, w->handback_msg);
		w->handback_msg = NULL;
		return false;
	case BRQ_HANDBACK_DROP: drop(s, w); return false;
	case BRQ_HANDBACK_CLAIM: break;
	}
	return true;
}

// A taken claim's callback. Returns false when the taker still works on it (the
// callback leaves it to the taker), or when the hand-back was performed here; true
// when the claim is to run again.
static bool
taken_ready(brq_server *s, brq_work *w)
{
	int expected = BRQ_STEAL_TAKEN;
	if (atomic_compare_exchange_strong(&w->steal, &expected, BRQ_STEAL_WAITING))
		return false;
	return handback_perform(s, w);
}

// A parked claim's wait is over (its callback ran, or its taker handed it back): it
// claims again, unless its peer went away and nobody would read an answer.
static void
park_over(brq_server *s, brq_work *w)
{
	brq_waiters_unpark(&s->waiters, w);
	if (atomic_load(&w->orphaned)) {
		drop(s, w);
		return;
	}
	w->state = BRQ_W_DB;
	brq_pool_submit(&s->pool, w);
}

// A reply waited BROOQ_SEND_TIMEOUT behind its connection's blocked send: the peer does
// not read, and the connection goes (its other queued replies with it).
static void
send_timed_out(brq_work *w)
{
	brq_metrics_conn_closed();
	brq_peer_log_conn_closed(w->pipe, "reply not taken within the send timeout", w->pipe_id);
	nng_pipe_close(w->pipe);
}

void
brq_server_work_cb(void *arg)
{
	brq_work   *w  = arg;
	brq_server *s  = w->srv;
	int         rv = nng_aio_result(w->aio);

	switch (w->state) {
	case BRQ_W_RECV:
		if (rv != 0) {
			// Closed or canceled: we are shutting down; never re-arm then.
			if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
				return;
			BRQ_LOG_WARN("recv_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
			brq_server_rearm(w);
			return;
		}
		w->msg = nng_aio_get_msg(w->aio);
		nng_aio_set_msg(w->aio, NULL);
		if (w->msg == NULL) {
			// A receive that succeeded with no message: NNG 1.5.2's expire thread
			// did that to a receive begun inside its batch (deploy/nng/expire-race.patch
			// fixes it). Never again a crash for it: wait for the next request.
			BRQ_LOG_ERROR("recv_without_message", "action=%s", "rearm");
			brq_server_rearm(w);
			return;
		}
		handle_request(s, w);
		return;

	case BRQ_W_SEND:
		if (rv != 0 || nng_aio_get_msg(w->aio) != NULL) {
			// On failure the message is still ours (nng_ctx_send(3)); so it is
			// after a "success" that did not send it (the expire race above).
			nng_msg *m = nng_aio_get_msg(w->aio);
			nng_aio_set_msg(w->aio, NULL);
			nng_msg_free(m);
			if (rv == 0)
				BRQ_LOG_ERROR("send_without_sending", "pipe=%u", w->pipe_id);
			else if (rv == NNG_ETIMEDOUT)
				send_timed_out(w);
			else if (rv != NNG_ECLOSED)
				BRQ_LOG_DEBUG("send_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		}
		nng_aio_set_timeout(w->aio, NNG_DURATION_INFINITE); // receives and sleeps wait on
		brq_quota_release(&s->quota, &w->quota);
		atomic_fetch_sub(&s->inflight, 1);
		if (rv == NNG_ECLOSED)
			return;
		brq_server_rearm(w);
		return;

	case BRQ_W_PARK:
		if (w->req.op == BRQ_OP_WATCH) {
			// Woken by a cancel of its topics, the listener or the stop, or its wait
			// is over: it answers with what there is now.
			brq_watches_unpark(&s->watches, w);
			if (atomic_load(&w->orphaned))
				drop(s, w);
			else
				watch_answer(s, w, true);
			return;
		}
		// Woken (NNG_ECANCELED), timer fired (0), or cut short (NNG_ETIMEDOUT).
		if (atomic_load(&w->steal) != BRQ_STEAL_NONE && !taken_ready(s, w))
			return; // taken by an enqueue: its taker hands it back
		park_over(s, w);
		return;

	case BRQ_W_DB: break;
	}
	BRQ_LOG_ERROR("work_bad_state", "state=%d", (int) w->state);
}

// ---- pool glue -------------------------------------------------------------------------------

// Parks a long-poll claim that found nothing, until a wake, its deadline or the
// re-check interval; or sends it round again when a wake came meanwhile.
static void
park(brq_server *s, brq_work *w)
{
	uint64_t now = brq_now_ms();
	uint64_t ms  = w->deadline_ms > now ? w->deadline_ms - now : 0;
	// Jobs that become ready by time, or arrive through SQL or another gateway,
	// are found by the monitor's one depth query per poll interval, which wakes
	// the waiters of their topics (brq_server_wake_topic). Each waiter's own
	// re-check is only a safety net for when that query cannot run.
	if (ms > BRQ_SERVER_RECHECK_MS)
		ms = BRQ_SERVER_RECHECK_MS;
	if (atomic_load(&s->stopping) || !brq_waiters_park(&s->waiters, w, ms)) {
		w->state = BRQ_W_DB;
		brq_pool_submit(&s->pool, w);
	}
}

// True when w's caller has stopped waiting for its answer.
static bool
expired(const brq_work *w)
{
	return w->caller_deadline_ms != 0 && brq_now_ms() >= w->caller_deadline_ms;
}

// Why w's reply would reach nobody (NULL: it may): its pipe is gone (NNG would report
// success and drop the reply, NNG-NOTES §2.3.9), or its caller gave up waiting.
static const char *
unreachable(const brq_work *w)
{
	return atomic_load(&w->orphaned) ? "peer went away" : expired(w) ? "caller's timeout passed" : NULL;
}

// Delivers w's reply from a pool thread; a reply that cannot reach its peer gives
// back the leases it carried (ops) at once, rather than through the reaper.
static void
deliver(brq_server *s, brq_store_conn *c, brq_work *w)
{
	brq_quota_read_done(&s->quota, &w->quota); // the lane's part is over
	const char *why = unreachable(w);
	if (why != NULL) {
		if (w->n_claimed > 0 && expired(w))
			brq_metrics_expired();
		brq_ops_undeliverable(&s->ops, c, w, why);
		drop(s, w);
		return;
	}
	bool     is_spare;
	nng_msg *m = reply_msg(w, &is_spare);
	if (m == NULL || is_spare)
		brq_ops_undeliverable(&s->ops, c, w, "reply allocation failed");
	if (m == NULL)
		drop(s, w);
	else
		send_reply(s, w, m);
}

// Hands a claim taken by an enqueue back. Its sleep was left armed, so its callback
// may have run meanwhile. The taker first ends the sleep (a cancel: a no-op when it
// ended already; the callback never starts an operation on a taken claim's aio, so
// nothing else can be canceled), then the taker and the callback each move w->steal
// once and the second one acts:
//   taker first  (TAKEN -> READY): the callback, still to run, performs the hand-back;
//   callback first (TAKEN -> WAITING, after which it touches w no more): w's aio is
//   idle and nobody else holds w, so the taker performs it here, on its pool thread,
//   as deliver() does.
// The taker must not set READY before the cancel: a callback that saw READY could
// start the reply's send on the aio, and the cancel would then end the send.
// (It used to run the callback again with a sleep of 0 instead: NNG's expiry thread
// took 0.2-1 ms to run it, in ~5 % of the starts through a parked long-poll.)
static void
handback(brq_server *s, brq_store_conn *c, brq_work *w)
{
	if (w->handback == BRQ_HANDBACK_SEND) {
		bool        is_spare = false;
		const char *why      = unreachable(w);
		nng_msg    *m        = why != NULL ? NULL : reply_msg(w, &is_spare);
		if (m == NULL || is_spare)
			brq_ops_undeliverable(&s->ops, c, w, why != NULL ? why : "reply allocation failed");
		w->handback     = m != NULL ? BRQ_HANDBACK_SEND : BRQ_HANDBACK_DROP;
		w->handback_msg = m;
	}
	nng_aio_cancel(w->aio);
	if (brq_server_handback_seam != NULL)
		brq_server_handback_seam(w);
	int expected = BRQ_STEAL_TAKEN;
	if (atomic_compare_exchange_strong(&w->steal, &expected, BRQ_STEAL_READY))
		return;
	if (handback_perform(s, w))
		park_over(s, w);
}

// Drops the items of a group whose caller has stopped waiting: work nobody waits for is
// not started (an enqueue's caller was told "may have run" and will retry with its
// key). Returns the rest, still linked; *deadline_ms: the latest caller deadline among
// them (0 if any has none), which bounds the statements they share.
static brq_work *
drop_expired(brq_server *s, brq_work *w, uint64_t *deadline_ms)
{
	brq_work *head = NULL, **link = &head;
	*deadline_ms = 0;
	bool bounded = true;
	while (w != NULL) {
		brq_work *next = w->qnext;
		w->qnext       = NULL;
		if (expired(w)) {
			BRQ_LOG_DEBUG("request_expired", "op=%s rid=%" PRIu64, brq_op_name(w->req.op),
				      w->req.rid);
			brq_metrics_expired();
			drop(s, w);
		} else {
			if (w->caller_deadline_ms == 0)
				bounded = false;
			else if (w->caller_deadline_ms > *deadline_ms)
				*deadline_ms = w->caller_deadline_ms;
			*link = w;
			link  = &w->qnext;
		}
		w = next;
	}
	if (!bounded)
		*deadline_ms = 0;
	return head;
}

// A request's run function on a pool thread (work.h brq_work_run_fn): one item, or
// a group of enqueues.
void
brq_server_run_on_pool(brq_work *w, brq_store_conn *c)
{
	brq_server *s = w->srv;
	uint64_t    deadline_ms;
	if ((w = drop_expired(s, w, &deadline_ms)) == NULL)
		return;
	brq_store_set_deadline(c, deadline_ms);
	if (w->req.op == BRQ_OP_ENQUEUE) {
		brq_work *taken[BRQ_OPS_TAKE_MAX];
		uint32_t  k = brq_ops_enqueue(&s->ops, c, w, taken);
		// The claims first: their jobs start while the producer's answer travels.
		for (uint32_t i = 0; i < k; i++)
			handback(s, c, taken[i]);
		while (w != NULL) {
			brq_work *next = w->qnext;
			w->qnext       = NULL;
			deliver(s, c, w); // hands w on: read its link first
			w = next;
		}
		return;
	}
	if (brq_ops_run(&s->ops, c, w) == BRQ_OPS_PARK)
		park(s, w);
	else
		deliver(s, c, w);
}

// A peer went away: its claims must not lease jobs nobody receives.
void
brq_server_pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	brq_server *s = arg;
	(void) ev;
	brq_waiters_pipe_gone(&s->waiters, (uint32_t) nng_pipe_id(p));
	brq_watches_pipe_gone(&s->watches, (uint32_t) nng_pipe_id(p));
}

void
brq_server_wake_topic(void *arg, const char *topic, size_t topic_len)
{
	brq_server *s = arg;
	brq_waiters_wake(&s->waiters, topic, topic_len, UINT32_MAX);
}

void
brq_server_cancels_heard(void *arg, const uint64_t *ids, const brq_str *topics, size_t n)
{
	brq_server *s = arg;
	brq_metrics_cancels_heard(n);
	brq_watches_heard(&s->watches, ids, topics, n);
}

void
brq_server_cancels_live(void *arg, bool live)
{
	brq_server *s = arg;
	brq_metrics_listener_up_set(live);
	brq_watches_live(&s->watches, live);
}
