/* SPDX-License-Identifier: MIT */
/* libbrooq-client errors: the calling thread's message, and the one mapping of
 * internal results (0 / negative BRQ_E*) and wire statuses to the public brooq_err. */
#ifndef BRQ_CLIENT_ERR_H
#define BRQ_CLIENT_ERR_H

#include "brooq/brooq.h"

#include <stddef.h>

#include "brq_base.h"
#include "proto.h"

/* brooq_last_message() text kept for a log line: long enough for a gateway message. */
#define BRQ_DETAIL_MAX (BRQ_MSG_MAX + 1)

/* Empties the calling thread's message (every public call starts with this). */
void brq_msg_clear(void);
/* Keeps s[0..len) (not NUL-terminated; cut to fit) as the message. */
void brq_msg_set(const char *s, size_t len);
/* Formats the message and returns rv (a negative BRQ_E*), for
 * `return brq_fail(BRQ_EINVAL, "...")`. */
int brq_fail(int rv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A copy of the calling thread's message into out[0..BRQ_DETAIL_MAX), for a log
 * field (the message itself is overwritten by the thread's next call). */
void brq_msg_copy(char out[BRQ_DETAIL_MAX]);

/*
 * The public code of an internal result, at the library's edge. Internal functions
 * return 0 or a negative BRQ_E*: BRQ_EINVAL / BRQ_E2BIG (a bad argument, caught
 * locally), BRQ_ENOMEM, BRQ_EUNAVAIL (no connection: nothing was sent, or the
 * connection broke), BRQ_ETIMEDOUT (sent, no reply in time), BRQ_EINTERNAL (a reply
 * that cannot be decoded or does not answer the request).
 */
brooq_err brq_err_public(int rv);
/* A public call's argument error, at the edge: `return BRQ_ARG_FAIL("op: ...", ...)`. */
#define BRQ_ARG_FAIL(...) brq_err_public(brq_fail(BRQ_EINVAL, __VA_ARGS__))
/* The public code of a gateway status (BRQ_ST_OK gives BROOQ_OK). */
brooq_err brq_err_from_status(brq_status st);

#endif
