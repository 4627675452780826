// SPDX-License-Identifier: MIT
// The RPC server's lifecycle: the socket and its listener, the work items, the shares of
// each peer, the start and the graceful stop (server.c runs the items' state machine).
#include "server_int.h"

#include <stdlib.h>
#include <string.h>

#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>
#include <nng/transport/ipc/ipc.h>

#include "brq_clock.h"
#include "log/log.h"
#include "tls.h"

// Items for requests that are not long-polls: enough to keep every pool thread
// busy with a queue behind it.
#define SPARE_WORK_PER_CONN 16
#define SPARE_WORK_MIN      64
// Requests over this size may not take the in-flight budget's reserve.
#define BRQ_RX_SMALL_BYTES (64u * 1024u)
// Warm storage kept beyond two per pool thread (stash.h).
#define STASH_EXTRA 8

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
	if (brq_tls_listener_setup(s->listener, s->cfg) != 0) // tls+tcp:// only; logs why
		return BRQ_EIO;
	rv = nng_listener_start(s->listener, 0);
	if (rv != 0)
		goto fail;
	return 0;
fail:
	BRQ_LOG_ERROR("listen_failed", "url=%s error=%s", BRQ_LOG_Q(s->cfg->listen),
		      BRQ_LOG_Q(nng_strerror(rv)));
	return BRQ_EIO;
}

// Frees the work items' resources; every aio must be stopped.
static void
work_free(brq_server *s)
{
	for (int i = 0; i < s->n_work; i++) {
		brq_work *w = &s->work[i];
		nng_msg_free(w->msg);
		nng_msg_free(w->spare);
		if (w->aio != NULL)
			nng_ctx_close(w->ctx);
		nng_aio_free(w->aio);
		brq_arena_fini(&w->arena);
		brq_buf_fini(&w->out);
	}
	free(s->work);
	s->work = NULL;
	brq_stash_fini(&s->stash);
}

// Allocates the work items with their aio, context and spare message.
static int
work_alloc(brq_server *s)
{
	const brq_config *cfg    = s->cfg;
	int               parked = (int) cfg->max_waiters + (int) cfg->max_watches;
	s->n_work                = parked + (int) cfg->pool_size * SPARE_WORK_PER_CONN;
	if (s->n_work < parked + SPARE_WORK_MIN)
		s->n_work = parked + SPARE_WORK_MIN;
	s->work = calloc((size_t) s->n_work, sizeof(*s->work));
	if (s->work == NULL)
		return BRQ_ENOMEM;
	// Busy items at once: one per pool thread, the ones being decoded or answered on
	// NNG's threads, parked long-polls (they keep what they took while they wait).
	if (brq_stash_init(&s->stash, (int) cfg->pool_size * 2 + STASH_EXTRA) != 0)
		return BRQ_ENOMEM;
	for (int i = 0; i < s->n_work; i++) {
		brq_work *w = &s->work[i];
		w->srv      = s;
		w->run      = brq_server_run_on_pool;
		brq_arena_init(&w->arena);
		// A reply larger than a request could ever be is a bug, not a payload.
		brq_buf_init(&w->out, (size_t) cfg->max_request_bytes * 2 + 65536);
		if (nng_aio_alloc(&w->aio, brq_server_work_cb, w) != 0 ||
		    nng_ctx_open(&w->ctx, s->sock) != 0 ||
		    brq_server_msg_alloc(&w->spare, SPARE_MSG_BYTES) != 0)
			return BRQ_ENOMEM;
		nng_msg_clear(w->spare);
	}
	return 0;
}

// Stops every aio before freeing any (nng_aio_stop(3)), then frees.
static void
work_stop_free(brq_server *s)
{
	for (int i = 0; i < s->n_work && s->work != NULL; i++)
		if (s->work[i].aio != NULL)
			nng_aio_stop(s->work[i].aio);
	if (s->work != NULL)
		work_free(s);
}

// Each peer's shares of the work items (quota.h): a token may hold all the items that
// are not long-polls but an eighth (at least 8), which stay for the others
// (BROOQ_TOKEN_MAX_REQUESTS: 0); operator reads, which
// wait for a lane of max(1, pool/4) threads, a quarter of them, and one token three
// quarters of that, so another token's read always finds room.
static int
quota_init(brq_server *s)
{
	uint32_t       items   = (uint32_t) s->n_work - s->cfg->max_waiters - s->cfg->max_watches;
	uint32_t       watches = s->cfg->max_watches;
	uint32_t       lane    = s->cfg->pool_size / 4 > 0 ? s->cfg->pool_size / 4 : 1;
	uint32_t       reads   = items / 4 > 4 * lane ? items / 4 : 4 * lane;
	uint32_t       reserve = items / 8 > 8 ? items / 8 : 8;
	brq_quota_opts o       = {
		      .conn_max      = s->cfg->conn_max_requests,
		      .conn_max_anon = s->cfg->conn_max_requests_anon,
		      .token_max = s->cfg->token_max_requests > 0 ? s->cfg->token_max_requests : items - reserve,
		      .token_max_reads = reads * 3 / 4,
		      .reads_max       = reads,
		      .watch_conn_max  = BRQ_WATCH_CONN_MAX,
		      .watch_token_max = watches - watches / 8 > 0 ? watches - watches / 8 : 1,
		      .watches_max     = watches,
        };
	return brq_quota_init(&s->quota, &o);
}

int
brq_server_start(brq_server *s, const brq_config *cfg, const brq_auth *auth, const brq_store *st)
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
	if (brq_watches_init(&s->watches) != 0)
		return BRQ_ENOMEM;
	brq_waiters_init(&s->waiters);
	brq_figures_init(&s->figures);
	s->ops = (brq_ops) {
		.cfg = cfg, .waiters = &s->waiters, .stopping = &s->stopping, .figures = &s->figures};

	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		BRQ_LOG_ERROR("socket_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		brq_watches_fini(&s->watches);
		brq_waiters_fini(&s->waiters);
		brq_figures_fini(&s->figures);
		return BRQ_EIO;
	}
	// The transport's hard ceiling, above the documented request limit: requests
	// between the two get a `too_large` reply from the decoder; beyond it NNG
	// drops the connection (NNG-NOTES §2.3.7). NNG counts the req0 header (the
	// request id) with the body; the ceiling the protocol states is the body's.
	// Set before any listener.
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ,
			    (size_t) brq_config_recv_ceiling(cfg) + BRQ_SP_HEADER_BYTES);
	// Every request is charged to one budget, from the transport reading its length
	// (before anyone knows whose it is) to its end: a flood, authenticated or not,
	// gets its connections closed beyond it. Requests over 64 KiB leave a reserve to
	// the ordinary small ones (claims, settles, heartbeats). The timeouts close
	// connections that stall in a handshake or a request, or sit idle; with them a
	// stalled request holds its bytes for at most BROOQ_RECV_TIMEOUT. NNG patches
	// deploy/nng/rx-budget.patch and rx-timeouts.patch.
	nng_rx_budget_set((size_t) cfg->max_inflight_bytes, BRQ_RX_SMALL_BYTES,
			  (size_t) brq_config_rx_reserve(cfg));
	nng_rx_timeouts_set((nng_duration) cfg->handshake_timeout_ms, (nng_duration) cfg->recv_timeout_ms,
			    (nng_duration) cfg->idle_timeout_ms);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, brq_server_pipe_removed, s);

	if ((rv = work_alloc(s)) != 0 || (rv = quota_init(s)) != 0)
		goto fail;
	if ((rv = brq_pool_start(&s->pool, (int) cfg->pool_size, st)) != 0)
		goto fail;
	if ((rv = listen_start(s)) != 0) {
		brq_pool_stop(&s->pool);
		goto fail;
	}
	for (int i = 0; i < s->n_work; i++)
		brq_server_rearm(&s->work[i]);
	BRQ_LOG_INFO("listening", "url=%s work_items=%d pool_size=%u", BRQ_LOG_Q(cfg->listen), s->n_work,
		     cfg->pool_size);
	return 0;
fail:
	nng_close(s->sock);
	work_stop_free(s);
	brq_watches_fini(&s->watches);
	brq_waiters_fini(&s->waiters);
	brq_figures_fini(&s->figures);
	brq_quota_fini(&s->quota);
	return rv;
}

void
brq_server_stop(brq_server *s)
{
	// 1. Refuse new work: requests that arrive now are answered `unavailable`.
	atomic_store(&s->stopping, true);

	// 2. Answer parked long-polls (their claim runs once more and replies) and watches
	// (with what they have; none parks from now on).
	brq_waiters_wake_all(&s->waiters);
	brq_watches_stop(&s->watches);

	// 3. Let in-flight requests finish, within the grace period.
	uint64_t until = brq_now_ms() + s->cfg->shutdown_grace_ms;
	while (atomic_load(&s->inflight) > 0 && brq_now_ms() < until)
		nng_msleep(10);
	int left = atomic_load(&s->inflight);
	if (left > 0) {
		// What still runs in the database is canceled, so the pool's threads can be
		// joined: the stop ends within the grace and ~100 ms, whatever was in flight.
		BRQ_LOG_WARN("shutdown_grace_expired", "inflight=%d action=%s", left, "cancel_statements");
		brq_pool_abort(&s->pool);
	}

	// 4. The pool threads may still send replies: join them before closing.
	brq_pool_stop(&s->pool);

	// 5. Close: pending receives complete with NNG_ECLOSED and are not re-armed.
	nng_close(s->sock);

	// 6. Stop every aio before freeing any, then free.
	work_stop_free(s);
	brq_watches_fini(&s->watches);
	brq_waiters_fini(&s->waiters);
	brq_figures_fini(&s->figures);
	brq_quota_fini(&s->quota);
	BRQ_LOG_INFO("stopped", "inflight_abandoned=%d", left);
}
