// SPDX-License-Identifier: MIT
// Bearer tokens: keeps keyed hashes of the configured tokens, checks presented ones in constant time, and
// swaps in a new generation while checks run.
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "log/log.h"

_Static_assert(sizeof(((brq_auth *) 0)->key) == crypto_generichash_KEYBYTES,
	       "auth key size must match BLAKE2b's default key size");

// Largest token file read: a maximal token plus generous trailing whitespace.
#define TOKEN_FILE_MAX 4096

typedef struct brq_auth_entry {
	unsigned char hash[crypto_verify_32_BYTES]; // keyed BLAKE2b-256 of the token
	brq_role      role;                         // WORKER or ADMIN
} brq_auth_entry;

struct brq_auth_set {
	brq_auth_entry *entries; // n entries, owned
	char          **paths;   // paths[i] names entries[i] (for the change log), owned
	size_t          n;
	// Token files that did not exist (ENOENT) when the set was read: their tokens are
	// not in it (revoked, docs/security.md §5). Owned; roles in missing_roles.
	char    **missing;
	brq_role *missing_roles;
	size_t    n_missing;
};

// Readers (checks) and the publisher share the current set without a lock, in the
// manner of sleepable RCU: a check increments readers[phase & 1], loads `cur`, reads
// it, and decrements the same counter. The publisher swaps `cur`, then flips the
// phase and waits until the counter of the previous phase drains, twice (once per
// counter), before freeing the old set. A check that could still hold the old set
// incremented one of the two counters before loading it, so after both waits none
// does; new checks use the other counter, so each wait ends. All atomics are
// sequentially consistent.
struct brq_auth_live {
	_Atomic(brq_auth_set *) cur;
	atomic_uint             phase;
	atomic_ulong            readers[2];
	pthread_mutex_t         publish_mtx; // one publisher at a time
	brq_auth_watch         *watches;     // told after each publish; under publish_mtx
};

static bool
is_trailing_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// Reads up to sizeof(buf) bytes of fd into buf. Returns the length, or -1 (errno set).
static ssize_t
read_upto(int fd, unsigned char *buf, size_t cap)
{
	size_t len = 0;
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -1;
		}
		if (n == 0) {
			break;
		}
		len += (size_t) n;
	}
	return (ssize_t) len;
}

// Checks what fstat says about a token file. On a problem, adds one line and returns false.
static bool
file_is_acceptable(const char *what, const char *path, const struct stat *st, brq_config_problems *problems)
{
	if (!S_ISREG(st->st_mode)) {
		brq_config_problem_add(problems, "%s %s: not a regular file", what, path);
		return false;
	}
	if ((st->st_mode & 0007) != 0) {
		// As ssh does with private keys: a token others can read is no secret, and
		// one others can write lets them choose it. Group access is the normal
		// root:brooq 0640 setup.
		brq_config_problem_add(problems,
				       "%s %s: mode %04o lets others read or write it; "
				       "remove their access (chmod o-rwx), group access is fine",
				       what, path, (unsigned) (st->st_mode & 07777));
		return false;
	}
	return true;
}

// Reads `path`, checks it and stores the keyed hash into *e. A file that does not exist
// is no problem but BRQ_ENOTFOUND (the caller counts it as revoked). On a problem, adds
// one line naming the file (never its content) and returns BRQ_EINVAL.
static int
load_token_file(const unsigned char key[32], const char *path, brq_role role, brq_auth_entry *e,
		brq_config_problems *problems)
{
	const char   *what = role == BRQ_ROLE_ADMIN ? "admin token file" : "worker token file";
	unsigned char buf[TOKEN_FILE_MAX + 1];
	ssize_t       got = 0;
	size_t        len;
	int           rc = BRQ_EINVAL;
	struct stat   st;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		return BRQ_ENOTFOUND;
	}
	if (fd < 0) {
		brq_config_problem_add(problems, "%s %s: cannot open: %s", what, path, strerror(errno));
		return BRQ_EINVAL;
	}
	if (fstat(fd, &st) != 0) {
		brq_config_problem_add(problems, "%s %s: cannot stat: %s", what, path, strerror(errno));
		goto out;
	}
	if (!file_is_acceptable(what, path, &st, problems)) {
		goto out;
	}
	got = read_upto(fd, buf, sizeof(buf));
	if (got < 0) {
		brq_config_problem_add(problems, "%s %s: cannot read: %s", what, path, strerror(errno));
		got = 0;
		goto out;
	}
	len = (size_t) got;
	// More than TOKEN_FILE_MAX bytes is too long, whatever follows; otherwise trim.
	while (len < sizeof(buf) && len > 0 && is_trailing_space(buf[len - 1])) {
		len--;
	}
	if (len > BRQ_AUTH_TOKEN_MAX) {
		brq_config_problem_add(problems, "%s %s: token too long (at most %d bytes)", what, path,
				       BRQ_AUTH_TOKEN_MAX);
		goto out;
	}
	if (len < BRQ_AUTH_TOKEN_MIN) {
		brq_config_problem_add(
			problems,
			"%s %s: token too short (%zu bytes after trimming, need at least %d random bytes)",
			what, path, len, BRQ_AUTH_TOKEN_MIN);
		goto out;
	}
	crypto_generichash(e->hash, sizeof(e->hash), buf, len, key, 32);
	e->role = role;
	rc      = 0;
out:
	sodium_memzero(buf, (size_t) got);
	close(fd);
	return rc;
}

void
brq_auth_set_free(brq_auth_set *set)
{
	if (set == NULL) {
		return;
	}
	if (set->entries != NULL) {
		sodium_memzero(set->entries, set->n * sizeof(*set->entries));
	}
	for (size_t i = 0; set->paths != NULL && i < set->n; i++) {
		free(set->paths[i]);
	}
	for (size_t i = 0; set->missing != NULL && i < set->n_missing; i++) {
		free(set->missing[i]);
	}
	free(set->entries);
	free(set->paths);
	free(set->missing);
	free(set->missing_roles);
	free(set);
}

// One token for two roles is a mistake (which role was meant?). Timing here reveals
// nothing useful: it runs at load, not per request. Returns false after adding problems.
static bool
roles_are_distinct(const brq_auth_set *s, brq_config_problems *problems)
{
	bool is_ok = true;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t j = i + 1; j < s->n; j++) {
			if (s->entries[i].role != s->entries[j].role &&
			    sodium_memcmp(s->entries[i].hash, s->entries[j].hash, 32) == 0) {
				brq_config_problem_add(problems,
						       "%s token file %s: same token as %s token file %s",
						       brq_auth_role_name(s->entries[i].role), s->paths[i],
						       brq_auth_role_name(s->entries[j].role), s->paths[j]);
				is_ok = false;
			}
		}
	}
	return is_ok;
}

// Records that `path` (of `role`) does not exist. Returns 0 or BRQ_ENOMEM.
static int
note_missing(brq_auth_set *s, const char *path, brq_role role)
{
	s->missing[s->n_missing] = strdup(path);
	if (s->missing[s->n_missing] == NULL) {
		return BRQ_ENOMEM;
	}
	s->missing_roles[s->n_missing++] = role;
	return 0;
}

int
brq_auth_prepare(const brq_auth *a, const char *const *worker_files, size_t n_worker,
		 const char *const *admin_files, size_t n_admin, brq_auth_set **out,
		 brq_config_problems *problems)
{
	size_t        total  = n_worker + n_admin;
	bool          is_bad = false;
	brq_auth_set *s      = calloc(1, sizeof(*s));

	*out = NULL;
	if (s == NULL) {
		return BRQ_ENOMEM;
	}
	if (total == 0) {
		brq_config_problem_add(problems, "auth: no token files configured");
		free(s);
		return BRQ_EINVAL;
	}
	s->entries       = calloc(total, sizeof(*s->entries));
	s->paths         = calloc(total, sizeof(*s->paths));
	s->missing       = calloc(total, sizeof(*s->missing));
	s->missing_roles = calloc(total, sizeof(*s->missing_roles));
	if (s->entries == NULL || s->paths == NULL || s->missing == NULL || s->missing_roles == NULL) {
		brq_auth_set_free(s);
		return BRQ_ENOMEM;
	}
	// Every file is read, collecting all problems rather than stopping at the first.
	for (size_t i = 0; i < total; i++) {
		bool        is_admin = i >= n_worker;
		const char *path     = is_admin ? admin_files[i - n_worker] : worker_files[i];
		brq_role    role     = is_admin ? BRQ_ROLE_ADMIN : BRQ_ROLE_WORKER;
		int         rc       = load_token_file(a->key, path, role, &s->entries[s->n], problems);
		if (rc == BRQ_ENOTFOUND) {
			rc = note_missing(s, path, role);
		} else if (rc == 0) {
			s->paths[s->n] = strdup(path);
			rc             = s->paths[s->n++] == NULL ? BRQ_ENOMEM : 0;
		} else {
			is_bad = true;
			continue;
		}
		if (rc != 0) {
			brq_auth_set_free(s);
			return rc;
		}
	}
	// Missing files are revoked tokens, but a set without any token would lock every
	// client out: that is a mistake (or a wrong directory), never a revocation.
	if (s->n == 0 && !is_bad) {
		brq_config_problem_add(
			problems,
			"auth: no token left: every token file is missing (%zu); at least one "
			"token must remain (a reload refused for this keeps the tokens in force)",
			total);
		is_bad = true;
	}
	if (!roles_are_distinct(s, problems) || is_bad) {
		brq_auth_set_free(s);
		return BRQ_EINVAL;
	}
	*out = s;
	return 0;
}

int
brq_auth_prepare_config(const brq_auth *a, const brq_config *cfg, brq_auth_set **out,
			brq_config_problems *problems)
{
	return brq_auth_prepare(a, (const char *const *) cfg->worker_token_files, cfg->n_worker_token_files,
				(const char *const *) cfg->admin_token_files, cfg->n_admin_token_files, out,
				problems);
}

int
brq_auth_open(brq_auth *a)
{
	memset(a, 0, sizeof(*a));
	if (sodium_init() < 0) {
		return BRQ_EIO;
	}
	a->live = calloc(1, sizeof(*a->live));
	if (a->live == NULL) {
		return BRQ_ENOMEM;
	}
	atomic_init(&a->live->cur, NULL);
	atomic_init(&a->live->phase, 0);
	atomic_init(&a->live->readers[0], 0);
	atomic_init(&a->live->readers[1], 0);
	pthread_mutex_init(&a->live->publish_mtx, NULL);
	randombytes_buf(a->key, sizeof(a->key));
	return 0;
}

static size_t
set_count(const brq_auth_set *s, brq_role role)
{
	size_t n = 0;
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		n += role == BRQ_ROLE_NONE || s->entries[i].role == role;
	}
	return n;
}

// Index of `path` with `role` in s, or s->n.
static size_t
find_entry(const brq_auth_set *s, const char *path, brq_role role)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->entries[i].role == role && strcmp(s->paths[i], path) == 0) {
			return i;
		}
	}
	return s->n;
}

// Index in s of a token of e's role and hash whose path `other` does not hold, or s->n:
// the same token under another path, as on the first reload that reads the tokens'
// copy (reload.h) instead of $CREDENTIALS_DIRECTORY. Such a token moved; it was
// neither added nor removed.
static size_t
find_moved(const brq_auth_set *s, const brq_auth_set *other, const brq_auth_entry *e)
{
	for (size_t k = 0; k < s->n; k++) {
		if (s->entries[k].role == e->role && sodium_memcmp(s->entries[k].hash, e->hash, 32) == 0 &&
		    find_entry(other, s->paths[k], e->role) == other->n) {
			return k;
		}
	}
	return s->n;
}

// Logs the differences between two sets, file by file: paths and roles only. A token
// whose file moved (find_moved) is not a change.
static void
log_changes(const brq_auth_set *old, const brq_auth_set *cur)
{
	size_t added = 0, removed = 0, changed = 0;

	// Every time, not only when it changes: a file revoked this way is still listed, and
	// the operator should take it out of the list (or learn of a typo) from the log.
	for (size_t i = 0; i < cur->n_missing; i++) {
		brq_role role      = cur->missing_roles[i];
		bool     was_there = old != NULL && find_entry(old, cur->missing[i], role) < old->n;
		BRQ_LOG_WARN("token_file_missing", "role=%s path=%s effect=%s", brq_auth_role_name(role),
			     BRQ_LOG_Q(cur->missing[i]), was_there ? "revoked" : "not_loaded");
	}
	if (old == NULL) {
		BRQ_LOG_INFO("tokens_loaded", "worker=%zu admin=%zu", set_count(cur, BRQ_ROLE_WORKER),
			     set_count(cur, BRQ_ROLE_ADMIN));
		return;
	}
	for (size_t i = 0; i < cur->n; i++) {
		const char *role = brq_auth_role_name(cur->entries[i].role);
		size_t      j    = find_entry(old, cur->paths[i], cur->entries[i].role);
		if (j == old->n && find_moved(old, cur, &cur->entries[i]) == old->n) {
			added++;
			BRQ_LOG_INFO("token_added", "role=%s path=%s", role, BRQ_LOG_Q(cur->paths[i]));
		} else if (j < old->n && sodium_memcmp(old->entries[j].hash, cur->entries[i].hash, 32) != 0) {
			changed++;
			BRQ_LOG_INFO("token_changed", "role=%s path=%s", role, BRQ_LOG_Q(cur->paths[i]));
		}
	}
	for (size_t j = 0; j < old->n; j++) {
		if (find_entry(cur, old->paths[j], old->entries[j].role) == cur->n &&
		    find_moved(cur, old, &old->entries[j]) == cur->n) {
			removed++;
			BRQ_LOG_INFO("token_removed", "role=%s path=%s",
				     brq_auth_role_name(old->entries[j].role), BRQ_LOG_Q(old->paths[j]));
		}
	}
	BRQ_LOG_INFO("tokens_reloaded", "worker=%zu admin=%zu added=%zu removed=%zu changed=%zu",
		     set_count(cur, BRQ_ROLE_WORKER), set_count(cur, BRQ_ROLE_ADMIN), added, removed,
		     changed);
}

// Waits until no check counted under `idx` remains. Checks never block, so this is
// a few microseconds in practice.
static void
wait_readers(brq_auth_live *lv, unsigned idx)
{
	struct timespec nap = {.tv_sec = 0, .tv_nsec = 50 * 1000};
	while (atomic_load(&lv->readers[idx]) != 0) {
		nanosleep(&nap, NULL);
	}
}

void
brq_auth_publish(brq_auth *a, brq_auth_set *set)
{
	brq_auth_live *lv = a->live;
	if (set == NULL || lv == NULL) {
		brq_auth_set_free(set);
		return;
	}
	pthread_mutex_lock(&lv->publish_mtx);
	brq_auth_set *old = atomic_exchange(&lv->cur, set);
	for (int flip = 0; flip < 2; flip++) {
		unsigned was = atomic_fetch_add(&lv->phase, 1u) & 1u;
		wait_readers(lv, was);
	}
	log_changes(old, set);
	for (brq_auth_watch *w = lv->watches; w != NULL; w = w->next) {
		w->fn(w->arg);
	}
	pthread_mutex_unlock(&lv->publish_mtx);
	brq_auth_set_free(old);
}

void
brq_auth_watch_add(const brq_auth *a, brq_auth_watch *w)
{
	if (a->live == NULL) {
		return;
	}
	pthread_mutex_lock(&a->live->publish_mtx);
	w->next          = a->live->watches;
	a->live->watches = w;
	pthread_mutex_unlock(&a->live->publish_mtx);
}

void
brq_auth_watch_remove(const brq_auth *a, brq_auth_watch *w)
{
	if (a->live == NULL) {
		return;
	}
	pthread_mutex_lock(&a->live->publish_mtx);
	for (brq_auth_watch **p = &a->live->watches; *p != NULL; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&a->live->publish_mtx);
}

int
brq_auth_init(brq_auth *a, const char *const *worker_files, size_t n_worker, const char *const *admin_files,
	      size_t n_admin, brq_config_problems *problems)
{
	brq_auth_set *set = NULL;
	int           rc  = brq_auth_open(a);
	if (rc == 0) {
		rc = brq_auth_prepare(a, worker_files, n_worker, admin_files, n_admin, &set, problems);
	}
	if (rc != 0) {
		brq_auth_fini(a);
		return rc;
	}
	brq_auth_publish(a, set);
	return 0;
}

int
brq_auth_init_config(brq_auth *a, const brq_config *cfg, brq_config_problems *problems)
{
	return brq_auth_init(a, (const char *const *) cfg->worker_token_files, cfg->n_worker_token_files,
			     (const char *const *) cfg->admin_token_files, cfg->n_admin_token_files,
			     problems);
}

int
brq_auth_add_token(brq_auth *a, const void *token, size_t len, brq_role role)
{
	if (token == NULL || len < BRQ_AUTH_TOKEN_MIN || len > BRQ_AUTH_TOKEN_MAX ||
	    (role != BRQ_ROLE_WORKER && role != BRQ_ROLE_ADMIN) || a->extra_role != BRQ_ROLE_NONE) {
		return BRQ_EINVAL;
	}
	crypto_generichash(a->extra_hash, sizeof(a->extra_hash), token, len, a->key, sizeof(a->key));
	a->extra_role = role;
	return 0;
}

void
brq_auth_fini(brq_auth *a)
{
	if (a == NULL) {
		return;
	}
	if (a->live != NULL) {
		brq_auth_set_free(atomic_load(&a->live->cur));
		pthread_mutex_destroy(&a->live->publish_mtx);
		free(a->live);
	}
	sodium_memzero(a->key, sizeof(a->key));
	memset(a, 0, sizeof(*a));
}

size_t
brq_auth_count(const brq_auth *a, brq_role role)
{
	// Only the publisher changes the set; this is for logs and tests, not the hot path.
	if (a->live == NULL) {
		return 0;
	}
	pthread_mutex_lock(&a->live->publish_mtx);
	size_t n = set_count(atomic_load(&a->live->cur), role);
	pthread_mutex_unlock(&a->live->publish_mtx);
	return n;
}

void
brq_auth_hash(const brq_auth *a, const void *token, size_t len, unsigned char out[32])
{
	crypto_generichash(out, 32, token, len, a->key, sizeof(a->key));
}

brq_role
brq_auth_check_hash(const brq_auth *a, const unsigned char h[32])
{
	unsigned       acc = 0;
	brq_auth_live *lv  = a->live;
	if (lv == NULL) {
		return BRQ_ROLE_NONE;
	}
	unsigned idx = atomic_load(&lv->phase) & 1u;
	atomic_fetch_add(&lv->readers[idx], 1);
	const brq_auth_set *s = atomic_load(&lv->cur);
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		// crypto_verify_32: 0 on match, -1 otherwise -> m is 1 or 0, no branch.
		unsigned m = (unsigned) (crypto_verify_32(h, s->entries[i].hash) + 1);
		acc |= (0u - m) & (unsigned) s->entries[i].role;
	}
	atomic_fetch_sub(&lv->readers[idx], 1);
	// The in-memory token: compared always, so that its absence takes the same time.
	unsigned m = (unsigned) (crypto_verify_32(h, a->extra_hash) + 1);
	acc |= (0u - m) & (unsigned) a->extra_role;
	if (acc & BRQ_ROLE_ADMIN) {
		return BRQ_ROLE_ADMIN;
	}
	return (acc & BRQ_ROLE_WORKER) ? BRQ_ROLE_WORKER : BRQ_ROLE_NONE;
}

brq_role
brq_auth_check(const brq_auth *a, const void *token, size_t len)
{
	unsigned char h[32];

	// Length is not secret (the attacker chose it); the content is.
	if (token == NULL || len == 0 || len > BRQ_AUTH_TOKEN_MAX || a->live == NULL) {
		return BRQ_ROLE_NONE;
	}
	brq_auth_hash(a, token, len, h);
	brq_role role = brq_auth_check_hash(a, h);
	sodium_memzero(h, sizeof(h));
	return role;
}

bool
brq_auth_role_may(brq_role role, bool admin_only)
{
	switch (role) {
	case BRQ_ROLE_ADMIN: return true;
	case BRQ_ROLE_WORKER: return !admin_only;
	case BRQ_ROLE_NONE:
	default: return false;
	}
}

const char *
brq_auth_role_name(brq_role role)
{
	switch (role) {
	case BRQ_ROLE_WORKER: return "worker";
	case BRQ_ROLE_ADMIN: return "admin";
	case BRQ_ROLE_NONE:
	default: return "none";
	}
}
