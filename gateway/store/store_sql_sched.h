// SPDX-License-Identifier: MIT
// The statement texts of the schedules (store_sql_sched.c), for brq_store_sql_build
// (store_sql.c).
#ifndef BRQ_GATEWAY_STORE_SQL_SCHED_H
#define BRQ_GATEWAY_STORE_SQL_SCHED_H

#include <stdio.h>

#include "store_stmt.h"

// Writes the text of a BRQ_STMT_SCHED_* statement.
void brq_store_sql_sched(FILE *f, brq_stmt st);

#endif
