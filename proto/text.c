// SPDX-License-Identifier: MIT
// Topic syntax, UTF-8 well-formedness, and borrowed strings (brq_str), shared by the decoders,
// the gateway and the client.
#include "text.h"

#include <string.h>

#include "proto.h"

static bool
topic_char(uint8_t c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
		return true;
	}
	return !first && (c == '.' || c == '_' || c == '-');
}

bool
brq_topic_valid(const char *s, size_t len)
{
	if (len == 0 || len > BRQ_TOPIC_MAX) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if (!topic_char((uint8_t) s[i], i == 0)) {
			return false;
		}
	}
	return true;
}

size_t
brq_utf8_seq_len(const uint8_t *p, size_t n)
{
	// Table 3-7 of the Unicode standard: the second byte's range depends on the first,
	// which is what rules out overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4).
	uint8_t c = p[0];
	size_t  need;
	uint8_t lo = 0x80, hi = 0xBF;

	if (c < 0x80) {
		return 1;
	} else if (c >= 0xC2 && c <= 0xDF) {
		need = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0) {
			lo = 0xA0;
		} else if (c == 0xED) {
			hi = 0x9F;
		}
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0) {
			lo = 0x90;
		} else if (c == 0xF4) {
			hi = 0x8F;
		}
	} else {
		return 0;
	}
	if (n < need || p[1] < lo || p[1] > hi) {
		return 0;
	}
	for (size_t i = 2; i < need; i++) {
		if (p[i] < 0x80 || p[i] > 0xBF) {
			return 0;
		}
	}
	return need;
}

bool
brq_utf8_valid(const char *s, size_t len, bool no_nul)
{
	const uint8_t *p = (const uint8_t *) s;
	size_t         i = 0;

	while (i < len) {
		if (p[i] < 0x80) {
			if (p[i] == 0 && no_nul) {
				return false;
			}
			i++;
			continue;
		}
		size_t k = brq_utf8_seq_len(p + i, len - i);
		if (k == 0) {
			return false;
		}
		i += k;
	}
	return true;
}

size_t
brq_utf8_truncate(const char *s, size_t len, size_t max)
{
	const uint8_t *p = (const uint8_t *) s;
	size_t         cut;

	if (len <= max) {
		return len;
	}
	// Back up over continuation bytes (at most 3) so the cut lands on a lead byte,
	// which then starts the first excluded character.
	cut = max;
	for (int i = 0; i < 3 && cut > 0 && (p[cut] & 0xC0) == 0x80; i++) {
		cut--;
	}
	if ((p[cut] & 0xC0) == 0x80) {
		return max; // not UTF-8 here: nothing better than the byte limit
	}
	return cut;
}

brq_str
brq_str_c(const char *s)
{
	brq_str r = {s != NULL ? s : "", 0};
	if (s != NULL) {
		size_t n = strlen(s);
		r.len    = n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
	}
	return r;
}

bool
brq_str_eq(brq_str a, const char *lit)
{
	size_t n = strlen(lit);
	return a.len == n && (n == 0 || memcmp(a.ptr, lit, n) == 0);
}
