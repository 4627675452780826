// SPDX-License-Identifier: MIT
// Loading the configuration and tokens in one round; SIGHUP applies tokens and log level, never exits.
// Which setting is applied and which needs a restart is the settings table's RELOAD column
// (config/config_settings.def).
#include "reload.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reload_creds.h"

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
brq_reload_load(const brq_reload_src *from, const brq_auth *auth, brq_config *cfg, brq_auth_set **set,
		brq_config_problems *problems)
{
	struct token_check tc  = {.auth = auth};
	brq_config_sources src = {.env_file             = from->env_file,
				  .check                = check_tokens,
				  .check_arg            = &tc,
				  .unit_credentials_dir = from->credentials_dir,
				  .is_unit_default      = from->is_check,
				  .tokens_dir           = from->tokens_dir};

	*set   = NULL;
	int rc = brq_config_load_from(cfg, &src, problems);
	if (rc != 0) {
		brq_auth_set_free(tc.set);
		return rc;
	}
	*set = tc.set;
	return 0;
}

void
brq_reload_diff_of(const brq_config *old, const brq_config *cur, brq_reload_diff *d)
{
	d->n_applied = d->n_restart = 0;
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		const brq_setting *s = &brq_settings[i];
		if (!brq_setting_differs(s, old, cur)) {
			continue;
		}
		if (s->reload == BRQ_RELOAD_APPLIED) {
			d->applied[d->n_applied++] = s->name;
		} else {
			d->restart[d->n_restart++] = s->name;
		}
	}
}

// Names (never values: the DSN is one) as "A,B,C" into buf, which holds every name of
// the table.
static void
join_names(const char *const *names, size_t n, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0]     = '\0';
	for (size_t i = 0; i < n && len < cap; i++) {
		int w = snprintf(buf + len, cap - len, "%s%s", i > 0 ? "," : "", names[i]);
		len += w > 0 ? (size_t) w : 0;
	}
}

// Where this reload reads the tokens from (reload.h): the copy's path into buf, or NULL
// for the sources of the start.
static const char *
tokens_copy(const brq_reload *r, char *buf, size_t cap)
{
	struct stat st;
	if (r->src.credentials_dir != NULL || getenv("CREDENTIALS_DIRECTORY") == NULL ||
	    brq_reload_creds_copy_path(buf, cap) != 0) {
		return NULL;
	}
	return lstat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? buf : NULL;
}

int
brq_reload_run(brq_reload *r)
{
	brq_config          cfg;
	brq_config_problems problems;
	brq_auth_set       *set = NULL;
	brq_reload_diff     diff;
	char                fixed[BRQ_SETTINGS_COUNT * 40]; // every name fits: the longest is 28
	char                copy[4096];
	brq_reload_src      src = r->src;

	src.tokens_dir = tokens_copy(r, copy, sizeof(copy));
	BRQ_LOG_INFO("reload_started", "env_file=%s tokens_copy=%s",
		     BRQ_LOG_Q(r->src.env_file != NULL ? r->src.env_file : "-"),
		     BRQ_LOG_Q(src.tokens_dir != NULL ? src.tokens_dir : "-"));
	int rc = brq_reload_load(&src, r->auth, &cfg, &set, &problems);
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
	// The applied settings are in force now: the tokens were published above, the level
	// follows the level in force (not the start's, which diff compares with).
	brq_reload_diff_of(r->cfg, &cfg, &diff);
	if (diff.n_restart > 0) {
		join_names(diff.restart, diff.n_restart, fixed, sizeof(fixed));
		BRQ_LOG_WARN("reload_needs_restart", "changed=%s kept=running_values", fixed);
	}
	BRQ_LOG_INFO("reload_done", "log_level=%s worker_tokens=%zu admin_tokens=%zu",
		     brq_log_level_name(r->log_level), brq_auth_count(r->auth, BRQ_ROLE_WORKER),
		     brq_auth_count(r->auth, BRQ_ROLE_ADMIN));
	brq_config_fini(&cfg);
	return 0;
}
