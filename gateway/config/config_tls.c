// SPDX-License-Identifier: MIT
// The TLS settings of the gateway configuration: where each file comes from, and which combinations are
// refused.
#include "config.h"
#include "config_parse.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// One TLS file setting: its variable and the credential read when the variable is unset.
typedef struct tls_var {
	const char *var;
	const char *cred;
} tls_var;

static const tls_var cert_var = {"BROOQ_TLS_CERT_FILE", "tls-cert"};
static const tls_var key_var  = {"BROOQ_TLS_KEY_FILE", "tls-key"};
static const tls_var ca_var   = {"BROOQ_TLS_CA_FILE", "tls-ca"};

// The path of v: its variable, else $CREDENTIALS_DIRECTORY/<cred> when that exists.
// *name says which of the two it was, for problems.
static void
get_file(struct loader *L, const tls_var *v, char **out, char *name, size_t cap)
{
	const char *s   = brq_cfg_src_get(&L->src, v->var);
	const char *dir = brq_cfg_creds_dir(L);
	char        path[4096];

	snprintf(name, cap, "%s", v->var);
	if (s == NULL && dir != NULL &&
	    snprintf(path, sizeof(path), "%s/%s", dir, v->cred) < (int) sizeof(path) &&
	    access(path, F_OK) == 0) {
		s = path;
		snprintf(name, cap, "credential %s", v->cred);
	}
	if (s != NULL && (*out = strdup(s)) == NULL) {
		L->is_oom = true;
	}
}

// BROOQ_TLS_CLIENT_AUTH. False when its value is refused (a problem is added).
static bool
get_client_auth(struct loader *L, brq_config *cfg)
{
	const char *s = brq_cfg_src_get(&L->src, "BROOQ_TLS_CLIENT_AUTH");
	if (s == NULL || strcmp(s, "none") == 0) {
		cfg->tls_client_auth = BRQ_TLS_CLIENT_AUTH_NONE;
	} else if (strcmp(s, "required") == 0) {
		cfg->tls_client_auth = BRQ_TLS_CLIENT_AUTH_REQUIRED;
	} else if (strcmp(s, "optional") == 0) {
		brq_config_problem_add(L->p,
				       "BROOQ_TLS_CLIENT_AUTH: optional is not offered: mbedtls then "
				       "accepts a certificate that fails verification, so it would "
				       "authenticate nothing; use none or required");
		return false;
	} else {
		brq_config_problem_add(L->p, "BROOQ_TLS_CLIENT_AUTH: must be none or required");
		return false;
	}
	return true;
}

static void
require(struct loader *L, const tls_var *v, const char *path)
{
	if (path == NULL) {
		brq_config_problem_add(L->p,
				       "%s: required with a tls+tcp:// BROOQ_LISTEN (or the credential %s)",
				       v->var, v->cred);
	}
}

// Settings that a listener other than tls+tcp:// would silently ignore: an operator
// who set them believes the endpoint encrypted, so each is a problem.
static void
refuse_unused(struct loader *L, const brq_config *cfg, char names[3][64])
{
	const char *files[3] = {cfg->tls_cert_file, cfg->tls_key_file, cfg->tls_ca_file};
	for (int i = 0; i < 3; i++) {
		if (files[i] != NULL) {
			brq_config_problem_add(L->p,
					       "%s: set, but BROOQ_LISTEN is not tls+tcp:// (the endpoint "
					       "would not use it)",
					       names[i]);
		}
	}
	// "none", the default, promises nothing; "required" promises a check that would not happen.
	if (cfg->tls_client_auth == BRQ_TLS_CLIENT_AUTH_REQUIRED) {
		brq_config_problem_add(L->p,
				       "BROOQ_TLS_CLIENT_AUTH: required, but BROOQ_LISTEN is not tls+tcp://");
	}
}

void
brq_cfg_get_tls(struct loader *L, brq_config *cfg)
{
	char        names[3][64];
	size_t      before       = L->p->count;
	bool        is_auth_ok   = get_client_auth(L, cfg);
	const char *listen_var   = brq_cfg_src_get(&L->src, "BROOQ_LISTEN");
	bool        is_listen_ok = listen_var == NULL || strcmp(listen_var, cfg->listen) == 0;

	get_file(L, &cert_var, &cfg->tls_cert_file, names[0], sizeof(names[0]));
	get_file(L, &key_var, &cfg->tls_key_file, names[1], sizeof(names[1]));
	get_file(L, &ca_var, &cfg->tls_ca_file, names[2], sizeof(names[2]));
	if (!is_listen_ok) {
		return; // BROOQ_LISTEN has its own problem: nothing to compare with
	}
	if (!brq_tls_is_url(cfg->listen)) {
		refuse_unused(L, cfg, names);
		return;
	}
	require(L, &cert_var, cfg->tls_cert_file);
	require(L, &key_var, cfg->tls_key_file);
	if (is_auth_ok && cfg->tls_client_auth == BRQ_TLS_CLIENT_AUTH_REQUIRED && cfg->tls_ca_file == NULL) {
		brq_config_problem_add(
			L->p,
			"BROOQ_TLS_CA_FILE: required with BROOQ_TLS_CLIENT_AUTH=required (or the "
			"credential tls-ca): client certificates are checked against it");
	}
	if (is_auth_ok && cfg->tls_client_auth == BRQ_TLS_CLIENT_AUTH_NONE && cfg->tls_ca_file != NULL) {
		brq_config_problem_add(
			L->p,
			"%s: set, but BROOQ_TLS_CLIENT_AUTH is not required, so client "
			"certificates would not be checked; set BROOQ_TLS_CLIENT_AUTH=required "
			"or remove the CA",
			names[2]);
	}
	if (L->p->count == before && !L->is_oom && brq_tls_check(cfg, L->p) == BRQ_ENOMEM) {
		L->is_oom = true;
	}
}
