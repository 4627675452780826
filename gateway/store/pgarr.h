// SPDX-License-Identifier: MIT
// One-dimensional PostgreSQL arrays in binary wire format, built for batch statements.
//
// A batch of n rows goes to the server as a few array parameters and `unnest()`: one
// statement, one round trip, whatever n is. Binary format means no quoting or escaping
// of user text (keys, errors, payloads) at all.
#ifndef BRQ_GATEWAY_PGARR_H
#define BRQ_GATEWAY_PGARR_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Element type OIDs (pg_type.h; stable across PostgreSQL versions).
#define BRQ_OID_BOOL  16
#define BRQ_OID_TID   27
#define BRQ_OID_INT8  20
#define BRQ_OID_INT4  23
#define BRQ_OID_TEXT  25
#define BRQ_OID_UUID  2950
#define BRQ_OID_JSONB 3802

// A growable array being built. Reusable: brq_pgarr_begin() starts over without
// freeing. The bytes are valid until the next begin or fini.
typedef struct brq_pgarr {
	char    *data;
	size_t   len;
	size_t   cap;
	uint32_t oid;
	uint32_t n; // elements appended so far
	bool     has_null;
	bool     oom; // sticky: an append failed; the array must not be sent
} brq_pgarr;

void brq_pgarr_init(brq_pgarr *a);
void brq_pgarr_fini(brq_pgarr *a);

// Gives the storage back when it grew past keep bytes (after a rare big batch), so
// memory follows the usual batch, not the largest one. Contents are discarded.
void brq_pgarr_trim(brq_pgarr *a, size_t keep);

// Starts an empty array of element type oid.
void brq_pgarr_begin(brq_pgarr *a, uint32_t oid);

void brq_pgarr_int8(brq_pgarr *a, int64_t v);
void brq_pgarr_int4(brq_pgarr *a, int32_t v);
// Text, or a JSONB element when the array's oid is BRQ_OID_JSONB (the caller has
// validated the JSON).
void brq_pgarr_text(brq_pgarr *a, const char *p, size_t len);
void brq_pgarr_uuid(brq_pgarr *a, const uint8_t uuid[16]);
// A row address (ctid): heap block and line pointer.
void brq_pgarr_tid(brq_pgarr *a, uint32_t block, uint16_t offset);
void brq_pgarr_null(brq_pgarr *a);

// Finishes the header (element count, null flag). Returns 0, or BRQ_ENOMEM if an append ran
// out of memory. The array is then data[0..len) in binary format.
BRQ_MUSTCHECK int brq_pgarr_end(brq_pgarr *a);

#endif
