// SPDX-License-Identifier: MIT
// The one clock helper set: monotonic time for intervals and deadlines, wall time
// for what goes on the wire, and absolute deadlines for condition variables.
//
// Every condition variable that waits with a timeout is initialised with
// brq_cond_init_monotonic(), so deadlines built by brq_deadline_at() are immune to
// wall-clock jumps (NTP, an operator's `date -s`).
#ifndef BRQ_CLOCK_H
#define BRQ_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

// Monotonic microseconds / milliseconds (CLOCK_MONOTONIC): for intervals only.
static inline uint64_t
brq_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static inline uint64_t
brq_now_ms(void)
{
	return brq_now_us() / 1000u;
}

// Unix time in milliseconds (CLOCK_REALTIME): for timestamps shared with other
// machines (the wire's *_ms fields), never for measuring intervals.
static inline int64_t
brq_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// The absolute CLOCK_MONOTONIC time `mono_ms` (a brq_now_ms() value) as a
// timespec, for pthread_cond_timedwait() on a condvar from brq_cond_init_monotonic().
static inline struct timespec
brq_deadline_at(uint64_t mono_ms)
{
	struct timespec ts = {.tv_sec  = (time_t) (mono_ms / 1000u),
			      .tv_nsec = (long) (mono_ms % 1000u) * 1000000L};
	return ts;
}

// True when a success stamped *last_ms (monotonic ms, read atomically; 0 = never)
// happened within the last window_ms: the health checks' "recently answered".
static inline bool
brq_recent(_Atomic uint64_t *last_ms, uint64_t window_ms)
{
	uint64_t last = atomic_load_explicit(last_ms, memory_order_acquire);
	return last != 0 && brq_now_ms() - last <= window_ms;
}

// Initialises cv to measure timeouts on CLOCK_MONOTONIC. Returns 0 or an errno
// value (pthread style), like pthread_cond_init().
static inline int
brq_cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int                rv = pthread_condattr_init(&ca);
	if (rv != 0)
		return rv;
	rv = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (rv == 0)
		rv = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return rv;
}

#endif
