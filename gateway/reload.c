// SPDX-License-Identifier: MIT
// Loading the configuration and tokens in one round; SIGHUP applies tokens and log level, never exits.
#include "reload.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The token check run inside the configuration load (config.h brq_config_sources).
struct token_check {
	const brq_auth *auth;
	brq_auth_set   *set; // out
};

static int
check_tokens(const brq_config *cfg, void *arg, brq_config_problems *problems)
{
	struct token_check *tc = arg;
	if (cfg->n_worker_token_files + cfg->n_admin_token_files == 0) {
		return 0; // the configuration already says that none is configured
	}
	return brq_auth_prepare_config(tc->auth, cfg, &tc->set, problems);
}

int
brq_reload_load(const char *env_file, const brq_auth *auth, brq_config *cfg, brq_auth_set **set,
		brq_config_problems *problems)
{
	struct token_check tc  = {.auth = auth};
	brq_config_sources src = {.env_file = env_file, .check = check_tokens, .check_arg = &tc};

	*set   = NULL;
	int rc = brq_config_load_from(cfg, &src, problems);
	if (rc != 0) {
		brq_auth_set_free(tc.set);
		return rc;
	}
	*set = tc.set;
	return 0;
}

// Settings a reload cannot change: where each lives in brq_config.
struct fixed_field {
	const char *var;
	size_t      offset;
	size_t      size;
};

#define FIELD(var, member)                                                            \
	{                                                                             \
		var, offsetof(brq_config, member), sizeof(((brq_config *) 0)->member) \
	}

// String settings that need a restart, compared by content.
static const struct {
	const char *var;
	size_t      offset;
} str_fields[] = {
	{"BROOQ_DSN", offsetof(brq_config, dsn)},
	{"BROOQ_LISTEN", offsetof(brq_config, listen)},
	{"BROOQ_TLS_CERT_FILE", offsetof(brq_config, tls_cert_file)},
	{"BROOQ_TLS_KEY_FILE", offsetof(brq_config, tls_key_file)},
	{"BROOQ_TLS_CA_FILE", offsetof(brq_config, tls_ca_file)},
	{"BROOQ_HTTP_LISTEN", offsetof(brq_config, http_host)},
	{"BROOQ_SCHEDULES", offsetof(brq_config, schedules_src)},
};

static const struct fixed_field fixed_fields[] = {
	FIELD("BROOQ_IPC_MODE", ipc_mode),
	FIELD("BROOQ_POOL_SIZE", pool_size),
	FIELD("BROOQ_LEASE", lease_ms),
	FIELD("BROOQ_BACKOFF_BASE", backoff_base_ms),
	FIELD("BROOQ_BACKOFF_MAX", backoff_max_ms),
	FIELD("BROOQ_MAX_ATTEMPTS", max_attempts),
	FIELD("BROOQ_ATTEMPT_TIMEOUT", attempt_timeout_ms),
	FIELD("BROOQ_MAX_EXECUTION_TIME", max_execution_ms),
	FIELD("BROOQ_MAX_BATCH", max_batch),
	FIELD("BROOQ_MAX_PAYLOAD", max_payload_bytes),
	FIELD("BROOQ_MAX_REQUEST", max_request_bytes),
	FIELD("BROOQ_MAX_INFLIGHT_BYTES", max_inflight_bytes),
	FIELD("BROOQ_MAX_WAIT", max_wait_ms),
	FIELD("BROOQ_MAX_WAITERS", max_waiters),
	FIELD("BROOQ_POLL_INTERVAL", poll_interval_ms),
	FIELD("BROOQ_REAPER_INTERVAL", reaper_interval_ms),
	FIELD("BROOQ_SCHEDULE_TICK", schedule_tick_ms),
	FIELD("BROOQ_RETENTION_TTL", retention_ttl_ms),
	FIELD("BROOQ_RETENTION_INTERVAL", retention_interval_ms),
	FIELD("BROOQ_RETENTION_BATCH", retention_batch),
	FIELD("BROOQ_RETENTION_MAX_BATCHES", retention_max_batches),
	FIELD("BROOQ_HTTP_LISTEN", http_enabled),
	FIELD("BROOQ_HTTP_LISTEN", http_port),
	FIELD("BROOQ_HTTP_ALLOW_NONLOOPBACK", http_allow_nonloopback),
	FIELD("BROOQ_SHUTDOWN_GRACE", shutdown_grace_ms),
	FIELD("BROOQ_TLS_CLIENT_AUTH", tls_client_auth),
	// A TLS file rewritten in place: same path, new content (tls.h: no live reload).
	FIELD("BROOQ_TLS_CERT_FILE", tls_cert_digest),
	FIELD("BROOQ_TLS_KEY_FILE", tls_key_digest),
	FIELD("BROOQ_TLS_CA_FILE", tls_ca_digest),
	FIELD("BROOQ_HTTP_TLS_CERT_FILE", http_tls_cert_digest),
	FIELD("BROOQ_HTTP_TLS_KEY_FILE", http_tls_key_digest),
	FIELD("BROOQ_CONSOLE", console_enabled),
	FIELD("BROOQ_CONSOLE_SESSION_TTL", console_session_ttl_ms),
};

static bool
str_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

// Appends `var` to the comma-separated list in buf unless it is already there.
static void
list_var(char *buf, size_t cap, const char *var)
{
	size_t len = strlen(buf), vlen = strlen(var);
	for (const char *p = buf; *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
		if (strncmp(p, var, vlen) == 0 && (p[vlen] == ',' || p[vlen] == '\0')) {
			return;
		}
	}
	if (len + vlen + 2 > cap) {
		return;
	}
	snprintf(buf + len, cap - len, "%s%s", len > 0 ? "," : "", var);
}

// Names (never values: the DSN is one) of the settings that differ and need a restart.
static void
restart_needed(const brq_config *old, const brq_config *cur, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(str_fields) / sizeof(str_fields[0]); i++) {
		char *const *a = (char *const *) ((const char *) old + str_fields[i].offset);
		char *const *b = (char *const *) ((const char *) cur + str_fields[i].offset);
		if (str_differs(*a, *b))
			list_var(buf, cap, str_fields[i].var);
	}
	if (str_differs(old->http_tls_cert_file, cur->http_tls_cert_file)) {
		list_var(buf, cap, "BROOQ_HTTP_TLS_CERT_FILE");
	}
	if (str_differs(old->http_tls_key_file, cur->http_tls_key_file)) {
		list_var(buf, cap, "BROOQ_HTTP_TLS_KEY_FILE");
	}
	for (size_t i = 0; i < sizeof(fixed_fields) / sizeof(fixed_fields[0]); i++) {
		const struct fixed_field *f = &fixed_fields[i];
		if (memcmp((const char *) old + f->offset, (const char *) cur + f->offset, f->size) != 0) {
			list_var(buf, cap, f->var);
		}
	}
	// Overrides are parsed into zeroed structs, so equal settings compare equal.
	if (old->n_topic_overrides != cur->n_topic_overrides ||
	    (cur->n_topic_overrides > 0 &&
	     memcmp(old->topic_overrides, cur->topic_overrides,
		    cur->n_topic_overrides * sizeof(*cur->topic_overrides)) != 0)) {
		list_var(buf, cap, "BROOQ_TOPIC_OVERRIDES");
	}
}

int
brq_reload_run(brq_reload *r)
{
	brq_config          cfg;
	brq_config_problems problems;
	brq_auth_set       *set = NULL;
	char                fixed[512];

	BRQ_LOG_INFO("reload_started", "env_file=%s", BRQ_LOG_Q(r->env_file != NULL ? r->env_file : "-"));
	int rc = brq_reload_load(r->env_file, r->auth, &cfg, &set, &problems);
	if (rc != 0) {
		// Problems name variables and files, never secrets (config.h).
		for (size_t i = 0; i < problems.count; i++) {
			BRQ_LOG_WARN("reload_problem", "problem=%s", BRQ_LOG_Q(problems.lines[i]));
		}
		BRQ_LOG_WARN("reload_failed", "problems=%zu error=%s kept=previous_settings", problems.count,
			     brq_err_name(rc));
		brq_config_problems_fini(&problems);
		return rc;
	}
	brq_config_problems_fini(&problems);
	brq_auth_publish(r->auth, set);
	set = NULL;
	if (cfg.log_level != r->log_level) {
		BRQ_LOG_INFO("log_level_changed", "from=%s to=%s", brq_log_level_name(r->log_level),
			     brq_log_level_name(cfg.log_level));
		r->log_level = cfg.log_level;
		brq_log_set_level(cfg.log_level);
	}
	restart_needed(r->cfg, &cfg, fixed, sizeof(fixed));
	if (fixed[0] != '\0') {
		BRQ_LOG_WARN("reload_needs_restart", "changed=%s kept=running_values", fixed);
	}
	BRQ_LOG_INFO("reload_done", "log_level=%s worker_tokens=%zu admin_tokens=%zu",
		     brq_log_level_name(r->log_level), brq_auth_count(r->auth, BRQ_ROLE_WORKER),
		     brq_auth_count(r->auth, BRQ_ROLE_ADMIN));
	brq_config_fini(&cfg);
	return 0;
}
