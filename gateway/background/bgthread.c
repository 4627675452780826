// SPDX-License-Identifier: MIT
// A background thread that runs rounds and sleeps between them until it is stopped (bgthread.h).
#include "bgthread.h"

#include "brq_clock.h"

int
brq_bgthread_init(brq_bgthread *b, const brq_store *st, const brq_store_conn_opts *o)
{
	if (st != NULL) {
		// The connection's stop flag is always abort: stop abandons a statement stuck
		// on a lock (a migration's ACCESS EXCLUSIVE) instead of waiting for its deadline.
		brq_store_conn_opts with_stop = *o;
		with_stop.stop                = &b->abort;
		brq_store_conn_init(&b->conn, st, &with_stop);
		b->has_conn = true;
	}
	if (pthread_mutex_init(&b->mtx, NULL) != 0)
		goto fail;
	if (brq_cond_init_monotonic(&b->cv) != 0) {
		pthread_mutex_destroy(&b->mtx);
		goto fail;
	}
	b->is_ready = true;
	return 0;
fail:
	if (b->has_conn)
		brq_store_conn_fini(&b->conn);
	b->has_conn = false;
	return BRQ_EUNAVAIL;
}

// Sleeps until next (brq_now_ms()) or stop, in waits of at most slice_ms when the
// loop has an on_slice, which runs after each. Called and returns with mtx held.
static void
sleep_until(brq_bgthread *b, uint64_t next)
{
	const brq_bgthread_loop *l = &b->loop;
	while (!b->stopping) {
		uint64_t now = brq_now_ms();
		if (now >= next)
			break;
		uint64_t        until = l->on_slice != NULL && l->slice_ms != 0 && next - now > l->slice_ms
			       ? now + l->slice_ms
			       : next;
		struct timespec ts    = brq_deadline_at(until);
		pthread_cond_timedwait(&b->cv, &b->mtx, &ts);
		if (l->on_slice != NULL) {
			pthread_mutex_unlock(&b->mtx);
			l->on_slice(l->arg);
			pthread_mutex_lock(&b->mtx);
		}
	}
}

static void *
bgthread_main(void *arg)
{
	brq_bgthread *b = arg;
	pthread_mutex_lock(&b->mtx);
	while (!b->stopping) {
		pthread_mutex_unlock(&b->mtx);
		uint64_t next = b->loop.round(b->loop.arg);
		pthread_mutex_lock(&b->mtx);
		if (next == BRQ_BGTHREAD_END)
			break;
		sleep_until(b, next);
	}
	pthread_mutex_unlock(&b->mtx);
	return NULL;
}

int
brq_bgthread_start(brq_bgthread *b, const brq_bgthread_loop *loop)
{
	b->loop    = *loop;
	b->running = pthread_create(&b->thread, NULL, bgthread_main, b) == 0;
	if (b->running)
		return 0;
	brq_bgthread_stop(b);
	return BRQ_EUNAVAIL;
}

void
brq_bgthread_stop(brq_bgthread *b)
{
	if (!b->is_ready)
		return;
	pthread_mutex_lock(&b->mtx);
	b->stopping = true;
	atomic_store(&b->abort, true);
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mtx);
	if (b->running)
		pthread_join(b->thread, NULL);
	b->running = false;
	if (b->has_conn)
		brq_store_conn_fini(&b->conn);
	b->has_conn = false;
	pthread_mutex_destroy(&b->mtx);
	pthread_cond_destroy(&b->cv);
	b->is_ready = false;
}

bool
brq_bgthread_is_stopping(brq_bgthread *b)
{
	// abort is set with stopping, and atomic: no lock needed to read it.
	return atomic_load(&b->abort);
}
