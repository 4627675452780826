// SPDX-License-Identifier: MIT
// Validation of the short text fields of the protocol: topics and UTF-8 strings.
#ifndef BRQ_TEXT_H
#define BRQ_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BRQ_TOPIC_MAX 128 // bytes

// True iff s[0..len) is a topic: 1..BRQ_TOPIC_MAX bytes of [a-z0-9._-], first byte [a-z0-9].
bool brq_topic_valid(const char *s, size_t len);

// True iff s[0..len) is well-formed UTF-8 (no overlongs, no UTF-16 surrogates, nothing
// above U+10FFFF) and, when no_nul is set, contains no NUL byte. PostgreSQL text
// columns refuse both invalid UTF-8 and NUL, so text bound for the database is checked
// with no_nul = true.
bool brq_utf8_valid(const char *s, size_t len, bool no_nul);

// Length of the longest prefix of s[0..len) that is at most max bytes and does not end
// inside a UTF-8 sequence (used to truncate error text to BRQ_ERROR_STORED_MAX).
// For invalid UTF-8 the cut is made at max or before a lead/continuation run, never
// beyond max.
size_t brq_utf8_truncate(const char *s, size_t len, size_t max);

// Copies s[0..len) into out[0..cap) as well-formed UTF-8: a byte that starts no
// well-formed sequence becomes U+FFFD (3 bytes), everything else is copied as it is, NUL
// included. Stops before the first character (or replacement) that would not fit whole.
// Returns the bytes written. Used for reply messages, which quote request text.
size_t brq_utf8_scrub(const char *s, size_t len, char *out, size_t cap);

// Length (1..4) of the well-formed UTF-8 sequence at p[0..n), or 0 if it is not one.
size_t brq_utf8_seq_len(const uint8_t *p, size_t n);

#endif
