/* SPDX-License-Identifier: MIT */
/* brooqctl: the operator's command line: job admin over RPC, and migrations. */
#include "cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "brq_units.h"
#include "brq_version.h"
#include "fmt.h"
#include "migrate.h"
#include "token.h"

/* Set by client/CMakeLists.txt: the installed migrations (absolute), and the same
 * place relative to the installed brooqctl's directory. */
#ifndef BROOQ_MIGRATIONS_DIR
#define BROOQ_MIGRATIONS_DIR "/usr/local/share/brooq/migrations"
#endif
#ifndef BROOQ_MIGRATIONS_RELDIR
#define BROOQ_MIGRATIONS_RELDIR "../share/brooq/migrations"
#endif

#define TIMEOUT_MAX_MS 86400000 /* --timeout: 1ms..24h */

static const char common_help[] =
	"Options (before or after the command; a value follows its option, or an =):\n"
	"  --url URL          gateway address (default $BROOQ_URL, else\n"
	"                     ipc:///run/brooq/gateway.sock)\n"
	"  --token-file FILE  bearer token file (default: the file named by\n"
	"                     $BROOQ_TOKEN_FILE, else the oldest file of\n"
	"                     " BRQ_CTL_ADMIN_TOKEN_DIR "/, a packaged\n"
	"                     install's admin token, readable by root); a token is\n"
	"                     never accepted on the command line\n"
	"  --timeout D        per-call timeout, 1ms..24h (default 10s)\n"
	"  --tls-ca FILE      tls+tcp:// URLs: CA certificates (PEM) the gateway's\n"
	"                     certificate must chain to (default $BROOQ_TLS_CA_FILE)\n"
	"  --tls-cert FILE, --tls-key FILE\n"
	"                     tls+tcp:// URLs: client certificate and its key, for a\n"
	"                     gateway that requires one (default $BROOQ_TLS_CERT_FILE,\n"
	"                     $BROOQ_TLS_KEY_FILE)\n"
	"  --tls-server-name NAME\n"
	"                     the name the gateway's certificate must carry (default\n"
	"                     $BROOQ_TLS_SERVER_NAME, else the URL's host)\n"
	"  --json             print one JSON object, also for every error\n"
	"Durations D: digits and a unit ms, s, m, h or d (500ms, 30s, 5m, 1h); a bare\n"
	"number other than 0 is refused, as in the gateway's configuration.\n"
	"\n"
	"Exit codes: 0 ok; 1 operation failed (refused, not found, job not cancelable,\n"
	"output not written); 2 usage error; 3 gateway unreachable, timed out or\n"
	"unavailable; 4 authentication or permission (token file, unauthenticated,\n"
	"not admin).\n";

static const char migrate_help[] =
	"usage: brooqctl migrate up|up-to N|down|down-to N|status|version\n"
	"                [--dsn DSN | --dsn-file FILE] [--dir DIR] [--json]\n"
	"\n"
	"Applies the schema to PostgreSQL directly (the gateway never does). The DSN\n"
	"comes from --dsn-file, --dsn, $BROOQ_DSN_FILE or $BROOQ_DSN (in that order).\n"
	"Prefer a file: a password on the command line is visible to every user.\n"
	"--json: one object, the schema's version and the migrations (each with its\n"
	"version, name, applied, applied_at): all of them (status), those the command\n"
	"changed (up, down, ...); errors too.\n"
	"Exit codes: 0 ok; 1 database or migration error; 2 usage error.\n";

static const struct {
	const char     *name;
	brq_ctl_cmd_fn *fn;
	const char     *help; /* usage line and what it does */
} commands[] = {
	{"ping", brq_ctl_ping,
	 "usage: brooqctl [OPTIONS] ping\n\n"
	 "Checks that the gateway answers and that the token is accepted; prints the\n"
	 "gateway's name and version and the round trip.\n"},
	{"enqueue", brq_ctl_enqueue,
	 "usage: brooqctl [OPTIONS] enqueue TOPIC JSON|- [--key K] [--delay D] [--max-attempts N]\n"
	 "                                     [--priority P]\n\n"
	 "Enqueues one job. JSON is the payload (any JSON value); - reads it from stdin.\n"
	 "  --key K            idempotency key: a job with the same (topic, key) is not\n"
	 "                     enqueued again; its id is printed (empty key: none)\n"
	 "  --delay D          make the job ready after D\n"
	 "  --max-attempts N   attempts before dead (default: the gateway's, per topic)\n"
	 "  --priority P       1 (runs first, the default) .. 9 (runs last)\n"},
	{"job", brq_ctl_job,
	 "usage: brooqctl [OPTIONS] job ID\n\n"
	 "Shows every field of the job's row: state, attempts, last_error, lease, payload.\n"},
	{"cancel", brq_ctl_cancel,
	 "usage: brooqctl [OPTIONS] cancel ID          (admin token)\n\n"
	 "Cancels a pending, failed or processing job; a running job's worker learns it\n"
	 "at its next heartbeat and writes nothing. A job already canceled: exit 0; done\n"
	 "or dead: not cancelable, exit 1.\n"},
	{"stats", brq_ctl_stats,
	 "usage: brooqctl [OPTIONS] stats\n\n"
	 "Counts jobs per topic and state, with the age of the oldest ready job.\n"},
	{"pause", brq_ctl_pause,
	 "usage: brooqctl [OPTIONS] pause TOPIC        (admin token)\n\n"
	 "No gateway starts the topic's jobs any more (the others within one poll\n"
	 "interval); enqueues still work, running jobs run on, waiting claims wait.\n"},
	{"resume", brq_ctl_resume,
	 "usage: brooqctl [OPTIONS] resume TOPIC       (admin token)\n\n"
	 "Undoes pause: the topic's jobs are claimed again, waiting claims first.\n"},
	{"limits", brq_ctl_limits,
	 "usage: brooqctl [OPTIONS] limits TOPIC [--concurrency N] [--rate R]   (admin token)\n\n"
	 "Limits the topic across all gateways, enforced when jobs are claimed:\n"
	 "  --concurrency N    at most N of its jobs processing at once (0: no limit)\n"
	 "  --rate R           at most R of its jobs started per second (0: no limit)\n"
	 "A limit not given is left as it is.\n"},
	{"topics", brq_ctl_topics,
	 "usage: brooqctl [OPTIONS] topics             (admin token)\n\n"
	 "Lists the topics that are paused or limited, with their jobs processing now.\n"},
	{"jobs", brq_ctl_jobs,
	 "usage: brooqctl [OPTIONS] jobs [--topic T] [--state S] [--key K] [--since D] [--until D]\n"
	 "                             [--limit N] [--cursor C]       (admin token)\n\n"
	 "Lists jobs, newest first, one page at a time (every filter optional):\n"
	 "  --topic T    jobs of topic T\n"
	 "  --state S    pending, processing, failed, done, dead or canceled\n"
	 "  --key K      the job with idempotency key K (in every topic without --topic)\n"
	 "  --since D    created in the last D (e.g. 1h)\n"
	 "  --until D    created more than D ago\n"
	 "  --limit N    jobs per page, 1..1000 (default 50)\n"
	 "  --cursor C   the next page: C is what the previous page said (\"next\")\n"},
	{"retry", brq_ctl_retry,
	 "usage: brooqctl [OPTIONS] retry ID                              (admin token)\n"
	 "       brooqctl [OPTIONS] retry --topic T --state dead|canceled [--limit N]\n\n"
	 "Runs a dead or canceled job again, as a new job (same topic, payload,\n"
	 "max_attempts and priority; its retry_of names the original, which is left as it is). A job\n"
	 "retried already is not retried twice: its retry's id is printed. With --topic:\n"
	 "up to N (1..1000, default 100) such jobs of topic T, oldest first. Another\n"
	 "state: conflict, exit 1.\n"},
	{"delete", brq_ctl_delete,
	 "usage: brooqctl [OPTIONS] delete ID          (admin token)\n\n"
	 "Deletes a done, dead or canceled job. Another state: conflict, exit 1.\n"},
	{"schedule", brq_ctl_schedule,
	 "usage: brooqctl [OPTIONS] schedule list                      (admin token)\n"
	 "       brooqctl [OPTIONS] schedule add NAME TOPIC (--cron EXPR [--tz ZONE] | --every D)\n"
	 "                [--payload JSON] [--misfire skip|catch_up] [--catch-up-max N]\n"
	 "                [--max-attempts N]\n"
	 "       brooqctl [OPTIONS] schedule remove NAME\n\n"
	 "Periodic jobs: every slot of a schedule enqueues one job on TOPIC, exactly once\n"
	 "whatever the number of gateways. --cron takes 5 fields (minute hour day-of-month\n"
	 "month day-of-week) read in --tz (default UTC); --every a duration (>= 1s), slots\n"
	 "at its multiples since the Unix epoch. Slots missed while no gateway ran (over a\n"
	 "minute late): skip (default) enqueues the latest only, catch_up the latest\n"
	 "--catch-up-max (default 10). add replaces a schedule of the same name.\n"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static int
find_command(const char *name)
{
	for (size_t k = 0; k < N_COMMANDS; k++)
		if (strcmp(name, commands[k].name) == 0)
			return (int) k;
	return -1;
}

/*
 * Where `migrate` reads migrations without --dir or $BROOQ_MIGRATIONS_DIR, into
 * out[0..cap):
 * 1. BROOQ_MIGRATIONS_RELDIR from this program's own directory, if it is a
 *    directory: an install under any prefix (cmake --install --prefix, dpkg -x)
 *    finds its own copy, and a build tree finds the source's migrations/, which
 *    CMake links there. The checkout's path is thus never compiled in: an
 *    installed brooqctl carries no path of the machine that built it.
 * 2. Else BROOQ_MIGRATIONS_DIR, the configured install location.
 */
static void
default_migrations_dir(char *out, size_t cap)
{
	char        exe[PATH_MAX], cand[PATH_MAX + sizeof(BROOQ_MIGRATIONS_RELDIR) + 1], real[PATH_MAX];
	struct stat st;
	ssize_t     n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	snprintf(out, cap, "%s", BROOQ_MIGRATIONS_DIR);
	if (n <= 0)
		return;
	exe[n]      = '\0';
	char *slash = strrchr(exe, '/');
	if (slash == NULL)
		return;
	*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/%s", exe, BROOQ_MIGRATIONS_RELDIR);
	if (realpath(cand, real) != NULL && stat(real, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(out, cap, "%s", real);
}

/* Where migrations are read from, as the help says it. */
static void
migrations_help(FILE *f)
{
	char dir[PATH_MAX];
	default_migrations_dir(dir, sizeof(dir));
	fprintf(f, "Migrations are read from --dir, else $BROOQ_MIGRATIONS_DIR,\nelse %s\n", dir);
}

/* The whole usage (cmd NULL) or one command's, with the common options. */
static void
usage(FILE *f, const char *cmd)
{
	int k = cmd != NULL ? find_command(cmd) : -1;
	if (cmd != NULL && strcmp(cmd, "migrate") == 0) {
		fputs(migrate_help, f);
		migrations_help(f);
		return;
	}
	if (k >= 0) {
		fprintf(f, "%s\n%s", commands[k].help, common_help);
		return;
	}
	fputs("usage: brooqctl [OPTIONS] ping\n"
	      "       brooqctl [OPTIONS] enqueue TOPIC JSON|- [--key K] [--delay D] [--max-attempts N]\n"
	      "                [--priority P]\n"
	      "       brooqctl [OPTIONS] job ID\n"
	      "       brooqctl [OPTIONS] cancel ID          (admin token)\n"
	      "       brooqctl [OPTIONS] stats\n"
	      "       brooqctl [OPTIONS] pause|resume TOPIC       (admin token)\n"
	      "       brooqctl [OPTIONS] limits TOPIC [--concurrency N] [--rate R]   (admin token)\n"
	      "       brooqctl [OPTIONS] topics             (admin token)\n"
	      "       brooqctl [OPTIONS] jobs [--topic T] [--state S] [--limit N] [--cursor C] ...  (admin)\n"
	      "       brooqctl [OPTIONS] retry ID | --topic T --state dead|canceled [--limit N]  (admin)\n"
	      "       brooqctl [OPTIONS] delete ID          (admin token)\n"
	      "       brooqctl [OPTIONS] schedule list|add|remove ...  (admin token)\n"
	      "       brooqctl migrate up|up-to N|down|down-to N|status|version\n"
	      "                [--dsn DSN | --dsn-file FILE] [--dir DIR] [--json]\n"
	      "       brooqctl --version | [COMMAND] --help\n"
	      "\n",
	      f);
	fputs(common_help, f);
	migrations_help(f);
}

/* Reads the first line of a DSN file into a malloc'd string (caller frees). */
static char *
read_dsn_file(const char *path)
{
	FILE  *f    = fopen(path, "r");
	char  *line = NULL;
	size_t cap  = 0;
	if (f == NULL)
		return NULL;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	if (n < 0) {
		free(line);
		return NULL;
	}
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
		line[--n] = '\0';
	return line;
}

static const char *
env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return (v != NULL && v[0] != '\0') ? v : NULL;
}

/* brooqctl migrate ARGS (argv after "migrate"). */
static int
cmd_migrate(brq_ctl *ctl, int argc, char **argv)
{
	const char *dsn = NULL, *dsn_file = NULL, *dir = env_nonempty("BROOQ_MIGRATIONS_DIR");
	const char *sub    = NULL;
	long long   target = -1;
	char       *owned  = NULL;

	ctl->cmd = "migrate";
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--dsn") == 0 && i + 1 < argc)
			dsn = argv[++i];
		else if (strcmp(argv[i], "--dsn-file") == 0 && i + 1 < argc)
			dsn_file = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			ctl->json = true;
		else if (sub == NULL && argv[i][0] != '-')
			sub = argv[i];
		else if (sub != NULL && target < 0 && argv[i][0] != '-') {
			uint64_t v;
			if (brq_ctl_parse_u64(argv[i], 0, INT64_MAX, &v) != 0)
				return brq_ctl_usage(ctl, "bad version '%s'", argv[i]);
			target = (long long) v;
		} else {
			return brq_ctl_usage(ctl, "unexpected argument '%s'", argv[i]);
		}
	}
	if (sub == NULL)
		return brq_ctl_usage(ctl, "a subcommand is required");
	if ((strcmp(sub, "up-to") == 0 || strcmp(sub, "down-to") == 0) && target < 0)
		return brq_ctl_usage(ctl, "%s needs a version", sub);
	if (dsn_file == NULL && dsn == NULL)
		dsn_file = env_nonempty("BROOQ_DSN_FILE");
	if (dsn_file != NULL) {
		if ((owned = read_dsn_file(dsn_file)) == NULL)
			return brq_ctl_fail(ctl, BRQ_EXIT_FAIL, "dsn", NULL, "cannot read DSN file %s",
					    dsn_file);
		dsn = owned;
	}
	if (dsn == NULL)
		dsn = env_nonempty("BROOQ_DSN");
	if (dsn == NULL)
		return brq_ctl_usage(ctl, "no DSN (use --dsn-file, $BROOQ_DSN_FILE or $BROOQ_DSN)");
	char default_dir[PATH_MAX];
	if (dir == NULL) {
		default_migrations_dir(default_dir, sizeof(default_dir));
		dir = default_dir;
	}
	int rc = brq_migrate_run(dsn, dir, sub, target, stdout, ctl->json);
	free(owned);
	return rc;
}

/*
 * Matches option `name` at argv[*i], as "--name VALUE" or "--name=VALUE".
 * Returns 1 with *val set (and *i advanced past a separate value), 0 when
 * argv[*i] is another argument, -1 when the value is missing.
 */
static int
take_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i];
	size_t      n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 1;
}

/* A duration option's value into *ms, within [min_ms, max_ms]; a usage error else. */
static int
duration_opt(const brq_ctl *ctl, const char *opt, const char *v, uint64_t min_ms, uint64_t max_ms,
	     uint64_t *ms)
{
	const char *why;
	char        lo[32], hi[32];
	if (brq_parse_duration_ms(v, ms, &why) != 0)
		return brq_ctl_usage(ctl, "%s '%s': %s", opt, v, why);
	if (*ms < min_ms || *ms > max_ms)
		return brq_ctl_usage(ctl, "%s '%s': must be between %s and %s", opt, v,
				     min_ms == 0 ? "0" : brq_fmt_duration(lo, sizeof(lo), min_ms),
				     brq_fmt_duration(hi, sizeof(hi), max_ms));
	return BRQ_EXIT_OK;
}

/* The TLS options of a tls+tcp:// URL, all file paths but the last. */
static const char *const tls_opts[] = {"--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name"};

/* A TLS option at argv[*i] into its field: 1 when it was one (*rc the result), else 0. */
static int
tls_option(brq_ctl *ctl, int argc, char **argv, int *i, int *rc)
{
	const char **dst[] = {&ctl->tls_ca_file, &ctl->tls_cert_file, &ctl->tls_key_file,
			      &ctl->tls_server_name};
	const char  *v;
	for (size_t k = 0; k < sizeof(tls_opts) / sizeof(tls_opts[0]); k++) {
		int m = take_opt(argc, argv, i, tls_opts[k], &v);
		if (m == 0)
			continue;
		if (m < 0 || v[0] == '\0')
			*rc = brq_ctl_usage(ctl, "option %s needs a value", tls_opts[k]);
		else
			*dst[k] = v;
		return 1;
	}
	return 0;
}

/* What the options said besides brq_ctl's fields. */
typedef struct opts_seen {
	bool help, version;
	bool enqueue_only;  /* --delay, --priority: enqueue */
	bool limits_only;   /* --concurrency, --rate: limits */
	bool attempts;      /* --max-attempts: enqueue and schedule add */
	bool schedule_only; /* --cron, --tz, --every, --payload, --misfire, --catch-up-max */
	bool list_only;     /* --cursor, --since, --until: jobs */
	bool topic_opts;    /* --topic, --state, --limit: jobs and retry */
	bool key;           /* --key: enqueue and jobs */
} opts_seen;

/* --topic, --state, --limit, --cursor, --since, --until at argv[*i]: 1 when it was one
 * of them (*rc set), 0 when not. */
static int
list_option(brq_ctl *ctl, opts_seen *seen, int argc, char **argv, int *i, int *rc)
{
	const char *v, *name = argv[*i];
	uint64_t    u;
	int         m;
	bool        shared = true; /* --topic, --state, --limit: jobs and retry */
	*rc                = BRQ_EXIT_OK;
	if ((m = take_opt(argc, argv, i, "--topic", &v)) > 0) {
		ctl->topic = v;
	} else if (m == 0 && (m = take_opt(argc, argv, i, "--state", &v)) > 0) {
		ctl->state = -1;
		for (int s = BROOQ_PENDING; s <= BROOQ_CANCELED; s++)
			if (strcmp(v, brooq_state_name((brooq_state) s)) == 0)
				ctl->state = s;
		if (ctl->state < 0)
			*rc = brq_ctl_usage(
				ctl, "--state '%s': pending, processing, failed, done, dead or canceled", v);
	} else if (m == 0 && (m = take_opt(argc, argv, i, "--limit", &v)) > 0) {
		if (brq_ctl_parse_u64(v, 1, 1000, &u) != 0)
			*rc = brq_ctl_usage(ctl, "--limit '%s': must be 1..1000", v);
		else
			ctl->limit = (uint32_t) u;
	} else if (m == 0 && (m = take_opt(argc, argv, i, "--cursor", &v)) > 0) {
		ctl->cursor = v;
		shared      = false;
	} else if (m == 0 && (m = take_opt(argc, argv, i, "--since", &v)) > 0) {
		*rc    = duration_opt(ctl, "--since", v, 1, UINT64_MAX, &ctl->since_ms);
		shared = false;
	} else if (m == 0 && (m = take_opt(argc, argv, i, "--until", &v)) > 0) {
		*rc    = duration_opt(ctl, "--until", v, 1, UINT64_MAX, &ctl->until_ms);
		shared = false;
	}
	if (m == 0)
		return 0;
	if (m < 0)
		*rc = brq_ctl_usage(ctl, "option %s needs a value", name);
	seen->topic_opts = seen->topic_opts || shared;
	seen->list_only  = seen->list_only || !shared;
	return 1;
}

/* schedule add's options: a string each, or (every, catch-up-max) parsed below. */
static const char *const sched_opts[] = {"--cron",    "--tz",    "--payload",
					 "--misfire", "--every", "--catch-up-max"};

/* A schedule add option at argv[*i]: 1 when it was one (*rc the result), else 0. */
static int
sched_option(brq_ctl *ctl, int argc, char **argv, int *i, int *rc)
{
	const char **dst[] = {&ctl->cron, &ctl->tz, &ctl->payload, &ctl->misfire};
	const char  *v;
	uint64_t     u;
	for (size_t k = 0; k < sizeof(sched_opts) / sizeof(sched_opts[0]); k++) {
		int m = take_opt(argc, argv, i, sched_opts[k], &v);
		if (m == 0)
			continue;
		if (m < 0 || v[0] == '\0')
			*rc = brq_ctl_usage(ctl, "option %s needs a value", sched_opts[k]);
		else if (k < 4)
			*dst[k] = v;
		else if (k == 4)
			*rc = duration_opt(ctl, "--every", v, 1000, UINT64_MAX, &ctl->every_ms);
		else if (brq_ctl_parse_u64(v, 1, 1000, &u) != 0)
			*rc = brq_ctl_usage(ctl, "--catch-up-max '%s': must be 1..1000", v);
		else
			ctl->catch_up_max = (uint32_t) u;
		return 1;
	}
	return 0;
}

/* One option at argv[*i] (not a positional). Returns BRQ_EXIT_OK or a usage error. */
static int
one_option(brq_ctl *ctl, opts_seen *seen, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	uint64_t    u;
	int         m, rc = BRQ_EXIT_OK;

	if (strcmp(a, "--json") == 0) {
		ctl->json = true;
	} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		seen->help = true;
	} else if (strcmp(a, "--version") == 0) {
		seen->version = true;
	} else if ((m = take_opt(argc, argv, i, "--url", &v)) != 0) {
		if (m < 0 || v[0] == '\0')
			return brq_ctl_usage(ctl, "option --url needs a value");
		ctl->url = v;
	} else if ((m = take_opt(argc, argv, i, "--token-file", &v)) != 0) {
		if (m < 0 || v[0] == '\0')
			return brq_ctl_usage(ctl, "option --token-file needs a value");
		ctl->token_file = v;
	} else if (tls_option(ctl, argc, argv, i, &rc) != 0) {
		return rc;
	} else if (sched_option(ctl, argc, argv, i, &rc) != 0) {
		seen->schedule_only = true;
		return rc;
	} else if ((m = take_opt(argc, argv, i, "--timeout", &v)) != 0) {
		if (m < 0)
			return brq_ctl_usage(ctl, "option --timeout needs a value");
		if ((rc = duration_opt(ctl, "--timeout", v, 1, TIMEOUT_MAX_MS, &u)) != BRQ_EXIT_OK)
			return rc;
		ctl->timeout_ms = (int) u;
	} else if (list_option(ctl, seen, argc, argv, i, &rc) != 0) {
		return rc;
	} else if ((m = take_opt(argc, argv, i, "--key", &v)) != 0) {
		if (m < 0)
			return brq_ctl_usage(ctl, "option --key needs a value");
		ctl->key  = v;
		seen->key = true;
	} else if ((m = take_opt(argc, argv, i, "--delay", &v)) != 0) {
		if (m < 0)
			return brq_ctl_usage(ctl, "option --delay needs a value");
		if ((rc = duration_opt(ctl, "--delay", v, 0, UINT64_MAX, &ctl->delay_ms)) != BRQ_EXIT_OK)
			return rc;
		seen->enqueue_only = true;
	} else if ((m = take_opt(argc, argv, i, "--max-attempts", &v)) != 0) {
		if (m < 0)
			return brq_ctl_usage(ctl, "option --max-attempts needs a value");
		if (brq_ctl_parse_u64(v, 1, UINT32_MAX, &u) != 0)
			return brq_ctl_usage(ctl, "--max-attempts '%s': not a positive integer", v);
		ctl->max_attempts = (uint32_t) u;
		seen->attempts    = true;
	} else if ((m = take_opt(argc, argv, i, "--priority", &v)) != 0) {
		if (m < 0)
			return brq_ctl_usage(ctl, "option --priority needs a value");
		if (brq_ctl_parse_u64(v, 1, 9, &u) != 0)
			return brq_ctl_usage(ctl, "--priority '%s': not an integer 1..9", v);
		ctl->priority      = (uint32_t) u;
		seen->enqueue_only = true;
	} else if ((m = take_opt(argc, argv, i, "--concurrency", &v)) != 0 ||
		   (m = take_opt(argc, argv, i, "--rate", &v)) != 0) {
		bool conc = strncmp(a, "--concurrency", 13) == 0;
		if (m < 0)
			return brq_ctl_usage(ctl, "option %s needs a value",
					     conc ? "--concurrency" : "--rate");
		if (brq_ctl_parse_u64(v, 0, 1000000, &u) != 0)
			return brq_ctl_usage(ctl, "%s '%s': not an integer 0..1000000",
					     conc ? "--concurrency" : "--rate", v);
		*(conc ? &ctl->concurrency : &ctl->rate) = (uint32_t) u;
		seen->limits_only                        = true;
	} else if (strncmp(a, "--token", 7) == 0 && strncmp(a, "--token-file", 12) != 0) {
		/* Never echo it: the argument may be the secret itself. */
		return brq_ctl_usage(ctl,
				     "a token is never accepted on the command line; use --token-file "
				     "FILE or $BROOQ_TOKEN_FILE");
	} else {
		return brq_ctl_usage(ctl, "unknown option '%s'", a);
	}
	return BRQ_EXIT_OK;
}

/* The command named by the first positional argument, for messages; NULL if none. */
static const char *
first_command(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i + 1 < argc ? argv[i + 1] : NULL;
		if (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)
			return argv[i];
		/* Skip the value of an option that takes one ("--url X"). */
		static const char *const valued[] = {
			"--url",          "--token-file", "--timeout",     "--key",   "--delay",
			"--max-attempts", "--priority",   "--concurrency", "--rate",  "--topic",
			"--state",        "--limit",      "--cursor",      "--since", "--until"};
		bool is_valued = false;
		for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
			is_valued = is_valued || strcmp(argv[i], valued[k]) == 0;
		for (size_t k = 0; k < sizeof(tls_opts) / sizeof(tls_opts[0]); k++)
			is_valued = is_valued || strcmp(argv[i], tls_opts[k]) == 0;
		for (size_t k = 0; k < sizeof(sched_opts) / sizeof(sched_opts[0]); k++)
			is_valued = is_valued || strcmp(argv[i], sched_opts[k]) == 0;
		i += is_valued;
	}
	return NULL;
}

/* Options given to a command they do not belong to: a usage error. */
static int
option_misplaced(const brq_ctl *ctl, const opts_seen *seen, const char *cmd)
{
	bool enqueue = strcmp(cmd, "enqueue") == 0, jobs = strcmp(cmd, "jobs") == 0;
	bool schedule = strcmp(cmd, "schedule") == 0;
	if (seen->enqueue_only && !enqueue)
		return brq_ctl_usage(ctl, "--delay and --priority belong to enqueue");
	if (seen->limits_only && strcmp(cmd, "limits") != 0)
		return brq_ctl_usage(ctl, "--concurrency and --rate belong to limits");
	if (seen->attempts && !enqueue && !schedule)
		return brq_ctl_usage(ctl, "--max-attempts belongs to enqueue and schedule add");
	if (seen->schedule_only && !schedule)
		return brq_ctl_usage(ctl,
				     "--cron, --tz, --every, --payload, --misfire and "
				     "--catch-up-max belong to schedule add");
	if (seen->key && !enqueue && !jobs)
		return brq_ctl_usage(ctl, "--key belongs to enqueue and jobs");
	if (seen->list_only && !jobs)
		return brq_ctl_usage(ctl, "--cursor, --since and --until belong to jobs");
	if (seen->topic_opts && !jobs && strcmp(cmd, "retry") != 0)
		return brq_ctl_usage(ctl, "--topic, --state and --limit belong to jobs and retry");
	return BRQ_EXIT_OK;
}

/* No --token-file and no $BROOQ_TOKEN_FILE: a packaged install's admin token
 * (token.h), with root's rights. Without one it is a usage error, as before the
 * default existed; one that exists but cannot be used is a permission error. */
static int
default_token(brq_ctl *ctl, char *buf, size_t cap)
{
	char why[4200];
	int  err = brq_ctl_default_token(BRQ_CTL_ADMIN_TOKEN_DIR, buf, cap, why, sizeof(why));
	if (err == 0) {
		ctl->token_file = buf;
		return BRQ_EXIT_OK;
	}
	if (err == ENOENT)
		return brq_ctl_usage(ctl,
				     "no token file: use --token-file FILE or set $BROOQ_TOKEN_FILE (the "
				     "default is the oldest file of %s)",
				     why);
	return brq_ctl_fail(ctl, BRQ_EXIT_AUTH, "token", NULL,
			    "no token file given (--token-file, $BROOQ_TOKEN_FILE) and the default "
			    "cannot be used: %s",
			    why);
}

/* The gateway commands: options anywhere, then the command and its arguments. */
static int
run_command(brq_ctl *ctl, int argc, char **argv)
{
	char    **pos  = calloc((size_t) argc + 1, sizeof(char *));
	int       npos = 0, rc = BRQ_EXIT_OK;
	bool      only_pos = false;
	opts_seen seen     = {0};

	if (pos == NULL)
		return brq_ctl_fail(ctl, BRQ_EXIT_FAIL, "out_of_memory", NULL, "out of memory");
	for (int i = 1; i < argc && rc == BRQ_EXIT_OK; i++) {
		const char *a = argv[i];
		if (only_pos || a[0] != '-' || strcmp(a, "-") == 0)
			pos[npos++] = argv[i];
		else if (strcmp(a, "--") == 0)
			only_pos = true;
		else
			rc = one_option(ctl, &seen, argc, argv, &i);
	}
	int k = npos > 0 ? find_command(pos[0]) : -1;
	if (rc != BRQ_EXIT_OK) {
		/* reported */
	} else if (seen.version) {
		printf("brooqctl %s\n", BROOQ_VERSION);
	} else if (seen.help || (npos > 0 && strcmp(pos[0], "help") == 0)) {
		usage(stdout, seen.help ? (npos > 0 ? pos[0] : NULL) : (npos > 1 ? pos[1] : NULL));
	} else if (npos == 0) {
		rc = brq_ctl_usage(ctl, "a command is required");
	} else if (k < 0) {
		rc = brq_ctl_usage(ctl, "unknown command '%s'", pos[0]);
	} else if ((rc = option_misplaced(ctl, &seen, pos[0])) != BRQ_EXIT_OK) {
		/* reported */
	} else {
		char token_file[4096];
		if (ctl->token_file == NULL)
			ctl->token_file = env_nonempty("BROOQ_TOKEN_FILE");
		if (ctl->token_file == NULL)
			rc = default_token(ctl, token_file, sizeof(token_file));
		if (rc == BRQ_EXIT_OK)
			rc = commands[k].fn(ctl, npos - 1, pos + 1);
	}
	free(pos);
	return rc;
}

/* stdout is where results go: a write that failed (a full disk, a closed pipe) is
 * an error, whatever the command said. */
static int
check_stdout(int rc)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	fprintf(stderr, "brooqctl: cannot write the output: %s\n",
		errno != 0 ? strerror(errno) : "write error");
	return rc != BRQ_EXIT_OK ? rc : BRQ_EXIT_FAIL;
}

int
main(int argc, char **argv)
{
	brq_ctl ctl = {
		.cmd = "brooqctl", .state = -1, .concurrency = BROOQ_LIMIT_KEEP, .rate = BROOQ_LIMIT_KEEP};
	const char *cmd = first_command(argc, argv);
	int         rc;

	/* Errors before the options are read know about --json too. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		ctl.json = ctl.json || strcmp(argv[i], "--json") == 0;
	if (cmd != NULL && find_command(cmd) >= 0)
		ctl.cmd = cmd;
	errno = 0;
	if (cmd != NULL && strcmp(cmd, "migrate") == 0) {
		/* Its own options: everything but the word "migrate". */
		char **rest = calloc((size_t) argc, sizeof(char *));
		int    n = 0, seen_cmd = 0;
		bool   help = false;
		for (int i = 1; rest != NULL && i < argc; i++) {
			if (!seen_cmd && argv[i] == cmd) {
				seen_cmd = 1;
				continue;
			}
			help      = help || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
			rest[n++] = argv[i];
		}
		if (help)
			usage(stdout, "migrate");
		rc = rest == NULL ? BRQ_EXIT_FAIL : help ? BRQ_EXIT_OK : cmd_migrate(&ctl, n, rest);
		free(rest);
	} else if (argc < 2) {
		usage(stderr, NULL);
		rc = BRQ_EXIT_USAGE;
	} else {
		rc = run_command(&ctl, argc, argv);
	}
	return check_stdout(rc);
}
