// SPDX-License-Identifier: MIT
// A work item: one REP context and everything one request needs while it is handled.
//
// Ownership: whoever holds the pointer owns the item -- the NNG callback (server.c),
// the pool's queue or a pool thread running its statements (pool.c, ops.c), or the
// waiters list while it is parked (waiters.c). Nothing touches an item it does not
// own, except the waiters module, which marks a tracked claim `orphaned` when its
// peer goes away (an atomic flag, read by the owner before it replies).
#ifndef BRQ_GATEWAY_WORK_H
#define BRQ_GATEWAY_WORK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

#include "auth.h"
#include "brq_list.h"
#include "proto.h"
#include "quota.h"

typedef enum brq_work_state {
	BRQ_W_RECV = 0, // waiting for a request on the context
	BRQ_W_DB,       // queued for, or running on, a pool thread
	BRQ_W_PARK,     // long-poll claim parked (nng_sleep_aio), in the waiters list; or a
			// watch parked in the watches' list (watch.h)
	BRQ_W_SEND,     // reply being sent
} brq_work_state;

typedef struct brq_work brq_work;

struct brq_store_conn; // store.h: the pool thread's connection (for brq_work_run_fn)

// Runs work on a pool thread's connection c: one item, or a group of enqueue requests
// linked through qnext (NULL-terminated; pool.c groups only items with the same run).
// The function owns every item until it hands it on (reply sent, dropped, or parked);
// it must do exactly one of those for each. The pool resets the connection's borrowed
// outputs after it returns.
typedef void (*brq_work_run_fn)(brq_work *w, struct brq_store_conn *c);

struct brq_work {
	brq_work_state state;
	nng_aio       *aio; // its callback is the state machine (server.c)
	nng_ctx        ctx;
	void          *srv; // the server (server.c's type), for the callback

	nng_msg       *msg;   // the request while it is handled; req borrows from it
	nng_msg       *spare; // kept for an error reply when no message can be allocated
	brq_request    req;   // decoded request (strings point into msg)
	brq_arena      arena; // req's arrays, and what must outlive a long-poll round
	brq_buf        out;   // the reply being built
	brq_role       role;
	bool           is_operator_read; // stats, job: the pool's capped lane (pool.h)
	brq_status     code;             // status of the reply, for metrics
	uint32_t       pipe_id;          // the requester's pipe, to notice it going away
	nng_pipe       pipe;             // the same, to close it (quota.h: a peer over its share)
	brq_quota_hold quota;            // what the request holds of its peer's shares (quota.h)

	uint64_t start_us; // when the request arrived (monotonic)
	// When its caller stops waiting (monotonic ms; request timeout_ms; 0 = not said):
	// work not started by then is dropped, statements are bounded by it, and a claim
	// that ends after it gives its leases back.
	uint64_t caller_deadline_ms;
	uint64_t deadline_ms;  // long-poll: when the wait ends (monotonic); 0 = no wait
	uint64_t wake_gen;     // waiters generation seen before the last claim attempt
	bool     is_long_poll; // counted against max_waiters until answered
	bool     waited;       // it was parked at least once (metrics: claim_wait)
	// Its peer went away (waiters.c sets it, for tracked claims): a claim must not
	// lease jobs to a reply nobody reads.
	atomic_bool orphaned;

	// claim with "settle": the settle runs once, before the first claim attempt;
	// its results wait here (in the arena) for the reply, across long-poll rounds.
	bool               settled;
	brq_settle_result *settle_results;
	// The jobs of the reply being delivered (borrowed from the pool thread's store
	// connection until it is reset): given back if the reply cannot be delivered.
	const brq_claimed_job *claimed;
	uint32_t               n_claimed;

	// A watch (watch.h): its topics' keyed hashes (in the arena, one per topic) and their
	// bloom bits, and the cursor it came with (has_cursor false: none, or not ours).
	struct {
		uint64_t *th;
		uint64_t  bloom;
		uint64_t  epoch, seq;
		bool      has_cursor;
	} watch;

	brq_work *qnext;     // pool queue link
	brq_link  park_link; // on the parked list (waiters.c), or a watch's (watch.c)
	bool      is_parked;
	brq_link  track_link; // on the tracked claims (waiters.c)
	bool      is_tracked;

	// A parked claim taken by an enqueue, which claims for it in its own
	// transaction (waiters.c brq_waiters_take; the hand-back is server.c's):
	// BRQ_STEAL_* below, and what to do once handed back.
	atomic_int steal;
	enum { BRQ_HANDBACK_SEND, BRQ_HANDBACK_CLAIM, BRQ_HANDBACK_DROP } handback;
	nng_msg *handback_msg; // the reply to send (BRQ_HANDBACK_SEND)

	// What a pool thread runs it with, set by whoever submits it: server.c's for RPC
	// requests, console_api.c's for the web console's operations (work from inside the
	// gateway: no context or aio; req, arena and out are the function's to use).
	brq_work_run_fn run;
};

// brq_work.steal: who finishes a taken claim. Its sleep is still armed when it is
// taken, so its callback may run at any moment; the taker and the callback each
// move the state once and whoever comes second acts (server.c handback()).
enum {
	BRQ_STEAL_NONE = 0, // not taken
	BRQ_STEAL_TAKEN,    // taken by an enqueue, which is still working on it
	BRQ_STEAL_WAITING,  // its callback ran meanwhile and left it to the taker
	BRQ_STEAL_READY,    // the taker is done: the callback performs `handback`
};

#endif
