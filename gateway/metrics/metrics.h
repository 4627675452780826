// SPDX-License-Identifier: MIT
// Prometheus metrics of the gateway: counters and gauges updated by the hot path, rendered for /metrics.
//
// Hot-path updates are lock-free where they can be (atomics) and never block on a
// scrape: rendering takes a snapshot. Per-topic series live in a small registry keyed
// by topic name; a topic appears on first use.
#ifndef BRQ_GATEWAY_METRICS_H
#define BRQ_GATEWAY_METRICS_H

#include "brq_base.h"

#include <stddef.h>
#include <stdint.h>

#include "status.h" // proto: brq_op, brq_status, brq_state, brq_outcome

// Per-topic counters (all *_total).
typedef enum brq_topic_counter {
	BRQ_MT_ENQUEUED = 0,      // brooq_enqueued_total{topic}: rows created by enqueue/chain
	BRQ_MT_CLAIMED,           // brooq_claimed_total{topic}
	BRQ_MT_LEASE_LOST,        // brooq_lease_lost_total{topic}: heartbeat/settle found no lease
	BRQ_MT_REAPED,            // brooq_reaped_total{topic}
	BRQ_MT_RETENTION_DELETED, // brooq_retention_deleted_total{topic}
	BRQ_MT_RETRIED,           // brooq_retried_total{topic}: new jobs made by op retry
	BRQ_MT_DELETED,           // brooq_deleted_total{topic}: terminal jobs deleted by op delete
	BRQ_MT_MAX_EXECUTION,     // brooq_max_execution_exceeded_total{topic}: heartbeats refused
	BRQ_MT_QUARANTINED,       // brooq_quarantined_total{topic}: written dead by the reaper
	BRQ_MT__COUNT
} brq_topic_counter;

// Pool connection states for brooq_db_pool_connections{state}.
typedef enum brq_pool_state {
	BRQ_POOL_IDLE = 0,
	BRQ_POOL_BUSY,
	BRQ_POOL_DOWN, // not connected (reconnecting)
	BRQ_POOL__COUNT
} brq_pool_state;

// One topic's row of the periodic depth query.
typedef struct brq_depth_row {
	const char *topic; // borrowed for the duration of the call
	size_t      topic_len;
	uint64_t    count[BRQ_STATE__COUNT];
	double      oldest_ready_age_s; // 0 when nothing is ready
} brq_depth_row;

// Sets up the registry. Returns 0 or BRQ_ENOMEM. Call once before any update.
BRQ_MUSTCHECK int brq_metrics_init(const char *version);
// Frees the registry. No update may run concurrently or after.
void brq_metrics_fini(void);

// One RPC answered: counts brooq_rpc_requests_total{op,code} and observes
// brooq_rpc_duration_seconds{op} (long-poll claims that waited are observed under
// op="claim_wait" so they do not swamp the claim latency).
void brq_metrics_rpc(brq_op op, brq_status code, uint64_t duration_us, int waited);

// brooq_auth_failures_total.
void brq_metrics_auth_failure(void);
// brooq_connections_closed_total: an RPC connection closed for its peer's share
// (rpc/quota.h) or a reply it did not read.
void brq_metrics_conn_closed(void);
// brooq_quota_refused_total: a request refused `resource_exhausted` for a share.
void brq_metrics_quota_refused(void);

// brooq_settle_lookups_total{by="address"|"id"}: settled leases whose row was reached
// by the address this gateway recorded at claim or heartbeat, or by a primary-key
// probe (settled through another gateway, moved since, or an older gateway's lease).
void brq_metrics_settle_lookup(uint64_t by_address, uint64_t by_id);

// brooq_schedule_slots_total{outcome="enqueued"|"skipped"}: schedule slots whose job
// this gateway's scheduler created, and missed slots its misfire policy left out.
void brq_metrics_schedule(uint64_t enqueued, uint64_t skipped);

// brooq_requests_expired_total: work dropped or given back because its caller's
// timeout had passed.
void brq_metrics_expired(void);

// Adds n to a per-topic counter. The topic is copied on first use.
void brq_metrics_topic_add(const char *topic, size_t topic_len, brq_topic_counter c, uint64_t n);

// brooq_settle_total{topic,outcome}, n settles applied.
void brq_metrics_settle(const char *topic, size_t topic_len, brq_outcome oc, uint64_t n);

// One job claimed: brooq_claimed_total{topic}, and its wait from ready to started
// (claimed_at - available_at, ms) in the topic's wait buckets, which only the console's
// history reads (brq_metrics_history_read).
void brq_metrics_claimed(const char *topic, size_t topic_len, uint64_t wait_ms);

// brooq_dead_total{topic}: n jobs moved to `dead` (a recorded failure on the last
// attempt, or the reaper's quarantine: SPEC invariant 18). Call after commit for every
// row whose new state is dead.
void brq_metrics_dead(const char *topic, size_t topic_len, uint64_t n);

// brooq_attempt_duration_seconds (summary: _sum and _count): claim to settle.
void brq_metrics_attempt_duration(double seconds);

// brooq_db_pool_connections{state}: moves one connection between states.
void brq_metrics_pool_move(brq_pool_state from, brq_pool_state to);
void brq_metrics_pool_set(brq_pool_state st, int64_t n);

// brooq_long_polls: claims parked in a long poll right now. Either set the count
// or move it by +1/-1 as a claim parks and leaves; do not mix the two.
void brq_metrics_waiters_set(int64_t n);
void brq_metrics_waiters_add(int64_t delta);

// brooq_watches: workers' watches for cancels parked right now (rpc/watch.c), by +1/-1.
void brq_metrics_watches_add(int64_t delta);
// brooq_cancel_listener_up: 1 while the cancel listener listens (background/listener.c).
void brq_metrics_listener_up_set(int up);
// brooq_cancels_heard_total: cancels of running jobs the listener heard (any gateway's).
void brq_metrics_cancels_heard(uint64_t n);

// brooq_db_up: 1 when the monitor's last database round trip succeeded recently
// (the same verdict as /healthz), else 0. Written by monitor.c.
void brq_metrics_db_up_set(int up);

// Replaces the depth gauges brooq_jobs{topic,state} and
// brooq_ready_oldest_age_seconds{topic} with a fresh snapshot of n rows. Topics
// absent from the snapshot report 0.
void brq_metrics_depth_set(const brq_depth_row *rows, size_t n);

// brooq_jobs_estimated: 1 while the terminal counts of brooq_jobs (done, dead, canceled)
// are an estimate from a page sample (the table was too big for the monitor's budget),
// 0 when they are exact. Written by monitor.c before each brq_metrics_depth_set.
void brq_metrics_depth_estimated_set(bool estimated);

// What the console shows beside the depth gauges (no database): *at_wall_ms, the wall
// clock ms of the last brq_metrics_depth_set (0: none yet); *estimated, the flag above;
// *db_up, brooq_db_up.
void brq_metrics_depth_info(uint64_t *at_wall_ms, bool *estimated, bool *db_up);

// One topic's policy (pause and limits; 0: unlimited), for the policy gauges.
typedef struct brq_policy_row {
	const char *topic; // borrowed for the duration of the call
	size_t      topic_len;
	bool        paused;
	uint32_t    max_running, rate_per_s;
} brq_policy_row;

// Replaces the gauges brooq_topic_paused{topic}, brooq_topic_max_running{topic} and
// brooq_topic_rate_limit_per_second{topic} with a fresh snapshot of the topics that
// have a policy; the others report 0 (not paused, unlimited).
void brq_metrics_policy_set(const brq_policy_row *rows, size_t n);

// The job table's upkeep and the oldest open transaction of the database, as the
// monitor last read them (PostgreSQL's statistics, not a count of rows).
typedef struct brq_table_stats {
	uint64_t dead_tuples, live_tuples; // brooq_job_table_{dead,live}_tuples
	uint64_t bytes, index_bytes;       // brooq_job_table_size_bytes, ..._index_size_bytes
	uint64_t autovacuums;              // brooq_job_table_autovacuums_total
	double   autovacuum_age_s;         // brooq_job_table_last_autovacuum_age_seconds
	double   vacuum_age_s;             // brooq_job_table_last_vacuum_age_seconds
	double   oldest_xact_age_s;        // brooq_db_oldest_transaction_age_seconds
} brq_table_stats;

// Replaces the table gauges above with *t (copied). Until the first call they have no
// sample: no figure rather than a made-up 0.
void brq_metrics_table_set(const brq_table_stats *t);

// Renders the whole exposition (text format 0.0.4) into a malloc'd buffer.
// On success *out (NUL-terminated) and *len belong to the caller (free()).
BRQ_MUSTCHECK int brq_metrics_render(char **out, size_t *len);

// One topic's figures as the registry holds them now (metrics_topics.c): the depth
// gauges of the monitor's last round and this gateway's counters since it started.
typedef struct brq_metrics_topic_view {
	char     topic[129]; // NUL-terminated (a topic is at most 128 bytes)
	size_t   topic_len;
	uint64_t jobs[BRQ_STATE__COUNT]; // brooq_jobs{topic,state}
	double   oldest_ready_age_s;     // brooq_ready_oldest_age_seconds{topic}
	uint64_t enqueued, claimed;      // brooq_enqueued_total, brooq_claimed_total
	uint64_t settled;                // brooq_settle_total, every outcome
	uint64_t dead;                   // brooq_dead_total
} brq_metrics_topic_view;

// Every topic of the registry, sorted by topic bytes, into *out (malloc'd, caller
// frees) and *n. Never touches the database; takes the registry's locks briefly. 0 or
// BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_metrics_topics_read(brq_metrics_topic_view **out, size_t *n);

// The waits of started jobs, counted per topic in BRQ_WAIT_BUCKETS buckets: bucket i
// holds the waits w with brq_wait_bucket_le_ms[i - 1] < w <= brq_wait_bucket_le_ms[i]
// (1-2-5 steps from 1 ms to 10^8 ms, ~28 h), the last one every wait above. The layout
// is stored in job_history.wait_hist (migration 00014): changing it needs a migration.
#define BRQ_WAIT_BUCKETS 26
extern const uint64_t brq_wait_bucket_le_ms[BRQ_WAIT_BUCKETS - 1];
// The bucket of a wait of wait_ms.
unsigned brq_wait_bucket(uint64_t wait_ms);
// The q-quantile (0 < q < 1) of the waits counted in hist, interpolated linearly inside
// its bucket (so within the bucket's bounds: a 1-2-5 step); the last bucket gives its
// lower bound. -1 when hist counts nothing.
double brq_wait_quantile(const uint64_t hist[BRQ_WAIT_BUCKETS], double q);

// One topic's counters for the history (background/history.c): this gateway's since it
// started; the history writes the difference between two reads.
typedef struct brq_metrics_history_view {
	char     topic[129]; // NUL-terminated
	size_t   topic_len;
	uint64_t claimed; // brooq_claimed_total
	uint64_t settled; // brooq_settle_total, every outcome
	uint64_t wait[BRQ_WAIT_BUCKETS];
} brq_metrics_history_view;

// Every topic of the registry (in no order) into *out (malloc'd, caller frees) and *n.
// 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_metrics_history_read(brq_metrics_history_view **out, size_t *n);

#endif
