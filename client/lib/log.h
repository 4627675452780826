/* SPDX-License-Identifier: MIT */
/* libbrooq-client log events: sent to the sink the client was opened with (log.c). */
#ifndef BRQ_CLIENT_LOG_H
#define BRQ_CLIENT_LOG_H

#include "brooq/brooq.h"

#include <stddef.h>
#include <stdint.h>

/* Sends one log event to the client's sink: fields[0..n). */
void brq_log(const brooq_client *c, brooq_log_level level, const char *msg, const brooq_log_field *fields,
	     size_t n);

/* brq_log with the fields written inline: BRQ_LOG(c, BROOQ_LOG_WARN, "x", BRQ_LF_U64("job", id)).
 * The field values live until the end of the statement. */
#define BRQ_LOG(c, level, msg, ...)                                           \
	brq_log((c), (level), (msg), (const brooq_log_field[]) {__VA_ARGS__}, \
		sizeof((const brooq_log_field[]) {__VA_ARGS__}) / sizeof(brooq_log_field))
#define BRQ_LF_STR(k, v) ((brooq_log_field) {(k), (v)})
#define BRQ_LF_U64(k, v) ((brooq_log_field) {(k), brq_log_u64((char[24]) {0}, (uint64_t) (v))})

/* Writes v in decimal into buf (24 bytes) and returns buf. */
const char *brq_log_u64(char *buf, uint64_t v);

#endif
