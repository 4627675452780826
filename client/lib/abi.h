/* SPDX-License-Identifier: MIT */
/* libbrooq-client: the one place that reads and writes the caller's size-versioned
 * structs (brooq.h, "ABI"): a struct the caller allocates starts with its size_t size,
 * the library touches only the bytes that size covers, arrays are stepped by it. */
#ifndef BRQ_CLIENT_ABI_H
#define BRQ_CLIENT_ABI_H

#include "brooq/brooq.h"

#include <stddef.h>

#include "brq_base.h"
#include "proto.h"

/* The first released layout of each size-versioned struct: what a caller must at least
 * pass. Frozen: a field added later does not change these. */
#define BRQ_CLIENT_OPTS_V1  (offsetof(brooq_client_opts, log_arg) + sizeof(void *))
#define BRQ_CLAIM_OPTS_V1   (offsetof(brooq_claim_opts, settled) + sizeof(void *))
#define BRQ_WORKER_OPTS_V1  (offsetof(brooq_worker_opts, hung_grace_ms) + sizeof(uint32_t))
#define BRQ_LIST_OPTS_V1    (offsetof(brooq_list_opts, limit) + sizeof(uint32_t))
#define BRQ_SCHEDULE_V1     (offsetof(brooq_schedule, max_attempts) + sizeof(uint32_t))
#define BRQ_JOB_SPEC_V1     (offsetof(brooq_job_spec, priority) + sizeof(uint32_t))
#define BRQ_SETTLE_ITEM_V1  (offsetof(brooq_settle_item, n_chain) + sizeof(size_t))
#define BRQ_ENQUEUE_RES_V1  (offsetof(brooq_enqueue_result, created) + sizeof(bool))
#define BRQ_SETTLE_RES_V1   (offsetof(brooq_settle_result, state) + sizeof(brooq_state))
#define BRQ_TOPIC_POLICY_V1 (offsetof(brooq_topic_policy, running) + sizeof(uint64_t))
#define BRQ_WORKER_STATS_V1 (offsetof(brooq_worker_stats, errors) + sizeof(uint64_t))
#define BRQ_STATS_META_V1   (offsetof(brooq_stats_meta, terminal_estimated) + sizeof(bool))

/*
 * Reads element i of the caller's array `base` of structs named `what` (each starting
 * with its size_t size; a single struct is element 0) into dst[0..dst_size), zeroed
 * first. Elements are stepped by element 0's size, so element i must carry the same
 * size; it must be at least v1_size, and the bytes past dst_size (fields of a later
 * header) must be zero. Returns 0, or BRQ_EINVAL with the message set (naming what[i]
 * and the struct's _INIT macro).
 */
int brq_abi_in(void *dst, size_t dst_size, const void *base, size_t i, size_t v1_size,
	       const char *what) BRQ_MUSTCHECK;

/* brq_abi_in of an optional options struct: src NULL gives dst all zero (defaults). */
int brq_opts_copy(void *dst, size_t dst_size, const void *src, size_t v1_size,
		  const char *what) BRQ_MUSTCHECK;

/* Checks the caller's output array base[0..n) of structs named `what` before a call is
 * sent: every element's size equal and at least v1_size. 0 or BRQ_EINVAL (message set). */
int brq_abi_out_check(const void *base, size_t n, size_t v1_size, const char *what) BRQ_MUSTCHECK;

/* Writes src (a whole struct of this library, src_size bytes) into element i of the
 * checked output array base: only the fields the caller's size covers, never its size
 * field. Fields of a later header stay as the caller set them (zero from its _INIT). */
void brq_abi_out(void *base, size_t i, const void *src, size_t src_size);

/*
 * A list the library returns (brooq.h, "ABI"): one allocation holding ptrs[0..n), the n
 * elements of elem_size they point at (zeroed) and str_bytes for their strings, freed
 * with one free(ptrs). The caller only follows the pointers, so elements may grow.
 */
typedef struct brq_abi_list {
	void **ptrs; /* NULL when n is 0 */
	char  *strs; /* the next free byte of the string area */
} brq_abi_list;

/* 0, or BRQ_ENOMEM with the message set naming `what`. */
int brq_abi_list_new(brq_abi_list *l, size_t n, size_t elem_size, size_t str_bytes,
		     const char *what) BRQ_MUSTCHECK;
/* A NUL-terminated copy of s in l's string area (s.len + 1 of its str_bytes). */
char *brq_abi_list_str(brq_abi_list *l, brq_str s);

#endif
