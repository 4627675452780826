// SPDX-License-Identifier: MIT
// The schedule operations' policy (admin): schedule_add, schedule_list, schedule_remove.
#ifndef BRQ_GATEWAY_OPS_SCHED_H
#define BRQ_GATEWAY_OPS_SCHED_H

#include "ops.h"

// Runs w's schedule op on c. Returns BRQ_ST_OK with the reply in w->out, or the status
// to answer with (the failure in *e). Bad input changes nothing.
brq_status brq_ops_schedule(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_err *e);

#endif
