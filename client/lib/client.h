/* SPDX-License-Identifier: MIT */
/* libbrooq-client: the client handle (transport, token, log sink) and the library's log events. */
#ifndef BRQ_CLIENT_H
#define BRQ_CLIENT_H

#include "brooq/brooq.h"

#include <stddef.h>

#include "rpc.h"

/* The first released layout of each options struct: what a caller must at least
 * pass (brq_opts_copy). Frozen: a field added later does not change these. */
#define BRQ_CLIENT_OPTS_V1 (offsetof(brooq_client_opts, log_arg) + sizeof(void *))
#define BRQ_CLAIM_OPTS_V1  (offsetof(brooq_claim_opts, settled) + sizeof(void *))
#define BRQ_WORKER_OPTS_V1 (offsetof(brooq_worker_opts, hung_grace_ms) + sizeof(uint32_t))

struct brooq_client {
	brq_rpc      rpc;
	char        *token;     /* sodium_malloc'd (locked, guarded), read-only */
	size_t       token_len; /* 32..BRQ_TOKEN_MAX */
	brooq_log_fn log;       /* never NULL */
	void        *log_arg;
};

/*
 * Copies the caller's options struct `src` (NULL: all defaults) into dst[0..dst_size),
 * zeroed first, reading only the src->size bytes the caller's header knew. `what`
 * names the struct in messages. Returns 0, or BRQ_EINVAL (message set) when size is
 * below v1_size, or above dst_size with a field this library does not know set.
 */
int brq_opts_copy(void *dst, size_t dst_size, const void *src, size_t v1_size,
		  const char *what) BRQ_MUSTCHECK;

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
