// SPDX-License-Identifier: MIT
// Tests for client/ctl/token.c: which file of a packaged install's admin tokens brooqctl
// uses when no token file is named, and why it refuses one.
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "token.h"

static char dir[64];
static char out[4096], why[4200];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/brq-ctl-token.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0700), 0);
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

TestSuite(ctl_token, .init = setup, .fini = teardown);

// dir/name (static buffer), written with mode and the modification time mtime.
static const char *
put(const char *name, mode_t mode, time_t mtime)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "0123456789abcdef0123456789abcdef\n", 33), 33);
	cr_assert_eq(fchmod(fd, mode), 0);
	struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
	cr_assert_eq(futimens(fd, ts), 0);
	close(fd);
	return path;
}

static int
pick(void)
{
	out[0] = why[0] = '\0';
	return brq_ctl_default_token(dir, out, sizeof(out), why, sizeof(why));
}

Test(ctl_token, the_oldest_file_is_used_so_a_token_added_for_rotation_waits_for_the_restart)
{
	put("2", 0600, 2000000000);
	const char *old = put("1", 0600, 1900000000);
	char        want[256];
	snprintf(want, sizeof(want), "%s", old);
	cr_assert_eq(pick(), 0, "%s", why);
	cr_assert_str_eq(out, want);
	// The old one removed (the rotation's last step): the new one.
	cr_assert_eq(unlink(want), 0);
	cr_assert_eq(pick(), 0, "%s", why);
	snprintf(want, sizeof(want), "%s/2", dir);
	cr_assert_str_eq(out, want);
}

Test(ctl_token, same_age_goes_by_name_and_hidden_files_and_directories_are_skipped)
{
	put("b", 0600, 1900000000);
	put("a", 0600, 1900000000);
	put(".a.swp", 0600, 1000000000);
	char sub[256];
	snprintf(sub, sizeof(sub), "%s/0-dir", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(pick(), 0, "%s", why);
	char want[256];
	snprintf(want, sizeof(want), "%s/a", dir);
	cr_assert_str_eq(out, want);
}

Test(ctl_token, no_directory_or_no_file_is_enoent)
{
	cr_assert_eq(pick(), ENOENT);
	cr_assert(strstr(why, "no token file in it") != NULL, "%s", why);
	cr_assert_eq(brq_ctl_default_token("/nonexistent/admin-tokens", out, sizeof(out), why, sizeof(why)),
		     ENOENT);
	cr_assert(strstr(why, "/nonexistent/admin-tokens/: No such file or directory") != NULL, "%s", why);
}

// The gateway refuses a token file that others may read; so does brooqctl's default.
Test(ctl_token, a_file_others_may_read_is_refused_without_showing_it)
{
	put("1", 0644, 1900000000);
	cr_assert_eq(pick(), EPERM);
	cr_assert(strstr(why, "/1: mode 0644 lets others read or write it") != NULL, "%s", why);
	cr_assert_null(strstr(why, "0123456789abcdef"));
}

Test(ctl_token, an_unreadable_directory_says_whose_it_is)
{
	if (geteuid() == 0)
		cr_skip_test("root reads every directory");
	cr_assert_eq(chmod(dir, 0000), 0);
	cr_assert_eq(pick(), EACCES);
	cr_assert(strstr(why, "Permission denied (the admin tokens are root's)") != NULL, "%s", why);
	cr_assert_eq(chmod(dir, 0700), 0);
}
