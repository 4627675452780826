// SPDX-License-Identifier: MIT
// The overview's rate window: which sample of the counters a per-minute rate compares
// now with (pure, so that a test can hold the clock).
#ifndef BRQ_GATEWAY_CONSOLE_RATE_H
#define BRQ_GATEWAY_CONSOLE_RATE_H

#include <stddef.h>
#include <stdint.h>

// The per-minute rates of the overview come from samples of the counters, taken at
// most every BRQ_CONSOLE_SAMPLE_MS while someone reads the overview. A rate compares
// now with a sample between BRQ_CONSOLE_SAMPLE_MS and BRQ_CONSOLE_RATE_WINDOW_MS old:
// the ring's 16 samples, at least 5 s apart, always reach back that far.
#define BRQ_CONSOLE_SAMPLES        16
#define BRQ_CONSOLE_SAMPLE_MS      5000
#define BRQ_CONSOLE_RATE_WINDOW_MS 80000
_Static_assert(BRQ_CONSOLE_SAMPLES *BRQ_CONSOLE_SAMPLE_MS >= BRQ_CONSOLE_RATE_WINDOW_MS,
	       "the ring reaches back over the whole rate window");

// The rate's baseline among n samples taken at monotonic ms at_ms[] (0: an empty slot):
// the oldest taken between BRQ_CONSOLE_SAMPLE_MS and BRQ_CONSOLE_RATE_WINDOW_MS before
// now, so a rate never averages over more than the window, however long nobody looked
// (an older sample is ignored). Its index, or n when none is in the window.
size_t brq_console_rate_baseline(const uint64_t *at_ms, size_t n, uint64_t now);

#endif
