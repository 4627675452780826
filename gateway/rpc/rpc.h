// SPDX-License-Identifier: MIT
// The RPC side as the rest of the gateway sees it: the server (server.h: the NNG REP
// socket and the state machine of its work items), the database pool (pool.h) and the
// operations (ops.h) with the work item they run on (work.h), which the web console
// reuses for its own actions. Code outside rpc/ includes this header only (the rule is
// tests/layout_test.sh's); the waiters, the warm request buffers and the peer lookup
// stay inside.
#ifndef BRQ_GATEWAY_RPC_H
#define BRQ_GATEWAY_RPC_H

#include "ops.h"
#include "pool.h"
#include "server.h"
#include "work.h"

#endif
