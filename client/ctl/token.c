/* SPDX-License-Identifier: MIT */
/* brooqctl's default token file: the oldest file of the packaged install's admin tokens. */
#include "token.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether a (mtime, name) comes before b. */
static bool
is_older(const struct stat *a, const char *a_name, const struct stat *b, const char *b_name)
{
	if (a->st_mtim.tv_sec != b->st_mtim.tv_sec)
		return a->st_mtim.tv_sec < b->st_mtim.tv_sec;
	if (a->st_mtim.tv_nsec != b->st_mtim.tv_nsec)
		return a->st_mtim.tv_nsec < b->st_mtim.tv_nsec;
	return strcmp(a_name, b_name) < 0;
}

int
brq_ctl_default_token(const char *dir, char *out, size_t cap, char *why, size_t whycap)
{
	char        path[4096];
	struct stat best_st  = {0};
	bool        has_best = false;

	DIR *d = opendir(dir);
	if (d == NULL) {
		int err = errno;
		snprintf(why, whycap, "%s/: %s%s", dir, strerror(err),
			 err == EACCES ? " (the admin tokens are root's)" : "");
		return err;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		int n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (n < 0 || (size_t) n >= sizeof(path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (!has_best || is_older(&st, path, &best_st, out)) {
			if ((size_t) n >= cap) {
				closedir(d);
				snprintf(why, whycap, "%s/: a file name too long", dir);
				return ENAMETOOLONG;
			}
			memcpy(out, path, (size_t) n + 1);
			best_st  = st;
			has_best = true;
		}
	}
	closedir(d);
	if (!has_best) {
		snprintf(why, whycap, "%s/: no token file in it", dir);
		return ENOENT;
	}
	if ((best_st.st_mode & 0007) != 0) {
		snprintf(why, whycap, "%s: mode %04o lets others read or write it (chmod 0600 it)", out,
			 (unsigned) (best_st.st_mode & 07777));
		return EPERM;
	}
	if (access(out, R_OK) != 0) {
		int err = errno;
		snprintf(why, whycap, "%s: %s%s", out, strerror(err),
			 err == EACCES ? " (the admin tokens are root's)" : "");
		return err;
	}
	return 0;
}
