// SPDX-License-Identifier: MIT
// Janitor: the lease reaper, retention and the topics' spans of ids (migration 00015), on
// their own thread and connection (SPEC §4).
#ifndef BRQ_GATEWAY_JANITOR_H
#define BRQ_GATEWAY_JANITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "bgthread.h"
#include "config/config.h"
#include "store/store.h"

typedef struct brq_janitor {
	const brq_config *cfg;               // borrowed
	brq_bgthread      bg;                // the thread; next_* are its round's (set before it starts)
	uint64_t          next_reap_ms;      // monotonic
	uint64_t          next_retention_ms; // monotonic
	uint64_t          next_span_ms;      // monotonic
	bool              limits_configured; // the configured topic limits are written
	// Retention's catch-up: behind_since_ms is when a tick first ended with expired rows
	// left (0: not behind); the next tick then comes after a pause as long as the tick
	// took, not a whole interval. behind_deleted counts rows deleted since; checked_ms is
	// when its lag was last asked (once per interval while behind), warned whether that
	// lag was worth a retention_backlog warning.
	uint64_t retention_behind_since_ms, retention_checked_ms;
	int64_t  retention_behind_deleted;
	bool     retention_warned;
} brq_janitor;

// Starts the thread with a connection of store st. Borrows cfg and st. Returns 0 or
// BRQ_EUNAVAIL (no thread).
BRQ_MUSTCHECK int brq_janitor_start(brq_janitor *j, const brq_config *cfg, const brq_store *st);
// Wakes the thread and joins it; a statement in progress (e.g. waiting for a lock)
// is abandoned within ~100 ms (its transaction rolls back).
void brq_janitor_stop(brq_janitor *j);

// One reaper pass: returns leases taken back (>= 0; the jobs quarantined among them
// included), or a BRQ_E* code when the database is unavailable. Exposed for tests.
int64_t brq_janitor_reap(brq_janitor *j);
// One retention tick (up to retention_max_batches batches): rows deleted (>= 0), or
// a BRQ_E* code when nothing could be deleted. A tick that ends at the batch limit
// leaves j behind (retention_behind_since_ms), and the thread's next tick comes early.
int64_t brq_janitor_retain(brq_janitor *j);
// One pass over the topics' spans: the mark after it (>= 0), -1 when the pass had
// nothing to do or another gateway's pass held it, or a BRQ_E* code.
int64_t brq_janitor_map_spans(brq_janitor *j);

#endif
