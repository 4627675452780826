// SPDX-License-Identifier: MIT
// Long-poll waiters: parked claims, wakes, and claims whose peer went away.
#include "waiters.h"

#include <stddef.h>
#include <string.h>

#include "metrics/metrics.h"

void
brq_waiters_init(brq_waiters *wt)
{
	memset(wt, 0, sizeof(*wt));
	pthread_mutex_init(&wt->mtx, NULL);
	brq_list_init(&wt->parked, offsetof(brq_work, park_link));
	brq_list_init(&wt->tracked, offsetof(brq_work, track_link));
}

void
brq_waiters_fini(brq_waiters *wt)
{
	pthread_mutex_destroy(&wt->mtx);
}

uint64_t
brq_waiters_gen(brq_waiters *wt)
{
	pthread_mutex_lock(&wt->mtx);
	uint64_t g = wt->gen;
	pthread_mutex_unlock(&wt->mtx);
	return g;
}

// Under wt->mtx.
static void
parked_remove(brq_waiters *wt, brq_work *w)
{
	if (!w->is_parked)
		return;
	brq_list_del(&wt->parked, w);
	w->is_parked = false;
	brq_metrics_waiters_add(-1);
}

bool
brq_waiters_park(brq_waiters *wt, brq_work *w, uint64_t ms)
{
	pthread_mutex_lock(&wt->mtx);
	if (wt->gen != w->wake_gen || atomic_load(&w->orphaned)) {
		// Something was enqueued since this claim looked (or its peer left):
		// go round again instead of sleeping through it.
		pthread_mutex_unlock(&wt->mtx);
		return false;
	}
	w->waited    = true;
	w->is_parked = true;
	brq_list_push(&wt->parked, w);
	brq_metrics_waiters_add(1);
	w->state = BRQ_W_PARK;
	// Started under the lock, so a waker that finds w in the list always finds its
	// sleep in progress and its cancel is never lost. The callback runs on an NNG
	// thread and takes the lock itself. A timeout left on the aio from an earlier
	// stage would cut the sleep short (NNG-NOTES §2.2): reset it.
	nng_aio_set_timeout(w->aio, NNG_DURATION_DEFAULT);
	nng_sleep_aio((nng_duration) ms, w->aio);
	pthread_mutex_unlock(&wt->mtx);
	return true;
}

void
brq_waiters_unpark(brq_waiters *wt, brq_work *w)
{
	pthread_mutex_lock(&wt->mtx);
	parked_remove(wt, w);
	pthread_mutex_unlock(&wt->mtx);
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
brq_waiters_wake(brq_waiters *wt, const char *topic, size_t topic_len, uint32_t n)
{
	pthread_mutex_lock(&wt->mtx);
	wt->gen++;
	for (brq_work *w = wt->parked.head, *next; w != NULL && n > 0; w = next) {
		next = brq_list_next(&wt->parked, w);
		if (!claims_topic(w, topic, topic_len))
			continue;
		parked_remove(wt, w);
		nng_aio_cancel(w->aio); // its callback claims again
		n--;
	}
	pthread_mutex_unlock(&wt->mtx);
}

static bool
is_ready_now(const brq_job_spec *j)
{
	return !(j->has_delay_ms && j->delay_ms > 0) && !j->has_run_at_ms;
}

// Ready jobs of the batch still without a taker, per topic (the batch's topics are
// few: a linear table is enough; topics past its size are not served by taking).
#define TAKE_TOPICS 16

typedef struct take_topic {
	brq_str topic;
	int64_t left; // ready jobs not yet covered by a taken claim
} take_topic;

static uint32_t
ready_topics(const brq_job_spec *jobs, uint32_t n, take_topic *t)
{
	uint32_t nt = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!is_ready_now(&jobs[i]))
			continue;
		uint32_t k = 0;
		while (k < nt &&
		       !(t[k].topic.len == jobs[i].topic.len &&
			 memcmp(t[k].topic.ptr, jobs[i].topic.ptr, jobs[i].topic.len) == 0))
			k++;
		if (k == nt && nt == TAKE_TOPICS)
			continue;
		if (k == nt)
			t[nt++] = (take_topic) {.topic = jobs[i].topic, .left = 0};
		t[k].left++;
	}
	return nt;
}

uint32_t
brq_waiters_take(brq_waiters *wt, const brq_job_spec *jobs, uint32_t n, brq_work **out, uint32_t max)
{
	take_topic t[TAKE_TOPICS];
	uint32_t   nt = ready_topics(jobs, n, t), taken = 0;
	if (nt == 0)
		return 0;
	pthread_mutex_lock(&wt->mtx);
	for (brq_work *w = wt->parked.head, *next; w != NULL && taken < max; w = next) {
		next = brq_list_next(&wt->parked, w);
		for (uint32_t k = 0; k < nt; k++) {
			if (t[k].left <= 0 || !claims_topic(w, t[k].topic.ptr, t[k].topic.len))
				continue;
			t[k].left -= w->req.claim.n;
			parked_remove(wt, w);
			atomic_store(&w->steal, BRQ_STEAL_TAKEN);
			out[taken++] = w;
			break;
		}
	}
	pthread_mutex_unlock(&wt->mtx);
	return taken;
}

void
brq_waiters_wake_all(brq_waiters *wt)
{
	pthread_mutex_lock(&wt->mtx);
	wt->gen++;
	while (wt->parked.head != NULL) {
		brq_work *w = wt->parked.head;
		parked_remove(wt, w);
		nng_aio_cancel(w->aio);
	}
	pthread_mutex_unlock(&wt->mtx);
}

void
brq_waiters_track(brq_waiters *wt, brq_work *w)
{
	pthread_mutex_lock(&wt->mtx);
	brq_list_push(&wt->tracked, w);
	w->is_tracked = true;
	pthread_mutex_unlock(&wt->mtx);
}

void
brq_waiters_untrack(brq_waiters *wt, brq_work *w)
{
	pthread_mutex_lock(&wt->mtx);
	if (w->is_tracked) {
		brq_list_del(&wt->tracked, w);
		w->is_tracked = false;
	}
	pthread_mutex_unlock(&wt->mtx);
}

void
brq_waiters_pipe_gone(brq_waiters *wt, uint32_t pipe_id)
{
	pthread_mutex_lock(&wt->mtx);
	for (brq_work *w = wt->tracked.head; w != NULL; w = brq_list_next(&wt->tracked, w)) {
		if (w->pipe_id != pipe_id)
			continue;
		atomic_store(&w->orphaned, true);
		if (w->is_parked) {
			parked_remove(wt, w);
			nng_aio_cancel(w->aio); // its callback drops it
		}
	}
	pthread_mutex_unlock(&wt->mtx);
}
