/* SPDX-License-Identifier: MIT */
/* libbrooq-client errors: thread-local messages, code descriptions, the public mapping. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Room for the gateway's message (BRQ_MSG_MAX) or a local one, plus NUL. */
#define MSG_CAP (BRQ_MSG_MAX + 1)

_Static_assert(BRQ_DETAIL_MAX >= MSG_CAP, "a log copy holds the whole message");

/* The calling thread's last failure text; "" after a success. */
static _Thread_local char last_msg[MSG_CAP];

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

int
brq_fail(int rv, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void) vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	return rv;
}

void
brq_msg_copy(char out[BRQ_DETAIL_MAX])
{
	snprintf(out, BRQ_DETAIL_MAX, "%s", last_msg);
}

brooq_err
brq_err_public(int rv)
{
	switch (rv) {
	case 0: return BROOQ_OK;
	case BRQ_EINVAL:
	case BRQ_E2BIG: return BROOQ_EINVAL;
	case BRQ_ENOMEM: return BROOQ_ENOMEM;
	case BRQ_EUNAVAIL:
	case BRQ_EIO: return BROOQ_ECONNECT;
	case BRQ_ETIMEDOUT: return BROOQ_ETIMEDOUT;
	case BRQ_EINTERNAL:
	default: return BROOQ_EPROTO;
	}
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
	case BRQ_ST_CONFLICT: return BROOQ_ECONFLICT;
	case BRQ_ST_INTERNAL:
	default: return BROOQ_EINTERNAL;
	}
}

/* ---- public -------------------------------------------------------------------------- */

const char *
brooq_strerror(brooq_err err)
{
	switch (err) {
	case BROOQ_OK: return "ok";
	case BROOQ_EINVAL: return "invalid argument (caught before sending)";
	case BROOQ_ENOMEM: return "out of memory";
	case BROOQ_ETIMEDOUT: return "timed out (the request may have run)";
	case BROOQ_ECONNECT: return "gateway unreachable";
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
	case BROOQ_ECONFLICT: return "conflict: the job's state does not allow it";
	}
	return "unknown error";
}

const char *
brooq_last_message(void)
{
	return last_msg;
}
