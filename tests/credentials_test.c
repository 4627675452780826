// SPDX-License-Identifier: MIT
// Tests for gateway/config/config_creds.c: the unit's credentials directory read as
// systemd loads it (--credentials-dir, and --check-config's default), the loader and
// `brooq-gateway --check-config` both; every problem of a broken layout in one round.
// No database: --check-config connects to nothing.
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "config/config.h"
#include "gw.h"
#include "testdb.h"

static char                dir[64]; // the test's scratch directory
static brq_config          cfg;
static brq_config_problems probs;

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/brq-creds-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_geq(sodium_init(), 0);
}

static void
teardown(void)
{
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

TestSuite(creds, .init = setup, .fini = teardown);

// dir/rel (static buffer, one of four in turn).
static const char *
at(const char *rel)
{
	static char buf[4][512];
	static int  next;
	char       *p = buf[next++ % 4];
	snprintf(p, sizeof(buf[0]), "%s/%s", dir, rel);
	return p;
}

static void
put(const char *rel, const char *content)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0, "cannot write %s: %s", at(rel), strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t) strlen(content));
	close(fd);
}

static void
put_token(const char *rel)
{
	unsigned char raw[32];
	char          hex[65];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
	put(rel, hex);
}

static void
mkdir_at(const char *rel)
{
	cr_assert_eq(mkdir(at(rel), 0700), 0, "mkdir %s: %s", at(rel), strerror(errno));
}

static void
rm_rf(const char *rel)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", at(rel));
	cr_assert_eq(system(cmd), 0);
}

// The layout the unit loads, as README tells the admin to write it, under dir/etc.
static void
make_unit_layout(void)
{
	mkdir_at("etc");
	mkdir_at("etc/worker-tokens");
	mkdir_at("etc/admin-tokens");
	put("etc/dsn", "host=/nonexistent dbname=brooq user=brooq\n");
	put_token("etc/worker-tokens/1");
	put_token("etc/worker-tokens/2");
	put_token("etc/admin-tokens/1");
}

// A fake environment for the loader: a NULL-terminated table.
struct kv {
	const char *k, *v;
};

static const char *
tab_lookup(const char *name, void *arg)
{
	for (const struct kv *t = arg; t->k != NULL; t++)
		if (strcmp(t->k, name) == 0)
			return t->v;
	return NULL;
}

static int
load(const struct kv *env, const char *unit_dir, bool is_default)
{
	brq_config_sources src = {.lookup               = tab_lookup,
				  .lookup_arg           = (void *) env,
				  .unit_credentials_dir = unit_dir,
				  .is_unit_default      = is_default};
	return brq_config_load_from(&cfg, &src, &probs);
}

static bool
has_problem(const char *needle)
{
	for (size_t i = 0; i < probs.count; i++)
		if (strstr(probs.lines[i], needle) != NULL)
			return true;
	return false;
}

static const struct kv no_env[] = {{NULL, NULL}};

Test(creds, the_units_layout_gives_the_dsn_and_every_token_file_in_name_order)
{
	make_unit_layout();
	put_token("etc/worker-tokens/0-old");
	put("etc/worker-tokens/.1.swp", "an editor's file: systemd skips hidden files");
	int rc = load(no_env, at("etc"), false);
	for (size_t i = 0; i < probs.count; i++)
		cr_log_info("problem: %s", probs.lines[i]);
	cr_assert_eq(rc, 0);
	cr_assert_str_eq(cfg.dsn, "host=/nonexistent dbname=brooq user=brooq");
	cr_assert_eq(cfg.n_worker_token_files, 3);
	cr_assert_str_eq(cfg.worker_token_files[0], at("etc/worker-tokens/0-old"));
	cr_assert_str_eq(cfg.worker_token_files[1], at("etc/worker-tokens/1"));
	cr_assert_str_eq(cfg.worker_token_files[2], at("etc/worker-tokens/2"));
	cr_assert_eq(cfg.n_admin_token_files, 1);
	cr_assert_str_eq(cfg.admin_token_files[0], at("etc/admin-tokens/1"));
}

// The unit loads dsn and the two directories, nothing else: a worker-token file beside
// them would not reach the service, so it is not read either.
Test(creds, files_the_unit_does_not_load_are_not_read)
{
	make_unit_layout();
	put_token("etc/worker-token");
	put_token("etc/admin-token_x");
	cr_assert_eq(load(no_env, at("etc"), false), 0);
	cr_assert_eq(cfg.n_worker_token_files, 2);
	cr_assert_eq(cfg.n_admin_token_files, 1);
}

// The variables still win over the dsn credential, as under systemd; the unit's dsn
// file must exist all the same, since systemd refuses to start without it.
Test(creds, the_dsn_variable_wins_but_the_units_dsn_file_is_still_required)
{
	make_unit_layout();
	const struct kv env[] = {{"BROOQ_DSN", "host=/elsewhere dbname=x"}, {NULL, NULL}};
	cr_assert_eq(load(env, at("etc"), false), 0);
	cr_assert_str_eq(cfg.dsn, "host=/elsewhere dbname=x");
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);
	cr_assert_eq(unlink(at("etc/dsn")), 0);
	cr_assert_eq(load(env, at("etc"), false), BRQ_EINVAL);
	cr_assert_eq(probs.count, 1);
	cr_assert(has_problem("credentials: "), "%s", probs.lines[0]);
	cr_assert(has_problem("/etc/dsn: No such file or directory (the unit loads it with "
			      "LoadCredential=dsn:"),
		  "%s", probs.lines[0]);
}

// What would stop systemd at its CREDENTIALS step, or be skipped by it, each named, in
// one round with the other problems.
Test(creds, a_broken_layout_lists_every_problem_at_once)
{
	make_unit_layout();
	cr_assert_eq(unlink(at("etc/dsn")), 0);
	rm_rf("etc/admin-tokens");
	cr_assert_eq(symlink(at("etc/worker-tokens/1"), at("etc/worker-tokens/link")), 0);
	mkdir_at("etc/worker-tokens/nested");
	const struct kv env[] = {{"BROOQ_POOL_SIZE", "0"}, {NULL, NULL}};
	cr_assert_eq(load(env, at("etc"), false), BRQ_EINVAL);
	for (size_t i = 0; i < probs.count; i++)
		cr_log_info("problem: %s", probs.lines[i]);
	cr_assert_eq(probs.count, 5);
	cr_assert(has_problem("/etc/dsn: No such file or directory"));
	cr_assert(has_problem("/etc/admin-tokens: No such file or directory (the unit loads its files "
			      "with LoadCredential=admin-token:"));
	cr_assert(has_problem("/etc/worker-tokens/link: a symbolic link, which systemd does not load"));
	cr_assert(has_problem("/etc/worker-tokens/nested: not a regular file"));
	cr_assert(has_problem("BROOQ_POOL_SIZE: must be between 1 and 256"));
	cr_assert(!has_problem("BROOQ_DSN: required"), "the missing dsn is said once");
}

Test(creds, an_unreadable_or_missing_directory_is_one_problem_not_one_per_file)
{
	cr_assert_eq(load(no_env, at("nonexistent"), false), BRQ_EINVAL);
	cr_assert(has_problem("credentials: cannot open "));
	cr_assert(has_problem("/nonexistent: No such file or directory"));
	cr_assert(!has_problem("BROOQ_DSN"));
	cr_assert(!has_problem("/dsn"));
}

// The default (--check-config) yields to systemd's own directory, and to no directory.
Test(creds, the_default_is_used_only_without_credentials_directory_and_when_it_exists)
{
	mkdir_at("run");
	put("run/dsn", "host=/from-systemd dbname=x");
	put_token("run/worker-token_1");
	const struct kv env[] = {{"CREDENTIALS_DIRECTORY", at("run")}, {NULL, NULL}};
	cr_assert_eq(load(env, NULL, true), 0);
	cr_assert_str_eq(cfg.dsn, "host=/from-systemd dbname=x");
	cr_assert_eq(cfg.n_worker_token_files, 1);
	brq_config_fini(&cfg);
	brq_config_problems_fini(&probs);

	struct stat st;
	if (lstat(BRQ_UNIT_CREDENTIALS_DIR, &st) == 0)
		cr_skip_test("%s exists on this machine", BRQ_UNIT_CREDENTIALS_DIR);
	cr_assert_eq(load(no_env, NULL, true), BRQ_EINVAL);
	cr_assert(
		has_problem("the unit loads it from " BRQ_UNIT_CREDENTIALS_DIR "/dsn, which does not exist"));
	cr_assert(has_problem("the unit loads them from " BRQ_UNIT_CREDENTIALS_DIR ", which does not exist"));
}

// --- brooq-gateway --check-config --credentials-dir ----------------------------------

// Runs brooq-gateway ARGS with an empty environment (tests/support/gw.h).
static int
run_gateway(const char *const *args, const char **out)
{
	static const char *const empty_env[] = {NULL};
	return brq_gw_run_once(empty_env, args, out);
}

Test(creds, check_config_reads_the_units_layout_with_its_token_directories)
{
	make_unit_layout();
	const char *out;
	const char *args[] = {"--credentials-dir", at("etc"), "--check-config", NULL};
	cr_assert_eq(run_gateway(args, &out), 0, "%s", out);
	cr_assert(strstr(out, "msg=tokens_loaded worker=2 admin=1") != NULL, "%s", out);
	cr_assert(strstr(out, "configuration ok\n") != NULL, "%s", out);
	char opt[600];
	snprintf(opt, sizeof(opt), "--credentials-dir=%s", at("etc"));
	const char *args2[] = {opt, "--check-config", NULL};
	cr_assert_eq(run_gateway(args2, &out), 0, "%s", out);
}

// The layout's problems, the token files' (read by auth.c) and a setting's: one round.
Test(creds, check_config_lists_every_problem_of_a_broken_layout)
{
	make_unit_layout();
	cr_assert_eq(unlink(at("etc/dsn")), 0);
	rm_rf("etc/admin-tokens");
	put("etc/worker-tokens/2", "too-short\n");
	cr_assert_eq(chmod(at("etc/worker-tokens/1"), 0644), 0);
	const char *out;
	const char *args[] = {"--credentials-dir", at("etc"), "--check-config", NULL};
	cr_assert_eq(run_gateway(args, &out), 2, "%s", out);
	static const char *const want[] = {
		"invalid configuration (4 problems)",
		"/etc/dsn: No such file or directory (the unit loads it with LoadCredential=dsn:",
		"/etc/admin-tokens: No such file or directory",
		"/etc/worker-tokens/1: mode 0644 lets others read",
		"/etc/worker-tokens/2: token too short",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(out, want[i]) != NULL, "missing '%s' in:\n%s", want[i], out);
	cr_assert_null(strstr(out, "configuration ok"), "%s", out);
}

Test(creds, credentials_dir_needs_a_value)
{
	const char *out;
	const char *args[]  = {"--check-config", "--credentials-dir", NULL};
	const char *args2[] = {"--credentials-dir=", "--check-config", NULL};
	cr_assert_eq(run_gateway(args, &out), 2, "%s", out);
	cr_assert(strstr(out, "usage: brooq-gateway") != NULL, "%s", out);
	cr_assert_eq(run_gateway(args2, &out), 2, "%s", out);
}
