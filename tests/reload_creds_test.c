/* SPDX-License-Identifier: MIT */
/* `brooq-gateway --reload-credentials PID` (gateway/reload_creds.h), the unit's ExecReload=:
 * a gateway started as systemd starts it (CREDENTIALS_DIRECTORY: the flat copy of its
 * start, RUNTIME_DIRECTORY) takes a token added to the unit's directory and drops one
 * removed from it, from the copy the mode makes; the copy is the service user's alone;
 * what the mode refuses (a symbolic link, a bad token, no RUNTIME_DIRECTORY, a process
 * that is no gateway) changes nothing. A real gateway and a real program throughout. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sodium.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

/* One suite only: Criterion's runner leaks when a run mixes a suite that forks
 * brooq-gateway with other suites (see tests/CMakeLists.txt). */
TestSuite(reload_creds, .timeout = 120);

static void
path_of(char *buf, size_t cap, const char *dir, const char *rel)
{
	cr_assert_lt((size_t) snprintf(buf, cap, "%s/%s", dir, rel), cap);
}

/* The files of one test: etc (the unit's /etc/brooq/credentials: dsn, worker-tokens/NAME,
 * admin-tokens/NAME; root's 0700), creds (what systemd made of etc at the start: dsn,
 * worker-token_NAME, admin-token_NAME, 0400 in a 0500 directory) and run (the
 * RuntimeDirectory=, 0750). */
struct fixture {
	char dir[64];
	char etc[128], creds[128], run[128];
	char ta[65], tb[65], adm[65];
};

static void
fixture_init(struct fixture *f, const char *dsn)
{
	char p[512];
	snprintf(f->dir, sizeof(f->dir), "/tmp/brooq-rc.XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	cr_assert_eq(chmod(f->dir, 0711), 0); /* a service user other than ours enters run/ */
	path_of(f->etc, sizeof(f->etc), f->dir, "etc");
	path_of(f->creds, sizeof(f->creds), f->dir, "creds");
	path_of(f->run, sizeof(f->run), f->dir, "run");
	brq_gw_new_token(f->ta), brq_gw_new_token(f->tb), brq_gw_new_token(f->adm);
	cr_assert_eq(mkdir(f->etc, 0700), 0);
	path_of(p, sizeof(p), f->etc, "worker-tokens");
	cr_assert_eq(mkdir(p, 0700), 0);
	path_of(p, sizeof(p), f->etc, "admin-tokens");
	cr_assert_eq(mkdir(p, 0700), 0);
	path_of(p, sizeof(p), f->etc, "dsn");
	brq_t_write_file(p, dsn, 0600);
	path_of(p, sizeof(p), f->etc, "worker-tokens/a");
	brq_t_write_file(p, f->ta, 0600);
	path_of(p, sizeof(p), f->etc, "admin-tokens/1");
	brq_t_write_file(p, f->adm, 0600);
	cr_assert_eq(mkdir(f->creds, 0700), 0);
	path_of(p, sizeof(p), f->creds, "dsn");
	brq_t_write_file(p, dsn, 0400);
	path_of(p, sizeof(p), f->creds, "worker-token_a");
	brq_t_write_file(p, f->ta, 0400);
	path_of(p, sizeof(p), f->creds, "admin-token_1");
	brq_t_write_file(p, f->adm, 0400);
	cr_assert_eq(chmod(f->creds, 0500), 0);
	cr_assert_eq(mkdir(f->run, 0750), 0);
}

static void
fixture_fini(struct fixture *f)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "chmod -R u+w %s && rm -rf %s", f->dir, f->dir);
	cr_assert_eq(system(cmd), 0);
}

/* Runs `brooq-gateway --reload-credentials PID --credentials-dir ETC` with exactly the
 * environment RUNTIME_DIRECTORY=run (run NULL: unset) and returns its exit status; *out
 * gets stdout and stderr (static buffer). */
static int
reload_creds(const char *pid, const char *etc, const char *run, const char **out)
{
	static char buf[16384];
	char        path[] = "/tmp/brooq-rc-out.XXXXXX", e_run[200];
	int         fd     = mkstemp(path);
	cr_assert_geq(fd, 0);
	snprintf(e_run, sizeof(e_run), "RUNTIME_DIRECTORY=%s", run != NULL ? run : "");
	char *env[]  = {e_run, "ASAN_OPTIONS=detect_leaks=1", NULL};
	char *argv[] = {"brooq-gateway",     "--reload-credentials", (char *) pid,
			"--credentials-dir", (char *) etc,           NULL};
	pid_t child  = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execve(brq_testdb_bin("brooq-gateway"), argv, run != NULL ? env : env + 1);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(child, &st, 0), child);
	ssize_t n          = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
reload_gw(const brq_gw *gw, const struct fixture *f, const char **out)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int) gw->pid);
	return reload_creds(pid, f->etc, f->run, out);
}

/* The status of a ping with token. */
static brq_status
ping(const brq_gw *gw, const char *token)
{
	brq_request req = {.op = BRQ_OP_PING, .token = brq_str_c(token)};
	brq_reply   rep;
	brq_arena   arena;
	void       *keep = NULL;
	brq_arena_init(&arena);
	brq_status st = brq_gw_call(gw, &req, &rep, &arena, &keep);
	free(keep);
	brq_arena_fini(&arena);
	return st;
}

/* Asserts path's type, mode and owner. */
static void
assert_stat(const char *path, mode_t type, mode_t mode, uid_t uid)
{
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(st.st_mode & S_IFMT, type, "%s: type 0%o", path, (unsigned) (st.st_mode & S_IFMT));
	cr_assert_eq(st.st_mode & 07777, mode, "%s: mode 0%o, want 0%o", path,
		     (unsigned) (st.st_mode & 07777), (unsigned) mode);
	cr_assert_eq(st.st_uid, uid, "%s: owner %u, want %u", path, (unsigned) st.st_uid, (unsigned) uid);
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in dir, sorted, joined with ' '. */
static const char *
listing(const char *dir)
{
	static char    buf[1024];
	struct dirent *de;
	char          *names[32];
	int            n  = 0;
	DIR           *dp = opendir(dir);
	cr_assert_not_null(dp, "%s: %s", dir, strerror(errno));
	while ((de = readdir(dp)) != NULL && n < 32)
		if (de->d_name[0] != '.')
			names[n++] = strdup(de->d_name);
	closedir(dp);
	qsort(names, (size_t) n, sizeof(char *), cmp_name);
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		strcat(strcat(buf, i > 0 ? " " : ""), names[i]);
		free(names[i]);
	}
	return buf;
}

static void
start_gateway(brq_gw *gw, char *dsn, const struct fixture *f)
{
	char e_creds[160], e_run[160];
	snprintf(e_creds, sizeof(e_creds), "CREDENTIALS_DIRECTORY=%s", f->creds);
	snprintf(e_run, sizeof(e_run), "RUNTIME_DIRECTORY=%s", f->run);
	/* As the unit runs it: nothing but the credentials, no DSN, no token file lists. */
	const char *env[] = {
		e_creds, e_run, "BROOQ_DSN=", "BROOQ_WORKER_TOKEN_FILES=", "BROOQ_ADMIN_TOKEN_FILES=", NULL};
	brq_gw_start(gw, dsn, env);
}

Test(reload_creds, a_token_added_to_the_units_directory_and_one_removed_apply_at_reload)
{
	char          *dsn = brq_testdb_create(true);
	struct fixture f;
	brq_gw         gw;
	const char    *out;
	char           p[512];
	struct stat    first, second;
	fixture_init(&f, dsn);
	start_gateway(&gw, dsn, &f);
	cr_assert_eq(ping(&gw, f.ta), BRQ_ST_OK);
	cr_assert_eq(ping(&gw, f.tb), BRQ_ST_UNAUTHENTICATED);

	/* A bare SIGHUP before any copy: the start's $CREDENTIALS_DIRECTORY, as before. */
	cr_assert_eq(kill(gw.pid, SIGHUP), 0);
	brq_gw_await_log(&gw, "msg=reload_done", 1, 10000);
	cr_assert(strstr(brq_gw_log(&gw), "msg=reload_started env_file=- tokens_copy=-") != NULL, "%s",
		  brq_gw_log(&gw));

	/* Rotation in the unit's directory: b added, a removed; then `systemctl reload`. */
	path_of(p, sizeof(p), f.etc, "worker-tokens/b");
	brq_t_write_file(p, f.tb, 0600);
	path_of(p, sizeof(p), f.etc, "worker-tokens/a");
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(reload_gw(&gw, &f, &out), 0, "%s", out);
	cr_assert(strstr(out, "(worker-tokens/ 1 file, admin-tokens/ 1 file) copied to ") != NULL, "%s", out);
	cr_assert(strstr(out, "SIGHUP sent to ") != NULL, "%s", out);
	cr_assert(strstr(out, f.ta) == NULL && strstr(out, f.tb) == NULL && strstr(out, f.adm) == NULL,
		  "a token was printed: %s", out);
	brq_gw_await_log(&gw, "msg=reload_done", 2, 10000);
	cr_assert_eq(ping(&gw, f.tb), BRQ_ST_OK, "the added token");
	cr_assert_eq(ping(&gw, f.ta), BRQ_ST_UNAUTHENTICATED, "the removed token");
	cr_assert_eq(ping(&gw, f.adm), BRQ_ST_OK);
	const char *log = brq_gw_log(&gw);
	char        want[256];
	snprintf(want, sizeof(want), "msg=reload_started env_file=- tokens_copy=%s/credentials\n", f.run);
	cr_assert(strstr(log, want) != NULL, "%s", log);
	/* The admin token only moved (the start's directory to the copy): not a change. */
	cr_assert(strstr(log, "msg=tokens_reloaded worker=1 admin=1 added=1 removed=1 changed=0") != NULL,
		  "%s", log);

	/* The copy: the service user's alone (the workers' group may enter run/), tokens
	 * only (the DSN applies at a restart), nothing left beside it. */
	path_of(p, sizeof(p), f.run, "credentials");
	assert_stat(p, S_IFDIR, 0700, getuid());
	cr_assert_str_eq(listing(p), "admin-tokens worker-tokens");
	cr_assert_str_eq(listing(f.run), "credentials");
	cr_assert_eq(stat(p, &first), 0);
	path_of(p, sizeof(p), f.run, "credentials/worker-tokens");
	assert_stat(p, S_IFDIR, 0700, getuid());
	cr_assert_str_eq(listing(p), "b");
	path_of(p, sizeof(p), f.run, "credentials/worker-tokens/b");
	assert_stat(p, S_IFREG, 0400, getuid());
	path_of(p, sizeof(p), f.run, "credentials/admin-tokens/1");
	assert_stat(p, S_IFREG, 0400, getuid());

	/* Again, nothing changed: a fresh copy in place of the old one, no change logged. */
	cr_assert_eq(reload_gw(&gw, &f, &out), 0, "%s", out);
	brq_gw_await_log(&gw, "msg=reload_done", 3, 10000);
	cr_assert(strstr(brq_gw_log(&gw), "added=0 removed=0 changed=0") != NULL, "%s", brq_gw_log(&gw));
	path_of(p, sizeof(p), f.run, "credentials");
	cr_assert_eq(stat(p, &second), 0);
	cr_assert_neq(first.st_ino, second.st_ino, "the copy was not replaced");
	cr_assert_str_eq(listing(f.run), "credentials");
	cr_assert_eq(ping(&gw, f.tb), BRQ_ST_OK);

	/* A copy with a problem (made by hand: the mode refuses such a token) read by a
	 * bare SIGHUP: the reload fails and the tokens in force stay. */
	path_of(p, sizeof(p), f.run, "credentials/worker-tokens/bad");
	brq_t_write_file(p, "short", 0400);
	cr_assert_eq(kill(gw.pid, SIGHUP), 0);
	brq_gw_await_log(&gw, "msg=reload_failed", 1, 10000);
	cr_assert(strstr(brq_gw_log(&gw), "/credentials/worker-tokens/bad: token too short") != NULL, "%s",
		  brq_gw_log(&gw));
	cr_assert_eq(ping(&gw, f.tb), BRQ_ST_OK);
	cr_assert_eq(ping(&gw, f.ta), BRQ_ST_UNAUTHENTICATED);
	brq_gw_stop(&gw);
	fixture_fini(&f);
	brq_testdb_drop(dsn);
}

/* A refusal: exit 2, said on stderr; the gateway was not signalled and the copy in
 * place (the first one, made before) is the same, nothing left beside it. */
static void
assert_refused(const brq_gw *gw, const struct fixture *f, const char *why, int reloads)
{
	const char *out;
	char        p[512];
	struct stat before, after;
	path_of(p, sizeof(p), f->run, "credentials");
	cr_assert_eq(stat(p, &before), 0);
	cr_assert_eq(reload_gw(gw, f, &out), 2, "%s", out);
	cr_assert(strstr(out, why) != NULL, "want '%s' in: %s", why, out);
	cr_assert(strstr(out, f->ta) == NULL && strstr(out, f->tb) == NULL, "a token was printed: %s", out);
	cr_assert_eq(stat(p, &after), 0);
	cr_assert_eq(before.st_ino, after.st_ino, "the copy changed");
	cr_assert_str_eq(listing(f->run), "credentials");
	cr_assert_eq(brq_gw_count(brq_gw_log(gw), "msg=reload_started"), reloads, "%s", brq_gw_log(gw));
}

Test(reload_creds, a_symbolic_link_or_a_bad_token_is_refused_and_changes_nothing)
{
	char          *dsn = brq_testdb_create(true);
	struct fixture f;
	brq_gw         gw;
	const char    *out;
	char           p[512], target[512];
	fixture_init(&f, dsn);
	start_gateway(&gw, dsn, &f);
	cr_assert_eq(reload_gw(&gw, &f, &out), 0, "%s", out);
	brq_gw_await_log(&gw, "msg=reload_done", 1, 10000);

	/* A link to a file holding a token: systemd would not load it; a root process must
	 * not read a file it points to. */
	path_of(target, sizeof(target), f.dir, "elsewhere");
	brq_t_write_file(target, f.tb, 0600);
	path_of(p, sizeof(p), f.etc, "worker-tokens/b");
	cr_assert_eq(symlink(target, p), 0);
	assert_refused(&gw, &f, "worker-tokens/b: a symbolic link, which systemd does not load", 1);
	cr_assert_eq(ping(&gw, f.tb), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(unlink(p), 0);

	/* A token the gateway would refuse is refused here, named by the unit's path. */
	brq_t_write_file(p, "short", 0600);
	assert_refused(&gw, &f, "worker token file ", 1);
	cr_assert(strstr(out, f.etc) != NULL && strstr(out, "/worker-tokens/b: token too short") != NULL,
		  "%s", out);
	cr_assert_eq(unlink(p), 0);

	/* Either directory missing: systemd would not start the unit either. */
	path_of(p, sizeof(p), f.etc, "admin-tokens/1");
	path_of(target, sizeof(target), f.etc, "admin-tokens");
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(rmdir(target), 0);
	assert_refused(&gw, &f, "admin-tokens: No such file or directory (the unit loads it with", 1);
	cr_assert_eq(mkdir(target, 0700), 0);
	brq_t_write_file(p, f.adm, 0600);

	/* Not a regular file (a directory): skipped as systemd skips it; the rest applies. */
	path_of(p, sizeof(p), f.etc, "worker-tokens/sub");
	cr_assert_eq(mkdir(p, 0700), 0);
	cr_assert_eq(reload_gw(&gw, &f, &out), 0, "%s", out);
	cr_assert(strstr(out, "worker-tokens/sub: not a regular file: skipped") != NULL, "%s", out);
	brq_gw_await_log(&gw, "msg=reload_done", 2, 10000);
	cr_assert_eq(ping(&gw, f.ta), BRQ_ST_OK);
	brq_gw_stop(&gw);
	fixture_fini(&f);
	brq_testdb_drop(dsn);
}

/* What the mode needs before it reads a token: a process id, $RUNTIME_DIRECTORY, a
 * process that is a brooq-gateway (it is sent SIGHUP: this test's own process would die
 * of one). No gateway and no database needed. */
Test(reload_creds, refuses_a_bad_pid_a_process_that_is_no_gateway_and_no_runtime_directory)
{
	struct fixture f;
	const char    *out;
	char           self[16];
	fixture_init(&f, "host=/nonexistent dbname=x");
	snprintf(self, sizeof(self), "%d", (int) getpid());
	cr_assert_eq(reload_creds("12x", f.etc, f.run, &out), 2, "%s", out);
	cr_assert(strstr(out, "PID \"12x\": not a process id") != NULL, "%s", out);
	cr_assert_eq(reload_creds("", f.etc, f.run, &out), 2, "%s", out);
	cr_assert_eq(reload_creds(self, f.etc, NULL, &out), 2, "%s", out);
	cr_assert(strstr(out, "RUNTIME_DIRECTORY is not set") != NULL, "%s", out);
	cr_assert_eq(reload_creds(self, f.etc, f.run, &out), 2, "%s", out);
	cr_assert(strstr(out, "not brooq-gateway: not signalled") != NULL, "%s", out);
	cr_assert_str_eq(listing(f.run), "");
	fixture_fini(&f);
}

/* As root (the unit's ExecReload=+): the /etc tree is read as root, everything else is
 * done as the service's user: the copy is that user's, and the signal is sent as it.
 * The "gateway" here is a process named brooq-gateway running as nobody. */
Test(reload_creds, as_root_the_copy_belongs_to_the_service_user)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (to run a process as another user)");
	const uid_t    nobody = 65534;
	struct fixture f;
	const char    *out;
	char           pid[16], p[512];
	int            pipefd[2];
	fixture_init(&f, "host=/nonexistent dbname=x");
	cr_assert_eq(chown(f.run, nobody, nobody), 0);
	cr_assert_eq(pipe(pipefd), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		sigset_t hup;
		int      sig = 0;
		sigemptyset(&hup);
		sigaddset(&hup, SIGHUP);
		sigprocmask(SIG_BLOCK, &hup, NULL);
		if (prctl(PR_SET_NAME, "brooq-gateway") != 0 || setgroups(0, NULL) != 0 ||
		    setresgid(nobody, nobody, nobody) != 0 || setresuid(nobody, nobody, nobody) != 0)
			_exit(3);
		(void) write(pipefd[1], "r", 1);
		struct timespec limit = {.tv_sec = 30};
		sig                   = sigtimedwait(&hup, NULL, &limit);
		_exit(sig == SIGHUP ? 0 : 4);
	}
	char ready;
	cr_assert_eq(read(pipefd[0], &ready, 1), 1);
	snprintf(pid, sizeof(pid), "%d", (int) child);
	cr_assert_eq(reload_creds(pid, f.etc, f.run, &out), 0, "%s", out);
	int st;
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the service's process got no SIGHUP (0x%x)", st);
	path_of(p, sizeof(p), f.run, "credentials");
	assert_stat(p, S_IFDIR, 0700, nobody);
	path_of(p, sizeof(p), f.run, "credentials/worker-tokens");
	assert_stat(p, S_IFDIR, 0700, nobody);
	path_of(p, sizeof(p), f.run, "credentials/worker-tokens/a");
	assert_stat(p, S_IFREG, 0400, nobody);
	path_of(p, sizeof(p), f.run, "credentials/admin-tokens/1");
	assert_stat(p, S_IFREG, 0400, nobody);
	close(pipefd[0]);
	close(pipefd[1]);
	fixture_fini(&f);
}
