/* SPDX-License-Identifier: MIT */
/* Retry pacing of the worker runtime: exponential backoff with jitter. */
#include "backoff.h"

#include "brq_clock.h"

/* Errors back off from 100 ms, doubling to 5 s. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

uint32_t
brq_backoff_next(uint32_t prev)
{
	if (prev < BACKOFF_MIN_MS)
		return BACKOFF_MIN_MS;
	return prev >= BACKOFF_MAX_MS / 2 ? BACKOFF_MAX_MS : prev * 2;
}

uint64_t
brq_backoff_seed(const void *salt)
{
	return ((uint64_t) brq_wall_ms() * 2654435761u + (uintptr_t) salt) | 1;
}

uint32_t
brq_backoff_jitter(uint32_t ms, uint64_t *seed)
{
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	return ms / 2 + (uint32_t) (*seed % (ms / 2 + 1));
}
