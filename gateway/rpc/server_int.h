// SPDX-License-Identifier: MIT
// Internals shared by the RPC server's two files: the work items' state machine
// (server.c) and the server's lifecycle (server_life.c).
#ifndef BRQ_GATEWAY_SERVER_INT_H
#define BRQ_GATEWAY_SERVER_INT_H

#include "server.h"

// Room of the message kept per work item for an error reply when no other message can
// be allocated.
#define SPARE_MSG_BYTES 512

// Waits for w's next request on its context (state RECV).
void brq_server_rearm(brq_work *w);
// The callback of every work item's aio: the state machine (arg: the item).
void brq_server_work_cb(void *arg);
// A request's run function on a pool thread (work.h brq_work_run_fn).
void brq_server_run_on_pool(brq_work *w, struct brq_store_conn *c);
// NNG's pipe callback (REM_POST; arg: the server): a peer went away.
void brq_server_pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg);

#endif
