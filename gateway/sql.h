// SPDX-License-Identifier: MIT
// The SQL the gateway runs: every statement in one place, built once at start-up.
//
// Per-topic overrides (lease, backoff, max attempts) are compiled into the statement
// text as CASE expressions: topics are validated [a-z0-9._-] names, so they can be
// inlined safely, and the hot path then sends no extra parameters for them.
#ifndef BRQ_GATEWAY_SQL_H
#define BRQ_GATEWAY_SQL_H

#include "config.h"

// Prepared statement names, one per statement (see sql.c for the text and params).
typedef enum brq_stmt {
	BRQ_STMT_ENQUEUE = 0,
	BRQ_STMT_ENQUEUE_LOOKUP,
	BRQ_STMT_CLAIM,
	BRQ_STMT_HEARTBEAT,
	BRQ_STMT_SETTLE,
	BRQ_STMT_TOPICS_OF,
	BRQ_STMT_CANCEL,
	BRQ_STMT_JOB,
	BRQ_STMT_STATS,
	BRQ_STMT_REAP,
	BRQ_STMT_RETENTION,
	BRQ_STMT__COUNT
} brq_stmt;

typedef struct brq_sql {
	char *text[BRQ_STMT__COUNT]; // owned, NUL-terminated
	int   nparams[BRQ_STMT__COUNT];
} brq_sql;

// Builds every statement for cfg. Returns 0 or -1 (out of memory). On success the
// caller owns *s and releases it with brq_sql_fini().
BRQ_MUSTCHECK int brq_sql_build(brq_sql *s, const struct brq_config *cfg);
void              brq_sql_fini(brq_sql *s);

// Statement name for PQprepare/PQexecPrepared ("brq_claim", ...). Static storage.
const char *brq_sql_name(brq_stmt st);

#endif
