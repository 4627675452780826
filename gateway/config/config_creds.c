// SPDX-License-Identifier: MIT
// Credentials: the files systemd hands the gateway ($CREDENTIALS_DIRECTORY), or the
// directory the unit loads them from, read as systemd would load it (config.h).
//
// The second exists so that `--check-config` checks a packaged install as systemd will
// start it: the secrets of such an install exist only under /etc/brooq/credentials,
// in subdirectories that systemd flattens into worker-token_NAME / admin-token_NAME
// when it copies them. Every problem that would stop systemd at its CREDENTIALS step
// (a required file or directory missing) is one line among the others, and so is a
// token file systemd would skip (a symbolic link), since that token would silently
// not be loaded.
#include "config.h"
#include "config_parse.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// In the order of the unit's LoadCredential= lines (tests/credentials_layout_test.sh
// compares them with deploy/systemd/brooq-gateway.service).
const brq_unit_credential brq_unit_credentials[] = {
	{"dsn", "dsn", false, "the DSN"},
	{"worker-token", "worker-tokens", true, "one worker token per file"},
	{"admin-token", "admin-tokens", true, "one admin token per file"},
};
const size_t brq_unit_credentials_count = sizeof(brq_unit_credentials) / sizeof(brq_unit_credentials[0]);

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

// Appends the malloc'd path to *names (taking it), or frees it when memory runs out.
static void
names_add(struct loader *L, char ***names, size_t *n, char *path)
{
	char **nn = realloc(*names, (*n + 1) * sizeof(*nn));
	if (nn == NULL) {
		free(path);
		L->is_oom = true;
		return;
	}
	*names           = nn;
	(*names)[(*n)++] = path;
}

// "dir/name", malloc'd; NULL when memory runs out (noted in L).
static char *
join(struct loader *L, const char *dir, const char *name)
{
	size_t len  = strlen(dir) + 1 + strlen(name) + 1;
	char  *path = malloc(len);
	if (path == NULL) {
		L->is_oom = true;
		return NULL;
	}
	snprintf(path, len, "%s/%s", dir, name);
	return path;
}

// Adds the sorted paths to the role's list and frees them.
static void
add_sorted(struct loader *L, brq_config *cfg, bool is_admin, char **names, size_t n)
{
	if (n > 0) {
		qsort(names, n, sizeof(*names), cmp_str);
	}
	for (size_t i = 0; i < n; i++) {
		if (is_admin) {
			brq_cfg_list_add(L, &cfg->admin_token_files, &cfg->n_admin_token_files, names[i],
					 strlen(names[i]));
		} else {
			brq_cfg_list_add(L, &cfg->worker_token_files, &cfg->n_worker_token_files, names[i],
					 strlen(names[i]));
		}
		free(names[i]);
	}
	free(names);
}

// $CREDENTIALS_DIRECTORY as systemd fills it: every regular file named worker-token*
// or admin-token*, in name order.
static void
scan_flat(struct loader *L, brq_config *cfg, const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		brq_config_problem_add(L->p, "CREDENTIALS_DIRECTORY: cannot open %s: %s", dir,
				       strerror(errno));
		return;
	}
	char         **names[2] = {NULL, NULL}; // worker, admin
	size_t         n[2]     = {0, 0};
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		bool        is_worker = strncmp(de->d_name, "worker-token", 12) == 0;
		bool        is_admin  = strncmp(de->d_name, "admin-token", 11) == 0;
		struct stat st;
		char       *path = is_worker || is_admin ? join(L, dir, de->d_name) : NULL;
		if (path == NULL) {
			continue;
		}
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(path);
			continue;
		}
		names_add(L, &names[is_admin], &n[is_admin], path);
	}
	closedir(d);
	add_sorted(L, cfg, false, names[0], n[0]);
	add_sorted(L, cfg, true, names[1], n[1]);
}

// One token directory of the unit's layout, as LoadCredential='s directory form reads
// it: its regular files, hidden ones skipped, in name order. What systemd would skip or
// refuse is a problem here, named.
static void
scan_token_dir(struct loader *L, brq_config *cfg, const char *base, const brq_unit_credential *uc)
{
	char *dir = join(L, base, uc->source);
	if (dir == NULL) {
		return;
	}
	DIR *d = opendir(dir);
	if (d == NULL) {
		brq_config_problem_add(L->p,
				       "credentials: %s: %s (the unit loads its files with "
				       "LoadCredential=%s:; without it systemd does not start the service)",
				       dir, strerror(errno), uc->id);
		free(dir);
		return;
	}
	char         **names = NULL;
	size_t         n     = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char       *path = de->d_name[0] != '.' ? join(L, dir, de->d_name) : NULL;
		if (path == NULL) {
			continue;
		}
		if (lstat(path, &st) != 0) { // gone since readdir: as systemd, not loaded
			free(path);
			continue;
		}
		if (S_ISREG(st.st_mode)) {
			names_add(L, &names, &n, path);
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			brq_config_problem_add(L->p,
					       "credentials: %s: a symbolic link, which systemd does not "
					       "load: make it a regular file",
					       path);
		} else {
			brq_config_problem_add(L->p,
					       "credentials: %s: not a regular file: keep one token per "
					       "file directly in %s/",
					       path, uc->source);
		}
		free(path);
	}
	closedir(d);
	add_sorted(L, cfg, strcmp(uc->id, "admin-token") == 0, names, n);
	free(dir);
}

// The unit's files that are not directories must exist: systemd refuses to start a
// unit whose LoadCredential= source is missing.
static void
check_unit_files(struct loader *L)
{
	for (size_t i = 0; i < brq_unit_credentials_count; i++) {
		const brq_unit_credential *uc = &brq_unit_credentials[i];
		struct stat                st;
		char                      *path = uc->is_dir ? NULL : join(L, L->unit_dir, uc->source);
		if (path == NULL) {
			continue;
		}
		if (stat(path, &st) != 0) {
			brq_config_problem_add(
				L->p,
				"credentials: %s: %s (the unit loads it with LoadCredential=%s:; "
				"without it systemd does not start the service)",
				path, strerror(errno), uc->id);
		} else if (!S_ISREG(st.st_mode)) {
			brq_config_problem_add(L->p, "credentials: %s: not a regular file", path);
		}
		free(path);
	}
}

void
brq_cfg_creds_open(struct loader *L, const brq_config_sources *src)
{
	const char *dir = src->unit_credentials_dir;
	struct stat st;

	if (dir == NULL && src->is_unit_default &&
	    brq_cfg_src_get(&L->src, "CREDENTIALS_DIRECTORY") == NULL) {
		if (lstat(BRQ_UNIT_CREDENTIALS_DIR, &st) == 0) {
			dir = BRQ_UNIT_CREDENTIALS_DIR;
		} else {
			L->is_unit_default_absent = true;
		}
	}
	if (dir == NULL) {
		L->tokens_dir = src->tokens_dir;
		return;
	}
	L->is_unit_layout = true;
	DIR *d            = opendir(dir);
	if (d == NULL) {
		// Root reads it (systemd, before the service starts): say so rather than
		// report every file in it as missing.
		brq_config_problem_add(L->p, "credentials: cannot open %s: %s%s", dir, strerror(errno),
				       errno == EACCES ? " (systemd reads it as root: check as root)" : "");
		return;
	}
	closedir(d);
	L->unit_dir = dir;
	check_unit_files(L);
}

const char *
brq_cfg_creds_dir(const struct loader *L)
{
	if (L->is_unit_layout) {
		return L->unit_dir;
	}
	return brq_cfg_src_get(&L->src, "CREDENTIALS_DIRECTORY");
}

void
brq_cfg_creds_scan_tokens(struct loader *L, brq_config *cfg)
{
	const char *base = L->is_unit_layout ? L->unit_dir : L->tokens_dir;
	if (!L->is_unit_layout && base == NULL) {
		const char *dir = brq_cfg_src_get(&L->src, "CREDENTIALS_DIRECTORY");
		if (dir != NULL) {
			scan_flat(L, cfg, dir);
		}
		return;
	}
	for (size_t i = 0; base != NULL && i < brq_unit_credentials_count; i++) {
		if (brq_unit_credentials[i].is_dir) {
			scan_token_dir(L, cfg, base, &brq_unit_credentials[i]);
		}
	}
}
