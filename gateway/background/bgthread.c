// SPDX-License-Identifier: MIT
// A background thread that sleeps between rounds until it is stopped (bgthread.h).
#include "bgthread.h"

#include "brq_clock.h"

int
brq_bgthread_init(brq_bgthread *b, const brq_store *st, const brq_store_conn_opts *o)
{
	// The connection's stop flag is always abort: stop abandons a statement stuck on
	// a lock (a migration's ACCESS EXCLUSIVE) instead of waiting for its deadline.
	brq_store_conn_opts with_stop = *o;
	with_stop.stop                = &b->abort;
	brq_store_conn_init(&b->conn, st, &with_stop);
	pthread_mutex_init(&b->mtx, NULL);
	if (brq_cond_init_monotonic(&b->cv) != 0) {
		pthread_mutex_destroy(&b->mtx);
		brq_store_conn_fini(&b->conn);
		return BRQ_EUNAVAIL;
	}
	return 0;
}

int
brq_bgthread_start(brq_bgthread *b, void *(*fn)(void *), void *arg)
{
	b->running = pthread_create(&b->thread, NULL, fn, arg) == 0;
	if (b->running)
		return 0;
	brq_bgthread_stop(b);
	return BRQ_EUNAVAIL;
}

void
brq_bgthread_stop(brq_bgthread *b)
{
	pthread_mutex_lock(&b->mtx);
	b->stopping = true;
	atomic_store(&b->abort, true);
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mtx);
	if (b->running)
		pthread_join(b->thread, NULL);
	brq_store_conn_fini(&b->conn);
	pthread_mutex_destroy(&b->mtx);
	pthread_cond_destroy(&b->cv);
}

bool
brq_bgthread_is_stopping(brq_bgthread *b)
{
	// abort is set with stopping, and atomic: no lock needed to read it.
	return atomic_load(&b->abort);
}
