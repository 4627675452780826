// SPDX-License-Identifier: MIT
// One PostgreSQL connection: connect with a deadline, prepare, run a statement with a
// deadline, classify failures, reconnect with backoff.
//
// Only the store (store*.c) runs statements through this module and reads their
// PGresult; nothing else in the gateway sees libpq. Every wait here is bounded: a
// connection attempt by connect_timeout_ms, a statement by the caller's deadline (the
// server is asked to cancel it, and a server that does not answer after a grace loses
// the connection), and all of them by the optional stop flag.
#ifndef BRQ_GATEWAY_DB_H
#define BRQ_GATEWAY_DB_H

#include "brq_base.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

typedef struct brq_db brq_db;

// A statement prepared on every (re)connect.
typedef struct brq_db_stmt {
	const char *name; // PQprepare name
	const char *text; // borrowed
	int         nparams;
} brq_db_stmt;

typedef struct brq_db_opts {
	const char        *name;        // for logs: "pool-3", "janitor", "monitor"
	const char        *app_name;    // fallback_application_name
	const char        *session_sql; // run after each connect, after stmts (SETs); NULL: none
	const brq_db_stmt *stmts;       // prepared after each connect; borrowed
	size_t             n_stmts;
	uint64_t           connect_timeout_ms; // per attempt; 0: 5 s
	uint64_t           backoff_min_ms;     // reconnect pause, doubling; 0: 100 ms
	uint64_t           backoff_max_ms;     // 0: 5 s
	const atomic_bool *stop;               // optional: when set, waits end within ~100 ms
	// Optional: runs on each new connection before anything is prepared (the store's
	// schema check). 0 lets the connection come up; any other value fails it as a
	// failed connect (the callee says why in db->errmsg). arg is on_connect_arg.
	int (*on_connect)(brq_db *db, void *arg);
	void *on_connect_arg;
} brq_db_opts;

struct brq_db {
	PGconn     *conn; // NULL while disconnected
	const char *dsn;  // borrowed; secret, never logged
	brq_db_opts o;
	uint64_t    retry_at_ms;    // monotonic time before which no reconnect is tried
	uint64_t    backoff_ms;     // current reconnect backoff
	uint64_t    last_answer_ms; // monotonic ms of the last complete server answer; 0 = never
	uint64_t    n_connects;     // successful connections so far (each one re-runs session_sql)
	char        sqlstate[6];    // of the last failure ("" when the server gave none)
	char        errmsg[256];    // the last failure, one line, for logs and replies
};

// Fault seam: tests set it to reach failure paths; production leaves it NULL. Called
// before a statement or command is sent, with what it is ("brq_claim", "COMMIT").
// Returning true fails it as a lost connection would, without sending it: the
// connection is dropped, so an open transaction is rolled back by the server. The
// hook may also act (e.g. change a row through its own connection) and return false.
extern bool (*brq_db_fault_hook)(const char *what);

// Prepares the struct; connects lazily (brq_db_ready). Borrows dsn and every pointer
// in o, which must outlive db.
void brq_db_init(brq_db *db, const char *dsn, const brq_db_opts *o);
// Closes the connection. The struct may be initialised again.
void brq_db_fini(brq_db *db);
// True when libpq accepts the DSN's syntax (nothing is connected). libpq's copies of
// the values, and an error message that could quote a password, are wiped.
bool brq_db_dsn_valid(const char *dsn);

// True when the connection is usable, connecting (session settings, every statement
// prepared) first if needed. While PostgreSQL is away this returns false at once
// until the backoff has passed, so callers answer `unavailable` instead of hanging.
bool brq_db_ready(brq_db *db);

// Runs prepared statement `stmt` (an index into o.stmts) with text/binary params and
// waits for its result until deadline_ms (monotonic; 0 = no deadline of ours, the
// session's statement_timeout still applies). Returns the result, which the caller
// PQclear()s, also when it is an error; or NULL when there is no connection or no
// answer (db->errmsg says why). After a connection-level failure the connection is
// dropped and re-made later.
PGresult *brq_db_exec(brq_db *db, size_t stmt, const char *const *values, const int *lengths,
		      const int *formats, uint64_t deadline_ms);

// Runs one plain SQL text (a command such as "COMMIT", or a query) with the same
// waiting rules. Returns the last result (caller PQclear()s) or NULL.
PGresult *brq_db_query(brq_db *db, const char *sql, uint64_t deadline_ms);

// Runs a command that returns no rows ("BEGIN", "COMMIT", "ROLLBACK"). Returns 0 or
// the code of brq_db_error().
BRQ_MUSTCHECK int brq_db_command(brq_db *db, const char *sql);

// A notification (LISTEN/NOTIFY): channel and payload, borrowed for the call.
typedef void brq_db_notify_fn(void *arg, const char *channel, const char *payload);

// Hands every notification libpq holds to fn; when there was none, waits up to wait_ms
// (or a stop) for the server to send some, and hands those over. Returns how many, or
// -1 when the connection failed (dropped; db->errmsg says why) or there is none.
int brq_db_notifications(brq_db *db, uint64_t wait_ms, brq_db_notify_fn *fn, void *arg);

// True if r is a successful command or query result.
bool brq_db_ok(const PGresult *r);

// Classifies a failed result r (NULL: no answer) and records it in db->sqlstate and
// db->errmsg: BRQ_EUNAVAIL when the connection or the server's availability failed
// (retrying helps: connection lost, shutdown, serialization failure, deadlock, lack of
// resources), BRQ_ETIMEDOUT when the statement was canceled (statement_timeout or our
// deadline), BRQ_EINVAL when the server refused the data (classes 22 and 23), else
// BRQ_EINTERNAL.
int brq_db_error(brq_db *db, const PGresult *r);

#endif
