/* SPDX-License-Identifier: MIT */
/* Test databases on the harness's throwaway PostgreSQL cluster (tests/pg.sh). */
#ifndef BRQ_TESTDB_H
#define BRQ_TESTDB_H

#include <stdbool.h>

#include <libpq-fe.h>

/*
 * Creates a fresh, uniquely named database on the harness cluster and returns
 * its libpq DSN (malloc'd; release with brq_testdb_drop). With `migrated`, the
 * database is a copy of the template that tests/pg.sh migrated with brooqctl;
 * without, it is empty. Fails the current test when the harness is not
 * running: a suite without its database is a failed suite, never a skipped one.
 */
char *brq_testdb_create(bool migrated);

/* Drops the database named by `dsn` and frees `dsn`. NULL is a no-op. */
void brq_testdb_drop(char *dsn);

/* Connects to `dsn`; fails the current test on error. Caller PQfinish()es. */
PGconn *brq_testdb_connect(const char *dsn);

/* Runs `sql`; fails the current test unless it succeeds. */
void brq_testdb_exec(PGconn *c, const char *sql);

/* Runs `sql` and returns the SQLSTATE of its error, or "" when it succeeded.
 * The returned string is static storage, valid until the next call. */
const char *brq_testdb_try(PGconn *c, const char *sql);

/* Runs `sql` (one row, one column expected) and returns the value as a
 * malloc'd string (NULL for SQL NULL). Caller frees. */
char *brq_testdb_value(PGconn *c, const char *sql);

/* Like brq_testdb_value, parsed as an integer (SQL NULL fails the test). */
long long brq_testdb_int(PGconn *c, const char *sql);
/* brq_testdb_int of a printf-formatted query (at most 1023 bytes). */
long long brq_testdb_intf(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Polls the formatted query every 20 ms until it yields want or timeout_ms passes;
 * returns the last value. */
long long brq_testdb_wait_int(PGconn *c, long long want, int timeout_ms, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Path of a built program (e.g. "brooqctl", "brooq-gateway"), from the
 * BROOQ_TEST_BIN_DIR the build sets. Static storage. */
const char *brq_testdb_bin(const char *name);

/* Runs the shell command cmd and returns its exit code (-1 when it did not exit
 * normally); *out gets all it wrote to stdout (malloc'd, NUL-terminated, caller frees;
 * out may be NULL). Fails the test if the command cannot be started. */
int brq_testdb_run(const char *cmd, char **out);

#endif
