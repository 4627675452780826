// SPDX-License-Identifier: MIT
// The web console's text formats: a JSON writer for its replies and a parser of the
// application/x-www-form-urlencoded bodies and query strings of its requests.
#ifndef BRQ_GATEWAY_CONSOLE_JSON_H
#define BRQ_GATEWAY_CONSOLE_JSON_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

// Nesting the writer follows (objects and arrays).
#define BRQ_JW_DEPTH 16

// A growable JSON text. Commas are placed by the writer: call brq_jw_key() before each
// member value, nothing between array elements. Errors are sticky (err), like brq_buf.
typedef struct brq_jw {
	char  *data; // owned; len bytes, NUL-terminated when cap > 0
	size_t len, cap;
	size_t limit; // largest len
	int    err;   // 0, BRQ_ENOMEM or BRQ_E2BIG
	int    depth;
	bool   first[BRQ_JW_DEPTH]; // no value written yet at this depth
	char   kind[BRQ_JW_DEPTH];  // '{' or '[' opened at this depth
	bool   after_key;           // a key was written: its value needs no comma
} brq_jw;

void brq_jw_init(brq_jw *j, size_t limit);
void brq_jw_fini(brq_jw *j);
void brq_jw_reset(brq_jw *j);
void brq_jw_obj(brq_jw *j); // {
void brq_jw_end(brq_jw *j); // } or ] (whichever is open)
void brq_jw_arr(brq_jw *j); // [
void brq_jw_key(brq_jw *j, const char *key);
void brq_jw_str(brq_jw *j, const char *s, size_t len); // escaped; invalid UTF-8 bytes become U+FFFD
void brq_jw_cstr(brq_jw *j, const char *s);
void brq_jw_u64(brq_jw *j, uint64_t v);
void brq_jw_i64(brq_jw *j, int64_t v);
void brq_jw_dbl(brq_jw *j, double v); // finite; 3 decimals
void brq_jw_bool(brq_jw *j, bool v);
void brq_jw_null(brq_jw *j);
// A value that is JSON text already (a payload as the database returns it). The caller
// vouches for it.
void brq_jw_raw(brq_jw *j, const char *json, size_t len);
// A member of the open object, its key and value in one call: brq_jw_key() then the
// value function of the same suffix.
void brq_jw_kv_str(brq_jw *j, const char *key, const char *s, size_t len);
void brq_jw_kv_cstr(brq_jw *j, const char *key, const char *s);
void brq_jw_kv_u64(brq_jw *j, const char *key, uint64_t v);
void brq_jw_kv_i64(brq_jw *j, const char *key, int64_t v);
void brq_jw_kv_dbl(brq_jw *j, const char *key, double v);
void brq_jw_kv_bool(brq_jw *j, const char *key, bool v);
// An instant's two members of the JSON form (docs/protocol.md §11): "NAME_ms": unix ms
// and "NAME": "2026-12-02T04:31:39.521Z" (brq_fmt_time_ms), both null when !has. name
// is the protocol's key without its "_ms".
void brq_jw_kv_instant(brq_jw *j, const char *name, int64_t ms, bool has);
// "key": v, or null when !has (a nil of the reply: no limit, no retry, ...).
void brq_jw_kv_opt_u64(brq_jw *j, const char *key, uint64_t v, bool has);

// One parsed form: names and values URL-decoded ('+' is a space), in order.
#define BRQ_FORM_MAX 24
typedef struct brq_form {
	char   *buf; // owned: the decoded names and values, NUL-terminated each
	size_t  n;
	brq_str name[BRQ_FORM_MAX];
	brq_str value[BRQ_FORM_MAX];
} brq_form;

// Parses text[0..len) ("a=1&b=x+y"). 0, BRQ_EINVAL (more than BRQ_FORM_MAX fields, a
// name twice, a bad %-escape, a NUL) with why set to a static reason, or BRQ_ENOMEM.
// Release with brq_form_fini() in every case.
BRQ_MUSTCHECK int brq_form_parse(brq_form *f, const char *text, size_t len, const char **why);
void              brq_form_fini(brq_form *f);
// The value of name, or NULL (borrowed from f; NUL-terminated).
const brq_str *brq_form_get(const brq_form *f, const char *name);
// The value of name as a decimal number in [min, max]: 0 (*out set), BRQ_ENOTFOUND
// (absent or empty), BRQ_EINVAL (not such a number).
BRQ_MUSTCHECK int brq_form_u64(const brq_form *f, const char *name, uint64_t min, uint64_t max,
			       uint64_t *out);

#endif
