/* SPDX-License-Identifier: MIT */
/* brooqctl's gateway commands (ping, enqueue, job, cancel, stats) over libbrooq-client. */
#ifndef BRQ_CTL_CMD_H
#define BRQ_CTL_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include <brooq/brooq.h>

/* Exit codes, documented in docs/brooqctl.md and the usage text. */
enum brq_ctl_exit {
	BRQ_EXIT_OK          = 0, /* done */
	BRQ_EXIT_FAIL        = 1, /* the operation failed: refused, not found, bad reply */
	BRQ_EXIT_USAGE       = 2, /* bad command line */
	BRQ_EXIT_UNREACHABLE = 3, /* gateway unreachable, timed out or unavailable */
	BRQ_EXIT_AUTH        = 4, /* token missing/invalid, unauthenticated, permission denied */
};

/* Settings common to the gateway commands, from options and the environment. */
typedef struct brq_ctl {
	const char *url;          /* NULL: the library default ($BROOQ_URL, then the ipc path) */
	const char *token_file;   /* required (option or $BROOQ_TOKEN_FILE) */
	int         timeout_ms;   /* 0: the library default */
	bool        json;         /* one JSON object on stdout instead of a table */
	const char *key;          /* enqueue --key */
	uint64_t    delay_ms;     /* enqueue --delay */
	uint32_t    max_attempts; /* enqueue --max-attempts; 0: the gateway's default */
} brq_ctl;

/* Each runs one command with its positional arguments (after the command name)
 * and returns an exit code. Usage errors in the arguments return BRQ_EXIT_USAGE
 * after a message on stderr. */
int brq_ctl_ping(const brq_ctl *ctl, int argc, char **argv);
int brq_ctl_enqueue(const brq_ctl *ctl, int argc, char **argv);
int brq_ctl_job(const brq_ctl *ctl, int argc, char **argv);
int brq_ctl_cancel(const brq_ctl *ctl, int argc, char **argv);
int brq_ctl_stats(const brq_ctl *ctl, int argc, char **argv);

#endif
