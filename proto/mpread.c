// SPDX-License-Identifier: MIT
// Zero-copy msgpack reading: headers, the bounded pre-scan, typed reads and skipping.
#include "mpread.h"

#include <string.h>

static uint64_t
be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned k = 0; k < n; k++) {
		v = (v << 8) | p[k];
	}
	return v;
}

// Header whose length/value field is `width` bytes after the type byte.
static int
sized(brq_mp_head *h, const uint8_t *p, size_t avail, brq_mp_kind kind, unsigned width)
{
	if (avail < 1u + width) {
		return -1;
	}
	h->kind = kind;
	h->hdr  = 1u + width;
	h->n    = be(p + 1, width);
	return 0;
}

static int
signed_int(brq_mp_head *h, const uint8_t *p, size_t avail, unsigned width)
{
	if (avail < 1u + width) {
		return -1;
	}
	uint64_t raw = be(p + 1, width);
	int64_t  v;
	// Sign-extend from width bytes without relying on implementation-defined casts.
	if (width < 8 && (raw >> (width * 8 - 1)) & 1u) {
		raw |= ~UINT64_C(0) << (width * 8);
	}
	memcpy(&v, &raw, sizeof v);
	h->hdr = 1u + width;
	if (v >= 0) {
		h->kind = BRQ_MP_UINT;
		h->u    = (uint64_t) v;
	} else {
		h->kind = BRQ_MP_NINT;
		h->i    = v;
	}
	return 0;
}

static int
fixext(brq_mp_head *h, size_t data)
{
	h->kind = BRQ_MP_EXT;
	h->hdr  = 1;
	h->n    = 1 + data; // type byte + data
	return 0;
}

// The "fix" formats, whose first byte holds the value or the length: positive and
// negative fixint, fixmap, fixarray, fixstr. False for any other byte.
static bool
fix_format(uint8_t c, brq_mp_head *h)
{
	if (c <= 0x7f) {
		h->kind = BRQ_MP_UINT;
		h->u    = c;
	} else if (c <= 0x8f) {
		h->kind = BRQ_MP_MAP;
		h->n    = c & 0x0fu;
	} else if (c <= 0x9f) {
		h->kind = BRQ_MP_ARRAY;
		h->n    = c & 0x0fu;
	} else if (c <= 0xbf) {
		h->kind = BRQ_MP_STR;
		h->n    = c & 0x1fu;
	} else if (c >= 0xe0) {
		h->kind = BRQ_MP_NINT;
		h->i    = (int64_t) c - 256;
	} else {
		return false;
	}
	return true;
}

// One case per format byte of the msgpack spec's table, in its order.
static int
head_only(const uint8_t *p, size_t avail, brq_mp_head *h)
{
	uint8_t c = p[0];

	h->hdr = 1;
	h->n   = 0;
	if (fix_format(c, h)) {
		return 0;
	}
	switch (c) {
	case 0xc0: h->kind = BRQ_MP_NIL; return 0;
	case 0xc2:
	case 0xc3:
		h->kind = BRQ_MP_BOOL;
		h->b    = c == 0xc3;
		return 0;
	case 0xc4: return sized(h, p, avail, BRQ_MP_BIN, 1);
	case 0xc5: return sized(h, p, avail, BRQ_MP_BIN, 2);
	case 0xc6: return sized(h, p, avail, BRQ_MP_BIN, 4);
	case 0xc7:
	case 0xc8:
	case 0xc9:
		if (sized(h, p, avail, BRQ_MP_EXT, 1u << (c - 0xc7)) != 0) {
			return -1;
		}
		h->n += 1; // the ext type byte follows the length
		return 0;
	case 0xca:
		h->kind = BRQ_MP_FLOAT;
		h->hdr  = 5;
		return avail >= 5 ? 0 : -1;
	case 0xcb:
		h->kind = BRQ_MP_FLOAT;
		h->hdr  = 9;
		return avail >= 9 ? 0 : -1;
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf:
		if (sized(h, p, avail, BRQ_MP_UINT, 1u << (c - 0xcc)) != 0) {
			return -1;
		}
		h->u = h->n;
		h->n = 0;
		return 0;
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3: return signed_int(h, p, avail, 1u << (c - 0xd0));
	case 0xd4: return fixext(h, 1);
	case 0xd5: return fixext(h, 2);
	case 0xd6: return fixext(h, 4);
	case 0xd7: return fixext(h, 8);
	case 0xd8: return fixext(h, 16);
	case 0xd9: return sized(h, p, avail, BRQ_MP_STR, 1);
	case 0xda: return sized(h, p, avail, BRQ_MP_STR, 2);
	case 0xdb: return sized(h, p, avail, BRQ_MP_STR, 4);
	case 0xdc: return sized(h, p, avail, BRQ_MP_ARRAY, 2);
	case 0xdd: return sized(h, p, avail, BRQ_MP_ARRAY, 4);
	case 0xde: return sized(h, p, avail, BRQ_MP_MAP, 2);
	case 0xdf: return sized(h, p, avail, BRQ_MP_MAP, 4);
	default: return -1; // 0xc1: "never used"
	}
}

int
brq_mp_head_read(const uint8_t *p, const uint8_t *end, brq_mp_head *h)
{
	if (p >= end || head_only(p, (size_t) (end - p), h) != 0) {
		return -1;
	}
	switch (h->kind) {
	case BRQ_MP_STR:
	case BRQ_MP_BIN:
	case BRQ_MP_EXT:
		if ((uint64_t) (end - p) - h->hdr < h->n) {
			return -1;
		}
		break;
	default: break;
	}
	return 0;
}

bool
brq_mp_check(const uint8_t *buf, size_t len, uint32_t max_depth, size_t *off, const char **why)
{
	// left[d] = values still to read at nesting level d; level 0 is a virtual root
	// holding the one top-level value. Map pairs count as two values.
	uint64_t       left[BRQ_MP_DEPTH_CAP + 1];
	uint32_t       d   = 0;
	const uint8_t *p   = buf;
	const uint8_t *end = buf + len;

	if (max_depth > BRQ_MP_DEPTH_CAP) {
		max_depth = BRQ_MP_DEPTH_CAP;
	}
	left[0] = 1;
	for (;;) {
		brq_mp_head h;

		while (d > 0 && left[d] == 0) {
			d--;
		}
		if (d == 0 && left[0] == 0) {
			break;
		}
		left[d]--;
		if (p >= end) {
			*off = len;
			*why = "truncated message";
			return false;
		}
		if (brq_mp_head_read(p, end, &h) != 0) {
			*off = (size_t) (p - buf);
			*why = *p == 0xc1 ? "invalid type byte 0xc1" : "truncated message";
			return false;
		}
		if (h.kind == BRQ_MP_ARRAY || h.kind == BRQ_MP_MAP) {
			uint64_t items = h.kind == BRQ_MP_MAP ? h.n * 2 : h.n;
			if (d + 1 > max_depth) {
				*off = (size_t) (p - buf);
				*why = "nesting too deep";
				return false;
			}
			// Every element takes at least one byte, so a count above what is left
			// is a lie we can refuse before anything trusts it.
			if (items > (uint64_t) (end - p) - h.hdr) {
				*off = (size_t) (p - buf);
				*why = "container count exceeds message size";
				return false;
			}
			p += h.hdr;
			d++;
			left[d] = items;
			continue;
		}
		p += h.hdr + h.n;
	}
	if (p != end) {
		*off = (size_t) (p - buf);
		*why = "trailing bytes after message";
		return false;
	}
	return true;
}

int
brq_mp_peek(const brq_rd *r)
{
	brq_mp_head h;
	return brq_mp_head_read(r->p, r->end, &h) == 0 ? (int) h.kind : 0;
}

// The header of the next value when the value is of kind `want`: the reader moves past
// the header (a str's or bin's body is the caller's to pass). Otherwise BRQ_MP_ETYPE and
// nothing consumed; h->kind then says what the value was (0: truncated or invalid).
static int
take(brq_rd *r, brq_mp_kind want, brq_mp_head *h)
{
	h->kind = (brq_mp_kind) 0;
	if (brq_mp_head_read(r->p, r->end, h) != 0 || h->kind != want) {
		return BRQ_MP_ETYPE;
	}
	r->p += h->hdr;
	return 0;
}

int
brq_mp_read_uint(brq_rd *r, uint64_t *out)
{
	brq_mp_head h;
	if (take(r, BRQ_MP_UINT, &h) != 0) {
		return h.kind == BRQ_MP_NINT ? BRQ_MP_ERANGE : BRQ_MP_ETYPE;
	}
	*out = h.u;
	return 0;
}

int
brq_mp_read_int(brq_rd *r, int64_t *out)
{
	brq_mp_head h;
	if (brq_mp_head_read(r->p, r->end, &h) != 0) {
		return BRQ_MP_ETYPE;
	}
	if (h.kind == BRQ_MP_NINT) {
		*out = h.i;
	} else if (h.kind == BRQ_MP_UINT) {
		if (h.u > (uint64_t) INT64_MAX) {
			return BRQ_MP_ERANGE;
		}
		*out = (int64_t) h.u;
	} else {
		return BRQ_MP_ETYPE;
	}
	r->p += h.hdr;
	return 0;
}

int
brq_mp_read_bool(brq_rd *r, bool *out)
{
	brq_mp_head h;
	if (take(r, BRQ_MP_BOOL, &h) != 0) {
		return BRQ_MP_ETYPE;
	}
	*out = h.b;
	return 0;
}

int
brq_mp_read_nil(brq_rd *r)
{
	if (r->p >= r->end || *r->p != 0xc0) {
		return BRQ_MP_ETYPE;
	}
	r->p++;
	return 0;
}

// take() for a str, bin, array or map: *n its length (bytes, elements or pairs).
static int
take_len(brq_rd *r, brq_mp_kind want, uint32_t *n)
{
	brq_mp_head h;
	if (take(r, want, &h) != 0) {
		return BRQ_MP_ETYPE;
	}
	*n = (uint32_t) h.n; // 8/16/32-bit on the wire: always fits
	return 0;
}

static int
read_blob(brq_rd *r, brq_mp_kind want, brq_str *out)
{
	if (take_len(r, want, &out->len) != 0) {
		return BRQ_MP_ETYPE;
	}
	out->ptr = (const char *) r->p;
	r->p += out->len;
	return 0;
}

int
brq_mp_read_str(brq_rd *r, brq_str *out)
{
	return read_blob(r, BRQ_MP_STR, out);
}

int
brq_mp_read_bin(brq_rd *r, brq_str *out)
{
	return read_blob(r, BRQ_MP_BIN, out);
}

int
brq_mp_read_array(brq_rd *r, uint32_t *count)
{
	return take_len(r, BRQ_MP_ARRAY, count);
}

int
brq_mp_read_map(brq_rd *r, uint32_t *pairs)
{
	return take_len(r, BRQ_MP_MAP, pairs);
}

int
brq_mp_skip(brq_rd *r)
{
	// A single counter suffices: we only need to know how many values remain, not
	// where each container ends. Each value is at least one byte, so the counter is
	// bounded by the bytes left and cannot overflow 64 bits.
	uint64_t       pending = 1;
	const uint8_t *p       = r->p;

	while (pending > 0) {
		brq_mp_head h;
		if (brq_mp_head_read(p, r->end, &h) != 0) {
			return -1;
		}
		pending--;
		if (h.kind == BRQ_MP_ARRAY || h.kind == BRQ_MP_MAP) {
			uint64_t items = h.kind == BRQ_MP_MAP ? h.n * 2 : h.n;
			if (items > (uint64_t) (r->end - p) - h.hdr) {
				return -1;
			}
			pending += items;
			p += h.hdr;
		} else {
			p += h.hdr + h.n;
		}
	}
	r->p = p;
	return 0;
}
