// SPDX-License-Identifier: MIT
// The schedule operations' policy (admin): schedule_add, schedule_list, schedule_remove.
#ifndef BRQ_GATEWAY_OPS_SCHEDULE_H
#define BRQ_GATEWAY_OPS_SCHEDULE_H

#include <stddef.h>

#include "ops.h"

// Runs w's schedule op on c. Returns BRQ_ST_OK with the reply in w->out, or the status
// to answer with and its message in msg[0..msglen). Bad input changes nothing.
brq_status brq_ops_schedule(const brq_ops *o, brq_store_conn *c, brq_work *w, char *msg, size_t msglen);

#endif
