// SPDX-License-Identifier: MIT
// Shared machinery of the request and reply decoders: context, field lookup, typed getters.
#ifndef BRQ_DEC_H
#define BRQ_DEC_H

#include "mpread.h"
#include "proto.h"

// State of one decode call.
typedef struct brq_dec {
	const brq_limits *lim;
	brq_arena        *arena;
	char             *err; // caller's buffer, may be NULL
	size_t            errlen;
	const uint8_t    *end;         // end of the (pre-scanned) message
	uint32_t          chain_total; // chained jobs seen so far in this request
} brq_dec;

// One key of a map we look for, and where its value starts (NULL = absent).
typedef struct brq_field {
	const char    *name;
	const uint8_t *at;
} brq_field;

// Path of a field for messages: "<path>.<name>", or just "<name>" for the top level.
#define BRQ_PATH_MAX 96

// Formats "fmt..." into d->err and returns st.
brq_status brq_dec_fail(brq_dec *d, brq_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
// Formats "<path>.<name>: fmt..." (or "<name>: ..." when path is empty) and returns st.
brq_status brq_dec_failf(brq_dec *d, brq_status st, const char *path, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

// Reads the map at r (which must be at a value inside a pre-scanned buffer), records for
// each of f[0..nf) where its value starts, skips everything else. Fails on a non-map
// (named `path`, or "message" at top level), a non-string key, or a known key twice.
brq_status brq_dec_map(brq_dec *d, brq_rd *r, const char *path, brq_field *f, size_t nf);

// Typed getters for one field. When the field is absent: required → error
// "required <type>", else *present = false (present may be NULL for required fields).
// Ranges are inclusive; a violation (including a negative value for an unsigned field)
// gives "must be min..max". All errors are BRQ_ST_INVALID_ARGUMENT unless stated.
brq_status brq_dec_uint(brq_dec *d, const brq_field *f, const char *path, bool required, uint64_t min,
			uint64_t max, uint64_t *out, bool *present);
// brq_dec_uint for the many uint32_t fields (max <= UINT32_MAX); *out is written only on
// success (0 when absent).
brq_status brq_dec_u32(brq_dec *d, const brq_field *f, const char *path, bool required, uint32_t min,
		       uint32_t max, uint32_t *out, bool *present);
brq_status brq_dec_int(brq_dec *d, const brq_field *f, const char *path, bool required, int64_t min,
		       int64_t max, int64_t *out, bool *present);
brq_status brq_dec_bool(brq_dec *d, const brq_field *f, const char *path, bool required, bool *out,
			bool *present);
// String (or bin too, when allow_bin) of min..max bytes; over max gives `over`.
brq_status brq_dec_str(brq_dec *d, const brq_field *f, const char *path, bool required, bool allow_bin,
		       uint32_t min, uint32_t max, brq_status over, brq_str *out, bool *present);
// A 16-byte lease token (msgpack bin, exactly BRQ_LEASE_LEN bytes).
brq_status brq_dec_lease(brq_dec *d, const brq_field *f, const char *path, uint8_t out[BRQ_LEASE_LEN]);
// A job state by its name (required); "unknown job state" for any other string.
brq_status brq_dec_state(brq_dec *d, const brq_field *f, const char *path, brq_state *out);
// Array of min..max elements (over max gives `over`); *elems is left at the first one.
brq_status brq_dec_array(brq_dec *d, const brq_field *f, const char *path, bool required, uint32_t min,
			 uint32_t max, brq_status over, brq_rd *elems, uint32_t *n, bool *present);
// Returns from the calling decode function on the first step that fails.
#define TRY(expr)                        \
	do {                             \
		brq_status st_ = (expr); \
		if (st_ != BRQ_ST_OK) {  \
			return st_;      \
		}                        \
	} while (0)

// Arena storage for n elements, or BRQ_ST_INTERNAL.
brq_status brq_dec_alloc(brq_dec *d, uint32_t n, size_t size, void **out);

// Decodes one element at r into out (a slot of the element type), naming it path.
typedef brq_status (*brq_dec_elem_fn)(brq_dec *d, brq_rd *r, const char *path, void *out);
// The n elements at *elems (from brq_dec_array) into arena storage *out of n slots of
// size bytes, each decoded by fn with the path "prefix.name[i]".
brq_status brq_dec_elems(brq_dec *d, brq_rd *elems, uint32_t n, const char *prefix, const char *name,
			 size_t size, brq_dec_elem_fn fn, void **out);

// Element decoders of arrays of plain values (out: a uint64_t, a bool, a brq_str);
// "<path>: must be an unsigned integer" (a boolean, a string) for anything else.
brq_status brq_dec_uint_elem(brq_dec *d, brq_rd *r, const char *path, void *out);
brq_status brq_dec_bool_elem(brq_dec *d, brq_rd *r, const char *path, void *out);
brq_status brq_dec_str_elem(brq_dec *d, brq_rd *r, const char *path, void *out);

// An array field of any length (a reply's: the gateway bounds them), its elements decoded
// by brq_dec_elems as "path.<name>[i]". Absent: an error when required, else *n = 0,
// *out untouched and *present = false (present may be NULL).
brq_status brq_dec_list(brq_dec *d, const brq_field *f, const char *path, bool required, size_t size,
			brq_dec_elem_fn fn, void **out, uint32_t *n, bool *present);

// A job row (the "job" reply's map, a "list" reply's jobs[i]) into out (a brq_job_info).
brq_status brq_dec_job_info(brq_dec *d, brq_rd *r, const char *path, void *out);

// How brq_dec_fields reads one field of a map into a struct.
typedef enum brq_kind {
	BRQ_K_U64,   // uint64_t, brq_dec_uint
	BRQ_K_U32,   // uint32_t, brq_dec_u32
	BRQ_K_I64,   // int64_t, brq_dec_int
	BRQ_K_BOOL,  // bool, brq_dec_bool
	BRQ_K_STR,   // brq_str, brq_dec_str; over max gives BRQ_ST_INVALID_ARGUMENT
	BRQ_K_LEASE, // uint8_t[BRQ_LEASE_LEN], brq_dec_lease (always required)
	BRQ_K_STATE, // brq_state, brq_dec_state (always required)
	BRQ_K_FN,    // decoded by the row's fn only
} brq_kind;

enum {
	BRQ_REQ = 1, // required: absent is an error
	BRQ_NIL = 2, // nil reads as absent
	BRQ_BIN = 4, // BRQ_K_STR: a msgpack bin is taken too
};

// Decodes or checks a field f of the struct obj (for BRQ_K_FN and a row's extra check).
typedef brq_status (*brq_field_fn)(brq_dec *d, const brq_field *f, const char *path, void *obj);

// One row of a map's table: key, kind, flags, then (designated, all optional) where the
// value goes in the struct, where its bool has_ flag goes (0: none; no struct starts with
// one), the range (length for strings; max 0: the kind's whole range) and fn, called
// after the value is stored (for BRQ_K_FN: instead), for a check a range cannot say.
typedef struct brq_fdesc {
	const char  *name;
	brq_kind     kind;
	unsigned     flags;
	size_t       off;
	size_t       has;
	int64_t      min;
	uint64_t     max;
	brq_field_fn fn;
} brq_fdesc;

#define BRQ_FIELDS_MAX 24
#define BRQ_NELEM(a)   (sizeof(a) / sizeof((a)[0]))

// Reads the map at r (brq_dec_map) and then its fields into obj as fd[0..n) describe, in
// that order (the first bad one is reported). n <= BRQ_FIELDS_MAX.
brq_status brq_dec_fields(brq_dec *d, brq_rd *r, const char *path, const brq_fdesc *fd, size_t n, void *obj);

// True iff the field is present and nil.
bool brq_dec_is_nil(const brq_field *f);

// Cursor over the value of a present field (bounded by the message end).
brq_rd brq_dec_at(const brq_dec *d, const brq_field *f);

#endif
