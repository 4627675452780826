// SPDX-License-Identifier: MIT
// Prometheus metrics, internal: the state shared by the counters (metrics.c) and the
// renderer of the exposition (metrics_render.c). Nothing else includes this.
#ifndef BRQ_GATEWAY_METRICS_INT_H
#define BRQ_GATEWAY_METRICS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

// The registry holds at most this many distinct topics; later topics are counted
// under OTHER_TOPIC (which no valid topic can spell: topics start with [a-z0-9]).
// Each topic costs ~25 series, so the cap bounds a scrape to a few hundred thousand
// lines even when a buggy producer invents topics.
#define MAX_TOPICS  10000
#define OTHER_TOPIC "_other"

// Open-addressing table of entry pointers; capacity is a power of two, kept at most
// half full, so a lookup probes a couple of slots.
#define TABLE_MIN_CAP 64

// brooq_rpc_duration_seconds buckets, upper bounds in microseconds (le="...").
// Sub-millisecond for cheap ops up to minutes for long-poll claims (op="claim_wait").
static const uint64_t bucket_le_us[] = {
	50,       100,      250,       500,                    // µs
	1000,     2500,     5000,      10000,    25000, 50000, // ms
	100000,   250000,   500000,                            //
	1000000,  2500000,  5000000,   10000000,               // s
	30000000, 60000000, 300000000,                         // long polls
};
static const char *const bucket_le_str[] = {
	"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
	"0.1",   "0.25",   "0.5",     "1",      "2.5",   "5",      "10",    "30",   "60",    "300",
};
#define N_BUCKETS (sizeof(bucket_le_us) / sizeof(bucket_le_us[0]))
_Static_assert(sizeof(bucket_le_str) / sizeof(bucket_le_str[0]) == N_BUCKETS, "one label per bucket bound");

// Histogram rows: one per op, plus the long-poll claims that waited.
#define HIST_CLAIM_WAIT BRQ_OP__COUNT
#define N_HIST          (BRQ_OP__COUNT + 1)

struct histogram {
	// Per-bucket (NOT cumulative) counts; the last slot is the +Inf overflow. The
	// renderer accumulates them and derives _count from the same reads, so _count
	// always equals the +Inf bucket even while updates race a scrape.
	_Atomic uint64_t bucket[N_BUCKETS + 1];
	_Atomic uint64_t sum_us; // total observed, microseconds (exact integer)
};

struct topic_entry {
	char            *name; // owned, NUL-terminated (a topic has no NUL)
	size_t           len;
	uint64_t         hash;
	_Atomic uint64_t counter[BRQ_MT__COUNT];
	_Atomic uint64_t settle[BRQ_OUTCOME__COUNT];
	_Atomic uint64_t dead; // brooq_dead_total
	// Waits of the jobs claimed, per bucket (brq_wait_bucket), for the history.
	_Atomic uint64_t wait[BRQ_WAIT_BUCKETS];
	// Depth gauges: written by brq_metrics_depth_set and read by the renderer, both
	// under depth_mu, so a scrape never sees half of a snapshot.
	uint64_t jobs[BRQ_STATE__COUNT];
	double   oldest_ready_age_s;
	uint64_t depth_gen; // snapshot that last wrote the gauges above
	// Policy gauges (brq_metrics_policy_set), under depth_mu like the depth gauges.
	bool     paused;
	uint32_t max_running, rate_per_s; // 0: unlimited
	uint64_t policy_gen;
};

struct registry {
	// Lock order: depth_mu before rw. The RPC path takes only rw, as a reader,
	// except for the first update of a new topic (writer, once per topic).
	pthread_rwlock_t     rw;
	struct topic_entry **slots; // cap slots, NULL = empty
	size_t               cap;
	struct topic_entry **list; // n entries in insertion order (list_cap slots)
	size_t               n;
	size_t               list_cap;
	struct topic_entry  *other; // the overflow entry, created on first overflow
	atomic_bool          is_overflow_logged;

	pthread_mutex_t depth_mu;
	uint64_t        depth_gen;
	uint64_t        policy_gen;
	// The table gauges (brq_metrics_table_set), under depth_mu too.
	brq_table_stats table;
	bool            has_table; // false until the monitor's first read
};

struct brq_metrics_state {
	struct registry  reg;
	_Atomic uint64_t rpc[BRQ_OP__COUNT][BRQ_ST__COUNT];
	struct histogram hist[N_HIST];
	_Atomic uint64_t auth_failures;
	_Atomic uint64_t conns_closed;  // connections closed for going over their share
	_Atomic uint64_t quota_refused; // requests refused for their connection's or token's share
	_Atomic uint64_t expired;
	_Atomic uint64_t schedule_enqueued; // slots whose job the scheduler created
	_Atomic uint64_t schedule_skipped;  // missed slots left out by the misfire policy
	_Atomic uint64_t settle_by_address; // settled leases reached by their row's address
	_Atomic uint64_t settle_by_id;      // ... by a primary-key probe
	_Atomic uint64_t attempt_sum_us;
	_Atomic uint64_t attempt_count;
	_Atomic int64_t  pool[BRQ_POOL__COUNT];
	_Atomic int64_t  waiters;
	_Atomic int64_t  watches;       // watches parked now
	_Atomic uint64_t cancels_heard; // cancels of running jobs the listener heard
	_Atomic int      listener_up;
	_Atomic int      db_up;
	_Atomic int      jobs_estimated; // brooq_jobs' terminal counts are a sample's estimate
	_Atomic uint64_t depth_at_ms;    // wall clock ms of the last depth snapshot; 0 = none
	char            *version;        // owned; NULL before init
	double           start_time_s;
};

// The one instance (metrics.c); the renderer reads it.
extern struct brq_metrics_state brq_metrics_m;
#define M brq_metrics_m

extern const char *const brq_metrics_pool_state_names[BRQ_POOL__COUNT];

// Copies the registry's entry pointers (stable until brq_metrics_fini) into *out
// (malloc'd, caller frees), so rendering runs without the lock. 0 or BRQ_ENOMEM.
int brq_metrics_snapshot(struct topic_entry ***out, size_t *n);
// qsort comparator of entry pointers, by topic bytes.
int brq_metrics_entry_cmp(const void *a, const void *b);

#endif
