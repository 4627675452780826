// SPDX-License-Identifier: MIT
// `brooq-bench explain-claim`: EXPLAIN (ANALYZE, BUFFERS) of the gateway's claim statement
// as the gateway runs it (issue 30.1: claims stay O(batch), not O(table)), printed on
// stdout. The text comes from brq_store_sql_build() with the default configuration, the
// session from the gateway pool's (brq_store_pool_session: generic plans), and the claim
// is rolled back: the table is left as it was.
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "store/store.h"
#include "store/store_sql.h"

// Prints every row of the EXPLAIN of `sql` (one column each), after a title.
static void
explain(PGconn *c, const char *title, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		bench_die("explain: %s: %s", sql, PQerrorMessage(c));
	printf("-- %s\n", title);
	for (int i = 0; i < PQntuples(r); i++)
		printf("%s\n", PQgetvalue(r, i, 0));
	printf("\n");
	PQclear(r);
}

int
bench_explain_claim(const bench_opts *o, const char *topic)
{
	brq_config  cfg;
	char       *texts[BRQ_STMT__COUNT];
	brq_db_stmt stmts[BRQ_STMT__COUNT];
	if (brq_config_init_defaults(&cfg) != 0 || brq_store_sql_build(&cfg, texts, stmts) != 0)
		bench_die("cannot build the statements");
	PGconn *c = bench_db_connect(o->dsn);
	bench_db_exec(c, brq_store_pool_session);
	PGresult *r = PQprepare(c, stmts[BRQ_STMT_CLAIM].name, stmts[BRQ_STMT_CLAIM].text,
				stmts[BRQ_STMT_CLAIM].nparams, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		bench_die("prepare claim: %s", PQerrorMessage(c));
	PQclear(r);
	printf("-- the claim statement (%s), batch %d, topic %s:\n%s\n\n", stmts[BRQ_STMT_CLAIM].name,
	       o->batch, topic, stmts[BRQ_STMT_CLAIM].text);
	char q[160];
	snprintf(q, sizeof(q), "SELECT count(*) FROM job WHERE topic = '%s' AND state = 'pending'", topic);
	printf("-- rows: %lld in job, %lld pending (any topic, due or not), %lld pending in %s\n\n",
	       (long long) bench_db_int(c, "SELECT count(*) FROM job"),
	       (long long) bench_db_int(c, "SELECT count(*) FROM job WHERE state = 'pending'"),
	       (long long) bench_db_int(c, q), topic);
	// One lease token per job of the batch, as the gateway draws them.
	size_t cap = (size_t) o->batch * 40 + 256;
	char  *sql = malloc(cap + 512);
	if (sql == NULL)
		bench_die("out of memory");
	int n = snprintf(sql, cap, "EXPLAIN (ANALYZE, BUFFERS) EXECUTE %s(ARRAY['%s'], %d, 'bench', ARRAY[",
			 stmts[BRQ_STMT_CLAIM].name, topic, o->batch);
	for (int i = 0; i < o->batch; i++)
		n += snprintf(sql + n, cap - (size_t) n, "%s'%08x-0000-4000-8000-%012x'", i > 0 ? "," : "",
			      (unsigned) rand(), (unsigned) i);
	snprintf(sql + n, cap - (size_t) n, "]::uuid[], NULL)");
	// The pool session makes every plan generic (plan_cache_mode), as the gateway's
	// connections run it after their first claims.
	bench_db_exec(c, "BEGIN");
	explain(c, "EXPLAIN (ANALYZE, BUFFERS), the gateway's session (generic plan)", sql);
	bench_db_exec(c, "ROLLBACK");
	bench_db_exec(c, "BEGIN");
	explain(c, "the same claim run again (pages now cached)", sql);
	bench_db_exec(c, "ROLLBACK");
	free(sql);
	PQfinish(c);
	brq_store_sql_fini(texts);
	brq_config_fini(&cfg);
	return 0;
}
