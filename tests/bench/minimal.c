// SPDX-License-Identifier: MIT
// The minimal-SQL comparator (issue 14): the cheapest correct queue loop, on a table of
// its own, so that the gateway is measured against what a hand-written SKIP LOCKED
// loop does on the same machine in the same run, not only against its own statements.
//
// Table: bench_minimal (id bigserial primary key, state smallint, payload jsonb), a
// partial index on id for the ready rows. Each of --procs connections (default 8)
// loops: claim --threads rows (default 32) with one UPDATE ... FOR UPDATE SKIP LOCKED,
// then settle them with one UPDATE ... WHERE id = ANY(...), each statement its own
// transaction, until a claim finds nothing. No leases, attempts, tokens, topics or
// outcome: what any queue needs at the least.
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char claim_sql[]  = "UPDATE bench_minimal m SET state = 1"
				 " FROM (SELECT id FROM bench_minimal WHERE state = 0 ORDER BY id LIMIT $1"
				 "  FOR UPDATE SKIP LOCKED) c WHERE m.id = c.id RETURNING m.id, m.payload";
static const char settle_sql[] = "UPDATE bench_minimal SET state = 2 WHERE id = ANY($1::int8[])";

typedef struct min_thread {
	pthread_t          th;
	PGconn            *c;
	int                batch;
	pthread_barrier_t *bar;
	_Atomic int64_t   *first_ns;
	int64_t            end_ns;
	long               jobs;
} min_thread;

static void *
min_main(void *arg)
{
	min_thread *t = arg;
	char        n_txt[16];
	size_t      cap = (size_t) t->batch * 24 + 8;
	char       *ids = malloc(cap);
	if (ids == NULL)
		bench_die("out of memory");
	snprintf(n_txt, sizeof(n_txt), "%d", t->batch);
	pthread_barrier_wait(t->bar);
	for (;;) {
		const char *cv[1] = {n_txt};
		PGresult   *r     = PQexecPrepared(t->c, "min_claim", 1, cv, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			bench_die("min claim: %s", PQerrorMessage(t->c));
		int rows = PQntuples(r);
		if (rows == 0) {
			PQclear(r);
			break;
		}
		int64_t zero = 0;
		atomic_compare_exchange_strong(t->first_ns, &zero, bench_now_ns());
		size_t len = 0;
		ids[len++] = '{';
		for (int i = 0; i < rows; i++)
			len += (size_t) snprintf(ids + len, cap - len, "%s%s", i ? "," : "",
						 PQgetvalue(r, i, 0));
		ids[len++] = '}';
		ids[len]   = '\0';
		PQclear(r);
		const char *sv[1] = {ids};
		r                 = PQexecPrepared(t->c, "min_settle", 1, sv, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK || atoi(PQcmdTuples(r)) != rows)
			bench_die("min settle: %s", PQerrorMessage(t->c));
		PQclear(r);
		t->jobs += rows;
	}
	t->end_ns = bench_now_ns();
	free(ids);
	return NULL;
}

static void
prepare(PGconn *c)
{
	PGresult *r = PQprepare(c, "min_claim", claim_sql, 1, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		bench_die("prepare min_claim: %s", PQerrorMessage(c));
	PQclear(r);
	r = PQprepare(c, "min_settle", settle_sql, 1, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		bench_die("prepare min_settle: %s", PQerrorMessage(c));
	PQclear(r);
}

// Creates (once) and refills the comparator's table with n ready rows, each with
// the same small payload as the gateway's drain jobs.
static void
min_fill(PGconn *db, long n)
{
	char sql[256];
	bench_db_exec(db,
		      "CREATE TABLE IF NOT EXISTS bench_minimal (id bigserial PRIMARY KEY,"
		      " state smallint NOT NULL DEFAULT 0, payload jsonb NOT NULL DEFAULT '{}')");
	bench_db_exec(db,
		      "CREATE INDEX IF NOT EXISTS bench_minimal_ready ON bench_minimal (id) WHERE state = 0");
	bench_db_exec(db, "TRUNCATE bench_minimal");
	snprintf(
		sql, sizeof(sql),
		"INSERT INTO bench_minimal (payload) SELECT '{\"n\": 1}'::jsonb FROM generate_series(1, %ld)",
		n);
	bench_db_exec(db, sql);
	bench_db_exec(db, "VACUUM ANALYZE bench_minimal");
	bench_db_exec(db, "CHECKPOINT");
}

int
bench_min_drain(const bench_opts *o)
{
	PGconn *db = bench_db_connect(o->dsn);
	min_fill(db, o->jobs);
	int               conns = o->procs, batch = o->threads;
	min_thread       *t = calloc((size_t) conns, sizeof(*t));
	pthread_barrier_t bar;
	_Atomic int64_t   first = 0;
	bench_cpu         cpu[2];
	if (t == NULL)
		bench_die("out of memory");
	pthread_barrier_init(&bar, NULL, (unsigned) conns + 1);
	for (int i = 0; i < conns; i++) {
		t[i] = (min_thread) {
			.c = bench_db_connect(o->dsn), .batch = batch, .bar = &bar, .first_ns = &first};
		prepare(t[i].c);
		if (pthread_create(&t[i].th, NULL, min_main, &t[i]) != 0)
			bench_die("pthread_create");
	}
	bench_cpu_now(&cpu[0]);
	pthread_barrier_wait(&bar);
	long    done = 0;
	int64_t end  = 0;
	for (int i = 0; i < conns; i++) {
		pthread_join(t[i].th, NULL);
		done += t[i].jobs;
		end = t[i].end_ns > end ? t[i].end_ns : end;
	}
	bench_cpu_now(&cpu[1]);
	for (int i = 0; i < conns; i++)
		PQfinish(t[i].c);
	if (done != o->jobs ||
	    bench_db_int(db, "SELECT count(*) FROM bench_minimal WHERE state = 2") != o->jobs)
		bench_die("min drain: %ld of %ld settled", done, o->jobs);
	double rate = (double) o->jobs / ((double) (end - first) / 1e9);
	bench_result(o, "drain_minimal_sql", "minimal", "rate", "jobs/s", rate);
	bench_cpu_report(o, "drain_minimal_sql", "minimal", &cpu[0], &cpu[1], (double) o->jobs);
	bench_db_exec(db, "TRUNCATE bench_minimal");
	pthread_barrier_destroy(&bar);
	free(t);
	PQfinish(db);
	return 0;
}
