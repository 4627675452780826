// SPDX-License-Identifier: MIT
// RFC 8259 validator used to refuse invalid payloads before the database sees them.
#include "json.h"

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
} scanner;

static bool
fail(scanner *sc, size_t at, const char *why)
{
	if (sc->err != NULL) {
		sc->err->offset = at;
		sc->err->reason = why;
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

// number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT )
static bool
scan_number(scanner *sc)
{
	if (sc->s[sc->i] == '-') {
		sc->i++;
	}
	if (sc->i < sc->len && sc->s[sc->i] == '0') {
		sc->i++; // a leading zero stands alone; "01" then fails as a trailing digit
	} else if (!scan_digits(sc, "expected digit")) {
		return false;
	}
	if (sc->i < sc->len && sc->s[sc->i] == '.') {
		sc->i++;
		if (!scan_digits(sc, "expected digit after '.'")) {
			return false;
		}
	}
	if (sc->i < sc->len && (sc->s[sc->i] == 'e' || sc->s[sc->i] == 'E')) {
		sc->i++;
		if (sc->i < sc->len && (sc->s[sc->i] == '+' || sc->s[sc->i] == '-')) {
			sc->i++;
		}
		if (!scan_digits(sc, "expected digit in exponent")) {
			return false;
		}
	}
	return true;
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
	scanner    sc = {(const uint8_t *) text, len, 0, flags, err};
	bool       ok = true;

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
