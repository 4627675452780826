// SPDX-License-Identifier: MIT
// Depth monitor: its own store connection, one cheap depth query a tick, and the health verdict for /healthz.
#include "monitor.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgthread.h"
#include "brq_clock.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "store/store.h"

// Health: a round trip within max(HEALTH_INTERVALS x interval, HEALTH_MIN_MS).
#define HEALTH_INTERVALS 3
#define HEALTH_MIN_MS    3000
// The longest single wait between rounds: brooq_db_up is refreshed after each.
#define SLICE_MS 500
// Reconnect backoff: starts at the interval, doubles, stops at max(interval, this).
#define BACKOFF_MAX_MS 5000
// A depth query that took d runs again after max(its period, THROTTLE x d).
#define THROTTLE 10
// Terminal sampling: TABLESAMPLE percentage bounds (100 = exact count).
#define SAMPLE_MIN_PCT 0.01

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
	uint64_t interval_ms;
	uint64_t terminal_interval_ms;
	void (*on_ready)(void *arg, const char *topic, size_t topic_len);
	void        *on_ready_arg;
	brq_figures *figures;
	uint64_t     health_window_ms;
	uint64_t     budget_ms; // statement_timeout of every monitor statement

	brq_bgthread     bg;         // the thread and its connection (bg.conn)
	_Atomic uint64_t last_ok_ms; // monotonic ms of the last good round trip, 0 = never

	// Owned by the thread.
	bool        is_down;           // an outage was logged; the next success logs the recovery
	struct rows terminal;          // last terminal counts (only done/dead/canceled filled)
	bool        is_estimated;      // they came from a page sample, not an exact count
	double      sample_pct;        // terminal count: 100 = exact, else TABLESAMPLE percentage
	bool        is_depth_slow;     // the active count timed out; logged once until it recovers
	bool        is_table_failed;   // the table stats failed; logged once until they recover
	bool        was_terminal_last; // the last count run was the terminal one
	uint64_t    next_depth_ms;
	uint64_t    next_terminal_ms;
};

static uint64_t
max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

bool
brq_monitor_healthy(void *arg)
{
	brq_monitor *m = arg;
	return m != NULL && brq_recent(&m->last_ok_ms, m->health_window_ms);
}

// brooq_db_up from the health verdict. Also the thread's on_slice (bgthread.h): while
// it sleeps between rounds, every SLICE_MS, so the gauge follows the verdict while idle.
static void
refresh_db_up(void *m)
{
	brq_metrics_db_up_set(brq_monitor_healthy(m) ? 1 : 0);
}

// Every answer from the server, result or error, proves it is reachable.
static void
note_answer(brq_monitor *m)
{
	uint64_t last = brq_store_last_answer_ms(&m->bg.conn);
	if (last > atomic_load_explicit(&m->last_ok_ms, memory_order_acquire)) {
		atomic_store_explicit(&m->last_ok_ms, last, memory_order_release);
		brq_metrics_db_up_set(1);
	}
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

// Groups the store's (topic, state, count, age) rows per topic into rs, sorted by
// topic. Returns 0 or BRQ_ENOMEM.
static int
group_counts(const brq_store_depth_row *rows, size_t n, struct rows *rs)
{
	for (size_t i = 0; i < n; i++) {
		struct mrow *row = rows_at(rs, rows[i].topic.ptr, rows[i].topic.len);
		if (row == NULL) {
			return BRQ_ENOMEM;
		}
		row->count[rows[i].state] += rows[i].count;
		if (rows[i].ready_age_s > row->age_s) {
			row->age_s = rows[i].ready_age_s;
		}
	}
	// No rows leaves rs->v NULL, and qsort(NULL, 0, ...) is undefined behaviour.
	// The database orders by its collation; the merge below needs byte order.
	if (rs->n > 1) {
		qsort(rs->v, rs->n, sizeof(*rs->v), mrow_cmp);
	}
	return 0;
}

// Merges fresh active counts with the cached terminal counts (both sorted by topic)
// and publishes the snapshot. Returns 0 or BRQ_ENOMEM (nothing published).
static int
publish(brq_monitor *m, const struct rows *active)
{
	size_t         cap = active->n + m->terminal.n;
	brq_depth_row *out = calloc(cap > 0 ? cap : 1, sizeof(*out));
	if (out == NULL) {
		return BRQ_ENOMEM;
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
	// The flag first: a scrape between the two calls sees an estimate marked as one
	// one round early rather than an estimate marked exact.
	brq_metrics_depth_estimated_set(m->is_estimated);
	brq_metrics_depth_set(out, n);
	for (size_t k = 0; m->on_ready != NULL && k < n; k++)
		if (out[k].oldest_ready_age_s > 0)
			m->on_ready(m->on_ready_arg, out[k].topic, out[k].topic_len);
	free(out);
	return 0;
}

// Publishes the terminal counts for the stats operation. Out of memory: stats keeps
// the previous ones (logged).
static void
share_terminal(brq_monitor *m)
{
	if (m->figures == NULL)
		return;
	brq_figures_row *rows = calloc(m->terminal.n > 0 ? m->terminal.n : 1, sizeof(*rows));
	int              rv   = BRQ_ENOMEM;
	if (rows != NULL) {
		for (size_t i = 0; i < m->terminal.n; i++) {
			rows[i] = (brq_figures_row) {.topic = m->terminal.v[i].topic,
						     .len   = m->terminal.v[i].len};
			memcpy(rows[i].count, m->terminal.v[i].count, sizeof(rows[i].count));
		}
		rv = brq_figures_set(m->figures, rows, m->terminal.n, m->is_estimated);
	}
	free(rows);
	if (rv != 0)
		BRQ_LOG_WARN("monitor_figures_failed", "error=%s", brq_err_name(rv));
}

// A depth count as the store gave it, and when it started and how long it took.
struct count {
	brq_store_depth_row *rows; // borrowed from the connection until its next reset
	size_t               n;
	uint64_t             t0; // brq_now_ms() at the start
	uint64_t             took_ms;
};

// Runs depth count `kind` (the terminal one over a pct percent page sample) into *c.
// 0 or the store's failure.
static int
run_count(brq_monitor *m, brq_store_depth_kind kind, double pct, struct count *c)
{
	c->t0 = brq_now_ms();
	// The budget bounds the counts alone (the session's statement_timeout is the whole
	// window, for the ping and the policy read): past it the count is canceled and the
	// connection kept (store.c SESSION_MONITOR).
	brq_store_set_deadline(&m->bg.conn, c->t0 + m->budget_ms);
	int rv = brq_store_depth(&m->bg.conn, kind, pct, &c->rows, &c->n);
	brq_store_set_deadline(&m->bg.conn, 0);
	c->took_ms = brq_now_ms() - c->t0;
	return rv;
}

// The terminal count (exact, or estimated from a page sample when the table is too
// big for the budget). Returns 0, or BRQ_EUNAVAIL when the connection was lost.
static int
terminal_count(brq_monitor *m)
{
	struct rows  term = {0};
	struct count c;
	double       pct = m->sample_pct;
	int          rv  = run_count(m, BRQ_DEPTH_TERMINAL, pct, &c);
	if (rv != 0 && !brq_store_is_up(&m->bg.conn)) {
		return BRQ_EUNAVAIL;
	}
	if (rv == BRQ_ETIMEDOUT && pct > SAMPLE_MIN_PCT) {
		// Too big for the budget: sample fewer pages and retry soon.
		m->sample_pct       = pct >= 100 ? 10 : pct / 4 < SAMPLE_MIN_PCT ? SAMPLE_MIN_PCT : pct / 4;
		m->next_terminal_ms = brq_now_ms() + m->interval_ms;
		BRQ_LOG_WARN("monitor_terminal_count_sampled", "budget_ms=%llu sample_pct=%.4f",
			     (unsigned long long) m->budget_ms, m->sample_pct);
		return 0;
	}
	if (rv == 0) {
		rv = group_counts(c.rows, c.n, &term);
	}
	if (rv != 0) {
		rows_clear(&term);
		m->next_terminal_ms = brq_now_ms() + m->terminal_interval_ms;
		BRQ_LOG_WARN("monitor_terminal_count_failed", "error=%s reason=%s", brq_err_name(rv),
			     BRQ_LOG_Q(brq_store_errmsg(&m->bg.conn)));
		return 0;
	}
	rows_clear(&m->terminal);
	m->terminal     = term;
	m->is_estimated = pct < 100;
	share_terminal(m);
	m->next_terminal_ms = c.t0 + max_u64(m->terminal_interval_ms, THROTTLE * c.took_ms);
	// Well inside the budget: try a bigger sample (eventually exact) next time.
	if (pct < 100 && c.took_ms * 8 < m->budget_ms) {
		m->sample_pct = pct * 2 >= 100 ? 100 : pct * 2;
	}
	return 0;
}

// The topics' pause and limits, for their gauges, read with the active count (a few
// rows of topic_policy). A failure leaves the gauges as they were.
static void
publish_policies(brq_monitor *m)
{
	brq_topic_policy *p;
	uint32_t          n;
	if (brq_store_policy_list(&m->bg.conn, &p, &n) != 0)
		return;
	brq_policy_row *rows = calloc(n > 0 ? n : 1, sizeof(*rows));
	if (rows == NULL)
		return;
	for (uint32_t i = 0; i < n; i++)
		rows[i] = (brq_policy_row) {.topic       = p[i].topic.ptr,
					    .topic_len   = p[i].topic.len,
					    .paused      = p[i].paused,
					    .max_running = p[i].max_running,
					    .rate_per_s  = p[i].rate_per_s};
	brq_metrics_policy_set(rows, n);
	free(rows);
}

// The job table's upkeep and the oldest transaction, for the table gauges, read with
// the active count under the same budget (statistics and file sizes: well under a
// millisecond, whatever the table holds). A failure leaves the gauges as they were.
static void
publish_table(brq_monitor *m)
{
	brq_store_table_figures t;
	brq_store_set_deadline(&m->bg.conn, brq_now_ms() + m->budget_ms);
	int rv = brq_store_table_stats(&m->bg.conn, &t);
	brq_store_set_deadline(&m->bg.conn, 0);
	if (rv != 0) {
		if (!m->is_table_failed)
			BRQ_LOG_WARN("monitor_table_stats_failed", "error=%s reason=%s", brq_err_name(rv),
				     BRQ_LOG_Q(brq_store_errmsg(&m->bg.conn)));
		m->is_table_failed = true;
		return;
	}
	m->is_table_failed = false;
	brq_metrics_table_set(&(brq_table_stats) {
		.dead_tuples       = t.dead_tuples > 0 ? (uint64_t) t.dead_tuples : 0,
		.live_tuples       = t.live_tuples > 0 ? (uint64_t) t.live_tuples : 0,
		.bytes             = t.bytes > 0 ? (uint64_t) t.bytes : 0,
		.index_bytes       = t.index_bytes > 0 ? (uint64_t) t.index_bytes : 0,
		.autovacuums       = t.autovacuums > 0 ? (uint64_t) t.autovacuums : 0,
		.autovacuum_age_s  = t.autovacuum_age_s,
		.vacuum_age_s      = t.vacuum_age_s,
		.oldest_xact_age_s = t.oldest_xact_age_s,
	});
}

// Tells the stats operation's figures which topics have active rows now, so that one
// whose jobs all end before the next terminal count stays in `stats` (figures.h). Out
// of memory: logged; stats may miss such a topic until the next count.
static void
note_active(brq_monitor *m, const struct rows *active)
{
	if (m->figures == NULL || active->n == 0)
		return;
	brq_str *topics = calloc(active->n, sizeof(*topics));
	int      rv     = BRQ_ENOMEM;
	if (topics != NULL) {
		for (size_t i = 0; i < active->n; i++)
			topics[i] = (brq_str) {.ptr = active->v[i].topic, .len = (uint32_t) active->v[i].len};
		rv = brq_figures_note(m->figures, topics, active->n);
	}
	free(topics);
	if (rv != 0)
		BRQ_LOG_WARN("monitor_figures_failed", "error=%s", brq_err_name(rv));
}

// The active count and oldest ready age, published with the cached terminal counts.
// Returns 0, or BRQ_EUNAVAIL when the connection was lost.
static int
depth_count(brq_monitor *m)
{
	struct rows  active = {0};
	struct count c;
	int          rv = run_count(m, BRQ_DEPTH_ACTIVE, 100, &c);

	if (rv != 0 && !brq_store_is_up(&m->bg.conn)) {
		return BRQ_EUNAVAIL;
	}
	m->next_depth_ms = c.t0 + max_u64(m->interval_ms, THROTTLE * c.took_ms);
	if (rv != 0) {
		// Millions of active rows do not fit the budget: the gauges keep their last
		// values (documented) and the count is retried less often.
		if (!m->is_depth_slow) {
			m->is_depth_slow = true;
			BRQ_LOG_WARN("monitor_depth_count_failed", "error=%s reason=%s budget_ms=%llu",
				     brq_err_name(rv), BRQ_LOG_Q(brq_store_errmsg(&m->bg.conn)),
				     (unsigned long long) m->budget_ms);
		}
		return 0;
	}
	if (m->is_depth_slow) {
		m->is_depth_slow = false;
		BRQ_LOG_INFO("monitor_depth_count_ok", "took_ms=%llu", (unsigned long long) c.took_ms);
	}
	if (group_counts(c.rows, c.n, &active) == 0) {
		(void) publish(m, &active);
		note_active(m, &active);
	}
	rows_clear(&active);
	publish_policies(m);
	publish_table(m);
	return 0;
}

// One tick on a live connection:
//   1. a `SELECT 1` round trip (health stays fresh whatever the counts cost);
//   2. at most one count, each bounded by the budget: the terminal count when it is
//      due, otherwise the active count when it is due.
// So the gap between two answers never exceeds max(interval, budget) plus a ping,
// below the health window. Returns 0, or BRQ_EUNAVAIL when the connection was lost.
static int
tick(brq_monitor *m)
{
	int rv = brq_store_ping(&m->bg.conn);
	note_answer(m);
	if (rv != 0) {
		return BRQ_EUNAVAIL;
	}
	uint64_t now             = brq_now_ms();
	bool     is_terminal_due = now >= m->next_terminal_ms;
	bool     is_depth_due    = now >= m->next_depth_ms;
	// Both due: take turns, so neither count starves the other.
	if (is_terminal_due && (!is_depth_due || !m->was_terminal_last)) {
		m->was_terminal_last = true;
		rv                   = terminal_count(m);
	} else if (is_depth_due) {
		m->was_terminal_last = false;
		rv                   = depth_count(m);
	}
	note_answer(m);
	brq_store_reset(&m->bg.conn);
	return rv;
}

static void
note_failure(brq_monitor *m)
{
	if (!m->is_down) {
		m->is_down = true;
		BRQ_LOG_WARN("monitor_db_unavailable", "reason=%s", BRQ_LOG_Q(brq_store_errmsg(&m->bg.conn)));
	} else {
		BRQ_LOG_DEBUG("monitor_db_unavailable", "reason=%s",
			      BRQ_LOG_Q(brq_store_errmsg(&m->bg.conn)));
	}
}

static void
note_recovery(brq_monitor *m)
{
	if (m->is_down) {
		m->is_down = false;
		BRQ_LOG_INFO("monitor_db_available", NULL);
	}
}

// One round (bgthread.h): a tick when the connection is ready, the outage or the
// recovery noted. The next is due an interval after this one started.
static uint64_t
monitor_round(void *arg)
{
	brq_monitor *m     = arg;
	uint64_t     start = brq_now_ms();
	// While the database is away the connection's own backoff (from the interval up
	// to max(interval, 5 s)) decides when to try again.
	int rv = brq_store_ready(&m->bg.conn) ? tick(m) : BRQ_EUNAVAIL;
	if (brq_bgthread_is_stopping(&m->bg)) {
		return BRQ_BGTHREAD_END;
	}
	if (rv == 0) {
		note_recovery(m);
	} else {
		// Health stays true until the window passes, so one lost packet does not
		// flap /healthz.
		refresh_db_up(m);
		note_failure(m);
	}
	return start + m->interval_ms;
}

// Frees m; its thread is stopped (or was never started), its connection released.
static void
monitor_free(brq_monitor *m)
{
	if (m == NULL) {
		return;
	}
	brq_bgthread_stop(&m->bg); // a no-op when already stopped
	rows_clear(&m->terminal);
	free(m);
}

int
brq_monitor_start(const brq_store *st, const brq_monitor_opts *opts, brq_monitor **out)
{
	brq_monitor *m = calloc(1, sizeof(*m));
	int          rv;

	if (m == NULL) {
		return BRQ_ENOMEM;
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
		m->figures      = opts->figures;
	}
	m->health_window_ms = max_u64(HEALTH_INTERVALS * m->interval_ms, HEALTH_MIN_MS);
	// Half the window: a count that runs out its budget still leaves the next
	// answer inside the window.
	m->budget_ms  = opts != NULL && opts->budget_ms != 0 ? opts->budget_ms : m->health_window_ms / 2;
	m->sample_pct = 100;
	// The connection's stop flag is the thread's (bgthread.h): stop abandons a query
	// or a connection attempt in progress.
	rv = brq_bgthread_init(
		&m->bg, st,
		&(brq_store_conn_opts) {.name           = "monitor",
					.role           = BRQ_STORE_MONITOR,
					.budget_ms      = m->budget_ms,
					.backoff_min_ms = m->interval_ms,
					.backoff_max_ms = max_u64(m->interval_ms, BACKOFF_MAX_MS)});
	if (rv != 0) {
		goto fail;
	}

	// The thread takes no signals: they belong to the main thread's handling.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rv = brq_bgthread_start(
		&m->bg,
		&(brq_bgthread_loop) {
			.round = monitor_round, .on_slice = refresh_db_up, .slice_ms = SLICE_MS, .arg = m});
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rv != 0) {
		goto fail;
	}
	BRQ_LOG_INFO("monitor_start", "interval_ms=%llu terminal_interval_ms=%llu",
		     (unsigned long long) m->interval_ms, (unsigned long long) m->terminal_interval_ms);
	*out = m;
	return 0;

fail:
	monitor_free(m);
	return rv;
}

void
brq_monitor_stop(brq_monitor *m)
{
	if (m == NULL) {
		return;
	}
	brq_bgthread_stop(&m->bg);
	brq_metrics_db_up_set(0);
	monitor_free(m);
	BRQ_LOG_INFO("monitor_stopped", NULL);
}
