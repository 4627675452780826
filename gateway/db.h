// SPDX-License-Identifier: MIT
// One PostgreSQL connection of the gateway: connect, prepare, reconnect with backoff.
//
// PGresult values are used only inside the database layer (db.c and the ops_*.c
// files that run statements and encode replies straight from the rows); nothing
// else in the gateway sees one.
#ifndef BRQ_GATEWAY_DB_H
#define BRQ_GATEWAY_DB_H

#include "brq_base.h"

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "sql.h"

typedef struct brq_db {
	PGconn        *conn;        // NULL while disconnected
	const char    *dsn;         // borrowed from the config; secret, never logged
	const brq_sql *sql;         // borrowed; statements prepared on every (re)connect
	const char    *name;        // for logs: "pool-3", "janitor"
	uint64_t       retry_at_ms; // monotonic time before which no reconnect is tried
	uint64_t       backoff_ms;  // current reconnect backoff, 100ms doubling to 5s
} brq_db;

// Prepares the struct; connects lazily (brq_db_ready). Borrows dsn, sql and name,
// which must outlive db.
void brq_db_init(brq_db *db, const char *dsn, const brq_sql *sql, const char *name);
// Closes the connection. The struct may be initialised again.
void brq_db_fini(brq_db *db);

// True when the connection is usable, connecting (and preparing every statement)
// first if needed. While PostgreSQL is away this returns false at once until the
// backoff has passed, so callers answer `unavailable` instead of hanging.
bool brq_db_ready(brq_db *db);

// Runs prepared statement st with text/binary params. Returns the result (caller
// PQclear()s it, also on failure) or NULL when there is no connection. After a
// connection-level failure the connection is dropped and will be re-made later.
PGresult *brq_db_exec(brq_db *db, brq_stmt st, const char *const *values, const int *lengths,
		      const int *formats);

// Runs a plain command ("BEGIN", "COMMIT", "ROLLBACK"). Returns true on success.
bool brq_db_command(brq_db *db, const char *sql);

// True if r is a successful command or query result.
bool brq_db_ok(const PGresult *r);

// Classifies a failed result: true when the failure is the connection's or the
// server's availability (the client should retry: `unavailable`), false when the
// statement itself was refused (a data or internal problem).
bool brq_db_is_unavailable(brq_db *db, const PGresult *r);

// Monotonic clock in milliseconds / microseconds.
uint64_t brq_now_ms(void);
uint64_t brq_now_us(void);

#endif
