// SPDX-License-Identifier: MIT
// Janitor: the lease reaper and retention, on their own thread and connection (SPEC §4).
#ifndef BRQ_GATEWAY_JANITOR_H
#define BRQ_GATEWAY_JANITOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "db.h"

typedef struct brq_janitor {
	const struct brq_config *cfg; // borrowed
	brq_db                   db;
	pthread_t                thread;
	pthread_mutex_t          mtx;
	pthread_cond_t           cv; // signalled by stop
	bool                     stopping;
	uint64_t                 next_reap_ms;      // monotonic
	uint64_t                 next_retention_ms; // monotonic
} brq_janitor;

// Starts the thread. Borrows cfg and sql. Returns 0 or -1.
BRQ_MUSTCHECK int brq_janitor_start(brq_janitor *j, const struct brq_config *cfg, const brq_sql *sql);
// Wakes the thread, lets the current batch finish, joins it.
void brq_janitor_stop(brq_janitor *j);

// One reaper pass: returns rows reaped, or -1 when the database is unavailable.
// Exposed for tests.
int64_t brq_janitor_reap(brq_janitor *j);
// One retention tick (up to retention_max_batches batches): rows deleted or -1.
int64_t brq_janitor_retain(brq_janitor *j);

#endif
