// SPDX-License-Identifier: MIT
// Who may hold what in the RPC server (SPEC invariant 19): shares of the work items per
// connection and per token, so that no single peer, signed in or not, can take the
// gateway from the others.
//
// The server has a fixed set of work items (server.c work_alloc: max_waiters for the
// long-polls and 16 per pool thread for the rest), and an item is held from the request
// that arrives on it until its reply has left. A peer could hold them all: by
// pipelining requests and never reading the replies (each queued reply pins its item),
// or by a backlog of slow requests. So every item counts against
//   - its connection: at most conn_max requests of one connection in the gateway at
//     once, those answered at once (ping, errors) included; long-polls apart
//     (max_waiters bounds them, and a worker's threads may each park one on its one
//     connection); conn_max_anon while they carry no valid token (a peer that has
//     shown none never needs more than a few: its errors are answered at once).
//     Beyond that an authenticated request is refused (`resource_exhausted`), and one
//     beyond twice the share, or an unauthenticated one beyond its share, closes the
//     connection. A peer that stops reading holds its items only until the server's
//     send timeout (BROOQ_SEND_TIMEOUT) closes its connection, or until its own
//     requests, answered or refused but unread, pass twice its share;
//   - its token (authenticated requests other than long-polls, which max_waiters
//     bounds): at most token_max at once, fewer than all the items, so other tokens
//     always find some (NNG hands free items to waiting connections in turn, so
//     below the share a busy token only waits its turn);
//   - the operator lane (stats, job, topics, list, schedule_list): at most reads_max
//     queued or running in all (a quarter of the items: the hot path keeps the rest),
//     token_max_reads of them per token (so another token's read finds room); the lane
//     runs only max(1, pool/4) at once, and a backlog beyond that is refused at once
//     rather than holding items the hot path needs;
//   - watches (workers' long-polls for cancels, watch.h), which have items of their own
//     (BROOQ_MAX_WATCHES): at most watch_conn_max of one connection (a worker keeps one;
//     a process may run a few workers on one connection) and watch_token_max of one token
//     (all but an eighth, so that another token's workers find some), watches_max in all;
//     beyond, `resource_exhausted`, and the worker learns of cancels at its heartbeats.
// Counts live in small hash tables under one lock, an entry only while its count is
// above zero, so a table holds at most one entry per busy connection or token.
#ifndef BRQ_GATEWAY_QUOTA_H
#define BRQ_GATEWAY_QUOTA_H

#include "brq_base.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

// Watches one connection may hold at once (fixed: a worker keeps one).
#define BRQ_WATCH_CONN_MAX 16

typedef struct brq_quota_opts {
	uint32_t conn_max;        // requests of one authenticated connection at once
	uint32_t conn_max_anon;   // requests of a connection showing no valid token
	uint32_t token_max;       // requests of one token at once (long-polls apart)
	uint32_t token_max_reads; // operator reads of one token, queued or running
	uint32_t reads_max;       // operator reads of all tokens, queued or running
	uint32_t watch_conn_max;  // watches of one connection at once
	uint32_t watch_token_max; // watches of one token at once
	uint32_t watches_max;     // watches of all tokens at once (0: none)
} brq_quota_opts;

typedef struct brq_tally_entry brq_tally_entry;

// Counts by a 64-bit key. Internal to quota.c; here for the struct's size.
typedef struct brq_tally {
	brq_tally_entry **buckets;
	uint32_t          n_buckets; // a power of two
} brq_tally;

typedef struct brq_quota {
	brq_quota_opts  o;
	pthread_mutex_t mu;
	brq_tally       conns, tokens, reads, watch_conns, watch_tokens;
	uint32_t        reads_all;   // operator reads of all tokens
	uint32_t        watches_all; // watches of all tokens
	bool            live;        // initialised: brq_quota_fini has something to free
} brq_quota;

// What an item holds (brq_work.quota_held), so that brq_quota_release gives back
// exactly that.
enum {
	BRQ_QUOTA_CONN  = 1u << 0,
	BRQ_QUOTA_TOKEN = 1u << 2,
	BRQ_QUOTA_READ  = 1u << 3,
	BRQ_QUOTA_WATCH = 1u << 4,
};

typedef enum brq_quota_verdict {
	BRQ_QUOTA_OK = 0,
	BRQ_QUOTA_REFUSE, // answer `resource_exhausted` with the reason
	BRQ_QUOTA_CLOSE,  // close the connection; no answer (the peer would not read it)
} brq_quota_verdict;

// One item's claim on the quotas: the keys it counts under and what it holds.
typedef struct brq_quota_hold {
	uint32_t pipe_id;
	uint64_t token_key; // the token's identity (a prefix of its keyed hash), 0 = none
	unsigned held;      // BRQ_QUOTA_* bits
	uint32_t conn_n;    // its connection's requests in the gateway as it arrived, itself included
} brq_quota_hold;

// 0 or BRQ_ENOMEM. Every share must be at least 1.
BRQ_MUSTCHECK int brq_quota_init(brq_quota *q, const brq_quota_opts *o);
// Frees the tables; nothing may be held any more. A no-op on a zeroed or freed quota.
void brq_quota_fini(brq_quota *q);

// A request arrived on h->pipe_id: counts it on its connection (always: its item is
// held until brq_quota_release) and notes that count in h->conn_n, which
// brq_quota_admit_conn judges without taking the lock again. Then, once its token is
// known, brq_quota_admit.
void brq_quota_arrive(brq_quota *q, brq_quota_hold *h);

// The connection's verdict on a request once authentication has run (authed: it showed
// a valid token), before anything answers it: every request is counted, those answered
// at once (ping, errors) too, since an unread answer pins its item just the same.
// Judges h->conn_n (brq_quota_arrive); takes nothing and no lock; REFUSE and CLOSE set *why
// (a static text for the reply or the log).
brq_quota_verdict brq_quota_admit_conn(const brq_quota *q, const brq_quota_hold *h, bool authed,
				       const char **why);

// The verdict of an authenticated request bound for the pool, after brq_quota_admit_conn:
// whether it is an operator read and whether it is a long-poll (which gives its
// connection's count back: max_waiters bounds those). OK takes its token's and lane's
// shares (held until release); REFUSE takes nothing more and sets *why.
brq_quota_verdict brq_quota_admit(brq_quota *q, brq_quota_hold *h, bool is_read, bool is_long_poll,
				  const char **why);

// A watch's shares (after brq_quota_admit as a long-poll): OK takes them (held until
// release); REFUSE takes nothing and sets *why.
brq_quota_verdict brq_quota_admit_watch(brq_quota *q, brq_quota_hold *h, const char **why);

// Gives back everything h holds (h->held becomes 0). Any thread.
void brq_quota_release(brq_quota *q, brq_quota_hold *h);

// The operator lane's share has ended for h (the read has run): given back before the
// reply is sent, so that a slow reader's replies do not count as reads.
void brq_quota_read_done(brq_quota *q, brq_quota_hold *h);

#endif // BRQ_GATEWAY_QUOTA_H
