// SPDX-License-Identifier: MIT
// Who sent a request: uid and pid of an ipc peer, address of a tcp peer; the rate-limited auth_failed line.
#include "peer.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "log/log.h"

static brq_log_limit auth_failed_limit = BRQ_LOG_LIMIT_INIT(
	"auth_failed", BRQ_LOG_LVL_WARN, BRQ_PEER_AUTH_LOG_BURST, BRQ_PEER_AUTH_LOG_INTERVAL_MS);
static brq_log_limit conn_closed_limit = BRQ_LOG_LIMIT_INIT(
	"conn_closed", BRQ_LOG_LVL_WARN, BRQ_PEER_AUTH_LOG_BURST, BRQ_PEER_AUTH_LOG_INTERVAL_MS);

// "peer=ADDR:PORT" of an IPv4/IPv6 remote address, or false.
static bool
format_inet(const nng_sockaddr *sa, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN];
	switch (sa->s_family) {
	case NNG_AF_INET:
		if (inet_ntop(AF_INET, &sa->s_in.sa_addr, host, sizeof(host)) == NULL)
			return false;
		snprintf(buf, cap, "peer=%s:%u", host, (unsigned) ntohs(sa->s_in.sa_port));
		return true;
	case NNG_AF_INET6:
		if (inet_ntop(AF_INET6, sa->s_in6.sa_addr, host, sizeof(host)) == NULL)
			return false;
		snprintf(buf, cap, "peer=[%s]:%u", host, (unsigned) ntohs(sa->s_in6.sa_port));
		return true;
	default: return false;
	}
}

const char *
brq_peer_fields(nng_pipe p, char *buf, size_t cap)
{
	uint64_t     uid, pid;
	nng_sockaddr sa;
	bool         has_uid = nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) == 0;
	bool         has_pid = nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_PID, &pid) == 0;

	if (has_uid && has_pid) {
		snprintf(buf, cap, "peer_uid=%llu peer_pid=%llu", (unsigned long long) uid,
			 (unsigned long long) pid);
	} else if (has_uid) {
		snprintf(buf, cap, "peer_uid=%llu", (unsigned long long) uid);
	} else if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != 0 || !format_inet(&sa, buf, cap)) {
		snprintf(buf, cap, "peer=unknown");
	}
	return buf;
}

void
brq_peer_log_auth_failed(nng_pipe p, const char *op, uint64_t rid, uint32_t pipe_id, uint32_t token_len)
{
	char peer[BRQ_PEER_FIELDS_MAX];
	BRQ_LOG_LIMITED(&auth_failed_limit, BRQ_LOG_LVL_WARN, "auth_failed",
			"op=%s rid=%llu pipe=%u token_len=%u %s", op, (unsigned long long) rid, pipe_id,
			token_len, brq_peer_fields(p, peer, sizeof(peer)));
}

void
brq_peer_log_conn_closed(nng_pipe p, const char *why, uint32_t pipe_id)
{
	char peer[BRQ_PEER_FIELDS_MAX];
	BRQ_LOG_LIMITED(&conn_closed_limit, BRQ_LOG_LVL_WARN, "conn_closed", "reason=%s pipe=%u %s",
			BRQ_LOG_Q(why), pipe_id, brq_peer_fields(p, peer, sizeof(peer)));
}
