// SPDX-License-Identifier: MIT
// Gateway configuration: parses BROOQ_* settings from the environment and an env file and reports every
// problem at once.
#include "config.h"
#include "brq_units.h" // durations, sizes, integers: the syntax brooqctl shares
#include "config_parse.h"
#include "store/store.h" // brq_db_dsn_valid: the DSN's syntax, checked by libpq
#include "text.h"        // proto: brq_topic_valid, the one topic rule

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

// Env files and DSN files larger than this are refused (they are small text files).
#define DSN_FILE_MAX (64 * 1024)

// What the "required" problems add about the unit's credentials (config_creds.c).
#define NO_UNIT_DSN    "; the unit loads it from " BRQ_UNIT_CREDENTIALS_DIR "/dsn, which does not exist"
#define NO_UNIT_TOKENS "; the unit loads them from " BRQ_UNIT_CREDENTIALS_DIR ", which does not exist"
#define UNIT_TOKENS    ": files in worker-tokens/ or admin-tokens/"

#define DEFAULT_LISTEN        "ipc:///run/brooq/gateway.sock"
#define DEFAULT_HTTP_HOST     "127.0.0.1"
#define DEFAULT_HTTP_PORT     8090
#define REAPER_MIN_DEFAULT_MS (5 * MS_PER_S)

extern char **environ; // POSIX: the process environment

static const char *
env_getenv(const char *name, void *arg)
{
	(void) arg;
	return getenv(name);
}

// Replaces *dst (owned) with a copy of s. False when out of memory (noted in L).
static bool
set_str(struct loader *L, char **dst, const char *s)
{
	char *dup = strdup(s);
	if (dup == NULL) {
		L->is_oom = true;
		return false;
	}
	free(*dst);
	*dst = dup;
	return true;
}

// --- typed getters: each leaves *out alone unless it returns GOT_OK ----------------

static void
get_ipc_mode(struct loader *L, uint32_t *out)
{
	const char *s = brq_cfg_src_get(&L->src, "BROOQ_IPC_MODE");
	if (s == NULL) {
		return;
	}
	uint32_t v = 0;
	size_t   i = 0;
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
get_listen(struct loader *L, brq_config *cfg)
{
	static const char *const schemes[] = {"ipc://", "tcp://", "tls+tcp://"};
	const char              *s         = brq_cfg_src_get(&L->src, "BROOQ_LISTEN");
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
			set_str(L, &cfg->listen, s);
			return;
		}
	}
	brq_config_problem_add(L->p, "BROOQ_LISTEN: must start with ipc://, tcp:// or tls+tcp://");
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
get_http(struct loader *L, brq_config *cfg)
{
	const char *why;
	const char *allow = brq_cfg_src_get(&L->src, "BROOQ_HTTP_ALLOW_NONLOOPBACK");
	if (allow != NULL && brq_config_parse_bool(allow, &cfg->http_allow_nonloopback, &why) != 0) {
		brq_config_problem_add(L->p, "BROOQ_HTTP_ALLOW_NONLOOPBACK: %s", why);
	}
	const char *s = brq_cfg_src_get(&L->src, "BROOQ_HTTP_LISTEN");
	if (s == NULL) {
		s = DEFAULT_HTTP_HOST ":"
				      "8090";
	}
	if (strcmp(s, "off") == 0) {
		cfg->http_enabled = false;
		free(cfg->http_host);
		cfg->http_host = NULL;
		cfg->http_port = 0;
		return;
	}
	char        host[256];
	const char *port;
	bool        is_v6 = false;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':' || (size_t) (rb - s - 1) >= sizeof(host)) {
			brq_config_problem_add(L->p, "BROOQ_HTTP_LISTEN: expected [ipv6]:port");
			return;
		}
		memcpy(host, s + 1, (size_t) (rb - s - 1));
		host[rb - s - 1] = '\0';
		port             = rb + 2;
		is_v6            = true;
	} else {
		const char *colon = strrchr(s, ':');
		if (colon == NULL || (size_t) (colon - s) >= sizeof(host)) {
			brq_config_problem_add(L->p, "BROOQ_HTTP_LISTEN: expected host:port or off");
			return;
		}
		memcpy(host, s, (size_t) (colon - s));
		host[colon - s] = '\0';
		port            = colon + 1;
		if (strchr(host, ':') != NULL) {
			brq_config_problem_add(
				L->p, "BROOQ_HTTP_LISTEN: IPv6 addresses need brackets, e.g. [::1]:8090");
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
	if (brq_parse_u64(port, &p, &why) != 0 || p < 1 || p > 65535) {
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
	if (!set_str(L, &cfg->http_host, host))
		return;
	cfg->http_port    = (uint16_t) p;
	cfg->http_enabled = true;
}

// --- DSN ----------------------------------------------------------------------------

// Reads a DSN file (trimmed of surrounding whitespace) into *out. `var` and `path`
// name the source in problems; the content never appears in them.
static void
read_dsn_file(struct loader *L, const char *var, const char *path, char **out)
{
	char  *buf = NULL;
	size_t len = 0;
	if (!brq_cfg_read_file(L, var, path, DSN_FILE_MAX, &buf, &len)) {
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
get_dsn(struct loader *L, brq_config *cfg)
{
	const char *dsn   = brq_cfg_src_get(&L->src, "BROOQ_DSN");
	const char *file  = brq_cfg_src_get(&L->src, "BROOQ_DSN_FILE");
	const char *creds = brq_cfg_creds_dir(L);
	const char *var   = "BROOQ_DSN";
	char        path[4096];

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
		set_str(L, &cfg->dsn_file, file);
		read_dsn_file(L, var, file, &cfg->dsn);
	} else if (creds != NULL && snprintf(path, sizeof(path), "%s/dsn", creds) < (int) sizeof(path) &&
		   access(path, F_OK) == 0) {
		read_dsn_file(L, var, path, &cfg->dsn);
	} else {
		// Read as the unit lays it out, the credentials' own check named the missing file.
		if (!L->is_unit_layout) {
			brq_config_problem_add(
				L->p,
				"BROOQ_DSN: required (set BROOQ_DSN or BROOQ_DSN_FILE, or provide the "
				"credential \"dsn\" via $CREDENTIALS_DIRECTORY%s)",
				L->is_unit_default_absent ? NO_UNIT_DSN : "");
		}
		return;
	}
	if (cfg->dsn != NULL && !brq_db_dsn_valid(cfg->dsn)) {
		brq_config_problem_add(
			L->p, "%s: not a valid libpq connection string or URI (value not shown)", var);
	}
}

// --- token file lists ---------------------------------------------------------------

void
brq_cfg_list_add(struct loader *L, char ***list, size_t *n, const char *path, size_t len)
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
	*list     = nl;
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
	const char *s = brq_cfg_src_get(&L->src, name);
	if (s == NULL) {
		return;
	}
	for (;;) {
		const char *comma = strchr(s, ',');
		const char *end   = comma != NULL ? comma : s + strlen(s);
		const char *a     = s;
		while (a < end && brq_cfg_is_blank(*a)) {
			a++;
		}
		const char *b = end;
		while (b > a && brq_cfg_is_blank(b[-1])) {
			b--;
		}
		if (a == b) {
			brq_config_problem_add(L->p, "%s: empty path in the list", name);
		} else {
			brq_cfg_list_add(L, list, n, a, (size_t) (b - a));
		}
		if (comma == NULL) {
			break;
		}
		s = comma + 1;
	}
}

// --- public -------------------------------------------------------------------------

int
brq_config_init_defaults(brq_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen    = strdup(DEFAULT_LISTEN);
	cfg->http_host = strdup(DEFAULT_HTTP_HOST);
	if (cfg->listen == NULL || cfg->http_host == NULL) {
		brq_config_fini(cfg);
		return BRQ_ENOMEM;
	}
	// The numbers (pool, lease, limits, intervals...) from their rows' defaults: the
	// table is the one place they are written. A request carries jobs of at most
	// max_payload (1 MiB): a few of them per request (max_request 4 MiB), not a bound an
	// unauthenticated peer can multiply by connections.
	brq_cfg_numeric_defaults(cfg);
	cfg->ipc_mode        = 0660;
	cfg->idle_timeout_ms = 10 * MS_PER_M; // max(10 min, BROOQ_MAX_WAIT + 1 min): the load sets it
	cfg->reaper_interval_ms =
		REAPER_MIN_DEFAULT_MS < cfg->lease_ms / 4 ? cfg->lease_ms / 4 : REAPER_MIN_DEFAULT_MS;
	cfg->http_enabled           = true;
	cfg->http_port              = DEFAULT_HTTP_PORT;
	cfg->http_allow_nonloopback = false;
	cfg->log_level              = BRQ_LOG_LVL_INFO;
	cfg->console_enabled        = true;
	return 0;
}

// Database, listener, pool, job defaults and token file lists. Returns whether both
// backoff values parsed (the per-topic check needs them).
static bool
load_core(struct loader *L, brq_config *cfg)
{
	get_dsn(L, cfg);
	get_listen(L, cfg);
	get_ipc_mode(L, &cfg->ipc_mode);
	brq_cfg_get_tls(L, cfg);
	brq_cfg_get_setting(L, BRQ_SET_POOL_SIZE, cfg);

	brq_cfg_get_setting(L, BRQ_SET_LEASE, cfg);
	enum got base = brq_cfg_get_setting(L, BRQ_SET_BACKOFF_BASE, cfg);
	enum got bmax = brq_cfg_get_setting(L, BRQ_SET_BACKOFF_MAX, cfg);
	if (base != GOT_BAD && bmax != GOT_BAD && cfg->backoff_max_ms < cfg->backoff_base_ms) {
		brq_config_problem_add(L->p, "BROOQ_BACKOFF_MAX: must be at least BROOQ_BACKOFF_BASE");
	}
	brq_cfg_get_setting(L, BRQ_SET_MAX_ATTEMPTS, cfg);
	brq_cfg_get_setting(L, BRQ_SET_MAX_LOST_LEASES, cfg);

	get_path_list(L, "BROOQ_WORKER_TOKEN_FILES", &cfg->worker_token_files, &cfg->n_worker_token_files);
	get_path_list(L, "BROOQ_ADMIN_TOKEN_FILES", &cfg->admin_token_files, &cfg->n_admin_token_files);
	brq_cfg_creds_scan_tokens(L, cfg);
	if (cfg->n_worker_token_files + cfg->n_admin_token_files == 0) {
		brq_config_problem_add(
			L->p,
			"BROOQ_WORKER_TOKEN_FILES: no token configured (set BROOQ_WORKER_TOKEN_FILES "
			"or BROOQ_ADMIN_TOKEN_FILES, or provide worker-token*/admin-token* credentials%s)",
			L->is_unit_layout                   ? UNIT_TOKENS
				: L->is_unit_default_absent ? NO_UNIT_TOKENS
							    : "");
	}
	return base != GOT_BAD && bmax != GOT_BAD;
}

// A timeout: 0 (none) or TIMEOUT_MIN_MS..TIMEOUT_MAX_MS (the row says 0..TIMEOUT_MAX_MS).
static enum got
get_timeout(struct loader *L, brq_setting_id id, brq_config *cfg, uint64_t *out)
{
	enum got g = brq_cfg_get_setting(L, id, cfg);
	if (g == GOT_OK && *out != 0 && *out < TIMEOUT_MIN_MS) {
		brq_config_problem_add(L->p, "%s: must be 0 (none) or 100ms..7d", brq_settings[id].name);
		return GOT_BAD;
	}
	return g;
}

// The attempt timeout and the maximum execution time. Returns whether both parsed
// (the per-topic check needs them).
static bool
get_timeouts(struct loader *L, brq_config *cfg)
{
	enum got at = get_timeout(L, BRQ_SET_ATTEMPT_TIMEOUT, cfg, &cfg->attempt_timeout_ms);
	enum got mx = get_timeout(L, BRQ_SET_MAX_EXECUTION_TIME, cfg, &cfg->max_execution_ms);
	if (at != GOT_BAD && mx != GOT_BAD && cfg->max_execution_ms != 0 &&
	    cfg->attempt_timeout_ms > cfg->max_execution_ms) {
		brq_config_problem_add(L->p,
				       "BROOQ_ATTEMPT_TIMEOUT: must not exceed BROOQ_MAX_EXECUTION_TIME");
	}
	return at != GOT_BAD && mx != GOT_BAD;
}

uint64_t
brq_config_recv_ceiling(const brq_config *cfg)
{
	return cfg->max_request_bytes + cfg->max_request_bytes / 4 + 4096;
}

uint64_t
brq_config_rx_reserve(const brq_config *cfg)
{
	uint64_t quarter = cfg->max_inflight_bytes / 4;
	uint64_t spare   = cfg->max_inflight_bytes - brq_config_recv_ceiling(cfg);
	return cfg->max_inflight_bytes < brq_config_recv_ceiling(cfg) ? 0 : quarter < spare ? quarter : spare;
}

// The connection timeouts. The idle timeout must outlast a long-poll: a claim waits
// up to BROOQ_MAX_WAIT for its reply, with nothing sent or received meanwhile, and then
// the claim itself runs (IDLE_MARGIN_MS for that at least; the default leaves 1m).
#define IDLE_MARGIN_MS (10 * MS_PER_S)
static void
get_conn_timeouts(struct loader *L, brq_config *cfg, enum got wait)
{
	brq_cfg_get_setting(L, BRQ_SET_HANDSHAKE_TIMEOUT, cfg);
	enum got recv = brq_cfg_get_setting(L, BRQ_SET_RECV_TIMEOUT, cfg);
	if (recv == GOT_OK && cfg->recv_timeout_ms != 0 && cfg->recv_timeout_ms < TIMEOUT_MIN_MS) {
		brq_config_problem_add(L->p, "BROOQ_RECV_TIMEOUT: must be 0 (none) or 100ms..1h");
	}
	if (wait == GOT_OK && cfg->max_wait_ms + MS_PER_M > cfg->idle_timeout_ms) {
		cfg->idle_timeout_ms = cfg->max_wait_ms + MS_PER_M; // the default follows
	}
	enum got idle = brq_cfg_get_setting(L, BRQ_SET_IDLE_TIMEOUT, cfg);
	if (idle != GOT_BAD && wait != GOT_BAD && cfg->idle_timeout_ms != 0 &&
	    cfg->idle_timeout_ms < cfg->max_wait_ms + IDLE_MARGIN_MS) {
		brq_config_problem_add(
			L->p,
			"BROOQ_IDLE_TIMEOUT: must be 0 (none) or at least BROOQ_MAX_WAIT + 10s "
			"(%llu ms): a long-poll's connection is quiet until its reply",
			(unsigned long long) (cfg->max_wait_ms + IDLE_MARGIN_MS));
	}
}

// Request limits, topic overrides, background work, HTTP, logging, shutdown.
static void
load_rest(struct loader *L, brq_config *cfg, bool has_backoff)
{
	brq_cfg_get_setting(L, BRQ_SET_MAX_BATCH, cfg);
	enum got payload = brq_cfg_get_setting(L, BRQ_SET_MAX_PAYLOAD, cfg);
	enum got request = brq_cfg_get_setting(L, BRQ_SET_MAX_REQUEST, cfg);
	if (payload != GOT_BAD && request != GOT_BAD && cfg->max_request_bytes < cfg->max_payload_bytes) {
		brq_config_problem_add(L->p, "BROOQ_MAX_REQUEST: must be at least BROOQ_MAX_PAYLOAD");
	}
	enum got inflight = brq_cfg_get_setting(L, BRQ_SET_MAX_INFLIGHT_BYTES, cfg);
	if (inflight != GOT_BAD && request != GOT_BAD &&
	    cfg->max_inflight_bytes < brq_config_recv_ceiling(cfg)) {
		brq_config_problem_add(L->p,
				       "BROOQ_MAX_INFLIGHT_BYTES: must hold one request of BROOQ_MAX_REQUEST "
				       "with its transport margin (%" PRIu64 " bytes)",
				       brq_config_recv_ceiling(cfg));
	}
	enum got wait = brq_cfg_get_setting(L, BRQ_SET_MAX_WAIT, cfg);
	get_conn_timeouts(L, cfg, wait);
	brq_cfg_get_setting(L, BRQ_SET_MAX_WAITERS, cfg);
	brq_cfg_get_setting(L, BRQ_SET_MAX_WATCHES, cfg);
	brq_cfg_get_setting(L, BRQ_SET_CONN_MAX_REQUESTS, cfg);
	brq_cfg_get_setting(L, BRQ_SET_CONN_MAX_REQUESTS_ANON, cfg);
	brq_cfg_get_setting(L, BRQ_SET_TOKEN_MAX_REQUESTS, cfg);
	brq_cfg_get_setting(L, BRQ_SET_SEND_TIMEOUT, cfg);
	brq_cfg_get_setting(L, BRQ_SET_POLL_INTERVAL, cfg);
	enum got probe = brq_cfg_get_setting(L, BRQ_SET_SELFPROBE_INTERVAL, cfg);
	if (probe == GOT_OK && cfg->selfprobe_interval_ms != 0 && cfg->selfprobe_interval_ms < 100) {
		brq_config_problem_add(L->p, "BROOQ_SELFPROBE_INTERVAL: must be 0 (off) or 100ms..10m");
	}

	bool has_timeouts = get_timeouts(L, cfg);
	brq_cfg_get_topic_overrides(L, cfg);
	brq_cfg_get_schedules(L, cfg);
	if (has_backoff) {
		brq_cfg_check_topic_backoff(L, cfg);
	}
	if (has_timeouts) {
		brq_cfg_check_topic_timeouts(L, cfg);
	}
	// Default reaper period follows the shortest lease, so that short-lease topics
	// are not left waiting for a period sized for the global lease.
	uint64_t min_lease = brq_cfg_min_lease_ms(cfg);
	cfg->reaper_interval_ms =
		min_lease / 4 > REAPER_MIN_DEFAULT_MS ? min_lease / 4 : REAPER_MIN_DEFAULT_MS;
	brq_cfg_get_setting(L, BRQ_SET_REAPER_INTERVAL, cfg);

	brq_cfg_get_setting(L, BRQ_SET_RETENTION_TTL, cfg);
	brq_cfg_get_setting(L, BRQ_SET_RETENTION_INTERVAL, cfg);
	brq_cfg_get_setting(L, BRQ_SET_RETENTION_BATCH, cfg);
	brq_cfg_get_setting(L, BRQ_SET_RETENTION_MAX_BATCHES, cfg);

	get_http(L, cfg);
	brq_cfg_get_setting(L, BRQ_SET_HTTP_HEADER_TIMEOUT, cfg);
	brq_cfg_get_setting(L, BRQ_SET_HTTP_IDLE_TIMEOUT, cfg);
	brq_cfg_get_setting(L, BRQ_SET_HTTP_MAX_CONNECTIONS, cfg);
	brq_cfg_get_console(L, cfg);

	const char *lvl = brq_cfg_src_get(&L->src, "BROOQ_LOG_LEVEL");
	if (lvl != NULL && brq_log_parse_level(lvl, &cfg->log_level) != 0) {
		brq_config_problem_add(L->p, "BROOQ_LOG_LEVEL: must be debug, info, warn or error");
	}
	brq_cfg_get_setting(L, BRQ_SET_SHUTDOWN_GRACE, cfg);
}

int
brq_config_load_from(brq_config *cfg, const brq_config_sources *src, brq_config_problems *problems)
{
	struct loader L;
	memset(&L, 0, sizeof(L));
	L.src.lookup     = src->lookup != NULL ? src->lookup : env_getenv;
	L.src.lookup_arg = src->lookup_arg;
	L.p              = problems;
	brq_config_problems_init(problems);

	if (brq_config_init_defaults(cfg) != 0) {
		return BRQ_ENOMEM;
	}
	if (src->env_file != NULL) {
		brq_cfg_load_env_file(&L, src->env_file);
	}
	char *const *envp = src->envp;
	if (envp == NULL && src->lookup == NULL) {
		envp = environ;
	}
	brq_cfg_check_environ(&L, envp);
	brq_cfg_creds_open(&L, src);

	load_rest(&L, cfg, load_core(&L, cfg));
	brq_cfg_env_entries_free(L.src.file, L.src.n_file);
	int rc = src->check != NULL ? src->check(cfg, src->check_arg, problems) : 0;
	if (L.is_oom || problems->is_oom || rc == BRQ_ENOMEM) {
		brq_config_fini(cfg);
		return BRQ_ENOMEM;
	}
	if (problems->count > 0 || rc != 0) {
		brq_config_fini(cfg);
		return BRQ_EINVAL;
	}
	return 0;
}

int
brq_config_load(brq_config *cfg, const char *env_file, brq_config_getenv_fn lookup, void *lookup_arg,
		brq_config_problems *problems)
{
	brq_config_sources src = {.env_file = env_file, .lookup = lookup, .lookup_arg = lookup_arg};
	return brq_config_load_from(cfg, &src, problems);
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
brq_config_fini(brq_config *cfg)
{
	if (cfg == NULL) {
		return;
	}
	brq_cfg_free_secret(cfg->dsn);
	free(cfg->dsn_file);
	free(cfg->listen);
	free(cfg->tls_cert_file);
	free(cfg->tls_key_file);
	free(cfg->tls_ca_file);
	free(cfg->http_host);
	free_list(cfg->worker_token_files, cfg->n_worker_token_files);
	free_list(cfg->admin_token_files, cfg->n_admin_token_files);
	free(cfg->topic_overrides);
	free(cfg->schedules);
	free(cfg->schedules_src);
	free(cfg->http_tls_cert_file);
	free(cfg->http_tls_key_file);
	memset(cfg, 0, sizeof(*cfg));
}

// The override of topic (NULL: none, or topic is NULL). Borrowed from cfg.
static const brq_topic_override *
find_override(const brq_config *cfg, const char *topic)
{
	for (size_t i = 0; topic != NULL && i < cfg->n_topic_overrides; i++) {
		if (strcmp(cfg->topic_overrides[i].topic, topic) == 0) {
			return &cfg->topic_overrides[i];
		}
	}
	return NULL;
}

void
brq_config_topic_settings(const brq_config *cfg, const char *topic, uint32_t *max_attempts,
			  uint64_t *backoff_base_ms, uint64_t *backoff_max_ms, uint64_t *lease_ms)
{
	const brq_topic_override *o = find_override(cfg, topic);
	if (max_attempts != NULL) {
		*max_attempts = o != NULL && o->has_max_attempts ? o->max_attempts : cfg->max_attempts;
	}
	if (backoff_base_ms != NULL) {
		*backoff_base_ms =
			o != NULL && o->has_backoff_base ? o->backoff_base_ms : cfg->backoff_base_ms;
	}
	if (backoff_max_ms != NULL) {
		*backoff_max_ms = o != NULL && o->has_backoff_max ? o->backoff_max_ms : cfg->backoff_max_ms;
	}
	if (lease_ms != NULL) {
		*lease_ms = o != NULL && o->has_lease ? o->lease_ms : cfg->lease_ms;
	}
}

void
brq_config_topic_timeouts(const brq_config *cfg, const char *topic, uint64_t *attempt_timeout_ms,
			  uint64_t *max_execution_ms)
{
	const brq_topic_override *o = find_override(cfg, topic);
	if (attempt_timeout_ms != NULL) {
		*attempt_timeout_ms =
			o != NULL && o->has_attempt_timeout ? o->attempt_timeout_ms : cfg->attempt_timeout_ms;
	}
	if (max_execution_ms != NULL) {
		*max_execution_ms =
			o != NULL && o->has_max_execution ? o->max_execution_ms : cfg->max_execution_ms;
	}
}
