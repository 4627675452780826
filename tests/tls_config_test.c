// SPDX-License-Identifier: MIT
// Tests for the gateway's TLS settings (gateway/config/config_tls.c, gateway/tls.c): sources, combinations,
// file checks.
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "tls.h"

#define DSN "host=/nonexistent user=brooq"

struct kv {
	const char *k, *v;
};

static brq_config          cfg;
static brq_config_problems probs;
static char                tmp[64];   // this test's directory
static char                certs[96]; // tmp/certs: tests/support/tls_certs.sh's files

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
run(const char *fmt, ...)
{
	char    cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

static void
setup(void)
{
	const char *src = getenv("BROOQ_SOURCE_DIR");
	char        here[512];
	snprintf(here, sizeof(here), "%s", __FILE__);
	*strrchr(here, '/') = '\0';
	snprintf(tmp, sizeof(tmp), "/tmp/brq_tls_config_test_XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(certs, sizeof(certs), "%s/certs", tmp);
	if (src != NULL)
		run("%s/tests/support/tls_certs.sh %s", src, certs);
	else
		run("%s/support/tls_certs.sh %s", here, certs);
}

static void
teardown(void)
{
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	run("rm -rf '%s'", tmp);
}

TestSuite(tls_config, .init = setup, .fini = teardown);

static const char *
tab_lookup(const char *name, void *arg)
{
	for (const struct kv *t = arg; t->k != NULL; t++)
		if (strcmp(t->k, name) == 0)
			return t->v;
	return NULL;
}

// Loads `extra` on top of a DSN and a token file (extra first: it wins).
static int
load(const struct kv *extra)
{
	struct kv tab[32];
	size_t    n = 0;
	for (; extra[n].k != NULL; n++)
		tab[n] = extra[n];
	tab[n++] = (struct kv) {"BROOQ_DSN", DSN};
	tab[n++] = (struct kv) {"BROOQ_WORKER_TOKEN_FILES", "/run/w1"};
	tab[n]   = (struct kv) {NULL, NULL};
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	return brq_config_load(&cfg, NULL, tab_lookup, tab, &probs);
}

#define LOAD(...) load((const struct kv[]) {__VA_ARGS__, {NULL, NULL}})

static bool
has_problem(const char *needle)
{
	for (size_t i = 0; i < probs.count; i++)
		if (strstr(probs.lines[i], needle) != NULL)
			return true;
	return false;
}

// No problem line quotes any PEM content (a key above all).
static void
assert_no_pem(void)
{
	for (size_t i = 0; i < probs.count; i++)
		cr_assert_null(strstr(probs.lines[i], "-----"), "PEM in a problem: %s", probs.lines[i]);
}

static void
dump(void)
{
	for (size_t i = 0; i < probs.count; i++)
		cr_log_info("problem: %s", probs.lines[i]);
}

// certs/NAME as a static path (a few at once).
static const char *
cert(const char *name)
{
	static char path[8][160];
	static int  slot;
	char       *p = path[slot++ % 8];
	snprintf(p, 160, "%s/%s", certs, name);
	return p;
}

static bool
is_zero(const uint8_t *d)
{
	for (int i = 0; i < BRQ_TLS_DIGEST_LEN; i++)
		if (d[i] != 0)
			return false;
	return true;
}

Test(tls_config, a_tls_listener_with_certificate_and_key_loads)
{
	int rc = LOAD({"BROOQ_LISTEN", "tls+tcp://[::]:7443"}, {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
		      {"BROOQ_TLS_KEY_FILE", cert("server.key")});
	dump();
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(cfg.listen, "tls+tcp://[::]:7443");
	cr_assert_str_eq(cfg.tls_cert_file, cert("server.pem"));
	cr_assert_str_eq(cfg.tls_key_file, cert("server.key"));
	cr_assert_null(cfg.tls_ca_file);
	cr_assert_eq(cfg.tls_client_auth, BRQ_TLS_CLIENT_AUTH_NONE);
	cr_assert_not(is_zero(cfg.tls_cert_digest));
	cr_assert_not(is_zero(cfg.tls_key_digest));
	cr_assert(is_zero(cfg.tls_ca_digest));
	// A chain (the gateway's certificate first) is fine too.
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server-chain.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     0);
}

Test(tls_config, client_auth_required_takes_the_ca)
{
	int rc = LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
		      {"BROOQ_TLS_CERT_FILE", cert("server.pem")}, {"BROOQ_TLS_KEY_FILE", cert("server.key")},
		      {"BROOQ_TLS_CA_FILE", cert("ca.pem")}, {"BROOQ_TLS_CLIENT_AUTH", "required"});
	dump();
	cr_assert_eq(rc, 0);
	cr_assert_eq(cfg.tls_client_auth, BRQ_TLS_CLIENT_AUTH_REQUIRED);
	cr_assert_str_eq(cfg.tls_ca_file, cert("ca.pem"));
	cr_assert_not(is_zero(cfg.tls_ca_digest));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CLIENT_AUTH", "none"}),
		     0);
	cr_assert_eq(cfg.tls_client_auth, BRQ_TLS_CLIENT_AUTH_NONE);
}

Test(tls_config, the_files_come_from_the_credentials_directory)
{
	char creds[128];
	snprintf(creds, sizeof(creds), "%s/creds", tmp);
	run("mkdir %s && cp %s/server.pem %s/tls-cert && cp %s/server.key %s/tls-key && cp %s/ca.pem "
	    "%s/tls-ca",
	    creds, certs, creds, certs, creds, certs, creds);
	int rc = LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"}, {"CREDENTIALS_DIRECTORY", creds},
		      {"BROOQ_TLS_CLIENT_AUTH", "required"});
	dump();
	cr_assert_eq(rc, 0);
	cr_assert(strstr(cfg.tls_cert_file, "/creds/tls-cert") != NULL);
	cr_assert(strstr(cfg.tls_key_file, "/creds/tls-key") != NULL);
	cr_assert(strstr(cfg.tls_ca_file, "/creds/tls-ca") != NULL);
	// A variable wins over the credential.
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"}, {"CREDENTIALS_DIRECTORY", creds},
			  {"BROOQ_TLS_CLIENT_AUTH", "required"}, {"BROOQ_TLS_CA_FILE", cert("ca2.pem")}),
		     0);
	cr_assert_str_eq(cfg.tls_ca_file, cert("ca2.pem"));
	// The credential tls-ca without client auth is refused like the variable.
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"}, {"CREDENTIALS_DIRECTORY", creds}),
		     BRQ_EINVAL);
	cr_assert(has_problem("credential tls-ca: set, but BROOQ_TLS_CLIENT_AUTH is not required"));
}

Test(tls_config, a_tls_listener_needs_certificate_and_key)
{
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"}), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_TLS_CERT_FILE: required with a tls+tcp:// BROOQ_LISTEN"));
	cr_assert(has_problem("BROOQ_TLS_KEY_FILE: required with a tls+tcp:// BROOQ_LISTEN"));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")}),
		     BRQ_EINVAL);
	cr_assert_eq(probs.count, 1);
	cr_assert(has_problem("BROOQ_TLS_KEY_FILE: required"));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CLIENT_AUTH", "required"}),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_TLS_CA_FILE: required with BROOQ_TLS_CLIENT_AUTH=required"));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CA_FILE", cert("ca.pem")}),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_TLS_CA_FILE: set, but BROOQ_TLS_CLIENT_AUTH is not required"));
}

Test(tls_config, client_auth_is_none_or_required)
{
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CA_FILE", cert("ca.pem")},
			  {"BROOQ_TLS_CLIENT_AUTH", "optional"}),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_TLS_CLIENT_AUTH: optional is not offered"));
	cr_assert_eq(probs.count, 1, "the CA is not blamed as well");
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CLIENT_AUTH", "Required"}),
		     BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_TLS_CLIENT_AUTH: must be none or required"));
}

Test(tls_config, tls_settings_without_a_tls_listener_are_refused)
{
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tcp://0.0.0.0:7000"}, {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CA_FILE", cert("ca.pem")},
			  {"BROOQ_TLS_CLIENT_AUTH", "required"}),
		     BRQ_EINVAL);
	cr_assert_eq(probs.count, 4);
	cr_assert(has_problem("BROOQ_TLS_CERT_FILE: set, but BROOQ_LISTEN is not tls+tcp://"));
	cr_assert(has_problem("BROOQ_TLS_KEY_FILE: set, but BROOQ_LISTEN is not tls+tcp://"));
	cr_assert(has_problem("BROOQ_TLS_CA_FILE: set, but BROOQ_LISTEN is not tls+tcp://"));
	cr_assert(has_problem("BROOQ_TLS_CLIENT_AUTH: required, but BROOQ_LISTEN is not tls+tcp://"));
	// "none" is the default: it promises nothing, so it is fine with any listener.
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tcp://0.0.0.0:7000"}, {"BROOQ_TLS_CLIENT_AUTH", "none"}), 0);
	// The default listener (ipc://) too; a bad BROOQ_LISTEN is blamed alone.
	cr_assert_eq(LOAD({"BROOQ_TLS_CERT_FILE", cert("server.pem")}), BRQ_EINVAL);
	cr_assert(has_problem("BROOQ_TLS_CERT_FILE: set, but BROOQ_LISTEN is not tls+tcp://"));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls://x:1"}, {"BROOQ_TLS_CERT_FILE", cert("server.pem")}),
		     BRQ_EINVAL);
	cr_assert_eq(probs.count, 1);
	cr_assert(has_problem("BROOQ_LISTEN: must start with"));
}

Test(tls_config, a_key_others_may_read_is_refused)
{
	run("chmod 0644 %s/server.key", certs);
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     BRQ_EINVAL);
	cr_assert(has_problem("TLS key file"));
	cr_assert(has_problem("mode 0644 lets others read or write it"));
	assert_no_pem();
	run("chmod 0602 %s/server.key", certs);
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     BRQ_EINVAL);
	cr_assert(has_problem("mode 0602"));
	// Group access is the root:brooq 0640 setup, as for token files.
	run("chmod 0640 %s/server.key", certs);
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     0);
}

Test(tls_config, unusable_files_are_named_with_every_other_problem)
{
	run("printf 'not a certificate\\n' > %s/garbage.pem && printf 'not a key\\n' > %s/garbage.key && "
	    "chmod 0600 %s/garbage.key",
	    certs, certs, certs);
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("garbage.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("garbage.key")}, {"BROOQ_POOL_SIZE", "0"}),
		     BRQ_EINVAL);
	dump();
	cr_assert_eq(probs.count, 3);
	cr_assert(has_problem("BROOQ_POOL_SIZE: must be between"));
	cr_assert(has_problem("TLS certificate file"));
	cr_assert(has_problem("TLS key file"));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("nope.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}, {"BROOQ_TLS_CLIENT_AUTH", "required"},
			  {"BROOQ_TLS_CA_FILE", cert("garbage.pem")}),
		     BRQ_EINVAL);
	dump();
	cr_assert(has_problem("nope.pem: cannot open: No such file or directory"));
	cr_assert(has_problem("TLS CA file"));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"}, {"BROOQ_TLS_CERT_FILE", certs},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     BRQ_EINVAL);
	cr_assert(has_problem("not a regular file"));
	assert_no_pem();
}

Test(tls_config, a_key_that_is_not_the_certificates_is_refused)
{
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("client.key")}),
		     BRQ_EINVAL);
	cr_assert(has_problem("does not match the certificate"));
	assert_no_pem();
}

Test(tls_config, an_encrypted_key_is_refused)
{
	run("openssl pkey -in %s/server.key -aes256 -passout pass:secret -out %s/enc.key 2>/dev/null && "
	    "chmod 600 "
	    "%s/enc.key",
	    certs, certs, certs);
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("enc.key")}),
		     BRQ_EINVAL);
	cr_assert(has_problem("the key is encrypted; give an unencrypted key"));
}

Test(tls_config, an_expired_certificate_still_loads)
{
	// The listener logs it (tls_cert_expired); a restart must not depend on the clock.
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("expired.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("expired.key")}),
		     0);
}

Test(tls_config, the_digests_follow_the_content)
{
	uint8_t before[BRQ_TLS_DIGEST_LEN];
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     0);
	memcpy(before, cfg.tls_cert_digest, sizeof(before));
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     0);
	cr_assert_arr_eq(before, cfg.tls_cert_digest, sizeof(before));
	run("cp %s/server-chain.pem %s/server.pem", certs, certs);
	cr_assert_eq(LOAD({"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443"},
			  {"BROOQ_TLS_CERT_FILE", cert("server.pem")},
			  {"BROOQ_TLS_KEY_FILE", cert("server.key")}),
		     0);
	cr_assert_arr_neq(before, cfg.tls_cert_digest, sizeof(before));
}
