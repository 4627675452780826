// SPDX-License-Identifier: MIT
// Fuzz target: the JSON validator (proto/json.c), checked against a small independent
// recursive-descent validator written from RFC 8259 (and, for BRQ_JSON_BOUND_NUMBERS, from
// PostgreSQL numeric's rules) for every flag combination and for nesting limits around the
// text's own depth.
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
	double         growth;   // BRQ_JSON_BOUND_NUMBERS: bytes the numbers print beyond written
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

// The exponent's digits p[0..n) as a value, or 1e10 when it has more than 10 significant
// digits (numeric_in refuses any exponent of magnitude 1073741823 or more).
static double
ref_exponent(const uint8_t *p, size_t n)
{
	while (n > 0 && *p == '0') {
		p++;
		n--;
	}
	if (n > 10) {
		return 1e10;
	}
	double v = 0;
	for (size_t k = 0; k < n; k++) {
		v = v * 10 + (p[k] - '0');
	}
	return v;
}

// BRQ_JSON_BOUND_NUMBERS for the number text[0..n), computed in another way than
// proto/json.c: the mantissa's digits as one string with the point after the integer
// digits, then moved by the exponent (doubles hold every quantity here exactly).
static bool
ref_number_bounded(ref *r, const uint8_t *t, size_t n)
{
	size_t k = 0, n_int = 0, n_frac = 0, first = SIZE_MAX, digits = 0;
	double e   = 0;
	bool   neg = t[0] == '-';
	k          = neg ? 1 : 0;
	for (; k < n && t[k] != '.' && t[k] != 'e' && t[k] != 'E'; k++, n_int++, digits++) {
		first = first == SIZE_MAX && t[k] != '0' ? digits : first;
	}
	if (k < n && t[k] == '.') {
		for (k++; k < n && t[k] != 'e' && t[k] != 'E'; k++, n_frac++, digits++) {
			first = first == SIZE_MAX && t[k] != '0' ? digits : first;
		}
	}
	if (k < n) { // 'e'
		k++;
		bool eneg = t[k] == '-';
		k += t[k] == '-' || t[k] == '+';
		e = ref_exponent(t + k, n - k);
		e = eneg ? -e : e;
	}
	if (e >= 1073741823.0 || e <= -1073741823.0) {
		return false;
	}
	double scale = (double) n_frac - e > 0 ? (double) n_frac - e : 0;
	bool   zero  = first == SIZE_MAX;
	// The first nonzero digit is digit `first` of the string; the point sits after n_int.
	double top     = zero ? 0 : (double) n_int - 1 - (double) first + e;
	double printed = (neg && !zero ? 1 : 0) + (top >= 0 ? top + 1 : 1) + (scale > 0 ? scale + 1 : 0);
	if (top > 131071 || scale > 16383 || printed > BRQ_JSON_NUMBER_PRINT_MAX) {
		return false;
	}
	r->growth += printed > (double) n ? printed - (double) n : 0;
	return r->growth <= BRQ_JSON_NUMBERS_GROWTH_BASE + 2.0 * (double) r->len;
}

static bool
ref_number(ref *r)
{
	size_t start = r->i;
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
		if (!ref_digits(r)) {
			return false;
		}
	}
	return (r->flags & BRQ_JSON_BOUND_NUMBERS) == 0 || ref_number_bounded(r, r->s + start, r->i - start);
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
			char text[160];
			FUZZ_CHECK(err.reason != NULL && err.reason[0] != '\0');
			FUZZ_CHECK(err.offset <= size);
			FUZZ_CHECK(err.fault == BRQ_JSON_SYNTAX || (flags & BRQ_JSON_BOUND_NUMBERS));
			FUZZ_CHECK(brq_json_err_text(&err, text, sizeof text) > 0);
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
	for (unsigned flags = 0; flags < 8; flags++) {
		check_flags(data, size, flags);
	}
	return 0;
}
