// SPDX-License-Identifier: MIT
// One PostgreSQL connection of the gateway: connect, prepare, reconnect with backoff.
#include "db.h"

#include <string.h>
#include <time.h>

#include "log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

uint64_t
brq_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

uint64_t
brq_now_ms(void)
{
	return brq_now_us() / 1000u;
}

void
brq_db_init(brq_db *db, const char *dsn, const brq_sql *sql, const char *name)
{
	memset(db, 0, sizeof(*db));
	db->dsn        = dsn;
	db->sql        = sql;
	db->name       = name;
	db->backoff_ms = BACKOFF_MIN_MS;
}

static void
drop(brq_db *db)
{
	if (db->conn != NULL) {
		PQfinish(db->conn);
		db->conn = NULL;
	}
}

void
brq_db_fini(brq_db *db)
{
	drop(db);
}

bool
brq_db_ok(const PGresult *r)
{
	ExecStatusType st = PQresultStatus(r);
	return r != NULL && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
}

// Connects and prepares every statement. On failure logs why (never the DSN).
static bool
connect_now(brq_db *db)
{
	// Our keywords come first so that the operator's DSN can override them.
	const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
	const char *vals[] = {"5", "brooq-gateway", db->dsn, NULL};

	db->conn = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(db->conn) != CONNECTION_OK) {
		BRQ_LOG_WARN("db_connect_failed", "conn=%s error=%s", db->name,
			     BRQ_LOG_Q(PQerrorMessage(db->conn)));
		goto fail;
	}
	PQsetNoticeProcessor(db->conn, NULL, NULL);
	// A statement never runs forever: a request must not hang on a stuck lock.
	// Every statement is written to have one good plan whatever its parameters
	// (sql.c), so each is planned once per connection: custom plans re-planned
	// the claim on every call (8 % of PostgreSQL's CPU per job, benchmarks.md).
	PGresult *r  = PQexec(db->conn,
			      "SET statement_timeout = '30s';"
			       " SET idle_in_transaction_session_timeout = '60s';"
			       " SET plan_cache_mode = force_generic_plan");
	bool      ok = brq_db_ok(r);
	PQclear(r);
	if (!ok)
		goto fail_log;
	for (int i = 0; i < BRQ_STMT__COUNT; i++) {
		r  = PQprepare(db->conn, brq_sql_name((brq_stmt) i), db->sql->text[i], db->sql->nparams[i],
			       NULL);
		ok = brq_db_ok(r);
		PQclear(r);
		if (!ok)
			goto fail_log;
	}
	BRQ_LOG_INFO("db_connected", "conn=%s", db->name);
	db->backoff_ms = BACKOFF_MIN_MS;
	return true;
fail_log:
	BRQ_LOG_ERROR("db_prepare_failed", "conn=%s error=%s", db->name, BRQ_LOG_Q(PQerrorMessage(db->conn)));
fail:
	drop(db);
	db->retry_at_ms = brq_now_ms() + db->backoff_ms;
	db->backoff_ms  = db->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : db->backoff_ms * 2;
	return false;
}

bool
brq_db_ready(brq_db *db)
{
	if (db->conn != NULL && PQstatus(db->conn) == CONNECTION_OK)
		return true;
	drop(db);
	if (brq_now_ms() < db->retry_at_ms)
		return false;
	return connect_now(db);
}

// A failed statement on a broken connection: forget the connection, so the next
// request reconnects (after the backoff) instead of failing on a dead socket.
static void
check_conn(brq_db *db)
{
	if (db->conn != NULL && PQstatus(db->conn) != CONNECTION_OK) {
		BRQ_LOG_WARN("db_connection_lost", "conn=%s", db->name);
		drop(db);
		db->retry_at_ms = brq_now_ms() + BACKOFF_MIN_MS;
	}
}

PGresult *
brq_db_exec(brq_db *db, brq_stmt st, const char *const *values, const int *lengths, const int *formats)
{
	if (db->conn == NULL)
		return NULL;
	PGresult *r =
		PQexecPrepared(db->conn, brq_sql_name(st), db->sql->nparams[st], values, lengths, formats, 0);
	if (!brq_db_ok(r))
		check_conn(db);
	return r;
}

bool
brq_db_command(brq_db *db, const char *sql)
{
	if (db->conn == NULL)
		return false;
	PGresult *r  = PQexec(db->conn, sql);
	bool      ok = brq_db_ok(r);
	PQclear(r);
	if (!ok)
		check_conn(db);
	return ok;
}

bool
brq_db_is_unavailable(brq_db *db, const PGresult *r)
{
	if (db->conn == NULL || r == NULL)
		return true;
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (state == NULL)
		return true; // no server answer: the connection failed
	// Class 08 connection exception, 57 operator intervention (shutdown, query
	// canceled by timeout), 53 insufficient resources, 40 serialization/deadlock
	// (retrying helps).
	return strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 || strncmp(state, "53", 2) == 0 ||
		strncmp(state, "40", 2) == 0;
}
