/* SPDX-License-Identifier: MIT */
/* brooqctl's default token file: the admin token of a packaged install. */
#ifndef BRQ_CTL_TOKEN_H
#define BRQ_CTL_TOKEN_H

#include <stddef.h>

/* Where the unit loads the admin tokens from (its LoadCredential=admin-token: line,
 * deploy/systemd/brooq-gateway.service; tests/credentials_layout_test.sh keeps the two
 * equal). Root's: the directory 0700, each file 0600. Not the brooq group's, whose
 * members are the workers: an admin token is not theirs to read. */
#define BRQ_CTL_ADMIN_TOKEN_DIR "/etc/brooq/credentials/admin-tokens"

/*
 * The token file brooqctl uses when neither --token-file nor $BROOQ_TOKEN_FILE names
 * one: the oldest regular file of dir (by modification time, then name; hidden files
 * skipped, as systemd skips them). The oldest, because during a rotation
 * (docs/operations.md, "Token rotation") the file just added is not valid before the
 * gateway's restart, while the old one stays valid until it is removed.
 * Returns 0 with the path in out (cap bytes); else an errno value with a sentence in
 * why (whycap bytes) naming dir, never a token: ENOENT (no directory, or no file in
 * it), EACCES (dir or the file cannot be read: not root), EPERM (the file grants
 * "other" access, which the gateway refuses in a token file too), ENAMETOOLONG.
 */
int brq_ctl_default_token(const char *dir, char *out, size_t cap, char *why, size_t whycap);

#endif
