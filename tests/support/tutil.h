/* SPDX-License-Identifier: MIT */
/* Small helpers every black-box test needs: clocks, sleeps, a free loopback port, a
 * process's memory, and the assertion that a libbrooq-client call succeeded. */
#ifndef BRQ_TEST_TUTIL_H
#define BRQ_TEST_TUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

/* Asserts that a libbrooq-client call returned BROOQ_OK, showing its message. */
#define BRQ_OK(call)                                                                                       \
	do {                                                                                               \
		brooq_err e_ = (call);                                                                     \
		cr_assert_eq(e_, BROOQ_OK, "%s: %s: %s", #call, brooq_strerror(e_), brooq_last_message()); \
	} while (0)

/* Monotonic time in microseconds. */
static inline int64_t
brq_t_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Monotonic time in milliseconds, with fractions. */
static inline double
brq_t_now_ms(void)
{
	return (double) brq_t_now_us() / 1e3;
}

/* Sleeps ms milliseconds, resuming after signals. */
static inline void
brq_t_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

/* A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then closed):
 * for a listener a test starts next. Fails the test if no socket can be bound. */
static inline uint16_t
brq_t_free_port(void)
{
	struct sockaddr_in sa  = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t          len = sizeof(sa);
	int                fd  = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* A "Vm..." field of /proc/PID/status in KiB (VmRSS, VmHWM), or -1. */
static inline long
brq_t_proc_kib(pid_t pid, const char *field)
{
	char   path[64], line[256];
	long   v  = -1;
	FILE  *f  = NULL;
	size_t fl = strlen(field);
	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			sscanf(line + fl + 1, "%ld", &v);
			break;
		}
	fclose(f);
	return v;
}

/* Writes content to path (created or truncated) with exactly that mode, whatever the
 * umask; fails the test on any error. */
static inline void
brq_t_write_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "cannot write %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t) strlen(content), "cannot write %s", path);
	cr_assert_eq(fchmod(fd, mode), 0);
	cr_assert_eq(close(fd), 0);
}

#endif
