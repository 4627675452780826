// SPDX-License-Identifier: MIT
// The RPC server: one NNG rep0 socket, a fixed set of work items, long-poll waiters.
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>
#include <nng/transport/ipc/ipc.h>

#include "log.h"
#include "metrics.h"
#include "ops.h"
#include "peer.h"

// Items for requests that are not long-polls: enough to keep every pool thread
// busy with a queue behind it.
#define SPARE_WORK_PER_CONN 16
#define SPARE_WORK_MIN      64

static void work_cb(void *arg);

// ---- replies ----------------------------------------------------------------------

void
brq_server_reply(brq_server *s, brq_work *w)
{
	nng_msg *m = NULL;
	if (brq_buf_error(&w->out) != 0) {
		// The reply did not fit (memory, or larger than the request limit): still
		// answer, since a REQ peer that gets nothing resends (NNG-NOTES §2.2).
		w->code = BRQ_ST_INTERNAL;
		if (brq_reply_encode_error(&w->out, w->req.rid, BRQ_ST_INTERNAL,
					   "reply could not be encoded") != 0)
			brq_buf_reset(&w->out);
	}
	if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, w->out.data, w->out.len) != 0) {
		nng_msg_free(m);
		m = NULL;
	}
	brq_metrics_rpc(w->req.op, w->code, brq_now_us() - w->start_us, w->waited);
	if (w->is_long_poll) {
		atomic_fetch_sub(&s->long_polls, 1);
		w->is_long_poll = false;
	}
	// The request is no longer needed: its strings were copied into the reply.
	nng_msg_free(w->msg);
	w->msg = NULL;
	if (m == NULL) {
		// Out of memory: drop the request; the peer's timeout reports it.
		BRQ_LOG_ERROR("reply_alloc_failed", "op=%s", brq_op_name(w->req.op));
		atomic_fetch_sub(&s->inflight, 1);
		w->state = BRQ_W_RECV;
		nng_ctx_recv(w->ctx, w->aio);
		return;
	}
	w->state = BRQ_W_SEND;
	nng_aio_set_msg(w->aio, m);
	m = NULL;
	nng_ctx_send(w->ctx, w->aio);
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
	brq_server_reply(s, w);
}

// ---- long-poll waiters ---------------------------------------------------------------

static void
waiters_remove(brq_server *s, brq_work *w)
{
	if (!w->in_waiters)
		return;
	if (w->wprev != NULL)
		w->wprev->wnext = w->wnext;
	else
		s->whead = w->wnext;
	if (w->wnext != NULL)
		w->wnext->wprev = w->wprev;
	else
		s->wtail = w->wprev;
	w->wprev = w->wnext = NULL;
	w->in_waiters       = false;
	brq_metrics_waiters_add(-1);
}

uint64_t
brq_server_wake_gen(brq_server *s)
{
	pthread_mutex_lock(&s->wmtx);
	uint64_t g = s->wake_gen;
	pthread_mutex_unlock(&s->wmtx);
	return g;
}

void
brq_server_park(brq_server *s, brq_work *w)
{
	uint64_t now = brq_now_ms();
	uint64_t ms  = w->deadline_ms > now ? w->deadline_ms - now : 0;
	// Jobs that become ready by time, or arrive through SQL or another gateway,
	// are found by the monitor's one depth query per poll interval, which wakes
	// the waiters of their topics (brq_server_wake_topic). Each waiter's own
	// re-check is only a safety net for when that query cannot run.
	if (ms > BRQ_SERVER_RECHECK_MS)
		ms = BRQ_SERVER_RECHECK_MS;

	pthread_mutex_lock(&s->wmtx);
	if (s->wake_gen != w->wake_gen || atomic_load(&s->stopping)) {
		// Something was enqueued since this claim looked (or we are stopping):
		// go round again instead of sleeping through it.
		pthread_mutex_unlock(&s->wmtx);
		w->state = BRQ_W_DB;
		brq_pool_submit(&s->pool, w);
		return;
	}
	w->waited     = true;
	w->in_waiters = true;
	w->wnext      = NULL;
	w->wprev      = s->wtail;
	if (s->wtail != NULL)
		s->wtail->wnext = w;
	else
		s->whead = w;
	s->wtail = w;
	brq_metrics_waiters_add(1);
	w->state = BRQ_W_PARK;
	// Started under the lock, so a waker that finds w in the list always finds
	// its sleep in progress and its cancel is never lost. The callback runs on
	// an NNG thread and takes the lock itself.
	nng_aio_set_timeout(w->aio, NNG_DURATION_DEFAULT);
	nng_sleep_aio((nng_duration) ms, w->aio);
	pthread_mutex_unlock(&s->wmtx);
}

static bool
claims_topic(const brq_work *w, const char *topic, size_t len)
{
	for (uint32_t i = 0; i < w->req.claim.n_topics; i++) {
		brq_str t = w->req.claim.topics[i];
		if (t.len == len && memcmp(t.ptr, topic, len) == 0)
			return true;
	}
	return false;
}

void
brq_server_wake_topic(void *arg, const char *topic, size_t topic_len)
{
	brq_server_wake(arg, topic, topic_len, UINT32_MAX);
}

void
brq_server_wake(brq_server *s, const char *topic, size_t topic_len, uint32_t n)
{
	pthread_mutex_lock(&s->wmtx);
	s->wake_gen++;
	for (brq_work *w = s->whead, *next; w != NULL && n > 0; w = next) {
		next = w->wnext;
		if (!claims_topic(w, topic, topic_len))
			continue;
		waiters_remove(s, w);
		nng_aio_cancel(w->aio); // its callback claims again
		n--;
	}
	pthread_mutex_unlock(&s->wmtx);
}

// A peer went away: its parked long-polls must not claim (the reply would be
// dropped and the lease leak until the reaper; NNG-NOTES §2.3.9).
static void
pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	brq_server *s  = arg;
	uint32_t    id = (uint32_t) nng_pipe_id(p);
	(void) ev;
	pthread_mutex_lock(&s->wmtx);
	for (brq_work *w = s->whead, *next; w != NULL; w = next) {
		next = w->wnext;
		if (w->pipe_id != id)
			continue;
		w->orphaned = true;
		waiters_remove(s, w);
		nng_aio_cancel(w->aio);
	}
	pthread_mutex_unlock(&s->wmtx);
}

// ---- the state machine ---------------------------------------------------------------

// Waits for the next request. Also while stopping: requests that arrive during the
// grace period get an `unavailable` answer rather than silence; the socket's close
// ends the receives (NNG_ECLOSED, not re-armed).
static void
rearm(brq_server *s, brq_work *w)
{
	(void) s;
	w->state = BRQ_W_RECV;
	nng_ctx_recv(w->ctx, w->aio);
}

// A request arrived: decode, authenticate, validate, then answer at once (ping,
// errors) or hand it to the pool. Runs on an NNG thread: nothing here blocks.
static void
handle_request(brq_server *s, brq_work *w)
{
	char   err[BRQ_ERRTEXT_MAX];
	void  *body = nng_msg_body(w->msg);
	size_t len  = nng_msg_len(w->msg);

	w->start_us = brq_now_us();
	w->pipe_id  = (uint32_t) nng_pipe_id(nng_msg_get_pipe(w->msg));
	w->waited = w->orphaned = w->is_long_poll = w->settled = false;
	w->settle_results                                      = NULL;
	w->deadline_ms                                         = 0;
	w->role                                                = BRQ_ROLE_NONE;
	brq_arena_reset(&w->arena);
	memset(&w->req, 0, sizeof(w->req));
	atomic_fetch_add(&s->inflight, 1);

	brq_status st = brq_request_decode_envelope(&w->req, body, len, &s->lim, err, sizeof(err));
	if (st != BRQ_ST_OK) {
		reply_error(s, w, st, "%s", err);
		return;
	}
	// Authenticate before looking at the op's fields: an unauthenticated peer
	// learns nothing about what a valid request would look like.
	w->role = brq_auth_check(s->auth, w->req.token.ptr, w->req.token.len);
	if (w->role == BRQ_ROLE_NONE) {
		brq_metrics_auth_failure();
		brq_peer_log_auth_failed(nng_msg_get_pipe(w->msg), brq_op_name(w->req.op), w->req.rid,
					 w->pipe_id, w->req.token.len);
		reply_error(s, w, BRQ_ST_UNAUTHENTICATED, "missing or unknown bearer token");
		return;
	}
	if (!brq_auth_role_may(w->role, w->req.op == BRQ_OP_CANCEL)) {
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
		brq_server_reply(s, w);
		return;
	}
	if (w->req.op == BRQ_OP_CLAIM && w->req.claim.has_wait_ms && w->req.claim.wait_ms > 0) {
		if (atomic_fetch_add(&s->long_polls, 1) >= (int) s->cfg->max_waiters) {
			atomic_fetch_sub(&s->long_polls, 1);
			reply_error(s, w, BRQ_ST_RESOURCE_EXHAUSTED,
				    "claim.wait_ms: too many concurrent long-polls (max %u); retry later",
				    s->cfg->max_waiters);
			return;
		}
		w->is_long_poll = true;
		w->deadline_ms  = brq_now_ms() + w->req.claim.wait_ms;
	}
	w->state = BRQ_W_DB;
	brq_pool_submit(&s->pool, w);
}

static void
work_cb(void *arg)
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
			rearm(s, w);
			return;
		}
		w->msg = nng_aio_get_msg(w->aio);
		nng_aio_set_msg(w->aio, NULL);
		handle_request(s, w);
		return;

	case BRQ_W_SEND:
		if (rv != 0) {
			// On failure the message is still ours (nng_ctx_send(3)).
			nng_msg *m = nng_aio_get_msg(w->aio);
			nng_aio_set_msg(w->aio, NULL);
			nng_msg_free(m);
			if (rv != NNG_ECLOSED)
				BRQ_LOG_DEBUG("send_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		}
		atomic_fetch_sub(&s->inflight, 1);
		if (rv == NNG_ECLOSED)
			return;
		rearm(s, w);
		return;

	case BRQ_W_PARK:
		// Woken (NNG_ECANCELED), timer fired (0), or cut short (NNG_ETIMEDOUT).
		pthread_mutex_lock(&s->wmtx);
		waiters_remove(s, w);
		pthread_mutex_unlock(&s->wmtx);
		if (w->orphaned) {
			BRQ_LOG_DEBUG("long_poll_orphaned", "pipe=%u", w->pipe_id);
			atomic_fetch_sub(&s->long_polls, 1);
			w->is_long_poll = false;
			nng_msg_free(w->msg);
			w->msg = NULL;
			atomic_fetch_sub(&s->inflight, 1);
			w->state = BRQ_W_RECV;
			rearm(s, w);
			return;
		}
		w->state = BRQ_W_DB;
		brq_pool_submit(&s->pool, w);
		return;

	case BRQ_W_DB: break;
	}
	BRQ_LOG_ERROR("work_bad_state", "state=%d", (int) w->state);
}

// ---- pool glue --------------------------------------------------------------------------

static void
run_on_pool(void *arg, brq_pool_thread *t, brq_work *w)
{
	brq_server *s = arg;
	if (w->qnext != NULL) {
		brq_ops_enqueue_group(s, t, w);
		while (w != NULL) {
			brq_work *next = w->qnext;
			w->qnext       = NULL;
			brq_server_reply(s, w); // hands w on: read its link first
			w = next;
		}
		return;
	}
	if (brq_ops_run(s, t, w) == BRQ_OPS_PARK)
		brq_server_park(s, w);
	else
		brq_server_reply(s, w);
}

// ---- lifecycle -----------------------------------------------------------------------

static int
listen_start(brq_server *s)
{
	int rv = nng_listener_create(&s->listener, s->sock, s->cfg->listen);
	if (rv != 0)
		goto fail;
	if (strncmp(s->cfg->listen, "ipc://", 6) == 0) {
		// Write-only, listener-only option (NNG-NOTES §2.3.10).
		rv = nng_listener_set_int(s->listener, NNG_OPT_IPC_PERMISSIONS, (int) s->cfg->ipc_mode);
		if (rv != 0)
			goto fail;
	}
	rv = nng_listener_start(s->listener, 0);
	if (rv != 0)
		goto fail;
	return 0;
fail:
	BRQ_LOG_ERROR("listen_failed", "url=%s error=%s", BRQ_LOG_Q(s->cfg->listen),
		      BRQ_LOG_Q(nng_strerror(rv)));
	return -1;
}

int
brq_server_start(brq_server *s, const struct brq_config *cfg, const struct brq_auth *auth)
{
	int rv;
	memset(s, 0, sizeof(*s));
	s->cfg  = cfg;
	s->auth = auth;
	brq_limits_default(&s->lim);
	s->lim.max_batch   = cfg->max_batch;
	s->lim.max_payload = (uint32_t) cfg->max_payload_bytes;
	s->lim.max_request = (uint32_t) cfg->max_request_bytes;
	s->lim.max_wait_ms = (uint32_t) cfg->max_wait_ms;
	pthread_mutex_init(&s->wmtx, NULL);

	if (brq_sql_build(&s->sql, cfg) != 0)
		return -1;
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		BRQ_LOG_ERROR("socket_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		brq_sql_fini(&s->sql);
		return -1;
	}
	// The transport's hard ceiling, above the documented request limit: requests
	// between the two get a `too_large` reply from the decoder; beyond it NNG
	// drops the connection (NNG-NOTES §2.3.7). Set before any listener.
	size_t ceiling = (size_t) cfg->max_request_bytes + (size_t) cfg->max_request_bytes / 4 + 4096;
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, ceiling);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, pipe_removed, s);

	s->n_work = (int) cfg->max_waiters + (int) cfg->pool_size * SPARE_WORK_PER_CONN;
	if (s->n_work < (int) cfg->max_waiters + SPARE_WORK_MIN)
		s->n_work = (int) cfg->max_waiters + SPARE_WORK_MIN;
	s->work = calloc((size_t) s->n_work, sizeof(*s->work));
	if (s->work == NULL)
		goto fail_sock;
	for (int i = 0; i < s->n_work; i++) {
		brq_work *w = &s->work[i];
		w->srv      = s;
		brq_arena_init(&w->arena);
		// A reply larger than a request could ever be is a bug, not a payload.
		brq_buf_init(&w->out, (size_t) cfg->max_request_bytes * 2 + 65536);
		if (nng_aio_alloc(&w->aio, work_cb, w) != 0 || nng_ctx_open(&w->ctx, s->sock) != 0)
			goto fail_work;
	}
	if (brq_pool_start(&s->pool, (int) cfg->pool_size, cfg->dsn, &s->sql, run_on_pool, s) != 0)
		goto fail_work;
	if (listen_start(s) != 0)
		goto fail_pool;
	for (int i = 0; i < s->n_work; i++)
		rearm(s, &s->work[i]);
	BRQ_LOG_INFO("listening", "url=%s work_items=%d pool_size=%u", BRQ_LOG_Q(cfg->listen), s->n_work,
		     cfg->pool_size);
	return 0;

fail_pool:
	brq_pool_stop(&s->pool);
fail_work:
	nng_close(s->sock);
	for (int i = 0; i < s->n_work; i++)
		if (s->work[i].aio != NULL)
			nng_aio_stop(s->work[i].aio);
	for (int i = 0; i < s->n_work; i++) {
		nng_aio_free(s->work[i].aio);
		brq_arena_fini(&s->work[i].arena);
		brq_buf_fini(&s->work[i].out);
	}
	free(s->work);
	brq_sql_fini(&s->sql);
	return -1;
fail_sock:
	nng_close(s->sock);
	brq_sql_fini(&s->sql);
	return -1;
}

void
brq_server_stop(brq_server *s)
{
	// 1. Refuse new work: requests that arrive now are answered `unavailable`.
	atomic_store(&s->stopping, true);

	// 2. Answer parked long-polls (their claim runs once more and replies).
	pthread_mutex_lock(&s->wmtx);
	s->wake_gen++;
	while (s->whead != NULL) {
		brq_work *w = s->whead;
		waiters_remove(s, w);
		nng_aio_cancel(w->aio);
	}
	pthread_mutex_unlock(&s->wmtx);

	// 3. Let in-flight requests finish, within the grace period.
	uint64_t until = brq_now_ms() + s->cfg->shutdown_grace_ms;
	while (atomic_load(&s->inflight) > 0 && brq_now_ms() < until)
		nng_msleep(10);
	int left = atomic_load(&s->inflight);
	if (left > 0)
		BRQ_LOG_WARN("shutdown_grace_expired", "inflight=%d", left);

	// 4. The pool threads may still send replies: join them before closing.
	brq_pool_stop(&s->pool);

	// 5. Close: pending receives complete with NNG_ECLOSED and are not re-armed.
	nng_close(s->sock);

	// 6. Stop every aio before freeing any (nng_aio_stop(3)), then free.
	for (int i = 0; i < s->n_work; i++)
		nng_aio_stop(s->work[i].aio);
	for (int i = 0; i < s->n_work; i++) {
		brq_work *w = &s->work[i];
		nng_msg_free(w->msg);
		nng_ctx_close(w->ctx);
		nng_aio_free(w->aio);
		brq_arena_fini(&w->arena);
		brq_buf_fini(&w->out);
	}
	free(s->work);
	s->work = NULL;
	brq_sql_fini(&s->sql);
	pthread_mutex_destroy(&s->wmtx);
	BRQ_LOG_INFO("stopped", "inflight_abandoned=%d", left);
}
