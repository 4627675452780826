// SPDX-License-Identifier: MIT
// The one place that says which family (jobs.c, policy.c, schedule.c, watch.c) encodes and
// decodes an operation's fields.
#include "opcodecs.h"

#include "jobs.h"
#include "policy_int.h"
#include "schedule.h"
#include "watch.h"

const brq_op_codec *
brq_op_codec_of(brq_op op)
{
	switch (op) {
	case BRQ_OP_LIST:
	case BRQ_OP_RETRY:
	case BRQ_OP_DELETE: return &brq_admin_codec;
	case BRQ_OP_PAUSE:
	case BRQ_OP_RESUME:
	case BRQ_OP_TOPIC_LIMITS:
	case BRQ_OP_TOPICS: return &brq_policy_codec;
	case BRQ_OP_SCHEDULE_ADD:
	case BRQ_OP_SCHEDULE_LIST:
	case BRQ_OP_SCHEDULE_REMOVE: return &brq_schedule_codec;
	case BRQ_OP_WATCH: return &brq_watch_codec;
	default: return NULL;
	}
}
