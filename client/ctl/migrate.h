/* SPDX-License-Identifier: MIT */
/* Goose-compatible migration runner used by `brooqctl migrate`. */
#ifndef BRQ_MIGRATE_H
#define BRQ_MIGRATE_H

#include <stdbool.h>
#include <stdio.h>

#include "brq_base.h"

/* One parsed migration file. All strings are owned by the struct. */
typedef struct brq_migration {
	long long version; /* from the file name prefix, e.g. 00001 -> 1 */
	char     *name;    /* file name without directory */
	char    **up;      /* statements of the Up section, in order */
	int       n_up;
	char    **down; /* statements of the Down section, in order */
	int       n_down;
	int       no_tx; /* "-- +goose NO TRANSACTION": run outside BEGIN/COMMIT */
} brq_migration;

/*
 * Parses the goose-annotated SQL text `sql` (NUL-terminated) into `m`.
 * Statements end at a line ending in ';' unless between
 * "-- +goose StatementBegin" and "-- +goose StatementEnd".
 * Returns 0, or BRQ_EINVAL (not a valid migration) or BRQ_ENOMEM with a message in
 * err. On success the caller owns m and releases it with brq_migration_fini(); on
 * failure m holds nothing.
 */
int  brq_migration_parse(const char *sql, brq_migration *m, char *err, size_t errlen) BRQ_MUSTCHECK;
void brq_migration_fini(brq_migration *m);

/*
 * Runs `cmd` ("up", "down", "status", "version", "up-to", "down-to" with `target`)
 * against the database named by the libpq connection string `dsn`, with migrations
 * read from directory `dir`. Progress goes to `out` as text lines, errors to stderr;
 * with `json`, `out` gets one JSON object instead (docs/protocol.md, "JSON form"):
 * {"version":N,"migrations":[{"version","name","applied","applied_at_ms","applied_at"}]}
 * with every migration (status), those the command changed (up, down, ...) or none
 * (version), and after a failure {"code":"migration"|"database"|"usage","msg":...,
 * "exit":N} with the migrations changed before it.
 * Returns a process exit code: 0 ok, 1 database/migration error, 2 usage.
 */
int brq_migrate_run(const char *dsn, const char *dir, const char *cmd, long long target, FILE *out,
		    bool json);

#endif
