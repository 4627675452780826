// SPDX-License-Identifier: MIT
// The env file of the gateway configuration (systemd's EnvironmentFile= syntax), the environment's BROOQ_*
// names, and where each variable's value comes from.
#include "config.h"
#include "brq_units.h"
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

// Every variable this module reads; an env file or environment naming another BROOQ_*
// key is an error (but see foreign_vars).
static const char *const known_vars[] = {
	"BROOQ_DSN",
	"BROOQ_DSN_FILE",
	"BROOQ_LISTEN",
	"BROOQ_IPC_MODE",
	"BROOQ_TLS_CERT_FILE",
	"BROOQ_TLS_KEY_FILE",
	"BROOQ_TLS_CA_FILE",
	"BROOQ_TLS_CLIENT_AUTH",
	"BROOQ_POOL_SIZE",
	"BROOQ_LEASE",
	"BROOQ_BACKOFF_BASE",
	"BROOQ_BACKOFF_MAX",
	"BROOQ_MAX_ATTEMPTS",
	"BROOQ_ATTEMPT_TIMEOUT",
	"BROOQ_MAX_EXECUTION_TIME",
	"BROOQ_WORKER_TOKEN_FILES",
	"BROOQ_ADMIN_TOKEN_FILES",
	"BROOQ_MAX_BATCH",
	"BROOQ_MAX_PAYLOAD",
	"BROOQ_MAX_REQUEST",
	"BROOQ_MAX_INFLIGHT_BYTES",
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
	"BROOQ_HTTP_HEADER_TIMEOUT",
	"BROOQ_HTTP_IDLE_TIMEOUT",
	"BROOQ_HTTP_MAX_CONNECTIONS",
	"BROOQ_SELFPROBE_INTERVAL",
	"BROOQ_LOG_LEVEL",
	"BROOQ_SHUTDOWN_GRACE",
	"BROOQ_TOPIC_OVERRIDES",
	"BROOQ_SCHEDULE_TICK",
	"BROOQ_SCHEDULES",
	"BROOQ_HTTP_TLS_CERT_FILE",
	"BROOQ_HTTP_TLS_KEY_FILE",
	"BROOQ_CONSOLE",
	"BROOQ_CONSOLE_SESSION_TTL",
};

void
brq_cfg_free_secret(char *s)
{
	if (s != NULL) {
		sodium_memzero(s, strlen(s));
		free(s);
	}
}

// Names brooq's other programs and its test harness read; they may be set in the same
// shell or CI job, so the gateway does not call them unknown.
static const char *const foreign_vars[] = {
	"BROOQ_URL", "BROOQ_TOKEN_FILE", "BROOQ_MIGRATIONS_DIR", "BROOQ_TLS_SERVER_NAME", "BROOQ_SOURCE_DIR",
};
static const char *const foreign_prefixes[] = {"BROOQ_TEST_", "BROOQ_BENCH_"};

bool
brq_cfg_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static bool
is_in(const char *key, size_t len, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(list[i]) == len && memcmp(key, list[i], len) == 0) {
			return true;
		}
	}
	return false;
}

static bool
is_known_var(const char *key, size_t len)
{
	return is_in(key, len, known_vars, sizeof(known_vars) / sizeof(known_vars[0]));
}

static bool
is_foreign_var(const char *key, size_t len)
{
	for (size_t i = 0; i < sizeof(foreign_prefixes) / sizeof(foreign_prefixes[0]); i++) {
		if (len > strlen(foreign_prefixes[i]) &&
		    strncmp(key, foreign_prefixes[i], strlen(foreign_prefixes[i])) == 0) {
			return true;
		}
	}
	return is_in(key, len, foreign_vars, sizeof(foreign_vars) / sizeof(foreign_vars[0]));
}

void
brq_cfg_check_environ(struct loader *L, char *const *envp)
{
	for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
		const char *e   = envp[i];
		size_t      len = strcspn(e, "=");
		if (strncmp(e, "BROOQ_", 6) == 0 && !is_known_var(e, len) && !is_foreign_var(e, len)) {
			brq_config_problem_add(L->p, "environment: unknown variable %.*s", (int) len, e);
		}
	}
}

int
brq_cfg_read_small_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return BRQ_EIO;
	}
	char *buf = malloc(max + 1);
	if (buf == NULL) {
		close(fd);
		return BRQ_ENOMEM;
	}
	size_t n = 0, sys_errno = 0;
	int    rc = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, max + 1 - n);
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0) {
			sys_errno = (size_t) errno;
			rc        = BRQ_EIO;
			break;
		}
		if (r == 0) {
			break;
		}
		n += (size_t) r;
		if (n > max) {
			rc = BRQ_E2BIG;
			break;
		}
	}
	close(fd);
	if (rc != 0) {
		sodium_memzero(buf, n < max + 1 ? n : max + 1);
		free(buf);
		errno = (int) sys_errno;
		return rc;
	}
	buf[n] = '\0';
	*out   = buf;
	*len   = n;
	return 0;
}

bool
brq_cfg_read_file(struct loader *L, const char *var, const char *path, size_t max, char **out, size_t *len)
{
	int rc = brq_cfg_read_small_file(path, max, out, len);
	if (rc == BRQ_ENOMEM) {
		L->is_oom = true;
	} else if (rc != 0) {
		char        big[48], size[24];
		const char *why = strerror(errno);
		if (rc == BRQ_E2BIG) {
			snprintf(big, sizeof(big), "larger than %s", brq_fmt_size(size, sizeof(size), max));
			why = big;
		}
		if (var != NULL) {
			brq_config_problem_add(L->p, "%s: cannot read %s: %s", var, path, why);
		} else {
			brq_config_problem_add(L->p, "env file %s: %s", path, why);
		}
	}
	return rc == 0;
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

// --- env file: systemd's EnvironmentFile= syntax, one state per character ------------

enum env_state {
	PRE_KEY,     // line start: blanks, comment or key
	KEY,         // in the key, before '='
	PRE_VALUE,   // after '=' or a closing quote: blanks skipped
	VALUE,       // unquoted value
	VALUE_ESC,   // after '\' in an unquoted value
	SQUOTE,      // in '...'
	DQUOTE,      // in "..."
	DQUOTE_ESC,  // after '\' in "..."
	COMMENT,     // in a '#' or ';' line
	COMMENT_ESC, // after '\' in a comment
};

#define NO_BLANK SIZE_MAX

struct env_parser {
	struct loader    *L;
	const char       *path;
	enum env_state    st;
	char             *key, *val;        // buffers as large as the file
	size_t            n_key, key_blank; // key_blank: start of trailing blanks, or NO_BLANK
	size_t            n_val, val_blank;
	size_t            line;  // current line, 1-based ('\n' counted)
	size_t            start; // line where the current assignment started
	struct env_entry *entries;
	size_t            n, cap;
};

static bool
is_nl(char c)
{
	return c == '\n' || c == '\r';
}

static bool
is_ws(char c)
{
	return c == ' ' || c == '\t' || is_nl(c);
}

static void
env_problem(struct env_parser *P, size_t line, const char *why)
{
	brq_config_problem_add(P->L->p, "env file %s line %zu: %s", P->path, line, why);
}

// Valid UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
static bool
is_utf8(const unsigned char *s)
{
	while (*s != '\0') {
		size_t   n  = *s < 0x80          ? 0
			   : (*s & 0xe0) == 0xc0 ? 1
			   : (*s & 0xf0) == 0xe0 ? 2
			   : (*s & 0xf8) == 0xf0 ? 3
						 : 4;
		uint32_t cp = n == 0 ? *s : *s & (0x3f >> n);
		if (n == 4) {
			return false;
		}
		for (size_t i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80) {
				return false;
			}
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
		if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
			return false;
		}
		s += n + 1;
	}
	return true;
}

static bool
is_env_name(const char *k)
{
	if (!(isalpha((unsigned char) *k) || *k == '_')) {
		return false;
	}
	for (k++; *k != '\0'; k++) {
		if (!(isalnum((unsigned char) *k) || *k == '_')) {
			return false;
		}
	}
	return true;
}

// Checks the assignment just read and appends it. Neither part is ever quoted in a
// problem but a valid BROOQ_* name (the rest may be part of the DSN).
static void
env_push(struct env_parser *P)
{
	P->key[P->key_blank != NO_BLANK ? P->key_blank : P->n_key] = '\0';
	P->val[P->n_val]                                           = '\0';
	if (!is_env_name(P->key)) {
		bool is_export = strncmp(P->key, "export", 6) == 0 && is_ws(P->key[6]);
		env_problem(P, P->start,
			    is_export ? "\"export\" is not EnvironmentFile= syntax (systemd drops the line); "
					"remove it"
				      : "invalid variable name (letters, digits and '_', not starting with a "
					"digit)");
		return;
	}
	if (!is_utf8((const unsigned char *) P->val)) {
		env_problem(P, P->start, "value is not valid UTF-8 (systemd drops such a line)");
		return;
	}
	if (strncmp(P->key, "BROOQ_", 6) == 0 && !is_known_var(P->key, strlen(P->key))) {
		brq_config_problem_add(P->L->p, "env file %s line %zu: unknown variable %s", P->path,
				       P->start, P->key);
		return;
	}
	if (P->n == P->cap) {
		size_t            ncap = P->cap == 0 ? 16 : P->cap * 2;
		struct env_entry *ne   = realloc(P->entries, ncap * sizeof(*ne));
		if (ne == NULL) {
			P->L->is_oom = true;
			return;
		}
		P->entries = ne;
		P->cap     = ncap;
	}
	char *k = strdup(P->key);
	char *v = strdup(P->val);
	if (k == NULL || v == NULL) {
		free(k);
		brq_cfg_free_secret(v);
		P->L->is_oom = true;
		return;
	}
	P->entries[P->n].key   = k;
	P->entries[P->n++].val = v;
}

static void
val_add(struct env_parser *P, char c)
{
	P->val[P->n_val++] = c;
}

// Appends c to an unquoted key or value (buf, *n bytes), keeping *blank the start of its
// trailing blanks (NO_BLANK: none), which are not part of it if the line ends there.
static void
add_unquoted(char *buf, size_t *n, size_t *blank, char c)
{
	if (!is_ws(c)) {
		*blank = NO_BLANK;
	} else if (*blank == NO_BLANK) {
		*blank = *n;
	}
	buf[(*n)++] = c;
}

// States before a value: line start, key, comments.
static void
step_key(struct env_parser *P, char c)
{
	switch (P->st) {
	case PRE_KEY:
		if (c == '#' || c == ';') {
			P->st = COMMENT;
		} else if (!is_ws(c)) {
			P->st              = KEY;
			P->start           = P->line;
			P->n_key           = 0;
			P->key_blank       = NO_BLANK;
			P->key[P->n_key++] = c;
		}
		return;
	case KEY:
		if (is_nl(c)) {
			env_problem(P, P->start, "expected KEY=VALUE");
			P->st = PRE_KEY;
		} else if (c == '=') {
			P->st        = PRE_VALUE;
			P->n_val     = 0;
			P->val_blank = NO_BLANK;
		} else {
			add_unquoted(P->key, &P->n_key, &P->key_blank, c);
		}
		return;
	case COMMENT: P->st = c == '\\' ? COMMENT_ESC : is_nl(c) ? PRE_KEY : COMMENT; return;
	case COMMENT_ESC:
		if (is_nl(c)) {
			env_problem(P, P->line,
				    "comment ends with a backslash: systemd before 254 continues the comment "
				    "onto the next line, later versions do not; remove the backslash");
		}
		P->st = is_nl(c) ? PRE_KEY : COMMENT;
		return;
	default: return;
	}
}

// States of a value.
static void
step_value(struct env_parser *P, char c)
{
	switch (P->st) {
	case PRE_VALUE:
		if (is_nl(c)) {
			env_push(P);
			P->st = PRE_KEY;
		} else if (c == '\'' || c == '"' || c == '\\') {
			P->st = c == '\'' ? SQUOTE : c == '"' ? DQUOTE : VALUE_ESC;
		} else if (!is_ws(c)) {
			P->st = VALUE;
			val_add(P, c);
		}
		return;
	case VALUE:
		if (is_nl(c)) {
			if (P->val_blank != NO_BLANK) {
				P->n_val = P->val_blank; // trailing blanks dropped
			}
			env_push(P);
			P->st = PRE_KEY;
		} else if (c == '\\') {
			P->st        = VALUE_ESC;
			P->val_blank = NO_BLANK;
		} else {
			add_unquoted(P->val, &P->n_val, &P->val_blank, c);
		}
		return;
	case VALUE_ESC:
		P->st = VALUE;
		if (!is_nl(c)) {
			val_add(P, c); // an escaped newline is a line continuation: dropped
		}
		return;
	case SQUOTE:
		if (c == '\'') {
			P->st = PRE_VALUE;
		} else {
			val_add(P, c);
		}
		return;
	case DQUOTE:
		if (c == '"' || c == '\\') {
			P->st = c == '"' ? PRE_VALUE : DQUOTE_ESC;
		} else {
			val_add(P, c);
		}
		return;
	case DQUOTE_ESC:
		P->st = DQUOTE;
		if (strchr("\"\\`$", c) != NULL) {
			val_add(P, c);
		} else if (c != '\n') {
			val_add(P, '\\'); // as a shell does: the backslash stays
			val_add(P, c);
		}
		return;
	default: step_key(P, c); return;
	}
}

// Runs the parser over buf[0, len) (no NUL inside) and stores the entries in L.
static void
parse_env_buf(struct loader *L, const char *path, const char *buf, size_t len)
{
	struct env_parser P = {.L = L, .path = path, .st = PRE_KEY, .line = 1};
	P.key               = malloc(len + 1);
	P.val               = malloc(len + 3); // DQUOTE_ESC may add two bytes for one
	if (P.key == NULL || P.val == NULL) {
		L->is_oom = true;
		goto out;
	}
	for (size_t i = 0; i < len; i++) {
		step_value(&P, buf[i]);
		P.line += buf[i] == '\n';
	}
	switch (P.st) {
	case PRE_VALUE:
	case VALUE:
	case VALUE_ESC: step_value(&P, '\n'); break; // the last line has no newline
	case KEY: env_problem(&P, P.start, "expected KEY=VALUE"); break;
	case SQUOTE:
	case DQUOTE:
	case DQUOTE_ESC: env_problem(&P, P.start, "unterminated quote"); break;
	default: break;
	}
	L->src.file   = P.entries;
	L->src.n_file = P.n;
	P.entries     = NULL;
out:
	if (P.val != NULL) {
		sodium_memzero(P.val, len + 3);
	}
	free(P.val);
	free(P.key);
}

void
brq_cfg_load_env_file(struct loader *L, const char *path)
{
	char  *buf = NULL;
	size_t len = 0;
	if (!brq_cfg_read_file(L, NULL, path, ENV_FILE_MAX, &buf, &len)) {
		return;
	}
	if (memchr(buf, '\0', len) != NULL) {
		brq_config_problem_add(L->p, "env file %s: contains a NUL byte", path);
	} else {
		parse_env_buf(L, path, buf, len);
	}
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
