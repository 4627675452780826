// SPDX-License-Identifier: MIT
// Bearer tokens: keeps keyed hashes of the configured tokens and checks presented ones in constant time.
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "log.h"

_Static_assert(sizeof(((struct brq_auth *) 0)->key) == crypto_generichash_KEYBYTES,
	       "auth key size must match BLAKE2b's default key size");
_Static_assert(sizeof(((struct brq_auth_entry *) 0)->hash) == crypto_verify_32_BYTES,
	       "stored hashes are compared with crypto_verify_32");

// Largest token file read: a maximal token plus generous trailing whitespace.
#define TOKEN_FILE_MAX 4096

static bool
is_trailing_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// Reads `path`, checks it and stores the keyed hash into *e. On a problem, adds one line
// naming the file (never its content) and returns -EINVAL.
static int
load_token_file(const unsigned char key[32], const char *path, enum brq_role role, struct brq_auth_entry *e,
		struct brq_config_problems *problems)
{
	const char   *what = role == BRQ_ROLE_ADMIN ? "admin token file" : "worker token file";
	unsigned char buf[TOKEN_FILE_MAX + 1];
	size_t        len = 0;
	int           rc  = -EINVAL;
	struct stat   st;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		brq_config_problem_add(problems, "%s %s: cannot open: %s", what, path, strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &st) != 0) {
		brq_config_problem_add(problems, "%s %s: cannot stat: %s", what, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		brq_config_problem_add(problems, "%s %s: not a regular file", what, path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			brq_config_problem_add(problems, "%s %s: cannot read: %s", what, path,
					       strerror(errno));
			goto out;
		}
		if (n == 0 || (len += (size_t) n) == sizeof(buf)) {
			break;
		}
	}
	if (len == sizeof(buf)) {
		len = sizeof(buf); // more than TOKEN_FILE_MAX bytes: too long, whatever follows
	} else {
		while (len > 0 && is_trailing_space(buf[len - 1])) {
			len--;
		}
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
	if ((st.st_mode & 0007) != 0) {
		// World access is a warning, not an error: refusing would turn a permissions
		// slip into an outage. Group access is the normal root:brooq 0640 setup.
		BRQ_LOG_WARN("token_file_world_readable", "path=%s mode=%04o role=%s", BRQ_LOG_Q(path),
			     (unsigned) (st.st_mode & 07777), brq_auth_role_name(role));
	}
	crypto_generichash(e->hash, sizeof(e->hash), buf, len, key, 32);
	e->role = role;
	rc      = 0;
out:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

int
brq_auth_init(struct brq_auth *a, const char *const *worker_files, size_t n_worker,
	      const char *const *admin_files, size_t n_admin, struct brq_config_problems *problems)
{
	const char **paths  = NULL; // paths[i] names entries[i], for the duplicate check
	size_t       n      = 0;
	bool         is_bad = false;
	int          rc     = -ENOMEM;

	memset(a, 0, sizeof(*a));
	if (sodium_init() < 0) {
		return -EIO;
	}
	if (n_worker + n_admin == 0) {
		brq_config_problem_add(problems, "auth: no token files configured");
		return -EINVAL;
	}
	randombytes_buf(a->key, sizeof(a->key));
	a->entries = calloc(n_worker + n_admin, sizeof(*a->entries));
	paths      = calloc(n_worker + n_admin, sizeof(*paths));
	if (a->entries == NULL || paths == NULL) {
		goto fail;
	}
	// 1. Hash every file, collecting all problems rather than stopping at the first.
	for (size_t i = 0; i < n_worker + n_admin; i++) {
		bool        is_admin = i >= n_worker;
		const char *path     = is_admin ? admin_files[i - n_worker] : worker_files[i];
		if (load_token_file(a->key, path, is_admin ? BRQ_ROLE_ADMIN : BRQ_ROLE_WORKER, &a->entries[n],
				    problems) != 0) {
			is_bad = true;
			continue;
		}
		paths[n++] = path;
	}
	// 2. One token for two roles is a mistake (which role was meant?). Timing here
	//    reveals nothing useful: it runs once, before any request.
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			if (a->entries[i].role != a->entries[j].role &&
			    sodium_memcmp(a->entries[i].hash, a->entries[j].hash, 32) == 0) {
				brq_config_problem_add(problems,
						       "%s token file %s: same token as %s token file %s",
						       brq_auth_role_name(a->entries[i].role), paths[i],
						       brq_auth_role_name(a->entries[j].role), paths[j]);
				is_bad = true;
			}
		}
	}
	if (is_bad) {
		rc = -EINVAL;
		goto fail;
	}
	free(paths);
	a->n_entries = n;
	return 0;

fail:
	free(paths);
	a->n_entries = n;
	brq_auth_fini(a);
	return rc;
}

int
brq_auth_init_config(struct brq_auth *a, const struct brq_config *cfg, struct brq_config_problems *problems)
{
	return brq_auth_init(a, (const char *const *) cfg->worker_token_files, cfg->n_worker_token_files,
			     (const char *const *) cfg->admin_token_files, cfg->n_admin_token_files,
			     problems);
}

int
brq_auth_add_token(struct brq_auth *a, const void *token, size_t len, enum brq_role role)
{
	if (token == NULL || len < BRQ_AUTH_TOKEN_MIN || len > BRQ_AUTH_TOKEN_MAX ||
	    (role != BRQ_ROLE_WORKER && role != BRQ_ROLE_ADMIN)) {
		return BRQ_EINVAL;
	}
	// A new array rather than realloc, so the old one is wiped like every other.
	struct brq_auth_entry *e = calloc(a->n_entries + 1, sizeof(*e));
	if (e == NULL) {
		return BRQ_ENOMEM;
	}
	if (a->entries != NULL) {
		memcpy(e, a->entries, a->n_entries * sizeof(*e));
		sodium_memzero(a->entries, a->n_entries * sizeof(*e));
		free(a->entries);
	}
	crypto_generichash(e[a->n_entries].hash, sizeof(e->hash), token, len, a->key, sizeof(a->key));
	e[a->n_entries].role = role;
	a->entries           = e;
	a->n_entries++;
	return 0;
}

void
brq_auth_fini(struct brq_auth *a)
{
	if (a == NULL) {
		return;
	}
	if (a->entries != NULL) {
		sodium_memzero(a->entries, a->n_entries * sizeof(*a->entries));
		free(a->entries);
	}
	sodium_memzero(a->key, sizeof(a->key));
	memset(a, 0, sizeof(*a));
}

enum brq_role
brq_auth_check(const struct brq_auth *a, const void *token, size_t len)
{
	unsigned char h[32];
	unsigned      acc = 0;

	// Length is not secret (the attacker chose it); the content is.
	if (token == NULL || len == 0 || len > BRQ_AUTH_TOKEN_MAX) {
		return BRQ_ROLE_NONE;
	}
	crypto_generichash(h, sizeof(h), token, len, a->key, sizeof(a->key));
	for (size_t i = 0; i < a->n_entries; i++) {
		// crypto_verify_32: 0 on match, -1 otherwise -> m is 1 or 0, no branch.
		unsigned m = (unsigned) (crypto_verify_32(h, a->entries[i].hash) + 1);
		acc |= (0u - m) & (unsigned) a->entries[i].role;
	}
	sodium_memzero(h, sizeof(h));
	if (acc & BRQ_ROLE_ADMIN) {
		return BRQ_ROLE_ADMIN;
	}
	return (acc & BRQ_ROLE_WORKER) ? BRQ_ROLE_WORKER : BRQ_ROLE_NONE;
}

bool
brq_auth_role_may(enum brq_role role, bool admin_only)
{
	switch (role) {
	case BRQ_ROLE_ADMIN: return true;
	case BRQ_ROLE_WORKER: return !admin_only;
	case BRQ_ROLE_NONE:
	default: return false;
	}
}

const char *
brq_auth_role_name(enum brq_role role)
{
	switch (role) {
	case BRQ_ROLE_WORKER: return "worker";
	case BRQ_ROLE_ADMIN: return "admin";
	case BRQ_ROLE_NONE:
	default: return "none";
	}
}
