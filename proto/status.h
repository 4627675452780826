// SPDX-License-Identifier: MIT
// Wire enums of protocol v1 (status codes, operations, job states, settle outcomes) and their strings.
#ifndef BRQ_STATUS_H
#define BRQ_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include "brq_base.h"

// Reply status codes. The numeric values are ours; only the strings go on the wire.
typedef enum brq_status {
	BRQ_ST_OK = 0,
	BRQ_ST_INVALID_ARGUMENT,
	BRQ_ST_UNAUTHENTICATED,
	BRQ_ST_PERMISSION_DENIED,
	BRQ_ST_NOT_FOUND,
	BRQ_ST_UNAVAILABLE,
	BRQ_ST_TOO_LARGE,
	BRQ_ST_RESOURCE_EXHAUSTED, // too many concurrent long-polls
	BRQ_ST_INTERNAL,
	BRQ_ST_CONFLICT, // the job's state does not allow it (retry, delete); nothing changed
	BRQ_ST__COUNT
} brq_status;

// Operations. BRQ_OP_NONE means "not known (yet)": missing, ill-typed or unknown "op".
typedef enum brq_op {
	BRQ_OP_NONE = 0,
	BRQ_OP_PING,
	BRQ_OP_ENQUEUE,
	BRQ_OP_CLAIM,
	BRQ_OP_HEARTBEAT,
	BRQ_OP_SETTLE,
	BRQ_OP_CANCEL,
	BRQ_OP_JOB,
	BRQ_OP_STATS,
	BRQ_OP_PAUSE,
	BRQ_OP_RESUME,
	BRQ_OP_TOPIC_LIMITS,
	BRQ_OP_TOPICS,
	BRQ_OP_LIST,
	BRQ_OP_RETRY,
	BRQ_OP_DELETE,
	BRQ_OP_SCHEDULE_ADD,
	BRQ_OP_SCHEDULE_LIST,
	BRQ_OP_SCHEDULE_REMOVE,
	BRQ_OP_WATCH,
	BRQ_OP__COUNT
} brq_op;

// Job states, in the order the stats counters are indexed.
typedef enum brq_state {
	BRQ_STATE_PENDING = 0,
	BRQ_STATE_PROCESSING,
	BRQ_STATE_FAILED,
	BRQ_STATE_DONE,
	BRQ_STATE_DEAD,
	BRQ_STATE_CANCELED,
	BRQ_STATE__COUNT
} brq_state;

// Settle outcomes.
typedef enum brq_outcome {
	BRQ_OUTCOME_DONE = 0,
	BRQ_OUTCOME_FAIL,
	BRQ_OUTCOME_DELAY,
	BRQ_OUTCOME_PRESERVE,
	BRQ_OUTCOME_CANCEL,
	BRQ_OUTCOME__COUNT
} brq_outcome;

// Wire string of a value; never NULL ("?" for a value outside the enum). Static storage.
const char *brq_status_name(brq_status st);
const char *brq_op_name(brq_op op); // BRQ_OP_NONE gives "unknown" (a metrics label, never sent)
const char *brq_state_name(brq_state st);
const char *brq_outcome_name(brq_outcome oc);

// Exact, case-sensitive lookup of a wire string of len bytes (need not be NUL-terminated).
// Returns the enum value, or -1 when the string is not one of ours.
int brq_status_lookup(const char *s, size_t len);
int brq_op_lookup(const char *s, size_t len); // never returns BRQ_OP_NONE
int brq_state_lookup(const char *s, size_t len);
int brq_outcome_lookup(const char *s, size_t len);

// True for the operations only the admin role may call (the one list: the gateway's
// dispatcher asks it): cancel, the topic policy ops, list/retry/delete and the schedule
// ops.
bool brq_op_admin_only(brq_op op);

#endif
