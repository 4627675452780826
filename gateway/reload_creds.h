// SPDX-License-Identifier: MIT
// `brooq-gateway --reload-credentials PID`: fresh tokens for a gateway that systemd runs.
//
// systemd copies a unit's credentials (LoadCredential=) into $CREDENTIALS_DIRECTORY only
// when the service starts, so a SIGHUP alone would re-read the tokens of that start: a
// token added to /etc/brooq/credentials or removed from it would change nothing until a
// restart. The unit's ExecReload= runs this mode instead of `kill -HUP`, as root and
// outside the sandbox ('+'), with $RUNTIME_DIRECTORY set by systemd:
//   1. reads worker-tokens/ and admin-tokens/ of the unit's credentials directory
//      (BRQ_UNIT_CREDENTIALS_DIR, or --credentials-dir) as systemd loads them: every
//      regular file not starting with '.'; a symbolic link is refused (systemd would not
//      load it, and a link is how a root process is made to read someone else's file:
//      O_NOFOLLOW), anything else that is not a regular file is skipped, and either
//      directory missing is refused (systemd would not start the unit either);
//   2. drops root for the uid and gid of PID (the service's dynamic user; the process
//      must be a brooq-gateway), so that everything under $RUNTIME_DIRECTORY, a directory
//      that user owns, is done as that user and root never follows a path it controls;
//   3. writes the tokens into a fresh $RUNTIME_DIRECTORY/credentials.new-XXXXXX
//      (directories 0700, files 0400), worker-tokens/NAME and admin-tokens/NAME, and
//      checks them as the gateway will (auth.h: length, roles), so that a reload the
//      gateway would refuse fails here, where `systemctl reload` shows it;
//   4. swaps it in as $RUNTIME_DIRECTORY/credentials in one step (renameat2
//      RENAME_EXCHANGE: a reader sees the old copy or the new one, never none), removes
//      the old one, and sends PID a SIGHUP.
// The copy holds the tokens only: the DSN and TLS files apply at a restart (their
// settings say so) and stay where systemd put them. The gateway's SIGHUP reads the copy
// (brq_reload_creds_copy_path) when it runs under the unit. The group of
// $RUNTIME_DIRECTORY (workers, 0750) cannot enter the copy. Nothing printed holds a
// token: paths and counts only.
#ifndef BRQ_GATEWAY_RELOAD_CREDS_H
#define BRQ_GATEWAY_RELOAD_CREDS_H

#include "brq_base.h"

#include <stddef.h>

// Exit statuses of the mode (brooq-gateway(8)).
#define BRQ_RELOAD_CREDS_OK      0 // copied, swapped in, PID signalled
#define BRQ_RELOAD_CREDS_FAILED  1 // a system call failed; the previous copy is in place
#define BRQ_RELOAD_CREDS_REFUSED 2 // bad arguments or credentials (said why); nothing changed

// The name of the copy inside $RUNTIME_DIRECTORY.
#define BRQ_RELOAD_CREDS_NAME "credentials"

// The whole mode: pid_arg is the PID as given (decimal), etc_dir the unit's credentials
// directory (NULL: BRQ_UNIT_CREDENTIALS_DIR). Reads $RUNTIME_DIRECTORY (its first
// element, when systemd lists several). Prints one line on success (stdout) or what
// went wrong (stderr). Returns an exit status above. Changes the process's uid and gid
// when run as root: call it instead of anything else, and exit with its result.
int brq_reload_creds_main(const char *pid_arg, const char *etc_dir);

// "$RUNTIME_DIRECTORY/credentials" into buf (the first element of RUNTIME_DIRECTORY).
// Returns 0, or BRQ_ENOTFOUND when RUNTIME_DIRECTORY is unset, empty or not an absolute
// path, BRQ_EINVAL when the path does not fit in cap. Does not look at the file system.
BRQ_MUSTCHECK int brq_reload_creds_copy_path(char *buf, size_t cap);

#endif
