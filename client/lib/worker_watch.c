/* SPDX-License-Identifier: MIT */
/* Worker runtime: the listener, one `watch` always parked at the gateway, which names the
 * worker's canceled jobs the moment an operator cancels them (docs/protocol.md §7.17). */
#include "worker_watch.h"

#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "brq_clock.h"
#include "err.h"
#include "log.h"
#include "worker_lease.h"

/* A gateway that does not know the op (older than the watch) is asked again this much
 * later: gateways may be upgraded while the worker runs. Until then the heartbeats
 * carry the cancels, as they always did. */
#define UNSUPPORTED_RETRY_MS (5 * 60 * 1000)

/* Waits on the listener's condition variable until the monotonic deadline (INT64_MAX:
 * none) or quit. Under w->mu. */
static void
wait_until(brooq_worker *w, int64_t deadline_ms)
{
	struct timespec ts = brq_deadline_at((uint64_t) (deadline_ms == INT64_MAX ? 0 : deadline_ms));
	while (!w->quit_keepers && (int64_t) brq_now_ms() < deadline_ms) {
		if (deadline_ms == INT64_MAX)
			pthread_cond_wait(&w->watch_cv, &w->mu);
		else
			(void) pthread_cond_timedwait(&w->watch_cv, &w->mu, &ts);
	}
}

static bool
is_tomb(const brooq_worker *w, uint64_t id)
{
	uint64_t n = w->n_tombs < BRQ_W_TOMBS ? w->n_tombs : BRQ_W_TOMBS;
	for (uint64_t i = 0; i < n; i++)
		if (w->tombs[i] == id)
			return true;
	return false;
}

/* A canceled job the worker does not hold: a claim's reply may still bring it. */
static void
tomb_add(brooq_worker *w, uint64_t id)
{
	if (w->n_tombs >= BRQ_W_TOMBS)
		w->watch_gen++; /* the oldest is forgotten: claims in flight must check themselves */
	w->tombs[w->n_tombs % BRQ_W_TOMBS] = id;
	w->n_tombs++;
}

/* The gateway names ids[0..n) canceled: the held ones lose their lease now, the others
 * are remembered for the claims still on their way. Under w->mu. */
static void
canceled(brooq_worker *w, const uint64_t *ids, size_t n)
{
	int64_t now = (int64_t) brq_now_ms();
	for (size_t i = 0; i < n; i++) {
		brooq_job_ctx *j = w->held.head;
		while (j != NULL && j->lease.id != ids[i])
			j = j->held.next;
		/* Canceled is terminal (SPEC invariant 3): whatever lease the worker holds on
		 * that job is over. */
		if (j != NULL)
			brq_worker_lease_lost(w, j, now, BROOQ_CANCEL_OPERATOR);
		else if (!is_tomb(w, ids[i]))
			tomb_add(w, ids[i]);
	}
}

bool
brq_worker_watch_take(brooq_worker *w, brooq_job_ctx *j, uint64_t gen_at_claim, int64_t now)
{
	if (is_tomb(w, j->lease.id))
		brq_worker_lease_lost(w, j, now, BROOQ_CANCEL_OPERATOR);
	else if (w->watch_gen != gen_at_claim)
		j->next_hb_ms = now; /* a cancel may have gone unheard while it was claimed */
	else
		return false;
	return true;
}

/* Handles a failed watch: when to watch again. Under w->mu. */
static int64_t
watch_failed(brooq_worker *w, brooq_err err, const char *detail, uint32_t *backoff, uint64_t *seed,
	     bool *said_unsupported)
{
	int64_t now = (int64_t) brq_now_ms();
	/* An older gateway answers an op it does not know with invalid_argument. */
	if (err == BROOQ_EINVALID_ARGUMENT) {
		if (!*said_unsupported)
			BRQ_LOG(w->c, BROOQ_LOG_INFO, "watch_unsupported", BRQ_LF_STR("detail", detail),
				BRQ_LF_STR("effect", "cancels reach running handlers at their heartbeats"));
		*said_unsupported = true;
		return now + UNSUPPORTED_RETRY_MS;
	}
	*backoff = brq_backoff_next(*backoff);
	w->st.errors++;
	BRQ_LOG(w->c, BROOQ_LOG_WARN, "watch_failed", BRQ_LF_STR("err", brooq_strerror(err)),
		BRQ_LF_STR("detail", detail));
	return now + brq_backoff_jitter(*backoff, seed);
}

/* Whether a held job may still run its handler: queued or running, its result not
 * given up. Under w->mu. */
static bool
handlers_running(const brooq_worker *w)
{
	for (const brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
		if ((j->ph == PH_QUEUED || j->ph == PH_RUNNING) && j->cancel_at_ms == 0)
			return true;
	return false;
}

/* The transport to watch on once the stop has closed the dispatcher's (which the watch
 * shares): the listener's own, opened now if a handler may still run, since the stop
 * grace can be long and a heartbeat comes only every lease/3. NULL: none runs, the
 * worker is ending, or it could not be opened (the heartbeats carry the cancels then).
 * Under w->mu, released while opening; keepers_quit closes it (worker.c). */
static brq_rpc *
drain_transport(brooq_worker *w)
{
	if (w->watch_open)
		return &w->watch_rpc;
	if (!handlers_running(w))
		return NULL;
	pthread_mutex_unlock(&w->mu);
	char detail[BRQ_DETAIL_MAX];
	int  rv = brq_client_rpc_open(w->c, &w->watch_rpc);
	if (rv != 0)
		brq_msg_copy(detail);
	pthread_mutex_lock(&w->mu);
	if (rv != 0) {
		BRQ_LOG(w->c, BROOQ_LOG_WARN, "watch_failed",
			BRQ_LF_STR("err", brooq_strerror(brq_err_public(rv))), BRQ_LF_STR("detail", detail),
			BRQ_LF_STR("effect", "cancels reach running handlers at their heartbeats"));
		return NULL;
	}
	if (w->quit_keepers) { /* keepers_quit did not see it open: not its to close */
		pthread_mutex_unlock(&w->mu);
		brq_rpc_close(&w->watch_rpc);
		pthread_mutex_lock(&w->mu);
		return NULL;
	}
	w->watch_open = true;
	return &w->watch_rpc;
}

/*
 * The listener's loop, until quit_keepers:
 * 1. Watch the worker's topics from the last cursor, waiting up to wait_ms (a long-poll
 *    on the dispatcher's transport, which the stop closes).
 * 2. Jobs named canceled lose their lease at once (the handler's flag goes up); ids not
 *    held are kept for the claims still on their way. A resync (the gateway could not
 *    tell every cancel since the cursor: the first watch, another gateway, a listener
 *    that lost its database connection) heartbeats every lease at once instead.
 * 3. On failure, back off (an older gateway: ask again in 5 minutes). Once the stop has
 *    closed the dispatcher's transport, go on over one of the listener's own while a
 *    handler may still run: an operator's cancel during the drain reaches it as fast as
 *    before (the cursor stays, so a cancel told meanwhile is told again).
 */
void *
brq_worker_watch_main(void *arg)
{
	brooq_worker *w                          = arg;
	char          cursor[BRQ_CURSOR_MAX + 1] = "";
	char          detail[BRQ_DETAIL_MAX];
	uint32_t      backoff          = 0;
	uint64_t      seed             = brq_backoff_seed(&backoff);
	bool          said_unsupported = false;
	int64_t       retry_at         = 0;
	brq_rpc      *r                = &w->poll;

	pthread_mutex_lock(&w->mu);
	while (!w->quit_keepers) {
		if ((int64_t) brq_now_ms() < retry_at) {
			wait_until(w, retry_at);
			continue;
		}
		pthread_mutex_unlock(&w->mu);
		uint64_t *ids    = NULL;
		size_t    n      = 0;
		bool      resync = false;
		brooq_err err = brq_watch_via(w->c, r, w->topics, w->n_handlers, cursor, w->wait_ms, &ids, &n,
					      &resync);
		if (err != BROOQ_OK)
			brq_msg_copy(detail);
		pthread_mutex_lock(&w->mu);
		if (!w->watch_heard) {
			w->watch_heard = true;
			brq_worker_wake(w); /* the dispatcher's first claim waits for this */
		}
		if (err == BROOQ_OK) {
			backoff = 0;
			canceled(w, ids, n);
			if (resync) {
				w->watch_gen++;
				brq_worker_heartbeat_now(w);
			}
		} else if (w->quit_keepers) {
			/* keepers_quit ended it: the loop is over */
		} else if (atomic_load(&w->stop_requested) && r == &w->poll) {
			r = drain_transport(w);
			if (r == NULL) {
				r        = &w->poll;
				retry_at = INT64_MAX; /* nothing to hear a cancel for: wait for the end */
			}
		} else {
			/* The cursor stays: an answer lost on its way is told again. */
			retry_at = watch_failed(w, err, detail, &backoff, &seed, &said_unsupported);
		}
		free(ids);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}
