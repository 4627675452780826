/* SPDX-License-Identifier: MIT */
/* The gateway's own statements in a test's connection (stmts.h). */
#include "stmts.h"

#include <criterion/criterion.h>

#include "config/config.h"
#include "store/store.h"
#include "store/store_sql.h"
#include "testdb.h"

const char *
brq_t_prepare_stmt(PGconn *db, brq_stmt st)
{
	brq_config  cfg;
	char       *texts[BRQ_STMT__COUNT];
	brq_db_stmt stmts[BRQ_STMT__COUNT];
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	cr_assert_eq(brq_store_sql_build(&cfg, texts, stmts), 0);
	brq_testdb_exec(db, brq_store_pool_session);
	PGresult *r = PQprepare(db, stmts[st].name, stmts[st].text, stmts[st].nparams, NULL);
	cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s: %s", stmts[st].name, PQerrorMessage(db));
	PQclear(r);
	const char *name = stmts[st].name; /* store_sql.c's static names */
	brq_store_sql_fini(texts);
	brq_config_fini(&cfg);
	return name;
}
