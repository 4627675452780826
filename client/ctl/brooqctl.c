/* SPDX-License-Identifier: MIT */
/* brooqctl: the operator's command line: job admin over RPC, and migrations. */
#include "cmd.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "brq_version.h"
#include "fmt.h"
#include "migrate.h"

/* Set by client/CMakeLists.txt: the installed migrations (absolute), and the same
 * place relative to the installed brooqctl's directory. */
#ifndef BROOQ_MIGRATIONS_DIR
#define BROOQ_MIGRATIONS_DIR "/usr/local/share/brooq/migrations"
#endif
#ifndef BROOQ_MIGRATIONS_RELDIR
#define BROOQ_MIGRATIONS_RELDIR "../share/brooq/migrations"
#endif

/* Exit codes (enum brq_ctl_exit in cmd.h), documented in docs/brooqctl.md. */
enum { EXIT_OK = BRQ_EXIT_OK, EXIT_FAIL = BRQ_EXIT_FAIL, EXIT_USAGE = BRQ_EXIT_USAGE };

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

static void
usage(FILE *f)
{
	char dir[PATH_MAX];
	default_migrations_dir(dir, sizeof(dir));
	fprintf(f,
		"usage: brooqctl [OPTIONS] ping\n"
		"       brooqctl [OPTIONS] enqueue TOPIC JSON|- [--key K] [--delay D] [--max-attempts N]\n"
		"       brooqctl [OPTIONS] job ID\n"
		"       brooqctl [OPTIONS] cancel ID          (admin token)\n"
		"       brooqctl [OPTIONS] stats\n"
		"       brooqctl migrate up|up-to N|down|down-to N|status|version\n"
		"                [--dsn DSN | --dsn-file FILE] [--dir DIR]\n"
		"       brooqctl --version | --help\n"
		"\n"
		"Options (before or after the command):\n"
		"  --url URL          gateway address (default $BROOQ_URL, else\n"
		"                     ipc:///run/brooq/gateway.sock)\n"
		"  --token-file FILE  bearer token file (default: the file named by\n"
		"                     $BROOQ_TOKEN_FILE); a token is never accepted on the\n"
		"                     command line\n"
		"  --timeout D        per-call timeout (default 10s)\n"
		"  --json             print one JSON object instead of a table\n"
		"Durations D: a number with a unit ms, s, m or h (500ms, 30s, 5m, 1h);\n"
		"a bare number is milliseconds. JSON - reads the payload from stdin.\n"
		"\n"
		"Exit codes: 0 ok; 1 operation failed (refused, not found, job not cancelable);\n"
		"2 usage error; 3 gateway unreachable, timed out or unavailable;\n"
		"4 authentication or permission (token file, unauthenticated, not admin).\n"
		"\n"
		"migrate: the DSN comes from --dsn-file, --dsn, $BROOQ_DSN_FILE or $BROOQ_DSN\n"
		"(in that order). Prefer a file: a password on the command line is visible\n"
		"to every user. Migrations are read from --dir, else $BROOQ_MIGRATIONS_DIR,\n"
		"else %s\n",
		dir);
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

static int
cmd_migrate(int argc, char **argv)
{
	const char *dsn = NULL, *dsn_file = NULL, *dir = env_nonempty("BROOQ_MIGRATIONS_DIR");
	const char *sub    = NULL;
	long long   target = -1;
	char       *owned  = NULL;
	char        default_dir[PATH_MAX];
	int         rc;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--dsn") == 0 && i + 1 < argc)
			dsn = argv[++i];
		else if (strcmp(argv[i], "--dsn-file") == 0 && i + 1 < argc)
			dsn_file = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (sub == NULL && argv[i][0] != '-')
			sub = argv[i];
		else if (sub != NULL && target < 0 && argv[i][0] != '-') {
			char *end;
			target = strtoll(argv[i], &end, 10);
			if (*end != '\0' || target < 0) {
				fprintf(stderr, "brooqctl: migrate: bad version '%s'\n", argv[i]);
				return EXIT_USAGE;
			}
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (sub == NULL) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if ((strcmp(sub, "up-to") == 0 || strcmp(sub, "down-to") == 0) && target < 0) {
		fprintf(stderr, "brooqctl: migrate %s needs a version\n", sub);
		return EXIT_USAGE;
	}
	if (dsn_file == NULL && dsn == NULL)
		dsn_file = env_nonempty("BROOQ_DSN_FILE");
	if (dsn_file != NULL) {
		owned = read_dsn_file(dsn_file);
		if (owned == NULL) {
			fprintf(stderr, "brooqctl: cannot read DSN file %s\n", dsn_file);
			return EXIT_FAIL;
		}
		dsn = owned;
	}
	if (dsn == NULL)
		dsn = env_nonempty("BROOQ_DSN");
	if (dsn == NULL) {
		fprintf(stderr,
			"brooqctl: migrate: no DSN (use --dsn-file, $BROOQ_DSN_FILE or $BROOQ_DSN)\n");
		return EXIT_USAGE;
	}
	if (dir == NULL) {
		default_migrations_dir(default_dir, sizeof(default_dir));
		dir = default_dir;
	}
	rc = brq_migrate_run(dsn, dir, sub, target, stdout);
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

typedef int (*cmd_fn)(const brq_ctl *ctl, int argc, char **argv);

static const struct {
	const char *name;
	cmd_fn      fn;
} commands[] = {
	{"ping", brq_ctl_ping},     {"enqueue", brq_ctl_enqueue}, {"job", brq_ctl_job},
	{"cancel", brq_ctl_cancel}, {"stats", brq_ctl_stats},
};

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints a usage error and returns EXIT_USAGE. */
static int
bad_usage(const char *fmt, ...)
{
	va_list ap;
	fputs("brooqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see brooqctl --help)\n", stderr);
	return EXIT_USAGE;
}

/* The gateway commands: options anywhere, then the command and its arguments. */
static int
run_command(int argc, char **argv)
{
	brq_ctl     ctl  = {0};
	char      **pos  = calloc((size_t) argc + 1, sizeof(char *));
	int         npos = 0, rc;
	const char *v;
	bool        only_pos = false;
	bool        has_key = false, has_delay = false, has_max = false;

	if (pos == NULL)
		return EXIT_FAIL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int         m;
		if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
			pos[npos++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
		} else if (strcmp(a, "--json") == 0) {
			ctl.json = true;
		} else if ((m = take_opt(argc, argv, &i, "--url", &v)) != 0) {
			if (m < 0 || v[0] == '\0')
				goto missing;
			ctl.url = v;
		} else if ((m = take_opt(argc, argv, &i, "--token-file", &v)) != 0) {
			if (m < 0 || v[0] == '\0')
				goto missing;
			ctl.token_file = v;
		} else if ((m = take_opt(argc, argv, &i, "--timeout", &v)) != 0) {
			uint64_t ms;
			if (m < 0)
				goto missing;
			if (brq_ctl_parse_duration(v, &ms) != 0 || ms == 0 || ms > 86400000) {
				rc = bad_usage("--timeout: '%s' is not a duration between 1ms and 24h", v);
				goto out;
			}
			ctl.timeout_ms = (int) ms;
		} else if ((m = take_opt(argc, argv, &i, "--key", &v)) != 0) {
			if (m < 0)
				goto missing;
			ctl.key = v;
			has_key = true;
		} else if ((m = take_opt(argc, argv, &i, "--delay", &v)) != 0) {
			if (m < 0)
				goto missing;
			if (brq_ctl_parse_duration(v, &ctl.delay_ms) != 0) {
				rc = bad_usage("--delay: '%s' is not a duration (e.g. 500ms, 30s, 5m, 1h)",
					       v);
				goto out;
			}
			has_delay = true;
		} else if ((m = take_opt(argc, argv, &i, "--max-attempts", &v)) != 0) {
			uint64_t n;
			if (m < 0)
				goto missing;
			if (brq_ctl_parse_u64(v, 1, UINT32_MAX, &n) != 0) {
				rc = bad_usage("--max-attempts: '%s' is not a positive integer", v);
				goto out;
			}
			ctl.max_attempts = (uint32_t) n;
			has_max          = true;
		} else if (strncmp(a, "--token", 7) == 0 && strncmp(a, "--token-file", 12) != 0) {
			/* Never echo it: the argument may be the secret itself. */
			rc = bad_usage("a token is never accepted on the command line; use --token-file FILE "
				       "or $BROOQ_TOKEN_FILE");
			goto out;
		} else {
			rc = bad_usage("unknown option '%s'", a);
			goto out;
		}
		continue;
	missing:
		rc = bad_usage("option %s needs a value", a);
		goto out;
	}
	if (npos == 0) {
		usage(stderr);
		rc = EXIT_USAGE;
		goto out;
	}
	if ((has_key || has_delay || has_max) && strcmp(pos[0], "enqueue") != 0) {
		rc = bad_usage("--key, --delay and --max-attempts belong to enqueue, not %s", pos[0]);
		goto out;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(pos[0], commands[k].name) != 0)
			continue;
		if (ctl.token_file == NULL) {
			const char *env = getenv("BROOQ_TOKEN_FILE");
			ctl.token_file  = (env != NULL && env[0] != '\0') ? env : NULL;
		}
		if (ctl.token_file == NULL) {
			rc = bad_usage("%s: no token file: use --token-file FILE or set $BROOQ_TOKEN_FILE",
				       pos[0]);
			goto out;
		}
		rc = commands[k].fn(&ctl, npos - 1, pos + 1);
		goto out;
	}
	rc = bad_usage("unknown command '%s'", pos[0]);
out:
	free(pos);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "migrate") == 0)
		return cmd_migrate(argc - 2, argv + 2);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("brooqctl %s\n", BROOQ_VERSION);
		return EXIT_OK;
	}
	return run_command(argc, argv);
}
