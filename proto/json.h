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
};

// Where and why validation failed.
typedef struct brq_json_err {
	size_t      offset; // byte offset of the first offending byte (== len for "unexpected end")
	const char *reason; // static string, e.g. "expected ':'"
} brq_json_err;

// True iff text[0..len) is exactly one JSON value (RFC 8259; any value at top level,
// optional surrounding whitespace, no BOM) with all strings well-formed UTF-8, and arrays
// and objects nested at most max_depth deep (clamped to BRQ_JSON_DEPTH_CAP; "[]" has
// depth 1, a scalar depth 0). Duplicate object keys are not checked (RFC: SHOULD be
// unique; jsonb keeps the last). Runs in O(len) time and O(1) space without recursion.
// On false and err != NULL, *err says where and why. Borrows text for the call only.
bool brq_json_valid(const char *text, size_t len, uint32_t max_depth, unsigned flags, brq_json_err *err);

#endif
