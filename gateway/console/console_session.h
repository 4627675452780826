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
// At most `max` sessions of each role (the role of the token at sign-in): a sign-in
// beyond them first drops the expired ones, then the one of its own role used least
// recently (logged). So read-only (worker-token) sign-ins never end an admin's session. Ids come from
// libsodium's randombytes (32 bytes, base64url without padding: 43 characters). Lookups compare every slot
// with crypto_verify_32, so their time does not say which slot, if any, matched.
#ifndef BRQ_GATEWAY_CONSOLE_SESSION_H
#define BRQ_GATEWAY_CONSOLE_SESSION_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"

#define BRQ_CONSOLE_SID_LEN      43 // base64url of 32 bytes, no padding
#define BRQ_CONSOLE_CSRF_LEN     43
#define BRQ_CONSOLE_SESSIONS_MAX 32 // of each role

// What a request learns about its session (copied out: no pointer into the table).
typedef struct brq_console_who {
	brq_role role;                           // as the token's role is now
	char     csrf[BRQ_CONSOLE_CSRF_LEN + 1]; // NUL-terminated
	char     token_fp[9];                    // 8 hex digits
	char     tag[9];                         // 8 hex digits: which session, for logs
	uint64_t expires_wall_ms;                // unix ms
} brq_console_who;

typedef struct brq_console_sessions brq_console_sessions; // opaque

// A table for at most max sessions of each role (1..BRQ_CONSOLE_SESSIONS_MAX * 16) lasting ttl_ms,
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

// ---- failed sign-ins ----------------------------------------------------------------------
// Failed sign-ins are throttled per peer address and in total, each a GCRA bucket: an
// address may fail BRQ_CONSOLE_FAIL_BURST times at once, then once per
// BRQ_CONSOLE_FAIL_REFILL_MS; all addresses together BRQ_CONSOLE_FAIL_GLOBAL_BURST, then
// once per BRQ_CONSOLE_FAIL_GLOBAL_REFILL_MS. While either bucket is empty a sign-in
// from that address is refused (429) before its token is looked at: letting a right
// token through would leave guessing unthrottled. Successful sign-ins cost nothing.
//
// Fairness: every local user reaches a loopback endpoint from 127.0.0.1, so there the
// per-address bucket is shared: a local user who keeps failing delays everyone's new
// sign-ins (not their sessions) by at most a refill per failure. The global bucket
// bounds what many addresses (a non-loopback endpoint) can guess together. The table
// keeps BRQ_CONSOLE_FAIL_PEERS addresses; a new one replaces a recovered one, else the
// one closest to recovery (the global bucket still holds).
#define BRQ_CONSOLE_FAIL_BURST            10
#define BRQ_CONSOLE_FAIL_REFILL_MS        6000 // 10 a minute
#define BRQ_CONSOLE_FAIL_GLOBAL_BURST     100
#define BRQ_CONSOLE_FAIL_GLOBAL_REFILL_MS 600 // 100 a minute
#define BRQ_CONSOLE_FAIL_PEERS            256

// A peer's address as the throttle's key: the bytes of an IPv4 (4) or IPv6 (16) address.
typedef struct brq_console_peer {
	uint8_t addr[16];
	uint8_t len; // 4 or 16; 0: unknown (counted under one shared key)
} brq_console_peer;

typedef struct brq_console_throttle brq_console_throttle; // opaque

// 0 and *out, or BRQ_ENOMEM. Free with brq_console_throttle_free (NULL: no-op).
BRQ_MUSTCHECK int brq_console_throttle_new(brq_console_throttle **out);
void              brq_console_throttle_free(brq_console_throttle *t);

// 0 when a sign-in from peer may be tried now, else the milliseconds until one may.
uint64_t brq_console_throttle_wait_ms(brq_console_throttle *t, const brq_console_peer *peer);

// Counts a failed sign-in from peer.
void brq_console_throttle_fail(brq_console_throttle *t, const brq_console_peer *peer);

// Fault/clock seam for tests: monotonic milliseconds (brq_now_ms by default).
extern uint64_t (*brq_console_now_ms)(void);

#endif
