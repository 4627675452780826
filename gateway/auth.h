// SPDX-License-Identifier: MIT
// Bearer tokens: loads token files and maps a presented token to a role in constant time.
//
// Only keyed BLAKE2b-256 hashes of the tokens are kept in memory. The key is random per
// process (randombytes_buf), so a memory dump of the hashes is useless against another
// gateway and cannot be brute-forced offline without the key as well.
//
// Roles: worker may call ping, enqueue, claim, heartbeat, settle, job, stats; admin may
// call everything, including cancel (the admin-only operations).
#ifndef BRQ_GATEWAY_AUTH_H
#define BRQ_GATEWAY_AUTH_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

// Token files must hold at least this many bytes after trimming trailing whitespace.
#define BRQ_AUTH_TOKEN_MIN 32
// Presented tokens and token files longer than this are refused.
#define BRQ_AUTH_TOKEN_MAX 1024

enum brq_role {
	BRQ_ROLE_NONE   = 0,
	BRQ_ROLE_WORKER = 1,
	BRQ_ROLE_ADMIN  = 2,
};

struct brq_auth_entry {
	unsigned char hash[32]; // keyed BLAKE2b-256 of the token
	enum brq_role role;     // WORKER or ADMIN
};

// Fields are private to auth.c. Read-only after brq_auth_init(): brq_auth_check() may
// be called from any number of threads at once.
struct brq_auth {
	unsigned char          key[32]; // per-process BLAKE2b key, wiped by fini
	struct brq_auth_entry *entries; // n_entries, owned
	size_t                 n_entries;
};

// Loads the token files. Each file's content, trimmed of trailing whitespace (space,
// \t, \r, \n), must be BRQ_AUTH_TOKEN_MIN..BRQ_AUTH_TOKEN_MAX bytes; any byte values
// are allowed. A file readable by "others" (mode & 0007) is accepted with a warning in
// the log; group-readable is normal (root:brooq 0640) and is not warned about. A token
// configured for both roles is a problem. Problems name the file, never its content;
// every file is checked so that all problems are reported at once. The read buffer is
// wiped on every path. Calls sodium_init() (idempotent).
// Returns 0 on success (release with brq_auth_fini()), -EINVAL when problems were
// added to *problems (not initialised by this call), -ENOMEM, or -EIO when libsodium
// cannot initialise. On failure *a holds nothing.
BRQ_MUSTCHECK int brq_auth_init(struct brq_auth *a, const char *const *worker_files, size_t n_worker,
				const char *const *admin_files, size_t n_admin,
				struct brq_config_problems *problems);

// Same, with the token file lists of a loaded configuration.
BRQ_MUSTCHECK int brq_auth_init_config(struct brq_auth *a, const struct brq_config *cfg,
				       struct brq_config_problems *problems);

// Adds one more token for `role` (WORKER or ADMIN), given as len bytes
// (BRQ_AUTH_TOKEN_MIN..BRQ_AUTH_TOKEN_MAX): the gateway's own self-probe token
// (selfprobe.h), which exists only in memory. Only its keyed hash is kept; the caller
// keeps (and wipes) the bytes. Not thread-safe: call before the first
// brq_auth_check(), i.e. before the server starts. Returns 0, BRQ_EINVAL (bad
// length or role, nothing added) or BRQ_ENOMEM (nothing added).
BRQ_MUSTCHECK int brq_auth_add_token(struct brq_auth *a, const void *token, size_t len, enum brq_role role);

// Wipes the key and hashes and frees them. Accepts a zeroed or released struct.
void brq_auth_fini(struct brq_auth *a);

// Role of the presented token (len bytes, any content; 1..BRQ_AUTH_TOKEN_MAX, else
// NONE). Every stored hash is compared with crypto_verify_32 and no early exit, so the
// time does not depend on which token, if any, matched. The token is borrowed.
enum brq_role brq_auth_check(const struct brq_auth *a, const void *token, size_t len);

// May `role` call an operation? admin_only is true for admin-only operations (cancel).
bool brq_auth_role_may(enum brq_role role, bool admin_only);

// "none", "worker", "admin" (for logs and metrics).
const char *brq_auth_role_name(enum brq_role role);

#endif // BRQ_GATEWAY_AUTH_H
