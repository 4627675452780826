// SPDX-License-Identifier: MIT
// The one table per wire enum that maps each value to its protocol string.
#include "status.h"

#include <string.h>

static const char *const status_names[BRQ_ST__COUNT] = {
	[BRQ_ST_OK]                 = "ok",
	[BRQ_ST_INVALID_ARGUMENT]   = "invalid_argument",
	[BRQ_ST_UNAUTHENTICATED]    = "unauthenticated",
	[BRQ_ST_PERMISSION_DENIED]  = "permission_denied",
	[BRQ_ST_NOT_FOUND]          = "not_found",
	[BRQ_ST_UNAVAILABLE]        = "unavailable",
	[BRQ_ST_TOO_LARGE]          = "too_large",
	[BRQ_ST_RESOURCE_EXHAUSTED] = "resource_exhausted",
	[BRQ_ST_INTERNAL]           = "internal",
	[BRQ_ST_CONFLICT]           = "conflict",
};

static const char *const op_names[BRQ_OP__COUNT] = {
	[BRQ_OP_NONE]            = "unknown",
	[BRQ_OP_PING]            = "ping",
	[BRQ_OP_ENQUEUE]         = "enqueue",
	[BRQ_OP_CLAIM]           = "claim",
	[BRQ_OP_HEARTBEAT]       = "heartbeat",
	[BRQ_OP_SETTLE]          = "settle",
	[BRQ_OP_CANCEL]          = "cancel",
	[BRQ_OP_JOB]             = "job",
	[BRQ_OP_STATS]           = "stats",
	[BRQ_OP_PAUSE]           = "pause",
	[BRQ_OP_RESUME]          = "resume",
	[BRQ_OP_TOPIC_LIMITS]    = "topic_limits",
	[BRQ_OP_TOPICS]          = "topics",
	[BRQ_OP_LIST]            = "list",
	[BRQ_OP_RETRY]           = "retry",
	[BRQ_OP_DELETE]          = "delete",
	[BRQ_OP_SCHEDULE_ADD]    = "schedule_add",
	[BRQ_OP_SCHEDULE_LIST]   = "schedule_list",
	[BRQ_OP_SCHEDULE_REMOVE] = "schedule_remove",
	[BRQ_OP_WATCH]           = "watch",
};

static const char *const state_names[BRQ_STATE__COUNT] = {
	[BRQ_STATE_PENDING] = "pending", [BRQ_STATE_PROCESSING] = "processing",
	[BRQ_STATE_FAILED] = "failed",   [BRQ_STATE_DONE] = "done",
	[BRQ_STATE_DEAD] = "dead",       [BRQ_STATE_CANCELED] = "canceled",
};

static const char *const outcome_names[BRQ_OUTCOME__COUNT] = {
	[BRQ_OUTCOME_DONE] = "done",         [BRQ_OUTCOME_FAIL] = "fail",     [BRQ_OUTCOME_DELAY] = "delay",
	[BRQ_OUTCOME_PRESERVE] = "preserve", [BRQ_OUTCOME_CANCEL] = "cancel",
};

static const char *
name_of(const char *const *table, int count, int v)
{
	return (v >= 0 && v < count) ? table[v] : "?";
}

static int
lookup(const char *const *table, int first, int count, const char *s, size_t len)
{
	for (int i = first; i < count; i++) {
		if (strlen(table[i]) == len && memcmp(table[i], s, len) == 0) {
			return i;
		}
	}
	return -1;
}

const char *
brq_status_name(brq_status st)
{
	return name_of(status_names, BRQ_ST__COUNT, (int) st);
}

const char *
brq_op_name(brq_op op)
{
	return name_of(op_names, BRQ_OP__COUNT, (int) op);
}

const char *
brq_state_name(brq_state st)
{
	return name_of(state_names, BRQ_STATE__COUNT, (int) st);
}

const char *
brq_outcome_name(brq_outcome oc)
{
	return name_of(outcome_names, BRQ_OUTCOME__COUNT, (int) oc);
}

int
brq_status_lookup(const char *s, size_t len)
{
	return lookup(status_names, 0, BRQ_ST__COUNT, s, len);
}

int
brq_op_lookup(const char *s, size_t len)
{
	// Start after BRQ_OP_NONE: "unknown" is a label, not an operation.
	return lookup(op_names, BRQ_OP_NONE + 1, BRQ_OP__COUNT, s, len);
}

int
brq_state_lookup(const char *s, size_t len)
{
	return lookup(state_names, 0, BRQ_STATE__COUNT, s, len);
}

int
brq_outcome_lookup(const char *s, size_t len)
{
	return lookup(outcome_names, 0, BRQ_OUTCOME__COUNT, s, len);
}

bool
brq_op_admin_only(brq_op op)
{
	switch (op) {
	case BRQ_OP_CANCEL:
	case BRQ_OP_PAUSE:
	case BRQ_OP_RESUME:
	case BRQ_OP_TOPIC_LIMITS:
	case BRQ_OP_TOPICS:
	case BRQ_OP_LIST:
	case BRQ_OP_RETRY:
	case BRQ_OP_DELETE:
	case BRQ_OP_SCHEDULE_ADD:
	case BRQ_OP_SCHEDULE_LIST:
	case BRQ_OP_SCHEDULE_REMOVE: return true;
	default: return false;
	}
}
