// SPDX-License-Identifier: MIT
// The one syntax for durations and sizes, shared by the gateway's configuration and
// brooqctl, and the one text form of an instant (brq_fmt_time_ms). Durations and sizes: digits followed by a
// unit, no space ("1500ms", "120s", "2m", "1h", "30d"; "512B", "64KiB", "16MiB", "1GiB"). A bare number is
// refused (is "5" seconds or milliseconds?), except "0", which means the same in every unit.
#ifndef BRQ_UNITS_H
#define BRQ_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "brq_base.h"

// Parses a duration into milliseconds. Returns 0, or BRQ_EINVAL with *why (static
// text: "duration needs a unit (e.g. 120s)", "unknown unit ...", "value too large",
// ...); *out is written only on success.
int brq_parse_duration_ms(const char *s, uint64_t *out, const char **why) BRQ_MUSTCHECK;
// Parses a size into bytes (units B, KiB, MiB, GiB); as brq_parse_duration_ms.
int brq_parse_size(const char *s, uint64_t *out, const char **why) BRQ_MUSTCHECK;
// Parses a plain decimal integer (digits only: no sign, no space, no unit); as
// brq_parse_duration_ms.
int brq_parse_u64(const char *s, uint64_t *out, const char **why) BRQ_MUSTCHECK;

// Renders a duration / a size with the largest unit that divides it ("90s", "2m",
// "1500ms"; "16MiB") into buf; returns buf. Parsing the result gives the value back.
const char *brq_fmt_duration(char *buf, size_t cap, uint64_t ms);
const char *brq_fmt_size(char *buf, size_t cap, uint64_t b);

// Room for brq_fmt_time_ms's text and its NUL (years up to 9999 need 25 bytes; a
// negative or larger year a few more).
#define BRQ_TIME_TEXT_MAX 32

// Renders unix_ms (Unix time in milliseconds) as RFC 3339 in UTC with exactly three
// fraction digits, "2026-12-02T04:31:39.521Z": the time form of every JSON output
// (docs/protocol.md, "JSON form") and of brooqctl's tables (the log lines write the same
// form with their own async-signal-safe code: gateway/log/log.c). Proleptic
// Gregorian calendar, computed by hand (no gmtime_r, no time zone lock, no locale), so
// the gateway's threads may call it anywhere. buf needs BRQ_TIME_TEXT_MAX bytes (less
// cuts the text, still NUL-terminated when cap > 0); returns buf.
const char *brq_fmt_time_ms(char *buf, size_t cap, int64_t unix_ms);

#endif
