// SPDX-License-Identifier: MIT
// Zero-copy, bounds-checked msgpack reader used by the decoders (msgpack-c only encodes).
#ifndef BRQ_MPREAD_H
#define BRQ_MPREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

// Why not msgpack_unpack_next(): msgpack-c allocates count * sizeof(msgpack_object) from
// an array header before it reads a single element, so a 5-byte message claiming 2^31
// elements costs gigabytes (and aborts under ASan). Our reader never allocates; the
// decoders allocate from the arena only after a count has been checked against both the
// caller's limit and the bytes actually left in the buffer.

// Hard ceiling for brq_limits.max_depth: the pre-scan keeps one counter per level on the
// C stack.
#define BRQ_MP_DEPTH_CAP 32

typedef enum brq_mp_kind {
	BRQ_MP_NIL = 1,
	BRQ_MP_BOOL,
	BRQ_MP_UINT, // any int encoding whose value is >= 0 (fixint, uint8..64, int8..64)
	BRQ_MP_NINT, // any int encoding whose value is < 0
	BRQ_MP_FLOAT,
	BRQ_MP_STR,
	BRQ_MP_BIN,
	BRQ_MP_ARRAY,
	BRQ_MP_MAP,
	BRQ_MP_EXT,
} brq_mp_kind;

// One decoded value header.
typedef struct brq_mp_head {
	brq_mp_kind kind;
	uint32_t    hdr; // bytes of the header (type byte + length/value bytes)
	uint64_t    n;   // STR/BIN/EXT: body bytes (EXT: incl. its type byte); ARRAY: elements; MAP: pairs
	uint64_t    u;   // UINT value
	int64_t     i;   // NINT value
	bool        b;   // BOOL value
} brq_mp_head;

// A read position inside a buffer that the caller keeps alive.
typedef struct brq_rd {
	const uint8_t *p;
	const uint8_t *end;
} brq_rd;

// Typed reader results (0 = success; on failure nothing is consumed).
enum {
	BRQ_MP_ETYPE  = -1, // value has another type (or the buffer is truncated)
	BRQ_MP_ERANGE = -2, // integer of the right family but not representable (negative for uint)
};

// Reads the header at p (p < end required for success). Returns 0, or -1 if the bytes
// are truncated (header or STR/BIN/EXT body) or the type byte is 0xc1 (never used).
int brq_mp_head_read(const uint8_t *p, const uint8_t *end, brq_mp_head *h);

// Pre-scan: true iff buf[0..len) is exactly one well-formed msgpack value, containers
// nested at most max_depth deep (top level = 1; clamped to BRQ_MP_DEPTH_CAP), every
// container count no larger than the bytes left after its header. On false, *off and
// *why (static text) locate the problem. Iterative; no allocation.
bool brq_mp_check(const uint8_t *buf, size_t len, uint32_t max_depth, size_t *off, const char **why);

// Kind of the next value, or 0 if truncated/invalid.
int brq_mp_peek(const brq_rd *r);

int brq_mp_read_uint(brq_rd *r, uint64_t *out);
int brq_mp_read_int(brq_rd *r, int64_t *out);
int brq_mp_read_bool(brq_rd *r, bool *out);
int brq_mp_read_nil(brq_rd *r);
int brq_mp_read_str(brq_rd *r, brq_str *out); // borrowed from the buffer
int brq_mp_read_bin(brq_rd *r, brq_str *out); // borrowed from the buffer
int brq_mp_read_array(brq_rd *r, uint32_t *count);
int brq_mp_read_map(brq_rd *r, uint32_t *pairs);

// Skips one whole value (with everything nested in it). Non-recursive; the bounds are
// checked at every step, so it is safe on unchecked input too (returns -1 there).
int brq_mp_skip(brq_rd *r);

#endif
