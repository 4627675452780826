// SPDX-License-Identifier: MIT
// Field lookup and typed getters that turn msgpack values into checked C values.
#include "dec.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void
vformat(brq_dec *d, size_t at, const char *fmt, va_list ap)
{
	if (d->err == NULL || d->errlen <= at) {
		return;
	}
	(void) vsnprintf(d->err + at, d->errlen - at, fmt, ap);
}

brq_status
brq_dec_fail(brq_dec *d, brq_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vformat(d, 0, fmt, ap);
	va_end(ap);
	return st;
}

brq_status
brq_dec_failf(brq_dec *d, brq_status st, const char *path, const char *name, const char *fmt, ...)
{
	va_list ap;
	int     n = 0;

	if (d->err != NULL && d->errlen > 0) {
		n = snprintf(d->err, d->errlen, "%s%s%s: ", path, path[0] != '\0' ? "." : "", name);
		if (n < 0) {
			n = 0;
		}
	}
	va_start(ap, fmt);
	vformat(d, (size_t) n, fmt, ap);
	va_end(ap);
	return st;
}

brq_rd
brq_dec_at(const brq_dec *d, const brq_field *f)
{
	brq_rd r = {f->at, d->end};
	return r;
}

brq_status
brq_dec_map(brq_dec *d, brq_rd *r, const char *path, brq_field *f, size_t nf)
{
	const char *what = path[0] != '\0' ? path : "message";
	uint32_t    pairs;
	size_t      next = 0; // where the search for the next key starts

	for (size_t k = 0; k < nf; k++) {
		f[k].at = NULL;
	}
	if (brq_mp_read_map(r, &pairs) != 0) {
		return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "%s: must be a map", what);
	}
	for (uint32_t i = 0; i < pairs; i++) {
		brq_str key;
		if (brq_mp_read_str(r, &key) != 0) {
			return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "%s: map keys must be strings", what);
		}
		// Encoders write a map's keys in the order of its field table, so the search
		// starts after the last match: one comparison per key instead of nf / 2.
		for (size_t step = 0; step < nf; step++) {
			size_t k = next + step < nf ? next + step : next + step - nf;
			if (brq_str_eq(key, f[k].name)) {
				if (f[k].at != NULL) {
					return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f[k].name,
							     "duplicate key");
				}
				f[k].at = r->p;
				next    = k + 1 < nf ? k + 1 : 0;
				break;
			}
		}
		// Unknown keys are skipped whatever their value: forward compatibility.
		if (brq_mp_skip(r) != 0) {
			return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "%s: truncated", what);
		}
	}
	return BRQ_ST_OK;
}

static brq_status
absent(brq_dec *d, const char *path, const char *name, bool required, const char *type, bool *present)
{
	if (present != NULL) {
		*present = false;
	}
	if (required) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, name, "required %s", type);
	}
	return BRQ_ST_OK;
}

static void
set_present(bool *present)
{
	if (present != NULL) {
		*present = true;
	}
}

brq_status
brq_dec_uint(brq_dec *d, const brq_field *f, const char *path, bool required, uint64_t min, uint64_t max,
	     uint64_t *out, bool *present)
{
	brq_rd   r = brq_dec_at(d, f);
	uint64_t v;
	int      rc;

	*out = 0; // absent optional fields read as 0, never as stack garbage
	if (f->at == NULL) {
		return absent(d, path, f->name, required, "unsigned integer", present);
	}
	rc = brq_mp_read_uint(&r, &v);
	if (rc == BRQ_MP_ETYPE) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "must be an unsigned integer");
	}
	if (rc != 0 || v < min || v > max) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "must be %" PRIu64 "..%" PRIu64, min, max);
	}
	*out = v;
	set_present(present);
	return BRQ_ST_OK;
}

brq_status
brq_dec_u32(brq_dec *d, const brq_field *f, const char *path, bool required, uint32_t min, uint32_t max,
	    uint32_t *out, bool *present)
{
	uint64_t v;

	TRY(brq_dec_uint(d, f, path, required, min, max, &v, present));
	*out = (uint32_t) v;
	return BRQ_ST_OK;
}

brq_status
brq_dec_int(brq_dec *d, const brq_field *f, const char *path, bool required, int64_t min, int64_t max,
	    int64_t *out, bool *present)
{
	brq_rd  r = brq_dec_at(d, f);
	int64_t v;
	int     rc;

	*out = 0;
	if (f->at == NULL) {
		return absent(d, path, f->name, required, "integer", present);
	}
	rc = brq_mp_read_int(&r, &v);
	if (rc == BRQ_MP_ETYPE) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name, "must be an integer");
	}
	if (rc != 0 || v < min || v > max) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "must be %" PRId64 "..%" PRId64, min, max);
	}
	*out = v;
	set_present(present);
	return BRQ_ST_OK;
}

brq_status
brq_dec_bool(brq_dec *d, const brq_field *f, const char *path, bool required, bool *out, bool *present)
{
	brq_rd r = brq_dec_at(d, f);

	*out = false;
	if (f->at == NULL) {
		return absent(d, path, f->name, required, "boolean", present);
	}
	if (brq_mp_read_bool(&r, out) != 0) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name, "must be a boolean");
	}
	set_present(present);
	return BRQ_ST_OK;
}

brq_status
brq_dec_str(brq_dec *d, const brq_field *f, const char *path, bool required, bool allow_bin, uint32_t min,
	    uint32_t max, brq_status over, brq_str *out, bool *present)
{
	brq_rd  r = brq_dec_at(d, f);
	brq_str s;

	out->ptr = NULL;
	out->len = 0;
	if (f->at == NULL) {
		return absent(d, path, f->name, required, "string", present);
	}
	if (brq_mp_read_str(&r, &s) != 0 && (!allow_bin || brq_mp_read_bin(&r, &s) != 0)) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     allow_bin ? "must be a string or binary" : "must be a string");
	}
	if (s.len > max) {
		return brq_dec_failf(d, over, path, f->name, "%" PRIu32 " bytes exceeds %" PRIu32, s.len,
				     max);
	}
	if (s.len < min) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "must be %" PRIu32 "..%" PRIu32 " bytes", min, max);
	}
	*out = s;
	set_present(present);
	return BRQ_ST_OK;
}

brq_status
brq_dec_lease(brq_dec *d, const brq_field *f, const char *path, uint8_t out[BRQ_LEASE_LEN])
{
	brq_rd  r = brq_dec_at(d, f);
	brq_str s;

	if (f->at == NULL) {
		return absent(d, path, f->name, true, "binary (16-byte lease token)", NULL);
	}
	if (brq_mp_read_bin(&r, &s) != 0 || s.len != BRQ_LEASE_LEN) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "must be binary of exactly %d bytes", BRQ_LEASE_LEN);
	}
	memcpy(out, s.ptr, BRQ_LEASE_LEN);
	return BRQ_ST_OK;
}

brq_status
brq_dec_array(brq_dec *d, const brq_field *f, const char *path, bool required, uint32_t min, uint32_t max,
	      brq_status over, brq_rd *elems, uint32_t *n, bool *present)
{
	brq_rd r = brq_dec_at(d, f);

	if (f->at == NULL) {
		*n = 0;
		return absent(d, path, f->name, required, "array", present);
	}
	if (brq_mp_read_array(&r, n) != 0) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name, "must be an array");
	}
	if (*n > max) {
		return brq_dec_failf(d, over, path, f->name,
				     "%" PRIu32 " entries exceeds the limit of %" PRIu32, *n, max);
	}
	if (*n < min) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "must have %" PRIu32 "..%" PRIu32 " entries", min, max);
	}
	*elems = r;
	set_present(present);
	return BRQ_ST_OK;
}

brq_status
brq_dec_alloc(brq_dec *d, uint32_t n, size_t size, void **out)
{
	// n has been checked against a limit and against the bytes left in the message
	// (every element takes at least one byte), so this is proportional to real input.
	*out = brq_arena_alloc(d->arena, n, size);
	if (*out == NULL) {
		return brq_dec_fail(d, BRQ_ST_INTERNAL, "out of memory");
	}
	return BRQ_ST_OK;
}

// Writes "<i>]" and a NUL at p (at most 12 bytes).
static void
put_index(char *p, uint32_t i)
{
	char   digits[10];
	size_t n = 0;
	do {
		digits[n++] = (char) ('0' + i % 10);
		i /= 10;
	} while (i != 0);
	while (n > 0) {
		*p++ = digits[--n];
	}
	p[0] = ']';
	p[1] = '\0';
}

brq_status
brq_dec_elems(brq_dec *d, brq_rd *elems, uint32_t n, const char *prefix, const char *name, size_t size,
	      brq_dec_elem_fn fn, void **out)
{
	char path[BRQ_PATH_MAX];

	TRY(brq_dec_alloc(d, n, size, out));
	// Every element is named "prefix.name[i]" for its error messages. A claim reply or
	// a settle carries hundreds of elements: the head is formatted once and only the
	// index written per element (a snprintf per element was 15 % of a worker's
	// instructions in a drain). A head that fills the buffer is cut as snprintf cuts.
	int    h    = snprintf(path, sizeof path, "%s.%s[", prefix, name);
	size_t head = h < 0 ? 0 : (size_t) h;
	for (uint32_t i = 0; i < n; i++) {
		if (head + sizeof("4294967295]") <= sizeof path) {
			put_index(path + head, i);
		} else {
			(void) snprintf(path, sizeof path, "%s.%s[%" PRIu32 "]", prefix, name, i);
		}
		TRY(fn(d, elems, path, (char *) *out + i * size));
	}
	return BRQ_ST_OK;
}

// The end of reading a plain array element: rc is the brq_mp_read_* result.
static brq_status
plain_elem(brq_dec *d, const char *path, int rc, const char *what)
{
	if (rc != 0) {
		return brq_dec_fail(d, BRQ_ST_INVALID_ARGUMENT, "%s: must be %s", path, what);
	}
	return BRQ_ST_OK;
}

brq_status
brq_dec_uint_elem(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return plain_elem(d, path, brq_mp_read_uint(r, out), "an unsigned integer");
}

brq_status
brq_dec_bool_elem(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return plain_elem(d, path, brq_mp_read_bool(r, out), "a boolean");
}

brq_status
brq_dec_str_elem(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return plain_elem(d, path, brq_mp_read_str(r, out), "a string");
}

brq_status
brq_dec_list(brq_dec *d, const brq_field *f, const char *path, bool required, size_t size, brq_dec_elem_fn fn,
	     void **out, uint32_t *n, bool *present)
{
	brq_rd elems;

	TRY(brq_dec_array(d, f, path, required, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &elems, n, present));
	if (f->at == NULL) {
		return BRQ_ST_OK;
	}
	return brq_dec_elems(d, &elems, *n, path, f->name, size, fn, out);
}

bool
brq_dec_is_nil(const brq_field *f)
{
	return f->at != NULL && *f->at == 0xc0;
}

brq_status
brq_dec_state(brq_dec *d, const brq_field *f, const char *path, brq_state *out)
{
	brq_str s;
	int     k;

	TRY(brq_dec_str(d, f, path, true, false, 0, UINT32_MAX, BRQ_ST_INVALID_ARGUMENT, &s, NULL));
	k = brq_state_lookup(s.ptr, s.len);
	if (k < 0) {
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name, "unknown job state");
	}
	*out = (brq_state) k;
	return BRQ_ST_OK;
}

static brq_status
dec_field(brq_dec *d, const brq_fdesc *fd, const brq_field *f, const char *path, char *obj)
{
	void     *out  = obj + fd->off;
	bool     *has  = fd->has != 0 ? (bool *) (obj + fd->has) : NULL;
	bool      req  = (fd->flags & BRQ_REQ) != 0;
	bool      full = fd->max == 0;
	brq_field none = {f->name, NULL};

	if ((fd->flags & BRQ_NIL) != 0 && brq_dec_is_nil(f)) {
		f = &none;
	}
	switch (fd->kind) {
	case BRQ_K_U64:
		return brq_dec_uint(d, f, path, req, (uint64_t) fd->min, full ? UINT64_MAX : fd->max, out,
				    has);
	case BRQ_K_U32:
		return brq_dec_u32(d, f, path, req, (uint32_t) fd->min,
				   full ? UINT32_MAX : (uint32_t) fd->max, out, has);
	case BRQ_K_I64:
		return brq_dec_int(d, f, path, req, full ? INT64_MIN : fd->min,
				   full ? INT64_MAX : (int64_t) fd->max, out, has);
	case BRQ_K_BOOL: return brq_dec_bool(d, f, path, req, out, has);
	case BRQ_K_STR:
		return brq_dec_str(d, f, path, req, (fd->flags & BRQ_BIN) != 0, (uint32_t) fd->min,
				   full ? UINT32_MAX : (uint32_t) fd->max, BRQ_ST_INVALID_ARGUMENT, out, has);
	case BRQ_K_LEASE: return brq_dec_lease(d, f, path, out);
	case BRQ_K_STATE: return brq_dec_state(d, f, path, out);
	default: return BRQ_ST_OK; // BRQ_K_FN: all in fd->fn
	}
}

brq_status
brq_dec_fields(brq_dec *d, brq_rd *r, const char *path, const brq_fdesc *fd, size_t n, void *obj)
{
	brq_field f[BRQ_FIELDS_MAX];

	if (n > BRQ_FIELDS_MAX) {
		return brq_dec_fail(d, BRQ_ST_INTERNAL, "%s: field table too long", path);
	}
	for (size_t k = 0; k < n; k++) {
		f[k].name = fd[k].name;
	}
	TRY(brq_dec_map(d, r, path, f, n));
	for (size_t k = 0; k < n; k++) {
		TRY(dec_field(d, &fd[k], &f[k], path, obj));
		if (fd[k].fn != NULL) {
			TRY(fd[k].fn(d, &f[k], path, obj));
		}
	}
	return BRQ_ST_OK;
}
