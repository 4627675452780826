// SPDX-License-Identifier: MIT
// The statement texts of the job list (and the topics' spans it reads), retry and delete (store_sql_jobs.c),
// for brq_store_sql_build (store_sql.c).
#ifndef BRQ_GATEWAY_STORE_SQL_JOBS_H
#define BRQ_GATEWAY_STORE_SQL_JOBS_H

#include <stdio.h>

#include "store_stmt.h"

// Writes the text of a list statement (BRQ_STMT_LIST_*).
void brq_store_sql_list(FILE *f, brq_stmt st);
// Writes the text of BRQ_STMT_SPAN_MAP or BRQ_STMT_SPAN_PRUNE (the spans the list
// by topic reads).
void brq_store_sql_span(FILE *f, brq_stmt st);
// Writes the text of BRQ_STMT_RETRY_ONE, BRQ_STMT_RETRY_BULK or BRQ_STMT_DELETE.
void brq_store_sql_retry_delete(FILE *f, brq_stmt st);

#endif
