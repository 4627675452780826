// SPDX-License-Identifier: MIT
// Depth monitor: its own libpq connection, one cheap depth query a tick, and the health verdict for /healthz.
#include "monitor.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "log.h"
#include "metrics.h"

// Longest a blocking step (poll, condvar wait) runs before re-checking is_stopping
// and refreshing brooq_db_up.
#define SLICE_MS 100
// Health: a round trip within max(HEALTH_INTERVALS x interval, HEALTH_MIN_MS).
#define HEALTH_INTERVALS 3
#define HEALTH_MIN_MS    3000
// Reconnect backoff: starts at the interval, doubles, stops at max(interval, this).
#define BACKOFF_MAX_MS 5000
// The server enforces statement_timeout = budget; an answer that has not come
// QUERY_GRACE_MS after that means the server or the network is gone.
#define QUERY_GRACE_MS 5000
// A depth query that took d runs again after max(its period, THROTTLE x d).
#define THROTTLE 10
// Terminal sampling: TABLESAMPLE percentage bounds (100 = exact count).
#define SAMPLE_MIN_PCT          0.01
#define SQLSTATE_QUERY_CANCELED "57014"

// Session settings: every statement bounded by the budget (so a round trip never
// outlives the health window), never wait long behind a lock (e.g. a migration
// holding ACCESS EXCLUSIVE), never write by mistake, and no parallel workers: this
// is background work and stays on one core rather than compete with the claim path.
#define SESSION_SQL_FMT                                          \
	"SET statement_timeout = %llu; SET lock_timeout = %llu;" \
	" SET default_transaction_read_only = on;"               \
	" SET max_parallel_workers_per_gather = 0"

// Active rows only. Each branch's WHERE is exactly the predicate of a partial index
// (job_claim_topic_idx, job_lease_expiry_idx), so on a big table the planner reads those
// small indexes (plus the heap pages of active rows) instead of the whole table: the
// cost follows the backlog, not the history. Age: now() minus the oldest
// available_at among ready rows; 0 when none is ready.
static const char active_sql[] = "SELECT topic, state, count(*),"
				 " COALESCE(EXTRACT(EPOCH FROM now() - min(available_at)"
				 "   FILTER (WHERE available_at <= now())), 0)"
				 " FROM job WHERE state IN ('pending', 'failed') GROUP BY topic, state"
				 " UNION ALL"
				 " SELECT topic, 'processing', count(*), 0"
				 " FROM job WHERE state = 'processing' GROUP BY topic"
				 " ORDER BY 1";

// Terminal rows: the bulk of the table (until retention deletes them), so this runs
// every terminal_interval_ms only, exactly while it fits the budget. When it does
// not, the monitor switches to an estimate over a TABLESAMPLE SYSTEM page sample
// (%s: "" or " TABLESAMPLE SYSTEM (p)"), scaled up by 100/p.
static const char terminal_sql_fmt[] =
	"SELECT topic, state, count(*)"
	" FROM job%s WHERE state IN ('done', 'dead', 'canceled') GROUP BY topic, state"
	" ORDER BY 1";

// Outcome of one statement.
enum qres {
	Q_OK = 0,     // a result (the caller PQclear()s it)
	Q_SQL_ERROR,  // the server answered with an error (m->sqlstate): connection usable
	Q_CONN_ERROR, // no answer: the connection is in an unknown state, drop it
};

// One topic's counts while a snapshot is assembled.
struct mrow {
	char    *topic; // owned
	size_t   len;
	uint64_t count[BRQ_STATE__COUNT];
	double   age_s;
};

struct rows {
	struct mrow *v;
	size_t       n;
	size_t       cap;
};

struct brq_monitor {
	// Set at start, read-only afterwards.
	char    *dsn; // secret: never logged; wiped at stop
	uint64_t interval_ms;
	uint64_t terminal_interval_ms;
	uint64_t connect_timeout_ms;
	void (*on_ready)(void *arg, const char *topic, size_t topic_len);
	void    *on_ready_arg;
	uint64_t health_window_ms;
	uint64_t budget_ms; // statement_timeout of every monitor statement

	pthread_t        thread;
	pthread_mutex_t  mu; // guards the condvar wait only
	pthread_cond_t   cv; // CLOCK_MONOTONIC; signalled by brq_monitor_stop
	atomic_bool      is_stopping;
	_Atomic uint64_t last_ok_ms; // monotonic ms of the last good round trip, 0 = never

	// Owned by the thread.
	PGconn     *conn;
	bool        is_down;           // an outage was logged; the next success logs the recovery
	struct rows terminal;          // last terminal counts (only done/dead/canceled filled)
	double      sample_pct;        // terminal count: 100 = exact, else TABLESAMPLE percentage
	bool        is_depth_slow;     // the active count timed out; logged once until it recovers
	bool        was_terminal_last; // the last count run was the terminal one
	uint64_t    next_depth_ms;
	uint64_t    next_terminal_ms;
	char        sqlstate[6]; // of the last Q_SQL_ERROR
	char        why[256];    // last error, one line, for logs
};

static uint64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static uint64_t
max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static bool
is_stopping(struct brq_monitor *m)
{
	return atomic_load_explicit(&m->is_stopping, memory_order_acquire);
}

bool
brq_monitor_healthy(void *arg)
{
	struct brq_monitor *m = arg;
	if (m == NULL) {
		return false;
	}
	uint64_t last = atomic_load_explicit(&m->last_ok_ms, memory_order_acquire);
	return last != 0 && now_ms() - last <= m->health_window_ms;
}

static void
refresh_db_up(struct brq_monitor *m)
{
	brq_metrics_db_up_set(brq_monitor_healthy(m) ? 1 : 0);
}

// Records why something failed, as one printable line (libpq messages end in '\n'
// and may span lines). Never includes the DSN: libpq messages name host and port
// at most.
static void
set_why(struct brq_monitor *m, const char *msg)
{
	snprintf(m->why, sizeof(m->why), "%s", msg != NULL && *msg != '\0' ? msg : "unknown error");
	for (char *p = m->why; *p != '\0'; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t') {
			*p = ' ';
		}
	}
	size_t n = strlen(m->why);
	while (n > 0 && m->why[n - 1] == ' ') {
		m->why[--n] = '\0';
	}
}

// Waits on the condvar until deadline (monotonic ms) or stop, in slices so that
// brooq_db_up follows the health verdict while idle. Returns false when stopping.
static bool
sleep_until(struct brq_monitor *m, uint64_t deadline_ms)
{
	pthread_mutex_lock(&m->mu);
	while (!is_stopping(m)) {
		uint64_t now = now_ms();
		if (now >= deadline_ms) {
			break;
		}
		uint64_t        wake = deadline_ms - now > 500 ? now + 500 : deadline_ms;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t) ts.tv_nsec + (wake - now) * 1000000;
		ts.tv_sec += (time_t) (ns / 1000000000);
		ts.tv_nsec = (long) (ns % 1000000000);
		pthread_cond_timedwait(&m->cv, &m->mu, &ts);
		pthread_mutex_unlock(&m->mu);
		refresh_db_up(m);
		pthread_mutex_lock(&m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return !is_stopping(m);
}

// Waits until the connection's socket is ready for `events`. Returns 1 when ready,
// 0 on deadline, -1 when stopping or on a poll error.
static int
wait_socket(struct brq_monitor *m, short events, uint64_t deadline_ms)
{
	for (;;) {
		if (is_stopping(m)) {
			return -1;
		}
		int fd = PQsocket(m->conn);
		if (fd < 0) {
			return -1;
		}
		uint64_t now = now_ms();
		if (now >= deadline_ms) {
			return 0;
		}
		uint64_t      slice = deadline_ms - now < SLICE_MS ? deadline_ms - now : SLICE_MS;
		struct pollfd p     = {.fd = fd, .events = events};
		int           rv    = poll(&p, 1, (int) slice);
		if (rv > 0) {
			return 1;
		}
		if (rv < 0 && errno != EINTR) {
			return -1;
		}
		refresh_db_up(m);
	}
}

static void
disconnect(struct brq_monitor *m)
{
	if (m->conn != NULL) {
		PQfinish(m->conn);
		m->conn = NULL;
	}
}

// Every answer from the server, result or error, proves it is reachable.
static void
note_answer(struct brq_monitor *m)
{
	atomic_store_explicit(&m->last_ok_ms, now_ms(), memory_order_release);
	brq_metrics_db_up_set(1);
}

// Runs sql (one or more statements). Q_OK: *out holds the last result (the caller
// PQclear()s it). Q_SQL_ERROR: the server refused (m->sqlstate, m->why); the
// connection is idle and usable. Q_CONN_ERROR: no complete answer (m->why); the
// caller drops the connection.
static enum qres
query(struct brq_monitor *m, const char *sql, PGresult **out)
{
	PGresult *last      = NULL;
	bool      is_failed = false;
	uint64_t  deadline  = now_ms() + m->budget_ms + QUERY_GRACE_MS;

	*out = NULL;
	if (!PQsendQuery(m->conn, sql)) {
		set_why(m, PQerrorMessage(m->conn));
		return Q_CONN_ERROR;
	}
	for (;;) {
		while (PQisBusy(m->conn)) {
			int rv = wait_socket(m, POLLIN, deadline);
			if (rv <= 0) {
				set_why(m, rv == 0 ? "no answer in time" : "stopping");
				PQclear(last);
				return Q_CONN_ERROR;
			}
			if (!PQconsumeInput(m->conn)) {
				set_why(m, PQerrorMessage(m->conn));
				PQclear(last);
				return Q_CONN_ERROR;
			}
		}
		PGresult *r = PQgetResult(m->conn);
		if (r == NULL) {
			break;
		}
		ExecStatusType st = PQresultStatus(r);
		if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK && !is_failed) {
			const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
			snprintf(m->sqlstate, sizeof(m->sqlstate), "%s", code != NULL ? code : "");
			set_why(m, PQresultErrorMessage(r));
			is_failed = true;
		}
		PQclear(last);
		last = r;
	}
	if (PQstatus(m->conn) != CONNECTION_OK) {
		set_why(m, PQerrorMessage(m->conn));
		PQclear(last);
		return Q_CONN_ERROR;
	}
	if (is_failed || last == NULL) {
		if (last == NULL) {
			set_why(m, "no result");
		}
		PQclear(last);
		// The server answered: that is a round trip, even if the statement failed.
		note_answer(m);
		return Q_SQL_ERROR;
	}
	note_answer(m);
	*out = last;
	return Q_OK;
}

// Opens m->conn (non-blocking connect with our own deadline, so a stop or a dead
// host never hangs the thread) and applies the session settings. Returns 0 or -1
// (m->why set, m->conn NULL).
static int
connect_db(struct brq_monitor *m)
{
	// expand_dbname: the DSN (keyword/value or URI) fills in every parameter; the
	// fallback application name applies only when the DSN names none.
	const char *const kw[]  = {"fallback_application_name", "dbname", NULL};
	const char *const val[] = {"brooq-monitor", m->dsn, NULL};
	char              session_sql[256];

	m->conn = PQconnectStartParams(kw, val, 1);
	if (m->conn == NULL) {
		set_why(m, "out of memory");
		return -1;
	}
	if (PQstatus(m->conn) == CONNECTION_BAD) {
		set_why(m, PQerrorMessage(m->conn));
		disconnect(m);
		return -1;
	}
	uint64_t                  deadline = now_ms() + m->connect_timeout_ms;
	PostgresPollingStatusType st       = PGRES_POLLING_WRITING;
	while (st != PGRES_POLLING_OK) {
		if (st == PGRES_POLLING_FAILED) {
			set_why(m, PQerrorMessage(m->conn));
			disconnect(m);
			return -1;
		}
		int rv = wait_socket(m, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
		if (rv <= 0) {
			set_why(m, rv == 0 ? "connect timed out" : "stopping");
			disconnect(m);
			return -1;
		}
		st = PQconnectPoll(m->conn);
	}
	snprintf(session_sql, sizeof(session_sql), SESSION_SQL_FMT, (unsigned long long) m->budget_ms,
		 (unsigned long long) m->budget_ms);
	PGresult *r;
	if (query(m, session_sql, &r) != Q_OK) {
		disconnect(m);
		return -1;
	}
	PQclear(r);
	return 0;
}

static void
rows_clear(struct rows *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->v[i].topic);
	}
	free(rs->v);
	rs->v = NULL;
	rs->n = rs->cap = 0;
}

// The row for topic: the last one if it matches (results come ORDER BY topic, so
// equal topics are adjacent), else a new one. NULL when out of memory.
static struct mrow *
rows_at(struct rows *rs, const char *topic, size_t len)
{
	if (rs->n > 0) {
		struct mrow *last = &rs->v[rs->n - 1];
		if (last->len == len && memcmp(last->topic, topic, len) == 0) {
			return last;
		}
	}
	if (rs->n == rs->cap) {
		size_t       ncap = rs->cap == 0 ? 16 : rs->cap * 2;
		struct mrow *nv   = realloc(rs->v, ncap * sizeof(*nv));
		if (nv == NULL) {
			return NULL;
		}
		rs->v   = nv;
		rs->cap = ncap;
	}
	struct mrow *r = &rs->v[rs->n];
	memset(r, 0, sizeof(*r));
	r->topic = malloc(len + 1);
	if (r->topic == NULL) {
		return NULL;
	}
	memcpy(r->topic, topic, len);
	r->topic[len] = '\0';
	r->len        = len;
	rs->n++;
	return r;
}

static int
mrow_cmp(const void *a, const void *b)
{
	const struct mrow *x = a, *y = b;
	size_t             n = x->len < y->len ? x->len : y->len;
	int                c = memcmp(x->topic, y->topic, n);
	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

// Reads (topic, state, count[, age]) rows into rs, counts multiplied by scale (an
// estimate from a sample). Returns 0 or -1 (malformed, or out of memory).
static int
parse_counts(struct brq_monitor *m, PGresult *r, struct rows *rs, bool has_age, double scale)
{
	int n = PQntuples(r);
	if (PQnfields(r) != (has_age ? 4 : 3)) {
		set_why(m, "unexpected result shape");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *topic = PQgetvalue(r, i, 0);
		const char *state = PQgetvalue(r, i, 1);
		int         st    = brq_state_lookup(state, (size_t) PQgetlength(r, i, 1));
		if (st < 0) {
			continue; // a state this build does not know: not ours to count
		}
		struct mrow *row = rows_at(rs, topic, (size_t) PQgetlength(r, i, 0));
		if (row == NULL) {
			set_why(m, "out of memory");
			return -1;
		}
		uint64_t c = strtoull(PQgetvalue(r, i, 2), NULL, 10);
		row->count[st] += scale == 1 ? c : (uint64_t) ((double) c * scale + 0.5);
		if (has_age) {
			double age = strtod(PQgetvalue(r, i, 3), NULL);
			if (age > row->age_s) {
				row->age_s = age;
			}
		}
	}
	// No rows leaves rs->v NULL, and qsort(NULL, 0, ...) is undefined behaviour.
	if (rs->n > 1) {
		qsort(rs->v, rs->n, sizeof(*rs->v), mrow_cmp);
	}
	return 0;
}

// Merges fresh active counts with the cached terminal counts (both sorted by topic)
// and publishes the snapshot. Returns 0 or -1 (out of memory; nothing published).
static int
publish(struct brq_monitor *m, const struct rows *active)
{
	size_t         cap = active->n + m->terminal.n;
	brq_depth_row *out = calloc(cap > 0 ? cap : 1, sizeof(*out));
	if (out == NULL) {
		set_why(m, "out of memory");
		return -1;
	}
	size_t i = 0, j = 0, n = 0;
	while (i < active->n || j < m->terminal.n) {
		const struct mrow *a    = i < active->n ? &active->v[i] : NULL;
		const struct mrow *t    = j < m->terminal.n ? &m->terminal.v[j] : NULL;
		int                c    = a == NULL ? 1 : t == NULL ? -1 : mrow_cmp(a, t);
		const struct mrow *name = c <= 0 ? a : t;
		brq_depth_row     *d    = &out[n++];
		d->topic                = name->topic;
		d->topic_len            = name->len;
		if (c <= 0) {
			d->count[BRQ_STATE_PENDING]    = a->count[BRQ_STATE_PENDING];
			d->count[BRQ_STATE_PROCESSING] = a->count[BRQ_STATE_PROCESSING];
			d->count[BRQ_STATE_FAILED]     = a->count[BRQ_STATE_FAILED];
			d->oldest_ready_age_s          = a->age_s;
			i++;
		}
		if (c >= 0) {
			d->count[BRQ_STATE_DONE]     = t->count[BRQ_STATE_DONE];
			d->count[BRQ_STATE_DEAD]     = t->count[BRQ_STATE_DEAD];
			d->count[BRQ_STATE_CANCELED] = t->count[BRQ_STATE_CANCELED];
			j++;
		}
	}
	brq_metrics_depth_set(out, n);
	for (size_t k = 0; m->on_ready != NULL && k < n; k++)
		if (out[k].oldest_ready_age_s > 0)
			m->on_ready(m->on_ready_arg, out[k].topic, out[k].topic_len);
	free(out);
	return 0;
}

// The terminal count (exact, or estimated from a page sample when the table is too
// big for the budget). Returns 0, or -1 when the connection must be dropped.
static int
terminal_count(struct brq_monitor *m)
{
	char        sample[64] = "", sql[sizeof(terminal_sql_fmt) + sizeof(sample)];
	struct rows term       = {0};
	PGresult   *r;
	uint64_t    t0  = now_ms();
	double      pct = m->sample_pct;

	if (pct < 100) {
		snprintf(sample, sizeof(sample), " TABLESAMPLE SYSTEM (%.4f)", pct);
	}
	snprintf(sql, sizeof(sql), terminal_sql_fmt, sample);
	enum qres q    = query(m, sql, &r);
	uint64_t  took = now_ms() - t0;
	if (q == Q_CONN_ERROR) {
		return -1;
	}
	if (q == Q_SQL_ERROR) {
		if (strcmp(m->sqlstate, SQLSTATE_QUERY_CANCELED) == 0 && pct > SAMPLE_MIN_PCT) {
			// Too big for the budget: sample fewer pages and retry soon.
			m->sample_pct = pct >= 100 ? 10 : pct / 4 < SAMPLE_MIN_PCT ? SAMPLE_MIN_PCT : pct / 4;
			m->next_terminal_ms = now_ms() + m->interval_ms;
			BRQ_LOG_WARN("monitor_terminal_count_sampled", "budget_ms=%llu sample_pct=%.4f",
				     (unsigned long long) m->budget_ms, m->sample_pct);
		} else {
			m->next_terminal_ms = now_ms() + m->terminal_interval_ms;
			BRQ_LOG_WARN("monitor_terminal_count_failed", "sqlstate=%s reason=%s",
				     BRQ_LOG_Q(m->sqlstate), BRQ_LOG_Q(m->why));
		}
		return 0;
	}
	int rv = parse_counts(m, r, &term, false, 100 / pct);
	PQclear(r);
	if (rv != 0) {
		rows_clear(&term);
		m->next_terminal_ms = now_ms() + m->terminal_interval_ms;
		return 0;
	}
	rows_clear(&m->terminal);
	m->terminal         = term;
	m->next_terminal_ms = t0 + max_u64(m->terminal_interval_ms, THROTTLE * took);
	// Well inside the budget: try a bigger sample (eventually exact) next time.
	if (pct < 100 && took * 8 < m->budget_ms) {
		m->sample_pct = pct * 2 >= 100 ? 100 : pct * 2;
	}
	return 0;
}

// The active count and oldest ready age, published with the cached terminal counts.
// Returns 0, or -1 when the connection must be dropped.
static int
depth_count(struct brq_monitor *m)
{
	struct rows active = {0};
	PGresult   *r;
	uint64_t    t0   = now_ms();
	enum qres   q    = query(m, active_sql, &r);
	uint64_t    took = now_ms() - t0;

	if (q == Q_CONN_ERROR) {
		return -1;
	}
	m->next_depth_ms = t0 + max_u64(m->interval_ms, THROTTLE * took);
	if (q == Q_SQL_ERROR) {
		// Millions of active rows do not fit the budget: the gauges keep their last
		// values (documented) and the count is retried less often.
		if (!m->is_depth_slow) {
			m->is_depth_slow = true;
			BRQ_LOG_WARN("monitor_depth_count_failed", "sqlstate=%s reason=%s budget_ms=%llu",
				     BRQ_LOG_Q(m->sqlstate), BRQ_LOG_Q(m->why),
				     (unsigned long long) m->budget_ms);
		}
		return 0;
	}
	if (m->is_depth_slow) {
		m->is_depth_slow = false;
		BRQ_LOG_INFO("monitor_depth_count_ok", "took_ms=%llu", (unsigned long long) took);
	}
	if (parse_counts(m, r, &active, true, 1) == 0) {
		publish(m, &active);
	}
	PQclear(r);
	rows_clear(&active);
	return 0;
}

// One tick on a live connection:
//   1. a `SELECT 1` round trip (health stays fresh whatever the counts cost);
//   2. at most one count, each bounded by the budget: the terminal count when it is
//      due, otherwise the active count when it is due.
// So the gap between two answers never exceeds max(interval, budget) plus a ping,
// below the health window. Returns 0, or -1 when the connection must be dropped.
static int
tick(struct brq_monitor *m)
{
	PGresult *r;
	if (query(m, "SELECT 1", &r) != Q_OK) {
		return -1;
	}
	PQclear(r);
	uint64_t now             = now_ms();
	bool     is_terminal_due = now >= m->next_terminal_ms;
	bool     is_depth_due    = now >= m->next_depth_ms;
	// Both due: take turns, so neither count starves the other.
	if (is_terminal_due && (!is_depth_due || !m->was_terminal_last)) {
		m->was_terminal_last = true;
		return terminal_count(m);
	}
	if (is_depth_due) {
		m->was_terminal_last = false;
		return depth_count(m);
	}
	return 0;
}

static void
note_failure(struct brq_monitor *m)
{
	if (!m->is_down) {
		m->is_down = true;
		BRQ_LOG_WARN("monitor_db_unavailable", "reason=%s", BRQ_LOG_Q(m->why));
	} else {
		BRQ_LOG_DEBUG("monitor_db_unavailable", "reason=%s", BRQ_LOG_Q(m->why));
	}
}

static void
note_recovery(struct brq_monitor *m)
{
	if (m->is_down) {
		m->is_down = false;
		BRQ_LOG_INFO("monitor_db_available", NULL);
	}
}

static void *
monitor_main(void *arg)
{
	struct brq_monitor *m           = arg;
	uint64_t            backoff_cap = max_u64(m->interval_ms, BACKOFF_MAX_MS);
	uint64_t            backoff     = m->interval_ms;

	while (!is_stopping(m)) {
		uint64_t start = now_ms();
		int      rv    = m->conn != NULL ? 0 : connect_db(m);
		if (rv == 0) {
			rv = tick(m);
		}
		if (is_stopping(m)) {
			break;
		}
		if (rv == 0) {
			note_recovery(m);
			backoff = m->interval_ms;
			sleep_until(m, start + m->interval_ms);
			continue;
		}
		// 1. Forget the connection (its state is unknown). 2. Let the verdict age
		// out (health stays true until the window passes, so one lost packet does
		// not flap /healthz). 3. Retry after a growing pause.
		disconnect(m);
		refresh_db_up(m);
		note_failure(m);
		sleep_until(m, now_ms() + backoff);
		backoff = backoff * 2 > backoff_cap ? backoff_cap : backoff * 2;
	}
	disconnect(m);
	return NULL;
}

static void
monitor_free(struct brq_monitor *m)
{
	if (m == NULL) {
		return;
	}
	if (m->dsn != NULL) {
		// The DSN may hold a password: wipe it (volatile so it is not optimised out).
		volatile char *p = m->dsn;
		while (*p != '\0') {
			*p++ = '\0';
		}
		free(m->dsn);
	}
	rows_clear(&m->terminal);
	free(m);
}

int
brq_monitor_start(const struct brq_config *cfg, const struct brq_monitor_opts *opts, struct brq_monitor **out)
{
	struct brq_monitor *m = calloc(1, sizeof(*m));
	pthread_condattr_t  ca;
	bool                has_mu = false, has_cv = false;
	int                 rv = -ENOMEM;

	if (m == NULL) {
		return -ENOMEM;
	}
	m->dsn = strdup(cfg->dsn != NULL ? cfg->dsn : "");
	if (m->dsn == NULL) {
		goto fail;
	}
	m->interval_ms =
		opts != NULL && opts->interval_ms != 0 ? opts->interval_ms : BRQ_MONITOR_DEFAULT_INTERVAL_MS;
	m->terminal_interval_ms = opts != NULL && opts->terminal_interval_ms != 0
		? opts->terminal_interval_ms
		: BRQ_MONITOR_DEFAULT_TERMINAL_INTERVAL_MS;
	m->terminal_interval_ms = max_u64(m->terminal_interval_ms, m->interval_ms);
	if (opts != NULL) {
		m->on_ready     = opts->on_ready;
		m->on_ready_arg = opts->on_ready_arg;
	}
	m->connect_timeout_ms =
		opts != NULL && opts->connect_timeout_ms != 0 ? opts->connect_timeout_ms : 5000;
	m->health_window_ms = max_u64(HEALTH_INTERVALS * m->interval_ms, HEALTH_MIN_MS);
	// Half the window: a count that runs out its budget still leaves the next
	// answer inside the window.
	m->budget_ms  = opts != NULL && opts->budget_ms != 0 ? opts->budget_ms : m->health_window_ms / 2;
	m->sample_pct = 100;

	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		goto fail;
	}
	has_mu = true;
	if (pthread_condattr_init(&ca) != 0) {
		goto fail;
	}
	int crv = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (crv == 0) {
		crv = pthread_cond_init(&m->cv, &ca);
	}
	pthread_condattr_destroy(&ca);
	if (crv != 0) {
		goto fail;
	}
	has_cv = true;

	// The thread takes no signals: they belong to the main thread's handling.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int trv = pthread_create(&m->thread, NULL, monitor_main, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (trv != 0) {
		rv = -EAGAIN;
		goto fail;
	}
	BRQ_LOG_INFO("monitor_start", "interval_ms=%llu terminal_interval_ms=%llu",
		     (unsigned long long) m->interval_ms, (unsigned long long) m->terminal_interval_ms);
	*out = m;
	return 0;

fail:
	if (has_cv) {
		pthread_cond_destroy(&m->cv);
	}
	if (has_mu) {
		pthread_mutex_destroy(&m->mu);
	}
	monitor_free(m);
	return rv;
}

void
brq_monitor_stop(struct brq_monitor *m)
{
	if (m == NULL) {
		return;
	}
	pthread_mutex_lock(&m->mu);
	atomic_store_explicit(&m->is_stopping, true, memory_order_release);
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->thread, NULL);
	brq_metrics_db_up_set(0);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	monitor_free(m);
	BRQ_LOG_INFO("monitor_stopped", NULL);
}
