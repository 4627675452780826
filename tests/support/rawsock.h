/* SPDX-License-Identifier: MIT */
/* Raw stream sockets for tests that speak a protocol by hand, as any process could (SP in
 * sp.h, HTTP in rawhttp.h): connecting to an ipc:// or tcp:// address, sending all of a
 * buffer, seeing the peer close. No NNG on this side. */
#ifndef BRQ_TEST_RAWSOCK_H
#define BRQ_TEST_RAWSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * A connected stream socket to url: ipc://PATH, or tcp://IPV4:PORT with TCP_NODELAY set
 * (each send leaves at once, as from NNG's own peers). The connect and every later send
 * and receive time out after timeout_ms (0: never). Nothing is sent. Returns the
 * descriptor, which the caller closes, or -1 when the connection fails. A url of another
 * form fails the current test.
 */
int brq_sock_dial(const char *url, int timeout_ms);

/* brq_sock_dial to tcp://127.0.0.1:port. */
int brq_sock_dial_port(uint16_t port, int timeout_ms);

/* Sends all of iov[0..n) in order, through partial sends and signals; iov is consumed
 * (its entries are advanced). 1 when all was sent, 0 when a send timed out (the peer is
 * not reading), -1 when the connection is gone. Never raises SIGPIPE. */
int brq_sock_sendv(int fd, struct iovec *iov, int n);

/* brq_sock_sendv of one buffer. */
int brq_sock_send_all(int fd, const void *p, size_t n);

/* Whether the peer has closed fd (end of file or an error) by until_ms (brq_t_now_ms);
 * whatever it sends meanwhile is read and dropped. Looks at least once even when
 * until_ms has passed, so that callers can share one deadline among many descriptors.
 * fd stays open. */
bool brq_sock_closed_by(int fd, double until_ms);

#endif
