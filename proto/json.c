// SPDX-License-Identifier: MIT
// RFC 8259 validator used to refuse invalid payloads before the database sees them.
#include "json.h"

#include <inttypes.h>
#include <stdio.h>

#include "text.h"

// What the scanner expects next.
typedef enum {
	S_VALUE,        // any value
	S_VALUE_OR_END, // just after '[': a value or ']'
	S_KEY_OR_END,   // just after '{': a key or '}'
	S_KEY,          // after ',' in an object: a key
	S_AFTER,        // after a value: ',', a closer, or the end of text
} scan_state;

typedef struct {
	const uint8_t *s;
	size_t         len;
	size_t         i;
	unsigned       flags;
	brq_json_err  *err;
	uint64_t       growth;     // bytes the numbers so far print longer than written
	uint64_t       growth_max; // BRQ_JSON_NUMBERS_GROWTH_BASE + 2 * len, saturated
} scanner;

static bool
fail(scanner *sc, size_t at, const char *why)
{
	if (sc->err != NULL) {
		*sc->err = (brq_json_err) {.offset = at, .reason = why, .fault = BRQ_JSON_SYNTAX};
	}
	return false;
}

static void
skip_ws(scanner *sc)
{
	while (sc->i < sc->len) {
		uint8_t c = sc->s[sc->i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			break;
		}
		sc->i++;
	}
}

static int
hex4(const uint8_t *p)
{
	int v = 0;
	for (int k = 0; k < 4; k++) {
		uint8_t c = p[k];
		int     d;
		if (c >= '0' && c <= '9') {
			d = c - '0';
		} else if (c >= 'a' && c <= 'f') {
			d = c - 'a' + 10;
		} else if (c >= 'A' && c <= 'F') {
			d = c - 'A' + 10;
		} else {
			return -1;
		}
		v = v * 16 + d;
	}
	return v;
}

// Reads "\uXXXX" at sc->i (pointing at the backslash); stores the code unit.
static bool
read_u_escape(scanner *sc, int *unit)
{
	if (sc->len - sc->i < 6) {
		return fail(sc, sc->i, "truncated \\u escape");
	}
	*unit = hex4(sc->s + sc->i + 2);
	if (*unit < 0) {
		return fail(sc, sc->i, "bad hex digit in \\u escape");
	}
	sc->i += 6;
	return true;
}

// Called with sc->i on the opening quote; leaves it after the closing quote.
static bool
scan_string(scanner *sc)
{
	sc->i++;
	for (;;) {
		if (sc->i >= sc->len) {
			return fail(sc, sc->len, "unterminated string");
		}
		uint8_t c = sc->s[sc->i];
		if (c == '"') {
			sc->i++;
			return true;
		}
		if (c < 0x20) {
			return fail(sc, sc->i, "control character in string");
		}
		if (c >= 0x80) {
			size_t k = brq_utf8_seq_len(sc->s + sc->i, sc->len - sc->i);
			if (k == 0) {
				return fail(sc, sc->i, "invalid UTF-8");
			}
			sc->i += k;
			continue;
		}
		if (c != '\\') {
			sc->i++;
			continue;
		}
		if (sc->i + 1 >= sc->len) {
			return fail(sc, sc->len, "unterminated string");
		}
		switch (sc->s[sc->i + 1]) {
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't': sc->i += 2; continue;
		case 'u': break;
		default: return fail(sc, sc->i, "invalid escape");
		}
		size_t at = sc->i;
		int    unit;
		if (!read_u_escape(sc, &unit)) {
			return false;
		}
		if (unit == 0 && (sc->flags & BRQ_JSON_REJECT_NUL_ESCAPE)) {
			return fail(sc, at, "\\u0000 is not allowed");
		}
		bool lone_ok = (sc->flags & BRQ_JSON_ALLOW_LONE_SURROGATES) != 0;
		if (unit >= 0xDC00 && unit <= 0xDFFF && !lone_ok) {
			return fail(sc, at, "lone low surrogate");
		}
		if (unit >= 0xD800 && unit <= 0xDBFF) {
			// A high surrogate must be followed at once by an escaped low surrogate.
			int low = -1;
			if (sc->len - sc->i >= 6 && sc->s[sc->i] == '\\' && sc->s[sc->i + 1] == 'u') {
				low = hex4(sc->s + sc->i + 2);
			}
			if (low >= 0xDC00 && low <= 0xDFFF) {
				sc->i += 6;
			} else if (!lone_ok) {
				return fail(sc, at, "lone high surrogate");
			}
		}
	}
}

static bool
scan_digits(scanner *sc, const char *why)
{
	size_t start = sc->i;
	while (sc->i < sc->len && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') {
		sc->i++;
	}
	return sc->i > start ? true : fail(sc, sc->i, why);
}

// ---- Numbers as PostgreSQL numeric holds and prints them ----------------------------

// PostgreSQL numeric's limits (src/backend/utils/adt/numeric.c, version 15), which jsonb
// stores every number as. The weight, the place of the first base-10000 digit, is an
// int16: at most 4 * 32768 = 131072 decimal digits before the point. The display scale
// (digits after the point, trailing zeros included: "1.50" prints "1.50") has 14 bits:
// at most 16383. numeric_in refuses an exponent of magnitude INT_MAX / 2 or more before
// it looks at the value, so even "0e1073741823" is refused.
#define PG_INT_DIGITS_MAX 131072
#define PG_SCALE_MAX      16383
#define PG_EXP_MAX        1073741822

// Digit counts are clamped here so that sums with an exponent cannot overflow int64;
// a text this long is far past every bound anyway.
#define COUNT_MAX ((int64_t) 1 << 40)

// A scanned number, enough to say how numeric prints it.
typedef struct {
	size_t  start;  // its first byte
	bool    neg;    // written with '-'
	bool    zero;   // every mantissa digit is 0
	int64_t lead;   // power of ten of the first nonzero mantissa digit, exponent not applied
	int64_t n_frac; // digits after '.', clamped to COUNT_MAX
	int64_t exp;    // the exponent; past PG_EXP_MAX it stays somewhere in (PG_EXP_MAX, 11e9)
} number;

static int64_t
count(size_t n)
{
	return n > (uint64_t) COUNT_MAX ? COUNT_MAX : (int64_t) n;
}

// The exponent's digits p[0..n) (any number of them, leading zeros allowed), saturating.
static int64_t
exponent_value(const uint8_t *p, size_t n, bool neg)
{
	int64_t v = 0;
	for (size_t k = 0; k < n && v <= PG_EXP_MAX; k++) {
		v = v * 10 + (p[k] - '0');
	}
	return neg ? -v : v;
}

static bool
fail_number(scanner *sc, const number *num, brq_json_fault fault, const char *why, uint64_t printed,
	    uint64_t limit)
{
	fail(sc, num->start, why);
	if (sc->err != NULL) {
		sc->err->fault   = fault;
		sc->err->printed = printed;
		sc->err->limit   = limit;
	}
	return false;
}

// BRQ_JSON_BOUND_NUMBERS, with sc->i just past the number. numeric prints a number as
// an optional '-' (not for zero), the integer part ("0" when below 1), and when the scale
// is above 0 a '.' and scale digits: every digit of the decimal expansion.
static bool
check_number(scanner *sc, const number *num)
{
	int64_t scale = num->n_frac - num->exp;               // numeric_in's dscale
	int64_t top   = num->zero ? 0 : num->lead + num->exp; // power of ten of the first digit

	if (num->exp > PG_EXP_MAX || num->exp < -PG_EXP_MAX) {
		return fail_number(sc, num, BRQ_JSON_NUMBER_RANGE, "exponent magnitude over 1073741822", 0,
				   0);
	}
	scale = scale < 0 ? 0 : scale;
	if (top >= PG_INT_DIGITS_MAX) {
		return fail_number(sc, num, BRQ_JSON_NUMBER_RANGE,
				   "more than 131072 digits before the decimal point", 0, 0);
	}
	if (scale > PG_SCALE_MAX) {
		return fail_number(sc, num, BRQ_JSON_NUMBER_RANGE,
				   "more than 16383 digits after the decimal point", 0, 0);
	}
	uint64_t printed = (uint64_t) ((num->neg && !num->zero) + (top >= 0 ? top + 1 : 1) +
				       (scale > 0 ? scale + 1 : 0));
	if (printed > BRQ_JSON_NUMBER_PRINT_MAX) {
		return fail_number(sc, num, BRQ_JSON_NUMBER_LONG, "number prints too long", printed,
				   BRQ_JSON_NUMBER_PRINT_MAX);
	}
	size_t written = sc->i - num->start;
	if (printed > written) {
		uint64_t more = printed - written;
		sc->growth    = sc->growth > UINT64_MAX - more ? UINT64_MAX : sc->growth + more;
		if (sc->growth > sc->growth_max) {
			return fail_number(sc, num, BRQ_JSON_NUMBERS_GROWTH, "numbers print too long",
					   sc->growth, sc->growth_max);
		}
	}
	return true;
}

// number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT )
static bool
scan_number(scanner *sc)
{
	number num = {.start = sc->i, .zero = true};
	size_t at;

	if (sc->s[sc->i] == '-') {
		num.neg = true;
		sc->i++;
	}
	at = sc->i;
	if (sc->i < sc->len && sc->s[sc->i] == '0') {
		sc->i++; // a leading zero stands alone; "01" then fails as a trailing digit
	} else if (!scan_digits(sc, "expected digit")) {
		return false;
	} else {
		num.zero = false; // it starts with 1-9
		num.lead = count(sc->i - at) - 1;
	}
	if (sc->i < sc->len && sc->s[sc->i] == '.') {
		at = ++sc->i;
		if (!scan_digits(sc, "expected digit after '.'")) {
			return false;
		}
		num.n_frac = count(sc->i - at);
		for (size_t k = at; num.zero && k < sc->i; k++) {
			if (sc->s[k] != '0') {
				num.zero = false;
				num.lead = -count(k - at + 1);
			}
		}
	}
	if (sc->i < sc->len && (sc->s[sc->i] == 'e' || sc->s[sc->i] == 'E')) {
		bool neg_exp = false;
		sc->i++;
		if (sc->i < sc->len && (sc->s[sc->i] == '+' || sc->s[sc->i] == '-')) {
			neg_exp = sc->s[sc->i] == '-';
			sc->i++;
		}
		at = sc->i;
		if (!scan_digits(sc, "expected digit in exponent")) {
			return false;
		}
		num.exp = exponent_value(sc->s + at, sc->i - at, neg_exp);
	}
	return (sc->flags & BRQ_JSON_BOUND_NUMBERS) == 0 || check_number(sc, &num);
}

static bool
scan_literal(scanner *sc, const char *word, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (sc->i + k >= sc->len || sc->s[sc->i + k] != (uint8_t) word[k]) {
			return fail(sc, sc->i + k, "invalid literal");
		}
	}
	sc->i += n;
	return true;
}

static bool
scan_scalar(scanner *sc)
{
	switch (sc->s[sc->i]) {
	case '"': return scan_string(sc);
	case 't': return scan_literal(sc, "true", 4);
	case 'f': return scan_literal(sc, "false", 5);
	case 'n': return scan_literal(sc, "null", 4);
	default:
		if (sc->s[sc->i] == '-' || (sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9')) {
			return scan_number(sc);
		}
		return fail(sc, sc->i, "expected value");
	}
}

// The open containers: one bit per level, 1 = object, 0 = array.
typedef struct nesting {
	uint8_t  kinds[BRQ_JSON_DEPTH_CAP / 8];
	uint32_t depth, max;
} nesting;

static bool
in_object(const nesting *n)
{
	return (n->kinds[(n->depth - 1) / 8] >> ((n->depth - 1) % 8)) & 1u;
}

// S_KEY: a string key and its ':'.
static bool
step_key(scanner *sc, scan_state *st)
{
	if (sc->s[sc->i] != '"') {
		return fail(sc, sc->i, "expected string key");
	}
	if (!scan_string(sc)) {
		return false;
	}
	skip_ws(sc);
	if (sc->i >= sc->len || sc->s[sc->i] != ':') {
		return fail(sc, sc->i, "expected ':'");
	}
	sc->i++;
	*st = S_VALUE;
	return true;
}

// S_VALUE: opens a container (within the depth limit) or reads a scalar.
static bool
step_value(scanner *sc, nesting *n, scan_state *st)
{
	uint8_t c = sc->s[sc->i];
	if (c != '{' && c != '[') {
		if (!scan_scalar(sc)) {
			return false;
		}
		*st = S_AFTER;
		return true;
	}
	if (n->depth >= n->max) {
		return fail(sc, sc->i, "nesting too deep");
	}
	if (c == '{') {
		n->kinds[n->depth / 8] |= (uint8_t) (1u << (n->depth % 8));
	} else {
		n->kinds[n->depth / 8] &= (uint8_t) ~(1u << (n->depth % 8));
	}
	n->depth++;
	sc->i++;
	*st = c == '{' ? S_KEY_OR_END : S_VALUE_OR_END;
	return true;
}

// S_AFTER: after a value inside a container, a ',' or the container's end.
static bool
step_after(scanner *sc, nesting *n, scan_state *st)
{
	uint8_t c = sc->s[sc->i];
	if (n->depth == 0) {
		return fail(sc, sc->i, "trailing characters after value");
	}
	bool obj = in_object(n);
	if (c == ',') {
		sc->i++;
		*st = obj ? S_KEY : S_VALUE;
	} else if (c == (obj ? '}' : ']')) {
		sc->i++;
		n->depth--;
	} else {
		return fail(sc, sc->i, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	return true;
}

bool
brq_json_valid(const char *text, size_t len, uint32_t max_depth, unsigned flags, brq_json_err *err)
{
	nesting    n  = {.max = max_depth > BRQ_JSON_DEPTH_CAP ? BRQ_JSON_DEPTH_CAP : max_depth};
	scan_state st = S_VALUE;
	scanner    sc = {(const uint8_t *) text, len, 0, flags, err, 0, UINT64_MAX};
	bool       ok = true;

	if (len <= (UINT64_MAX - BRQ_JSON_NUMBERS_GROWTH_BASE) / 2) {
		sc.growth_max = BRQ_JSON_NUMBERS_GROWTH_BASE + 2 * (uint64_t) len;
	}
	while (ok) {
		skip_ws(&sc);
		if (sc.i >= sc.len) {
			return (st == S_AFTER && n.depth == 0) || fail(&sc, sc.len, "unexpected end of text");
		}
		switch (st) {
		case S_VALUE_OR_END: // right after '[': ']' closes it, anything else is a value
		case S_KEY_OR_END:   // right after '{': '}' closes it, anything else is a key
			if (sc.s[sc.i] == (st == S_VALUE_OR_END ? ']' : '}')) {
				sc.i++;
				n.depth--;
				st = S_AFTER;
			} else {
				st = st == S_VALUE_OR_END ? S_VALUE : S_KEY;
			}
			break;
		case S_KEY: ok = step_key(&sc, &st); break;
		case S_VALUE: ok = step_value(&sc, &n, &st); break;
		case S_AFTER: ok = step_after(&sc, &n, &st); break;
		}
	}
	return false;
}

int
brq_json_err_text(const brq_json_err *err, char *buf, size_t cap)
{
	switch (err->fault) {
	case BRQ_JSON_NUMBER_RANGE:
		return snprintf(buf, cap, "number at byte %zu is out of PostgreSQL numeric's range: %s",
				err->offset, err->reason);
	case BRQ_JSON_NUMBER_LONG:
		return snprintf(buf, cap,
				"number at byte %zu would print as %" PRIu64 " characters (at most %" PRIu64
				")",
				err->offset, err->printed, err->limit);
	case BRQ_JSON_NUMBERS_GROWTH:
		return snprintf(buf, cap,
				"numbers up to byte %zu would print %" PRIu64
				" bytes longer than written (at most %" PRIu64 " for this text)",
				err->offset, err->printed, err->limit);
	case BRQ_JSON_SYNTAX: break;
	}
	return snprintf(buf, cap, "invalid JSON at byte %zu: %s", err->offset, err->reason);
}
