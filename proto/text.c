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

// Table 3-7 of the Unicode standard: the well-formed sequences of 2..4 bytes by their
// first byte. The second byte's range depends on the first, which is what rules out
// overlongs (E0, F0), surrogates (ED) and anything above U+10FFFF (F4); the bytes after
// it are 80..BF.
static const struct {
	uint8_t first_min, first_max;
	uint8_t need;   // bytes of the sequence
	uint8_t lo, hi; // the second byte's range
} utf8_seqs[] = {
	{0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
	{0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
	{0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

size_t
brq_utf8_seq_len(const uint8_t *p, size_t n)
{
	if (p[0] < 0x80) {
		return 1;
	}
	for (size_t k = 0; k < sizeof utf8_seqs / sizeof utf8_seqs[0]; k++) {
		size_t need = utf8_seqs[k].need;
		if (p[0] < utf8_seqs[k].first_min || p[0] > utf8_seqs[k].first_max) {
			continue;
		}
		if (n < need || p[1] < utf8_seqs[k].lo || p[1] > utf8_seqs[k].hi) {
			return 0;
		}
		for (size_t i = 2; i < need; i++) {
			if (p[i] < 0x80 || p[i] > 0xBF) {
				return 0;
			}
		}
		return need;
	}
	return 0; // 80..C1 (continuations, overlong 2-byte leads), F5..FF
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
brq_utf8_scrub(const char *s, size_t len, char *out, size_t cap)
{
	static const char fffd[] = "\xef\xbf\xbd";
	const uint8_t    *p      = (const uint8_t *) s;
	size_t            i = 0, o = 0;

	while (i < len) {
		size_t      k    = p[i] < 0x80 ? 1 : brq_utf8_seq_len(p + i, len - i);
		const char *from = k > 0 ? s + i : fffd;
		size_t      n    = k > 0 ? k : 3;
		if (cap - o < n) {
			break;
		}
		memcpy(out + o, from, n);
		o += n;
		i += k > 0 ? k : 1;
	}
	return o;
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
	// The decoders match every map key against their field names this way: most
	// names differ in the first byte, so that is looked at before any length, and
	// the literal is scanned no further than a.len + 1 bytes (not to its end).
	if (a.len == 0)
		return lit[0] == '\0';
	if (lit[0] != a.ptr[0])
		return false;
	return strnlen(lit, (size_t) a.len + 1) == a.len && memcmp(a.ptr, lit, a.len) == 0;
}
