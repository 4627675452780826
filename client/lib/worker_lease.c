/* SPDX-License-Identifier: MIT */
/* Worker runtime: lease upkeep (heartbeats, cancels, hung handlers) and settling results. */
#include "worker_lease.h"

#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "brq_clock.h"
#include "err.h"
#include "log.h"
#include "worker_handler.h"
#include "worker_job.h"

/* How long the settler leaves a result to the dispatcher while it claims or waits
 * for a thread: a claim that answers at once (jobs were ready), or a thread freed by
 * the result itself, is followed by a claim that carries the result, saving a round
 * trip; a claim parked in a long-poll is not waited for. */
#define SETTLE_LINGER_MS 20

/* Waits on cv until the monotonic deadline (INT64_MAX: until signalled). The
 * worker's condition variables measure on CLOCK_MONOTONIC (brooq_worker_new). */
static void
cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
	if (deadline_ms == INT64_MAX) {
		pthread_cond_wait(cv, mu);
		return;
	}
	struct timespec ts = brq_deadline_at((uint64_t) deadline_ms);
	(void) pthread_cond_timedwait(cv, mu, &ts);
}

/* ---- cancels and lost leases ---------------------------------------------------------- */

/* Raises j's flag with `reason`: the first one, or one after a timeout. */
static void
raise_flag(brooq_job_ctx *j, brooq_cancel_reason reason, int64_t now)
{
	int cur = atomic_load(&j->cancel_reason);
	if (cur == BROOQ_CANCEL_NONE || (cur == BROOQ_CANCEL_TIMEOUT && reason != BROOQ_CANCEL_TIMEOUT)) {
		atomic_store(&j->cancel_reason, (int) reason);
		// A pulled job's holder learns of it by brooq_worker_wait_cancels / the fd.
		if (j->w->pull && j->ph == PH_RUNNING)
			brq_worker_pull_canceled(j->w);
	}
	if (j->raised_at_ms == 0)
		j->raised_at_ms = now > 0 ? now : 1;
}

void
brq_worker_cancel_job(brooq_job_ctx *j, int64_t now, brooq_cancel_reason reason)
{
	if (j->cancel_at_ms == 0)
		j->cancel_at_ms = now > 0 ? now : 1;
	raise_flag(j, reason, now);
}

/* j's deadline passed (queued or running, its result not given up): the flag goes up,
 * the lease is kept, and the result will be a fail that says so. */
static void
time_out(brooq_worker *w, brooq_job_ctx *j, int64_t now)
{
	j->timed_out = true;
	raise_flag(j, BROOQ_CANCEL_TIMEOUT, now);
	BRQ_LOG(w->c, BROOQ_LOG_WARN, "attempt_timed_out", BRQ_LF_U64("job", j->lease.id),
		BRQ_LF_STR("topic", j->topic), BRQ_LF_U64("timeout_ms", j->attempt_timeout_ms));
}

/* Counts and logs a handler still running hung_grace_ms after its cancel (once). */
void
brq_worker_count_hung(brooq_worker *w, brooq_job_ctx *j)
{
	j->hung_counted = true;
	w->st.hung++;
	BRQ_LOG(w->c, BROOQ_LOG_WARN, "handler_hung", BRQ_LF_U64("job", j->lease.id),
		BRQ_LF_STR("topic", j->topic));
}

/* The gateway says j's lease is gone (canceled, reaped, settled elsewhere, past the
 * maximum execution time), or it is about to run out unheard: its result is discarded
 * and the worker writes nothing for it. A handler still running past the maximum
 * execution time is hung by definition: counted at once. */
void
brq_worker_lease_lost(brooq_worker *w, brooq_job_ctx *j, int64_t now, brooq_cancel_reason reason)
{
	if (j->ph == PH_SETTLING || j->lost || j->abandoned)
		return; /* a settle in flight answers for itself */
	j->lost = true;
	w->st.lease_lost++;
	BRQ_LOG(w->c, BROOQ_LOG_INFO, "lease_lost", BRQ_LF_U64("job", j->lease.id),
		BRQ_LF_STR("topic", j->topic), BRQ_LF_STR("reason", brooq_cancel_reason_name(reason)));
	switch (j->ph) {
	case PH_QUEUED: /* freed by the handler thread that pops it */
	case PH_RUNNING:
		brq_worker_cancel_job(j, now, reason);
		if (j->ph == PH_RUNNING && reason == BROOQ_CANCEL_MAX_EXECUTION && !j->hung_counted)
			brq_worker_count_hung(w, j);
		break;
	case PH_FINISHED:
		brq_list_del(&w->finished, j);
		brq_list_del(&w->held, j);
		brq_job_ctx_free(j);
		brq_worker_wake(w); /* a stopping dispatcher may be waiting for it */
		break;
	case PH_SETTLING: break;
	}
}

static brooq_job_ctx *
held_find(brooq_worker *w, const brooq_lease *l)
{
	for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
		if (j->lease.id == l->id && memcmp(j->lease.token, l->token, BROOQ_LEASE_LEN) == 0)
			return j;
	return NULL;
}

/* ---- settling --------------------------------------------------------------------------- */

/* Moves up to max finished results into b[] (phase SETTLING), FIFO. A solo result
 * goes alone, and only when take_solo; chained jobs per request stay within
 * BRQ_W_BATCH_MAX unless one result alone exceeds it (the gateway then decides). */
size_t
brq_worker_take_batch(brooq_worker *w, brooq_job_ctx **b, size_t max, bool take_solo)
{
	size_t n = 0, n_chain = 0;
	for (brooq_job_ctx *j = w->finished.head, *next; j != NULL && n < max; j = next) {
		next = j->q.next;
		if (j->solo) {
			if (!take_solo || n > 0)
				continue;
			b[n++] = j;
			break;
		}
		if (n > 0 && n_chain + j->n_chain > BRQ_W_BATCH_MAX)
			break;
		n_chain += j->n_chain;
		b[n++] = j;
	}
	for (size_t i = 0; i < n; i++) {
		brq_list_del(&w->finished, b[i]);
		b[i]->ph = PH_SETTLING;
	}
	w->n_settling += n;
	return n;
}

/* Puts results taken by brq_worker_take_batch back, in order, unsent. Under w->mu. */
void
brq_worker_give_back(brooq_worker *w, brooq_job_ctx **b, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		b[i]->ph = PH_FINISHED;
		brq_list_push_front(&w->finished, b[i]);
	}
	w->n_settling -= n;
}

/* The gateway refused j's outcome on its own (e.g. a chained job with a bad topic):
 * replace it with a fail that says so, so the job is retried or buried visibly. A
 * second refusal drops the result and leaves the lease to expire. */
static void
outcome_refused(brooq_worker *w, brooq_job_ctx *j, brooq_err err, const char *detail)
{
	if (j->rewritten) {
		BRQ_LOG(w->c, BROOQ_LOG_ERROR, "result_dropped", BRQ_LF_U64("job", j->lease.id),
			BRQ_LF_STR("topic", j->topic), BRQ_LF_STR("reason", "refused"),
			BRQ_LF_STR("detail", detail));
		brq_list_del(&w->held, j);
		brq_job_ctx_free(j);
		return;
	}
	char text[BRQ_DETAIL_MAX + 96];
	snprintf(text, sizeof(text), "worker: the gateway refused this job's outcome: %s: %s",
		 brooq_strerror(err), detail);
	brq_job_outcome_clear(j);
	j->rewritten = true;
	j->outcome   = BROOQ_OUTCOME_FAIL;
	j->error     = brq_worker_error_copy(text);
	j->oom       = j->error == NULL;
	BRQ_LOG(w->c, BROOQ_LOG_WARN, "outcome_refused", BRQ_LF_U64("job", j->lease.id),
		BRQ_LF_STR("topic", j->topic), BRQ_LF_STR("err", brooq_strerror(err)),
		BRQ_LF_STR("detail", detail));
	j->ph = PH_FINISHED;
	brq_list_push_front(&w->finished, j);
}

/*
 * Processes the answer to a settle of b[0..n) (a plain settle when `plain`, else
 * carried by a claim). Under w->mu. Applied: counted and freed. Not applied: the
 * lease was lost (unless an earlier attempt may have run), freed. On error the
 * results go back to the front of the finished list to be retried: alone when the
 * gateway refused the batch, rewritten as a fail when it refused one alone.
 */
void
brq_worker_settle_done(brooq_worker *w, brooq_job_ctx **b, size_t n, brooq_err err,
		       const brooq_settle_result *res, bool plain, const char *detail)
{
	w->n_settling -= n;
	if (err == BROOQ_OK) {
		for (size_t i = 0; i < n; i++) {
			brooq_job_ctx *j = b[i];
			if (res[i].applied) {
				w->st.settled++;
			} else if (!j->ambiguous) {
				w->st.lease_lost++;
				BRQ_LOG(w->c, BROOQ_LOG_INFO, "lease_lost", BRQ_LF_U64("job", j->lease.id),
					BRQ_LF_STR("topic", j->topic), BRQ_LF_STR("at", "settle"));
			}
			brq_list_del(&w->held, j);
			brq_job_ctx_free(j);
		}
		return;
	}
	bool refused = err == BROOQ_EINVAL || err == BROOQ_EINVALID_ARGUMENT || err == BROOQ_ETOO_LARGE;
	for (size_t i = n; i-- > 0;) {
		brooq_job_ctx *j = b[i];
		/* Anything but a local refusal may have reached the database. */
		j->ambiguous = j->ambiguous || err != BROOQ_EINVAL;
		if (refused && plain && n == 1) {
			outcome_refused(w, j, err, detail);
			continue;
		}
		j->solo = j->solo || refused;
		j->ph   = PH_FINISHED;
		brq_list_push_front(&w->finished, j);
	}
}

/* One plain settle of what the settler may take. Under w->mu; unlocks around the call. */
static void
settle_some(brooq_worker *w, uint32_t *backoff, uint64_t *seed)
{
	brooq_job_ctx      *b[BRQ_W_SETTLE_ITEMS_MAX];
	brooq_settle_item   items[BRQ_W_SETTLE_ITEMS_MAX];
	const char         *results[BRQ_W_SETTLE_ITEMS_MAX];
	brooq_settle_result res[BRQ_W_SETTLE_ITEMS_MAX];
	char                detail[BRQ_DETAIL_MAX] = "";

	size_t n = brq_worker_take_batch(w, b, BRQ_W_SETTLE_ITEMS_MAX, true);
	for (size_t i = 0; i < n; i++) {
		brq_job_settle_fill(&items[i], &results[i], b[i]);
		res[i] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	}
	pthread_mutex_unlock(&w->mu);
	brooq_err err = brooq_settle_results(w->c, items, results, n, res);
	if (err != BROOQ_OK)
		brq_msg_copy(detail);
	pthread_mutex_lock(&w->mu);
	brq_worker_settle_done(w, b, n, err, res, true, detail);
	if (err == BROOQ_OK || err == BROOQ_EINVAL || err == BROOQ_EINVALID_ARGUMENT ||
	    err == BROOQ_ETOO_LARGE) {
		*backoff              = 0;
		w->settle_retry_at_ms = 0;
	} else {
		*backoff              = brq_backoff_next(*backoff);
		w->settle_retry_at_ms = (int64_t) brq_now_ms() + brq_backoff_jitter(*backoff, seed);
	}
	if (err != BROOQ_OK) {
		w->st.errors++;
		BRQ_LOG(w->c, BROOQ_LOG_WARN, "settle_failed", BRQ_LF_U64("items", n),
			BRQ_LF_STR("err", brooq_strerror(err)), BRQ_LF_STR("detail", detail));
	}
	brq_worker_wake(w);
}

/* Whether the settler settles now; otherwise *wake_at is when to look again
 * (INT64_MAX: when signalled). */
static bool
settler_may_take(brooq_worker *w, int64_t *wake_at)
{
	int64_t              now    = (int64_t) brq_now_ms();
	const brooq_job_ctx *oldest = w->finished.head;
	*wake_at                    = INT64_MAX;
	if (oldest == NULL)
		return false;
	if (now < w->settle_retry_at_ms) {
		*wake_at = w->settle_retry_at_ms;
		return false;
	}
	for (brooq_job_ctx *j = w->finished.head; j != NULL; j = j->q.next)
		if (j->solo)
			return true;
	switch (w->ds) {
	case D_READY: return false; /* the next claim carries them */
	case D_CLAIMING:
	case D_FULL: /* a result frees its thread: the dispatcher is about to claim with it */
		if (now >= oldest->finished_ms + SETTLE_LINGER_MS)
			return true;
		*wake_at = oldest->finished_ms + SETTLE_LINGER_MS;
		return false;
	case D_BACKOFF:
	case D_STOPPING: return true;
	}
	return true;
}

/*
 * The loop of a background thread (the settler, the keeper), under w->mu until
 * quit_keepers: due(w, &wake_at) says whether there is work now; then work(w, &backoff,
 * &seed) does it (unlocking around its calls), else the thread waits on cv until
 * wake_at (INT64_MAX: until signalled).
 */
static void
keeper_loop(brooq_worker *w, pthread_cond_t *cv, int64_t *sleep_until,
	    bool (*due)(brooq_worker *w, int64_t *wake_at),
	    void (*work)(brooq_worker *w, uint32_t *backoff, uint64_t *seed))
{
	uint32_t backoff = 0;
	uint64_t seed    = brq_backoff_seed(&backoff);

	pthread_mutex_lock(&w->mu);
	while (!w->quit_keepers) {
		int64_t wake_at;
		if (due(w, &wake_at)) {
			work(w, &backoff, &seed);
		} else {
			*sleep_until = wake_at;
			cond_wait_until(cv, &w->mu, wake_at);
			*sleep_until = 0;
		}
	}
	pthread_mutex_unlock(&w->mu);
}

void *
brq_worker_settler_main(void *arg)
{
	brooq_worker *w = arg;
	keeper_loop(w, &w->settle_cv, &w->settler_sleep_until, settler_may_take, settle_some);
	return NULL;
}

void
brq_worker_settler_poke(brooq_worker *w)
{
	int64_t at;
	if (w->settler_sleep_until == 0)
		return; /* awake: it asks settler_may_take again before it waits */
	if (settler_may_take(w, &at) || at < w->settler_sleep_until)
		pthread_cond_signal(&w->settle_cv);
}

void
brq_worker_keeper_poke(brooq_worker *w, int64_t due_ms)
{
	if (w->keeper_sleep_until != 0 && due_ms < w->keeper_sleep_until)
		pthread_cond_signal(&w->keeper_cv);
}

/* ---- heartbeats and the hung-handler watch --------------------------------------------- */

static brooq_cancel_reason
lost_reason_of(brq_lost_reason r)
{
	switch (r) {
	case BRQ_LOST_CANCELED: return BROOQ_CANCEL_OPERATOR;
	case BRQ_LOST_MAX_EXECUTION: return BROOQ_CANCEL_MAX_EXECUTION;
	default: return BROOQ_CANCEL_LEASE_LOST;
	}
}

static bool
needs_heartbeat(const brooq_job_ctx *j)
{
	return j->ph != PH_SETTLING && !j->lost && !j->abandoned;
}

/*
 * One batched heartbeat of every held lease. Under w->mu; unlocks around the calls.
 * 1. Snapshot (id, token) of every lease that needs upkeep.
 * 2. Send them, BRQ_W_BATCH_MAX per request (one request unless > BRQ_W_BATCH_MAX are held).
 * 3. Match answers back by (id, token): the job may have moved on meanwhile.
 *    Extended: next heartbeat lease/3 after this one was sent. Lost:
 *    brq_worker_lease_lost().
 *    Unanswered (an error): retried after the backoff, capped at lease/6 so that
 *    a short outage does not cost the lease.
 */
static void
heartbeat_round(brooq_worker *w, uint32_t *backoff, uint64_t *seed)
{
	size_t n = 0, answered = 0;
	for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
		n += needs_heartbeat(j);
	brooq_lease     *ls                     = malloc(n * sizeof(*ls));
	bool            *ext                    = malloc(n * sizeof(*ext));
	brq_lost_reason *why                    = malloc(n * sizeof(*why));
	brooq_err        err                    = BROOQ_ENOMEM;
	char             detail[BRQ_DETAIL_MAX] = "out of memory";
	int64_t          t0                     = (int64_t) brq_now_ms();

	if (ls != NULL && ext != NULL && why != NULL) {
		size_t k = 0;
		for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
			if (needs_heartbeat(j))
				ls[k++] = j->lease;
		pthread_mutex_unlock(&w->mu);
		err = BROOQ_OK;
		while (answered < n && err == BROOQ_OK) {
			size_t m = n - answered < BRQ_W_BATCH_MAX ? n - answered : BRQ_W_BATCH_MAX;
			err      = brq_heartbeat_why(w->c, ls + answered, m, w->lease_ms, ext + answered,
						     why + answered);
			if (err == BROOQ_OK)
				answered += m;
			else
				brq_msg_copy(detail);
		}
		pthread_mutex_lock(&w->mu);
	}
	int64_t now = (int64_t) brq_now_ms();
	if (err != BROOQ_OK) {
		w->st.errors++;
		*backoff = brq_backoff_next(*backoff);
		BRQ_LOG(w->c, BROOQ_LOG_WARN, "heartbeat_failed", BRQ_LF_U64("leases", n - answered),
			BRQ_LF_STR("err", brooq_strerror(err)), BRQ_LF_STR("detail", detail));
	} else {
		*backoff = 0;
	}
	for (size_t i = 0; i < answered; i++) {
		brooq_job_ctx *j = held_find(w, &ls[i]);
		if (j == NULL)
			continue;
		if (!ext[i]) {
			brq_worker_lease_lost(w, j, now, lost_reason_of(why[i]));
		} else if (needs_heartbeat(j)) {
			j->lease_end_ms = t0 + j->lease_ms;
			j->next_hb_ms   = t0 + j->lease_ms / 3;
		}
	}
	if (ls == NULL || ext == NULL || why == NULL) {
		/* Nothing was sent: retry every lease that is due. */
		for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
			if (needs_heartbeat(j) && j->next_hb_ms <= now)
				j->next_hb_ms =
					now + brq_min64(brq_backoff_jitter(*backoff, seed), j->lease_ms / 6);
	} else {
		for (size_t i = answered; i < n; i++) {
			brooq_job_ctx *j = held_find(w, &ls[i]);
			if (j != NULL && needs_heartbeat(j))
				j->next_hb_ms =
					now + brq_min64(brq_backoff_jitter(*backoff, seed), j->lease_ms / 6);
		}
	}
	free(ls);
	free(ext);
	free(why);
}

void
brq_worker_heartbeat_now(brooq_worker *w)
{
	int64_t now = (int64_t) brq_now_ms();
	for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
		if (needs_heartbeat(j) && j->next_hb_ms > now)
			j->next_hb_ms = now;
	pthread_cond_signal(&w->keeper_cv);
}

/* Looks after every held job (lease expiry, deadlines, hung handlers); whether a
 * heartbeat is due now, else *wake_at is when the next thing is due. */
static bool
keeper_scan(brooq_worker *w, int64_t *wake_at)
{
	int64_t now = (int64_t) brq_now_ms(), next = INT64_MAX;
	bool    due = false;
	for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next) {
		/* No heartbeat got through before the lease runs out (the gateway is
		 * unreachable or slow): the reaper may hand the job to another worker at
		 * any moment, so the handler is canceled now rather than run beside the
		 * next one. A tenth of the lease early: lease_end_ms counts from when the
		 * claim was answered, a little after the database started the lease. */
		int64_t expiry = j->lease_end_ms - j->lease_ms / 10;
		if (j->ph == PH_RUNNING && needs_heartbeat(j) && j->cancel_at_ms == 0) {
			if (expiry <= now) {
				BRQ_LOG(w->c, BROOQ_LOG_WARN, "lease_expired", BRQ_LF_U64("job", j->lease.id),
					BRQ_LF_STR("topic", j->topic));
				brq_worker_lease_lost(w, j, now, BROOQ_CANCEL_LEASE_LOST);
			} else {
				next = brq_min64(next, expiry);
			}
		}
		if ((j->ph == PH_QUEUED || j->ph == PH_RUNNING) && j->deadline_ms != 0 && !j->timed_out &&
		    j->cancel_at_ms == 0) {
			if (j->deadline_ms <= now)
				time_out(w, j, now);
			else
				next = brq_min64(next, j->deadline_ms);
		}
		if (needs_heartbeat(j)) {
			if (j->next_hb_ms <= now)
				due = true;
			next = brq_min64(next, j->next_hb_ms);
		}
		if (j->ph == PH_RUNNING && j->raised_at_ms != 0 && !j->hung_counted) {
			int64_t at = j->raised_at_ms + w->hung_grace_ms;
			if (at <= now)
				brq_worker_count_hung(w, j);
			else
				next = brq_min64(next, at);
		}
	}
	*wake_at = next;
	return due;
}

void *
brq_worker_keeper_main(void *arg)
{
	brooq_worker *w = arg;
	keeper_loop(w, &w->keeper_cv, &w->keeper_sleep_until, keeper_scan, heartbeat_round);
	return NULL;
}
