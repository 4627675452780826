// SPDX-License-Identifier: MIT
// Strict, bounded RFC 8259 JSON validator: accepts or rejects text, builds nothing.
#ifndef BRQ_JSON_H
#define BRQ_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Hard ceiling on max_depth: the nesting stack is a bit array of this many bits on the
// C stack, so a caller cannot make the validator allocate.
#define BRQ_JSON_DEPTH_CAP 4096

// Flags for brq_json_valid().
enum brq_json_flags {
	// Accept \uD800..\uDFFF escapes that are not a high+low pair. RFC 8259's grammar
	// allows them, but they denote no character and PostgreSQL jsonb refuses them, so
	// by default they are errors.
	BRQ_JSON_ALLOW_LONE_SURROGATES = 1u << 0,
	// Refuse the escape \u0000. Valid JSON, but jsonb cannot store it ("unsupported
	// Unicode escape sequence"); payloads are checked with this flag so the client gets
	// invalid_argument instead of a database error.
	BRQ_JSON_REJECT_NUL_ESCAPE = 1u << 1,
	// Refuse numbers that PostgreSQL's numeric (which jsonb stores numbers as) cannot hold
	// or would print longer than BRQ_JSON_NUMBER_PRINT_MAX characters, and texts whose
	// numbers together would print more than BRQ_JSON_NUMBERS_GROWTH_BASE + 2 * len bytes
	// longer than written. numeric prints every digit of the decimal expansion: "1e131071"
	// (8 bytes) prints 131072 digits each time the row is read, where no statement_timeout
	// acts, so a small payload could cost megabytes and seconds on every read.
	BRQ_JSON_BOUND_NUMBERS = 1u << 2,
	// What text bound for a jsonb column is checked with.
	BRQ_JSON_FOR_JSONB = BRQ_JSON_REJECT_NUL_ESCAPE | BRQ_JSON_BOUND_NUMBERS,
};

// Longest one number may print as (sign, digits, point), with BRQ_JSON_BOUND_NUMBERS:
// every IEEE double fits, written with up to 17 significant digits (the longest,
// -4.9e-324, prints "-0." and 325 digits: 328), and so does any integer of 1000 digits.
#define BRQ_JSON_NUMBER_PRINT_MAX 1000

// With BRQ_JSON_BOUND_NUMBERS, the bytes by which all numbers of a text may print longer
// than written are at most this plus twice the text's length: a text reads back at most
// a few times its size (jsonb adds a space after ',' and ':' too).
#define BRQ_JSON_NUMBERS_GROWTH_BASE 65536

// What a failed validation refused.
typedef enum brq_json_fault {
	BRQ_JSON_SYNTAX,         // not valid JSON, or a string a flag refuses
	BRQ_JSON_NUMBER_RANGE,   // a number PostgreSQL numeric cannot hold
	BRQ_JSON_NUMBER_LONG,    // a number printing longer than BRQ_JSON_NUMBER_PRINT_MAX
	BRQ_JSON_NUMBERS_GROWTH, // the numbers together printing too much longer than written
} brq_json_fault;

// Where and why validation failed.
typedef struct brq_json_err {
	// Byte offset of the first offending byte (== len for "unexpected end"); for the
	// number faults, the number's first byte.
	size_t         offset;
	const char    *reason; // static string, e.g. "expected ':'"
	brq_json_fault fault;
	// NUMBER_LONG: the number's printed length; NUMBERS_GROWTH: the bytes all numbers up
	// to this one print longer than written (saturated). limit: the bound passed.
	uint64_t printed, limit;
} brq_json_err;

// True iff text[0..len) is exactly one JSON value (RFC 8259; any value at top level,
// optional surrounding whitespace, no BOM) with all strings well-formed UTF-8, and arrays
// and objects nested at most max_depth deep (clamped to BRQ_JSON_DEPTH_CAP; "[]" has
// depth 1, a scalar depth 0). Duplicate object keys are not checked (RFC: SHOULD be
// unique; jsonb keeps the last). Runs in O(len) time and O(1) space without recursion.
// On false and err != NULL, *err says where and why. Borrows text for the call only.
bool brq_json_valid(const char *text, size_t len, uint32_t max_depth, unsigned flags, brq_json_err *err);

// Writes what *err says as one line for a reply ("invalid JSON at byte 3: expected ':'",
// "number at byte 1 would print as 131072 characters (at most 1000)") into buf[0..cap),
// NUL-terminated (cap >= 1). Returns snprintf's result.
int brq_json_err_text(const brq_json_err *err, char *buf, size_t cap);

#endif
