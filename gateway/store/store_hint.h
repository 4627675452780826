// SPDX-License-Identifier: MIT
// Where the rows this gateway leased were written: a settle reaches each row by its
// address (ctid, from the claim's or the last heartbeat's RETURNING) instead of a
// descent of job_pkey. Measured in SQL (50k jobs, settles of 500): 5.0-5.2 µs of
// PostgreSQL per settled job by address, 5.5-5.7 by id.
//
// A hint is only a hint: the settle statement still matches id and lease token, so a
// stale address (the row moved since, by another gateway's heartbeat, or was vacuumed
// and the slot reused by another row) matches nothing and the item is settled by id.
// Internal to the store (store*.c).
#ifndef BRQ_GATEWAY_STORE_HINT_H
#define BRQ_GATEWAY_STORE_HINT_H

#include "brq_base.h"

#include <stdbool.h>
#include <stdint.h>

// A row version's address: heap block and line pointer (PostgreSQL's ctid).
typedef struct brq_tid {
	uint32_t block;
	uint16_t offset; // 0: none
} brq_tid;

// A fixed table of ids and addresses, direct-mapped by id: a newer lease overwrites an
// older one in its slot, so it needs no eviction and never grows (512 KiB).
typedef struct brq_hints brq_hints;

// A new, empty table in *out, the caller's (brq_hints_free). 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_hints_new(brq_hints **out);
// Frees h (NULL: nothing); no other call on h may run concurrently or after.
void brq_hints_free(brq_hints *h);

// Records that job ids[i] is at tids[i], for i < n (entries with offset 0 skipped).
// Thread-safe.
void brq_hints_put(brq_hints *h, const uint64_t *ids, const brq_tid *tids, uint32_t n);
// For i < n: out[i] = the address recorded for ids[i] (offset 0 when none), each
// entry found is forgotten (a lease is settled once). Thread-safe. Returns how many
// were found.
uint32_t brq_hints_take(brq_hints *h, const uint64_t *ids, brq_tid *out, uint32_t n);

// Parses PostgreSQL's text form of a ctid, "(block,offset)" (s borrowed; *out written
// only on success). False if malformed or out of range.
bool brq_tid_parse(const char *s, brq_tid *out);

#endif
