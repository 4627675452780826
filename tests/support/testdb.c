/* SPDX-License-Identifier: MIT */
/* Test databases on the harness's throwaway PostgreSQL cluster (tests/pg.sh). */
#define _GNU_SOURCE /* asprintf */
#include "testdb.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tutil.h"

static atomic_int db_counter;

static const char *
harness_host(void)
{
	const char *h = getenv("BROOQ_TEST_PGHOST");
	if (h == NULL || h[0] == '\0')
		cr_assert_fail("BROOQ_TEST_PGHOST is not set: run the suite through tests/run.sh "
			       "(it starts the throwaway PostgreSQL cluster)");
	return h;
}

static char *
admin_dsn(void)
{
	char *dsn = NULL;
	cr_assert(asprintf(&dsn, "host=%s user=postgres dbname=postgres", harness_host()) > 0);
	return dsn;
}

char *
brq_testdb_create(bool migrated)
{
	char   *adsn = admin_dsn();
	PGconn *c    = brq_testdb_connect(adsn);
	char    name[64], sql[256];
	char   *dsn = NULL;

	snprintf(name, sizeof(name), "t_%ld_%d", (long) getpid(), atomic_fetch_add(&db_counter, 1));
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s TEMPLATE %s", name,
		 migrated ? "brooq_template" : "template0");
	brq_testdb_exec(c, sql);
	PQfinish(c);
	free(adsn);
	cr_assert(asprintf(&dsn, "host=%s user=postgres dbname=%s", harness_host(), name) > 0);
	return dsn;
}

void
brq_testdb_drop(char *dsn)
{
	if (dsn == NULL)
		return;
	const char *db = strstr(dsn, "dbname=");
	if (db != NULL) {
		char   *adsn = admin_dsn();
		PGconn *c    = brq_testdb_connect(adsn);
		char    sql[256];
		snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", db + strlen("dbname="));
		brq_testdb_exec(c, sql);
		PQfinish(c);
		free(adsn);
	}
	free(dsn);
}

PGconn *
brq_testdb_connect(const char *dsn)
{
	PGconn *c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
		PQfinish(c);
		cr_assert_fail("cannot connect to the test database: %s", msg);
	}
	PQsetNoticeProcessor(c, NULL, NULL);
	return c;
}

void
brq_testdb_exec(PGconn *c, const char *sql)
{
	PGresult *r  = PQexec(c, sql);
	int       st = PQresultStatus(r);
	PQclear(r);
	cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "SQL failed: %s\n%s", sql,
		  PQerrorMessage(c));
}

const char *
brq_testdb_try(PGconn *c, const char *sql)
{
	static char state[8];
	PGresult   *r  = PQexec(c, sql);
	int         st = PQresultStatus(r);
	state[0]       = '\0';
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		snprintf(state, sizeof(state), "%s", s != NULL ? s : "?????");
	}
	PQclear(r);
	return state;
}

char *
brq_testdb_value(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	char     *v = NULL;
	cr_assert(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && PQnfields(r) == 1,
		  "expected one value from: %s\n%s", sql, PQerrorMessage(c));
	if (!PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

long long
brq_testdb_int(PGconn *c, const char *sql)
{
	char *v = brq_testdb_value(c, sql);
	cr_assert_not_null(v, "NULL from: %s", sql);
	long long n = strtoll(v, NULL, 10);
	free(v);
	return n;
}

long long
brq_testdb_intf(PGconn *c, const char *fmt, ...)
{
	char    q[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	return brq_testdb_int(c, q);
}

long long
brq_testdb_wait_int(PGconn *c, long long want, int timeout_ms, const char *fmt, ...)
{
	char    q[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	int64_t   until = brq_t_now_us() + (int64_t) timeout_ms * 1000;
	long long v;
	while ((v = brq_testdb_int(c, q)) != want && brq_t_now_us() < until)
		brq_t_sleep_ms(20);
	return v;
}

const char *
brq_testdb_bin(const char *name)
{
	static __thread char path[1024];
	const char          *dir = getenv("BROOQ_TEST_BIN_DIR");
	cr_assert(dir != NULL && dir[0] != '\0', "BROOQ_TEST_BIN_DIR is not set (ctest sets it)");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

int
brq_testdb_run(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p, "popen: %s", cmd);
	char  *buf = NULL;
	size_t len = 0;
	FILE  *mem = open_memstream(&buf, &len);
	cr_assert_not_null(mem);
	char   chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, mem);
	fclose(mem);
	int st = pclose(p);
	if (out != NULL)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
