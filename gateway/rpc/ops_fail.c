// SPDX-License-Identifier: MIT
// How an operation fails: its status and message (brq_op_res), and the one map from a
// store failure to the reply's status, for every op family (ops.h).
#include "ops.h"

#include <stdarg.h>
#include <stdio.h>

#include "log/log.h"

brq_status
brq_ops_fail(brq_op_res *r, brq_status code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->code = code;
	return code;
}

brq_status
brq_ops_store_fail(brq_op_res *r, const brq_store_conn *c, int rv, const char *what)
{
	brq_status code;
	switch (rv) {
	case BRQ_EUNAVAIL:
	case BRQ_ETIMEDOUT:
	case BRQ_ECONFLICT: // the state changed under the call: the same request may pass now
		code = BRQ_ST_UNAVAILABLE;
		break;
	case BRQ_EINVAL: code = BRQ_ST_INVALID_ARGUMENT; break;
	case BRQ_ENOTFOUND: code = BRQ_ST_NOT_FOUND; break;
	default: code = BRQ_ST_INTERNAL; break;
	}
	if (code != BRQ_ST_UNAVAILABLE)
		return brq_ops_fail(r, code, "%s: %s", what, brq_store_errmsg(c));
	BRQ_LOG_WARN("db_statement_failed", "what=%s error=%s reason=%s", what, brq_err_name(rv),
		     BRQ_LOG_Q(brq_store_errmsg(c)));
	return brq_ops_fail(r, code, "%s: %s; retry later", what, brq_store_errmsg(c));
}
