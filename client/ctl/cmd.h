/* SPDX-License-Identifier: MIT */
/* brooqctl's gateway commands (ping, enqueue, job, cancel, stats) over libbrooq-client,
 * and the one way brooqctl reports a failure. */
#ifndef BRQ_CTL_CMD_H
#define BRQ_CTL_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include <brooq/brooq.h>

/* Exit codes, documented in docs/brooqctl.md and the usage text. */
enum brq_ctl_exit {
	BRQ_EXIT_OK          = 0, /* done */
	BRQ_EXIT_FAIL        = 1, /* the operation failed: refused, not found, bad reply; output lost */
	BRQ_EXIT_USAGE       = 2, /* bad command line */
	BRQ_EXIT_UNREACHABLE = 3, /* gateway unreachable, timed out or unavailable */
	BRQ_EXIT_AUTH        = 4, /* token missing/invalid, unauthenticated, permission denied */
};

/* Settings of one run, from options and the environment. */
typedef struct brq_ctl {
	const char *cmd;             /* the command's name, for messages ("brooqctl" before one is known) */
	const char *url;             /* NULL: the library default ($BROOQ_URL, then the ipc path) */
	const char *token_file;      /* required (option or $BROOQ_TOKEN_FILE) */
	int         timeout_ms;      /* 0: the library default */
	const char *tls_ca_file;     /* --tls-ca; NULL: the library's default ($BROOQ_TLS_CA_FILE) */
	const char *tls_cert_file;   /* --tls-cert; NULL: $BROOQ_TLS_CERT_FILE */
	const char *tls_key_file;    /* --tls-key; NULL: $BROOQ_TLS_KEY_FILE */
	const char *tls_server_name; /* --tls-server-name; NULL: $BROOQ_TLS_SERVER_NAME */
	bool        json;            /* one JSON object on stdout instead of a table, errors too */
	const char *key;             /* enqueue --key */
	uint64_t    delay_ms;        /* enqueue --delay */
	uint32_t    max_attempts;    /* enqueue, schedule add --max-attempts; 0: the gateway's default */
	uint32_t    priority;        /* enqueue --priority; 0: the default (1) */
	uint32_t    concurrency;     /* limits --concurrency; BROOQ_LIMIT_KEEP: not given */
	uint32_t    rate;            /* limits --rate; BROOQ_LIMIT_KEEP: not given */
	/* jobs and retry (bulk): */
	const char *topic;    /* --topic; NULL: any (jobs) */
	int         state;    /* --state as a brooq_state; -1: any (jobs) */
	uint32_t    limit;    /* --limit; 0: the command's default */
	const char *cursor;   /* jobs --cursor: a page's "next" */
	uint64_t    since_ms; /* jobs --since D: created in the last D; 0: no bound */
	uint64_t    until_ms; /* jobs --until D: created more than D ago; 0: no bound */
	/* schedule add: --cron, --tz, --every, --payload, --misfire, --catch-up-max */
	const char *cron, *tz, *payload, *misfire;
	uint64_t    every_ms;
	uint32_t    catch_up_max;
} brq_ctl;

/*
 * Reports a failure and returns exit_code: one line on stderr, "brooqctl: CMD: TEXT"
 * (TEXT is "DESCRIPTION: MESSAGE" when desc is not NULL), and with --json one object
 * on stdout: {"error":NAME,"message":MESSAGE,"exit":N}. A MESSAGE that starts with
 * "CMD: " loses that prefix (the gateway's and the library's messages name the
 * operation, and the line already does).
 */
int brq_ctl_fail(const brq_ctl *ctl, int exit_code, const char *name, const char *desc, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* A usage error (exit 2, error "usage"); the line ends with where help is. */
int brq_ctl_usage(const brq_ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports a failed library call (brooq_last_message) and returns its exit code. */
int brq_ctl_report(const brq_ctl *ctl, brooq_err err);
/* Opens the client with ctl's settings; BRQ_EXIT_OK or the reported failure's code. */
int brq_ctl_open_client(const brq_ctl *ctl, brooq_client **c);
/* Exactly one positional argument, a job id: BRQ_EXIT_OK or a usage error. */
int brq_ctl_parse_id(const brq_ctl *ctl, int argc, char **argv, uint64_t *id);
/* A command on one job: brq_ctl_parse_id, brq_ctl_open_client, then fn(ctl, c, id) (which
 * returns the exit code), then closes the client. Returns the exit code. */
int brq_ctl_run_for_id(const brq_ctl *ctl, int argc, char **argv,
		       int (*fn)(const brq_ctl *ctl, brooq_client *c, uint64_t id));
/* One job row as one JSON object on stdout, no newline (`job --json`, `jobs --json`). */
void brq_ctl_print_job_json(const brooq_job_info *j);

/* A command: runs with its positional arguments (after the command name) and
 * returns an exit code. */
typedef int brq_ctl_cmd_fn(const brq_ctl *ctl, int argc, char **argv);

brq_ctl_cmd_fn brq_ctl_ping, brq_ctl_enqueue, brq_ctl_job, brq_ctl_cancel, brq_ctl_stats;
/* cmd_policy.c: per-topic policy (admin token). */
brq_ctl_cmd_fn brq_ctl_pause, brq_ctl_resume, brq_ctl_limits, brq_ctl_topics;
/* cmd_jobs.c: the job list, retry and delete (admin token). */
brq_ctl_cmd_fn brq_ctl_jobs, brq_ctl_retry, brq_ctl_delete;
brq_ctl_cmd_fn brq_ctl_schedule; /* schedule.c */

#endif
