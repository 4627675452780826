// SPDX-License-Identifier: MIT
// The web console's text formats: JSON out, URL-encoded forms in.
#include "console_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "brq_grow.h"
#include "brq_units.h"

void
brq_jw_init(brq_jw *j, size_t limit)
{
	memset(j, 0, sizeof(*j));
	j->limit    = limit;
	j->first[0] = true;
}

void
brq_jw_fini(brq_jw *j)
{
	free(j->data);
	memset(j, 0, sizeof(*j));
}

void
brq_jw_reset(brq_jw *j)
{
	j->len       = 0;
	j->err       = 0;
	j->depth     = 0;
	j->first[0]  = true;
	j->after_key = false;
	if (j->data != NULL) {
		j->data[0] = '\0';
	}
}

static void
put(brq_jw *j, const char *s, size_t n)
{
	if (j->err != 0) {
		return;
	}
	if (j->len + n > j->limit) {
		j->err = BRQ_E2BIG;
		return;
	}
	if (brq_grow(&j->data, &j->cap, j->len + n + 1, 256) != 0) {
		j->err = BRQ_ENOMEM;
		return;
	}
	memcpy(j->data + j->len, s, n);
	j->len += n;
	j->data[j->len] = '\0';
}

// Before a value: a comma unless it is the first at its depth or follows its key.
static void
value_start(brq_jw *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth]) {
		put(j, ",", 1);
	}
	j->first[j->depth] = false;
}

static void
open_(brq_jw *j, char c)
{
	value_start(j);
	put(j, &c, 1);
	if (j->depth + 1 >= BRQ_JW_DEPTH) {
		j->err = j->err != 0 ? j->err : BRQ_E2BIG;
		return;
	}
	j->first[++j->depth] = true;
	j->kind[j->depth]    = c;
}

void
brq_jw_obj(brq_jw *j)
{
	open_(j, '{');
}

void
brq_jw_arr(brq_jw *j)
{
	open_(j, '[');
}

void
brq_jw_end(brq_jw *j)
{
	if (j->depth == 0) {
		j->err = j->err != 0 ? j->err : BRQ_EINVAL;
		return;
	}
	char c = j->kind[j->depth] == '[' ? ']' : '}';
	put(j, &c, 1);
	j->depth--;
}

void
brq_jw_key(brq_jw *j, const char *key)
{
	brq_jw_cstr(j, key);
	put(j, ":", 1);
	j->after_key = true;
}

void
brq_jw_str(brq_jw *j, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	value_start(j);
	put(j, "\"", 1);
	size_t i = 0;
	while (i < len) {
		unsigned char c = (unsigned char) s[i];
		if (c >= 0x80) {
			// One UTF-8 sequence as it is, or U+FFFD for a byte that starts none.
			size_t n = 1;
			while (i + n < len && n < 4 && ((unsigned char) s[i + n] & 0xc0) == 0x80) {
				n++;
			}
			if (brq_utf8_valid(s + i, n, false)) {
				put(j, s + i, n);
			} else {
				put(j, "\xef\xbf\xbd", 3);
				n = 1;
			}
			i += n;
			continue;
		}
		// The two-character escapes; then control characters, and '<' '>' '&' so that no
		// text becomes markup even where a careless consumer inserts it as HTML.
		static const char short_in[] = "\"\\\n\r\t", short_out[] = "\"\\nrt";
		const char       *sh = c != '\0' ? strchr(short_in, c) : NULL;
		if (sh != NULL) {
			char esc[2] = {'\\', short_out[sh - short_in]};
			put(j, esc, 2);
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			put(j, esc, 6);
		} else {
			put(j, (const char *) &c, 1);
		}
		i++;
	}
	put(j, "\"", 1);
}

void
brq_jw_cstr(brq_jw *j, const char *s)
{
	brq_jw_str(j, s, strlen(s));
}

void
brq_jw_u64(brq_jw *j, uint64_t v)
{
	char b[24];
	value_start(j);
	put(j, b, (size_t) snprintf(b, sizeof(b), "%llu", (unsigned long long) v));
}

void
brq_jw_i64(brq_jw *j, int64_t v)
{
	char b[24];
	value_start(j);
	put(j, b, (size_t) snprintf(b, sizeof(b), "%lld", (long long) v));
}

void
brq_jw_dbl(brq_jw *j, double v)
{
	char b[40];
	value_start(j);
	if (!(v == v) || v > 1e15 || v < -1e15) {
		v = 0; // NaN or absurd: not JSON, not a figure anyone needs
	}
	put(j, b, (size_t) snprintf(b, sizeof(b), "%.3f", v));
}

void
brq_jw_bool(brq_jw *j, bool v)
{
	value_start(j);
	put(j, v ? "true" : "false", v ? 4 : 5);
}

void
brq_jw_null(brq_jw *j)
{
	value_start(j);
	put(j, "null", 4);
}

void
brq_jw_raw(brq_jw *j, const char *json, size_t len)
{
	value_start(j);
	put(j, json, len);
}

void
brq_jw_kv_str(brq_jw *j, const char *key, const char *s, size_t len)
{
	brq_jw_key(j, key);
	brq_jw_str(j, s, len);
}

// The members of one scalar type, each brq_jw_key() then the value (brq_jw_kv_cstr, ...).
#define JW_KV(type, suffix)                                         \
	void brq_jw_kv_##suffix(brq_jw *j, const char *key, type v) \
	{                                                           \
		brq_jw_key(j, key);                                 \
		brq_jw_##suffix(j, v);                              \
	}
JW_KV(const char *, cstr)
JW_KV(uint64_t, u64)
JW_KV(int64_t, i64)
JW_KV(double, dbl)
JW_KV(bool, bool)
#undef JW_KV

void
brq_jw_kv_instant(brq_jw *j, const char *name, int64_t ms, bool has)
{
	char key[64], text[BRQ_TIME_TEXT_MAX];
	snprintf(key, sizeof(key), "%s_ms", name);
	brq_jw_key(j, key);
	if (!has) {
		brq_jw_null(j);
		brq_jw_key(j, name);
		brq_jw_null(j);
		return;
	}
	brq_jw_i64(j, ms);
	brq_jw_kv_cstr(j, name, brq_fmt_time_ms(text, sizeof(text), ms));
}

void
brq_jw_kv_opt_u64(brq_jw *j, const char *key, uint64_t v, bool has)
{
	brq_jw_key(j, key);
	if (has) {
		brq_jw_u64(j, v);
	} else {
		brq_jw_null(j);
	}
}

// ---- forms -------------------------------------------------------------------------------

static int
hexval(char c)
{
	return c >= '0' && c <= '9'    ? c - '0'
		: c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10
				       : -1;
}

// URL-decodes s[0..n) to out (room for n + 1); returns the length, or -1.
static long
decode(const char *s, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if (i + 2 >= n) {
				return -1;
			}
			int a = hexval(s[i + 1]), b = hexval(s[i + 2]);
			if (a < 0 || b < 0) {
				return -1;
			}
			c = (char) (a * 16 + b);
			i += 2;
		}
		if (c == '\0') {
			return -1;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return (long) o;
}

int
brq_form_parse(brq_form *f, const char *text, size_t len, const char **why)
{
	memset(f, 0, sizeof(*f));
	*why = NULL;
	if (len == 0) {
		return 0;
	}
	// Each field decodes to at most its own length, plus two NULs.
	f->buf = malloc(len + 2 * BRQ_FORM_MAX + 2);
	if (f->buf == NULL) {
		return BRQ_ENOMEM;
	}
	size_t at = 0, i = 0;
	while (i <= len) {
		size_t end = i;
		while (end < len && text[end] != '&') {
			end++;
		}
		if (end > i) {
			if (f->n == BRQ_FORM_MAX) {
				*why = "too many fields";
				return BRQ_EINVAL;
			}
			const char *eq   = memchr(text + i, '=', end - i);
			size_t      nlen = eq != NULL ? (size_t) (eq - (text + i)) : end - i;
			long        a    = decode(text + i, nlen, f->buf + at);
			if (a < 0) {
				*why = "bad %-escape or NUL in a field name";
				return BRQ_EINVAL;
			}
			f->name[f->n] = (brq_str) {.ptr = f->buf + at, .len = (size_t) a};
			at += (size_t) a + 1;
			size_t vstart = eq != NULL ? (size_t) (eq - text) + 1 : end;
			long   b      = decode(text + vstart, end - vstart, f->buf + at);
			if (b < 0) {
				*why = "bad %-escape or NUL in a field value";
				return BRQ_EINVAL;
			}
			f->value[f->n] = (brq_str) {.ptr = f->buf + at, .len = (size_t) b};
			at += (size_t) b + 1;
			for (size_t k = 0; k < f->n; k++) {
				if (f->name[k].len == f->name[f->n].len &&
				    memcmp(f->name[k].ptr, f->name[f->n].ptr, f->name[k].len) == 0) {
					*why = "a field is given twice";
					return BRQ_EINVAL;
				}
			}
			f->n++;
		}
		i = end + 1;
	}
	return 0;
}

void
brq_form_fini(brq_form *f)
{
	// A form may hold a token (sign-in): wiped, whatever it held.
	if (f->buf != NULL) {
		size_t used = 0;
		for (size_t i = 0; i < f->n; i++) {
			used += f->name[i].len + f->value[i].len + 2;
		}
		sodium_memzero(f->buf, used);
	}
	free(f->buf);
	memset(f, 0, sizeof(*f));
}

const brq_str *
brq_form_get(const brq_form *f, const char *name)
{
	size_t l = strlen(name);
	for (size_t i = 0; i < f->n; i++) {
		if (f->name[i].len == l && memcmp(f->name[i].ptr, name, l) == 0) {
			return &f->value[i];
		}
	}
	return NULL;
}

int
brq_form_u64(const brq_form *f, const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
	const brq_str *v = brq_form_get(f, name);
	if (v == NULL || v->len == 0) {
		return BRQ_ENOTFOUND;
	}
	uint64_t x = 0;
	if (v->len > 20) {
		return BRQ_EINVAL;
	}
	for (size_t i = 0; i < v->len; i++) {
		char c = v->ptr[i];
		if (c < '0' || c > '9' || x > (UINT64_MAX - (uint64_t) (c - '0')) / 10) {
			return BRQ_EINVAL;
		}
		x = x * 10 + (uint64_t) (c - '0');
	}
	if (x < min || x > max) {
		return BRQ_EINVAL;
	}
	*out = x;
	return 0;
}
