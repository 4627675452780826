/* SPDX-License-Identifier: MIT */
/* A REQ peer speaking SP by hand over a raw socket (sp.h). */
#define _GNU_SOURCE
#include "sp.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

/* The SP header a REQ (protocol 0x30) peer sends, and the one it expects back. */
static const unsigned char sp_req[8] = {0x00, 'S', 'P', 0x00, 0x00, 0x30, 0x00, 0x00};

/* ipc:// (a Unix socket) frames start with a type byte; tcp:// ones do not. */
static bool
is_ipc(int fd)
{
	int       domain = 0;
	socklen_t len    = sizeof(domain);
	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
}

int
brq_sp_connect(const char *url, int timeout_ms)
{
	unsigned char peer[8];
	int           fd = brq_sock_dial(url, timeout_ms);
	if (fd < 0)
		return -1;
	if (brq_sock_send_all(fd, sp_req, sizeof(sp_req)) != 1 ||
	    recv(fd, peer, sizeof(peer), MSG_WAITALL) != (ssize_t) sizeof(peer)) {
		close(fd);
		return -1;
	}
	return fd;
}

void *
brq_sp_request(const brq_request *req, size_t size, size_t *len)
{
	brq_buf        b;
	unsigned char *m = NULL;
	brq_buf_init(&b, 0);
	if (brq_request_encode(&b, req) != 0)
		goto out;
	if (size == 0)
		size = b.len;
	/* The encoded request is a small map: count one more entry, "pad": bin 32. */
	else if (size < b.len + 9 || (b.data[0] & 0xf0) != 0x80 || (b.data[0] & 0x0f) == 15)
		goto out;
	if ((m = malloc(size)) == NULL)
		goto out;
	memcpy(m, b.data, b.len);
	if (size > b.len) {
		size_t         pad = size - b.len - 9;
		unsigned char *p   = m + b.len;
		m[0]++;
		memcpy(p, "\xa3pad\xc6", 5);
		p += 5;
		for (int i = 3; i >= 0; i--)
			*p++ = (unsigned char) (pad >> (8 * i));
		memset(p, 'x', pad);
	}
	*len = size;
out:
	brq_buf_fini(&b);
	return m;
}

/* The frame header for fd's transport and REQ's request id: its length (9 or 8, plus 4)
 * into h, for a message of len bytes. */
static size_t
frame_head(int fd, unsigned char h[13], uint32_t id, uint64_t len)
{
	uint64_t n = 4 + len;
	size_t   k = 0;
	if (is_ipc(fd))
		h[k++] = 1;
	for (int i = 0; i < 8; i++)
		h[k++] = (unsigned char) (n >> (56 - 8 * i));
	h[k++] = (unsigned char) (0x80 | id >> 24);
	h[k++] = (unsigned char) (id >> 16);
	h[k++] = (unsigned char) (id >> 8);
	h[k++] = (unsigned char) id;
	return k;
}

int
brq_sp_send(int fd, uint32_t id, const void *msg, size_t len)
{
	unsigned char h[13];
	/* One sendmsg for both: on tcp:// (no delay) a request is one segment, as NNG's. */
	struct iovec iov[2] = {{.iov_base = h, .iov_len = frame_head(fd, h, id, len)},
			       {.iov_base = (void *) msg, .iov_len = len}};
	return brq_sock_sendv(fd, iov, 2);
}

int
brq_sp_send_request(int fd, uint32_t id, const brq_request *req)
{
	size_t len;
	void  *msg = brq_sp_request(req, 0, &len);
	cr_assert_not_null(msg, "%s does not encode", brq_op_name(req->op));
	int rv = brq_sp_send(fd, id, msg, len);
	free(msg);
	return rv;
}

int
brq_sp_send_head(int fd, uint32_t id, uint64_t len)
{
	unsigned char h[13];
	return brq_sock_send_all(fd, h, frame_head(fd, h, id, len));
}

int
brq_sp_recv_reply(int fd, void *buf, size_t cap, size_t *len)
{
	unsigned char h[9], id[4], sink[4096];
	size_t        hl = is_ipc(fd) ? 9 : 8;
	if (recv(fd, h, hl, MSG_WAITALL) != (ssize_t) hl)
		return 0;
	uint64_t n = 0;
	for (size_t i = hl - 8; i < hl; i++)
		n = n << 8 | h[i];
	if (n < 4 || (buf != NULL && n - 4 > cap))
		return -1;
	if (recv(fd, id, sizeof(id), MSG_WAITALL) != (ssize_t) sizeof(id))
		return 0;
	*len = n - 4;
	if (buf != NULL)
		return *len == 0 || recv(fd, buf, *len, MSG_WAITALL) == (ssize_t) *len;
	for (uint64_t left = n - 4; left > 0;) {
		ssize_t r = recv(fd, sink, left < sizeof(sink) ? left : sizeof(sink), 0);
		if (r <= 0)
			return 0;
		left -= (uint64_t) r;
	}
	return 1;
}
