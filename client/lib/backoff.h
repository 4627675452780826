/* SPDX-License-Identifier: MIT */
/* Retry pacing of the worker runtime: exponential backoff with jitter. */
#ifndef BRQ_CLIENT_BACKOFF_H
#define BRQ_CLIENT_BACKOFF_H

#include <stdint.h>

/* Next backoff step: 100 ms, doubling to 5 s. */
uint32_t brq_backoff_next(uint32_t prev);
/* A non-zero seed for brq_backoff_jitter, different per thread (salt) and process. */
uint64_t brq_backoff_seed(const void *salt);
/* Uniform in [ms/2, ms] (xorshift on *seed), so that failing workers spread out. */
uint32_t brq_backoff_jitter(uint32_t ms, uint64_t *seed);

#endif
