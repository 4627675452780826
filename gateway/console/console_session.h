// SPDX-License-Identifier: MIT
// The web console's sessions: signed-in browsers, in memory, bounded in number and in time.
//
// Signing in presents a token once (the body of POST /console/api/login); the gateway
// answers with a session id in an HttpOnly, SameSite=Strict cookie. A session holds:
//   - the keyed hash of the token (auth.h brq_auth_hash), never the token: every use
//     re-checks it against the tokens loaded now, so a token removed by a reload
//     (SIGHUP) ends its sessions at once, and a token moved to the other role takes
//     its role with it;
//   - the hash of its id (BLAKE2b), never the id: a memory dump yields no cookie;
//   - a CSRF token (32 random bytes, base64url) that every state-changing request must
//     carry in the X-CSRF-Token header;
//   - a fingerprint of the token for the log (the first 4 bytes of its unkeyed
//     BLAKE2b-256, hex: brooqctl-free to compute, says which token acted, reveals nothing
//     usable) and a tag of the session (the first 4 bytes of the id's hash, hex);
//   - its expiry: ttl after sign-in (BROOQ_CONSOLE_SESSION_TTL), whatever the use.
// At most `max` sessions: a sign-in beyond them first drops the expired ones, then the
// one used least recently (logged). Ids come from libsodium's randombytes (32 bytes,
// base64url without padding: 43 characters). Lookups compare every slot with
// crypto_verify_32, so their time does not say which slot, if any, matched.
#ifndef BRQ_GATEWAY_CONSOLE_SESSION_H
#define BRQ_GATEWAY_CONSOLE_SESSION_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"

#define BRQ_CONSOLE_SID_LEN      43 // base64url of 32 bytes, no padding
#define BRQ_CONSOLE_CSRF_LEN     43
#define BRQ_CONSOLE_SESSIONS_MAX 64

// What a request learns about its session (copied out: no pointer into the table).
typedef struct brq_console_who {
	brq_role role;                           // as the token's role is now
	char     csrf[BRQ_CONSOLE_CSRF_LEN + 1]; // NUL-terminated
	char     token_fp[9];                    // 8 hex digits
	char     tag[9];                         // 8 hex digits: which session, for logs
	uint64_t expires_wall_ms;                // unix ms
} brq_console_who;

typedef struct brq_console_sessions brq_console_sessions; // opaque

// A table for at most max sessions (1..BRQ_CONSOLE_SESSIONS_MAX * 16) lasting ttl_ms,
// checked against auth (borrowed: it must outlive the table). 0 and *out, or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_console_sessions_new(const brq_auth *auth, uint64_t ttl_ms, size_t max,
					   brq_console_sessions **out);
// Wipes and frees. NULL is a no-op.
void brq_console_sessions_free(brq_console_sessions *s);

// Signs in with token[0..len): BRQ_ENOTFOUND when it is no token of either role (nothing
// kept). Else 0, a new session, its id in sid (NUL-terminated; the caller puts it in the
// cookie and forgets it) and *who.
BRQ_MUSTCHECK int brq_console_session_open(brq_console_sessions *s, const void *token, size_t len,
					   char sid[BRQ_CONSOLE_SID_LEN + 1], brq_console_who *who);

// The session of cookie value sid[0..len): 0 and *who, or BRQ_ENOTFOUND (unknown,
// expired, or its token is no longer accepted: the session is dropped then).
BRQ_MUSTCHECK int brq_console_session_get(brq_console_sessions *s, const char *sid, size_t len,
					  brq_console_who *who);

// Ends the session of sid (if any).
void brq_console_session_close(brq_console_sessions *s, const char *sid, size_t len);

// True when header[0..len) is who's CSRF token (constant time in the token's bytes).
bool brq_console_csrf_ok(const brq_console_who *who, const char *header, size_t len);

// Sessions alive now (expired ones not counted).
size_t brq_console_sessions_count(brq_console_sessions *s);

// Fault/clock seam for tests: monotonic milliseconds (brq_now_ms by default).
extern uint64_t (*brq_console_now_ms)(void);

#endif
