// SPDX-License-Identifier: MIT
// TLS of the tls+tcp:// listener: reads and checks the certificate, key and CA files, and builds NNG's
// configurations.
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <nng/supplemental/tls/tls.h>
#include <sodium.h>

#include "log/log.h"

// Largest file read: a certificate chain or CA bundle (Debian's whole system bundle is
// about 200 KiB), and a private key.
#define CERT_FILE_MAX (1024 * 1024)
#define KEY_FILE_MAX  (64 * 1024)
#define WHY_MAX       160

// The three files as read: NUL-terminated PEM text (mbedtls wants the NUL counted).
typedef struct tls_pem {
	char  *cert, *key, *ca; // ca NULL when client auth is off
	size_t cert_len, key_len, ca_len;
} tls_pem;

bool
brq_tls_is_url(const char *listen)
{
	return listen != NULL && strncmp(listen, "tls+tcp://", 10) == 0;
}

static void
pem_fini(tls_pem *p)
{
	if (p->key != NULL) {
		sodium_memzero(p->key, p->key_len);
	}
	free(p->cert);
	free(p->key);
	free(p->ca);
	memset(p, 0, sizeof(*p));
}

// Reads the file `path` (`what` names it in problems) into *out (left NULL on failure). A key file must grant
// nothing to "other". Returns 0, BRQ_EINVAL (one problem added) or BRQ_ENOMEM.
static int
read_pem(const char *what, const char *path, bool is_key, char **out, size_t *out_len,
	 brq_config_problems *problems)
{
	size_t      max = is_key ? KEY_FILE_MAX : CERT_FILE_MAX, len = 0;
	struct stat st;
	char       *buf = NULL;
	int         rc  = BRQ_EINVAL;
	int         fd  = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		brq_config_problem_add(problems, "%s %s: cannot open: %s", what, path, strerror(errno));
		return BRQ_EINVAL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		brq_config_problem_add(problems, "%s %s: not a regular file", what, path);
		goto out;
	}
	if (is_key && (st.st_mode & 0007) != 0) {
		// The token files' rule: others must not read a secret, nor choose it.
		brq_config_problem_add(problems,
				       "%s %s: mode %04o lets others read or write it; "
				       "remove their access (chmod o-rwx), group access is fine",
				       what, path, (unsigned) (st.st_mode & 07777));
		goto out;
	}
	if ((buf = malloc(max + 2)) == NULL) {
		rc = BRQ_ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, max + 1 - len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			brq_config_problem_add(problems, "%s %s: cannot read: %s", what, path,
					       strerror(errno));
			goto out;
		}
		if (n == 0 || (len += (size_t) n) > max) {
			break;
		}
	}
	if (len > max || len == 0 || memchr(buf, '\0', len) != NULL) {
		brq_config_problem_add(problems, "%s %s: %s", what, path,
				       len > max ? (is_key ? "larger than 64KiB" : "larger than 1MiB")
					       : len == 0 ? "is empty"
							  : "contains a NUL byte (PEM text expected)");
		goto out;
	}
	buf[len] = '\0';
	*out     = buf;
	*out_len = len + 1;
	buf      = NULL;
	rc       = 0;
out:
	if (buf != NULL) {
		sodium_memzero(buf, max + 2);
		free(buf);
	}
	close(fd);
	return rc;
}

// Reads the three files into *p: every one that can be read, even when another cannot
// (pem_fini() in every case). Returns 0, BRQ_EINVAL or BRQ_ENOMEM.
static int
read_all(const brq_config *cfg, tls_pem *p, brq_config_problems *problems)
{
	int r[3], rc = 0;
	memset(p, 0, sizeof(*p));
	r[0] = read_pem("TLS certificate file", cfg->tls_cert_file, false, &p->cert, &p->cert_len, problems);
	r[1] = read_pem("TLS key file", cfg->tls_key_file, true, &p->key, &p->key_len, problems);
	r[2] = cfg->tls_ca_file == NULL
		? 0
		: read_pem("TLS CA file", cfg->tls_ca_file, false, &p->ca, &p->ca_len, problems);
	for (int i = 0; i < 3; i++) {
		rc = r[i] == BRQ_ENOMEM ? BRQ_ENOMEM : rc == 0 && r[i] != 0 ? BRQ_EINVAL : rc;
	}
	return rc;
}

static const char *
mbed_why(int rv, char *buf, size_t cap)
{
	mbedtls_strerror(rv, buf, cap);
	return buf;
}

// Parses what was read (a file that could not be read is skipped): the certificate
// chain into *crt (the caller frees it), the key (matched against the certificate),
// the CA. Adds a problem per failure. Returns 0 or BRQ_EINVAL.
static int
parse_all(const brq_config *cfg, const tls_pem *p, mbedtls_x509_crt *crt, brq_config_problems *problems)
{
	mbedtls_pk_context key;
	mbedtls_x509_crt   ca;
	char               why[WHY_MAX];
	int                rv = 0, rc = p->cert == NULL || p->key == NULL ? BRQ_EINVAL : 0;

	mbedtls_pk_init(&key);
	mbedtls_x509_crt_init(&ca);
	if (p->cert != NULL &&
	    (rv = mbedtls_x509_crt_parse(crt, (const unsigned char *) p->cert, p->cert_len)) != 0) {
		brq_config_problem_add(problems, "TLS certificate file %s: %s", cfg->tls_cert_file,
				       rv > 0 ? "a certificate in it does not parse"
					      : mbed_why(rv, why, sizeof(why)));
		rc = BRQ_EINVAL;
	}
#if MBEDTLS_VERSION_MAJOR < 3
	rv = p->key == NULL ? 0
			    : mbedtls_pk_parse_key(&key, (const unsigned char *) p->key, p->key_len, NULL, 0);
#else
#error "mbedtls 3 parses keys with an RNG: add it here"
#endif
	if (rv != 0) {
		// mbedtls's text names the format problem, never the key's content.
		brq_config_problem_add(problems, "TLS key file %s: %s", cfg->tls_key_file,
				       rv == MBEDTLS_ERR_PK_PASSWORD_REQUIRED
					       ? "the key is encrypted; give an unencrypted key"
					       : mbed_why(rv, why, sizeof(why)));
		rc = BRQ_EINVAL;
	} else if (rc == 0 && mbedtls_pk_check_pair(&crt->pk, &key) != 0) {
		brq_config_problem_add(problems,
				       "TLS key file %s: does not match the certificate in %s (its first "
				       "certificate must be the gateway's own)",
				       cfg->tls_key_file, cfg->tls_cert_file);
		rc = BRQ_EINVAL;
	}
	if (p->ca != NULL &&
	    (rv = mbedtls_x509_crt_parse(&ca, (const unsigned char *) p->ca, p->ca_len)) != 0) {
		brq_config_problem_add(problems, "TLS CA file %s: %s", cfg->tls_ca_file,
				       rv > 0 ? "a certificate in it does not parse"
					      : mbed_why(rv, why, sizeof(why)));
		rc = BRQ_EINVAL;
	}
	mbedtls_x509_crt_free(&ca);
	mbedtls_pk_free(&key); // zeroizes
	return rc;
}

int
brq_tls_check(brq_config *cfg, brq_config_problems *problems)
{
	tls_pem          p;
	mbedtls_x509_crt crt;
	int              rc = read_all(cfg, &p, problems);
	mbedtls_x509_crt_init(&crt);
	if (rc != BRQ_ENOMEM && parse_all(cfg, &p, &crt, problems) != 0) {
		rc = BRQ_EINVAL;
	}
	mbedtls_x509_crt_free(&crt);
	if (rc == 0) {
		crypto_generichash(cfg->tls_cert_digest, BRQ_TLS_DIGEST_LEN, (const unsigned char *) p.cert,
				   p.cert_len, NULL, 0);
		crypto_generichash(cfg->tls_key_digest, BRQ_TLS_DIGEST_LEN, (const unsigned char *) p.key,
				   p.key_len, NULL, 0);
		if (p.ca != NULL) {
			crypto_generichash(cfg->tls_ca_digest, BRQ_TLS_DIGEST_LEN,
					   (const unsigned char *) p.ca, p.ca_len, NULL, 0);
		}
	}
	pem_fini(&p);
	return rc;
}

// Logs who the certificate names and until when; a warning when it has expired
// (clients refuse it: the listener serves nobody until a new one is installed).
static void
log_cert(const brq_config *cfg, const mbedtls_x509_crt *crt)
{
	char                     subject[256];
	char                     until[32];
	const mbedtls_x509_time *t          = &crt->valid_to;
	bool                     is_expired = mbedtls_x509_time_is_past(t) != 0;
	static const char *const auth[]     = {"none", "required"};
	if (mbedtls_x509_dn_gets(subject, sizeof(subject), &crt->subject) < 0) {
		snprintf(subject, sizeof(subject), "?");
	}
	snprintf(until, sizeof(until), "%04d-%02d-%02dT%02d:%02d:%02dZ", t->year, t->mon, t->day, t->hour,
		 t->min, t->sec);
	if (is_expired) {
		BRQ_LOG_WARN("tls_cert_expired", "subject=%s not_after=%s file=%s", BRQ_LOG_Q(subject), until,
			     BRQ_LOG_Q(cfg->tls_cert_file));
	}
	BRQ_LOG_INFO("tls_ready", "subject=%s not_after=%s client_auth=%s", BRQ_LOG_Q(subject), until,
		     auth[cfg->tls_client_auth]);
}

// NNG's server configuration from p: own certificate and key, and the CA with client
// authentication required when set. Returns 0 and *out, or an NNG error.
static int
server_config(const brq_config *cfg, const tls_pem *p, nng_tls_config **out)
{
	nng_tls_config *c;
	int             rv = nng_tls_config_alloc(&c, NNG_TLS_MODE_SERVER);
	if (rv != 0) {
		return rv;
	}
	if ((rv = nng_tls_config_own_cert(c, p->cert, p->key, NULL)) == 0 && p->ca != NULL) {
		// A CRL in the CA file is used too, as nng_tls_config_ca_file() does.
		const char *crl = strstr(p->ca, "-----BEGIN X509 CRL-----") != NULL ? p->ca : NULL;
		rv              = nng_tls_config_ca_chain(c, p->ca, crl);
	}
	if (rv == 0) {
		rv = nng_tls_config_auth_mode(c,
					      cfg->tls_client_auth == BRQ_TLS_CLIENT_AUTH_REQUIRED
						      ? NNG_TLS_AUTH_MODE_REQUIRED
						      : NNG_TLS_AUTH_MODE_NONE);
	}
	if (rv != 0) {
		nng_tls_config_free(c);
		return rv;
	}
	*out = c;
	return 0;
}

// Reads and checks the certificate files of *v and builds the server configuration;
// logs every problem under `event` (and the certificate when log_certificate). On 0
// *out is the caller's reference (nng_tls_config_free); else BRQ_EIO.
static int
load_server_config(const brq_config *v, const char *event, bool log_certificate, nng_tls_config **out)
{
	brq_config_problems problems;
	tls_pem             p;
	mbedtls_x509_crt    crt;
	int                 rv = 0;

	*out = NULL;
	brq_config_problems_init(&problems);
	mbedtls_x509_crt_init(&crt);
	int rc = read_all(v, &p, &problems);
	if (rc == 0 && (rc = parse_all(v, &p, &crt, &problems)) == 0) {
		rv = server_config(v, &p, out);
		rc = rv != 0 ? BRQ_EIO : 0;
	}
	pem_fini(&p);
	for (size_t i = 0; i < problems.count; i++) {
		BRQ_LOG_ERROR(event, "problem=%s", BRQ_LOG_Q(problems.lines[i]));
	}
	if (rv != 0) {
		BRQ_LOG_ERROR(event, "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
	}
	if (rc == 0 && log_certificate) {
		log_cert(v, &crt);
	}
	mbedtls_x509_crt_free(&crt);
	brq_config_problems_fini(&problems);
	return rc == 0 ? 0 : BRQ_EIO;
}

int
brq_tls_listener_setup(nng_listener listener, const brq_config *cfg)
{
	nng_tls_config *c;
	if (!brq_tls_is_url(cfg->listen)) {
		return 0;
	}
	if (load_server_config(cfg, "tls_failed", true, &c) != 0) {
		return BRQ_EIO;
	}
	int rv = nng_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, c);
	nng_tls_config_free(c); // the listener holds its own reference
	if (rv != 0) {
		BRQ_LOG_ERROR("tls_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		return BRQ_EIO;
	}
	return 0;
}

int
brq_tls_probe_setup(nng_dialer dialer, const brq_config *cfg)
{
	nng_tls_config *c;
	if (!brq_tls_is_url(cfg->listen)) {
		return 0;
	}
	int rv = nng_tls_config_alloc(&c, NNG_TLS_MODE_CLIENT);
	if (rv != 0) {
		return rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EIO;
	}
	if ((rv = nng_tls_config_auth_mode(c, NNG_TLS_AUTH_MODE_NONE)) == 0) {
		rv = nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, c);
	}
	nng_tls_config_free(c); // the dialer holds its own reference
	return rv == 0 ? 0 : rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EIO;
}

// A view of cfg whose RPC TLS files are the HTTP endpoint's, so that the checks and the
// server configuration above serve both. No CA: client certificates are not asked for.
static brq_config
http_view(const brq_config *cfg)
{
	brq_config v      = {0};
	v.tls_cert_file   = cfg->http_tls_cert_file;
	v.tls_key_file    = cfg->http_tls_key_file;
	v.tls_client_auth = BRQ_TLS_CLIENT_AUTH_NONE;
	return v;
}

int
brq_tls_http_check(brq_config *cfg, brq_config_problems *problems)
{
	brq_config v  = http_view(cfg);
	int        rc = brq_tls_check(&v, problems);
	if (rc == 0) {
		memcpy(cfg->http_tls_cert_digest, v.tls_cert_digest, BRQ_TLS_DIGEST_LEN);
		memcpy(cfg->http_tls_key_digest, v.tls_key_digest, BRQ_TLS_DIGEST_LEN);
	}
	return rc;
}

int
brq_tls_http_setup(nng_http_server *srv, const brq_config *cfg)
{
	nng_tls_config *c;
	brq_config      v = http_view(cfg);
	if (cfg->http_tls_cert_file == NULL) {
		return 0;
	}
	if (load_server_config(&v, "http_tls_failed", false, &c) != 0) {
		return BRQ_EIO;
	}
	int rv = nng_http_server_set_tls(srv, c);
	nng_tls_config_free(c); // the server holds its own reference
	if (rv != 0) {
		BRQ_LOG_ERROR("http_tls_failed", "error=%s", BRQ_LOG_Q(nng_strerror(rv)));
		return BRQ_EIO;
	}
	return 0;
}
