// SPDX-License-Identifier: MIT
// TLS of the tls+tcp:// listener: NNG 1.5.2's TLS over mbedtls 2.28 (TLS 1.2; NNG
// offers no later version with mbedtls).
//
// The files (config.h: BROOQ_TLS_CERT_FILE, BROOQ_TLS_KEY_FILE, BROOQ_TLS_CA_FILE) are
// read by this module only, twice: once when the configuration is loaded (at start, by
// --check-config and on every SIGHUP), to report every problem with the others, and
// again when the listener starts, to build NNG's configuration from what is on disk
// then. Checks: each file is a regular file of PEM text that mbedtls parses; the key
// is not encrypted and matches the certificate; the key file grants nothing to
// "other" (mode & 0007), the rule of the token files. An expired certificate is not a
// problem (the gateway still starts, so that a restart never depends on the clock):
// it is logged as a warning when the listener starts, with the certificate's end date.
// The key is never logged, shown in a problem, or kept: its buffers are wiped once
// NNG (mbedtls) has parsed it.
//
// Certificates are not reloaded while the gateway runs: NNG 1.5.2 reads the listener's
// TLS configuration without a lock when it accepts a connection
// (tls_listener_accept), so replacing it under a running listener would race. A
// SIGHUP checks the files again and names the ones that changed in
// reload_needs_restart (the digests in brq_config); a restart applies them.
#ifndef BRQ_GATEWAY_TLS_H
#define BRQ_GATEWAY_TLS_H

#include "brq_base.h"

#include <stdbool.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "config/config.h"

// True when listen is a tls+tcp:// URL.
bool brq_tls_is_url(const char *listen);

// Reads and checks the TLS files named in *cfg (as described above) and stores their
// digests in cfg->tls_*_digest. Adds one problem per file problem (naming the file,
// never its content). Returns 0, BRQ_EINVAL (problems added) or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_tls_check(brq_config *cfg, brq_config_problems *problems);

// Builds the server's TLS configuration from cfg's files and sets it on listener, which
// must not be started yet. Logs the certificate's subject and end date (a warning when
// it has expired). A no-op returning 0 unless cfg->listen is tls+tcp://. Returns 0, or
// BRQ_EIO after logging why (a file became unreadable or invalid since the check).
BRQ_MUSTCHECK int brq_tls_listener_setup(nng_listener listener, const brq_config *cfg);

// The self-probe's side: a client configuration for dialer, which dials our own
// listener on loopback. It verifies no certificate: the probe checks that the listener
// completes handshakes and answers, while the name in the certificate is that of the
// gateway's public address, which a loopback dial cannot match (and nobody else can be
// listening on our port while we hold it). A no-op returning 0 unless cfg->listen is
// tls+tcp://. Returns 0 or BRQ_ENOMEM / BRQ_EIO (nothing set).
BRQ_MUSTCHECK int brq_tls_probe_setup(nng_dialer dialer, const brq_config *cfg);

// The HTTP endpoint's HTTPS (BROOQ_HTTP_TLS_CERT_FILE and _KEY_FILE, config_console.c):
// the same checks of cfg->http_tls_cert_file and cfg->http_tls_key_file as brq_tls_check
// (no CA: browsers bring no client certificate), digests into cfg->http_tls_*_digest.
// 0, BRQ_EINVAL (problems added) or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_tls_http_check(brq_config *cfg, brq_config_problems *problems);

// Sets the HTTPS configuration from those files on srv, which must not be started yet. A
// no-op returning 0 when cfg->http_tls_cert_file is NULL. 0, or BRQ_EIO after logging why.
BRQ_MUSTCHECK int brq_tls_http_setup(nng_http_server *srv, const brq_config *cfg);

#endif // BRQ_GATEWAY_TLS_H
