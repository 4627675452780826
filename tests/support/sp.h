/* SPDX-License-Identifier: MIT */
/* A REQ peer speaking SP by hand over a raw socket (rawsock.h), as any local process
 * could: the 8-byte handshake, request frames, reply frames. The handshake is the same on
 * ipc:// and tcp://; ipc:// frames carry a type byte (1) before their 64-bit big-endian
 * length, tcp:// frames do not. The calls below tell the two apart by the descriptor. */
#ifndef BRQ_TEST_SP_H
#define BRQ_TEST_SP_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "rawsock.h"

/* brq_sock_dial(url, timeout_ms), then the SP handshake as a REQ peer: its 8 bytes
 * sent, the gateway's 8 read. The descriptor (the caller closes it), or -1 on any
 * failure. */
int brq_sp_connect(const char *url, int timeout_ms);

/*
 * req encoded as one message (token, op, rid and fields as the caller set them), in
 * malloc'd memory the caller frees; *len its length. size 0: as encoded; otherwise
 * padded with an unknown key "pad" (bin 32 of 'x') to exactly size bytes: a request the
 * gateway has to read whole before it can judge it. NULL when req does not encode or
 * size is too small to hold it.
 */
void *brq_sp_request(const brq_request *req, size_t size, size_t *len);

/* Sends one request frame on fd (from brq_sp_connect): the frame header for fd's
 * transport, REQ's request id (high bit set), then msg, which stays the caller's.
 * As brq_sock_sendv: 1 sent, 0 a send timed out, -1 the connection is gone. */
int brq_sp_send(int fd, uint32_t id, const void *msg, size_t len);

/* brq_sp_send of req encoded (brq_sp_request, size 0), which fails the current test
 * when req does not encode. */
int brq_sp_send_request(int fd, uint32_t id, const brq_request *req);

/* Only the header and request id of a frame announcing a message of len bytes, none of
 * them: how a peer that stalls in a request begins. Returns as brq_sp_send. */
int brq_sp_send_head(int fd, uint32_t id, uint64_t len);

/* Reads one reply frame from fd: its message (after REQ's 4-byte request id) into buf
 * (capacity cap bytes), *len its length; with buf NULL the message is read and dropped,
 * whatever its size. 1 read; 0 the connection ended or a receive timed out first; -1 a
 * frame too short for a reply or with a message over cap bytes (left unread). */
int brq_sp_recv_reply(int fd, void *buf, size_t cap, size_t *len);

#endif
