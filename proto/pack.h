// SPDX-License-Identifier: MIT
// pack.c inside proto/: the key/value packers of the encoders (pack.c, encode.c and the
// per-op codecs jobs.c, policy.c, schedule.c), one map entry each, the key then its
// value. Errors stick in the buffer, as for every brq_pack_* (declared in proto.h).
#ifndef BRQ_PROTO_PACK_H
#define BRQ_PROTO_PACK_H

#include "proto.h"

static inline void
kv_uint(brq_buf *b, const char *k, uint64_t v)
{
	brq_pack_key(b, k);
	brq_pack_uint(b, v);
}

static inline void
kv_int(brq_buf *b, const char *k, int64_t v)
{
	brq_pack_key(b, k);
	brq_pack_int(b, v);
}

static inline void
kv_str(brq_buf *b, const char *k, brq_str v)
{
	brq_pack_key(b, k);
	brq_pack_str(b, v);
}

static inline void
kv_cstr(brq_buf *b, const char *k, const char *v)
{
	brq_pack_key(b, k);
	brq_pack_cstr(b, v);
}

static inline void
kv_bool(brq_buf *b, const char *k, bool v)
{
	brq_pack_key(b, k);
	brq_pack_bool(b, v);
}

// The optional keys: the pair only when has (absent on the wire when unset).
static inline void
kv_uint_if(brq_buf *b, const char *k, bool has, uint64_t v)
{
	if (has) {
		kv_uint(b, k, v);
	}
}

static inline void
kv_int_if(brq_buf *b, const char *k, bool has, int64_t v)
{
	if (has) {
		kv_int(b, k, v);
	}
}

static inline void
kv_str_if(brq_buf *b, const char *k, bool has, brq_str v)
{
	if (has) {
		kv_str(b, k, v);
	}
}

// "lease": the 16 token bytes as bin.
static inline void
kv_lease(brq_buf *b, const uint8_t lease[BRQ_LEASE_LEN])
{
	brq_pack_key(b, "lease");
	brq_pack_bin(b, lease, BRQ_LEASE_LEN);
}

// Key k, then nil: an unset value of a key that is always sent.
static inline void
kv_nil(brq_buf *b, const char *k)
{
	brq_pack_key(b, k);
	brq_pack_nil(b);
}

// v when has, else nil.
static inline void
kv_opt_str(brq_buf *b, const char *k, bool has, brq_str v)
{
	has ? kv_str(b, k, v) : kv_nil(b, k);
}

static inline void
kv_opt_uint(brq_buf *b, const char *k, bool has, uint64_t v)
{
	has ? kv_uint(b, k, v) : kv_nil(b, k);
}

static inline void
kv_opt_int(brq_buf *b, const char *k, bool has, int64_t v)
{
	has ? kv_int(b, k, v) : kv_nil(b, k);
}

// A topic's limit (max_running, rate_per_s) as the protocol shows it: nil for 0, unlimited.
static inline void
kv_limit(brq_buf *b, const char *k, uint32_t v)
{
	kv_opt_uint(b, k, v != 0, v);
}

// Key k, then an array of the n elements of a, each written by the element encoder
// pack(b, &a[i]). A macro, so that every element type keeps its typed encoder.
#define KV_ARRAY(b, k, a, n, pack)                      \
	do {                                            \
		brq_pack_key((b), (k));                 \
		brq_pack_array((b), (n));               \
		for (uint32_t i_ = 0; i_ < (n); i_++) { \
			(void) pack((b), &(a)[i_]);     \
		}                                       \
	} while (0)

#endif
