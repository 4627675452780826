// SPDX-License-Identifier: MIT
// Fuzz target: the JSON validator (proto/json.c), checked against a small independent
// recursive-descent validator written from RFC 8259 for every flag combination and for
// nesting limits around the text's own depth.
//
// Input: the JSON text itself (the seeds in tests/fuzz/corpus/json/ are plain files).
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "json.h"
#include "text.h"

// The reference recurses once per open container; deeper than this it gives up (the
// validator under test caps nesting at BRQ_JSON_DEPTH_CAP, well below).
#define REF_DEPTH_CAP (2 * BRQ_JSON_DEPTH_CAP)

typedef struct ref {
	const uint8_t *s;
	size_t         len;
	size_t         i;
	unsigned       flags;
	uint32_t       depth;    // deepest nesting seen (a scalar text: 0, "[]": 1)
	bool           too_deep; // nesting went past REF_DEPTH_CAP: no verdict
} ref;

static void
ref_ws(ref *r)
{
	while (r->i < r->len &&
	       (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r')) {
		r->i++;
	}
}

static int
ref_hex(const uint8_t *p)
{
	int v = 0;
	for (int k = 0; k < 4; k++) {
		uint8_t c = p[k];
		int     d = c >= '0' && c <= '9'   ? c - '0'
			    : c >= 'a' && c <= 'f' ? c - 'a' + 10
			    : c >= 'A' && c <= 'F' ? c - 'A' + 10
						   : -1;
		if (d < 0) {
			return -1;
		}
		v = v * 16 + d;
	}
	return v;
}

// One \uXXXX at r->i (the backslash), or -1.
static int
ref_u(ref *r)
{
	if (r->len - r->i < 6 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u') {
		return -1;
	}
	int u = ref_hex(r->s + r->i + 2);
	if (u >= 0) {
		r->i += 6;
	}
	return u;
}

// One UTF-8 encoded character at r->i (lead byte >= 0x80), decoded from its bits.
static bool
ref_utf8(ref *r)
{
	uint8_t  c = r->s[r->i];
	size_t   n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
	uint32_t cp;
	if (n == 0 || r->len - r->i < n) {
		return false;
	}
	cp = c & (0x7F >> n);
	for (size_t k = 1; k < n; k++) {
		if ((r->s[r->i + k] & 0xC0) != 0x80) {
			return false;
		}
		cp = (cp << 6) | (r->s[r->i + k] & 0x3F);
	}
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
		return false;
	}
	r->i += n;
	return true;
}

static bool
ref_string(ref *r)
{
	bool lone_ok = (r->flags & BRQ_JSON_ALLOW_LONE_SURROGATES) != 0;
	r->i++;
	for (;;) {
		if (r->i >= r->len) {
			return false;
		}
		uint8_t c = r->s[r->i];
		if (c == '"') {
			r->i++;
			return true;
		}
		if (c < 0x20) {
			return false;
		}
		if (c >= 0x80) {
			if (!ref_utf8(r)) {
				return false;
			}
			continue;
		}
		if (c != '\\') {
			r->i++;
			continue;
		}
		if (r->i + 1 < r->len && memchr("\"\\/bfnrt", r->s[r->i + 1], 8) != NULL) {
			r->i += 2;
			continue;
		}
		int u = ref_u(r);
		if (u < 0 || (u == 0 && (r->flags & BRQ_JSON_REJECT_NUL_ESCAPE))) {
			return false;
		}
		if (u >= 0xDC00 && u <= 0xDFFF && !lone_ok) {
			return false;
		}
		if (u >= 0xD800 && u <= 0xDBFF) {
			size_t at  = r->i;
			int    low = ref_u(r);
			if (low < 0xDC00 || low > 0xDFFF) {
				r->i = at; // not a pair: whatever follows is read on its own
				if (!lone_ok) {
					return false;
				}
			}
		}
	}
}

static bool
ref_digits(ref *r)
{
	size_t start = r->i;
	while (r->i < r->len && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
		r->i++;
	}
	return r->i > start;
}

static bool
ref_number(ref *r)
{
	if (r->s[r->i] == '-') {
		r->i++;
	}
	if (r->i >= r->len) {
		return false;
	}
	if (r->s[r->i] == '0') {
		r->i++;
	} else if (r->s[r->i] < '1' || r->s[r->i] > '9' || !ref_digits(r)) {
		return false;
	}
	if (r->i < r->len && r->s[r->i] == '.') {
		r->i++;
		if (!ref_digits(r)) {
			return false;
		}
	}
	if (r->i < r->len && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
		r->i++;
		if (r->i < r->len && (r->s[r->i] == '+' || r->s[r->i] == '-')) {
			r->i++;
		}
		return ref_digits(r);
	}
	return true;
}

static bool
ref_word(ref *r, const char *w)
{
	size_t n = strlen(w);
	if (r->len - r->i < n || memcmp(r->s + r->i, w, n) != 0) {
		return false;
	}
	r->i += n;
	return true;
}

static bool ref_value(ref *r, uint32_t depth);

// '[' or '{' at r->i; the container is at nesting level depth + 1.
static bool
ref_container(ref *r, uint32_t depth)
{
	bool obj   = r->s[r->i] == '{';
	char close = obj ? '}' : ']';
	if (depth + 1 > REF_DEPTH_CAP) {
		r->too_deep = true;
		return false;
	}
	if (depth + 1 > r->depth) {
		r->depth = depth + 1;
	}
	r->i++;
	ref_ws(r);
	if (r->i < r->len && r->s[r->i] == close) {
		r->i++;
		return true;
	}
	for (;;) {
		if (obj) {
			ref_ws(r);
			if (r->i >= r->len || r->s[r->i] != '"' || !ref_string(r)) {
				return false;
			}
			ref_ws(r);
			if (r->i >= r->len || r->s[r->i] != ':') {
				return false;
			}
			r->i++;
		}
		if (!ref_value(r, depth + 1)) {
			return false;
		}
		if (r->i >= r->len) {
			return false;
		}
		if (r->s[r->i] == close) {
			r->i++;
			return true;
		}
		if (r->s[r->i] != ',') {
			return false;
		}
		r->i++;
	}
}

// ws value ws
static bool
ref_value(ref *r, uint32_t depth)
{
	bool ok;
	ref_ws(r);
	if (r->i >= r->len) {
		return false;
	}
	switch (r->s[r->i]) {
	case '{':
	case '[': ok = ref_container(r, depth); break;
	case '"': ok = ref_string(r); break;
	case 't': ok = ref_word(r, "true"); break;
	case 'f': ok = ref_word(r, "false"); break;
	case 'n': ok = ref_word(r, "null"); break;
	default: ok = (r->s[r->i] == '-' || (r->s[r->i] >= '0' && r->s[r->i] <= '9')) && ref_number(r);
	}
	ref_ws(r);
	return ok;
}

// Checks brq_json_valid() against the reference for one flag combination.
static void
check_flags(const uint8_t *data, size_t size, unsigned flags)
{
	ref r = {.s = data, .len = size, .flags = flags};
	// A text is valid at limit L iff it is valid JSON and its depth is at most L.
	bool ok = ref_value(&r, 0) && r.i == size;

	// Around the text's own depth, none, and beyond the cap (clamped).
	const uint32_t limits[] = {0, r.depth > 0 ? r.depth - 1 : 0, r.depth, UINT32_MAX};
	for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
		uint32_t     lim  = limits[k];
		uint32_t     eff  = lim > BRQ_JSON_DEPTH_CAP ? BRQ_JSON_DEPTH_CAP : lim;
		brq_json_err err  = {0, NULL};
		bool         got  = brq_json_valid((const char *) data, size, lim, flags, &err);
		bool         want = !r.too_deep && ok && r.depth <= eff;

		FUZZ_CHECK(got == want);
		if (!got) {
			FUZZ_CHECK(err.reason != NULL && err.reason[0] != '\0');
			FUZZ_CHECK(err.offset <= size);
		} else {
			// Outside strings only ASCII is valid; strings are UTF-8.
			FUZZ_CHECK(brq_utf8_valid((const char *) data, size, false));
		}
	}
	// No state, and err may be NULL.
	FUZZ_CHECK(brq_json_valid((const char *) data, size, UINT32_MAX, flags, NULL) ==
		   (!r.too_deep && ok && r.depth <= BRQ_JSON_DEPTH_CAP));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned flags = 0; flags < 4; flags++) {
		check_flags(data, size, flags);
	}
	return 0;
}
