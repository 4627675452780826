/* SPDX-License-Identifier: MIT */
/* libbrooq-client: the TLS configuration of a tls+tcp:// connection (NNG over mbedtls). */
#ifndef BRQ_CLIENT_TLS_H
#define BRQ_CLIENT_TLS_H

#include <stdbool.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "brq_base.h"

/* Where the client's TLS settings come from, after the options and environment were
 * merged (client.c); all borrowed for the call. */
typedef struct brq_client_tls_opts {
	const char *ca_file;     /* PEM CA certificates the gateway's certificate must chain to */
	const char *cert_file;   /* PEM client certificate; NULL: none */
	const char *key_file;    /* its PEM private key (unencrypted); set iff cert_file is */
	const char *server_name; /* the name the gateway's certificate must carry; NULL: the URL's host */
} brq_client_tls_opts;

/* True when url is a tls+tcp:// URL. */
bool brq_client_tls_is_url(const char *url);

/*
 * The client configuration for a tls+tcp:// url: the gateway's certificate must chain
 * to o->ca_file, be valid now and carry the server name (mbedtls 2.28 matches it
 * against the certificate's DNS names and common name, not its IP addresses); our own
 * certificate and key when given. The key file must grant nothing to "other" (mode &
 * 0007), as the gateway requires of its own. Returns 0 and *out (the caller frees it
 * with nng_tls_config_free), or BRQ_EINVAL (a file or setting is unusable) or
 * BRQ_ENOMEM, with the calling thread's message set (naming files, never a key).
 */
int brq_client_tls_config(const char *url, const brq_client_tls_opts *o, nng_tls_config **out) BRQ_MUSTCHECK;

#endif
