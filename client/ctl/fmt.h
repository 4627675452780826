/* SPDX-License-Identifier: MIT */
/* brooqctl output and argument helpers: durations, JSON strings, UTC timestamps. */
#ifndef BRQ_CTL_FMT_H
#define BRQ_CTL_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Parses a duration: a decimal number with a unit ms, s, m or h ("500ms", "30s",
 * "5m", "1h"); a bare number is milliseconds. Returns 0 and *ms, or -1 for
 * anything else (empty, signs, overflow past UINT64_MAX ms). */
int brq_ctl_parse_duration(const char *s, uint64_t *ms);

/* Parses a decimal unsigned integer in [min, max] (no sign, no spaces). 0 or -1. */
int brq_ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Writes s[0..len) as a JSON string with its quotes (RFC 8259 escapes; control
 * characters as \u00XX; bytes >= 0x80 are passed through: the gateway's text is
 * UTF-8). */
void brq_ctl_json_str(FILE *f, const char *s, size_t len);
/* brq_ctl_json_str for a C string, or null for NULL. */
void brq_ctl_json_cstr(FILE *f, const char *s);

/* Writes s for a human, with control characters escaped (\n, \t, \xNN) so text from
 * the queue cannot drive the terminal; "-" for NULL. */
void brq_ctl_print_safe(FILE *f, const char *s);

/* "2024-05-01T12:34:56.789Z" for unix milliseconds. buf needs 32 bytes. */
void brq_ctl_iso8601(int64_t ms, char *buf, size_t cap);

/* "850ms", "12.3s", "4m12s", "3h05m" for a duration in ms. buf needs 32 bytes. */
void brq_ctl_human_ms(uint64_t ms, char *buf, size_t cap);

#endif
