// SPDX-License-Identifier: MIT
// RPC self-probe: pings the gateway's own listener over a new connection, for /healthz.
#include "selfprobe.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <sodium.h>

#include "bgthread.h"
#include "brq_clock.h"
#include "log/log.h"
#include "proto.h"
#include "tls.h"

#define TOKEN_BYTES    32                // random bytes, sent as 64 hex characters
#define TOKEN_HEX      (TOKEN_BYTES * 2) // BRQ_AUTH_TOKEN_MIN..MAX
#define MAX_TIMEOUT_MS ((uint64_t) 2000) // per step (connect+send, reply)
#define WHY_MAX        160

struct brq_selfprobe {
	const brq_config *cfg;                  // borrowed: the listener's TLS settings
	char             *url;                  // what each probe dials (owned)
	uint64_t          interval_ms;          // between probe starts
	uint64_t          timeout_ms;           // for sending (connection included), and again for the reply
	uint64_t          window_ms;            // healthy while the last success is at most this old
	char              token[TOKEN_HEX + 1]; // secret: never logged; wiped by brq_selfprobe_free

	_Atomic uint64_t last_ok_ms; // brq_now_ms() of the last success; 0 = none yet

	// The thread (no database connection: it talks to the listener). Owned by it:
	bool         is_ok; // the last probe succeeded (or none ran yet): logs changes only
	brq_bgthread bg;
};

int
brq_selfprobe_dial_url(const char *listen, char *out, size_t outlen)
{
	const char *scheme = strncmp(listen, "tcp://", 6) == 0 ? "tcp://"
		: strncmp(listen, "tls+tcp://", 10) == 0       ? "tls+tcp://"
							       : NULL;
	const char *host   = listen;
	const char *port   = NULL;
	const char *repl   = NULL;
	if (scheme != NULL) {
		host += strlen(scheme);
		port = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
		port = port != NULL && host[0] == '[' ? port + 1 : port;
	}
	if (port != NULL) {
		size_t hl = (size_t) (port - host);
		if (hl == 0 || (hl == 1 && host[0] == '*') || (hl == 7 && strncmp(host, "0.0.0.0", 7) == 0)) {
			repl = "127.0.0.1";
		} else if (hl == 4 && strncmp(host, "[::]", 4) == 0) {
			repl = "[::1]";
		}
	}
	int n = repl != NULL ? snprintf(out, outlen, "%s%s%s", scheme, repl, port)
			     : snprintf(out, outlen, "%s", listen);
	return n >= 0 && (size_t) n < outlen ? 0 : BRQ_E2BIG;
}

// Checks a reply message: 0 when it is an `ok` answer to ping, else BRQ_EUNAVAIL with
// the reason in why.
static int
check_reply(nng_msg *m, char *why, size_t whylen)
{
	brq_arena  arena;
	brq_reply  rep;
	brq_limits lim;
	char       err[128];
	int        rc = BRQ_EUNAVAIL;
	brq_limits_default(&lim);
	brq_arena_init(&arena);
	brq_status st = brq_reply_decode(&rep, BRQ_OP_PING, nng_msg_body(m), nng_msg_len(m), &lim, &arena,
					 err, sizeof(err));
	if (st != BRQ_ST_OK) {
		snprintf(why, whylen, "reply does not decode: %s", err);
	} else if (rep.code != BRQ_ST_OK) {
		snprintf(why, whylen, "ping answered %s", brq_status_name(rep.code));
	} else {
		rc = 0;
	}
	brq_arena_fini(&arena);
	return rc;
}

// One probe: a new REQ socket, a non-blocking dial (NNG connects in the background;
// the send waits for the connection, at most timeout_ms), a ping, its reply. Returns
// 0, or a BRQ_E* code with the reason in why (never the token).
static int
probe_once(brq_selfprobe *p, char *why, size_t whylen)
{
	nng_socket  s;
	nng_dialer  d;
	nng_msg    *m   = NULL;
	brq_request req = {.op = BRQ_OP_PING, .token = {p->token, TOKEN_HEX}};
	brq_buf     b;
	int         rv, rc = BRQ_EUNAVAIL;

	if ((rv = nng_req0_open(&s)) != 0) {
		snprintf(why, whylen, "socket: %s", nng_strerror(rv));
		return BRQ_EIO;
	}
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, (nng_duration) p->timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, (nng_duration) p->timeout_ms);
	brq_buf_init(&b, 0);
	// nng_dial() in two steps: a tls+tcp:// dialer gets its TLS settings before it starts.
	if ((rv = nng_dialer_create(&d, s, p->url)) == 0 && brq_tls_probe_setup(d, p->cfg) != 0) {
		snprintf(why, whylen, "dial: the TLS settings could not be applied");
		goto out;
	}
	if (rv != 0 || (rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK)) != 0) {
		snprintf(why, whylen, "dial: %s", nng_strerror(rv));
		goto out;
	}
	if (brq_request_encode(&b, &req) != 0 || nng_msg_alloc(&m, 0) != 0 ||
	    nng_msg_append(m, b.data, b.len) != 0) {
		snprintf(why, whylen, "out of memory");
		rc = BRQ_ENOMEM;
		goto out;
	}
	if ((rv = nng_sendmsg(s, m, 0)) != 0) {
		snprintf(why, whylen, "no connection within %llu ms (%s)", (unsigned long long) p->timeout_ms,
			 nng_strerror(rv));
		goto out;
	}
	m = NULL; // NNG's now
	if ((rv = nng_recvmsg(s, &m, 0)) != 0) {
		snprintf(why, whylen, "no reply within %llu ms (%s)", (unsigned long long) p->timeout_ms,
			 nng_strerror(rv));
		goto out;
	}
	rc = check_reply(m, why, whylen);
out:
	if (b.data != NULL) {
		sodium_memzero(b.data, b.len); // it held the token
	}
	brq_buf_fini(&b);
	if (m != NULL) {
		nng_msg_free(m);
	}
	nng_close(s);
	return rc;
}

// One round (bgthread.h): a probe, logged when the verdict changes. The next starts
// an interval after this one started.
static uint64_t
probe_round(void *arg)
{
	brq_selfprobe *p     = arg;
	uint64_t       start = brq_now_ms();
	char           why[WHY_MAX];
	if (probe_once(p, why, sizeof(why)) == 0) {
		atomic_store_explicit(&p->last_ok_ms, brq_now_ms(), memory_order_release);
		if (!p->is_ok) {
			BRQ_LOG_INFO("selfprobe_ok", "url=%s", BRQ_LOG_Q(p->url));
		}
		p->is_ok = true;
	} else {
		if (p->is_ok) {
			BRQ_LOG_WARN("selfprobe_failed", "url=%s reason=%s window_ms=%llu", BRQ_LOG_Q(p->url),
				     BRQ_LOG_Q(why), (unsigned long long) p->window_ms);
		}
		p->is_ok = false;
	}
	return start + p->interval_ms;
}

int
brq_selfprobe_new(const brq_config *cfg, brq_auth *auth, brq_selfprobe **out)
{
	unsigned char raw[TOKEN_BYTES];
	const char   *off = NULL;
	if (cfg->selfprobe_interval_ms == 0) {
		off = "BROOQ_SELFPROBE_INTERVAL=0";
	} else if (!cfg->http_enabled) {
		off = "http endpoint off";
	} else if (brq_tls_is_url(cfg->listen) && cfg->tls_client_auth == BRQ_TLS_CLIENT_AUTH_REQUIRED) {
		off = "tls+tcp listener requires client certificates";
	}
	if (off != NULL) {
		BRQ_LOG_INFO("selfprobe_off", "reason=%s", BRQ_LOG_Q(off));
		*out = NULL;
		return 0;
	}

	brq_selfprobe *p   = calloc(1, sizeof(*p));
	size_t         cap = strlen(cfg->listen) + 16; // a wildcard host grows by at most 9
	if (p == NULL || (p->url = malloc(cap)) == NULL) {
		goto nomem;
	}
	if (brq_selfprobe_dial_url(cfg->listen, p->url, cap) != 0) {
		goto nomem; // cannot happen with cap above
	}
	p->cfg         = cfg;
	p->interval_ms = cfg->selfprobe_interval_ms;
	p->timeout_ms  = p->interval_ms < MAX_TIMEOUT_MS ? p->interval_ms : MAX_TIMEOUT_MS;
	p->window_ms   = 2 * p->interval_ms + 2 * p->timeout_ms;
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(p->token, sizeof(p->token), raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
	if (brq_auth_add_token(auth, p->token, TOKEN_HEX, BRQ_ROLE_WORKER) != 0) {
		goto nomem;
	}
	p->is_ok = true; // log the first failure, and recoveries only
	if (brq_bgthread_init(&p->bg, NULL, NULL) != 0) {
		// The token is registered: an unused random token is harmless, but say why.
		goto nomem;
	}
	*out = p;
	return 0;

nomem:
	BRQ_LOG_ERROR("selfprobe_failed_to_start", "reason=%s", BRQ_LOG_Q("out of memory"));
	if (p != NULL) {
		sodium_memzero(p->token, sizeof(p->token));
		free(p->url);
		free(p);
	}
	return BRQ_ENOMEM;
}

int
brq_selfprobe_start(brq_selfprobe *p)
{
	if (p == NULL) {
		return 0;
	}
	if (brq_bgthread_start(&p->bg, &(brq_bgthread_loop) {.round = probe_round, .arg = p}) != 0) {
		BRQ_LOG_ERROR("selfprobe_failed_to_start", "reason=%s", BRQ_LOG_Q("cannot create thread"));
		return BRQ_EIO;
	}
	BRQ_LOG_INFO("selfprobe_start", "url=%s interval_ms=%llu timeout_ms=%llu window_ms=%llu",
		     BRQ_LOG_Q(p->url), (unsigned long long) p->interval_ms,
		     (unsigned long long) p->timeout_ms, (unsigned long long) p->window_ms);
	return 0;
}

void
brq_selfprobe_free(brq_selfprobe *p)
{
	if (p == NULL) {
		return;
	}
	brq_bgthread_stop(&p->bg); // joins the thread when it was started
	sodium_memzero(p->token, sizeof(p->token));
	free(p->url);
	free(p);
}

bool
brq_selfprobe_healthy(void *arg)
{
	brq_selfprobe *p = arg;
	return p == NULL || brq_recent(&p->last_ok_ms, p->window_ms); // no probe: nothing to fail
}
