/* SPDX-License-Identifier: MIT */
/* TLS of a tls+tcp:// connection: the CA, our certificate and key, the server name, as an NNG configuration.
 */
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/pk.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <sodium.h>

#include "err.h"

/* Largest certificate (chain) or key file read. */
#define PEM_FILE_MAX (256 * 1024)
#define HOST_MAX     256

bool
brq_client_tls_is_url(const char *url)
{
	return url != NULL && strncmp(url, "tls+tcp://", 10) == 0;
}

/* Reads the PEM file `path` into *out (NUL-terminated, malloc'd; the caller wipes and
 * frees it). A key file must grant nothing to "other". 0 or BRQ_EINVAL / BRQ_ENOMEM
 * with the message set. */
static int
read_pem(const char *what, const char *path, bool is_key, char **out, size_t *cap)
{
	struct stat st;
	size_t      len = 0;
	int         err = 0;
	char       *buf = NULL;
	int         fd  = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return brq_fail(BRQ_EINVAL, "%s %s: cannot open: %s", what, path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		err = brq_fail(BRQ_EINVAL, "%s %s: not a regular file", what, path);
	} else if (is_key && (st.st_mode & 0007) != 0) {
		err = brq_fail(BRQ_EINVAL,
			       "%s %s: mode %04o lets others read or write it; remove their access "
			       "(chmod o-rwx)",
			       what, path, (unsigned) (st.st_mode & 07777));
	} else if ((buf = malloc(PEM_FILE_MAX + 2)) == NULL) {
		err = brq_fail(BRQ_ENOMEM, "%s: out of memory", what);
	}
	while (err == 0) {
		ssize_t n = read(fd, buf + len, PEM_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = brq_fail(BRQ_EINVAL, "%s %s: cannot read: %s", what, path, strerror(errno));
		else if (n == 0 || (len += (size_t) n) > PEM_FILE_MAX)
			break;
	}
	if (err == 0 && (len == 0 || len > PEM_FILE_MAX || memchr(buf, '\0', len) != NULL))
		err = brq_fail(BRQ_EINVAL, "%s %s: %s", what, path,
			       len == 0                     ? "is empty"
				       : len > PEM_FILE_MAX ? "larger than 256KiB"
							    : "not PEM text");
	close(fd);
	if (err != 0) {
		if (buf != NULL)
			sodium_memzero(buf, PEM_FILE_MAX + 2);
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out     = buf;
	*cap     = PEM_FILE_MAX + 2;
	return 0;
}

static void
pem_free(char *buf, size_t cap)
{
	if (buf != NULL)
		sodium_memzero(buf, cap);
	free(buf);
}

/* The host of a tls+tcp:// URL ("[::1]" gives "::1") into host[0..HOST_MAX). */
static int
url_host(const char *url, char *host)
{
	const char *h = url + strlen("tls+tcp://");
	const char *end;
	if (h[0] == '[') {
		h++;
		end = strchr(h, ']');
	} else {
		end = strrchr(h, ':');
	}
	if (end == NULL || end == h || (size_t) (end - h) >= HOST_MAX)
		return brq_fail(BRQ_EINVAL, "client_open: url %s: expected tls+tcp://HOST:PORT", url);
	memcpy(host, h, (size_t) (end - h));
	host[end - h] = '\0';
	return 0;
}

/* Whether the key belongs to the (first) certificate: NNG does not check, and a
 * mismatch would only show as handshakes the gateway refuses. Both parse (NNG has
 * parsed them already). */
static bool
is_pair(const char *cert, const char *key)
{
	mbedtls_x509_crt   crt;
	mbedtls_pk_context pk;
	mbedtls_x509_crt_init(&crt);
	mbedtls_pk_init(&pk);
#if MBEDTLS_VERSION_MAJOR < 3
	bool ok = mbedtls_x509_crt_parse(&crt, (const unsigned char *) cert, strlen(cert) + 1) == 0 &&
		mbedtls_pk_parse_key(&pk, (const unsigned char *) key, strlen(key) + 1, NULL, 0) == 0 &&
		mbedtls_pk_check_pair(&crt.pk, &pk) == 0;
#else
#error "mbedtls 3 parses keys with an RNG: add it here"
#endif
	mbedtls_pk_free(&pk); /* zeroizes */
	mbedtls_x509_crt_free(&crt);
	return ok;
}

/* Our own certificate and key, read here so that the key's mode is checked. */
static int
own_cert(nng_tls_config *c, const brq_client_tls_opts *o)
{
	char  *cert = NULL, *key = NULL;
	size_t cert_cap = 0, key_cap = 0;
	int    err, rv;
	if ((err = read_pem("TLS certificate file", o->cert_file, false, &cert, &cert_cap)) != 0)
		return err;
	if ((err = read_pem("TLS key file", o->key_file, true, &key, &key_cap)) == 0 &&
	    (rv = nng_tls_config_own_cert(c, cert, key, NULL)) != 0)
		err = brq_fail(rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EINVAL,
			       "TLS certificate file %s, key file %s: %s (PEM, and an unencrypted key)",
			       o->cert_file, o->key_file, nng_strerror(rv));
	else if (err == 0 && !is_pair(cert, key))
		err = brq_fail(BRQ_EINVAL, "TLS key file %s: does not match the certificate in %s",
			       o->key_file, o->cert_file);
	pem_free(cert, cert_cap);
	pem_free(key, key_cap);
	return err;
}

int
brq_client_tls_config(const char *url, const brq_client_tls_opts *o, nng_tls_config **out)
{
	nng_tls_config *c;
	char            host[HOST_MAX];
	int             rv, err;

	if (o->ca_file == NULL)
		return brq_fail(BRQ_EINVAL,
				"client_open: %s needs a CA file: set "
				"brooq_client_opts.tls_ca_file or $BROOQ_TLS_CA_FILE",
				url);
	if ((o->cert_file == NULL) != (o->key_file == NULL))
		return brq_fail(BRQ_EINVAL,
				"client_open: a TLS client certificate needs its key, and a "
				"key its certificate (tls_cert_file and tls_key_file)");
	if (o->server_name == NULL && (err = url_host(url, host)) != 0)
		return err;
	if ((rv = nng_tls_config_alloc(&c, NNG_TLS_MODE_CLIENT)) != 0)
		return brq_fail(rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EINVAL, "client_open: TLS: %s",
				nng_strerror(rv));
	/* Required is NNG's client default; said here because it is the point. */
	if ((rv = nng_tls_config_auth_mode(c, NNG_TLS_AUTH_MODE_REQUIRED)) != 0 ||
	    (rv = nng_tls_config_server_name(c, o->server_name != NULL ? o->server_name : host)) != 0) {
		err = brq_fail(BRQ_ENOMEM, "client_open: TLS: %s", nng_strerror(rv));
	} else if ((rv = nng_tls_config_ca_file(c, o->ca_file)) != 0) {
		err = brq_fail(rv == NNG_ENOMEM ? BRQ_ENOMEM : BRQ_EINVAL,
			       "TLS CA file %s: %s (PEM certificates expected)", o->ca_file,
			       nng_strerror(rv));
	} else {
		err = o->cert_file != NULL ? own_cert(c, o) : 0;
	}
	if (err != 0) {
		nng_tls_config_free(c);
		return err;
	}
	*out = c;
	return 0;
}
