// SPDX-License-Identifier: MIT
// One PostgreSQL connection: connect with a deadline, prepare, run a statement with a deadline, reconnect.
#include "db.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "brq_clock.h"
#include "log/log.h"

#define CONNECT_TIMEOUT_MS 5000
#define BACKOFF_MIN_MS     100
#define BACKOFF_MAX_MS     5000
// Longest single poll while a stop flag is set, so a stop is seen within it.
#define SLICE_MS 100
// After our deadline the server is asked to cancel the statement; an answer that
// has not come this long after that means the server or the network is gone.
#define CANCEL_GRACE_MS 5000

bool (*brq_db_fault_hook)(const char *what);

// Records why something failed as one printable line (libpq messages end in '\n'
// and may span lines). Never includes the DSN: libpq messages name host and port.
static void
set_errmsg(brq_db *db, const char *msg)
{
	snprintf(db->errmsg, sizeof(db->errmsg), "%s", msg != NULL && *msg != '\0' ? msg : "unknown error");
	for (char *p = db->errmsg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	size_t n = strlen(db->errmsg);
	while (n > 0 && db->errmsg[n - 1] == ' ')
		db->errmsg[--n] = '\0';
}

static bool
is_stopping(const brq_db *db)
{
	return db->o.stop != NULL && atomic_load_explicit(db->o.stop, memory_order_acquire);
}

static void
drop(brq_db *db)
{
	if (db->conn != NULL) {
		PQfinish(db->conn);
		db->conn = NULL;
	}
}

// Forgets a connection whose state is unknown; the next brq_db_ready() reconnects
// after the shortest backoff.
static void
lose(brq_db *db)
{
	if (db->conn != NULL)
		BRQ_LOG_WARN("db_connection_lost", "conn=%s error=%s", db->o.name, BRQ_LOG_Q(db->errmsg));
	drop(db);
	db->retry_at_ms = brq_now_ms() + db->o.backoff_min_ms;
}

void
brq_db_init(brq_db *db, const char *dsn, const brq_db_opts *o)
{
	memset(db, 0, sizeof(*db));
	db->dsn = dsn;
	db->o   = *o;
	if (db->o.connect_timeout_ms == 0)
		db->o.connect_timeout_ms = CONNECT_TIMEOUT_MS;
	if (db->o.backoff_min_ms == 0)
		db->o.backoff_min_ms = BACKOFF_MIN_MS;
	if (db->o.backoff_max_ms < db->o.backoff_min_ms)
		db->o.backoff_max_ms =
			db->o.backoff_min_ms > BACKOFF_MAX_MS ? db->o.backoff_min_ms : BACKOFF_MAX_MS;
	db->backoff_ms = db->o.backoff_min_ms;
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

// Waits until the socket is ready for `events`. Returns 1 when ready, 0 at the
// deadline (0 = none), -1 when stopping or on a poll error.
static int
wait_socket(brq_db *db, short events, uint64_t deadline_ms)
{
	for (;;) {
		if (is_stopping(db))
			return -1;
		int fd = PQsocket(db->conn);
		if (fd < 0)
			return -1;
		int timeout = -1;
		if (deadline_ms != 0) {
			uint64_t now = brq_now_ms();
			if (now >= deadline_ms)
				return 0;
			timeout = (int) (deadline_ms - now > SLICE_MS ? SLICE_MS : deadline_ms - now);
		}
		if (db->o.stop != NULL && (timeout < 0 || timeout > SLICE_MS))
			timeout = SLICE_MS;
		struct pollfd p  = {.fd = fd, .events = events};
		int           rv = poll(&p, 1, timeout);
		if (rv > 0)
			return 1;
		if (rv < 0 && errno != EINTR)
			return -1;
	}
}

// Asks the server to cancel the running statement (a separate connection, so this
// works while ours waits for the answer).
static void
send_cancel(brq_db *db)
{
	char      err[256];
	PGcancel *c = PQgetCancel(db->conn);
	if (c == NULL)
		return;
	if (!PQcancel(c, err, (int) sizeof(err)))
		BRQ_LOG_WARN("db_cancel_failed", "conn=%s error=%s", db->o.name, BRQ_LOG_Q(err));
	PQfreeCancel(c);
}

// Waits for the next result of what was sent, asking the server to cancel once
// *deadline_ms (0: none) has passed and allowing it CANCEL_GRACE_MS to answer. True
// with *r (NULL ends one statement's results); false when no answer could be read
// (db->errmsg says why; the caller drops the connection).
static bool
next_result(brq_db *db, uint64_t *deadline_ms, bool *canceled, PGresult **r)
{
	while (PQisBusy(db->conn)) {
		int rv = wait_socket(db, POLLIN, *deadline_ms);
		if (rv == 0 && !*canceled) {
			// Our deadline passed: the server answers 57014 shortly.
			send_cancel(db);
			*canceled    = true;
			*deadline_ms = brq_now_ms() + CANCEL_GRACE_MS;
			continue;
		}
		if (rv <= 0 || !PQconsumeInput(db->conn)) {
			set_errmsg(db,
				   rv == 0          ? "no answer in time"
					   : rv < 0 ? (is_stopping(db) ? "stopping" : "poll failed")
						    : PQerrorMessage(db->conn));
			return false;
		}
	}
	*r = PQgetResult(db->conn);
	return true;
}

// Collects the results of what was just sent. Returns the first failed result, or
// else the last one (the caller PQclear()s it); NULL when no complete answer came
// (the connection is then dropped, db->errmsg says why).
static PGresult *
collect(brq_db *db, uint64_t deadline_ms)
{
	PGresult *keep     = NULL;
	bool      canceled = false;
	for (;;) {
		PGresult *r;
		if (!next_result(db, &deadline_ms, &canceled, &r)) {
			PQclear(keep);
			lose(db);
			return NULL;
		}
		if (r == NULL)
			break;
		if (keep != NULL && !brq_db_ok(keep)) {
			PQclear(r); // an earlier failure is the one that explains
			continue;
		}
		PQclear(keep);
		keep = r;
	}
	if (PQstatus(db->conn) != CONNECTION_OK) {
		set_errmsg(db, PQerrorMessage(db->conn));
		PQclear(keep);
		lose(db);
		return NULL;
	}
	db->last_answer_ms = brq_now_ms();
	return keep;
}

// The fault seam: true when the hook fails `what` (the connection is then dropped).
static bool
faulted(brq_db *db, const char *what)
{
	if (brq_db_fault_hook == NULL || !brq_db_fault_hook(what))
		return false;
	set_errmsg(db, "injected fault");
	lose(db);
	return true;
}

PGresult *
brq_db_query(brq_db *db, const char *sql, uint64_t deadline_ms)
{
	if (db->conn == NULL || faulted(db, sql))
		return NULL;
	if (!PQsendQuery(db->conn, sql)) {
		set_errmsg(db, PQerrorMessage(db->conn));
		lose(db);
		return NULL;
	}
	return collect(db, deadline_ms);
}

PGresult *
brq_db_exec(brq_db *db, size_t stmt, const char *const *values, const int *lengths, const int *formats,
	    uint64_t deadline_ms)
{
	if (db->conn == NULL || stmt >= db->o.n_stmts)
		return NULL;
	const brq_db_stmt *s = &db->o.stmts[stmt];
	if (faulted(db, s->name))
		return NULL;
	if (!PQsendQueryPrepared(db->conn, s->name, s->nparams, values, lengths, formats, 0)) {
		set_errmsg(db, PQerrorMessage(db->conn));
		lose(db);
		return NULL;
	}
	return collect(db, deadline_ms);
}

// Hands what libpq has parsed to fn. Returns how many.
static int
deliver_notifications(brq_db *db, brq_db_notify_fn *fn, void *arg)
{
	int       n = 0;
	PGnotify *nt;
	while ((nt = PQnotifies(db->conn)) != NULL) {
		fn(arg, nt->relname, nt->extra != NULL ? nt->extra : "");
		PQfreemem(nt);
		n++;
	}
	return n;
}

int
brq_db_notifications(brq_db *db, uint64_t wait_ms, brq_db_notify_fn *fn, void *arg)
{
	if (db->conn == NULL)
		return -1;
	int n = deliver_notifications(db, fn, arg);
	if (n > 0)
		return n;
	int rv = wait_socket(db, POLLIN, brq_now_ms() + (wait_ms > 0 ? wait_ms : 1));
	if (rv < 0 && is_stopping(db))
		return 0;
	if (rv < 0 || (rv > 0 && !PQconsumeInput(db->conn)) || PQstatus(db->conn) != CONNECTION_OK) {
		set_errmsg(db, rv < 0 ? "poll failed" : PQerrorMessage(db->conn));
		lose(db);
		return -1;
	}
	if (rv > 0)
		db->last_answer_ms = brq_now_ms();
	return deliver_notifications(db, fn, arg);
}

int
brq_db_command(brq_db *db, const char *sql)
{
	PGresult *r  = brq_db_query(db, sql, 0);
	int       rv = brq_db_ok(r) ? 0 : brq_db_error(db, r);
	PQclear(r);
	return rv;
}

int
brq_db_error(brq_db *db, const PGresult *r)
{
	const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg   = r != NULL ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (r != NULL) {
		snprintf(db->sqlstate, sizeof(db->sqlstate), "%s", state != NULL ? state : "");
		set_errmsg(db, msg != NULL ? msg : PQresultErrorMessage(r));
	} else {
		db->sqlstate[0] = '\0';
		if (db->errmsg[0] == '\0')
			set_errmsg(db, "no connection");
	}
	if (db->conn == NULL || r == NULL || state == NULL)
		return BRQ_EUNAVAIL; // no server answer: the connection failed
	if (strcmp(state, "57014") == 0)
		return BRQ_ETIMEDOUT; // canceled: statement_timeout or our deadline
	// 25006: this session cannot write (a standby reached without
	// target_session_attrs=read-write, a primary with default_transaction_read_only)
	// and never will: drop it, so that the next one walks the DSN's hosts again.
	if (strcmp(state, "25006") == 0) {
		lose(db);
		return BRQ_EUNAVAIL;
	}
	// 08 connection exception, 57 operator intervention (shutdown), 53 insufficient
	// resources, 40 serialization failure or deadlock: retrying helps.
	if (strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 || strncmp(state, "53", 2) == 0 ||
	    strncmp(state, "40", 2) == 0)
		return BRQ_EUNAVAIL;
	if (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0)
		return BRQ_EINVAL;
	return BRQ_EINTERNAL;
}

// Opens db->conn without blocking past connect_timeout_ms (or a stop). Returns 0
// or BRQ_EUNAVAIL (db->errmsg set, no connection).
static int
open_conn(brq_db *db)
{
	// The DSN (keyword/value or URI) is expanded last, so the operator's own
	// settings win over ours.
	const char *const kw[]  = {"fallback_application_name", "dbname", NULL};
	const char *const val[] = {db->o.app_name != NULL ? db->o.app_name : "brooq-gateway", db->dsn, NULL};

	db->conn = PQconnectStartParams(kw, val, 1);
	if (db->conn == NULL) {
		set_errmsg(db, "out of memory");
		return BRQ_EUNAVAIL;
	}
	uint64_t                  deadline = brq_now_ms() + db->o.connect_timeout_ms;
	PostgresPollingStatusType st       = PGRES_POLLING_WRITING;
	while (PQstatus(db->conn) != CONNECTION_BAD && st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
		int rv = wait_socket(db, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
		if (rv <= 0) {
			set_errmsg(db, rv == 0 ? "connect timed out" : "stopping");
			drop(db);
			return BRQ_EUNAVAIL;
		}
		st = PQconnectPoll(db->conn);
	}
	if (PQstatus(db->conn) != CONNECTION_OK) {
		set_errmsg(db, PQerrorMessage(db->conn));
		drop(db);
		return BRQ_EUNAVAIL;
	}
	PQsetNoticeProcessor(db->conn, NULL, NULL);
	return 0;
}

// Prepares every statement, then runs the session settings. Setup is bounded by its
// own deadline (connect_timeout_ms a step), not by the settings: they are for the
// connection's work (the monitor's statement_timeout is its counting budget, tens of
// ms in tests, which a PREPARE on a busy server overran, and every reconnect failed
// the same way). Statements are planned when they run, so the settings still apply to
// their plans. Returns 0 or BRQ_EUNAVAIL.
static int
setup_conn(brq_db *db)
{
	PGresult *r;
	for (size_t i = 0; i < db->o.n_stmts && db->conn != NULL; i++) {
		const brq_db_stmt *s = &db->o.stmts[i];
		if (!PQsendPrepare(db->conn, s->name, s->text, s->nparams, NULL)) {
			set_errmsg(db, PQerrorMessage(db->conn));
			return BRQ_EUNAVAIL;
		}
		r = collect(db, brq_now_ms() + db->o.connect_timeout_ms);
		if (!brq_db_ok(r)) {
			(void) brq_db_error(db, r);
			BRQ_LOG_ERROR("db_prepare_failed", "conn=%s stmt=%s error=%s", db->o.name, s->name,
				      BRQ_LOG_Q(db->errmsg));
			PQclear(r);
			return BRQ_EUNAVAIL;
		}
		PQclear(r);
	}
	if (db->o.session_sql != NULL && db->conn != NULL) {
		r = brq_db_query(db, db->o.session_sql, brq_now_ms() + db->o.connect_timeout_ms);
		if (!brq_db_ok(r)) {
			(void) brq_db_error(db, r);
			PQclear(r);
			return BRQ_EUNAVAIL;
		}
		PQclear(r);
	}
	return db->conn != NULL ? 0 : BRQ_EUNAVAIL;
}

bool
brq_db_ready(brq_db *db)
{
	if (db->conn != NULL && PQstatus(db->conn) == CONNECTION_OK)
		return true;
	drop(db);
	if (brq_now_ms() < db->retry_at_ms || is_stopping(db))
		return false;
	if (open_conn(db) == 0 &&
	    (db->o.on_connect == NULL || db->o.on_connect(db, db->o.on_connect_arg) == 0) &&
	    setup_conn(db) == 0) {
		BRQ_LOG_INFO("db_connected", "conn=%s", db->o.name);
		db->backoff_ms = db->o.backoff_min_ms;
		db->n_connects++;
		return true;
	}
	BRQ_LOG_WARN("db_connect_failed", "conn=%s error=%s", db->o.name, BRQ_LOG_Q(db->errmsg));
	drop(db);
	db->retry_at_ms = brq_now_ms() + db->backoff_ms;
	db->backoff_ms =
		db->backoff_ms * 2 > db->o.backoff_max_ms ? db->o.backoff_max_ms : db->backoff_ms * 2;
	return false;
}

bool
brq_db_dsn_valid(const char *dsn)
{
	char             *err  = NULL;
	PQconninfoOption *opts = PQconninfoParse(dsn, &err);
	if (err != NULL) {
		// The message can quote part of the string (a password): wipe, never print.
		sodium_memzero(err, strlen(err));
		PQfreemem(err);
	}
	if (opts == NULL) {
		return false;
	}
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
		if (o->val != NULL) {
			sodium_memzero(o->val, strlen(o->val));
		}
	}
	PQconninfoFree(opts);
	return true;
}
