/* SPDX-License-Identifier: MIT */
/* Worker runtime: who runs the claimed jobs: the handler threads, or the caller in pull mode. */
#include "worker_handler.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "brq_clock.h"
#include "err.h"
#include "log.h"
#include "worker_job.h"
#include "worker_lease.h"

/* ---- shared by both modes ----------------------------------------------------------------- */

const brq_topic_handler *
brq_worker_handler_of(const brooq_worker *w, const char *topic)
{
	for (size_t i = 0; i < w->n_handlers; i++)
		if (strcmp(w->handlers[i].topic, topic) == 0)
			return &w->handlers[i];
	return NULL;
}

bool
brq_worker_claim_due(const brooq_worker *w)
{
	return w->n_busy < w->n_threads + (int) (w->prefetch + 1) / 2;
}

/* j's handler returned (or its puller finished it). Under w->mu. */
static void
handler_returned(brooq_worker *w, brooq_job_ctx *j)
{
	w->n_busy--;
	w->n_running--;
	w->n_returned++;
	/* A handler that overstayed its cancel flag and was not caught by the keeper
	 * (e.g. after run returned) is counted now. */
	if (j->raised_at_ms != 0 && !j->hung_counted &&
	    (int64_t) brq_now_ms() - j->raised_at_ms >= (int64_t) w->hung_grace_ms)
		brq_worker_count_hung(w, j);
	if (j->cancel_at_ms != 0) {
		/* Lost or abandoned: the result is discarded. */
		brq_list_del(&w->held, j);
		brq_job_ctx_free(j);
	} else {
		if (j->timed_out)
			brq_job_timed_out_outcome(j);
		j->ph          = PH_FINISHED;
		j->finished_ms = (int64_t) brq_now_ms();
		brq_list_push(&w->finished, j);
		// The settler decides from the oldest result: only the first one is news.
		if (w->finished.n == 1)
			brq_worker_settler_poke(w);
	}
	// A write(2) per job would be most of a fast handler's cost: wake the
	// dispatcher only when it waits for exactly this (or for the stop to end).
	if (w->ds == D_STOPPING || (w->claim_due && brq_worker_claim_due(w))) {
		w->claim_due = false;
		brq_worker_wake(w);
	}
}

/* The next job to run off the run queue, now RUNNING; NULL when the queue holds none.
 * Jobs lost before they started are dropped, and those whose deadline passed while
 * they waited are failed without running. Under w->mu. */
static brooq_job_ctx *
runq_take(brooq_worker *w)
{
	brooq_job_ctx *j;
	while ((j = brq_list_pop(&w->runq)) != NULL) {
		if (j->lost) {
			/* Lost before it started (or abandoned at stop): never run it. */
			w->n_busy--;
			brq_list_del(&w->held, j);
			brq_job_ctx_free(j);
			brq_worker_wake(w);
			continue;
		}
		if (j->timed_out) {
			w->n_busy--;
			brq_job_timed_out_outcome(j);
			j->ph          = PH_FINISHED;
			j->finished_ms = (int64_t) brq_now_ms();
			brq_list_push(&w->finished, j);
			brq_worker_settler_poke(w);
			brq_worker_wake(w);
			continue;
		}
		j->ph = PH_RUNNING;
		w->n_running++;
		return j;
	}
	return NULL;
}

/* ---- handler threads ------------------------------------------------------------------- */

void *
brq_worker_handler_main(void *arg)
{
	brooq_worker *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->runq.head == NULL && !w->quit_handlers)
			pthread_cond_wait(&w->work_cv, &w->mu);
		if (w->runq.head == NULL)
			break;
		brooq_job_ctx *j = runq_take(w);
		if (j == NULL)
			continue;
		pthread_mutex_unlock(&w->mu);
		j->h->fn(j, j->h->arg);
		pthread_mutex_lock(&w->mu);
		handler_returned(w, j);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ---- pull mode --------------------------------------------------------------------------- */

int
brq_worker_pull_open(brooq_worker *w)
{
	int fds[2];
	if (w->pull_rd >= 0)
		return 0;
	if (pipe(fds) != 0)
		return brq_fail(BRQ_EIO, "worker_handle_pull: pipe: out of descriptors");
	for (int i = 0; i < 2; i++) {
		if (fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0 || fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0) {
			close(fds[0]);
			close(fds[1]);
			return brq_fail(BRQ_EIO, "worker_handle_pull: pipe flags");
		}
	}
	w->pull_rd    = fds[0];
	w->pull_wr    = fds[1];
	w->pull_armed = true;
	return 0;
}

void
brq_worker_pull_notify(brooq_worker *w)
{
	if (!w->pull || !w->pull_armed)
		return;
	char    b = 1;
	ssize_t r = write(w->pull_wr, &b, 1);
	(void) r;
	w->pull_armed = false;
}

/* Empties the fd's pipe: the caller found nothing to do. Under w->mu, so no event
 * slips between the read and re-arming. */
static void
pull_drain(brooq_worker *w)
{
	char buf[16];
	if (w->pull_armed)
		return;
	while (read(w->pull_rd, buf, sizeof(buf)) > 0) {
	}
	w->pull_armed = true;
}

void
brq_worker_pull_canceled(brooq_worker *w)
{
	w->cancel_seq++;
	pthread_cond_broadcast(&w->cancel_cv);
	brq_worker_pull_notify(w);
}

size_t
brq_worker_pull_give_back(brooq_worker *w)
{
	size_t         n = 0;
	brooq_job_ctx *j;
	while ((j = brq_list_pop(&w->runq)) != NULL) {
		w->n_busy--;
		if (j->lost) {
			brq_list_del(&w->held, j);
			brq_job_ctx_free(j);
			continue;
		}
		if (j->timed_out) {
			brq_job_timed_out_outcome(j);
		} else {
			/* The attempt is given back and last_error left as it was. */
			brq_job_outcome_clear(j);
			j->outcome = BROOQ_OUTCOME_PRESERVE;
			n++;
		}
		j->ph          = PH_FINISHED;
		j->finished_ms = (int64_t) brq_now_ms();
		brq_list_push(&w->finished, j);
	}
	brq_worker_settler_poke(w);
	return n;
}

/* Waits on cv until the monotonic deadline (INT64_MAX: until signalled). */
static void
wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
	if (deadline_ms == INT64_MAX) {
		pthread_cond_wait(cv, mu);
		return;
	}
	struct timespec ts = brq_deadline_at((uint64_t) deadline_ms);
	(void) pthread_cond_timedwait(cv, mu, &ts);
}

static int64_t
deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? INT64_MAX : (int64_t) brq_now_ms() + timeout_ms;
}

/* The next job for the caller (see brooq.h). */
brooq_err
brooq_worker_next(brooq_worker *w, int timeout_ms, brooq_job_ctx **job)
{
	brq_msg_clear();
	if (w == NULL || job == NULL)
		return BRQ_ARG_FAIL("worker_next: worker and job are required");
	if (!w->pull)
		return BRQ_ARG_FAIL("worker_next: the worker has no pulled topic (brooq_worker_handle_pull)");
	*job            = NULL;
	int64_t   until = deadline_of(timeout_ms);
	brooq_err rc    = BROOQ_OK;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		// At most `threads` jobs are out at once: the rest wait in the queue, their
		// leases heartbeated, for a job to be finished.
		if (w->n_running < w->n_threads && (*job = runq_take(w)) != NULL)
			break;
		if (w->quit_handlers)
			break;
		if ((int64_t) brq_now_ms() >= until) {
			pull_drain(w);
			rc = BROOQ_ETIMEDOUT;
			break;
		}
		wait_until(&w->work_cv, &w->mu, until);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void
brooq_job_finish(brooq_job_ctx *j)
{
	if (j == NULL)
		return;
	brooq_worker *w = j->w;
	pthread_mutex_lock(&w->mu);
	handler_returned(w, j);
	if (w->runq.head != NULL) {
		pthread_cond_signal(&w->work_cv);
		brq_worker_pull_notify(w);
	}
	pthread_mutex_unlock(&w->mu);
}

int
brooq_worker_fd(brooq_worker *w)
{
	return w != NULL && w->pull ? w->pull_rd : -1;
}

uint64_t
brooq_worker_wait_cancels(brooq_worker *w, uint64_t seen, int timeout_ms)
{
	if (w == NULL)
		return 0;
	int64_t until = deadline_of(timeout_ms);
	pthread_mutex_lock(&w->mu);
	while (w->cancel_seq == seen && !w->quit_handlers && (int64_t) brq_now_ms() < until)
		wait_until(&w->cancel_cv, &w->mu, until);
	uint64_t seq = w->cancel_seq;
	pthread_mutex_unlock(&w->mu);
	return seq;
}

void
brq_worker_handlers_quit(brooq_worker *w)
{
	w->quit_handlers = true;
	pthread_cond_broadcast(&w->work_cv);
	pthread_cond_broadcast(&w->cancel_cv);
	brq_worker_pull_notify(w);
}
