// SPDX-License-Identifier: MIT
// The last words of a gateway that crashes: one logfmt line naming the signal, then the
// stack of the thread that crashed, written to the log's fd before the default action
// (a core dump, where the system keeps them) ends the process.
//
// Without it a crash leaves a log that simply stops, and nobody can tell a crash from
// a kill. The frames are backtrace_symbols_fd(3)'s lines, "binary(+0xoffset)[0xaddr]",
// which addr2line -e brooq-gateway reads.
//
// Not installed in sanitizer builds: their own reports say more.
#ifndef BRQ_GATEWAY_CRASH_H
#define BRQ_GATEWAY_CRASH_H

#include <stdbool.h>

// Installs the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (once, before
// threads start). Each handler runs once (SA_RESETHAND), writes to fd (with journald's
// "<2>" priority prefix when journal), and re-raises.
void brq_crash_install(int fd, bool journal);

#endif
