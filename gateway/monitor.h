// SPDX-License-Identifier: MIT
// Depth monitor: a background thread with its own database connection that feeds the
// depth gauges and tells /healthz whether the database answers.
//
// Every interval the thread runs one cheap query over the active rows (pending,
// failed, processing: counts per topic and state and the oldest ready age per topic,
// through the partial indexes job_claim_idx and job_lease_expiry_idx) and, less
// often, one count of the terminal rows (done, dead, canceled), whose cost grows with
// the whole table. It merges both into brq_metrics_depth_set(). A query that takes
// long stretches its own period to 10x its duration, so the monitor never keeps more
// than ~10% of one backend busy; the ticks in between still make a `SELECT 1` round
// trip so health stays fresh. docs/operations.md discusses the cost.
//
// The connection uses the configured DSN (never logged), fallback_application_name
// "brooq-monitor", a 5 s connect deadline, statement_timeout 10 s, lock_timeout 1 s,
// read-only transactions. When the database is down, the thread reconnects with
// exponential backoff (from the interval up to max(interval, 5 s)) and never exits on
// its own.
#ifndef BRQ_GATEWAY_MONITOR_H
#define BRQ_GATEWAY_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#ifndef BRQ_MUSTCHECK
#define BRQ_MUSTCHECK __attribute__((warn_unused_result))
#endif

#define BRQ_MONITOR_DEFAULT_INTERVAL_MS 1000
#define BRQ_MONITOR_DEFAULT_TERMINAL_INTERVAL_MS 60000

// Tuning; zero fields take the defaults. Pass NULL for all defaults.
struct brq_monitor_opts {
	uint64_t interval_ms;          // round period (health and active depth), default 1 s
	uint64_t terminal_interval_ms; // period of the terminal-state count, default 60 s;
	                               // never shorter than interval_ms
	uint64_t connect_timeout_ms;   // per connection attempt, default 5 s
};

// A running monitor (opaque).
struct brq_monitor;

// Starts the monitor thread. cfg->dsn is copied (and wiped at stop); cfg and opts are
// read during the call only. The first connection attempt happens on the thread, so
// this returns at once even when the database is down (health is false until the
// first successful round trip).
// Returns 0 and sets *out (owned by the caller, release with brq_monitor_stop()), or
// -ENOMEM / -EAGAIN (no thread) with *out untouched.
BRQ_MUSTCHECK int brq_monitor_start(const struct brq_config *cfg,
    const struct brq_monitor_opts *opts, struct brq_monitor **out);

// Stops the thread (within ~100 ms, even in the middle of a query or a connection
// attempt), closes its connection and frees mon. After it returns, nothing may call
// brq_monitor_healthy(mon): stop the HTTP endpoint first. NULL is a no-op.
void brq_monitor_stop(struct brq_monitor *mon);

// True iff a database round trip succeeded within the last max(3 x interval, 3 s).
// Thread-safe, never blocks (reads one atomic timestamp). The argument is a
// struct brq_monitor *, typed void * so that the function is a brq_http_health_fn.
bool brq_monitor_healthy(void *mon);

#endif // BRQ_GATEWAY_MONITOR_H
