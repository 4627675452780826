// SPDX-License-Identifier: MIT
// Conventions shared by every internal module (gateway, proto, client): the
// must-check marker and the one set of internal error codes.
//
// Internal functions that can fail return `int`: 0 on success or a negative
// BRQ_E* code below; `bool` only for predicates. The public API (brooq.h)
// returns brooq_err instead, and the wire carries brq_status (proto/status.h):
// each layer maps these codes to its own at its edge, in one function.
#ifndef BRQ_BASE_H
#define BRQ_BASE_H

// Fallible internal calls whose result must be looked at (PgBouncer _MUSTCHECK).
#define BRQ_MUSTCHECK __attribute__((warn_unused_result))

// Negative results of internal calls; 0 is success.
enum brq_err {
	BRQ_ENOMEM    = -1, // allocation failed
	BRQ_E2BIG     = -2, // a size limit set by the caller was exceeded
	BRQ_EINVAL    = -3, // the caller passed a value that cannot be used or represented
	BRQ_EUNAVAIL  = -4, // a peer is away or overloaded (database down, no thread): retry later
	BRQ_ENOTFOUND = -5, // the thing asked for does not exist
	BRQ_ECONFLICT = -6, // the state changed under the call (a row went away): retry
	BRQ_EIO       = -7, // a system call failed (errno says why, logged where it happened)
	BRQ_ETIMEDOUT = -8, // a deadline passed before the work was done
	BRQ_EINTERNAL = -9, // an expectation broke (an answer of the wrong shape): a bug
};

// Short name of a BRQ_E* code ("enomem"), for logs. Static storage.
static inline const char *
brq_err_name(int err)
{
	switch (err) {
	case 0: return "ok";
	case BRQ_ENOMEM: return "enomem";
	case BRQ_E2BIG: return "e2big";
	case BRQ_EINVAL: return "einval";
	case BRQ_EUNAVAIL: return "eunavail";
	case BRQ_ENOTFOUND: return "enotfound";
	case BRQ_ECONFLICT: return "econflict";
	case BRQ_EIO: return "eio";
	case BRQ_ETIMEDOUT: return "etimedout";
	case BRQ_EINTERNAL: return "einternal";
	default: return "unknown";
	}
}

#endif
