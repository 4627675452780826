// SPDX-License-Identifier: MIT
// The statement texts of the console's history and workers (store_history.c), for
// brq_store_sql_build (store_sql.c).
#ifndef BRQ_GATEWAY_STORE_SQL_CONSOLE_H
#define BRQ_GATEWAY_STORE_SQL_CONSOLE_H

#include <stdio.h>

#include "config/config.h"
#include "store_stmt.h"

// Writes the text of BRQ_STMT_HISTORY_* or BRQ_STMT_WORKERS, BRQ_STMT_WORKER_JOBS.
void brq_store_sql_console(FILE *f, const brq_config *cfg, brq_stmt st);

#endif
