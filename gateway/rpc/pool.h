// SPDX-License-Identifier: MIT
// The database pool: N threads, each with its own store connection, taking work items from one queue.
//
// Blocking database calls never run on NNG's callback threads (NNG-NOTES §2.2): a
// callback only queues the work item here, and a pool thread runs the statements,
// builds the reply and sends it.
#ifndef BRQ_GATEWAY_POOL_H
#define BRQ_GATEWAY_POOL_H

#include "brq_base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "store/store.h"
#include "work.h"

// Group commit bounds: at most this many queued enqueue requests, with at most this
// many jobs in all, run as one statement.
#define BRQ_POOL_GROUP_MAX  64
#define BRQ_POOL_GROUP_JOBS 10000

typedef struct brq_pool brq_pool;

// One pool thread: its connection, which is its own (no lock).
typedef struct brq_pool_thread {
	brq_pool               *pool;
	pthread_t               thread;
	char                    name[32];
	brq_store_conn          conn;
	pthread_cond_t          cv;        // signalled when it is handed work or the pool stops
	bool                    is_idle;   // on the idle stack (under the pool's mtx)
	struct brq_pool_thread *idle_next; // the idle stack's link
} brq_pool_thread;

// A FIFO of work items linked through qnext.
typedef struct brq_pool_fifo {
	brq_work *head, *tail;
} brq_pool_fifo;

// Work is queued FIFO in two lanes: the hot path (enqueue, claim, heartbeat, settle,
// cancel) and operator reads (w->is_operator_read: stats, job lookups), which run on
// at most max(1, n / 4) threads at once, so however many operators ask, the hot path
// always finds connections (issue 10.7). Threads take the older head of the two lanes
// the cap allows. Idle threads wait on a stack, and new work wakes the one that went
// idle last: its connection's backend is the warm one (caches, plans), so a lone
// producer's statements stay on one backend instead of taking turns.
struct brq_pool {
	pthread_mutex_t  mtx;
	brq_pool_fifo    hot, slow;    // queued items of each lane
	int              slow_running; // operator reads running now
	int              slow_cap;     // at most this many at once
	brq_pool_thread *idle;         // stack of idle threads, most recently idle on top
	bool             stopping;
	atomic_bool      abort; // every connection's stop flag: running statements end (cancel)
	int              n;
	brq_pool_thread *threads;
};

// Starts n threads with connections of store st (connected lazily, so the gateway
// starts while PostgreSQL is down and answers `unavailable` meanwhile). Borrows st.
// Returns 0, or BRQ_EUNAVAIL (no thread) with nothing left running.
BRQ_MUSTCHECK int brq_pool_start(brq_pool *p, int n, const brq_store *st);

// Ends what the threads are waiting for in the database: each statement still running
// is canceled within ~100 ms (the store's stop flag), its work answered as the store
// fails it. For a shutdown whose grace has run out. Any thread; brq_pool_stop still joins.
void brq_pool_abort(brq_pool *p);

// Queues w (w->run set: work.h brq_work_run_fn) for a pool thread. The pool owns w
// until a thread calls w->run with it.
void brq_pool_submit(brq_pool *p, brq_work *w);

// Lets the threads finish the queue, then joins them and closes the connections.
void brq_pool_stop(brq_pool *p);

#endif
