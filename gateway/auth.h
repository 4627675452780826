// SPDX-License-Identifier: MIT
// Bearer tokens: loads token files and maps a presented token to a role in constant time.
//
// Only keyed BLAKE2b-256 hashes of the tokens are kept in memory. The key is random per
// process (randombytes_buf), so a memory dump of the hashes is useless against another
// gateway and cannot be brute-forced offline without the key as well.
//
// Roles: worker may call ping, enqueue, claim, heartbeat, settle, job, stats; admin may
// call everything, including cancel (the admin-only operations).
//
// On SIGHUP (reload.h) a new set is prepared from the files as they are now (a file
// that no longer exists revokes its tokens) and, only if every file present passes and
// some token remains, published in place of the old one while NNG threads keep
// checking requests: a check never waits, and the old set is freed once no check
// reads it any more.
#ifndef BRQ_GATEWAY_AUTH_H
#define BRQ_GATEWAY_AUTH_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

// Token files must hold at least this many bytes after trimming trailing whitespace.
#define BRQ_AUTH_TOKEN_MIN 32
// Presented tokens and token files longer than this are refused.
#define BRQ_AUTH_TOKEN_MAX 1024

enum brq_role {
	BRQ_ROLE_NONE   = 0,
	BRQ_ROLE_WORKER = 1,
	BRQ_ROLE_ADMIN  = 2,
};
typedef enum brq_role brq_role;

// One generation of token hashes (auth.c): immutable once published.
typedef struct brq_auth_set brq_auth_set;

// The published generation and the count of checks reading it (auth.c).
typedef struct brq_auth_live brq_auth_live;

typedef struct brq_auth brq_auth;

// Fields are private to auth.c. brq_auth_check() may be called from any number of
// threads at once, also while brq_auth_publish() replaces the tokens (SIGHUP).
struct brq_auth {
	unsigned char  key[32]; // per-process BLAKE2b key, the same for every generation; wiped by fini
	brq_auth_live *live;    // owned
	// A token that lives in memory only (the self-probe's), outside every file set,
	// so a reload keeps it. role NONE: none.
	unsigned char extra_hash[32];
	brq_role      extra_role;
};

// Prepares *a with a fresh key and no tokens (every check answers NONE until a set is
// published). Calls sodium_init() (idempotent). Returns 0 (release with
// brq_auth_fini()), BRQ_ENOMEM, or BRQ_EIO when libsodium cannot initialise; on
// failure *a holds nothing.
BRQ_MUSTCHECK int brq_auth_open(brq_auth *a);

// Reads and hashes the token files into a new set (*out, owned by the caller: publish
// or free it). A file that does not exist (ENOENT) is no problem: its tokens are not in
// the set (that is how a token is revoked, docs/security.md §5) and publishing the set
// logs it as token_file_missing; but a set that would hold no token at all is a problem
// ("no token left"). Each file's content, trimmed of trailing whitespace (space, \t, \r,
// \n), must be BRQ_AUTH_TOKEN_MIN..BRQ_AUTH_TOKEN_MAX bytes; any byte values are
// allowed. A file that "others" may read or write (mode & 0007) is refused, as ssh
// refuses such keys; group access is the normal root:brooq 0640 and is fine. A token
// configured for both roles is a problem. Problems name the file (and its mode),
// never its content; every file is checked, so that all problems are reported at
// once. The read buffer is wiped on every path. Does not change what *a accepts.
// Returns 0, BRQ_EINVAL when problems were added to *problems, or BRQ_ENOMEM; on
// failure *out is NULL.
BRQ_MUSTCHECK int brq_auth_prepare(const brq_auth *a, const char *const *worker_files, size_t n_worker,
				   const char *const *admin_files, size_t n_admin, brq_auth_set **out,
				   brq_config_problems *problems);

// Same, with the token file lists of a configuration.
BRQ_MUSTCHECK int brq_auth_prepare_config(const brq_auth *a, const brq_config *cfg, brq_auth_set **out,
					  brq_config_problems *problems);

// Makes `set` the tokens *a accepts (takes it; NULL is ignored), then frees the
// previous set once no check still reads it. Logs what changed against the previous
// set, file by file (token_added / token_removed / token_changed, then
// tokens_reloaded with the counts) or, for the first set, tokens_loaded; never a token.
// One publisher at a time is enforced; checks never wait for it.
void brq_auth_publish(brq_auth *a, brq_auth_set *set);

// Told after every brq_auth_publish() (a reload), on the publishing thread, once the new
// set is the one checks see: for holders that keep something derived from a token (the
// console's sessions end those of tokens no longer accepted). fn runs under the publish
// lock: it may call brq_auth_check*/brq_auth_hash, not publish, count or watch_*.
typedef struct brq_auth_watch brq_auth_watch;
struct brq_auth_watch {
	void (*fn)(void *arg);
	void           *arg;
	brq_auth_watch *next; // auth.c's list
};

// Registers w (borrowed: it must stay until brq_auth_watch_remove()). After
// brq_auth_open(); a zeroed (unopened) *a ignores it.
void brq_auth_watch_add(const brq_auth *a, brq_auth_watch *w);

// Unregisters w; when it returns, w's fn is not running and will not run.
void brq_auth_watch_remove(const brq_auth *a, brq_auth_watch *w);

// Frees a set that was not published (wiping its hashes). NULL is fine.
void brq_auth_set_free(brq_auth_set *set);

// brq_auth_open() + brq_auth_prepare() + brq_auth_publish(). Returns what they
// return; on failure *a holds nothing. brq_auth_prepare() reports "no token files
// configured" when both lists are empty.
BRQ_MUSTCHECK int brq_auth_init(brq_auth *a, const char *const *worker_files, size_t n_worker,
				const char *const *admin_files, size_t n_admin,
				brq_config_problems *problems);

// Same, with the token file lists of a loaded configuration.
BRQ_MUSTCHECK int brq_auth_init_config(brq_auth *a, const brq_config *cfg, brq_config_problems *problems);

// Adds the one in-memory token for `role` (WORKER or ADMIN), given as len bytes
// (BRQ_AUTH_TOKEN_MIN..BRQ_AUTH_TOKEN_MAX): the gateway's own self-probe token
// (selfprobe.h). It is not part of any file set, so reloads keep it. Only its keyed
// hash is kept; the caller keeps (and wipes) the bytes. Not thread-safe: call after
// brq_auth_open() and before the first brq_auth_check(), i.e. before the server
// starts. Returns 0, or BRQ_EINVAL (bad length or role, or one is set already:
// nothing added).
BRQ_MUSTCHECK int brq_auth_add_token(brq_auth *a, const void *token, size_t len, brq_role role);

// Wipes the key and hashes and frees them. No check may run any more. Accepts a
// zeroed or released struct.
void brq_auth_fini(brq_auth *a);

// Tokens of `role` (BRQ_ROLE_NONE: all) that *a accepts now.
size_t brq_auth_count(const brq_auth *a, brq_role role);

// Role of the presented token (len bytes, any content; 1..BRQ_AUTH_TOKEN_MAX, else
// NONE). Every stored hash is compared with crypto_verify_32 and no early exit, so the
// time does not depend on which token, if any, matched. The token is borrowed. Any
// thread; wait-free with respect to brq_auth_publish() (two atomic increments).
brq_role brq_auth_check(const brq_auth *a, const void *token, size_t len);

// The keyed hash of a presented token (len 1..BRQ_AUTH_TOKEN_MAX bytes): what the sets
// hold. For a holder that must re-check a token's role later without keeping the token
// (the console's sessions: a token removed by a reload ends them). Useless outside
// this process (the key is per process).
void brq_auth_hash(const brq_auth *a, const void *token, size_t len, unsigned char out[32]);

// Role of a token given by its keyed hash (brq_auth_hash), compared as brq_auth_check
// compares: every hash, constant time, wait-free. Any thread.
brq_role brq_auth_check_hash(const brq_auth *a, const unsigned char hash[32]);

// May `role` call an operation? admin_only is true for admin-only operations (cancel).
bool brq_auth_role_may(brq_role role, bool admin_only);

// "none", "worker", "admin" (for logs and metrics).
const char *brq_auth_role_name(brq_role role);

#endif // BRQ_GATEWAY_AUTH_H
