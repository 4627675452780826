// SPDX-License-Identifier: MIT
// Depth monitor: a background thread with its own store connection that feeds the
// depth gauges, wakes long-polls for topics with ready jobs, and tells /healthz
// whether the database answers.
//
// Every interval the thread makes one `SELECT 1` round trip (the health verdict) and
// then at most one count, each bounded by a budget (statement_timeout, default half
// the health window, 1.5 s):
//   - the active count: counts per topic and state of pending, failed and
//     processing rows plus the oldest ready age per topic, read through the partial
//     indexes job_claim_priority_idx and job_running_idx, so it costs what the
//     backlog costs, not what the table's history costs; with it, the topics'
//     policies and the job table's upkeep (dead tuples, size, last vacuums, the
//     oldest open transaction: statistics, not rows);
//   - every terminal_interval (default 60 s) instead, the terminal count (done, dead,
//     canceled: the bulk of the table). Exact while it fits the budget; when it
//     does not, an estimate from a TABLESAMPLE SYSTEM page sample whose size adapts
//     to the budget (logged as monitor_terminal_count_sampled).
// Both are merged into brq_metrics_depth_set(). A count that took d runs again after
// max(its period, 10 x d), so the monitor never keeps more than ~10% of one backend
// busy. docs/operations.md discusses the cost.
//
// The connection (store role BRQ_STORE_MONITOR: application_name "brooq-monitor"
// unless the DSN names one, statement_timeout = lock_timeout = budget, read-only,
// no parallel workers; its setup, PREPAREs included, has the connect deadline instead,
// so a busy server that makes a PREPARE overrun the budget does not keep the monitor
// from connecting) reconnects with a backoff from the interval up to
// max(interval, 5 s) while the database is down, and the thread never exits on its own.
#ifndef BRQ_GATEWAY_MONITOR_H
#define BRQ_GATEWAY_MONITOR_H

#include "brq_base.h"

#include <stdbool.h>
#include <stdint.h>

#include "figures.h"
#include "store/store.h"

#define BRQ_MONITOR_DEFAULT_INTERVAL_MS          1000
#define BRQ_MONITOR_DEFAULT_TERMINAL_INTERVAL_MS 60000

// Tuning; zero fields take the defaults. Pass NULL for all defaults.
typedef struct brq_monitor_opts {
	uint64_t interval_ms;          // round period (health and active depth), default 1 s
	uint64_t terminal_interval_ms; // period of the terminal-state count, default 60 s;
				       // never shorter than interval_ms
	uint64_t budget_ms;            // statement_timeout of each count, default half the
				       // health window; keep it below the window
	// Called on the monitor thread, after each depth round, once per topic that
	// has jobs ready now: the gateway wakes its parked long-polls for that topic,
	// so one query a round serves every waiter (jobs inserted by SQL or another
	// gateway, or ready by time). NULL: not called.
	void (*on_ready)(void *arg, const char *topic, size_t topic_len);
	void *on_ready_arg;
	// Where each terminal count is published for the stats operation (borrowed;
	// must outlive the monitor). NULL: not published.
	brq_figures *figures;
} brq_monitor_opts;

// A running monitor (opaque).
typedef struct brq_monitor brq_monitor;

// Starts the monitor thread with a connection of store st (borrowed: it must outlive
// the monitor); opts is read during the call only. The first connection attempt happens on the thread, so
// this returns at once even when the database is down (health is false until the
// first successful round trip).
// Returns 0 and sets *out (owned by the caller, release with brq_monitor_stop()), or
// BRQ_ENOMEM / BRQ_EUNAVAIL (no thread) with *out untouched.
BRQ_MUSTCHECK int brq_monitor_start(const brq_store *st, const brq_monitor_opts *opts, brq_monitor **out);

// Stops the thread (within ~100 ms, even in the middle of a query or a connection
// attempt), closes its connection and frees mon. After it returns, nothing may call
// brq_monitor_healthy(mon): stop the HTTP endpoint first. NULL is a no-op.
void brq_monitor_stop(brq_monitor *mon);

// True iff the database answered a round trip (any answer, even an error such as a
// count that ran out of its budget) within the last max(3 x interval, 3 s).
// Thread-safe, never blocks (reads one atomic timestamp). The argument is a
// brq_monitor *, typed void * so that the function is a brq_http_health_fn.
bool brq_monitor_healthy(void *mon);

#endif // BRQ_GATEWAY_MONITOR_H
