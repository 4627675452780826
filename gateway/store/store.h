// SPDX-License-Identifier: MIT
// The store: the one module that runs SQL on `job`. Plain C structs in and out; it
// owns BEGIN/COMMIT/ROLLBACK and knows each statement's result columns.
//
// A brq_store holds the statement texts (built once from the configuration) and is
// shared read-only by every connection. A brq_store_conn is one connection with its
// scratch space, used by one thread at a time (a pool thread, the janitor, the
// monitor).
//
// Results: every call returns 0 or a negative BRQ_E* code, and on failure
// brq_store_errmsg() says why in one line (never secrets):
//   BRQ_EUNAVAIL   the database is away or the transaction could not commit: retry;
//                  nothing of the call was written (a lost COMMIT is the one
//                  ambiguous case, as with any database client);
//   BRQ_ETIMEDOUT  the statement ran out of time and was canceled; nothing written;
//   BRQ_EINVAL     the database refused the data (a constraint); nothing written;
//   BRQ_ENOTFOUND  no such job;
//   BRQ_ECONFLICT  a row changed between two statements of the call; nothing
//                  written: retry;
//   BRQ_ENOMEM, BRQ_EINTERNAL.
// Borrowed outputs (brq_str fields, arrays the store fills) point into the
// connection's storage and stay valid until brq_store_reset() on that connection.
#ifndef BRQ_GATEWAY_STORE_H
#define BRQ_GATEWAY_STORE_H

#include "brq_base.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "db.h"
#include "pgarr.h"
#include "proto.h"

typedef struct brq_store brq_store;

// Builds every statement for cfg (borrowed: it must outlive the store). Returns 0
// and *out (caller frees with brq_store_free), or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_store_new(const brq_config *cfg, brq_store **out);
// NULL-safe. No connection of the store may be in use.
void brq_store_free(brq_store *st);

// ---- the schema (store_schema.c) -----------------------------------------------------

// What the migrations applied to the database (goose_db_version, as `brooqctl migrate`
// records them) mean for this build, which needs every migration that migrations/ held
// when it was built. Migrations only add (docs/operations.md, "Upgrades"), so a schema
// with newer ones serves an older gateway as well.
typedef enum brq_schema_verdict {
	BRQ_SCHEMA_OK,         // the migrations this build knows are applied, no other
	BRQ_SCHEMA_NEWER,      // those, and newer ones (a newer brooqctl migrated): served
	BRQ_SCHEMA_TOO_OLD,    // a migration this build needs is not applied: refused
	BRQ_SCHEMA_UNREADABLE, // the gateway's role may not read goose_db_version: refused
} brq_schema_verdict;

typedef struct brq_schema_state {
	brq_schema_verdict verdict;
	int64_t            have;     // the newest applied version (`brooqctl migrate version`); 0: none
	int64_t            need;     // the newest version this build knows
	int64_t            missing;  // TOO_OLD: the oldest version it needs that is not applied
	char               why[256]; // UNREADABLE: the server's message
} brq_schema_state;

// The versions this build needs, ascending, *n of them (static storage, generated from
// migrations/ when the gateway is built).
const int64_t *brq_store_schema_known(size_t *n);
// The verdict on applied[0..n) (the applied versions in any order; goose's seed row,
// version 0, is ignored), into *out.
void brq_store_schema_judge(const int64_t *applied, size_t n, brq_schema_state *out);
// Reads the database's schema on a connection of its own, closed before this returns
// (connecting and the query are each bounded by the connect timeout). Returns 0 and
// *out, or BRQ_EUNAVAIL when the database could not be asked (err gets why, one line).
BRQ_MUSTCHECK int brq_store_schema_check(const brq_store *st, brq_schema_state *out, char *err,
					 size_t errlen);
// Every connection of the store reads the schema as it connects, before it prepares a
// statement, and does not come up on one this build refuses (TOO_OLD, UNREADABLE). True
// once one of them has refused it, with what it found in *out (may be NULL): nothing of
// this build can run there, so the gateway stops. Never false again after that.
bool brq_store_schema_refused(const brq_store *st, brq_schema_state *out);

// What a connection is for: its session settings.
typedef enum brq_store_role {
	BRQ_STORE_POOL,     // requests: statement_timeout 30 s, generic plans
	BRQ_STORE_JANITOR,  // reaper and retention: as the pool
	BRQ_STORE_MONITOR,  // depth counts: read-only, statements bounded by 2 x budget_ms
	BRQ_STORE_LISTENER, // LISTENs to the cancels of running jobs (brq_store_listen); no statements
} brq_store_role;

typedef struct brq_store_conn_opts {
	const char        *name;                           // for logs ("pool-3"); borrowed
	brq_store_role     role;                           //
	uint64_t           budget_ms;                      // monitor: lock_timeout; 2x: statement_timeout
	uint64_t           backoff_min_ms, backoff_max_ms; // 0: the defaults (100 ms, 5 s)
	const atomic_bool *stop;                           // optional: ends waits within ~100 ms when set
} brq_store_conn_opts;

#define BRQ_STORE_ARRAYS 7

// One connection. Fields are the store's: callers use the functions below.
typedef struct brq_store_conn {
	brq_db           db;
	const brq_store *st;
	char             session[256];
	bool             in_tx; // a transaction of this module is open
	brq_pgarr        arr[BRQ_STORE_ARRAYS];
	brq_arena        arena; // borrowed outputs; reset by brq_store_reset
	PGresult       **kept;  // results whose strings callers borrow
	size_t           n_kept, cap_kept;
	uint64_t         deadline_ms; // statements end by then (monotonic); 0 = none of ours
} brq_store_conn;

// The session settings of pool and janitor connections (SQL, several statements): for
// tests that plan the statements as these connections do.
extern const char *const brq_store_pool_session;

// Prepares c on store st (borrowed) with the configured DSN; connects lazily.
void brq_store_conn_init(brq_store_conn *c, const brq_store *st, const brq_store_conn_opts *o);
void brq_store_conn_fini(brq_store_conn *c);
// True when the connection is usable (connecting first if needed; false at once
// while the reconnect backoff runs).
bool brq_store_ready(brq_store_conn *c);
// True when the connection is up (no attempt to connect).
bool brq_store_is_up(const brq_store_conn *c);
// Monotonic ms of the connection's last complete server answer (0: never).
uint64_t brq_store_last_answer_ms(const brq_store_conn *c);
// Why the last call failed, one line.
const char *brq_store_errmsg(const brq_store_conn *c);
// Records a failure of the store's (or its caller's, e.g. the scheduler's slot
// arithmetic) own making, not the database's, so that brq_store_errmsg() reports it;
// returns code.
int brq_store_fail(brq_store_conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// Ends a unit of work: every borrowed output of earlier calls becomes invalid, and the
// deadline is cleared.
void brq_store_reset(brq_store_conn *c);
// Bounds every statement of this unit of work (until brq_store_reset) by deadline_ms
// (monotonic; 0: none): a statement still running then is canceled (BRQ_ETIMEDOUT,
// its transaction rolled back). COMMIT is never canceled: whether it happened would
// be unknown. The caller's deadline, so that work nobody waits for stops.
void brq_store_set_deadline(brq_store_conn *c, uint64_t deadline_ms);

// ---- the job lifecycle (store.c) -------------------------------------------------

// enqueue: inserts jobs[0..n) as one atomic batch; res[i] = (id, created). A (topic,
// key) that exists returns that job's id with created = false (invariant 8). Runs
// inside an open transaction of the call's caller, or in its own.
BRQ_MUSTCHECK int brq_store_enqueue(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n,
				    brq_enqueue_result *res);

// Chained jobs a settle enqueued (borrowed), for wakes and metrics.
typedef struct brq_store_chain {
	const brq_job_spec       *jobs;
	const brq_enqueue_result *res;
	uint32_t                  n;
} brq_store_chain;

// One settle item's result.
typedef struct brq_store_settled {
	brq_settle_result r;          // id, applied, new state (the wire result)
	brq_str           topic;      // applied only: the job's topic (borrowed)
	double            attempt_s;  // applied only: seconds from claim to settle
	bool              by_address; // applied only: the row was reached by its address
				      // (store_hint.h), not by a primary-key probe
} brq_store_settled;

// settle: guarded settle of items[0..n) (still processing, same lease token), out[i]
// aligned with items. Chained jobs of applied `done` items are enqueued in the same
// transaction: if that fails, nothing is settled. *chain gets them.
BRQ_MUSTCHECK int brq_store_settle(brq_store_conn *c, const brq_settle_item *items, uint32_t n,
				   brq_store_settled *out, brq_store_chain *chain);

typedef struct brq_store_claim_in {
	const brq_str *topics;
	uint32_t       n_topics;
	uint32_t       n; // at most this many jobs
	brq_str        worker;
	bool           has_lease_ms;
	uint32_t       lease_ms;
	// Settled first, in the same transaction (a worker's "settle these, give me
	// more"); n_settle 0: none. settled[] (n_settle entries) gets the results.
	const brq_settle_item *settle;
	uint32_t               n_settle;
	brq_store_settled     *settled;
} brq_store_claim_in;

typedef struct brq_store_claim_out {
	brq_claimed_job *jobs;    // borrowed; in claim order (priority, available_at, id)
	uint64_t        *wait_ms; // borrowed, aligned with jobs: claimed_at - available_at
	uint32_t         n_jobs;
	brq_store_chain  chain; // chained jobs of the settle part
} brq_store_claim_out;

// claim: leases up to in->n ready jobs of in->topics with fresh random tokens,
// after settling in->settle, all in one transaction.
BRQ_MUSTCHECK int brq_store_claim(brq_store_conn *c, const brq_store_claim_in *in, brq_store_claim_out *out);

// enqueue_claim: inserts jobs[0..n) (as brq_store_enqueue) and claims for ins[0..k)
// (as brq_store_claim, without their settle part) in one transaction: the jobs an
// enqueue makes ready go straight to the long-polls that wait for them, for one
// commit instead of two. On failure nothing is written (res and outs unset).
BRQ_MUSTCHECK int brq_store_enqueue_claim(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n,
					  brq_enqueue_result *res, const brq_store_claim_in *ins,
					  brq_store_claim_out *outs, uint32_t k);

// unclaim: gives leases back that were committed for a reply nobody will read: the
// jobs return to `pending` with their attempt returned and their place in line kept.
// *n_returned (may be NULL) counts the leases that were still held.
BRQ_MUSTCHECK int brq_store_unclaim(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n,
				    uint32_t *n_returned);

// heartbeat: extends leases[0..n) (guarded); extended[i] aligned; *until_ms is the
// earliest new expiry among those extended (0 when none).
BRQ_MUSTCHECK int brq_store_heartbeat(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n,
				      bool has_lease_ms, uint32_t lease_ms, bool *extended,
				      int64_t *until_ms);

// lost_of: why each of leases[0..n) (which a heartbeat did not extend) is lost, and
// its job's topic (borrowed; {NULL, 0} when the job no longer exists: reason GONE).
BRQ_MUSTCHECK int brq_store_lost_of(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n,
				    brq_lost_reason *reasons, brq_str *topics);

// ---- admin, janitor, monitor (store_reads.c) ---------------------------------------

// Topics of jobs ids[0..n) that exist (for lost-lease metrics): *topics borrowed.
BRQ_MUSTCHECK int brq_store_topics_of(brq_store_conn *c, const uint64_t *ids, uint32_t n, brq_str **topics,
				      uint32_t *n_topics);

// cancel: a pending, failed or processing job becomes canceled; a terminal job is
// reported as it is. *topic (borrowed) is the job's. BRQ_ENOTFOUND when no such job.
BRQ_MUSTCHECK int brq_store_cancel(brq_store_conn *c, uint64_t id, brq_cancel_rep *out, brq_str *topic);

// job: the job's row with its attempts' errors (has_errors; strings borrowed). BRQ_ENOTFOUND
// when no such job.
BRQ_MUSTCHECK int brq_store_job(brq_store_conn *c, uint64_t id, brq_job_info *out);

// ---- the operators' list, retry, delete (store_jobs.c) --------------------------------

// list: one page of q (at most q->limit rows, newest first) into *jobs (borrowed);
// *more is true when rows follow it (their page starts below the last id).
BRQ_MUSTCHECK int brq_store_list(brq_store_conn *c, const brq_list_req *q, brq_job_info **jobs, uint32_t *n,
				 bool *more);

typedef struct brq_store_retried {
	uint64_t *ids;     // borrowed: the retries' ids (new, or the one that existed)
	uint32_t  n_ids;   //
	uint32_t  retried; // how many this call created
	brq_state state;   // one job: its state (not dead or canceled: nothing done, n_ids 0)
	brq_str   topic;   // one job: its topic (borrowed)
} brq_store_retried;

// retry: q->id > 0: that job (BRQ_ENOTFOUND; BRQ_ECONFLICT when another call retried
// it at the same moment: retry the call); else up to q->limit jobs of q->topic in
// q->state, oldest first, those retried already skipped. Retries are new jobs.
BRQ_MUSTCHECK int brq_store_retry(brq_store_conn *c, const brq_retry_req *q, brq_store_retried *out);

// delete: removes a terminal job (*deleted true). Another job is left alone:
// *deleted false and *state its state. BRQ_ENOTFOUND when no such job. *topic borrowed.
BRQ_MUSTCHECK int brq_store_delete(brq_store_conn *c, uint64_t id, bool *deleted, brq_state *state,
				   brq_str *topic);

// stats: counts per topic and state and oldest ready age, by topic (borrowed).
BRQ_MUSTCHECK int brq_store_stats(brq_store_conn *c, brq_topic_stats **topics, uint32_t *n);

// One lease the reaper took back.
typedef struct brq_store_reaped {
	brq_str topic;          // borrowed
	bool    is_quarantined; // the job's max_lost_leases-th: written `dead` (invariant 18)
} brq_store_reaped;

// reap: one batch of at most `batch` expired leases back to pending, or to dead for
// the jobs that reached their topic's max_lost_leases; *rows (borrowed) has one entry
// per lease taken back.
BRQ_MUSTCHECK int brq_store_reap(brq_store_conn *c, uint32_t batch, brq_store_reaped **rows, uint32_t *n);

// retention: deletes one batch of at most `batch` terminal jobs last updated more
// than ttl_ms ago, oldest first; *topics (borrowed) has one entry per job deleted.
BRQ_MUSTCHECK int brq_store_retention(brq_store_conn *c, uint64_t ttl_ms, uint32_t batch, brq_str **topics,
				      uint32_t *n);
// retention lag: *lag_ms, how long past ttl_ms the oldest terminal job is (0: none has
// expired), i.e. how far behind retention is.
BRQ_MUSTCHECK int brq_store_retention_lag(brq_store_conn *c, uint64_t ttl_ms, int64_t *lag_ms);

// span map (migration 00015): one pass of the topics' spans of ids, mapping at most
// max_ids ids. *mapped: the mark after it (every job with id <= mapped has its span);
// *cand: the id it moves to next; -1 when none, or (both) when the pass had nothing to
// do or another gateway's pass held the mark.
BRQ_MUSTCHECK int brq_store_span_map(brq_store_conn *c, uint64_t max_ids, int64_t *mapped, int64_t *cand);
// span prune: drops the spans below the oldest job.
BRQ_MUSTCHECK int brq_store_span_prune(brq_store_conn *c);

// One (topic, state) count of the monitor.
typedef struct brq_store_depth_row {
	brq_str   topic;
	brq_state state;
	uint64_t  count;
	double    ready_age_s; // active rows: age of the oldest ready job; else 0
} brq_store_depth_row;

typedef enum brq_store_depth_kind {
	BRQ_DEPTH_ACTIVE,   // pending, failed (with ages), processing
	BRQ_DEPTH_TERMINAL, // done, dead, canceled: exact when sample_pct >= 100
} brq_store_depth_kind;

// depth: the monitor's counts, ordered by topic (borrowed). With sample_pct < 100 the
// terminal counts are an estimate over that percentage of pages, scaled up.
BRQ_MUSTCHECK int brq_store_depth(brq_store_conn *c, brq_store_depth_kind kind, double sample_pct,
				  brq_store_depth_row **rows, size_t *n);

// The job table's upkeep as PostgreSQL's statistics see it, and what holds vacuum
// back: the monitor's vacuum gauges (docs/operations.md, section 6).
typedef struct brq_store_table_figures {
	int64_t dead_tuples, live_tuples; // pg_stat_user_tables estimates
	int64_t bytes;                    // table, its indexes and TOAST
	int64_t index_bytes;              // its indexes alone
	double  autovacuum_age_s;         // since the last autovacuum (or the server's start)
	double  vacuum_age_s;             // since the last manual VACUUM (or the server's start)
	int64_t autovacuums;              // autovacuum runs on it since the statistics began
	double  oldest_xact_age_s;        // oldest transaction holding a snapshot or an id; 0: none
} brq_store_table_figures;

// table_stats: reads PostgreSQL's statistics and file sizes (never a row of job), so
// its cost does not grow with the table. 0 or the store's failure.
BRQ_MUSTCHECK int brq_store_table_stats(brq_store_conn *c, brq_store_table_figures *out);

// ---- the console's history and workers (store_history.c, migration 00014) -------------

// Most buckets of a waits' histogram the store carries (metrics.h BRQ_WAIT_BUCKETS).
#define BRQ_STORE_WAIT_MAX 32

// What one gateway counted of a topic since its last write.
typedef struct brq_store_history_count {
	brq_str         topic; // a valid topic
	uint64_t        started, finished;
	const uint64_t *wait; // n_wait buckets (borrowed); NULL: no start counted
	uint32_t        n_wait;
} brq_store_history_count;

// history_add: adds rows[0..n) (sorted by topic bytes, each topic once) to the rows of
// the minute starting at minute_ms (unix ms), one statement.
BRQ_MUSTCHECK int brq_store_history_add(brq_store_conn *c, int64_t minute_ms,
					const brq_store_history_count *rows, uint32_t n);
// history_depth: writes the backlog per topic now into the minute's rows.
BRQ_MUSTCHECK int brq_store_history_depth(brq_store_conn *c, int64_t minute_ms);
// history_prune: deletes the minutes older than keep_ms; *deleted how many rows.
BRQ_MUSTCHECK int brq_store_history_prune(brq_store_conn *c, uint64_t keep_ms, uint32_t *deleted);

// One minute of one topic.
typedef struct brq_store_history_row {
	int64_t  minute_ms;
	uint64_t started, finished;
	bool     has_depth; // the backlog was counted in this minute
	uint64_t pending, ready;
	uint64_t wait[BRQ_STORE_WAIT_MAX];
	uint32_t n_wait; // 0: no start counted
} brq_store_history_row;

// history_read: the rows of topic in [from_ms, to_ms), oldest first (in c's arena).
BRQ_MUSTCHECK int brq_store_history_read(brq_store_conn *c, brq_str topic, int64_t from_ms, int64_t to_ms,
					 brq_store_history_row **rows, uint32_t *n);

// One holder of leases (the locked_by a worker claims with).
typedef struct brq_store_worker {
	brq_str  name; // borrowed
	uint64_t jobs, expired;
	int64_t  oldest_claim_ms, last_beat_ms, lease_until_ms;
	brq_str  topics; // borrowed: the first 8, space-separated
	uint32_t n_topics;
} brq_store_worker;

// workers: the holders of processing jobs, by name, at most limit (borrowed).
BRQ_MUSTCHECK int brq_store_workers(brq_store_conn *c, uint32_t limit, brq_store_worker **out, uint32_t *n);
// worker_jobs: the processing jobs worker holds, oldest claim first, at most limit.
BRQ_MUSTCHECK int brq_store_worker_jobs(brq_store_conn *c, brq_str worker, uint32_t limit,
					brq_job_info **jobs, uint32_t *n);

// ---- per-topic policy (store_policy.c) -------------------------------------------

typedef enum brq_policy_change {
	BRQ_POLICY_PAUSE = 0,
	BRQ_POLICY_RESUME,
	BRQ_POLICY_LIMITS,
} brq_policy_change;

typedef struct brq_store_policy_in {
	brq_policy_change what;
	brq_str           topic;       // a valid topic
	bool              set_max;     // LIMITS: change max_running
	uint32_t          max_running; // 0: unlimited
	bool              set_rate;    // LIMITS: change rate_per_s
	uint32_t          rate_per_s;  // 0: unlimited
} brq_store_policy_in;

// policy_set: pauses, resumes or sets limits of a topic (one transaction); *out
// (borrowed) is the topic's policy after it. A topic left without pause or limits
// has no row any more. This gateway's claims see it at once, others within one
// poll interval.
BRQ_MUSTCHECK int brq_store_policy_set(brq_store_conn *c, const brq_store_policy_in *in,
				       brq_topic_policy *out);
// policy_list: every topic with a policy, by topic, with its jobs processing now
// (borrowed).
BRQ_MUSTCHECK int brq_store_policy_list(brq_store_conn *c, brq_topic_policy **out, uint32_t *n);
// Writes the limits configured per topic (BROOQ_TOPIC_OVERRIDES concurrency, rate)
// into topic_policy, each topic in its own transaction; only the limits configured
// change. 0 or the first failure.
BRQ_MUSTCHECK int brq_store_policy_configure(brq_store_conn *c);
// True when topic has a policy as far as st's cache knows (never reads the database).
bool brq_store_policy_known(const brq_store *st, brq_str topic);
// Makes the next claim of any connection of st read topic_policy again.
void brq_store_policy_invalidate(const brq_store *st);

// ping: one round trip (SELECT 1).
BRQ_MUSTCHECK int brq_store_ping(brq_store_conn *c);

// ---- the cancels of running jobs (store_listen.c) --------------------------------------

// The channel a cancel of a running job is announced on (payload "<id> <topic>", sent
// at the cancel's commit): every gateway's listener hears every gateway's cancels.
#define BRQ_STORE_CANCEL_CHANNEL "brooq_cancel"

// One announced cancel: job id and topic (borrowed for the call).
typedef void brq_store_cancel_fn(void *arg, uint64_t id, const char *topic, size_t topic_len);

// listen: on a BRQ_STORE_LISTENER connection (which LISTENs from its connect on, see
// brq_store_connects), waits up to wait_ms for announced cancels and hands each to fn, in
// the order the server sent them. Then, when none came or `prove`, proves that the
// connection hears the channel: an echo, a NOTIFY of its own that a listening session
// hears within the round trip (*echo 1; 0 when it did not: the session does not listen,
// e.g. behind a pooler in transaction mode; -1: not tried). Returns 0 (also when
// stopping), or BRQ_EUNAVAIL when the connection was lost: what was announced since is
// lost with it, and the next connection starts listening anew.
BRQ_MUSTCHECK int brq_store_listen(brq_store_conn *c, uint64_t wait_ms, bool prove, brq_store_cancel_fn *fn,
				   void *arg, int *echo);
// How many times c has connected: a new value means a new LISTEN, and announcements
// between the two connections were not heard.
uint64_t brq_store_connects(const brq_store_conn *c);

// ---- schedules (store_schedule.c) ------------------------------------------------------

// A due schedule, locked by brq_store_sched_due (strings borrowed).
typedef struct brq_store_due {
	brq_schedule s;
	int64_t      now_ms; // the transaction's now()
} brq_store_due;

// sched_due: opens a transaction and locks the earliest enabled schedule whose
// next slot has come (SKIP LOCKED: one held by another gateway is passed over).
// Returns 0 with *found and *out; when !*found the transaction is already closed.
// With *found the caller enqueues (brq_store_enqueue joins the transaction), then
// ends it with brq_store_sched_advance, or brq_store_sched_abort.
BRQ_MUSTCHECK int brq_store_sched_due(brq_store_conn *c, bool *found, brq_store_due *out);
// sched_advance: sets the locked schedule's next slot (next_ms < 0: it has none,
// the schedule is disabled) and last slot (last_ms < 0: unchanged), and commits.
BRQ_MUSTCHECK int brq_store_sched_advance(brq_store_conn *c, brq_str name, int64_t next_ms, int64_t last_ms);
// Rolls back the transaction of brq_store_sched_due.
void brq_store_sched_abort(brq_store_conn *c);
// sched_disable: outside any transaction, disables schedule `name` (no next slot).
BRQ_MUSTCHECK int brq_store_sched_disable(brq_store_conn *c, brq_str name);

// sched_tz: the instants utc_ms[i] of local seconds local[0..n) in zone tz (exists[i]
// false: the zone skips that wall-clock time). BRQ_EINVAL for an unknown zone.
BRQ_MUSTCHECK int brq_store_sched_tz(brq_store_conn *c, brq_str tz, const int64_t *local, uint32_t n,
				     int64_t *utc_ms, bool *exists);
// sched_zone_now: the database's now (unix ms), and now and instant at_ms on the wall
// clock of zone tz (local seconds, cron.h). BRQ_EINVAL (errmsg names the zone) when
// PostgreSQL does not know tz (in a transaction, that aborts it).
BRQ_MUSTCHECK int brq_store_sched_zone_now(brq_store_conn *c, brq_str tz, int64_t at_ms, int64_t *now_ms,
					   int64_t *local_now, int64_t *local_at);
// sched_upsert: inserts or replaces schedule s (fields as schedule_add's, already
// checked) owing next_ms first; from_config marks where it came from. A replacement
// with the same cron, tz and every_ms keeps the slot the old row owed. *created says
// whether the row is new, *owed (may be NULL) the slot the row owes now (unix ms).
BRQ_MUSTCHECK int brq_store_sched_upsert(brq_store_conn *c, const brq_schedule *s, int64_t next_ms,
					 bool from_config, bool *created, int64_t *owed);
// sched_list: every schedule, by name (borrowed).
BRQ_MUSTCHECK int brq_store_sched_list(brq_store_conn *c, brq_schedule **out, uint32_t *n);
// sched_remove: deletes schedule `name`; BRQ_ENOTFOUND when there is none. Jobs it
// enqueued stay.
BRQ_MUSTCHECK int brq_store_sched_remove(brq_store_conn *c, brq_str name);

#endif
