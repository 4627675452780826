/* SPDX-License-Identifier: MIT */
/* Worker runtime: handler threads, the dispatcher (claims, graceful stop), the public worker API. */
#include "worker_types.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "brq_clock.h"
#include "err.h"
#include "log.h"
#include "worker_handler.h"
#include "worker_job.h"
#include "worker_lease.h"
#include "worker_watch.h"

#define DEFAULT_THREADS       4
#define DEFAULT_WAIT_MS       30000
#define DEFAULT_STOP_GRACE_MS 10000
#define DEFAULT_HUNG_GRACE_MS 5000
/* A claim asks for at most one job per thread; the gateway's default max batch. */
#define THREADS_MAX 1000
/* How long the first claim waits for the listener's first answer (first_watch_wait). */
#define FIRST_WATCH_MS 200

/* The prefetch queue holds about this much work at the handlers' recent pace, and
 * the pace is measured over at least PACE_MIN_MS. */
#define PREFETCH_WINDOW_MS 50
#define PACE_MIN_MS        20

/* brooq_worker_stop runs in signal handlers: the flag must not hide a lock. */
_Static_assert(ATOMIC_BOOL_LOCK_FREE == 2, "atomic_bool must be lock-free");

/* ---- the self-pipe ---------------------------------------------------------------------- */

static void
drain_wake(brooq_worker *w)
{
	char buf[64];
	while (read(w->wake_rd, buf, sizeof(buf)) > 0) {
	}
}

/* Waits for a wake-up, at most timeout_ms (-1: no limit). */
static void
wait_wake(brooq_worker *w, int timeout_ms)
{
	struct pollfd p = {.fd = w->wake_rd, .events = POLLIN};
	(void) poll(&p, 1, timeout_ms);
}

/* ---- the dispatcher --------------------------------------------------------------------- */

static void
set_ds(brooq_worker *w, brq_dstate ds)
{
	w->ds = ds;
	brq_worker_settler_poke(w);
}

/* Takes the jobs of a claim's reply into the worker; the claim was sent when the
 * listener's watch_gen was gen_at_claim. Under w->mu. */
static void
jobs_take(brooq_worker *w, brooq_job *const *jobs, size_t n, uint64_t gen_at_claim)
{
	int64_t now = (int64_t) brq_now_ms(), wall = brq_wall_ms();
	int64_t keeper_due = INT64_MAX; /* the soonest any new job needs the keeper */
	for (size_t i = 0; i < n; i++) {
		w->st.claimed++;
		brooq_job_ctx *j = brq_job_ctx_new(w, jobs[i], now, wall);
		if (j == NULL) {
			/* Not lost: the lease expires and the reaper hands the job out again. */
			w->st.errors++;
			BRQ_LOG(w->c, BROOQ_LOG_ERROR, "job_dropped", BRQ_LF_U64("job", jobs[i]->lease.id),
				BRQ_LF_STR("reason", "out_of_memory"));
			continue;
		}
		brq_list_push_front(&w->held, j);
		j->h = brq_worker_handler_of(w, j->topic);
		if (j->h != NULL) {
			j->ph = PH_QUEUED;
			brq_list_push(&w->runq, j);
			w->n_busy++;
		} else {
			/* Only asked-for topics are claimed; should the gateway disagree, say so. */
			j->outcome     = BROOQ_OUTCOME_FAIL;
			j->error       = brq_worker_error_copy("worker: no handler for this topic");
			j->oom         = j->error == NULL;
			j->ph          = PH_FINISHED;
			j->finished_ms = now;
			brq_list_push(&w->finished, j);
		}
		keeper_due = brq_min64(keeper_due, j->next_hb_ms);
		if (j->deadline_ms != 0)
			keeper_due = brq_min64(keeper_due, j->deadline_ms);
		if (brq_worker_watch_take(w, j, gen_at_claim, now)) /* may free j */
			keeper_due = INT64_MIN;
	}
	if (n > 0) {
		// One wake-up per job, not all of them: with 32 threads idle, a broadcast for
		// one job woke 32 threads on 2 cores to find one job (the p99 of a single
		// job's start at 32 threads). A thread that is not waiting checks the queue
		// before it waits, so no job is missed.
		if (n >= (size_t) w->n_threads)
			pthread_cond_broadcast(&w->work_cv);
		else
			for (size_t i = 0; i < n; i++)
				pthread_cond_signal(&w->work_cv);
		brq_worker_pull_notify(w);
		// The keeper and the settler only when this changes what they wait for: a
		// claim's leases are heartbeated a third of a lease later, after the ones the
		// keeper already waits for; a job without a handler is a result to settle.
		brq_worker_keeper_poke(w, keeper_due);
		brq_worker_settler_poke(w);
	}
}

/* Follows the handlers' pace (jobs returned per ms, smoothed) and sets the prefetch
 * target to PREFETCH_WINDOW_MS of it, within prefetch_max. Under w->mu. */
static void
pace_update(brooq_worker *w, uint64_t *at_ms, uint64_t *returned, double *rate)
{
	uint64_t now = brq_now_ms();
	if (w->prefetch_max == 0 || now - *at_ms < PACE_MIN_MS)
		return;
	double sample = (double) (w->n_returned - *returned) / (double) (now - *at_ms);
	*rate         = *rate * 0.7 + sample * 0.3;
	*at_ms        = now;
	*returned     = w->n_returned;
	double want   = *rate * PREFETCH_WINDOW_MS;
	w->prefetch   = want >= w->prefetch_max ? w->prefetch_max : (uint32_t) want;
}

/*
 * One dispatcher step:
 * 1. Take the finished results a claim can carry: the gateway settles them before
 *    it claims, in one round trip.
 * 2. Claim when it is due (a thread would go idle, or the prefetch queue is half
 *    empty), as many jobs as fill threads + prefetch, counting results not carried
 *    by this claim as held. When it is not due, leave the results to the settler and
 *    wait until a handler says it is (claim_due).
 * 3. Claim, long-polling. Results that finish meanwhile are the settler's.
 * Returns false when the claim failed (the caller backs off).
 */
static bool
dispatch_step(brooq_worker *w, uint64_t pace[2], double *rate)
{
	brooq_job_ctx      *b[BRQ_W_SETTLE_ITEMS_MAX];
	brooq_settle_item   items[BRQ_W_SETTLE_ITEMS_MAX];
	const char         *results[BRQ_W_SETTLE_ITEMS_MAX];
	brooq_settle_result res[BRQ_W_SETTLE_ITEMS_MAX];
	brooq_job         **jobs                   = NULL;
	size_t              n                      = 0;
	char                detail[BRQ_DETAIL_MAX] = "";

	pthread_mutex_lock(&w->mu);
	pace_update(w, &pace[0], &pace[1], rate);
	size_t n_settle =
		brq_worker_claim_due(w) ? brq_worker_take_batch(w, b, BRQ_W_SETTLE_ITEMS_MAX, false) : 0;
	long want = (long) w->n_threads + (long) w->prefetch - w->n_busy - (long) (w->n_settling - n_settle) -
		(long) w->finished.n;
	if (!brq_worker_claim_due(w) || want <= 0) {
		brq_worker_give_back(w, b, n_settle);
		set_ds(w, D_FULL);
		w->claim_due = true;
		pthread_mutex_unlock(&w->mu);
		wait_wake(w, -1);
		return true;
	}
	set_ds(w, D_CLAIMING);
	uint64_t gen = w->watch_gen;
	pthread_mutex_unlock(&w->mu);

	for (size_t i = 0; i < n_settle; i++) {
		brq_job_settle_fill(&items[i], &results[i], b[i]);
		res[i] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	}
	brooq_claim_opts o = {
		.size     = sizeof(o),
		.worker   = w->name,
		.topics   = w->topics,
		.n_topics = w->n_handlers,
		.max_jobs = (uint32_t) (want < BRQ_W_BATCH_MAX ? want : BRQ_W_BATCH_MAX),
		.lease_ms = w->lease_ms,
		// A claim that carries results does not wait: its answer acknowledges
		// them at once, and a long-poll (which a stop abandons) never holds any.
		.wait_ms        = n_settle > 0 ? 0 : w->wait_ms,
		.settle         = n_settle > 0 ? items : NULL,
		.n_settle       = n_settle,
		.settled        = n_settle > 0 ? res : NULL,
		.settle_results = n_settle > 0 ? results : NULL,
	};
	// Claims go through the dispatcher's own transport: at stop the watcher closes
	// it, which ends a long-poll in flight at once (the gateway sees its peer go
	// away: a parked claim is dropped, one running gives its leases back).
	// A long-poll announces itself, then looks at the stop flag; the watcher sets
	// nothing but reads the announcement after the flag was set (both sequentially
	// consistent): either this sees the stop and does not wait, or the watcher sees
	// the long-poll and ends it.
	bool      long_poll = o.wait_ms > 0;
	brooq_err err       = BROOQ_OK;
	if (long_poll)
		atomic_store(&w->poll_waiting, true);
	if (!long_poll || !atomic_load(&w->stop_requested))
		err = brq_claim_via(w->c, w->poll_open ? &w->poll : NULL, &o, &jobs, &n);
	if (long_poll)
		atomic_store(&w->poll_waiting, false);
	if (err != BROOQ_OK)
		brq_msg_copy(detail);

	pthread_mutex_lock(&w->mu);
	set_ds(w, err == BROOQ_OK ? D_READY : D_BACKOFF);
	if (n_settle > 0)
		brq_worker_settle_done(w, b, n_settle, err, res, false, detail);
	if (err == BROOQ_OK) {
		jobs_take(w, jobs, n, gen);
	} else if (!atomic_load(&w->stop_requested)) {
		w->st.errors++;
		BRQ_LOG(w->c, BROOQ_LOG_WARN, "claim_failed", BRQ_LF_STR("err", brooq_strerror(err)),
			BRQ_LF_STR("detail", detail), BRQ_LF_U64("settle_items", n_settle));
	}
	pthread_mutex_unlock(&w->mu);
	brooq_jobs_free(jobs, n);
	return err == BROOQ_OK;
}

/* Jobs still to wait for at stop: queued or running, neither lost nor abandoned. */
static size_t
count_active(const brooq_worker *w)
{
	size_t n = 0;
	for (const brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
		n += (j->ph == PH_QUEUED || j->ph == PH_RUNNING) && j->cancel_at_ms == 0;
	return n;
}

/* Tells the keeper, the settler and the listener to exit and joins them. The
 * listener's watch in flight ends as its transport closes: the dispatcher's (nothing
 * else uses it now: the dispatcher has stopped claiming), or the listener's own of the
 * drain, which is closed here once the listener has ended. Called with w->mu held;
 * returns with it released. */
static void
keepers_quit(brooq_worker *w)
{
	w->quit_keepers = true;
	/* Open now or never: the listener opens it only while quit_keepers is false. */
	bool watch_open = w->watch_open;
	pthread_cond_broadcast(&w->keeper_cv);
	pthread_cond_broadcast(&w->settle_cv);
	pthread_cond_broadcast(&w->watch_cv);
	pthread_mutex_unlock(&w->mu);
	if (w->keeper_started)
		pthread_join(w->keeper, NULL);
	if (w->settler_started)
		pthread_join(w->settler, NULL);
	if (w->listener_started) {
		if (w->poll_open)
			brq_rpc_abort(&w->poll);
		if (watch_open)
			brq_rpc_abort(&w->watch_rpc);
		pthread_join(w->listener, NULL);
	}
	if (watch_open) {
		brq_rpc_close(&w->watch_rpc);
		w->watch_open = false;
	}
	w->keeper_started = w->settler_started = w->listener_started = false;
}

/*
 * Graceful stop, after claiming has stopped:
 * 1. The settler takes every finished result from now on (D_STOPPING); the keeper
 *    keeps heartbeating, so handlers finishing within the grace are settled.
 * 2. When the grace ends, handlers still running are abandoned: their cancel flag
 *    is raised, their leases are no longer heartbeated and expire (the reaper
 *    returns the jobs to pending; nothing is written for them).
 * 3. Wait until no active job, no finished result and no settle in flight remain.
 *    A result is given up only after the grace once its lease has surely ended
 *    (the gateway unreachable all along): it can no longer be settled.
 * 4. Stop the keeper and the settler, and tell idle handler threads to exit; the
 *    abandoned ones are joined by brooq_worker_free.
 */
static void
stop_phase(brooq_worker *w)
{
	pthread_mutex_lock(&w->mu);
	set_ds(w, D_STOPPING);
	int64_t grace_end  = (int64_t) brq_now_ms() + w->stop_grace_ms;
	bool    grace_over = false;
	size_t  abandoned  = 0;
	// A puller's queue is given back at once: no caller waits on a thread of ours
	// to free up, and another worker may run them while this one drains.
	if (w->pull) {
		size_t n = brq_worker_pull_give_back(w);
		if (n > 0)
			BRQ_LOG(w->c, BROOQ_LOG_INFO, "prefetch_given_back", BRQ_LF_U64("jobs", n));
	}
	for (;;) {
		pthread_mutex_unlock(&w->mu);
		drain_wake(w);
		pthread_mutex_lock(&w->mu);
		int64_t now = (int64_t) brq_now_ms();
		if (!grace_over && now >= grace_end) {
			grace_over = true;
			for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next) {
				if ((j->ph != PH_QUEUED && j->ph != PH_RUNNING) || j->cancel_at_ms != 0)
					continue;
				j->abandoned = true;
				j->lost      = j->ph == PH_QUEUED; /* never started: dropped when popped */
				brq_worker_cancel_job(j, now, BROOQ_CANCEL_STOP);
				abandoned++;
				BRQ_LOG(w->c, BROOQ_LOG_WARN, "handler_abandoned",
					BRQ_LF_U64("job", j->lease.id), BRQ_LF_STR("topic", j->topic));
			}
			pthread_cond_signal(&w->keeper_cv);
		}
		if (grace_over) {
			for (brooq_job_ctx *j = w->finished.head, *next; j != NULL; j = next) {
				next = j->q.next;
				if (now < j->lease_end_ms)
					continue;
				BRQ_LOG(w->c, BROOQ_LOG_ERROR, "result_dropped",
					BRQ_LF_U64("job", j->lease.id), BRQ_LF_STR("topic", j->topic),
					BRQ_LF_STR("reason", "lease_ended"));
				brq_list_del(&w->finished, j);
				brq_list_del(&w->held, j);
				brq_job_ctx_free(j);
			}
		}
		if (count_active(w) == 0 && w->finished.head == NULL && w->n_settling == 0)
			break;
		pthread_mutex_unlock(&w->mu);
		wait_wake(w, grace_over ? 100 : (int) brq_min64(grace_end - now, 1000));
		pthread_mutex_lock(&w->mu);
	}
	keepers_quit(w); /* unlocks */

	pthread_mutex_lock(&w->mu);
	brq_worker_handlers_quit(w);
	BRQ_LOG(w->c, BROOQ_LOG_INFO, "worker_stopped", BRQ_LF_U64("claimed", w->st.claimed),
		BRQ_LF_U64("settled", w->st.settled), BRQ_LF_U64("lease_lost", w->st.lease_lost),
		BRQ_LF_U64("abandoned", abandoned));
	pthread_mutex_unlock(&w->mu);
}

/* Waits for the stop (or the end of the worker), then closes the dispatcher's
 * transport if a long-poll is in flight: it fails at once (NNG_ECLOSED). */
static void *
watcher_main(void *arg)
{
	brooq_worker *w = arg;
	char          b;
	while (read(w->stop_rd, &b, 1) < 0 && errno == EINTR) {
	}
	if (atomic_load(&w->stop_requested) && w->poll_open && atomic_load(&w->poll_waiting))
		brq_rpc_abort(&w->poll);
	return NULL;
}

/* Ends the watcher (waking it if nothing did) and closes the dispatcher's transport. */
static void
watcher_quit(brooq_worker *w)
{
	if (w->watcher_started) {
		char    b = 0;
		ssize_t r = write(w->stop_wr, &b, 1);
		(void) r;
		pthread_join(w->watcher, NULL);
		w->watcher_started = false;
	}
	if (w->poll_open) {
		brq_rpc_close(&w->poll);
		w->poll_open = false;
	}
}

/* Tells every thread started so far to exit and joins the keeper and settler
 * (handler threads are joined by brooq_worker_free). */
static void
threads_quit(brooq_worker *w)
{
	pthread_mutex_lock(&w->mu);
	brq_worker_handlers_quit(w);
	keepers_quit(w); /* unlocks */
}

static int
threads_start(brooq_worker *w)
{
	w->topics  = malloc(w->n_handlers * sizeof(*w->topics));
	w->threads = calloc((size_t) w->n_threads, sizeof(*w->threads));
	if (w->topics == NULL || w->threads == NULL)
		return brq_fail(BRQ_ENOMEM, "worker_run: out of memory");
	for (size_t i = 0; i < w->n_handlers; i++)
		w->topics[i] = w->handlers[i].topic;
	// Pull mode: the caller's threads run the jobs.
	for (; !w->pull && w->n_started < w->n_threads; w->n_started++)
		if (pthread_create(&w->threads[w->n_started], NULL, brq_worker_handler_main, w) != 0)
			return brq_fail(BRQ_ENOMEM, "worker_run: cannot start handler thread %d",
					w->n_started);
	if (pthread_create(&w->keeper, NULL, brq_worker_keeper_main, w) != 0)
		return brq_fail(BRQ_ENOMEM, "worker_run: cannot start the heartbeat thread");
	w->keeper_started = true;
	if (pthread_create(&w->settler, NULL, brq_worker_settler_main, w) != 0)
		return brq_fail(BRQ_ENOMEM, "worker_run: cannot start the settle thread");
	w->settler_started = true;
	int rv             = brq_client_rpc_open(w->c, &w->poll);
	if (rv != 0)
		return rv;
	w->poll_open = true;
	if (pthread_create(&w->watcher, NULL, watcher_main, w) != 0)
		return brq_fail(BRQ_ENOMEM, "worker_run: cannot start the stop watcher");
	w->watcher_started = true;
	if (pthread_create(&w->listener, NULL, brq_worker_watch_main, w) != 0)
		return brq_fail(BRQ_ENOMEM, "worker_run: cannot start the cancel listener");
	w->listener_started = true;
	return 0;
}

/* Waits (at most FIRST_WATCH_MS, or until a stop) for the listener's first answer
 * before the first claim. That answer is a resync (no cursor yet: the gateway cannot
 * tell what was missed), which heartbeats every lease held and every lease of a claim
 * in flight (worker_watch.c): a worker starting on a backlog heartbeated its whole
 * first batch at once, a write of up to a thousand rows for nothing. A gateway that is
 * not listening for cancels yet parks the watch: the claims then start after the wait,
 * as before. */
static void
first_watch_wait(brooq_worker *w)
{
	int64_t until = (int64_t) brq_now_ms() + FIRST_WATCH_MS;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		bool heard = w->watch_heard;
		pthread_mutex_unlock(&w->mu);
		int64_t now = (int64_t) brq_now_ms();
		if (heard || now >= until || atomic_load(&w->stop_requested))
			return;
		wait_wake(w, (int) (until - now));
		drain_wake(w);
	}
}

/* ---- public: the worker ---------------------------------------------------------------------- */

/* The caller's options, checked, with defaults filled in. */
static int
worker_opts(const brooq_worker_opts *opts, brooq_worker_opts *o)
{
	int rv = brq_opts_copy(o, sizeof(*o), opts, BRQ_WORKER_OPTS_V1, "brooq_worker_opts");
	if (rv != 0)
		return rv;
	if (o->threads < 0 || o->threads > THREADS_MAX)
		return brq_fail(BRQ_EINVAL, "worker_new: threads must be 0..%d", THREADS_MAX);
	if (o->lease_ms != 0 && (o->lease_ms < BRQ_LEASE_MS_MIN || o->lease_ms > BRQ_LEASE_MS_MAX))
		return brq_fail(BRQ_EINVAL, "worker_new: lease_ms must be 0 or %d..%d", BRQ_LEASE_MS_MIN,
				BRQ_LEASE_MS_MAX);
	if (o->name != NULL && (o->name[0] == '\0' || strlen(o->name) > BRQ_WORKER_MAX))
		return brq_fail(BRQ_EINVAL, "worker_new: name must be 1..%d bytes", BRQ_WORKER_MAX);
	o->threads       = o->threads > 0 ? o->threads : DEFAULT_THREADS;
	o->wait_ms       = o->wait_ms > 0 ? o->wait_ms : DEFAULT_WAIT_MS;
	o->stop_grace_ms = o->stop_grace_ms > 0 ? o->stop_grace_ms : DEFAULT_STOP_GRACE_MS;
	o->hung_grace_ms = o->hung_grace_ms > 0 ? o->hung_grace_ms : DEFAULT_HUNG_GRACE_MS;
	if (o->prefetch_max > BRQ_W_BATCH_MAX)
		return brq_fail(BRQ_EINVAL, "worker_new: prefetch_max must be at most %d", BRQ_W_BATCH_MAX);
	o->prefetch_max = o->prefetch_max == 0 ? BRQ_W_PREFETCH_DEFAULT
		: o->prefetch_max < 0          ? 0
					       : o->prefetch_max;
	return 0;
}

/* The self-pipe, the lock and the condition variables (monotonic). On failure
 * nothing is left open. */
static int
sync_init(brooq_worker *w)
{
	int fds[2], sfd[2] = {-1, -1};
	if (pipe(fds) != 0)
		return BRQ_EIO;
	if (pipe(sfd) != 0)
		goto fail_pipe;
	for (int i = 0; i < 2; i++) {
		if (fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0 || fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0 ||
		    fcntl(sfd[i], F_SETFD, FD_CLOEXEC) != 0)
			goto fail_pipe;
	}
	// The watcher blocks in read(2) on stop_rd; brooq_worker_stop must never block.
	if (fcntl(sfd[1], F_SETFL, O_NONBLOCK) != 0)
		goto fail_pipe;
	if (pthread_mutex_init(&w->mu, NULL) != 0)
		goto fail_pipe;
	if (brq_cond_init_monotonic(&w->work_cv) != 0)
		goto fail_mu;
	if (brq_cond_init_monotonic(&w->keeper_cv) != 0)
		goto fail_work;
	if (brq_cond_init_monotonic(&w->settle_cv) != 0)
		goto fail_keeper;
	if (brq_cond_init_monotonic(&w->watch_cv) != 0)
		goto fail_settle;
	if (brq_cond_init_monotonic(&w->cancel_cv) != 0)
		goto fail_watch;
	w->wake_rd = fds[0];
	w->wake_wr = fds[1];
	w->stop_rd = sfd[0];
	w->stop_wr = sfd[1];
	w->pull_rd = w->pull_wr = -1;
	return 0;

fail_watch:
	pthread_cond_destroy(&w->watch_cv);
fail_settle:
	pthread_cond_destroy(&w->settle_cv);
fail_keeper:
	pthread_cond_destroy(&w->keeper_cv);
fail_work:
	pthread_cond_destroy(&w->work_cv);
fail_mu:
	pthread_mutex_destroy(&w->mu);
fail_pipe:
	close(fds[0]);
	close(fds[1]);
	if (sfd[0] >= 0) {
		close(sfd[0]);
		close(sfd[1]);
	}
	return BRQ_EIO;
}

/* On success *out belongs to the caller: brooq_worker_free() it. c is borrowed and
 * must outlive the worker. On failure nothing is allocated. */
brooq_err
brooq_worker_new(brooq_client *c, const brooq_worker_opts *opts, brooq_worker **out)
{
	brooq_worker_opts o;
	brooq_worker     *w;
	int               rv;

	brq_msg_clear();
	if (c == NULL || out == NULL)
		return BRQ_ARG_FAIL("worker_new: client and out are required");
	if ((rv = worker_opts(opts, &o)) != 0)
		return brq_err_public(rv);
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return brq_err_public(brq_fail(BRQ_ENOMEM, "worker_new: out of memory"));
	w->c             = c;
	w->n_threads     = o.threads;
	w->lease_ms      = o.lease_ms;
	w->wait_ms       = o.wait_ms;
	w->stop_grace_ms = o.stop_grace_ms;
	w->hung_grace_ms = o.hung_grace_ms;
	w->prefetch_max  = (uint32_t) o.prefetch_max;
	brq_list_init(&w->held, offsetof(brooq_job_ctx, held));
	brq_list_init(&w->runq, offsetof(brooq_job_ctx, q));
	brq_list_init(&w->finished, offsetof(brooq_job_ctx, q));
	atomic_init(&w->stop_requested, false);
	if ((o.name != NULL && (w->name = strdup(o.name)) == NULL) || sync_init(w) != 0) {
		free(w->name);
		free(w);
		return brq_err_public(brq_fail(BRQ_ENOMEM, "worker_new: out of resources"));
	}
	*out = w;
	return BROOQ_OK;
}

/* topic is copied; fn and arg are kept until brooq_worker_free. Under w->mu. */
static int
handler_add(brooq_worker *w, const char *topic, brooq_handler fn, void *arg)
{
	if (w->has_run)
		return brq_fail(BRQ_EINVAL, "worker_handle: the worker has already run");
	if (brq_worker_handler_of(w, topic) != NULL)
		return brq_fail(BRQ_EINVAL, "worker_handle: topic %s already has a handler", topic);
	if (w->n_handlers == BRQ_TOPICS_MAX)
		return brq_fail(BRQ_EINVAL, "worker_handle: at most %d topics", BRQ_TOPICS_MAX);
	// One worker, one mode: its threads either run handlers or are the caller's.
	if (w->n_handlers > 0 && w->pull != (fn == NULL))
		return brq_fail(BRQ_EINVAL, "worker_handle: a worker either pulls every topic or none");
	int rv = fn == NULL ? brq_worker_pull_open(w) : 0;
	if (rv != 0)
		return rv;
	w->pull              = fn == NULL;
	brq_topic_handler *h = realloc(w->handlers, (w->n_handlers + 1) * sizeof(*h));
	if (h != NULL)
		w->handlers = h;
	char *t = h != NULL ? strdup(topic) : NULL;
	if (t == NULL)
		return brq_fail(BRQ_ENOMEM, "worker_handle: out of memory");
	w->handlers[w->n_handlers++] = (brq_topic_handler) {.topic = t, .fn = fn, .arg = arg};
	return 0;
}

brooq_err
brooq_worker_handle(brooq_worker *w, const char *topic, brooq_handler fn, void *arg)
{
	brq_msg_clear();
	if (w == NULL || topic == NULL || fn == NULL)
		return BRQ_ARG_FAIL("worker_handle: worker, topic and handler are required");
	if (!brq_topic_valid(topic, strlen(topic)))
		return BRQ_ARG_FAIL("worker_handle: invalid topic (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)",
				    BRQ_TOPIC_MAX);
	pthread_mutex_lock(&w->mu);
	int rv = handler_add(w, topic, fn, arg);
	pthread_mutex_unlock(&w->mu);
	return brq_err_public(rv);
}

brooq_err
brooq_worker_handle_pull(brooq_worker *w, const char *topic)
{
	brq_msg_clear();
	if (w == NULL || topic == NULL)
		return BRQ_ARG_FAIL("worker_handle_pull: worker and topic are required");
	if (!brq_topic_valid(topic, strlen(topic)))
		return BRQ_ARG_FAIL(
			"worker_handle_pull: invalid topic (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)",
			BRQ_TOPIC_MAX);
	pthread_mutex_lock(&w->mu);
	int rv = handler_add(w, topic, NULL, NULL);
	pthread_mutex_unlock(&w->mu);
	return brq_err_public(rv);
}

/* Marks the worker as run once; BRQ_EINVAL when it cannot run. */
static int
run_once(brooq_worker *w)
{
	int rv = 0;
	pthread_mutex_lock(&w->mu);
	if (w->has_run)
		rv = brq_fail(BRQ_EINVAL, "worker_run: a worker runs once");
	else if (w->n_handlers == 0)
		rv = brq_fail(BRQ_EINVAL, "worker_run: no handler registered");
	w->has_run = true;
	pthread_mutex_unlock(&w->mu);
	return rv;
}

/*
 * The dispatcher loop, on the caller's thread, until brooq_worker_stop():
 *   dispatch_step: claim as many jobs as there are free threads, long-polling, with
 *   the finished results in the same request, or wait for a thread to free up;
 *   on error back off (100 ms .. 5 s) and retry, forever: an unavailable gateway
 *   never ends the worker.
 * Then the graceful stop (stop_phase). Runs once per worker.
 */
brooq_err
brooq_worker_run(brooq_worker *w)
{
	int rv;

	brq_msg_clear();
	if (w == NULL)
		return BRQ_ARG_FAIL("worker_run: worker is NULL");
	if ((rv = run_once(w)) != 0)
		return brq_err_public(rv);
	if (atomic_load(&w->stop_requested)) {
		pthread_mutex_lock(&w->mu);
		brq_worker_handlers_quit(w); /* pullers waiting already get no job */
		pthread_mutex_unlock(&w->mu);
		return BROOQ_OK;
	}
	if ((rv = threads_start(w)) != 0) {
		threads_quit(w);
		watcher_quit(w);
		return brq_err_public(rv);
	}
	first_watch_wait(w);

	uint32_t backoff = 0;
	uint64_t seed    = brq_backoff_seed(w);
	uint64_t pace[2] = {brq_now_ms(), 0}; // since when, handlers returned by then
	double   rate    = 0;                 // handlers returned per ms, smoothed
	for (;;) {
		drain_wake(w);
		if (atomic_load(&w->stop_requested))
			break;
		if (dispatch_step(w, pace, &rate)) {
			backoff = 0;
			continue;
		}
		backoff = brq_backoff_next(backoff);
		/* Only a stop ends the wait early; completions are the settler's now. */
		int64_t until = (int64_t) brq_now_ms() + brq_backoff_jitter(backoff, &seed);
		for (int64_t now = (int64_t) brq_now_ms(); now < until && !atomic_load(&w->stop_requested);
		     now         = (int64_t) brq_now_ms()) {
			drain_wake(w);
			wait_wake(w, (int) (until - now));
		}
		pthread_mutex_lock(&w->mu);
		set_ds(w, D_READY);
		pthread_mutex_unlock(&w->mu);
	}
	stop_phase(w);
	watcher_quit(w);
	return BROOQ_OK;
}

/* Async-signal-safe: an atomic store and a write(2); no lock, no allocation. */
void
brooq_worker_stop(brooq_worker *w)
{
	if (w == NULL)
		return;
	atomic_store(&w->stop_requested, true);
	brq_worker_wake(w);
	int     saved = errno;
	char    b     = 1;
	ssize_t r     = write(w->stop_wr, &b, 1);
	(void) r;
	errno = saved;
}

void
brooq_worker_get_stats(brooq_worker *w, brooq_worker_stats *out)
{
	if (w == NULL || out == NULL)
		return;
	if (brq_abi_out_check(out, 1, BRQ_WORKER_STATS_V1, "brooq_worker_stats") != 0)
		return;
	pthread_mutex_lock(&w->mu);
	brooq_worker_stats st = w->st;
	pthread_mutex_unlock(&w->mu);
	brq_abi_out(out, 0, &st, sizeof(st));
}

/* After brooq_worker_run returned (or without it). Joins every thread, so it waits
 * for handlers abandoned at stop to return. NULL is a no-op. */
void
brooq_worker_free(brooq_worker *w)
{
	if (w == NULL)
		return;
	threads_quit(w);
	watcher_quit(w);
	pthread_mutex_lock(&w->mu);
	size_t running = 0;
	for (brooq_job_ctx *j = w->held.head; j != NULL; j = j->held.next)
		running += j->ph == PH_RUNNING;
	pthread_mutex_unlock(&w->mu);
	if (running > 0)
		BRQ_LOG(w->c, BROOQ_LOG_WARN, "worker_free_waiting", BRQ_LF_U64("handlers", running));
	for (int i = 0; i < w->n_started; i++)
		pthread_join(w->threads[i], NULL);
	for (brooq_job_ctx *j = w->held.head, *next; j != NULL; j = next) {
		next = j->held.next;
		brq_job_ctx_free(j);
	}
	for (size_t i = 0; i < w->n_handlers; i++)
		free(w->handlers[i].topic);
	free(w->handlers);
	free(w->topics);
	free(w->threads);
	free(w->name);
	close(w->wake_rd);
	close(w->wake_wr);
	close(w->stop_rd);
	close(w->stop_wr);
	if (w->pull_rd >= 0) {
		close(w->pull_rd);
		close(w->pull_wr);
	}
	pthread_cond_destroy(&w->cancel_cv);
	pthread_cond_destroy(&w->watch_cv);
	pthread_cond_destroy(&w->settle_cv);
	pthread_cond_destroy(&w->keeper_cv);
	pthread_cond_destroy(&w->work_cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
