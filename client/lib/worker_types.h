/* SPDX-License-Identifier: MIT */
/* Worker runtime: the types shared by worker.c, worker_lease.c and worker_job.c, and
 * their inline list helpers. Functions live in worker_lease.h and worker_job.h;
 * worker.c implements the public brooq_worker_* API only (brooq.h). */
#ifndef BRQ_WORKER_TYPES_H
#define BRQ_WORKER_TYPES_H

#include "brq_list.h"
#include "client.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/*
 * Threads and who owns what
 *
 *   dispatcher (the caller of brooq_worker_run, worker.c): claims jobs for free
 *       handler threads, settling finished results in the same round trip; drives
 *       the graceful stop.
 *   handler threads (opts.threads, worker_handler.c): run one job at a time. In pull
 *       mode (brooq_worker_handle_pull) there are none: the caller's own threads (or
 *       event loop) take jobs with brooq_worker_next and hand them back with
 *       brooq_job_finish, at most opts.threads at once; everything else is the same.
 *   keeper (worker_lease.c): heartbeats every held lease every lease/3 in one
 *       batched call, turns "lost" answers into cancel flags, and counts hung
 *       handlers. Its own thread: the dispatcher may sit in a long-poll.
 *   settler (worker_lease.c): settles finished results the dispatcher is not about
 *       to carry in a claim (it is parked in a long-poll, backing off, full or
 *       stopping), and alone those that a batch could not carry.
 *   watcher (worker.c): waits for the stop and then closes the dispatcher's own
 *       transport, so that a long-poll in flight ends at once: the gateway sees its
 *       peer go away and gives back whatever it was about to lease to it.
 *   listener (worker_watch.c): keeps one `watch` parked at the gateway, on the
 *       dispatcher's transport (after the stop has closed that, on one of its own while
 *       handlers still run), and raises the cancel flag of a held job the moment the
 *       gateway names it canceled (an operator's cancel reaches the handler in a round
 *       trip, whatever the lease; the heartbeats stay the authority).
 *
 * Every job the worker holds is a brooq_job_ctx on w->held, in one phase:
 *   QUEUED   on w->runq, waiting for a handler thread: free threads' jobs for
 *            microseconds, the prefetch queue's for about PREFETCH_WINDOW_MS;
 *   RUNNING  its handler runs (or, in pull mode, the caller holds it); the handler
 *            thread owns the outcome fields;
 *   FINISHED on w->finished, the result waiting to be settled;
 *   SETTLING in a settle request (plain or carried by a claim), owned by the
 *            thread that sent it until the answer is processed.
 * The worker holds at most threads + prefetch leases. A ctx is freed when
 * its settle is answered, or when its result is discarded (lease lost, or
 * abandoned at stop) and its handler has returned. All of it is under w->mu,
 * except the outcome fields (handler thread, RUNNING only) and the cancel reason
 * (atomic, read by handlers without the lock).
 *
 * The cancel flag has two kinds of reasons. A timeout (the attempt's deadline, kept by
 * the keeper) only asks the handler to stop: the lease is still held and heartbeated,
 * and the handler's result is replaced by a fail "attempt timed out after N ms" that is
 * settled as usual. Every other reason (lease lost, canceled, past the maximum
 * execution time, abandoned at stop) gives the result up: cancel_at_ms is set and
 * nothing is written for the job.
 */

/* Per request: leases per heartbeat, chained jobs per settle (the gateway's default
 * max batch). A gateway configured lower answers too_large; settles then fall back
 * to one item per request. */
#define BRQ_W_BATCH_MAX 1000
/* Canceled ids the listener heard that the worker did not hold (yet: a claim's reply
 * may still be on its way), kept to check the jobs of the claims that answer later. */
#define BRQ_W_TOMBS 1024
/* Results per settle request (and per claim that carries them). */
#define BRQ_W_SETTLE_ITEMS_MAX 500
/* The prefetch queue's default bound (brooq_worker_opts.prefetch_max 0): a claim
 * may then carry a whole batch; the pace (50 ms of work) keeps slow handlers far below
 * it. In the drain benchmark 1000 gave claims of ~430 jobs instead of ~230 and
 * +10..20 % jobs/s over 256 (docs/benchmarks.md). */
#define BRQ_W_PREFETCH_DEFAULT 1000

typedef enum brq_phase {
	PH_QUEUED,
	PH_RUNNING,
	PH_FINISHED,
	PH_SETTLING,
} brq_phase;

/* What the dispatcher is doing. The settler leaves finished results to it in
 * D_READY, and for a moment in D_CLAIMING and D_FULL (worker_lease.c). */
typedef enum brq_dstate {
	D_READY,
	D_CLAIMING,
	D_FULL,
	D_BACKOFF,
	D_STOPPING,
} brq_dstate;

typedef struct brq_topic_handler {
	char         *topic;
	brooq_handler fn; /* NULL: pulled (brooq_worker_handle_pull) */
	void         *arg;
} brq_topic_handler;

struct brooq_job_ctx {
	brooq_worker            *w;
	brq_link                 held; /* w->held */
	brq_link                 q;    /* w->runq (QUEUED) or w->finished (FINISHED) */
	const brq_topic_handler *h;    /* NULL: no handler; failed without running */
	brooq_lease              lease;
	char                    *topic;
	char                    *payload; /* NUL-terminated */
	size_t                   payload_len;
	uint32_t                 attempts, max_attempts;

	/* Lease upkeep, monotonic ms, under w->mu. */
	int64_t   lease_ms;     /* the lease's length: opts.lease_ms or as granted at claim */
	int64_t   lease_end_ms; /* the lease surely ends by then unless extended */
	int64_t   next_hb_ms;   /* due for a heartbeat */
	int64_t   finished_ms;  /* when its result was ready */
	brq_phase ph;

	/* brooq_job_cancel_reason(): 0 (NONE) until raised; never lowered; TIMEOUT may be
	 * followed by another reason, any other is final. Written under w->mu. */
	atomic_int cancel_reason;
	int64_t    raised_at_ms; /* when the flag was first raised (hung watch); 0: not. Under w->mu */
	int64_t    cancel_at_ms; /* when the result was given up (lost, abandoned); 0: not. Under w->mu */
	/* The attempt timeout (as claimed; 0: none): the deadline, monotonic and Unix ms. */
	uint64_t attempt_timeout_ms;
	int64_t  deadline_ms;
	int64_t  deadline_wall_ms;
	bool     timed_out; /* the deadline passed while queued or running: settle a fail */
	bool     lost;      /* the gateway said the lease is gone */
	bool     abandoned; /* still running when the stop grace ended */
	bool     hung_counted;
	bool     solo;      /* a batch holding it was refused: settle it alone */
	bool     rewritten; /* its outcome was refused once and replaced by a fail */
	bool     ambiguous; /* an earlier settle may have run: "not applied" proves nothing */

	/* The outcome, written only by the handler thread while RUNNING. */
	brooq_outcome   outcome;
	char           *error;     /* NULL: none (or oom) */
	bool            oom;       /* recording the outcome ran out of memory: settle as a fail */
	bool            chain_bad; /* done_chain's specs had a bad size: a fail (error says so) */
	uint64_t        delay_ms;
	brooq_job_spec *chain; /* deep copies */
	size_t          n_chain;
	char           *result; /* done with a JSON result (NUL-terminated copy); NULL: none */
};

struct brooq_worker {
	brooq_client      *c; /* borrowed */
	char              *name;
	int                n_threads;
	uint32_t           lease_ms; /* 0: the gateway's default per topic */
	uint32_t           wait_ms, stop_grace_ms, hung_grace_ms;
	uint32_t           prefetch_max; /* 0: no prefetch queue */
	brq_topic_handler *handlers;
	size_t             n_handlers;
	const char       **topics; /* handlers[i].topic, built at run */

	atomic_bool stop_requested;
	int         wake_rd, wake_wr; /* self-pipe: stop and completions wake the dispatcher */
	int         stop_rd, stop_wr; /* self-pipe: stop wakes the watcher */
	brq_rpc     poll;             /* the dispatcher's own transport: its claims (long-polls) */
	bool        poll_open;
	/* A long-poll is in flight on poll (or about to be). Only that is abandoned at
	 * stop: a claim carrying results returns at once, and closing under it would
	 * leave its results' fate unknown. */
	atomic_bool poll_waiting;
	pthread_t   watcher; /* ends the long-poll in flight at stop (closes poll's socket) */
	bool        watcher_started;
	pthread_t   listener; /* the watch for cancels (worker_watch.c) */
	bool        listener_started;
	/* The listener's own transport for the drain: the stop closes poll, which its watch
	 * shares, while handlers may still run. Opened by the listener; watch_open and the
	 * close under mu, closed by keepers_quit after the listener has ended. */
	brq_rpc watch_rpc;
	bool    watch_open;

	pthread_mutex_t mu;
	pthread_cond_t  work_cv;   /* handler threads: runq non-empty, or quit_handlers */
	pthread_cond_t  keeper_cv; /* keeper: new leases or cancels, or quit_keepers */
	pthread_cond_t  settle_cv; /* settler: results or dispatcher state changed */
	pthread_cond_t  watch_cv;  /* listener: quit_keepers (its waits between watches) */
	pthread_cond_t  cancel_cv; /* brooq_worker_wait_cancels: cancel_seq moved, or quit_handlers */

	/* Pull mode (worker_handler.c). pull is set before run and never changes. */
	bool     pull;
	int      pull_rd, pull_wr; /* self-pipe behind brooq_worker_fd; -1 until pull mode */
	bool     pull_armed;       /* under mu: the pipe is empty; the next event writes a byte */
	uint64_t cancel_seq;       /* under mu: cancel flags raised on jobs handed out */

	/* Under mu. */
	brq_list held, runq, finished;
	int      n_busy;       /* jobs on handler threads: QUEUED + RUNNING */
	int      n_running;    /* RUNNING */
	uint64_t n_returned;   /* handlers returned, ever: the pace of the prefetch */
	uint32_t prefetch;     /* current prefetch target, 0..prefetch_max */
	bool     claim_due;    /* the dispatcher waits (D_FULL) for a claim to be due,
				* and no handler woke it yet */
	size_t     n_settling; /* jobs in settle requests in flight */
	brq_dstate ds;
	bool       has_run, quit_keepers, quit_handlers;
	int64_t    settle_retry_at_ms;
	/* When the keeper and the settler will look again by themselves (INT64_MAX: only when
	 * signalled; 0: awake, they look before they wait again). A change that cannot make
	 * a thread's work due before then does not wake it (brq_worker_keeper_poke,
	 * brq_worker_settler_poke): a drain's claims woke both on every claim for nothing. */
	int64_t            keeper_sleep_until, settler_sleep_until;
	brooq_worker_stats st;
	/* The listener's (worker_watch.c). watch_gen moves when a job's cancel may have gone
	 * unheard (a resync: the gateway could not tell; a tombstone overwritten): the jobs of
	 * a claim in flight meanwhile are heartbeated at once (jobs_take). */
	uint64_t watch_gen;
	/* The listener's first watch has been answered (or has failed): its resync is behind,
	 * and the dispatcher may claim (brooq_worker_run waits for it, briefly). */
	bool     watch_heard;
	uint64_t tombs[BRQ_W_TOMBS]; /* canceled ids heard while not held, the last BRQ_W_TOMBS */
	uint64_t n_tombs;            /* ever added; the newest at tombs[(n_tombs - 1) % BRQ_W_TOMBS] */

	pthread_t *threads;
	int        n_started;
	pthread_t  keeper, settler;
	bool       keeper_started, settler_started;
};

/* Wakes the dispatcher (the self-pipe). Async-signal-safe. A full pipe already
 * holds a wake-up. */
static inline void
brq_worker_wake(brooq_worker *w)
{
	int     saved = errno;
	char    b     = 1;
	ssize_t r     = write(w->wake_wr, &b, 1);
	(void) r;
	errno = saved;
}

static inline int64_t
brq_min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

#endif
