// SPDX-License-Identifier: MIT
// Who sent a request: the peer of its NNG pipe, for audit lines (auth_failed).
#ifndef BRQ_GATEWAY_PEER_H
#define BRQ_GATEWAY_PEER_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

// Room for the longest brq_peer_fields() text.
#define BRQ_PEER_FIELDS_MAX 96

// At most this many auth_failed lines per interval; the rest are counted in one
// log_suppressed line (brooq_auth_failures_total counts every one).
#define BRQ_PEER_AUTH_LOG_BURST       10
#define BRQ_PEER_AUTH_LOG_INTERVAL_MS 5000

// Renders the peer of pipe p as log fields into buf (capacity cap) and returns buf:
//   ipc:          "peer_uid=1000 peer_pid=4242" (the kernel's SO_PEERCRED: not
//                 forgeable; a field the transport cannot tell is left out)
//   tcp, tls+tcp: "peer=192.0.2.7:50312" or "peer=[2001:db8::7]:50312"
//   otherwise:    "peer=unknown"
// Any thread; the pipe may already be closed (then "peer=unknown").
const char *brq_peer_fields(nng_pipe p, char *buf, size_t cap);

// Logs one request refused for its token, rate-limited as above:
//   level=warn msg=auth_failed op=claim rid=7 pipe=3 token_len=64 peer_uid=1000 peer_pid=4242
// The peer is looked up only for lines that are written. Never logs the token.
// Logs one connection the server closed (rpc/quota.h), rate-limited like auth_failed:
//   level=warn msg=conn_closed reason="replies not read" pipe=3 peer_uid=1000 peer_pid=4242
void brq_peer_log_conn_closed(nng_pipe p, const char *why, uint32_t pipe_id);

void brq_peer_log_auth_failed(nng_pipe p, const char *op, uint64_t rid, uint32_t pipe_id, uint32_t token_len);

#endif
