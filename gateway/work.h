// SPDX-License-Identifier: MIT
// A work item: one REP context and everything one request needs while it is handled.
//
// Ownership: whoever holds the pointer owns the item -- the NNG callback, a pool
// thread running its statement, or the waiters list while it is parked (see
// server.c). Nothing touches an item it does not own.
#ifndef BRQ_GATEWAY_WORK_H
#define BRQ_GATEWAY_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>

#include "auth.h"
#include "proto.h"

struct brq_server;

typedef enum brq_work_state {
	BRQ_W_RECV = 0, // waiting for a request on the context
	BRQ_W_DB,       // queued for, or running on, a pool thread
	BRQ_W_PARK,     // long-poll claim parked (nng_sleep_aio), in the waiters list
	BRQ_W_SEND,     // reply being sent
} brq_work_state;

typedef struct brq_work {
	brq_work_state     state;
	nng_aio           *aio; // its callback is the state machine (server.c)
	nng_ctx            ctx;
	struct brq_server *srv;

	nng_msg      *msg;   // the request while it is handled; req borrows from it
	brq_request   req;   // decoded request (strings point into msg)
	brq_arena     arena; // req's arrays; reset per request
	brq_buf       out;   // the reply being built
	enum brq_role role;
	brq_status    code;    // status of the reply, for metrics
	uint32_t      pipe_id; // the requester's pipe, to notice it going away

	uint64_t start_us;     // when the request arrived (monotonic)
	uint64_t deadline_ms;  // long-poll: when the wait ends (monotonic); 0 = no wait
	uint64_t wake_gen;     // waiters generation seen before the last claim attempt
	bool     is_long_poll; // counted against max_waiters until answered
	bool     waited;       // it was parked at least once (metrics: claim_wait)
	bool     orphaned;     // its pipe went away while parked: drop, do not claim

	// claim with "settle": the settle runs once, before the first claim attempt;
	// its results wait here (in the arena) for the reply, across long-poll rounds.
	bool                      settled;
	struct brq_settle_result *settle_results;

	struct brq_work *qnext;         // pool queue link
	struct brq_work *wprev, *wnext; // waiters list links
	bool             in_waiters;
} brq_work;

#endif
