// SPDX-License-Identifier: MIT
// The web console's sessions: a small table in memory, hashes only, bounded in number and time.
#include "console_session.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "brq_clock.h"
#include "log/log.h"

uint64_t (*brq_console_now_ms)(void) = brq_now_ms;

typedef struct slot {
	bool          used;
	brq_role      role_at_open;   // the quota it counts against (the role may change later)
	unsigned char sid_hash[32];   // BLAKE2b-256 of the cookie value
	unsigned char token_hash[32]; // auth's keyed hash of the token
	char          csrf[BRQ_CONSOLE_CSRF_LEN + 1];
	char          token_fp[9];
	char          tag[9];
	uint64_t      expires_ms;      // monotonic
	uint64_t      expires_wall_ms; // the same moment, unix ms (for the page)
	uint64_t      used_ms;         // last use, monotonic (the eviction order)
} slot;

struct brq_console_sessions {
	pthread_mutex_t mu;
	const brq_auth *auth;
	uint64_t        ttl_ms;
	size_t          max;   // sessions of each role
	slot           *slots; // 2 * max: every role under its quota finds a free one
	brq_auth_watch  watch; // end_revoked after each reload
};

static void end_revoked(void *arg);

int
brq_console_sessions_new(const brq_auth *auth, uint64_t ttl_ms, size_t max, brq_console_sessions **out)
{
	if (max == 0 || max > BRQ_CONSOLE_SESSIONS_MAX * 16) {
		return BRQ_EINVAL;
	}
	brq_console_sessions *s = calloc(1, sizeof(*s));
	if (s == NULL || (s->slots = calloc(2 * max, sizeof(*s->slots))) == NULL) {
		free(s);
		return BRQ_ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->auth   = auth;
	s->ttl_ms = ttl_ms;
	s->max    = max;
	s->watch  = (brq_auth_watch) {.fn = end_revoked, .arg = s};
	brq_auth_watch_add(auth, &s->watch);
	*out = s;
	return 0;
}

void
brq_console_sessions_free(brq_console_sessions *s)
{
	if (s == NULL) {
		return;
	}
	brq_auth_watch_remove(s->auth, &s->watch);
	sodium_memzero(s->slots, 2 * s->max * sizeof(*s->slots));
	free(s->slots);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static void
hex4(const unsigned char *b, char out[9])
{
	sodium_bin2hex(out, 9, b, 4);
}

static void
drop(slot *sl)
{
	sodium_memzero(sl, sizeof(*sl));
}

// A slot for a new session of role (under mu). Expired sessions are dropped first; then,
// while the role has fewer than max live sessions, an unused slot (there is one: the
// table has 2 * max and the other role holds at most max); else the role's session used
// least recently ends (logged). Another role's session is never taken.
static slot *
free_slot(brq_console_sessions *s, brq_role role, uint64_t now)
{
	slot  *lru = NULL, *unused = NULL;
	size_t live = 0;
	for (size_t i = 0; i < 2 * s->max; i++) {
		slot *sl = &s->slots[i];
		if (sl->used && sl->expires_ms <= now) {
			drop(sl);
		}
		if (!sl->used) {
			unused = unused != NULL ? unused : sl;
		} else if (sl->role_at_open == role) {
			live++;
			if (lru == NULL || sl->used_ms < lru->used_ms) {
				lru = sl;
			}
		}
	}
	if (live < s->max && unused != NULL) {
		return unused;
	}
	BRQ_LOG_INFO("console_session_evicted",
		     "session=%s token_fp=%s role=%s reason=\"role's sessions full (%zu)\"", lru->tag,
		     lru->token_fp, brq_auth_role_name(role), s->max);
	drop(lru);
	return lru;
}

int
brq_console_session_open(brq_console_sessions *s, const void *token, size_t len,
			 char sid[BRQ_CONSOLE_SID_LEN + 1], brq_console_who *who)
{
	unsigned char th[32], fp[32], id[32], csrf[32];
	if (token == NULL || len == 0 || len > BRQ_AUTH_TOKEN_MAX) {
		return BRQ_ENOTFOUND;
	}
	brq_auth_hash(s->auth, token, len, th);
	brq_role role = brq_auth_check_hash(s->auth, th);
	if (role == BRQ_ROLE_NONE) {
		sodium_memzero(th, sizeof(th));
		return BRQ_ENOTFOUND;
	}
	crypto_generichash(fp, sizeof(fp), token, len, NULL, 0);
	randombytes_buf(id, sizeof(id));
	randombytes_buf(csrf, sizeof(csrf));

	pthread_mutex_lock(&s->mu);
	uint64_t now     = brq_console_now_ms();
	slot    *sl      = free_slot(s, role, now);
	sl->used         = true;
	sl->role_at_open = role;
	memcpy(sl->token_hash, th, sizeof(th));
	sodium_bin2base64(sid, BRQ_CONSOLE_SID_LEN + 1, id, sizeof(id),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	crypto_generichash(sl->sid_hash, sizeof(sl->sid_hash), (const unsigned char *) sid,
			   BRQ_CONSOLE_SID_LEN, NULL, 0);
	sodium_bin2base64(sl->csrf, sizeof(sl->csrf), csrf, sizeof(csrf),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	hex4(fp, sl->token_fp);
	hex4(sl->sid_hash, sl->tag);
	sl->expires_ms      = now + s->ttl_ms;
	sl->expires_wall_ms = (uint64_t) brq_wall_ms() + s->ttl_ms;
	sl->used_ms         = now;
	*who                = (brq_console_who) {.role = role, .expires_wall_ms = sl->expires_wall_ms};
	memcpy(who->csrf, sl->csrf, sizeof(who->csrf));
	memcpy(who->token_fp, sl->token_fp, sizeof(who->token_fp));
	memcpy(who->tag, sl->tag, sizeof(who->tag));
	pthread_mutex_unlock(&s->mu);

	sodium_memzero(th, sizeof(th));
	sodium_memzero(id, sizeof(id));
	sodium_memzero(csrf, sizeof(csrf));
	return 0;
}

// Ends the session of a token no longer accepted (under mu).
static void
revoke(slot *sl)
{
	BRQ_LOG_INFO("console_session_revoked", "session=%s token_fp=%s reason=\"token no longer accepted\"",
		     sl->tag, sl->token_fp);
	drop(sl);
}

// After a reload (auth's watch): ends at once the sessions whose token the new set no
// longer accepts, so that a revoked token's sessions are gone even if it comes back.
static void
end_revoked(void *arg)
{
	brq_console_sessions *s = arg;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < 2 * s->max; i++) {
		if (s->slots[i].used &&
		    brq_auth_check_hash(s->auth, s->slots[i].token_hash) == BRQ_ROLE_NONE) {
			revoke(&s->slots[i]);
		}
	}
	pthread_mutex_unlock(&s->mu);
}

// The slot of sid (under mu), or NULL. Every used slot is compared: no early exit.
static slot *
find(brq_console_sessions *s, const char *sid, size_t len)
{
	unsigned char h[32];
	slot         *hit = NULL;
	if (len != BRQ_CONSOLE_SID_LEN) {
		return NULL;
	}
	crypto_generichash(h, sizeof(h), (const unsigned char *) sid, len, NULL, 0);
	for (size_t i = 0; i < 2 * s->max; i++) {
		bool eq = crypto_verify_32(h, s->slots[i].sid_hash) == 0;
		if (eq && s->slots[i].used) {
			hit = &s->slots[i];
		}
	}
	return hit;
}

int
brq_console_session_get(brq_console_sessions *s, const char *sid, size_t len, brq_console_who *who)
{
	int rc = BRQ_ENOTFOUND;
	pthread_mutex_lock(&s->mu);
	uint64_t now = brq_console_now_ms();
	slot    *sl  = find(s, sid, len);
	if (sl != NULL && sl->expires_ms <= now) {
		drop(sl);
		sl = NULL;
	}
	brq_role role = sl != NULL ? brq_auth_check_hash(s->auth, sl->token_hash) : BRQ_ROLE_NONE;
	if (sl != NULL && role == BRQ_ROLE_NONE) {
		revoke(sl);
		sl = NULL;
	}
	if (sl != NULL) {
		sl->used_ms = now;
		*who        = (brq_console_who) {.role = role, .expires_wall_ms = sl->expires_wall_ms};
		memcpy(who->csrf, sl->csrf, sizeof(who->csrf));
		memcpy(who->token_fp, sl->token_fp, sizeof(who->token_fp));
		memcpy(who->tag, sl->tag, sizeof(who->tag));
		rc = 0;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void
brq_console_session_close(brq_console_sessions *s, const char *sid, size_t len)
{
	pthread_mutex_lock(&s->mu);
	slot *sl = find(s, sid, len);
	if (sl != NULL) {
		drop(sl);
	}
	pthread_mutex_unlock(&s->mu);
}

bool
brq_console_csrf_ok(const brq_console_who *who, const char *header, size_t len)
{
	if (header == NULL || len != BRQ_CONSOLE_CSRF_LEN) {
		return false;
	}
	return sodium_memcmp(who->csrf, header, BRQ_CONSOLE_CSRF_LEN) == 0;
}

size_t
brq_console_sessions_count(brq_console_sessions *s)
{
	size_t n = 0;
	pthread_mutex_lock(&s->mu);
	uint64_t now = brq_console_now_ms();
	for (size_t i = 0; i < 2 * s->max; i++) {
		n += s->slots[i].used && s->slots[i].expires_ms > now;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

// ---- failed sign-ins ----------------------------------------------------------------------

// A GCRA bucket: tat_ms is the theoretical arrival time of the next failure (monotonic);
// a failure is allowed while tat_ms - now <= (burst - 1) * refill.
typedef struct bucket {
	brq_console_peer peer;
	uint64_t         tat_ms;
} bucket;

struct brq_console_throttle {
	pthread_mutex_t mu;
	bucket          global;
	bucket          peers[BRQ_CONSOLE_FAIL_PEERS];
};

int
brq_console_throttle_new(brq_console_throttle **out)
{
	brq_console_throttle *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		return BRQ_ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

void
brq_console_throttle_free(brq_console_throttle *t)
{
	if (t == NULL) {
		return;
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

// How long until b allows one more failure (0: now).
static uint64_t
bucket_wait(const bucket *b, uint64_t now, uint32_t burst, uint32_t refill_ms)
{
	uint64_t allowed_until = now + (uint64_t) (burst - 1) * refill_ms;
	return b->tat_ms > allowed_until ? b->tat_ms - allowed_until : 0;
}

static void
bucket_take(bucket *b, uint64_t now, uint32_t refill_ms)
{
	b->tat_ms = (b->tat_ms > now ? b->tat_ms : now) + refill_ms;
}

static bool
same_peer(const brq_console_peer *a, const brq_console_peer *b)
{
	return a->len == b->len && memcmp(a->addr, b->addr, a->len) == 0;
}

// peer's bucket (under mu), or NULL when it has none and is_new is false. A new one takes
// a recovered bucket (tat_ms <= now), else the one closest to recovery.
static bucket *
peer_bucket(brq_console_throttle *t, const brq_console_peer *peer, uint64_t now, bool is_new)
{
	bucket *spare = NULL;
	for (size_t i = 0; i < BRQ_CONSOLE_FAIL_PEERS; i++) {
		bucket *b = &t->peers[i];
		if (b->tat_ms > now && same_peer(&b->peer, peer)) {
			return b;
		}
		if (spare == NULL || b->tat_ms < spare->tat_ms) {
			spare = b;
		}
	}
	if (!is_new) {
		return NULL;
	}
	spare->peer   = *peer;
	spare->tat_ms = 0;
	return spare;
}

uint64_t
brq_console_throttle_wait_ms(brq_console_throttle *t, const brq_console_peer *peer)
{
	pthread_mutex_lock(&t->mu);
	uint64_t now  = brq_console_now_ms();
	uint64_t wait = bucket_wait(&t->global, now, BRQ_CONSOLE_FAIL_GLOBAL_BURST,
				    BRQ_CONSOLE_FAIL_GLOBAL_REFILL_MS);
	bucket  *b    = peer_bucket(t, peer, now, false);
	if (b != NULL) {
		uint64_t w = bucket_wait(b, now, BRQ_CONSOLE_FAIL_BURST, BRQ_CONSOLE_FAIL_REFILL_MS);
		wait       = w > wait ? w : wait;
	}
	pthread_mutex_unlock(&t->mu);
	return wait;
}

void
brq_console_throttle_fail(brq_console_throttle *t, const brq_console_peer *peer)
{
	pthread_mutex_lock(&t->mu);
	uint64_t now = brq_console_now_ms();
	bucket_take(&t->global, now, BRQ_CONSOLE_FAIL_GLOBAL_REFILL_MS);
	bucket_take(peer_bucket(t, peer, now, true), now, BRQ_CONSOLE_FAIL_REFILL_MS);
	pthread_mutex_unlock(&t->mu);
}
