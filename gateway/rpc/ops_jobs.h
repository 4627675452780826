// SPDX-License-Identifier: MIT
// The operators' operations on jobs (admin role): list, retry, delete.
#ifndef BRQ_GATEWAY_OPS_JOBS_H
#define BRQ_GATEWAY_OPS_JOBS_H

#include "ops.h"

// Runs w's list, retry or delete on c, a brq_op_fn: BRQ_ST_OK with the reply in w->out,
// else the failure in *r.
brq_status brq_ops_jobs(const brq_ops *o, brq_store_conn *c, brq_work *w, brq_op_res *r);

#endif
