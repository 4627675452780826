/* SPDX-License-Identifier: MIT */
/* The gateway's own statements in a test's connection (for tests that link brooq_gw;
 * testdb.h stays free of it). */
#ifndef BRQ_TEST_STMTS_H
#define BRQ_TEST_STMTS_H

#include <libpq-fe.h>

#include "store/store_stmt.h"

/* Prepares statement st on db as the gateway's pool does: its text built from the
 * default configuration (store_sql.c), after the pool's session settings, so its plans
 * are the pool's generic plans. Fails the current test when it does not prepare.
 * Returns its prepared name (static: never freed). */
const char *brq_t_prepare_stmt(PGconn *db, brq_stmt st);

#endif
