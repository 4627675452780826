// SPDX-License-Identifier: MIT
// The database pool: N threads, each with its own connection, taking work items from one queue.
#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

static void
fifo_push(brq_pool_fifo *q, brq_work *w)
{
	w->qnext = NULL;
	if (q->tail != NULL)
		q->tail->qnext = w;
	else
		q->head = w;
	q->tail = w;
}

// Takes q's head; enqueues waiting behind each other go with it: one statement and
// one commit for all of them (group commit from concurrency). The group stays linked
// through qnext for its run function (one for all: the head's), NULL-terminated.
static brq_work *
fifo_take_group(brq_pool_fifo *q)
{
	brq_work *w     = q->head;
	brq_work *last  = w;
	uint32_t  jobs  = w->req.op == BRQ_OP_ENQUEUE ? w->req.enqueue.n_jobs : 0;
	int       group = 1;
	while (jobs > 0 && last->qnext != NULL && last->qnext->run == w->run &&
	       last->qnext->req.op == BRQ_OP_ENQUEUE && group < BRQ_POOL_GROUP_MAX &&
	       jobs + last->qnext->req.enqueue.n_jobs <= BRQ_POOL_GROUP_JOBS) {
		last = last->qnext;
		jobs += last->req.enqueue.n_jobs;
		group++;
	}
	q->head = last->qnext;
	if (q->head == NULL)
		q->tail = NULL;
	last->qnext = NULL;
	return w;
}

// The next work this thread may run (under mtx), or NULL: the older head of the two
// lanes, an operator read only while fewer than slow_cap run. *is_slow: it was one.
static brq_work *
take(brq_pool *p, bool *is_slow)
{
	bool slow_ok = p->slow.head != NULL && p->slow_running < p->slow_cap;
	*is_slow     = false;
	if (p->hot.head != NULL && (!slow_ok || p->hot.head->start_us <= p->slow.head->start_us))
		return fifo_take_group(&p->hot);
	if (!slow_ok)
		return NULL;
	*is_slow = true;
	p->slow_running++;
	return fifo_take_group(&p->slow);
}

static void *
pool_main(void *arg)
{
	brq_pool_thread *t = arg;
	brq_pool        *p = t->pool;

	// Connect now rather than on the first request: that request would pay for
	// the connection and the preparing of every statement. Failure is fine: the
	// first request retries (or answers `unavailable`).
	if (brq_store_ready(&t->conn))
		brq_metrics_pool_move(BRQ_POOL_DOWN, BRQ_POOL_IDLE);

	bool was_slow = false;
	for (;;) {
		bool      is_slow;
		brq_work *w;
		pthread_mutex_lock(&p->mtx);
		if (was_slow)
			p->slow_running--;
		// Stopping: drain what this thread may run, then go. Operator reads over
		// the cap are left to the thread running one, which takes them next.
		while ((w = take(p, &is_slow)) == NULL && !p->stopping) {
			t->is_idle   = true;
			t->idle_next = p->idle;
			p->idle      = t;
			while (t->is_idle && !p->stopping)
				pthread_cond_wait(&t->cv, &p->mtx);
		}
		pthread_mutex_unlock(&p->mtx);
		if (w == NULL)
			break;
		was_slow = is_slow;

		bool was_up = brq_store_is_up(&t->conn);
		brq_metrics_pool_move(was_up ? BRQ_POOL_IDLE : BRQ_POOL_DOWN, BRQ_POOL_BUSY);
		w->run(w, &t->conn);
		brq_store_reset(&t->conn);
		brq_metrics_pool_move(BRQ_POOL_BUSY,
				      brq_store_is_up(&t->conn) ? BRQ_POOL_IDLE : BRQ_POOL_DOWN);
	}
	return NULL;
}

int
brq_pool_start(brq_pool *p, int n, const brq_store *st)
{
	memset(p, 0, sizeof(*p));
	p->slow_cap = n / 4 > 1 ? n / 4 : 1;
	p->threads  = calloc((size_t) n, sizeof(*p->threads));
	if (p->threads == NULL)
		return BRQ_ENOMEM;
	pthread_mutex_init(&p->mtx, NULL);
	brq_metrics_pool_set(BRQ_POOL_DOWN, n);
	for (int i = 0; i < n; i++) {
		brq_pool_thread *t = &p->threads[i];
		t->pool            = p;
		pthread_cond_init(&t->cv, NULL);
		snprintf(t->name, sizeof(t->name), "pool-%d", i);
		brq_store_conn_init(
			&t->conn, st,
			&(brq_store_conn_opts) {.name = t->name, .role = BRQ_STORE_POOL, .stop = &p->abort});
		if (pthread_create(&t->thread, NULL, pool_main, t) != 0) {
			brq_store_conn_fini(&t->conn);
			pthread_cond_destroy(&t->cv);
			p->n = i;
			brq_pool_stop(p);
			return BRQ_EUNAVAIL;
		}
	}
	p->n = n;
	return 0;
}

void
brq_pool_submit(brq_pool *p, brq_work *w)
{
	pthread_mutex_lock(&p->mtx);
	fifo_push(w->is_operator_read ? &p->slow : &p->hot, w);
	// An operator read over the cap waits for the one running to finish; that
	// thread takes it next, no other needs waking.
	bool             runnable = !w->is_operator_read || p->slow_running < p->slow_cap;
	brq_pool_thread *t        = runnable ? p->idle : NULL;
	if (t != NULL) {
		p->idle    = t->idle_next;
		t->is_idle = false;
		pthread_cond_signal(&t->cv);
	}
	pthread_mutex_unlock(&p->mtx);
}

void
brq_pool_abort(brq_pool *p)
{
	atomic_store(&p->abort, true);
}

void
brq_pool_stop(brq_pool *p)
{
	if (p->threads == NULL)
		return;
	pthread_mutex_lock(&p->mtx);
	p->stopping = true;
	for (int i = 0; i < p->n; i++)
		pthread_cond_signal(&p->threads[i].cv);
	pthread_mutex_unlock(&p->mtx);
	for (int i = 0; i < p->n; i++) {
		brq_pool_thread *t = &p->threads[i];
		pthread_join(t->thread, NULL);
		brq_store_conn_fini(&t->conn);
		pthread_cond_destroy(&t->cv);
	}
	free(p->threads);
	p->threads = NULL;
	pthread_mutex_destroy(&p->mtx);
}
