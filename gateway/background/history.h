// SPDX-License-Identifier: MIT
// The console's history writer: a background thread with its own store connection that,
// every BRQ_HISTORY_FLUSH_MS, adds what this gateway counted since its last write (jobs
// started and finished per topic, the waits of those started) to the current minute's
// rows of job_history, writes the backlog per topic there, and deletes minutes older
// than BRQ_HISTORY_KEEP_MS (docs/console.md, "History").
//
// Counts come from the metrics registry (metrics.h brq_metrics_history_read): the
// write adds the difference between two reads, so several gateways add up, and a write
// that fails is carried into the next one (its minute is then the next one's). What a
// gateway counted since its last write is lost if it stops or crashes (at most one
// flush period).
#ifndef BRQ_GATEWAY_HISTORY_H
#define BRQ_GATEWAY_HISTORY_H

#include "brq_base.h"

#include <stdint.h>

#include "bgthread.h"
#include "metrics/metrics.h"
#include "store/store.h"

// How often a gateway writes: the loss at a crash, and how soon the console shows a start.
#define BRQ_HISTORY_FLUSH_MS 10000
// How long minutes are kept: a day, and an hour's margin for the 24-hour chart's first step.
#define BRQ_HISTORY_KEEP_MS (25ull * 3600 * 1000)
// How often the old minutes are deleted.
#define BRQ_HISTORY_PRUNE_MS 600000
// Most topics one write carries (the registry holds at most 10,000): the rest wait
// for the next write.
#define BRQ_HISTORY_TOPICS_MAX 2000

typedef struct brq_history {
	brq_bgthread              bg;
	brq_metrics_history_view *base; // the counters as last written (owned); NULL: all 0
	size_t                    n_base;
	uint64_t                  next_prune_ms; // monotonic
	uint64_t                  written;       // rounds written, for tests and the log
} brq_history;

// Starts the writer on store st (borrowed: it must outlive the writer) into h (the
// caller's storage). 0, or BRQ_EUNAVAIL / BRQ_ENOMEM with nothing to undo.
BRQ_MUSTCHECK int brq_history_start(brq_history *h, const brq_store *st);
// Stops the thread and frees what h holds. What was counted since the last write is
// not written.
void brq_history_stop(brq_history *h);

// One write on h's connection, from the calling thread (the thread's round, and tests
// that drive a writer they did not start: h->bg prepared by brq_bgthread_init with a
// store). minute_ms: the minute's start (unix ms). 0 or the store's failure (the
// counts are then carried into the next write).
BRQ_MUSTCHECK int brq_history_write(brq_history *h, int64_t minute_ms);

#endif
