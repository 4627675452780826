// SPDX-License-Identifier: MIT
// The store's statement texts (internal to store*.c), built once from the
// configuration; the statements and their columns are in store_stmt.h.
#ifndef BRQ_GATEWAY_STORE_SQL_H
#define BRQ_GATEWAY_STORE_SQL_H

#include "brq_base.h"

#include <stdio.h>

#include "config/config.h"
#include "db.h"
#include "store_stmt.h"

// Every statement of cfg, ready for brq_db_opts.stmts. Returns 0 or BRQ_ENOMEM; on
// success the caller owns *texts (brq_store_sql_fini) and stmts[i].text borrow them.
BRQ_MUSTCHECK int brq_store_sql_build(const brq_config *cfg, char *texts[BRQ_STMT__COUNT],
				      brq_db_stmt stmts[BRQ_STMT__COUNT]);
void              brq_store_sql_fini(char *texts[BRQ_STMT__COUNT]);
// Writes the lease (ms) of the topic in column col: the configured lease, with the
// overrides of BROOQ_TOPIC_OVERRIDES as a CASE.
void brq_store_sql_lease_case(FILE *f, const brq_config *cfg, const char *col);

#endif
