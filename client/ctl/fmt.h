/* SPDX-License-Identifier: MIT */
/* brooqctl output and argument helpers: integers, JSON strings and members. (Durations
 * and instants: common/brq_units.h, the gateway's syntax and the one time form.) */
#ifndef BRQ_CTL_FMT_H
#define BRQ_CTL_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "brq_base.h"

/* Parses a decimal unsigned integer in [min, max] (no sign, no spaces): 0, or
 * BRQ_EINVAL for anything else. */
int brq_ctl_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) BRQ_MUSTCHECK;

/* Writes s[0..len) as a JSON string with its quotes (RFC 8259 escapes; control
 * characters as \u00XX; bytes >= 0x80 are passed through: the gateway's text is
 * UTF-8). */
void brq_ctl_json_str(FILE *f, const char *s, size_t len);
/* brq_ctl_json_str for a C string, or null for NULL. */
void brq_ctl_json_cstr(FILE *f, const char *s);

/* Writes s for a human, with control characters escaped (\n, \t, \xNN) so text from
 * the queue cannot drive the terminal; "-" for NULL. */
void brq_ctl_print_safe(FILE *f, const char *s);

/* An instant's two members of the JSON form (docs/protocol.md, "JSON form"), after a
 * comma: ,"NAME_ms":N,"NAME":"2026-12-02T04:31:39.521Z" for unix ms, both null when !has.
 * name is the protocol's key without its "_ms". */
void brq_ctl_json_instant(FILE *f, const char *name, int64_t ms, bool has);
/* ,"NAME":N for a count or limit, or ,"NAME":null when !has. */
void brq_ctl_json_opt_u64(FILE *f, const char *name, uint64_t v, bool has);

/* "850ms", "12.3s", "4m12s", "3h05m" for a duration in ms. buf needs 32 bytes. */
void brq_ctl_human_ms(uint64_t ms, char *buf, size_t cap);

#endif
