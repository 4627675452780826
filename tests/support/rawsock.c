/* SPDX-License-Identifier: MIT */
/* Raw stream sockets for tests that speak a protocol by hand (rawsock.h). */
#define _GNU_SOURCE
#include "rawsock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tutil.h"

/* Connects a new socket of sa's family to sa; -1 on failure. */
static int
dial_addr(const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	int            fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* SO_SNDTIMEO bounds connect() too: a listener that stops accepting fills its
	 * backlog, and a connect to it would wait for ever. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sa->sa_family == AF_INET)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) {1}, sizeof(int));
	if (connect(fd, sa, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
brq_sock_dial(const char *url, int timeout_ms)
{
	if (strncmp(url, "ipc://", 6) == 0) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		size_t             n  = strlen(url + 6);
		cr_assert_lt(n, sizeof(sa.sun_path), "socket path too long: %s", url);
		memcpy(sa.sun_path, url + 6, n + 1);
		return dial_addr((struct sockaddr *) &sa, sizeof(sa), timeout_ms);
	}
	char               host[64];
	unsigned           port = 0;
	struct sockaddr_in sa   = {.sin_family = AF_INET};
	cr_assert_eq(sscanf(url, "tcp://%63[^:]:%u", host, &port), 2, "not ipc:// or tcp://IPV4:PORT: %s",
		     url);
	cr_assert_eq(inet_pton(AF_INET, host, &sa.sin_addr), 1, "not an IPv4 address: %s", url);
	sa.sin_port = htons((uint16_t) port);
	return dial_addr((struct sockaddr *) &sa, sizeof(sa), timeout_ms);
}

int
brq_sock_dial_port(uint16_t port, int timeout_ms)
{
	char url[64];
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%u", port);
	return brq_sock_dial(url, timeout_ms);
}

int
brq_sock_sendv(int fd, struct iovec *iov, int n)
{
	for (;;) {
		while (n > 0 && iov->iov_len == 0)
			iov++, n--;
		if (n == 0)
			return 1;
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t) n};
		ssize_t       w = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w <= 0)
			return -1;
		/* Skip what went out: whole entries, then the start of the next. */
		size_t left = (size_t) w;
		for (; n > 0 && left >= iov->iov_len; iov++, n--)
			left -= iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *) iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
}

int
brq_sock_send_all(int fd, const void *p, size_t n)
{
	struct iovec iov = {.iov_base = (void *) p, .iov_len = n};
	return brq_sock_sendv(fd, &iov, 1);
}

bool
brq_sock_closed_by(int fd, double until_ms)
{
	char buf[16384];
	for (;;) {
		double        left = until_ms - brq_t_now_ms();
		struct pollfd p    = {.fd = fd, .events = POLLIN};
		int           r    = poll(&p, 1, left > 0 ? (int) left + 1 : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && left <= 0)
			return false;
		if (r <= 0)
			continue;
		ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return true;
	}
}
