// SPDX-License-Identifier: MIT
// The schedule operations' policy (admin): schedule_add, schedule_list, schedule_remove.
#ifndef BRQ_GATEWAY_OPS_SCHEDULE_H
#define BRQ_GATEWAY_OPS_SCHEDULE_H

#include "ops.h"

// Runs w's schedule op on c, a brq_op_fn: BRQ_ST_OK with the reply in w->out, else the
// failure in *r. Bad input changes nothing.
brq_status brq_ops_schedule(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r);

#endif
