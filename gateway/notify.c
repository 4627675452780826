// SPDX-License-Identifier: MIT
// systemd's service notifications: datagrams to $NOTIFY_SOCKET, path or abstract address.
#include "notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

// Longest state we format; every state the gateway sends is far shorter.
#define NOTIFY_STATE_MAX 512

int
brq_notify(const char *state)
{
	const char        *addr = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa   = {.sun_family = AF_UNIX};
	socklen_t          len;

	if (addr == NULL || addr[0] == '\0') {
		return 0;
	}
	size_t n = strlen(addr);
	if ((addr[0] != '/' && addr[0] != '@') || n >= sizeof(sa.sun_path)) {
		return BRQ_EINVAL;
	}
	memcpy(sa.sun_path, addr, n);
	if (addr[0] == '@') {
		// Abstract namespace: a leading NUL, and the length counts no terminator.
		sa.sun_path[0] = '\0';
		len            = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return BRQ_EIO;
	}
	ssize_t sent      = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *) &sa, len);
	int     sys_errno = errno;
	close(fd);
	errno = sys_errno;
	return sent == (ssize_t) strlen(state) ? 0 : BRQ_EIO;
}

int
brq_notifyf(const char *fmt, ...)
{
	char    state[NOTIFY_STATE_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(state, sizeof(state), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t) n >= sizeof(state)) {
		return BRQ_E2BIG;
	}
	return brq_notify(state);
}

// A positive decimal number, or 0.
static uint64_t
env_u64(const char *name)
{
	const char *v = getenv(name);
	char       *end;
	if (v == NULL || v[0] < '0' || v[0] > '9') {
		return 0;
	}
	errno                = 0;
	unsigned long long x = strtoull(v, &end, 10);
	return errno == 0 && *end == '\0' ? (uint64_t) x : 0;
}

uint64_t
brq_notify_watchdog_usec(void)
{
	const char *pid = getenv("WATCHDOG_PID");
	if (pid != NULL && pid[0] != '\0' && env_u64("WATCHDOG_PID") != (uint64_t) getpid()) {
		return 0; // meant for another process (our parent passed it on)
	}
	return env_u64("WATCHDOG_USEC");
}
