// SPDX-License-Identifier: MIT
// The store's statements (internal to store*.c): names, parameters, and the result
// columns of each, declared once so that the SQL and the code reading it cannot drift.
//
// Each statement's result columns are an X-macro list of (enum name, SQL expression).
// store_sql.c writes the statement's select or RETURNING list from that very list, and
// store*.c reads columns by the enum: reordering or adding a column changes both.
#ifndef BRQ_GATEWAY_STORE_SQL_H
#define BRQ_GATEWAY_STORE_SQL_H

#include "brq_base.h"

#include "config.h"
#include "db.h"

typedef enum brq_stmt {
	BRQ_STMT_ENQUEUE = 0,
	BRQ_STMT_ENQUEUE_LOOKUP,
	BRQ_STMT_CLAIM,
	BRQ_STMT_HEARTBEAT,
	BRQ_STMT_SETTLE,
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
	BRQ_STMT_LIST_ALL,   // list: no topic, no state
	BRQ_STMT_LIST_STATE, // list: states, no topic
	BRQ_STMT_LIST_TOPIC, // list: a topic
	BRQ_STMT_LIST_KEY,   // list: a topic and a key
	BRQ_STMT_RETRY_ONE,
	BRQ_STMT_RETRY_BULK,
	BRQ_STMT_DELETE,
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

// claim: one row per job leased.
#define CLAIM_COLS(X)                                                                 \
	X(CLAIM_ID, "j.id")                                                           \
	X(CLAIM_TOPIC, "j.topic")                                                     \
	X(CLAIM_PAYLOAD, "j.payload::text")                                           \
	X(CLAIM_ATTEMPTS, "j.attempts")                                               \
	X(CLAIM_MAX_ATTEMPTS, "j.max_attempts")                                       \
	X(CLAIM_TOKEN_INDEX, "c.k")                                                   \
	X(CLAIM_LOCKED_UNTIL_MS, "(extract(epoch FROM j.locked_until) * 1000)::int8") \
	X(CLAIM_CREATED_MS, "(extract(epoch FROM j.created_at) * 1000)::int8")
enum claim_col { CLAIM_COLS(BRQ_COL_ENUM) CLAIM__N };

// heartbeat: one row per lease extended.
#define HB_COLS(X)       \
	X(HB_ID, "j.id") \
	X(HB_LOCKED_UNTIL_MS, "(extract(epoch FROM j.locked_until) * 1000)::int8")
enum hb_col { HB_COLS(BRQ_COL_ENUM) HB__N };

// settle: one row per item applied.
#define SETTLE_COLS(X)             \
	X(SETTLE_ID, "j.id")       \
	X(SETTLE_STATE, "j.state") \
	X(SETTLE_TOPIC, "j.topic") \
	X(SETTLE_ATTEMPT_S, "extract(epoch FROM now() - j.claimed_at)::float8")
enum settle_col { SETTLE_COLS(BRQ_COL_ENUM) SETTLE__N };

// unclaim (leases given back): one row per lease returned.
#define UNCLAIM_COLS(X)       \
	X(UNCLAIM_ID, "j.id") \
	X(UNCLAIM_TOPIC, "j.topic")
enum unclaim_col { UNCLAIM_COLS(BRQ_COL_ENUM) UNCLAIM__N };

// topics of jobs (metrics of lost leases); reaper and retention: one row per job.
#define TOPIC_COLS(X) X(TOPIC_TOPIC, "j.topic")
enum topic_col { TOPIC_COLS(BRQ_COL_ENUM) TOPIC__N };

// cancel: exactly one row when the job exists.
#define CANCEL_COLS(X)                 \
	X(CANCEL_STATE, "state")       \
	X(CANCEL_CANCELED, "canceled") \
	X(CANCEL_TOPIC, "topic")
enum cancel_col { CANCEL_COLS(BRQ_COL_ENUM) CANCEL__N };

// job: the whole row.
#define JOB_COLS(X)                                                               \
	X(JOB_ID, "id")                                                           \
	X(JOB_TOPIC, "topic")                                                     \
	X(JOB_PAYLOAD, "payload::text")                                           \
	X(JOB_STATE, "state")                                                     \
	X(JOB_ATTEMPTS, "attempts")                                               \
	X(JOB_MAX_ATTEMPTS, "max_attempts")                                       \
	X(JOB_AVAILABLE_MS, "(extract(epoch FROM available_at) * 1000)::int8")    \
	X(JOB_LOCKED_BY, "locked_by")                                             \
	X(JOB_LOCKED_UNTIL_MS, "(extract(epoch FROM locked_until) * 1000)::int8") \
	X(JOB_LAST_ERROR, "last_error")                                           \
	X(JOB_KEY, "idempotency_key")                                             \
	X(JOB_CREATED_MS, "(extract(epoch FROM created_at) * 1000)::int8")        \
	X(JOB_UPDATED_MS, "(extract(epoch FROM updated_at) * 1000)::int8")        \
	X(JOB_RESULT, "result::text")                                             \
	X(JOB_RETRY_OF, "retry_of")
enum job_col { JOB_COLS(BRQ_COL_ENUM) JOB__N };

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

// Every statement of cfg, ready for brq_db_opts.stmts. Returns 0 or BRQ_ENOMEM; on
// success the caller owns *texts (brq_store_sql_fini) and stmts[i].text borrow them.
BRQ_MUSTCHECK int brq_store_sql_build(const brq_config *cfg, char *texts[BRQ_STMT__COUNT],
				      brq_db_stmt stmts[BRQ_STMT__COUNT]);
void              brq_store_sql_fini(char *texts[BRQ_STMT__COUNT]);

#endif
