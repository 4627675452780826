/* SPDX-License-Identifier: MIT */
/* Client handle: open/close, the bearer token, error texts, ping. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nng/protocol/reqrep0/req.h>
#include <sodium.h>

#define DEFAULT_URL "ipc:///run/brooq/gateway.sock"
/* Minimum token length (SPEC §5: at least 32 random bytes). */
#define TOKEN_MIN 32
/* Largest token file read: a maximal token plus generous trailing whitespace
 * (the gateway reads its token files the same way). */
#define TOKEN_FILE_MAX 4096
/* Room for the gateway's message (BRQ_MSG_MAX) or a local one, plus NUL. */
#define MSG_CAP (BRQ_MSG_MAX + 1)

_Static_assert(BROOQ_LEASE_LEN == BRQ_LEASE_LEN, "lease token sizes differ");

/* The calling thread's last failure text; "" after a success. */
static _Thread_local char last_msg[MSG_CAP];

/* ---- messages and codes --------------------------------------------------------- */

void
brq_msg_clear(void)
{
	last_msg[0] = '\0';
}

void
brq_msg_set(const char *s, size_t len)
{
	if (len >= sizeof(last_msg))
		len = sizeof(last_msg) - 1;
	memcpy(last_msg, s, len);
	last_msg[len] = '\0';
}

brooq_err
brq_fail(brooq_err err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void) vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	return err;
}

brooq_err
brq_err_from_status(brq_status st)
{
	switch (st) {
	case BRQ_ST_OK: return BROOQ_OK;
	case BRQ_ST_INVALID_ARGUMENT: return BROOQ_EINVALID_ARGUMENT;
	case BRQ_ST_UNAUTHENTICATED: return BROOQ_EUNAUTHENTICATED;
	case BRQ_ST_PERMISSION_DENIED: return BROOQ_EPERMISSION_DENIED;
	case BRQ_ST_NOT_FOUND: return BROOQ_ENOT_FOUND;
	case BRQ_ST_UNAVAILABLE: return BROOQ_EUNAVAILABLE;
	case BRQ_ST_TOO_LARGE: return BROOQ_ETOO_LARGE;
	case BRQ_ST_RESOURCE_EXHAUSTED: return BROOQ_ERESOURCE_EXHAUSTED;
	case BRQ_ST_INTERNAL:
	default: return BROOQ_EINTERNAL;
	}
}

const char *
brooq_strerror(brooq_err err)
{
	switch (err) {
	case BROOQ_OK: return "ok";
	case BROOQ_EINVAL: return "invalid argument (caught before sending)";
	case BROOQ_ENOMEM: return "out of memory";
	case BROOQ_ETIMEDOUT: return "timed out (the request may have run)";
	case BROOQ_ECONNECT: return "gateway not reachable";
	case BROOQ_EPROTO: return "malformed reply from the gateway";
	case BROOQ_ETOKEN: return "token file missing, unreadable or invalid";
	case BROOQ_EINVALID_ARGUMENT: return "invalid argument";
	case BROOQ_EUNAUTHENTICATED: return "unauthenticated";
	case BROOQ_EPERMISSION_DENIED: return "permission denied";
	case BROOQ_ENOT_FOUND: return "not found";
	case BROOQ_EUNAVAILABLE: return "gateway unavailable";
	case BROOQ_ETOO_LARGE: return "too large";
	case BROOQ_ERESOURCE_EXHAUSTED: return "resource exhausted";
	case BROOQ_EINTERNAL: return "internal gateway error";
	}
	return "unknown error";
}

const char *
brooq_last_message(void)
{
	return last_msg;
}

const char *
brooq_state_name(brooq_state st)
{
	switch (st) {
	case BROOQ_PENDING: return "pending";
	case BROOQ_PROCESSING: return "processing";
	case BROOQ_FAILED: return "failed";
	case BROOQ_DONE: return "done";
	case BROOQ_DEAD: return "dead";
	case BROOQ_CANCELED: return "canceled";
	}
	return "unknown";
}

/* ---- token ------------------------------------------------------------------------ */

static bool
is_trailing_space(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/*
 * Reads the token file `path` into locked memory (sodium_malloc) at *out, *out_len.
 * The token is the file's content without trailing whitespace, 32..BRQ_TOKEN_MAX
 * bytes. Messages name the file, never its content. On failure nothing is
 * allocated and every buffer that saw the token is wiped.
 */
static brooq_err
token_load(const char *path, char **out, size_t *out_len)
{
	unsigned char buf[TOKEN_FILE_MAX + 1];
	size_t        len = 0;
	struct stat   st;
	char         *tok;
	brooq_err     err = BROOQ_ETOKEN;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return brq_fail(BROOQ_ETOKEN, "token file %s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		(void) brq_fail(err, "token file %s: not a regular file", path);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			(void) brq_fail(err, "token file %s: cannot read: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0 || (len += (size_t) n) == sizeof(buf))
			break;
	}
	while (len > 0 && len < sizeof(buf) && is_trailing_space(buf[len - 1]))
		len--;
	if (len > BRQ_TOKEN_MAX) {
		(void) brq_fail(err, "token file %s: token too long (at most %d bytes)", path, BRQ_TOKEN_MAX);
		goto out;
	}
	if (len < TOKEN_MIN) {
		(void) brq_fail(err, "token file %s: token too short (%zu bytes; at least %d required)", path,
				len, TOKEN_MIN);
		goto out;
	}
	tok = sodium_malloc(len + 1);
	if (tok == NULL) {
		(void) brq_fail(BROOQ_ENOMEM, "token: cannot allocate locked memory");
		err = BROOQ_ENOMEM;
		goto out;
	}
	memcpy(tok, buf, len);
	tok[len] = '\0';
	/* Read-only from here on: a stray write faults instead of corrupting it. */
	(void) sodium_mprotect_readonly(tok);
	*out     = tok;
	*out_len = len;
	err      = BROOQ_OK;
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

brooq_err
brooq_client_open(const brooq_client_opts *opts, brooq_client **out)
{
	static const brooq_client_opts defaults = {0};
	brooq_client                  *c        = NULL;
	brooq_err                      err;
	int                            rv;

	brq_msg_clear();
	if (out == NULL)
		return brq_fail(BROOQ_EINVAL, "client_open: out is NULL");
	if (opts == NULL)
		opts = &defaults;
	if (opts->timeout_ms < 0)
		return brq_fail(BROOQ_EINVAL, "client_open: timeout_ms must be >= 0");
	const char *url = opts->url != NULL ? opts->url : env_nonempty("BROOQ_URL");
	if (url == NULL)
		url = DEFAULT_URL;
	const char *token_file =
		opts->token_file != NULL ? opts->token_file : env_nonempty("BROOQ_TOKEN_FILE");
	if (token_file == NULL)
		return brq_fail(BROOQ_ETOKEN,
				"no token file: set brooq_client_opts.token_file or $BROOQ_TOKEN_FILE");
	if (strlen(url) >= sizeof(c->url))
		return brq_fail(BROOQ_EINVAL, "client_open: url too long");
	if (sodium_init() < 0)
		return brq_fail(BROOQ_ENOMEM, "client_open: libsodium failed to initialise");

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return brq_fail(BROOQ_ENOMEM, "client_open: out of memory");
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : BRQ_CLIENT_TIMEOUT_MS;
	atomic_init(&c->next_rid, 1);
	brq_limits_default(&c->lim);
	snprintf(c->url, sizeof(c->url), "%s", url);
	if (pthread_mutex_init(&c->mtx, NULL) != 0) {
		free(c);
		return brq_fail(BROOQ_ENOMEM, "client_open: cannot create a mutex");
	}
	err = token_load(token_file, &c->token, &c->token_len);
	if (err != BROOQ_OK)
		goto fail_mtx;

	if ((rv = nng_req0_open(&c->sock)) != 0) {
		err = brq_fail(BROOQ_ENOMEM, "client_open: cannot open a REQ socket: %s", nng_strerror(rv));
		goto fail_token;
	}
	/* No silent re-send (a re-sent claim would leak a lease). Set on the socket
	 * before any context is opened: req0 contexts copy the socket's value at open
	 * (NNG-NOTES §2.3.8). With it off, a lost connection fails outstanding
	 * requests rather than re-sending them on reconnect (see rpc.c exchange). */
	rv = nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	if (rv != 0) {
		err = brq_fail(BROOQ_ENOMEM, "client_open: cannot configure the socket: %s",
			       nng_strerror(rv));
		goto fail_sock;
	}
	/* Non-blocking: the client opens before the gateway is up; NNG keeps
	 * redialling, and calls meanwhile time out. Only a bad URL fails here. */
	if ((rv = nng_dial(c->sock, url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
		err = rv == NNG_ENOMEM ? BROOQ_ENOMEM : BROOQ_EINVAL;
		(void) brq_fail(err, "client_open: url %s: %s", url, nng_strerror(rv));
		goto fail_sock;
	}
	*out = c;
	return BROOQ_OK;

fail_sock:
	nng_close(c->sock);
fail_token:
	sodium_free(c->token);
fail_mtx:
	pthread_mutex_destroy(&c->mtx);
	free(c);
	return err;
}

void
brooq_client_close(brooq_client *c)
{
	if (c == NULL)
		return;
	brq_rpc_drain(c);
	nng_close(c->sock);
	sodium_free(c->token);
	pthread_mutex_destroy(&c->mtx);
	free(c);
}

/* ---- ping ------------------------------------------------------------------------------ */

brooq_err
brooq_ping(brooq_client *c, char *server, size_t cap)
{
	brq_call  k;
	brooq_err err;

	brq_msg_clear();
	if (c == NULL || server == NULL || cap == 0)
		return brq_fail(BROOQ_EINVAL, "ping: client and server buffer are required");
	brq_call_init(&k, BRQ_OP_PING);
	err = brq_rpc_call(c, &k, 0);
	if (err == BROOQ_OK) {
		size_t n = k.rep.ping.server.len < cap - 1 ? k.rep.ping.server.len : cap - 1;
		memcpy(server, k.rep.ping.server.ptr, n);
		server[n] = '\0';
	}
	brq_call_fini(&k);
	return err;
}
