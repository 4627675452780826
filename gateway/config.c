// SPDX-License-Identifier: MIT
// Gateway configuration: parses BROOQ_* settings from the environment and an env file and reports every problem at once.
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sodium.h>

#define MS_PER_S 1000ull
#define MS_PER_M (60ull * MS_PER_S)
#define MS_PER_H (60ull * MS_PER_M)
#define MS_PER_D (24ull * MS_PER_H)

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

// Env files and DSN files larger than this are refused (they are small text files).
#define ENV_FILE_MAX (1024 * 1024)
#define DSN_FILE_MAX (64 * 1024)

#define DEFAULT_LISTEN "ipc:///run/brooq/gateway.sock"
#define DEFAULT_HTTP_HOST "127.0.0.1"
#define DEFAULT_HTTP_PORT 8090
#define REAPER_MIN_DEFAULT_MS (5 * MS_PER_S)

// Every variable this module reads; an env file naming another BROOQ_* key is an error.
static const char *const known_vars[] = {
	"BROOQ_DSN", "BROOQ_DSN_FILE", "BROOQ_LISTEN", "BROOQ_IPC_MODE", "BROOQ_POOL_SIZE",
	"BROOQ_LEASE", "BROOQ_BACKOFF_BASE", "BROOQ_BACKOFF_MAX", "BROOQ_MAX_ATTEMPTS",
	"BROOQ_WORKER_TOKEN_FILES", "BROOQ_ADMIN_TOKEN_FILES", "BROOQ_MAX_BATCH",
	"BROOQ_MAX_PAYLOAD", "BROOQ_MAX_REQUEST", "BROOQ_MAX_WAIT", "BROOQ_MAX_WAITERS",
	"BROOQ_POLL_INTERVAL", "BROOQ_REAPER_INTERVAL", "BROOQ_RETENTION_TTL",
	"BROOQ_RETENTION_INTERVAL", "BROOQ_RETENTION_BATCH", "BROOQ_RETENTION_MAX_BATCHES",
	"BROOQ_HTTP_LISTEN", "BROOQ_HTTP_ALLOW_NONLOOPBACK", "BROOQ_LOG_LEVEL",
	"BROOQ_SHUTDOWN_GRACE", "BROOQ_TOPIC_OVERRIDES",
};

// Ranges shared by the global variables and the per-topic overrides.
#define LEASE_MIN_MS MS_PER_S
#define LEASE_MAX_MS MS_PER_D
#define BACKOFF_BASE_MIN_MS 1ull
#define BACKOFF_BASE_MAX_MS MS_PER_D
#define BACKOFF_MAX_MIN_MS 1ull
#define BACKOFF_MAX_MAX_MS (7 * MS_PER_D)
#define MAX_ATTEMPTS_MIN 1
#define MAX_ATTEMPTS_MAX 1000

struct env_entry {
	char *key;
	char *val; // may be a secret: wiped before free
};

// Where values come from: the lookup first, then the env file (last line wins).
struct source {
	brq_config_getenv_fn lookup;
	void *lookup_arg;
	struct env_entry *file;
	size_t n_file;
};

struct loader {
	struct source src;
	struct brq_config_problems *p;
	bool is_oom;
};

// Result of reading one variable.
enum got { GOT_UNSET = 0, GOT_OK = 1, GOT_BAD = -1 };

static const char *
env_getenv(const char *name, void *arg)
{
	(void) arg;
	return getenv(name);
}

static void
free_secret(char *s)
{
	if (s != NULL) {
		sodium_memzero(s, strlen(s));
		free(s);
	}
}

// --- problems ---------------------------------------------------------------------

void
brq_config_problems_init(struct brq_config_problems *p)
{
	memset(p, 0, sizeof(*p));
}

void
brq_config_problems_fini(struct brq_config_problems *p)
{
	if (p == NULL) {
		return;
	}
	for (size_t i = 0; i < p->count; i++) {
		free(p->lines[i]);
	}
	free(p->lines);
	memset(p, 0, sizeof(*p));
}

void
brq_config_problem_add(struct brq_config_problems *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->is_oom = true;
		return;
	}
	if (p->count == p->cap) {
		size_t ncap = p->cap == 0 ? 8 : p->cap * 2;
		char **nl = realloc(p->lines, ncap * sizeof(*nl));
		if (nl == NULL) {
			p->is_oom = true;
			return;
		}
		p->lines = nl;
		p->cap = ncap;
	}
	char *line = malloc((size_t) n + 1);
	if (line == NULL) {
		p->is_oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, (size_t) n + 1, fmt, ap);
	va_end(ap);
	// One problem is one line: a path with a newline in it must not forge another.
	for (char *c = line; *c != '\0'; c++) {
		if ((unsigned char) *c < 0x20 || *c == 0x7f) {
			*c = '?';
		}
	}
	p->lines[p->count++] = line;
}

// --- value parsers ----------------------------------------------------------------

// Parses leading decimal digits of s into *v. Returns the number of digits (0 if s
// does not start with a digit) or -1 on overflow.
static int
parse_digits(const char *s, uint64_t *v)
{
	uint64_t acc = 0;
	int n = 0;
	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		unsigned d = (unsigned) (s[n] - '0');
		if (acc > (UINT64_MAX - d) / 10) {
			return -1;
		}
		acc = acc * 10 + d;
	}
	*v = acc;
	return n;
}

struct unit {
	const char *name;
	uint64_t factor;
};

static const struct unit duration_units[] = {
	{"ms", 1}, {"s", MS_PER_S}, {"m", MS_PER_M}, {"h", MS_PER_H}, {"d", MS_PER_D},
};

static const struct unit size_units[] = {
	{"B", 1}, {"KiB", KIB}, {"MiB", MIB}, {"GiB", GIB},
};

// <digits><unit> or bare "0". Shared by durations and sizes.
static int
parse_with_unit(const char *s, const struct unit *units, size_t n_units, uint64_t *out,
    const char **why, const char *what)
{
	uint64_t v;
	if (s == NULL || s[0] == '\0') {
		*why = "empty value";
		return -EINVAL;
	}
	int nd = parse_digits(s, &v);
	if (nd < 0) {
		*why = "value too large";
		return -EINVAL;
	}
	if (nd == 0) {
		*why = what;
		return -EINVAL;
	}
	const char *u = s + nd;
	if (*u == '\0') {
		if (v == 0) {
			*out = 0;
			return 0;
		}
		*why = units == duration_units ? "duration needs a unit (e.g. 120s)"
		                               : "size needs a unit (e.g. 64KiB)";
		return -EINVAL;
	}
	for (size_t i = 0; i < n_units; i++) {
		if (strcmp(u, units[i].name) == 0) {
			if (v > UINT64_MAX / units[i].factor) {
				*why = "value too large";
				return -EINVAL;
			}
			*out = v * units[i].factor;
			return 0;
		}
	}
	*why = units == duration_units ? "unknown unit or trailing characters (use ms, s, m, h or d)"
	                               : "unknown unit or trailing characters (use B, KiB, MiB or GiB)";
	return -EINVAL;
}

int
brq_config_parse_duration_ms(const char *s, uint64_t *out, const char **why)
{
	return parse_with_unit(s, duration_units, sizeof(duration_units) / sizeof(duration_units[0]),
	    out, why, "not a duration (e.g. 1500ms, 120s, 2m, 1h, 30d)");
}

int
brq_config_parse_size(const char *s, uint64_t *out, const char **why)
{
	return parse_with_unit(s, size_units, sizeof(size_units) / sizeof(size_units[0]), out, why,
	    "not a size (e.g. 512B, 64KiB, 16MiB)");
}

int
brq_config_parse_uint(const char *s, uint64_t *out, const char **why)
{
	uint64_t v;
	if (s == NULL || s[0] == '\0') {
		*why = "empty value";
		return -EINVAL;
	}
	int nd = parse_digits(s, &v);
	if (nd < 0) {
		*why = "value too large";
		return -EINVAL;
	}
	if (nd == 0 || s[nd] != '\0') {
		*why = "not a non-negative decimal integer";
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int
brq_config_parse_bool(const char *s, bool *out, const char **why)
{
	static const char *const yes[] = {"true", "1", "yes"};
	static const char *const no[] = {"false", "0", "no"};
	for (size_t i = 0; s != NULL && i < 3; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	*why = "not a boolean (use true/false, 1/0 or yes/no)";
	return -EINVAL;
}

bool
brq_config_topic_is_valid(const char *s, size_t len)
{
	if (len == 0 || len > BRQ_CONFIG_TOPIC_MAX) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (i > 0 && (c == '.' || c == '_' || c == '-'));
		if (!ok) {
			return false;
		}
	}
	return true;
}

// Renders a duration with the largest unit that divides it ("90s", "2m", "1500ms").
static const char *
fmt_duration(char *buf, size_t cap, uint64_t ms)
{
	for (size_t i = sizeof(duration_units) / sizeof(duration_units[0]); i-- > 0;) {
		if (ms != 0 && ms % duration_units[i].factor == 0) {
			snprintf(buf, cap, "%llu%s", (unsigned long long) (ms / duration_units[i].factor),
			    duration_units[i].name);
			return buf;
		}
	}
	snprintf(buf, cap, "%llums", (unsigned long long) ms);
	return buf;
}

static const char *
fmt_size(char *buf, size_t cap, uint64_t b)
{
	for (size_t i = sizeof(size_units) / sizeof(size_units[0]); i-- > 0;) {
		if (b != 0 && b % size_units[i].factor == 0) {
			snprintf(buf, cap, "%llu%s", (unsigned long long) (b / size_units[i].factor),
			    size_units[i].name);
			return buf;
		}
	}
	snprintf(buf, cap, "%lluB", (unsigned long long) b);
	return buf;
}

// --- env file ---------------------------------------------------------------------

static bool
is_blank(char c)
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
static int
read_small_file(const char *path, size_t max, char **out, size_t *len)
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
	size_t n = 0;
	int rc = 0;
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
	*out = buf;
	*len = n;
	return 0;
}

static void
env_entries_free(struct env_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].key);
		free_secret(e[i].val);
	}
	free(e);
}

// Parses the value part of a line in place: returns its start (NUL-terminated) or
// NULL with *why set. `s` points after '=' and ends at the line's NUL.
static char *
parse_env_value(char *s, const char **why)
{
	while (is_blank(*s)) {
		s++;
	}
	if (*s == '\'' || *s == '"') {
		char q = *s;
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
			if (!is_blank(*r)) {
				*why = "unexpected characters after the closing quote";
				return NULL;
			}
		}
		return s;
	}
	char *end = s + strlen(s);
	while (end > s && is_blank(end[-1])) {
		*--end = '\0';
	}
	return s;
}

// Parses one line (NUL-terminated, modified in place) and appends an entry.
static void
parse_env_line(struct loader *L, const char *path, size_t lineno, char *line,
    struct env_entry **entries, size_t *n, size_t *cap)
{
	const char *why = NULL;
	char *s = line;
	while (is_blank(*s)) {
		s++;
	}
	if (*s == '\0' || *s == '#') {
		return;
	}
	if (strncmp(s, "export", 6) == 0 && is_blank(s[6])) {
		s += 6;
		while (is_blank(*s)) {
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
	while (is_blank(*s)) {
		s++;
	}
	if (*s != '=') {
		goto bad_line;
	}
	*key_end = '\0';
	char *val = parse_env_value(s + 1, &why);
	if (val == NULL) {
		brq_config_problem_add(L->p, "env file %s line %zu: %s", path, lineno, why);
		return;
	}
	if (strncmp(key, "BROOQ_", 6) == 0 && !is_known_var(key)) {
		brq_config_problem_add(L->p, "env file %s line %zu: unknown variable %s", path,
		    lineno, key);
		return;
	}
	if (*n == *cap) {
		size_t ncap = *cap == 0 ? 16 : *cap * 2;
		struct env_entry *ne = realloc(*entries, ncap * sizeof(*ne));
		if (ne == NULL) {
			L->is_oom = true;
			return;
		}
		*entries = ne;
		*cap = ncap;
	}
	char *k = strdup(key);
	char *v = strdup(val);
	if (k == NULL || v == NULL) {
		free(k);
		free_secret(v);
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

static void
load_env_file(struct loader *L, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_small_file(path, ENV_FILE_MAX, &buf, &len);
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
	size_t n = 0, cap = 0;
	size_t lineno = 0;
	for (char *line = buf; line != NULL;) {
		char *nl = strchr(line, '\n');
		if (nl != NULL) {
			*nl = '\0';
		}
		parse_env_line(L, path, ++lineno, line, &entries, &n, &cap);
		line = nl != NULL ? nl + 1 : NULL;
	}
	L->src.file = entries;
	L->src.n_file = n;
out:
	sodium_memzero(buf, len);
	free(buf);
}

// Value of `name`: the lookup first, then the env file. Empty counts as unset.
static const char *
src_get(const struct source *src, const char *name)
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

// --- typed getters: each leaves *out alone unless it returns GOT_OK ----------------

static enum got
get_duration(struct loader *L, const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *s = src_get(&L->src, name);
	const char *why;
	uint64_t v;
	char a[32], b[32];
	if (s == NULL) {
		return GOT_UNSET;
	}
	if (brq_config_parse_duration_ms(s, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s", name, why);
		return GOT_BAD;
	}
	if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: must be between %s and %s", name,
		    min == 0 ? "0" : fmt_duration(a, sizeof(a), min), fmt_duration(b, sizeof(b), max));
		return GOT_BAD;
	}
	*out = v;
	return GOT_OK;
}

static enum got
get_size(struct loader *L, const char *name, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *s = src_get(&L->src, name);
	const char *why;
	uint64_t v;
	char a[32], b[32];
	if (s == NULL) {
		return GOT_UNSET;
	}
	if (brq_config_parse_size(s, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s", name, why);
		return GOT_BAD;
	}
	if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: must be between %s and %s", name,
		    fmt_size(a, sizeof(a), min), fmt_size(b, sizeof(b), max));
		return GOT_BAD;
	}
	*out = v;
	return GOT_OK;
}

static enum got
get_u32(struct loader *L, const char *name, uint32_t min, uint32_t max, uint32_t *out)
{
	const char *s = src_get(&L->src, name);
	const char *why;
	uint64_t v;
	if (s == NULL) {
		return GOT_UNSET;
	}
	if (brq_config_parse_uint(s, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s", name, why);
		return GOT_BAD;
	}
	if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: must be between %u and %u", name, min, max);
		return GOT_BAD;
	}
	*out = (uint32_t) v;
	return GOT_OK;
}

static void
get_ipc_mode(struct loader *L, uint32_t *out)
{
	const char *s = src_get(&L->src, "BROOQ_IPC_MODE");
	if (s == NULL) {
		return;
	}
	uint32_t v = 0;
	size_t i = 0;
	for (; s[i] >= '0' && s[i] <= '7'; i++) {
		v = v * 8 + (uint32_t) (s[i] - '0');
		if (v > 0777) {
			brq_config_problem_add(L->p, "BROOQ_IPC_MODE: must be at most 0777");
			return;
		}
	}
	if (i == 0 || s[i] != '\0') {
		brq_config_problem_add(L->p, "BROOQ_IPC_MODE: must be an octal mode such as 0660");
		return;
	}
	*out = v;
}

static void
get_listen(struct loader *L, struct brq_config *cfg)
{
	static const char *const schemes[] = {"ipc://", "tcp://", "tls+tcp://"};
	const char *s = src_get(&L->src, "BROOQ_LISTEN");
	if (s == NULL) {
		return;
	}
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i]);
		if (strncmp(s, schemes[i], n) == 0) {
			if (s[n] == '\0') {
				brq_config_problem_add(L->p, "BROOQ_LISTEN: address missing after %s",
				    schemes[i]);
				return;
			}
			char *dup = strdup(s);
			if (dup == NULL) {
				L->is_oom = true;
				return;
			}
			free(cfg->listen);
			cfg->listen = dup;
			return;
		}
	}
	brq_config_problem_add(L->p, "BROOQ_LISTEN: must start with ipc://, tcp:// or tls+tcp://");
}

bool
brq_config_host_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (strcasecmp(host, "localhost") == 0) {
		return true;
	}
	if (inet_pton(AF_INET, host, &a4) == 1) {
		return (ntohl(a4.s_addr) >> 24) == 127;
	}
	if (inet_pton(AF_INET6, host, &a6) == 1) {
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		    (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	}
	return false;
}

static bool
is_hostname(const char *h)
{
	if (*h == '\0' || strlen(h) > 253) {
		return false;
	}
	for (; *h != '\0'; h++) {
		if (!isalnum((unsigned char) *h) && *h != '.' && *h != '-') {
			return false;
		}
	}
	return true;
}

// BROOQ_HTTP_LISTEN and BROOQ_HTTP_ALLOW_NONLOOPBACK together.
static void
get_http(struct loader *L, struct brq_config *cfg)
{
	const char *why;
	const char *allow = src_get(&L->src, "BROOQ_HTTP_ALLOW_NONLOOPBACK");
	if (allow != NULL && brq_config_parse_bool(allow, &cfg->http_allow_nonloopback, &why) != 0) {
		brq_config_problem_add(L->p, "BROOQ_HTTP_ALLOW_NONLOOPBACK: %s", why);
	}
	const char *s = src_get(&L->src, "BROOQ_HTTP_LISTEN");
	if (s == NULL) {
		s = DEFAULT_HTTP_HOST ":" "8090";
	}
	if (strcmp(s, "off") == 0) {
		cfg->http_enabled = false;
		free(cfg->http_host);
		cfg->http_host = NULL;
		cfg->http_port = 0;
		return;
	}
	char host[256];
	const char *port;
	bool is_v6 = false;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':' || (size_t) (rb - s - 1) >= sizeof(host)) {
			brq_config_problem_add(L->p, "BROOQ_HTTP_LISTEN: expected [ipv6]:port");
			return;
		}
		memcpy(host, s + 1, (size_t) (rb - s - 1));
		host[rb - s - 1] = '\0';
		port = rb + 2;
		is_v6 = true;
	} else {
		const char *colon = strrchr(s, ':');
		if (colon == NULL || (size_t) (colon - s) >= sizeof(host)) {
			brq_config_problem_add(L->p, "BROOQ_HTTP_LISTEN: expected host:port or off");
			return;
		}
		memcpy(host, s, (size_t) (colon - s));
		host[colon - s] = '\0';
		port = colon + 1;
		if (strchr(host, ':') != NULL) {
			brq_config_problem_add(L->p,
			    "BROOQ_HTTP_LISTEN: IPv6 addresses need brackets, e.g. [::1]:8090");
			return;
		}
	}
	struct in6_addr a6;
	if (is_v6 ? inet_pton(AF_INET6, host, &a6) != 1 : !is_hostname(host)) {
		brq_config_problem_add(L->p, "BROOQ_HTTP_LISTEN: host is not a valid %s",
		    is_v6 ? "IPv6 address" : "host name or IPv4 address");
		return;
	}
	uint64_t p;
	if (brq_config_parse_uint(port, &p, &why) != 0 || p < 1 || p > 65535) {
		brq_config_problem_add(L->p, "BROOQ_HTTP_LISTEN: port must be between 1 and 65535");
		return;
	}
	if (!brq_config_host_is_loopback(host) && !cfg->http_allow_nonloopback) {
		// Host names other than localhost count as non-loopback: we do not resolve.
		brq_config_problem_add(L->p,
		    "BROOQ_HTTP_LISTEN: host %s is not loopback; set "
		    "BROOQ_HTTP_ALLOW_NONLOOPBACK=true to serve /metrics beyond this host",
		    host);
		return;
	}
	char *dup = strdup(host);
	if (dup == NULL) {
		L->is_oom = true;
		return;
	}
	free(cfg->http_host);
	cfg->http_host = dup;
	cfg->http_port = (uint16_t) p;
	cfg->http_enabled = true;
}

// --- DSN ----------------------------------------------------------------------------

// Checks the DSN's syntax with libpq, wiping libpq's copies of the values.
static bool
dsn_is_valid(const char *dsn)
{
	char *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(dsn, &err);
	if (err != NULL) {
		// The message can quote part of the string (a password): wipe, never print.
		sodium_memzero(err, strlen(err));
		PQfreemem(err);
	}
	if (opts == NULL) {
		return false;
	}
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
		if (o->val != NULL) {
			sodium_memzero(o->val, strlen(o->val));
		}
	}
	PQconninfoFree(opts);
	return true;
}

// Reads a DSN file (trimmed of surrounding whitespace) into *out. `var` and `path`
// name the source in problems; the content never appears in them.
static void
read_dsn_file(struct loader *L, const char *var, const char *path, char **out)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_small_file(path, DSN_FILE_MAX, &buf, &len);
	if (rc == -ENOMEM) {
		L->is_oom = true;
		return;
	}
	if (rc != 0) {
		brq_config_problem_add(L->p, "%s: cannot read %s: %s", var, path,
		    rc == -EFBIG ? "larger than 64KiB" : strerror(-rc));
		return;
	}
	size_t start = 0, end = len;
	while (start < end && isspace((unsigned char) buf[start])) {
		start++;
	}
	while (end > start && isspace((unsigned char) buf[end - 1])) {
		end--;
	}
	if (memchr(buf, '\0', len) != NULL) {
		brq_config_problem_add(L->p, "%s: %s contains a NUL byte", var, path);
	} else if (start == end) {
		brq_config_problem_add(L->p, "%s: %s is empty", var, path);
	} else {
		char *dsn = strndup(buf + start, end - start);
		if (dsn == NULL) {
			L->is_oom = true;
		}
		*out = dsn;
	}
	sodium_memzero(buf, len);
	free(buf);
}

static void
get_dsn(struct loader *L, struct brq_config *cfg)
{
	const char *dsn = src_get(&L->src, "BROOQ_DSN");
	const char *file = src_get(&L->src, "BROOQ_DSN_FILE");
	const char *creds = src_get(&L->src, "CREDENTIALS_DIRECTORY");
	const char *var = "BROOQ_DSN";
	char path[4096];

	if (dsn != NULL && file != NULL) {
		brq_config_problem_add(L->p, "BROOQ_DSN: set either BROOQ_DSN or BROOQ_DSN_FILE, not both");
		return;
	}
	if (dsn != NULL) {
		cfg->dsn = strdup(dsn);
		if (cfg->dsn == NULL) {
			L->is_oom = true;
			return;
		}
	} else if (file != NULL) {
		var = "BROOQ_DSN_FILE";
		read_dsn_file(L, var, file, &cfg->dsn);
	} else if (creds != NULL &&
	    snprintf(path, sizeof(path), "%s/dsn", creds) < (int) sizeof(path) &&
	    access(path, F_OK) == 0) {
		read_dsn_file(L, var, path, &cfg->dsn);
	} else {
		brq_config_problem_add(L->p,
		    "BROOQ_DSN: required (set BROOQ_DSN or BROOQ_DSN_FILE, or provide the "
		    "credential \"dsn\" via $CREDENTIALS_DIRECTORY)");
		return;
	}
	if (cfg->dsn != NULL && !dsn_is_valid(cfg->dsn)) {
		brq_config_problem_add(L->p,
		    "%s: not a valid libpq connection string or URI (value not shown)", var);
	}
}

// --- token file lists ---------------------------------------------------------------

// Appends a copy of path[0, len) to the list unless already present.
static void
list_add(struct loader *L, char ***list, size_t *n, const char *path, size_t len)
{
	for (size_t i = 0; i < *n; i++) {
		if (strlen((*list)[i]) == len && memcmp((*list)[i], path, len) == 0) {
			return;
		}
	}
	char **nl = realloc(*list, (*n + 1) * sizeof(*nl));
	if (nl == NULL) {
		L->is_oom = true;
		return;
	}
	*list = nl;
	char *dup = strndup(path, len);
	if (dup == NULL) {
		L->is_oom = true;
		return;
	}
	(*list)[(*n)++] = dup;
}

static void
get_path_list(struct loader *L, const char *name, char ***list, size_t *n)
{
	const char *s = src_get(&L->src, name);
	if (s == NULL) {
		return;
	}
	for (;;) {
		const char *comma = strchr(s, ',');
		const char *end = comma != NULL ? comma : s + strlen(s);
		const char *a = s;
		while (a < end && is_blank(*a)) {
			a++;
		}
		const char *b = end;
		while (b > a && is_blank(b[-1])) {
			b--;
		}
		if (a == b) {
			brq_config_problem_add(L->p, "%s: empty path in the list", name);
		} else {
			list_add(L, list, n, a, (size_t) (b - a));
		}
		if (comma == NULL) {
			break;
		}
		s = comma + 1;
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

// Adds $CREDENTIALS_DIRECTORY/{worker,admin}-token* regular files, in name order.
static void
scan_credentials(struct loader *L, struct brq_config *cfg)
{
	const char *dir = src_get(&L->src, "CREDENTIALS_DIRECTORY");
	if (dir == NULL) {
		return;
	}
	DIR *d = opendir(dir);
	if (d == NULL) {
		brq_config_problem_add(L->p, "CREDENTIALS_DIRECTORY: cannot open %s: %s", dir,
		    strerror(errno));
		return;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "worker-token", 12) != 0 &&
		    strncmp(de->d_name, "admin-token", 11) != 0) {
			continue;
		}
		struct stat st;
		size_t plen = strlen(dir) + 1 + strlen(de->d_name) + 1;
		char *path = malloc(plen);
		if (path == NULL) {
			L->is_oom = true;
			break;
		}
		snprintf(path, plen, "%s/%s", dir, de->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(path);
			continue;
		}
		char **nn = realloc(names, (n + 1) * sizeof(*nn));
		if (nn == NULL) {
			free(path);
			L->is_oom = true;
			break;
		}
		names = nn;
		names[n++] = path;
	}
	closedir(d);
	if (n > 0) {
		qsort(names, n, sizeof(*names), cmp_str);
	}
	size_t dlen = strlen(dir) + 1;
	for (size_t i = 0; i < n; i++) {
		bool is_admin = strncmp(names[i] + dlen, "admin-token", 11) == 0;
		if (is_admin) {
			list_add(L, &cfg->admin_token_files, &cfg->n_admin_token_files, names[i],
			    strlen(names[i]));
		} else {
			list_add(L, &cfg->worker_token_files, &cfg->n_worker_token_files, names[i],
			    strlen(names[i]));
		}
		free(names[i]);
	}
	free(names);
}

// --- topic overrides ----------------------------------------------------------------

// Trims blanks in place on [*a, *b).
static void
trim_span(const char **a, const char **b)
{
	while (*a < *b && is_blank(**a)) {
		(*a)++;
	}
	while (*b > *a && is_blank((*b)[-1])) {
		(*b)--;
	}
}

// Parses one "key=value" of a topic entry into o. `label` names the entry in problems.
static void
parse_override_kv(struct loader *L, const char *label, const char *a, const char *b,
    struct brq_topic_override *o)
{
	static const char var[] = "BROOQ_TOPIC_OVERRIDES";
	char val[64];
	char lo[32], hi[32];
	const char *why;
	uint64_t v;

	trim_span(&a, &b);
	if (a == b) {
		brq_config_problem_add(L->p, "%s: %s: empty setting", var, label);
		return;
	}
	const char *eq = memchr(a, '=', (size_t) (b - a));
	if (eq == NULL) {
		brq_config_problem_add(L->p, "%s: %s: expected key=value", var, label);
		return;
	}
	const char *ka = a, *kb = eq, *va = eq + 1, *vb = b;
	trim_span(&ka, &kb);
	trim_span(&va, &vb);
	size_t klen = (size_t) (kb - ka);
	if ((size_t) (vb - va) >= sizeof(val)) {
		brq_config_problem_add(L->p, "%s: %s: value too long", var, label);
		return;
	}
	memcpy(val, va, (size_t) (vb - va));
	val[vb - va] = '\0';

	bool *has;
	const char *key;
	if (klen == 12 && memcmp(ka, "max_attempts", 12) == 0) {
		has = &o->has_max_attempts;
		key = "max_attempts";
	} else if (klen == 12 && memcmp(ka, "backoff_base", 12) == 0) {
		has = &o->has_backoff_base;
		key = "backoff_base";
	} else if (klen == 11 && memcmp(ka, "backoff_max", 11) == 0) {
		has = &o->has_backoff_max;
		key = "backoff_max";
	} else if (klen == 5 && memcmp(ka, "lease", 5) == 0) {
		has = &o->has_lease;
		key = "lease";
	} else {
		brq_config_problem_add(L->p,
		    "%s: %s: unknown key (use max_attempts, backoff_base, backoff_max, lease)", var,
		    label);
		return;
	}
	if (*has) {
		brq_config_problem_add(L->p, "%s: %s: %s given twice", var, label, key);
		return;
	}
	if (val[0] == '\0') {
		brq_config_problem_add(L->p, "%s: %s: %s: empty value", var, label, key);
		return;
	}
	if (has == &o->has_max_attempts) {
		if (brq_config_parse_uint(val, &v, &why) != 0) {
			brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
		} else if (v < MAX_ATTEMPTS_MIN || v > MAX_ATTEMPTS_MAX) {
			brq_config_problem_add(L->p, "%s: %s: %s: must be between %d and %d", var,
			    label, key, MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX);
		} else {
			o->max_attempts = (uint32_t) v;
			*has = true;
		}
		return;
	}
	uint64_t min, max, *out;
	if (has == &o->has_backoff_base) {
		min = BACKOFF_BASE_MIN_MS, max = BACKOFF_BASE_MAX_MS, out = &o->backoff_base_ms;
	} else if (has == &o->has_backoff_max) {
		min = BACKOFF_MAX_MIN_MS, max = BACKOFF_MAX_MAX_MS, out = &o->backoff_max_ms;
	} else {
		min = LEASE_MIN_MS, max = LEASE_MAX_MS, out = &o->lease_ms;
	}
	if (brq_config_parse_duration_ms(val, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
	} else if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: %s: %s: must be between %s and %s", var, label,
		    key, fmt_duration(lo, sizeof(lo), min), fmt_duration(hi, sizeof(hi), max));
	} else {
		*out = v;
		*has = true;
	}
}

// Parses one "topic:k=v,k=v" entry [a, b) into a new array element.
static void
parse_override_entry(struct loader *L, struct brq_config *cfg, size_t index, const char *a,
    const char *b)
{
	static const char var[] = "BROOQ_TOPIC_OVERRIDES";
	char label[BRQ_CONFIG_TOPIC_MAX + 32];

	trim_span(&a, &b);
	if (a == b) {
		brq_config_problem_add(L->p, "%s: entry %zu is empty", var, index);
		return;
	}
	const char *colon = memchr(a, ':', (size_t) (b - a));
	if (colon == NULL) {
		brq_config_problem_add(L->p, "%s: entry %zu: expected topic:key=value,...", var, index);
		return;
	}
	const char *ta = a, *tb = colon;
	trim_span(&ta, &tb);
	if (!brq_config_topic_is_valid(ta, (size_t) (tb - ta))) {
		brq_config_problem_add(L->p,
		    "%s: entry %zu: topic must match [a-z0-9][a-z0-9._-]* and be at most %d bytes",
		    var, index, BRQ_CONFIG_TOPIC_MAX);
		return;
	}
	struct brq_topic_override o;
	memset(&o, 0, sizeof(o));
	memcpy(o.topic, ta, (size_t) (tb - ta));
	snprintf(label, sizeof(label), "%s", o.topic);
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		if (strcmp(cfg->topic_overrides[i].topic, o.topic) == 0) {
			brq_config_problem_add(L->p, "%s: %s: topic listed twice", var, label);
			return;
		}
	}
	const char *s = colon + 1;
	const char *sa = s, *sb = b;
	trim_span(&sa, &sb);
	if (sa == sb) {
		brq_config_problem_add(L->p, "%s: %s: no settings", var, label);
		return;
	}
	size_t before = L->p->count;
	for (;;) {
		const char *comma = memchr(s, ',', (size_t) (b - s));
		const char *end = comma != NULL ? comma : b;
		parse_override_kv(L, label, s, end, &o);
		if (comma == NULL) {
			break;
		}
		s = comma + 1;
	}
	if (L->p->count != before) {
		return;
	}
	if (cfg->n_topic_overrides == BRQ_CONFIG_MAX_TOPIC_OVERRIDES) {
		brq_config_problem_add(L->p, "%s: more than %d topics", var,
		    BRQ_CONFIG_MAX_TOPIC_OVERRIDES);
		return;
	}
	struct brq_topic_override *no =
	    realloc(cfg->topic_overrides, (cfg->n_topic_overrides + 1) * sizeof(*no));
	if (no == NULL) {
		L->is_oom = true;
		return;
	}
	cfg->topic_overrides = no;
	cfg->topic_overrides[cfg->n_topic_overrides++] = o;
}

static void
get_topic_overrides(struct loader *L, struct brq_config *cfg)
{
	const char *s = src_get(&L->src, "BROOQ_TOPIC_OVERRIDES");
	if (s == NULL) {
		return;
	}
	size_t index = 1;
	for (;;) {
		const char *semi = strchr(s, ';');
		const char *end = semi != NULL ? semi : s + strlen(s);
		parse_override_entry(L, cfg, index++, s, end);
		if (semi == NULL) {
			break;
		}
		s = semi + 1;
	}
}

// --- public -------------------------------------------------------------------------

int
brq_config_init_defaults(struct brq_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen = strdup(DEFAULT_LISTEN);
	cfg->http_host = strdup(DEFAULT_HTTP_HOST);
	if (cfg->listen == NULL || cfg->http_host == NULL) {
		brq_config_fini(cfg);
		return -ENOMEM;
	}
	cfg->ipc_mode = 0660;
	cfg->pool_size = 4;
	cfg->lease_ms = 2 * MS_PER_M;
	cfg->backoff_base_ms = MS_PER_S;
	cfg->backoff_max_ms = MS_PER_M;
	cfg->max_attempts = 5;
	cfg->max_batch = 1000;
	cfg->max_payload_bytes = MIB;
	cfg->max_request_bytes = 16 * MIB;
	cfg->max_wait_ms = 5 * MS_PER_M;
	cfg->max_waiters = 1000;
	cfg->poll_interval_ms = MS_PER_S;
	cfg->reaper_interval_ms = REAPER_MIN_DEFAULT_MS < cfg->lease_ms / 4 ? cfg->lease_ms / 4
	                                                                    : REAPER_MIN_DEFAULT_MS;
	cfg->retention_ttl_ms = 30 * MS_PER_D;
	cfg->retention_interval_ms = MS_PER_M;
	cfg->retention_batch = 1000;
	cfg->retention_max_batches = 100;
	cfg->http_enabled = true;
	cfg->http_port = DEFAULT_HTTP_PORT;
	cfg->http_allow_nonloopback = false;
	cfg->log_level = BRQ_LOG_LVL_INFO;
	cfg->shutdown_grace_ms = 10 * MS_PER_S;
	return 0;
}

int
brq_config_load(struct brq_config *cfg, const char *env_file, brq_config_getenv_fn lookup,
    void *lookup_arg, struct brq_config_problems *problems)
{
	struct loader L;
	memset(&L, 0, sizeof(L));
	L.src.lookup = lookup != NULL ? lookup : env_getenv;
	L.src.lookup_arg = lookup_arg;
	L.p = problems;
	brq_config_problems_init(problems);

	if (brq_config_init_defaults(cfg) != 0) {
		return -ENOMEM;
	}
	if (env_file != NULL) {
		load_env_file(&L, env_file);
	}

	get_dsn(&L, cfg);
	get_listen(&L, cfg);
	get_ipc_mode(&L, &cfg->ipc_mode);
	get_u32(&L, "BROOQ_POOL_SIZE", 1, 256, &cfg->pool_size);

	get_duration(&L, "BROOQ_LEASE", LEASE_MIN_MS, LEASE_MAX_MS, &cfg->lease_ms);
	enum got base = get_duration(&L, "BROOQ_BACKOFF_BASE", BACKOFF_BASE_MIN_MS,
	    BACKOFF_BASE_MAX_MS, &cfg->backoff_base_ms);
	enum got bmax = get_duration(&L, "BROOQ_BACKOFF_MAX", BACKOFF_MAX_MIN_MS,
	    BACKOFF_MAX_MAX_MS, &cfg->backoff_max_ms);
	if (base != GOT_BAD && bmax != GOT_BAD && cfg->backoff_max_ms < cfg->backoff_base_ms) {
		brq_config_problem_add(L.p, "BROOQ_BACKOFF_MAX: must be at least BROOQ_BACKOFF_BASE");
	}
	get_u32(&L, "BROOQ_MAX_ATTEMPTS", MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX, &cfg->max_attempts);

	get_path_list(&L, "BROOQ_WORKER_TOKEN_FILES", &cfg->worker_token_files,
	    &cfg->n_worker_token_files);
	get_path_list(&L, "BROOQ_ADMIN_TOKEN_FILES", &cfg->admin_token_files,
	    &cfg->n_admin_token_files);
	scan_credentials(&L, cfg);
	if (cfg->n_worker_token_files + cfg->n_admin_token_files == 0) {
		brq_config_problem_add(L.p,
		    "BROOQ_WORKER_TOKEN_FILES: no token configured (set BROOQ_WORKER_TOKEN_FILES "
		    "or BROOQ_ADMIN_TOKEN_FILES, or provide worker-token*/admin-token* credentials)");
	}

	get_u32(&L, "BROOQ_MAX_BATCH", 1, 10000, &cfg->max_batch);
	enum got payload = get_size(&L, "BROOQ_MAX_PAYLOAD", 1, GIB, &cfg->max_payload_bytes);
	enum got request = get_size(&L, "BROOQ_MAX_REQUEST", KIB, GIB, &cfg->max_request_bytes);
	if (payload != GOT_BAD && request != GOT_BAD &&
	    cfg->max_request_bytes < cfg->max_payload_bytes) {
		brq_config_problem_add(L.p, "BROOQ_MAX_REQUEST: must be at least BROOQ_MAX_PAYLOAD");
	}
	get_duration(&L, "BROOQ_MAX_WAIT", 0, MS_PER_H, &cfg->max_wait_ms);
	get_u32(&L, "BROOQ_MAX_WAITERS", 0, 100000, &cfg->max_waiters);
	get_duration(&L, "BROOQ_POLL_INTERVAL", 10, 10 * MS_PER_M, &cfg->poll_interval_ms);

	get_topic_overrides(&L, cfg);
	for (size_t i = 0; i < cfg->n_topic_overrides && base != GOT_BAD && bmax != GOT_BAD; i++) {
		const struct brq_topic_override *o = &cfg->topic_overrides[i];
		uint64_t eb = o->has_backoff_base ? o->backoff_base_ms : cfg->backoff_base_ms;
		uint64_t em = o->has_backoff_max ? o->backoff_max_ms : cfg->backoff_max_ms;
		if (em < eb) {
			brq_config_problem_add(L.p,
			    "BROOQ_TOPIC_OVERRIDES: %s: backoff_max must be at least backoff_base "
			    "(inherited values included)",
			    o->topic);
		}
	}

	// Default reaper period follows the shortest lease, so that short-lease topics
	// are not left waiting for a period sized for the global lease.
	uint64_t min_lease = cfg->lease_ms;
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		if (cfg->topic_overrides[i].has_lease && cfg->topic_overrides[i].lease_ms < min_lease) {
			min_lease = cfg->topic_overrides[i].lease_ms;
		}
	}
	cfg->reaper_interval_ms =
	    min_lease / 4 > REAPER_MIN_DEFAULT_MS ? min_lease / 4 : REAPER_MIN_DEFAULT_MS;
	get_duration(&L, "BROOQ_REAPER_INTERVAL", 100, MS_PER_D, &cfg->reaper_interval_ms);

	get_duration(&L, "BROOQ_RETENTION_TTL", 0, 3650 * MS_PER_D, &cfg->retention_ttl_ms);
	get_duration(&L, "BROOQ_RETENTION_INTERVAL", MS_PER_S, MS_PER_D,
	    &cfg->retention_interval_ms);
	get_u32(&L, "BROOQ_RETENTION_BATCH", 1, 100000, &cfg->retention_batch);
	get_u32(&L, "BROOQ_RETENTION_MAX_BATCHES", 1, 100000, &cfg->retention_max_batches);

	get_http(&L, cfg);

	const char *lvl = src_get(&L.src, "BROOQ_LOG_LEVEL");
	if (lvl != NULL && brq_log_parse_level(lvl, &cfg->log_level) != 0) {
		brq_config_problem_add(L.p, "BROOQ_LOG_LEVEL: must be debug, info, warn or error");
	}
	get_duration(&L, "BROOQ_SHUTDOWN_GRACE", 0, MS_PER_H, &cfg->shutdown_grace_ms);

	env_entries_free(L.src.file, L.src.n_file);
	if (L.is_oom || problems->is_oom) {
		brq_config_fini(cfg);
		return -ENOMEM;
	}
	if (problems->count > 0) {
		brq_config_fini(cfg);
		return -EINVAL;
	}
	return 0;
}

static void
free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(list[i]);
	}
	free(list);
}

void
brq_config_fini(struct brq_config *cfg)
{
	if (cfg == NULL) {
		return;
	}
	free_secret(cfg->dsn);
	free(cfg->listen);
	free(cfg->http_host);
	free_list(cfg->worker_token_files, cfg->n_worker_token_files);
	free_list(cfg->admin_token_files, cfg->n_admin_token_files);
	free(cfg->topic_overrides);
	memset(cfg, 0, sizeof(*cfg));
}

void
brq_config_topic_settings(const struct brq_config *cfg, const char *topic,
    uint32_t *max_attempts, uint64_t *backoff_base_ms, uint64_t *backoff_max_ms,
    uint64_t *lease_ms)
{
	const struct brq_topic_override *o = NULL;
	for (size_t i = 0; topic != NULL && i < cfg->n_topic_overrides; i++) {
		if (strcmp(cfg->topic_overrides[i].topic, topic) == 0) {
			o = &cfg->topic_overrides[i];
			break;
		}
	}
	if (max_attempts != NULL) {
		*max_attempts = o != NULL && o->has_max_attempts ? o->max_attempts : cfg->max_attempts;
	}
	if (backoff_base_ms != NULL) {
		*backoff_base_ms =
		    o != NULL && o->has_backoff_base ? o->backoff_base_ms : cfg->backoff_base_ms;
	}
	if (backoff_max_ms != NULL) {
		*backoff_max_ms =
		    o != NULL && o->has_backoff_max ? o->backoff_max_ms : cfg->backoff_max_ms;
	}
	if (lease_ms != NULL) {
		*lease_ms = o != NULL && o->has_lease ? o->lease_ms : cfg->lease_ms;
	}
}
