// SPDX-License-Identifier: MIT
// Loading the configuration and the tokens in one round, at start and on SIGHUP.
//
// SIGHUP re-reads everything (the process environment as it was at start, the
// --env-file, $CREDENTIALS_DIRECTORY or --credentials-dir, every token file) and applies what can change
// while connections stay up: the settings whose row in config/config_settings.def says
// APPLIED, the token sets (auth.h swaps them under running checks) and
// BROOQ_LOG_LEVEL. Other settings that differ are named in one reload_needs_restart
// line and keep their running values; so are TLS files whose content changed under
// the same path (tls.h: certificates apply at a restart; the reload has checked the
// new ones). A token file that no longer exists is no problem: its tokens are
// revoked (token_file_missing, auth.h), as a file gone from the credentials directory
// is simply no longer read. A reload with any problem (a token file too short or
// readable by others, no token left at all, a bad value) changes nothing and logs each
// problem; the gateway never exits because of a reload.
//
// Under the unit (CREDENTIALS_DIRECTORY set, no --credentials-dir) systemd's copy of the
// credentials is the one of the start, so a reload reads the tokens from the copy that
// `brooq-gateway --reload-credentials` (the unit's ExecReload=, reload_creds.h) makes
// of the unit's directory, $RUNTIME_DIRECTORY/credentials, when it exists; the DSN and
// TLS files still come from $CREDENTIALS_DIRECTORY (they apply at a restart). A bare
// SIGHUP before any such copy reads $CREDENTIALS_DIRECTORY as before.
#ifndef BRQ_GATEWAY_RELOAD_H
#define BRQ_GATEWAY_RELOAD_H

#include "brq_base.h"

#include "auth.h"
#include "config/config.h"
#include "log/log.h"

// Where the configuration is read from besides the process environment (main's options).
typedef struct brq_reload_src {
	const char *env_file;        // borrowed: --env-file, or NULL
	const char *credentials_dir; // borrowed: --credentials-dir, or NULL
	bool        is_check;        // --check-config: the unit's credentials by default (config.h)
	const char *tokens_dir;      // borrowed: the tokens' copy (config.h), or NULL
} brq_reload_src;

typedef struct brq_reload {
	brq_reload_src    src;       // as at start (is_check false)
	brq_auth         *auth;      // borrowed: the tokens requests are checked against
	const brq_config *cfg;       // borrowed: the configuration the gateway started with
	brq_log_level     log_level; // the level in force
} brq_reload;

// Loads the configuration (from src and the process environment) and reads the token
// files it names, reporting the problems of both in one round. On success
// *cfg owns the configuration (brq_config_fini()) and *set the tokens (publish or
// free it). Returns 0, BRQ_EINVAL (problems listed in *problems; the caller must
// brq_config_problems_fini() it whatever the result) or BRQ_ENOMEM; on failure *cfg is
// zeroed and *set NULL.
BRQ_MUSTCHECK int brq_reload_load(const brq_reload_src *src, const brq_auth *auth, brq_config *cfg,
				  brq_auth_set **set, brq_config_problems *problems);

// What a reload does with the settings that changed, in table order. The names are
// the table's (static).
typedef struct brq_reload_diff {
	const char *applied[BRQ_SETTINGS_COUNT]; // put in force by brq_reload_run()
	size_t      n_applied;
	const char *restart[BRQ_SETTINGS_COUNT]; // named in reload_needs_restart
	size_t      n_restart;
} brq_reload_diff;

// The decision of a reload from the configuration in force (old: the start's, since
// nothing that needs a restart changes after it) to the one just loaded (cur): every
// setting that differs, applied or needing a restart. Pure: logs nothing.
void brq_reload_diff_of(const brq_config *old, const brq_config *cur, brq_reload_diff *d);

// One reload (SIGHUP), as described above; logs what changed, or why nothing did.
// Returns 0, or BRQ_EINVAL / BRQ_ENOMEM when the previous state was kept. Call from
// one thread (the main loop).
int brq_reload_run(brq_reload *r);

#endif
