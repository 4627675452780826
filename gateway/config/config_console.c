// SPDX-License-Identifier: MIT
// The web console's settings and the HTTP endpoint's TLS: BROOQ_CONSOLE, BROOQ_CONSOLE_SESSION_TTL,
// BROOQ_HTTP_TLS_CERT_FILE and BROOQ_HTTP_TLS_KEY_FILE.
//
// The console signs operators in with a token, so beyond this host it is served only
// when asked for and only over HTTPS:
//   - BROOQ_CONSOLE unset: on with a loopback HTTP host, off with another one (an
//     existing configuration that serves /metrics to a remote Prometheus does not start
//     serving a sign-in page to the network by an upgrade);
//   - BROOQ_CONSOLE=on with a non-loopback host needs the HTTPS files (a problem
//     otherwise: a token typed into a plain-HTTP page crosses the network in clear);
//   - BROOQ_CONSOLE=on with BROOQ_HTTP_LISTEN=off is a problem (nothing would serve it).
// The HTTPS files (variable, else the credential http-tls-cert / http-tls-key) come in
// pairs and make the whole endpoint HTTPS, /metrics and /healthz included. They are
// checked as the RPC listener's are (tls.h brq_tls_http_check).
#include "config.h"
#include "config_parse.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The path in `var`, else $CREDENTIALS_DIRECTORY/<cred> when that file exists.
static void
get_file(struct loader *L, const char *var, const char *cred, char **out)
{
	const char *s   = brq_cfg_src_get(&L->src, var);
	const char *dir = brq_cfg_creds_dir(L);
	char        path[4096];
	if (s == NULL && dir != NULL &&
	    snprintf(path, sizeof(path), "%s/%s", dir, cred) < (int) sizeof(path) &&
	    access(path, F_OK) == 0) {
		s = path;
	}
	if (s != NULL && (*out = strdup(s)) == NULL) {
		L->is_oom = true;
	}
}

static void
get_https(struct loader *L, brq_config *cfg)
{
	get_file(L, "BROOQ_HTTP_TLS_CERT_FILE", "http-tls-cert", &cfg->http_tls_cert_file);
	get_file(L, "BROOQ_HTTP_TLS_KEY_FILE", "http-tls-key", &cfg->http_tls_key_file);
	bool has_cert = cfg->http_tls_cert_file != NULL, has_key = cfg->http_tls_key_file != NULL;
	if (has_cert != has_key) {
		brq_config_problem_add(L->p, "%s: required with %s (HTTPS needs both)",
				       has_cert ? "BROOQ_HTTP_TLS_KEY_FILE" : "BROOQ_HTTP_TLS_CERT_FILE",
				       has_cert ? "BROOQ_HTTP_TLS_CERT_FILE" : "BROOQ_HTTP_TLS_KEY_FILE");
		return;
	}
	if (has_cert && !cfg->http_enabled) {
		brq_config_problem_add(
			L->p,
			"BROOQ_HTTP_TLS_CERT_FILE: set, but BROOQ_HTTP_LISTEN is off (nothing would "
			"use it)");
		return;
	}
	if (has_cert && !L->is_oom && brq_tls_http_check(cfg, L->p) == BRQ_ENOMEM) {
		L->is_oom = true;
	}
}

void
brq_cfg_get_console(struct loader *L, brq_config *cfg)
{
	get_https(L, cfg);
	brq_cfg_get_setting(L, BRQ_SET_CONSOLE_SESSION_TTL, cfg);

	bool is_loopback =
		cfg->http_enabled && cfg->http_host != NULL && brq_config_host_is_loopback(cfg->http_host);
	const char *s = brq_cfg_src_get(&L->src, "BROOQ_CONSOLE");
	if (s == NULL) {
		cfg->console_enabled = is_loopback;
		return;
	}
	if (strcmp(s, "on") != 0 && strcmp(s, "off") != 0) {
		brq_config_problem_add(L->p, "BROOQ_CONSOLE: must be on or off");
		return;
	}
	cfg->console_enabled = strcmp(s, "on") == 0;
	if (!cfg->console_enabled) {
		return;
	}
	if (!cfg->http_enabled) {
		brq_config_problem_add(L->p,
				       "BROOQ_CONSOLE: on, but BROOQ_HTTP_LISTEN is off (the console is "
				       "served by the HTTP endpoint)");
	} else if (!is_loopback && cfg->http_tls_cert_file == NULL) {
		brq_config_problem_add(
			L->p,
			"BROOQ_CONSOLE: on with the non-loopback BROOQ_HTTP_LISTEN host %s needs "
			"HTTPS: set BROOQ_HTTP_TLS_CERT_FILE and BROOQ_HTTP_TLS_KEY_FILE (sign-in "
			"tokens must not cross the network in clear)",
			cfg->http_host);
	}
}
