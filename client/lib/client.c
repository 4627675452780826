/* SPDX-License-Identifier: MIT */
/* Client handle: open/close, the bearer token, options structs, ping, names and the version. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "brq_version.h"
#include "err.h"
#include "tls.h"

#define DEFAULT_URL "ipc:///run/brooq/gateway.sock"
/* Minimum token length (SPEC §5: at least 32 random bytes). */
#define TOKEN_MIN 32
/* Largest token file read: a maximal token plus generous trailing whitespace
 * (the gateway reads its token files the same way). */
#define TOKEN_FILE_MAX 4096

_Static_assert(BROOQ_LEASE_LEN == BRQ_LEASE_LEN, "lease token sizes differ");
/* brooq.h carries BROOQ_VERSION_MAJOR/MINOR/PATCH as literals (it is installed
 * alone); brq_version.h defines the same macros from CMake's PROJECT_VERSION. Both
 * are included here, so numbers that differ fail the build (-Werror: "macro
 * redefined"); client_test checks brooq_version() against the macros as well. */
/* ---- token ------------------------------------------------------------------------ */

static bool
is_trailing_space(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/*
 * Reads the token file `path` into locked memory (sodium_malloc) at *out, *out_len.
 * The token is the file's content without trailing whitespace, 32..BRQ_TOKEN_MAX
 * bytes. Messages name the file, never its content. Returns 0, BRQ_EIO (cannot
 * read it), BRQ_EINVAL (not a usable token) or BRQ_ENOMEM. On failure nothing is
 * allocated and every buffer that saw the token is wiped.
 */
static int
token_load(const char *path, char **out, size_t *out_len)
{
	unsigned char buf[TOKEN_FILE_MAX + 1];
	size_t        len = 0;
	struct stat   st;
	char         *tok;
	int           err;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return brq_fail(BRQ_EIO, "token file %s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		err = brq_fail(BRQ_EINVAL, "token file %s: not a regular file", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = brq_fail(BRQ_EIO, "token file %s: cannot read: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0 || (len += (size_t) n) == sizeof(buf))
			break;
	}
	while (len > 0 && len < sizeof(buf) && is_trailing_space(buf[len - 1]))
		len--;
	if (len > BRQ_TOKEN_MAX) {
		err = brq_fail(BRQ_EINVAL, "token file %s: token too long (at most %d bytes)", path,
			       BRQ_TOKEN_MAX);
		goto out;
	}
	if (len < TOKEN_MIN) {
		err = brq_fail(BRQ_EINVAL, "token file %s: token too short (%zu bytes; at least %d required)",
			       path, len, TOKEN_MIN);
		goto out;
	}
	if ((tok = sodium_malloc(len + 1)) == NULL) {
		err = brq_fail(BRQ_ENOMEM, "token: cannot allocate locked memory");
		goto out;
	}
	memcpy(tok, buf, len);
	tok[len] = '\0';
	/* Read-only from here on: a stray write faults instead of corrupting it. */
	(void) sodium_mprotect_readonly(tok);
	*out     = tok;
	*out_len = len;
	err      = 0;
out:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return err;
}

static const char *
env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return (v != NULL && v[0] != '\0') ? v : NULL;
}

/* ---- open / close ------------------------------------------------------------------- */

static void
tls_free(nng_tls_config *tls)
{
	if (tls != NULL) /* nng_tls_config_free(NULL) would crash */
		nng_tls_config_free(tls);
}

/* The TLS configuration for url (*out NULL unless it is tls+tcp://): the options,
 * else the environment. 0, or BRQ_EINVAL / BRQ_ENOMEM with the message set. */
static int
tls_open(const brooq_client_opts *o, const char *url, nng_tls_config **out)
{
	*out = NULL;
	if (!brq_client_tls_is_url(url)) {
		if (o->tls_ca_file != NULL || o->tls_cert_file != NULL || o->tls_key_file != NULL ||
		    o->tls_server_name != NULL)
			return brq_fail(BRQ_EINVAL,
					"client_open: the tls_* options are for tls+tcp:// "
					"URLs, not %s",
					url);
		return 0;
	}
	brq_client_tls_opts t = {
		.ca_file = o->tls_ca_file != NULL ? o->tls_ca_file : env_nonempty("BROOQ_TLS_CA_FILE"),
		.cert_file =
			o->tls_cert_file != NULL ? o->tls_cert_file : env_nonempty("BROOQ_TLS_CERT_FILE"),
		.key_file    = o->tls_key_file != NULL ? o->tls_key_file : env_nonempty("BROOQ_TLS_KEY_FILE"),
		.server_name = o->tls_server_name != NULL ? o->tls_server_name
							  : env_nonempty("BROOQ_TLS_SERVER_NAME"),
	};
	return brq_client_tls_config(url, &t, out);
}

/* The edge of client_open: the token's troubles are BROOQ_ETOKEN. */
static brooq_err
open_err(int rv, bool token)
{
	if (token && rv != BRQ_ENOMEM)
		return BROOQ_ETOKEN;
	return brq_err_public(rv);
}

brooq_err
brooq_client_open(const brooq_client_opts *opts, brooq_client **out)
{
	brooq_client_opts o;
	brooq_client     *c;
	int               rv;

	brq_msg_clear();
	if (out == NULL)
		return BRQ_ARG_FAIL("client_open: out is NULL");
	if ((rv = brq_opts_copy(&o, sizeof(o), opts, BRQ_CLIENT_OPTS_V1, "brooq_client_opts")) != 0)
		return brq_err_public(rv);
	if (o.timeout_ms < 0)
		return BRQ_ARG_FAIL("client_open: timeout_ms must be >= 0");
	const char *url = o.url != NULL ? o.url : env_nonempty("BROOQ_URL");
	if (url == NULL)
		url = DEFAULT_URL;
	const char *token_file = o.token_file != NULL ? o.token_file : env_nonempty("BROOQ_TOKEN_FILE");
	if (token_file == NULL)
		return open_err(brq_fail(BRQ_EINVAL,
					 "no token file: set brooq_client_opts.token_file or "
					 "$BROOQ_TOKEN_FILE"),
				true);
	nng_tls_config *tls = NULL;
	if ((rv = tls_open(&o, url, &tls)) != 0)
		return brq_err_public(rv);
	if (sodium_init() < 0) {
		tls_free(tls);
		return brq_err_public(brq_fail(BRQ_ENOMEM, "client_open: libsodium failed to initialise"));
	}

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		tls_free(tls);
		return brq_err_public(brq_fail(BRQ_ENOMEM, "client_open: out of memory"));
	}
	c->log     = o.log != NULL ? o.log : brooq_log_stderr;
	c->log_arg = o.log_arg;
	if ((rv = token_load(token_file, &c->token, &c->token_len)) != 0) {
		tls_free(tls);
		free(c);
		return open_err(rv, true);
	}
	rv = brq_rpc_open(&c->rpc, url, o.timeout_ms > 0 ? o.timeout_ms : BRQ_RPC_TIMEOUT_MS, c->token,
			  c->token_len, tls);
	tls_free(tls); /* the transport holds its own reference */
	if (rv != 0) {
		sodium_free(c->token);
		free(c);
		return open_err(rv, false);
	}
	*out = c;
	return BROOQ_OK;
}

int
brq_client_rpc_open(brooq_client *c, brq_rpc *out)
{
	/* Same URL, token and TLS configuration: the second transport takes its own reference. */
	return brq_rpc_open(out, c->rpc.url, c->rpc.timeout_ms, c->token, c->token_len, c->rpc.tls);
}

void
brooq_client_close(brooq_client *c)
{
	if (c == NULL)
		return;
	brq_rpc_close(&c->rpc);
	sodium_free(c->token);
	free(c);
}

/* ---- ping, names, version ---------------------------------------------------------------- */

/* The gateway's name into server[0..*cap), cut to fit. */
static int
ping_out(const brq_call *k, void *server, void *cap)
{
	brq_str s = k->rep.ping.server;
	size_t  n = s.len < *(size_t *) cap - 1 ? s.len : *(size_t *) cap - 1;
	memcpy(server, s.ptr, n);
	((char *) server)[n] = '\0';
	return 0;
}

brooq_err
brooq_ping(brooq_client *c, char *server, size_t cap)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || server == NULL || cap == 0)
		return BRQ_ARG_FAIL("ping: client and server buffer are required");
	brq_call_init(&k, BRQ_OP_PING);
	return brq_call_run(&c->rpc, &k, 0, 0, ping_out, server, &cap);
}

/* The wire's names (the values are the same, ops.c asserts it); "unknown" for others. */
const char *
brooq_state_name(brooq_state st)
{
	return (unsigned) st < BRQ_STATE__COUNT ? brq_state_name((brq_state) st) : "unknown";
}

const char *
brooq_version(void)
{
	return BROOQ_VERSION;
}
