// SPDX-License-Identifier: MIT
// The monitor's terminal counts (done, dead, canceled per topic), shared with the stats
// operation.
//
// Counting terminal rows means reading the table's history: 0.3 s at 2M rows, linear.
// An operator's `stats` that ran that count took a pool connection for as long, and a
// few of them in a loop made enqueues wait (issue 10.7). The monitor already counts
// them every terminal interval (60 s by default; sampled when the table is too big for
// its budget), so `stats` takes its active counts fresh (through the partial indexes,
// costing what the backlog costs) and its terminal counts from here.
#ifndef BRQ_GATEWAY_FIGURES_H
#define BRQ_GATEWAY_FIGURES_H

#include "brq_base.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "store/store.h"

typedef struct brq_figures_row {
	char    *topic; // owned
	size_t   len;
	uint64_t count[BRQ_STATE__COUNT]; // only the terminal states are filled
} brq_figures_row;

// A topic with rows stays in `stats` between two terminal counts: the rows hold, next
// to the topics the last count found, every topic seen active since (its terminal
// counts 0, as they were at that count), so a topic whose jobs all ended after the
// count does not vanish from `stats` until the next one. `seen` carries the topics
// seen active since the last count into the next one's rows: a topic drops out only
// after a whole count interval in which it had no active row and the count found no
// terminal one (its rows were deleted).
typedef struct brq_figures {
	pthread_mutex_t  mu;
	brq_figures_row *rows; // sorted by topic bytes
	size_t           n;
	brq_figures_row *seen; // topics seen active since the last count, sorted; counts 0
	size_t           n_seen;
	uint64_t         at_ms;     // monotonic ms of the count; 0 = none yet
	bool             estimated; // that count was a page sample's estimate, not exact
} brq_figures;

void brq_figures_init(brq_figures *f);
void brq_figures_fini(brq_figures *f);

// Replaces the terminal counts with n rows (topic, count[] of which the terminal
// states are read), sorted by topic bytes, plus a zero row for each topic seen active
// since the last count that they lack; estimated says they are a page sample's
// estimate. Copies them. 0 or BRQ_ENOMEM (the old counts stay).
BRQ_MUSTCHECK int brq_figures_set(brq_figures *f, const brq_figures_row *rows, size_t n, bool estimated);

// A copy of the terminal counts in arena a (topics too): *rows sorted by topic, *n
// of them, *at_ms when they were counted (0: never yet, *n is 0), *estimated whether
// they are an estimate. 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_figures_get(brq_figures *f, brq_arena *a, brq_figures_row **rows, size_t *n,
				  uint64_t *at_ms, bool *estimated);

// Notes the n topics seen active now (any order; duplicates allowed): each gets a
// zero row when the counts lack it (after the first count: before it, stats counts
// everything exactly), and is carried into the next count's rows. 0 or BRQ_ENOMEM
// (the topics noted so far stay).
BRQ_MUSTCHECK int brq_figures_note(brq_figures *f, const brq_str *topics, size_t n);

// The stats reply's topics: the n_active fresh (topic, state) rows of the active
// states (any order; brq_store_depth's), merged with the terminal counts, one entry
// per topic in topic byte order, in arena a. *at_ms: when the terminal counts were
// taken (0: not yet; they are 0 then), *estimated whether they are a page sample's
// estimate. Notes the active topics (brq_figures_note). 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_figures_stats(brq_figures *f, brq_arena *a, const brq_store_depth_row *active,
				    size_t n_active, brq_topic_stats **out, uint32_t *n_out, uint64_t *at_ms,
				    bool *estimated);

#endif
