/* SPDX-License-Identifier: MIT */
/* libbrooq-client: the client handle (transport, token, log sink) and options structs. */
#ifndef BRQ_CLIENT_H
#define BRQ_CLIENT_H

#include "brooq/brooq.h"

#include <stddef.h>

#include "abi.h"
#include "rpc.h"

struct brooq_client {
	brq_rpc      rpc;
	char        *token;     /* sodium_malloc'd (locked, guarded), read-only */
	size_t       token_len; /* 32..BRQ_TOKEN_MAX */
	brooq_log_fn log;       /* never NULL */
	void        *log_arg;
};

/* Opens *out: a transport of its own to c's gateway (same URL, timeout, token and TLS; its
 * own socket, so its own connection). Closing its socket is what the gateway sees as
 * a peer that went away. 0, BRQ_EINVAL or BRQ_ENOMEM (message set); close with
 * brq_rpc_close. */
int brq_client_rpc_open(brooq_client *c, brq_rpc *out) BRQ_MUSTCHECK;

/* A NUL-terminated malloc'd copy of s, the caller's to free (NULL on out of memory). */
char *brq_strdup(brq_str s);
/* brq_strdup of an optional field: NULL when !has; *ok turns false on out of memory. */
char *brq_strdup_opt(bool has, brq_str s, bool *ok);

/* A library-allocated copy of a reply's job row (brooq_job_info_free); NULL when out of
 * memory. */
brooq_job_info *brq_job_info_out(const brq_job_info *in);

/* brooq_heartbeat, also saying why each lost lease is lost (why[0..n), may be NULL;
 * BRQ_LOST_NONE for extended leases, BRQ_LOST_GONE when the gateway does not say). */
brooq_err brq_heartbeat_why(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms,
			    bool *extended, brq_lost_reason *why);

/* A public call op without arguments (stats, topics, schedule_list): checks c, out (the
 * caller's T ***) and n, then runs it with copy(k, out, n), which on success sets *out
 * to a library-allocated array (or NULL) and *n to its length. */
brooq_err brq_call_array(brooq_client *c, brq_op op, brq_call_out_fn copy, void *out, size_t *n);

/* A public call op on one job id (cancel, job, retry, delete), once the caller has
 * checked its other arguments: checks id, then runs it with copy(k, out, out2). */
brooq_err brq_call_id(brooq_client *c, brq_op op, uint64_t id, brq_call_out_fn copy, void *out, void *out2);

/* One watch (docs/protocol.md §7.17) over transport r: the cancels of running jobs of
 * topics[0..n_topics) since `cursor` (NUL-terminated, "" for none), waiting up to wait_ms
 * for one. On BROOQ_OK, cursor holds the reply's next cursor, *ids (malloc'd, the
 * caller's to free; NULL when *n_ids is 0) the canceled ids and *resync whether the
 * gateway could not tell them all; on failure nothing is written. */
brooq_err brq_watch_via(brooq_client *c, brq_rpc *r, const char *const *topics, size_t n_topics,
			char cursor[BRQ_CURSOR_MAX + 1], uint32_t wait_ms, uint64_t **ids, size_t *n_ids,
			bool *resync);

/* brooq_claim over transport r (c's own, or one from brq_client_rpc_open). */
brooq_err brq_claim_via(brooq_client *c, brq_rpc *r, const brooq_claim_opts *opts, brooq_job ***jobs,
			size_t *n);

#endif
