// SPDX-License-Identifier: MIT
// The env file of the gateway configuration, and where each variable's value comes from.
#include "config.h"
#include "config_parse.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

// Env files larger than this are refused (they are small text files).
#define ENV_FILE_MAX (1024 * 1024)

// Every variable this module reads; an env file naming another BROOQ_* key is an error.
static const char *const known_vars[] = {
	"BROOQ_DSN",
	"BROOQ_DSN_FILE",
	"BROOQ_LISTEN",
	"BROOQ_IPC_MODE",
	"BROOQ_POOL_SIZE",
	"BROOQ_LEASE",
	"BROOQ_BACKOFF_BASE",
	"BROOQ_BACKOFF_MAX",
	"BROOQ_MAX_ATTEMPTS",
	"BROOQ_WORKER_TOKEN_FILES",
	"BROOQ_ADMIN_TOKEN_FILES",
	"BROOQ_MAX_BATCH",
	"BROOQ_MAX_PAYLOAD",
	"BROOQ_MAX_REQUEST",
	"BROOQ_MAX_WAIT",
	"BROOQ_MAX_WAITERS",
	"BROOQ_POLL_INTERVAL",
	"BROOQ_REAPER_INTERVAL",
	"BROOQ_RETENTION_TTL",
	"BROOQ_RETENTION_INTERVAL",
	"BROOQ_RETENTION_BATCH",
	"BROOQ_RETENTION_MAX_BATCHES",
	"BROOQ_HTTP_LISTEN",
	"BROOQ_HTTP_ALLOW_NONLOOPBACK",
	"BROOQ_SELFPROBE_INTERVAL",
	"BROOQ_LOG_LEVEL",
	"BROOQ_SHUTDOWN_GRACE",
	"BROOQ_TOPIC_OVERRIDES",
};

void
brq_cfg_free_secret(char *s)
{
	if (s != NULL) {
		sodium_memzero(s, strlen(s));
		free(s);
	}
}

// --- env file ---------------------------------------------------------------------

bool
brq_cfg_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool
is_known_var(const char *key)
{
	for (size_t i = 0; i < sizeof(known_vars) / sizeof(known_vars[0]); i++) {
		if (strcmp(key, known_vars[i]) == 0) {
			return true;
		}
	}
	return false;
}

// Reads a whole file into a NUL-terminated heap buffer (*len bytes before the NUL).
// Returns 0, -errno, or -EFBIG when larger than max. Caller frees (wipes) *out.
int
brq_cfg_read_small_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	char *buf = malloc(max + 1);
	if (buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	size_t n  = 0;
	int    rc = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, max + 1 - n);
		if (r < 0) {
			if (errno == EINTR) {
				continue;
			}
			rc = -errno;
			break;
		}
		if (r == 0) {
			break;
		}
		n += (size_t) r;
		if (n > max) {
			rc = -EFBIG;
			break;
		}
	}
	close(fd);
	if (rc != 0) {
		sodium_memzero(buf, n < max + 1 ? n : max + 1);
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out   = buf;
	*len   = n;
	return 0;
}

void
brq_cfg_env_entries_free(struct env_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].key);
		brq_cfg_free_secret(e[i].val);
	}
	free(e);
}

// Parses the value part of a line in place: returns its start (NUL-terminated) or
// NULL with *why set. `s` points after '=' and ends at the line's NUL.
static char *
parse_env_value(char *s, const char **why)
{
	while (brq_cfg_is_blank(*s)) {
		s++;
	}
	if (*s == '\'' || *s == '"') {
		char  q = *s;
		char *r = s + 1;
		char *w = s;
		for (;; r++) {
			if (*r == '\0') {
				*why = "unterminated quote";
				return NULL;
			}
			if (*r == q) {
				break;
			}
			if (q == '"' && *r == '\\' && r[1] != '\0') {
				r++;
			}
			*w++ = *r;
		}
		*w = '\0';
		for (r++; *r != '\0'; r++) {
			if (!brq_cfg_is_blank(*r)) {
				*why = "unexpected characters after the closing quote";
				return NULL;
			}
		}
		return s;
	}
	char *end = s + strlen(s);
	while (end > s && brq_cfg_is_blank(end[-1])) {
		*--end = '\0';
	}
	return s;
}

// Parses one line (NUL-terminated, modified in place) and appends an entry.
static void
parse_env_line(struct loader *L, const char *path, size_t lineno, char *line, struct env_entry **entries,
	       size_t *n, size_t *cap)
{
	const char *why = NULL;
	char       *s   = line;
	while (brq_cfg_is_blank(*s)) {
		s++;
	}
	if (*s == '\0' || *s == '#') {
		return;
	}
	if (strncmp(s, "export", 6) == 0 && brq_cfg_is_blank(s[6])) {
		s += 6;
		while (brq_cfg_is_blank(*s)) {
			s++;
		}
	}
	char *key = s;
	if (!(isalpha((unsigned char) *s) || *s == '_')) {
		goto bad_line;
	}
	while (isalnum((unsigned char) *s) || *s == '_') {
		s++;
	}
	char *key_end = s;
	while (brq_cfg_is_blank(*s)) {
		s++;
	}
	if (*s != '=') {
		goto bad_line;
	}
	*key_end  = '\0';
	char *val = parse_env_value(s + 1, &why);
	if (val == NULL) {
		brq_config_problem_add(L->p, "env file %s line %zu: %s", path, lineno, why);
		return;
	}
	if (strncmp(key, "BROOQ_", 6) == 0 && !is_known_var(key)) {
		brq_config_problem_add(L->p, "env file %s line %zu: unknown variable %s", path, lineno, key);
		return;
	}
	if (*n == *cap) {
		size_t            ncap = *cap == 0 ? 16 : *cap * 2;
		struct env_entry *ne   = realloc(*entries, ncap * sizeof(*ne));
		if (ne == NULL) {
			L->is_oom = true;
			return;
		}
		*entries = ne;
		*cap     = ncap;
	}
	char *k = strdup(key);
	char *v = strdup(val);
	if (k == NULL || v == NULL) {
		free(k);
		brq_cfg_free_secret(v);
		L->is_oom = true;
		return;
	}
	(*entries)[*n].key = k;
	(*entries)[*n].val = v;
	(*n)++;
	return;

bad_line:
	// The line is not shown: it may hold the DSN.
	brq_config_problem_add(L->p, "env file %s line %zu: expected KEY=VALUE", path, lineno);
}

void
brq_cfg_load_env_file(struct loader *L, const char *path)
{
	char  *buf = NULL;
	size_t len = 0;
	int    rc  = brq_cfg_read_small_file(path, ENV_FILE_MAX, &buf, &len);
	if (rc == -ENOMEM) {
		L->is_oom = true;
		return;
	}
	if (rc != 0) {
		brq_config_problem_add(L->p, "env file %s: %s", path,
				       rc == -EFBIG ? "larger than 1MiB" : strerror(-rc));
		return;
	}
	if (memchr(buf, '\0', len) != NULL) {
		brq_config_problem_add(L->p, "env file %s: contains a NUL byte", path);
		goto out;
	}
	struct env_entry *entries = NULL;
	size_t            n = 0, cap = 0;
	size_t            lineno = 0;
	for (char *line = buf; line != NULL;) {
		char *nl = strchr(line, '\n');
		if (nl != NULL) {
			*nl = '\0';
		}
		parse_env_line(L, path, ++lineno, line, &entries, &n, &cap);
		line = nl != NULL ? nl + 1 : NULL;
	}
	L->src.file   = entries;
	L->src.n_file = n;
out:
	sodium_memzero(buf, len);
	free(buf);
}

// Value of `name`: the lookup first, then the env file. Empty counts as unset.
const char *
brq_cfg_src_get(const struct source *src, const char *name)
{
	const char *v = src->lookup(name, src->lookup_arg);
	if (v != NULL && v[0] != '\0') {
		return v;
	}
	for (size_t i = src->n_file; i-- > 0;) {
		if (strcmp(src->file[i].key, name) == 0) {
			v = src->file[i].val;
			return v[0] != '\0' ? v : NULL;
		}
	}
	return NULL;
}
