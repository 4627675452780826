// SPDX-License-Identifier: MIT
// Fuzz target: the gateway's configuration loader (gateway/config*.c): the env-file
// parser (systemd EnvironmentFile= syntax) and brq_config_load_from() with a lookup
// table standing in for the environment. Beyond "no crash, no leak, no UB" it checks:
//   * the verdict is 0 with no problems and a configuration inside every documented
//     range, or BRQ_EINVAL with at least one problem and a zeroed configuration;
//   * every problem is one non-empty line without control characters;
//   * problems never depend on the DSN secret: when the input reads a DSN file, the
//     load runs twice with two different secrets and must report exactly the same.
//
// Input: the env file's bytes, optionally followed by "\0\0" and NAME=VALUE lines
// (newline-separated) that the lookup returns and the environment check reads.
//
// Files: only a private temporary directory ($TMPDIR or /tmp, brooq-fuzz-config.*,
// removed at exit) holding the env file and two fake credentials directories
// (a "dsn" file and token files that hold no token). The input cannot name
// other files: CREDENTIALS_DIRECTORY and BROOQ_DSN_FILE, whenever the input mentions
// them, are answered by the lookup (which wins over the env file) with those
// directories, and the token files the configuration lists are never opened here.
#include "fuzz.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "text.h"

#define MAX_VARS 64

// The two secrets are valid DSNs of the same shape: only their bytes differ.
static const char *const SECRET[2] = {"host=/nonexistent dbname=brooq password=fuzz-secret-AAAA\n",
				      "host=/nonexistent dbname=brooq password=fuzz-secret-BBBB\n"};

static char root[PATH_MAX];        // the private directory
static char env_path[PATH_MAX];    // the env file, rewritten for every input
static char creds[2][PATH_MAX];    // credentials directories, one per secret
static char dsn_path[2][PATH_MAX]; // their "dsn" files

// What the lookup answers for one load.
typedef struct fuzz_env {
	char  *names[MAX_VARS];
	char  *values[MAX_VARS];
	int    n;
	bool   pin_creds;  // the input mentions CREDENTIALS_DIRECTORY
	bool   pin_dsn;    // the input mentions DSN_FILE
	int    variant;    // which secret: 0 or 1
	size_t file_lines; // lines of the env file ('\n' count + 1)
} fuzz_env;

static void
write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(len == 0 || write(fd, data, len) == (ssize_t) len);
	FUZZ_CHECK(close(fd) == 0);
}

// out = dir/leaf (out has PATH_MAX bytes).
static void
join(char *out, const char *dir, const char *leaf)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", dir, leaf);
	FUZZ_CHECK(n > 0 && n < PATH_MAX);
}

static void
cleanup(void)
{
	const char *files[] = {"dsn", "worker-token-1", "worker-tokenz.txt", "admin-token"};
	char        p[PATH_MAX];
	for (int v = 0; v < 2; v++) {
		for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
			join(p, creds[v], files[i]);
			unlink(p);
		}
		join(p, creds[v], "admin-token-dir");
		rmdir(p);
		rmdir(creds[v]);
	}
	unlink(env_path);
	rmdir(root);
}

static void
setup_once(void)
{
	static bool done;
	const char *tmp = getenv("TMPDIR");

	if (done) {
		return;
	}
	done = true;
	FUZZ_CHECK(snprintf(root, sizeof root, "%s/brooq-fuzz-config.XXXXXX",
			    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp") < (int) sizeof root);
	FUZZ_CHECK(mkdtemp(root) != NULL);
	join(env_path, root, "gateway.env");
	for (int v = 0; v < 2; v++) {
		char p[PATH_MAX];
		join(creds[v], root, v == 0 ? "creds0" : "creds1");
		FUZZ_CHECK(mkdir(creds[v], 0700) == 0);
		join(dsn_path[v], creds[v], "dsn");
		write_file(dsn_path[v], SECRET[v], strlen(SECRET[v]));
		// Found by the credentials scan: three regular files, and a directory it skips.
		join(p, creds[v], "worker-token-1");
		write_file(p, "fuzz: not a token\n", 18);
		join(p, creds[v], "worker-tokenz.txt");
		write_file(p, "fuzz: not a token\n", 18);
		join(p, creds[v], "admin-token");
		write_file(p, "fuzz: not a token\n", 18);
		join(p, creds[v], "admin-token-dir");
		FUZZ_CHECK(mkdir(p, 0700) == 0);
	}
	atexit(cleanup);
}

static const char *
fuzz_lookup(const char *name, void *arg)
{
	const fuzz_env *e = arg;
	if (strcmp(name, "CREDENTIALS_DIRECTORY") == 0) {
		return e->pin_creds ? creds[e->variant] : NULL;
	}
	if (strcmp(name, "BROOQ_DSN_FILE") == 0 && e->pin_dsn) {
		return dsn_path[e->variant];
	}
	for (int i = 0; i < e->n; i++) {
		if (strcmp(e->names[i], name) == 0) {
			return e->values[i];
		}
	}
	return NULL;
}

// ---- What a loaded configuration guarantees (gateway/config/config.h) ----------------------

#define MS_S 1000ull
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)
#define KIB  1024ull
#define GIB  (1024ull * 1024 * KIB)

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static void
check_paths(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(list[i]);
		FUZZ_CHECK(len > 0 && strchr(list[i], ',') == NULL);
		FUZZ_CHECK(!is_blank(list[i][0]) && !is_blank(list[i][len - 1]));
		for (size_t k = 0; k < i; k++) {
			FUZZ_CHECK(strcmp(list[i], list[k]) != 0);
		}
	}
}

static void
check_overrides(const brq_config *c)
{
	FUZZ_CHECK(c->n_topic_overrides <= BRQ_CONFIG_MAX_TOPIC_OVERRIDES);
	for (size_t i = 0; i < c->n_topic_overrides; i++) {
		const brq_topic_override *o = &c->topic_overrides[i];
		uint32_t                  att;
		uint64_t                  base, max, lease;
		FUZZ_CHECK(brq_topic_valid(o->topic, strlen(o->topic)));
		FUZZ_CHECK(o->has_max_attempts || o->has_backoff_base || o->has_backoff_max || o->has_lease);
		for (size_t k = 0; k < i; k++) {
			FUZZ_CHECK(strcmp(o->topic, c->topic_overrides[k].topic) != 0);
		}
		brq_config_topic_settings(c, o->topic, &att, &base, &max, &lease);
		FUZZ_CHECK(att >= 1 && att <= 1000);
		FUZZ_CHECK(base >= 1 && base <= MS_D && max >= 1 && max <= 7 * MS_D && max >= base);
		FUZZ_CHECK(lease >= MS_S && lease <= MS_D);
		FUZZ_CHECK(!o->has_lease || lease == o->lease_ms);
	}
}

static void
check_config(const brq_config *c)
{
	FUZZ_CHECK(c->dsn != NULL && c->dsn[0] != '\0');
	FUZZ_CHECK(c->listen != NULL &&
		   (strncmp(c->listen, "ipc://", 6) == 0 || strncmp(c->listen, "tcp://", 6) == 0 ||
		    strncmp(c->listen, "tls+tcp://", 10) == 0));
	FUZZ_CHECK(c->ipc_mode <= 0777);
	FUZZ_CHECK(c->pool_size >= 1 && c->pool_size <= 256);
	FUZZ_CHECK(c->lease_ms >= MS_S && c->lease_ms <= MS_D);
	FUZZ_CHECK(c->backoff_base_ms >= 1 && c->backoff_base_ms <= MS_D);
	FUZZ_CHECK(c->backoff_max_ms <= 7 * MS_D && c->backoff_max_ms >= c->backoff_base_ms);
	FUZZ_CHECK(c->max_attempts >= 1 && c->max_attempts <= 1000);
	FUZZ_CHECK(c->n_worker_token_files + c->n_admin_token_files >= 1);
	check_paths(c->worker_token_files, c->n_worker_token_files);
	check_paths(c->admin_token_files, c->n_admin_token_files);
	FUZZ_CHECK(c->max_batch >= 1 && c->max_batch <= 10000);
	FUZZ_CHECK(c->max_payload_bytes >= 1 && c->max_payload_bytes <= c->max_request_bytes);
	FUZZ_CHECK(c->max_request_bytes >= KIB && c->max_request_bytes <= GIB);
	FUZZ_CHECK(c->max_wait_ms <= MS_H && c->max_waiters <= 100000);
	FUZZ_CHECK(c->poll_interval_ms >= 10 && c->poll_interval_ms <= 10 * MS_M);
	FUZZ_CHECK(c->reaper_interval_ms >= 100 && c->reaper_interval_ms <= MS_D);
	FUZZ_CHECK(c->retention_ttl_ms <= 3650 * MS_D);
	FUZZ_CHECK(c->retention_interval_ms >= MS_S && c->retention_interval_ms <= MS_D);
	FUZZ_CHECK(c->retention_batch >= 1 && c->retention_batch <= 100000);
	FUZZ_CHECK(c->retention_max_batches >= 1 && c->retention_max_batches <= 100000);
	if (c->http_enabled) {
		FUZZ_CHECK(c->http_host != NULL && c->http_host[0] != '\0' && c->http_port >= 1);
		FUZZ_CHECK(c->http_allow_nonloopback || brq_config_host_is_loopback(c->http_host));
	} else {
		FUZZ_CHECK(c->http_host == NULL && c->http_port == 0);
	}
	FUZZ_CHECK(c->selfprobe_interval_ms == 0 ||
		   (c->selfprobe_interval_ms >= 100 && c->selfprobe_interval_ms <= 10 * MS_M));
	FUZZ_CHECK(c->log_level >= BRQ_LOG_LVL_DEBUG && c->log_level <= BRQ_LOG_LVL_ERROR);
	FUZZ_CHECK(c->shutdown_grace_ms <= MS_H);
	check_overrides(c);
}

// A problem about a line of the env file names a line the file has.
static void
check_line_number(const char *line, const fuzz_env *e)
{
	char   prefix[PATH_MAX + 32];
	size_t n = (size_t) snprintf(prefix, sizeof prefix, "env file %s line ", env_path);
	FUZZ_CHECK(n < sizeof prefix);
	if (strncmp(line, prefix, n) != 0) {
		return;
	}
	char              *end;
	unsigned long long at = strtoull(line + n, &end, 10);
	FUZZ_CHECK(end != line + n && strncmp(end, ": ", 2) == 0);
	FUZZ_CHECK(at >= 1 && at <= e->file_lines);
}

static void
check_problems(int rc, const brq_config *cfg, const brq_config_problems *p, const fuzz_env *e)
{
	static const brq_config zero;
	FUZZ_CHECK(rc == 0 || rc == BRQ_EINVAL);
	FUZZ_CHECK(!p->is_oom);
	if (rc == 0) {
		FUZZ_CHECK(p->count == 0);
		check_config(cfg);
	} else {
		FUZZ_CHECK(p->count >= 1);
		FUZZ_CHECK(memcmp(cfg, &zero, sizeof zero) == 0);
	}
	for (size_t i = 0; i < p->count; i++) {
		FUZZ_CHECK(p->lines[i][0] != '\0');
		for (const char *c = p->lines[i]; *c != '\0'; c++) {
			FUZZ_CHECK((unsigned char) *c >= 0x20 && *c != 0x7f);
		}
		check_line_number(p->lines[i], e);
	}
}

// Splits the lookup part into NAME=VALUE entries (copied into buf; lines without '='
// are kept for the environment check only). Fills envp (NULL-terminated).
static void
parse_vars(fuzz_env *e, char *buf, char **envp)
{
	int   n_env = 0;
	char *save  = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line != NULL && n_env < MAX_VARS;
	     line       = strtok_r(NULL, "\n", &save)) {
		envp[n_env++] = line;
	}
	envp[n_env] = NULL;
	// The lookup's table: split copies, so that envp keeps the whole strings.
	for (int i = 0; i < n_env; i++) {
		char *eq = strchr(envp[i], '=');
		if (eq == NULL) {
			continue;
		}
		e->names[e->n]  = strndup(envp[i], (size_t) (eq - envp[i]));
		e->values[e->n] = eq + 1;
		FUZZ_CHECK(e->names[e->n] != NULL);
		e->n++;
	}
}

static bool
contains(const uint8_t *data, size_t size, const char *word)
{
	size_t n = strlen(word);
	for (size_t i = 0; i + n <= size; i++) {
		if (memcmp(data + i, word, n) == 0) {
			return true;
		}
	}
	return false;
}

static int
load(fuzz_env *e, int variant, bool has_file, char **envp, brq_config *cfg, brq_config_problems *p)
{
	brq_config_sources src = {
		.env_file   = has_file ? env_path : NULL,
		.lookup     = fuzz_lookup,
		.lookup_arg = e,
		.envp       = envp,
	};
	e->variant = variant;
	int rc     = brq_config_load_from(cfg, &src, p);
	check_problems(rc, cfg, p, e);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = NULL;
	for (size_t i = 0; i + 1 < size && sep == NULL; i++) {
		sep = data[i] == 0 && data[i + 1] == 0 ? data + i : NULL;
	}
	size_t   n_file = sep != NULL ? (size_t) (sep - data) : size;
	fuzz_env e      = {.n = 0};
	char    *envp[MAX_VARS + 1];
	char    *vars = NULL;

	setup_once();
	e.pin_creds = contains(data, size, "CREDENTIALS_DIRECTORY");
	e.pin_dsn   = contains(data, size, "DSN_FILE");
	write_file(env_path, data, n_file);
	e.file_lines = 1;
	for (size_t i = 0; i < n_file; i++) {
		e.file_lines += data[i] == '\n';
	}
	if (sep != NULL) {
		size_t n_vars = size - n_file - 2;
		vars          = malloc(n_vars + 1);
		FUZZ_CHECK(vars != NULL);
		memcpy(vars, sep + 2, n_vars);
		vars[n_vars] = '\0';
		parse_vars(&e, vars, envp);
	} else {
		envp[0] = NULL;
	}

	// No env file at all when its part is empty (an empty file is the same as none).
	bool                has_file = n_file > 0;
	brq_config          cfg[2];
	brq_config_problems p[2];
	int                 rc = load(&e, 0, has_file, envp, &cfg[0], &p[0]);
	if (e.pin_creds || e.pin_dsn) {
		// A DSN file may have been read: the other secret must change nothing reported.
		int rc1 = load(&e, 1, has_file, envp, &cfg[1], &p[1]);
		FUZZ_CHECK(rc1 == rc && p[1].count == p[0].count);
		for (size_t i = 0; i < p[0].count; i++) {
			FUZZ_CHECK(strcmp(p[0].lines[i], p[1].lines[i]) == 0);
		}
		brq_config_fini(&cfg[1]);
		brq_config_problems_fini(&p[1]);
	}
	brq_config_fini(&cfg[0]);
	brq_config_problems_fini(&p[0]);
	for (int i = 0; i < e.n; i++) {
		free(e.names[i]);
	}
	free(vars);
	return 0;
}
