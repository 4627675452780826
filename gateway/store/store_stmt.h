// SPDX-License-Identifier: MIT
// The store's statements (internal to store*.c): their names, the result columns of
// each, and the one way a statement's text is written around its columns.
//
// Each statement's result columns are an X-macro list of (enum name, SQL expression).
// store_sql*.c write the statement's select or RETURNING list from that very list, and
// store*.c read columns by the enum: reordering or adding a column changes both.
#ifndef BRQ_GATEWAY_STORE_STMT_H
#define BRQ_GATEWAY_STORE_STMT_H

#include <stddef.h>
#include <stdio.h>

typedef enum brq_stmt {
	BRQ_STMT_ENQUEUE = 0,
	BRQ_STMT_ENQUEUE_LOOKUP,
	BRQ_STMT_CLAIM,
	BRQ_STMT_HEARTBEAT,
	BRQ_STMT_SETTLE,
	BRQ_STMT_SETTLE_AT, // settle: rows reached by their address (store_hint.h)
	BRQ_STMT_UNCLAIM,
	BRQ_STMT_TOPICS_OF,
	BRQ_STMT_CANCEL,
	BRQ_STMT_JOB,
	BRQ_STMT_STATS,
	BRQ_STMT_REAP,
	BRQ_STMT_RETENTION,
	BRQ_STMT_DEPTH_ACTIVE,
	BRQ_STMT_DEPTH_TERMINAL,
	BRQ_STMT_DEPTH_TERMINAL_SAMPLE,
	BRQ_STMT_TABLE_STATS,
	BRQ_STMT_CLAIM_POLICY,
	BRQ_STMT_CLAIM_MULTI,
	BRQ_STMT_POLICY_LOCK,
	BRQ_STMT_POLICY_TOPICS,
	BRQ_STMT_POLICY_SET,
	BRQ_STMT_POLICY_PRUNE,
	BRQ_STMT_POLICY_LIST,
	BRQ_STMT_LIST_ALL,   // list: no topic, no state
	BRQ_STMT_LIST_STATE, // list: states, no topic
	BRQ_STMT_LIST_TOPIC, // list: a topic
	BRQ_STMT_LIST_KEY,   // list: a topic and a key
	BRQ_STMT_RETRY_ONE,
	BRQ_STMT_RETRY_BULK,
	BRQ_STMT_DELETE,
	BRQ_STMT_LOST_OF,
	BRQ_STMT_SCHED_DUE,
	BRQ_STMT_SCHED_TZ,
	BRQ_STMT_SCHED_ZONE_NOW,
	BRQ_STMT_SCHED_ADVANCE,
	BRQ_STMT_SCHED_UPSERT,
	BRQ_STMT_SCHED_LIST,
	BRQ_STMT_SCHED_REMOVE,
	BRQ_STMT_HISTORY_ADD,   // the console's history (store_history.c, migration 00014)
	BRQ_STMT_HISTORY_DEPTH, //
	BRQ_STMT_HISTORY_PRUNE, //
	BRQ_STMT_HISTORY_READ,  //
	BRQ_STMT_WORKERS,       // the console's workers: leases held, by holder
	BRQ_STMT_WORKER_JOBS,   // ... and one holder's jobs
	BRQ_STMT_SPAN_MAP,      // the topics' spans of ids (migration 00015): one janitor pass
	BRQ_STMT_SPAN_PRUNE,    // ... and the spans below the oldest job dropped
	BRQ_STMT_RETENTION_LAG, // how long past its expiry the oldest terminal row is
	BRQ_STMT__COUNT
} brq_stmt;

#define BRQ_COL_ENUM(name, expr) name,

// enqueue: one row per input job, in input order.
#define ENQ_COLS(X)         \
	X(ENQ_ID, "ins.id") \
	X(ENQ_CREATED, "ins.id IS NOT NULL")
enum enq_col { ENQ_COLS(BRQ_COL_ENUM) ENQ__N };

// enqueue lookup: ids of existing keyed jobs by their position among the asked keys.
#define LOOKUP_COLS(X)         \
	X(LOOKUP_ORD, "i.ord") \
	X(LOOKUP_ID, "j.id")
enum lookup_col { LOOKUP_COLS(BRQ_COL_ENUM) LOOKUP__N };

// A timestamp as Unix milliseconds, on the rows of the hot path (claim, heartbeat,
// settle): date_part() computes in float8, extract() in numeric, which cost 0.13 µs
// per value against 0.04 (1M rows in SQL), three values per job. The float8 is
// within a fraction of a microsecond of the exact value, so the millisecond is the
// same but on an exact half millisecond, which may round to even rather than up (in
// 2M random timestamps: 1,035 differed, all halves). Other statements keep extract().
#define HOT_MS(ts) "(date_part('epoch', " ts ") * 1000)::int8"

// claim: one row per job leased.
#define CLAIM_COLS(X)                                      \
	X(CLAIM_ID, "j.id")                                \
	X(CLAIM_TOPIC, "j.topic")                          \
	X(CLAIM_PAYLOAD, "j.payload::text")                \
	X(CLAIM_ATTEMPTS, "j.attempts")                    \
	X(CLAIM_MAX_ATTEMPTS, "j.max_attempts")            \
	X(CLAIM_TOKEN_INDEX, "c.k")                        \
	X(CLAIM_LOCKED_UNTIL_MS, HOT_MS("j.locked_until")) \
	X(CLAIM_CREATED_MS, HOT_MS("j.created_at"))        \
	X(CLAIM_LOC, "j.ctid")                             \
	X(CLAIM_WAIT_MS, HOT_MS("j.claimed_at - j.available_at"))
enum claim_col { CLAIM_COLS(BRQ_COL_ENUM) CLAIM__N };

// heartbeat: one row per lease extended.
#define HB_COLS(X)                                      \
	X(HB_ID, "j.id")                                \
	X(HB_LOCKED_UNTIL_MS, HOT_MS("j.locked_until")) \
	X(HB_LOC, "j.ctid")
enum hb_col { HB_COLS(BRQ_COL_ENUM) HB__N };

// settle: one row per item applied.
#define SETTLE_COLS(X)             \
	X(SETTLE_ID, "j.id")       \
	X(SETTLE_STATE, "j.state") \
	X(SETTLE_TOPIC, "j.topic") \
	X(SETTLE_ATTEMPT_S, "date_part('epoch', now() - j.claimed_at)")
enum settle_col { SETTLE_COLS(BRQ_COL_ENUM) SETTLE__N };

// unclaim (leases given back): one row per lease returned.
#define UNCLAIM_COLS(X)       \
	X(UNCLAIM_ID, "j.id") \
	X(UNCLAIM_TOPIC, "j.topic")
enum unclaim_col { UNCLAIM_COLS(BRQ_COL_ENUM) UNCLAIM__N };

// topics of jobs (metrics of lost leases); retention: one row per job.
#define TOPIC_COLS(X) X(TOPIC_TOPIC, "j.topic")
enum topic_col { TOPIC_COLS(BRQ_COL_ENUM) TOPIC__N };

// reap: one row per lease taken back; quarantined: this one wrote `dead` (invariant 18).
#define REAP_COLS(X)             \
	X(REAP_TOPIC, "j.topic") \
	X(REAP_QUARANTINED, "j.state = 'dead'")
enum reap_col { REAP_COLS(BRQ_COL_ENUM) REAP__N };

// lost_of (heartbeat leases found lost): one row per job that exists, with why.
#define LOST_COLS(X)                                                           \
	X(LOST_ORD, "l.ord")                                                   \
	X(LOST_TOPIC, "j.topic")                                               \
	X(LOST_REASON,                                                         \
	  "CASE WHEN j.state = 'canceled' THEN 'canceled' WHEN j.lease_token " \
	  "= l.token THEN 'max_execution' ELSE 'gone' END")
enum lost_col { LOST_COLS(BRQ_COL_ENUM) LOST__N };

// cancel: exactly one row when the job exists.
#define CANCEL_COLS(X)                 \
	X(CANCEL_STATE, "state")       \
	X(CANCEL_CANCELED, "canceled") \
	X(CANCEL_TOPIC, "topic")
enum cancel_col { CANCEL_COLS(BRQ_COL_ENUM) CANCEL__N };

// A timestamp as Unix milliseconds, exact: extract() computes in numeric, and the cast
// rounds to the nearest millisecond, a half away from zero. What `job` and `list` report,
// and what the list's time filters compare (store_sql_jobs.c), so that a job reported
// at created_at_ms T is one created at or after T and not before T.
#define JOB_MS(ts) "(extract(epoch FROM " ts ") * 1000)::int8"

// job: the whole row.
#define JOB_COLS(X)                                    \
	X(JOB_ID, "id")                                \
	X(JOB_TOPIC, "topic")                          \
	X(JOB_PAYLOAD, "payload::text")                \
	X(JOB_STATE, "state")                          \
	X(JOB_ATTEMPTS, "attempts")                    \
	X(JOB_MAX_ATTEMPTS, "max_attempts")            \
	X(JOB_AVAILABLE_MS, JOB_MS("available_at"))    \
	X(JOB_LOCKED_BY, "locked_by")                  \
	X(JOB_LOCKED_UNTIL_MS, JOB_MS("locked_until")) \
	X(JOB_LAST_ERROR, "last_error")                \
	X(JOB_KEY, "idempotency_key")                  \
	X(JOB_CREATED_MS, JOB_MS("created_at"))        \
	X(JOB_UPDATED_MS, JOB_MS("updated_at"))        \
	X(JOB_PRIORITY, "priority")                    \
	X(JOB_RESULT, "result::text")                  \
	X(JOB_RETRY_OF, "retry_of")                    \
	X(JOB_CLAIMED_MS, JOB_MS("claimed_at"))        \
	X(JOB_LOST_LEASES, "lost_leases")
enum job_col { JOB_COLS(BRQ_COL_ENUM) JOB__N };

// job (by id) only, after the row's columns: the attempts' errors (migration 00013) as
// one text, "<attempt> <at_ms> <bytes>:<error>" per entry, oldest first: the length says
// where each error ends, so there is no escaping to undo (store_reads.c read_errors).
// NULL when none. Not in the list's rows: up to 10 x 4 KB each, for a page of 200.
#define JOB_ERRORS_COL                                                                                    \
	"(SELECT string_agg(concat(e->>'attempt', ' ', e->>'at_ms', ' ', octet_length(e->>'error'), ':'," \
	" e->>'error'), '' ORDER BY o) FROM jsonb_array_elements(errors) WITH ORDINALITY AS x(e, o))"
enum { JOB_ERRORS = JOB__N };

// stats: one row per topic; the counts in brq_state order.
#define STATS_COLS(X)                                                             \
	X(STATS_TOPIC, "topic")                                                   \
	X(STATS_PENDING, "count(*) FILTER (WHERE state = 'pending')")             \
	X(STATS_PROCESSING, "count(*) FILTER (WHERE state = 'processing')")       \
	X(STATS_FAILED, "count(*) FILTER (WHERE state = 'failed')")               \
	X(STATS_DONE, "count(*) FILTER (WHERE state = 'done')")                   \
	X(STATS_DEAD, "count(*) FILTER (WHERE state = 'dead')")                   \
	X(STATS_CANCELED, "count(*) FILTER (WHERE state = 'canceled')")           \
	X(STATS_OLDEST_READY_MS,                                                  \
	  "coalesce((extract(epoch FROM now() - min(available_at) FILTER (WHERE " \
	  "state IN ('pending', 'failed') AND available_at <= now())) * 1000)::int8, 0)")
enum stats_col { STATS_COLS(BRQ_COL_ENUM) STATS__N };

// depth (monitor): one row per (topic, state) present; active rows carry the oldest
// ready age, terminal rows 0.
#define DEPTH_COLS(X)                                                                                     \
	X(DEPTH_TOPIC, "topic")                                                                           \
	X(DEPTH_STATE, "state")                                                                           \
	X(DEPTH_COUNT, "count(*)")                                                                        \
	X(DEPTH_AGE_S,                                                                                    \
	  "coalesce(extract(epoch FROM now() - min(available_at) FILTER (WHERE available_at <= now())), " \
	  "0)::float8")
enum depth_col { DEPTH_COLS(BRQ_COL_ENUM) DEPTH__N };

// table stats (the monitor's vacuum gauges): one row about `job` (t: to_regclass, so
// that a table made again after the PREPARE is still found; s: its pg_stat_user_tables
// row) and the open transactions of this database. A table never vacuumed since the
// server started counts from the start (a lower bound: statistics before a crash are
// lost). The oldest transaction: snapshots and transaction ids held, which keep
// vacuum from removing row versions (autovacuum workers' own are ignored by other
// vacuums, and the monitor's is its own), and prepared transactions.
#define TABLE_AGE(ts) "extract(epoch FROM now() - coalesce(" ts ", pg_postmaster_start_time()))::float8"
#define TABLE_COLS(X)                                                                       \
	X(TABLE_DEAD_TUPLES, "coalesce(s.n_dead_tup, 0)")                                   \
	X(TABLE_LIVE_TUPLES, "coalesce(s.n_live_tup, 0)")                                   \
	X(TABLE_BYTES, "coalesce(pg_total_relation_size(t.oid), 0)")                        \
	X(TABLE_INDEX_BYTES, "coalesce(pg_indexes_size(t.oid), 0)")                         \
	X(TABLE_AUTOVACUUM_AGE_S, TABLE_AGE("s.last_autovacuum"))                           \
	X(TABLE_VACUUM_AGE_S, TABLE_AGE("s.last_vacuum"))                                   \
	X(TABLE_AUTOVACUUMS, "coalesce(s.autovacuum_count, 0)")                             \
	X(TABLE_OLDEST_XACT_S,                                                              \
	  "(SELECT greatest(coalesce(extract(epoch FROM now() - min(x.at)), 0), 0)::float8" \
	  " FROM (SELECT a.xact_start FROM pg_stat_activity a"                              \
	  " WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"             \
	  " AND a.backend_type <> 'autovacuum worker'"                                      \
	  " AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)"                  \
	  " UNION ALL SELECT p.prepared FROM pg_prepared_xacts p"                           \
	  " WHERE p.database = current_database()) x(at))")
enum table_col { TABLE_COLS(BRQ_COL_ENUM) TABLE__N };

// topic policy (set, list): one row per topic with a policy; limits 0 = unlimited.
#define POLICY_COLS(X)                                          \
	X(POLICY_TOPIC, "p.topic")                              \
	X(POLICY_PAUSED, "p.paused")                            \
	X(POLICY_MAX_RUNNING, "coalesce(p.max_running, 0)")     \
	X(POLICY_RATE_PER_S, "coalesce(p.rate_per_s, 0)")       \
	X(POLICY_RUNNING,                                       \
	  "(SELECT count(*) FROM job r WHERE r.topic = p.topic" \
	  " AND r.state = 'processing')")
enum policy_col { POLICY_COLS(BRQ_COL_ENUM) POLICY__N };

// list: the rows as JOB_COLS. retry (one job): exactly one row when the job exists.
#define RETRY_COLS(X)             \
	X(RETRY_STATE, "o.state") \
	X(RETRY_TOPIC, "o.topic") \
	X(RETRY_NEW_ID, "ins.id") \
	X(RETRY_EXISTING_ID, "o.existing")
enum retry_col { RETRY_COLS(BRQ_COL_ENUM) RETRY__N };

// retry (bulk): one row per job created.
#define RETRIED_COLS(X) X(RETRIED_ID, "id")
enum retried_col { RETRIED_COLS(BRQ_COL_ENUM) RETRIED__N };

// delete: exactly one row when the job exists.
#define DELETE_COLS(X)               \
	X(DELETE_DELETED, "deleted") \
	X(DELETE_STATE, "state")     \
	X(DELETE_TOPIC, "topic")
enum delete_col { DELETE_COLS(BRQ_COL_ENUM) DELETE__N };

// schedules (store_schedule.c): one row per schedule, listed or locked as due. Local
// times are "local seconds" (cron.h): the zone's wall clock read as if it were UTC.
#define SCHED_COLS(X)                                                                   \
	X(SCHED_NAME, "s.name")                                                         \
	X(SCHED_TOPIC, "s.topic")                                                       \
	X(SCHED_PAYLOAD, "s.payload::text")                                             \
	X(SCHED_CRON, "s.cron")                                                         \
	X(SCHED_TZ, "s.tz")                                                             \
	X(SCHED_EVERY_MS, "s.every_ms")                                                 \
	X(SCHED_CATCH_UP, "s.misfire = 'catch_up'")                                     \
	X(SCHED_CATCH_UP_MAX, "s.catch_up_max")                                         \
	X(SCHED_MAX_ATTEMPTS, "coalesce(s.max_attempts, 0)")                            \
	X(SCHED_ENABLED, "s.enabled")                                                   \
	X(SCHED_NEXT_MS, "coalesce((extract(epoch FROM s.next_slot) * 1000)::int8, 0)") \
	X(SCHED_LAST_MS, "coalesce((extract(epoch FROM s.last_slot) * 1000)::int8, 0)") \
	X(SCHED_SOURCE, "s.source")                                                     \
	X(SCHED_NOW_MS, "(extract(epoch FROM now()) * 1000)::int8")
enum sched_col { SCHED_COLS(BRQ_COL_ENUM) SCHED__N };

// local seconds to instants in a zone: one row per input, in input order; `exists`
// is false for a wall-clock time the zone skips (DST gap).
#define TZ_COLS(X)                                             \
	X(TZ_UTC_MS, "(extract(epoch FROM t.u) * 1000)::int8") \
	X(TZ_EXISTS, "(t.u AT TIME ZONE $2) = t.l")
enum tz_col { TZ_COLS(BRQ_COL_ENUM) TZ__N };

// now, and now and instant $2 (ms) on the wall clock of zone $1 (an unknown zone
// fails the statement: class 22).
#define ZNOW_COLS(X)                                                            \
	X(ZNOW_MS, "(extract(epoch FROM now()) * 1000)::int8")                  \
	X(ZNOW_LOCAL, "floor(extract(epoch FROM now() AT TIME ZONE $1))::int8") \
	X(ZNOW_LOCAL_AT, "floor(extract(epoch FROM to_timestamp($2::int8 / 1000.0) AT TIME ZONE $1))::int8")
enum znow_col { ZNOW_COLS(BRQ_COL_ENUM) ZNOW__N };

// history (store_history.c): one row per minute of one topic, oldest first. The
// backlog is NULL in a minute no count was written for; the waits' histogram the
// buckets of metrics.h as "n,n,...", empty when no job started.
#define HIST_COLS(X)                          \
	X(HIST_MINUTE_MS, JOB_MS("h.minute")) \
	X(HIST_STARTED, "h.started")          \
	X(HIST_FINISHED, "h.finished")        \
	X(HIST_PENDING, "h.pending")          \
	X(HIST_READY, "h.ready")              \
	X(HIST_WAIT, "array_to_string(coalesce(h.wait_hist, '{}'), ',')")
enum hist_col { HIST_COLS(BRQ_COL_ENUM) HIST__N };

// workers: one row per lease holder (locked_by) of processing jobs. last_beat: the
// latest locked_until less its topic's lease, when the holder last claimed or
// heartbeated (approximately: a worker may ask a lease of its own); expired: leases run
// out, waiting for the reaper; topics: the first few, space-separated.
#define WORKER_COLS(X)                                                         \
	X(WORKER_NAME, "w.locked_by")                                          \
	X(WORKER_JOBS, "w.jobs")                                               \
	X(WORKER_EXPIRED, "w.expired")                                         \
	X(WORKER_OLDEST_CLAIM_MS, "coalesce(" JOB_MS("w.oldest_claim") ", 0)") \
	X(WORKER_LAST_BEAT_MS, JOB_MS("w.last_beat"))                          \
	X(WORKER_LEASE_UNTIL_MS, JOB_MS("w.lease_until"))                      \
	X(WORKER_TOPICS, "array_to_string(w.topics[1:8], ' ')")                \
	X(WORKER_N_TOPICS, "cardinality(w.topics)")
enum worker_col { WORKER_COLS(BRQ_COL_ENUM) WORKER__N };

// span map: the mark after the pass (every job with id <= mapped has its span) and
// the candidate it moves to next (NULL: none).
#define SPAN_COLS(X)               \
	X(SPAN_MAPPED, "t.mapped") \
	X(SPAN_CAND, "t.cand")
enum span_col { SPAN_COLS(BRQ_COL_ENUM) SPAN__N };

// The expressions of a column list, for an array: {JOB_COLS(BRQ_COL_EXPR)}.
#define BRQ_COL_EXPR(name, expr) expr,
// An array of column expressions as (pointer, count), for brq_sql_text.
#define BRQ_COLS(a) (a), sizeof(a) / sizeof((a)[0])

// A statement text that is fixed: head, the result columns "e1, e2, ...", tail.
typedef struct brq_sql_text {
	const char        *head;
	const char *const *cols; // column expressions (BRQ_COLS)
	size_t             ncols;
	const char        *tail; // NULL: none
} brq_sql_text;

// Writes the column list "e1, e2, ..." of c[0..n).
void brq_store_sql_cols(FILE *f, const char *const *c, size_t n);
// Writes t: its head, its columns, its tail.
void brq_store_sql_text(FILE *f, const brq_sql_text *t);

#endif
