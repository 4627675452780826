// SPDX-License-Identifier: MIT
// systemd's service notifications (sd_notify(3)) without libsystemd: one datagram per
// state change to the AF_UNIX socket named by $NOTIFY_SOCKET.
//
// The gateway sends READY=1 once it serves (socket bound, pool, monitor and HTTP
// started), RELOADING=1 with MONOTONIC_USEC= around a SIGHUP reload followed by
// READY=1, STOPPING=1 when it begins a graceful stop, and WATCHDOG=1 every half
// WATCHDOG_USEC while its main loop runs (WatchdogSec= in the unit).
#ifndef BRQ_GATEWAY_NOTIFY_H
#define BRQ_GATEWAY_NOTIFY_H

#include "brq_base.h"

#include <stdint.h>

// Sends `state` (newline-separated VAR=VALUE assignments, e.g. "READY=1\nSTATUS=up")
// to $NOTIFY_SOCKET: a file system path, or an abstract socket when it starts with
// '@'. Returns 0 when sent, or when NOTIFY_SOCKET is unset or empty (not run by
// systemd: nothing to do); BRQ_EINVAL when the address is not a path, not abstract,
// or too long; BRQ_EIO when the socket or the send failed (errno says why). Any thread.
BRQ_MUSTCHECK int brq_notify(const char *state);

// brq_notify() of a printf-formatted state (at most 512 bytes, else BRQ_E2BIG).
BRQ_MUSTCHECK int brq_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// The watchdog period in microseconds: $WATCHDOG_USEC when set to a positive number
// and $WATCHDOG_PID is unset or names this process (sd_watchdog_enabled(3)); else 0.
uint64_t brq_notify_watchdog_usec(void);

#endif
