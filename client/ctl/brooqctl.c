/* SPDX-License-Identifier: MIT */
/* brooqctl: the operator's command line (migrations now; job admin over RPC). */
#include "migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BROOQ_MIGRATIONS_DIR
#define BROOQ_MIGRATIONS_DIR "migrations"
#endif

/* Exit codes, documented in docs/brooqctl.md. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: brooqctl migrate up|up-to N|down|down-to N|status|version\n"
	        "                [--dsn DSN | --dsn-file FILE] [--dir DIR]\n"
	        "\n"
	        "The DSN comes from --dsn-file, --dsn, $BROOQ_DSN_FILE or $BROOQ_DSN (in that order).\n"
	        "Prefer a file: a password on the command line is visible to every user.\n");
}

/* Reads the first line of a DSN file into a malloc'd string (caller frees). */
static char *
read_dsn_file(const char *path)
{
	FILE  *f = fopen(path, "r");
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
	const char *sub = NULL;
	long long   target = -1;
	char       *owned  = NULL;
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
		fprintf(stderr, "brooqctl: migrate: no DSN (use --dsn-file, $BROOQ_DSN_FILE or $BROOQ_DSN)\n");
		return EXIT_USAGE;
	}
	rc = brq_migrate_run(dsn, dir != NULL ? dir : BROOQ_MIGRATIONS_DIR, sub, target, stdout);
	free(owned);
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
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "brooqctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
