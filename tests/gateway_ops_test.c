/* SPDX-License-Identifier: MIT */
/* The gateway as an operator runs it: SIGHUP reloads (tokens, log level, credentials), systemd
 * notifications, journald priorities, the auth-failure log under a flood, token file modes, and every
 * configuration problem in one round. A real process throughout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <sodium.h>

#include "brq_clock.h"
#include "gw.h"
#include "testdb.h"
#include "tutil.h"

/* One suite only: Criterion's runner leaks when a run mixes a suite that forks
 * brooq-gateway with other suites (see tests/CMakeLists.txt). */
TestSuite(ops, .timeout = 120);

/* ---- helpers --------------------------------------------------------------------------- */

static void
assert_alive(const brq_gw *gw)
{
	int st;
	cr_assert_eq(waitpid(gw->pid, &st, WNOHANG), 0, "the gateway exited (status 0x%x):\n%s", st,
		     brq_gw_log(gw));
}

/* A client that keeps one connection, and counts the connections it made. */
struct client {
	nng_socket s;
	atomic_int pipes;
};

static void
pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	(void) p;
	(void) ev;
	atomic_fetch_add(&((struct client *) arg)->pipes, 1);
}

static void
client_open(struct client *c, const brq_gw *gw)
{
	atomic_init(&c->pipes, 0);
	cr_assert_eq(nng_req0_open(&c->s), 0);
	nng_socket_set_ms(c->s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(c->s, NNG_OPT_RECVTIMEO, 10000);
	nng_socket_set_ms(c->s, NNG_OPT_SENDTIMEO, 10000);
	nng_pipe_notify(c->s, NNG_PIPE_EV_ADD_POST, pipe_added, c);
	cr_assert_eq(nng_dial(c->s, gw->url, NULL, 0), 0);
}

/* Status of a ping with `token` on the client's connection. */
static brq_status
client_ping(struct client *c, const char *token)
{
	brq_buf     b;
	brq_limits  lim;
	brq_arena   a;
	brq_reply   rep;
	nng_msg    *m = NULL;
	char        err[256];
	brq_request req = {.op = BRQ_OP_PING, .token = brq_str_c(token)};
	brq_limits_default(&lim);
	brq_buf_init(&b, 0);
	brq_arena_init(&a);
	cr_assert_eq(brq_request_encode(&b, &req), 0);
	cr_assert_eq(nng_msg_alloc(&m, 0), 0);
	cr_assert_eq(nng_msg_append(m, b.data, b.len), 0);
	cr_assert_eq(nng_sendmsg(c->s, m, 0), 0);
	cr_assert_eq(nng_recvmsg(c->s, &m, 0), 0, "no reply");
	cr_assert_eq(brq_reply_decode(&rep, BRQ_OP_PING, nng_msg_body(m), nng_msg_len(m), &lim, &a, err,
				      sizeof(err)),
		     BRQ_ST_OK, "%s", err);
	brq_status st = rep.code;
	nng_msg_free(m);
	brq_arena_fini(&a);
	brq_buf_fini(&b);
	return st;
}

static void
reload_and_wait(const brq_gw *gw, const char *outcome, int n)
{
	cr_assert_eq(kill(gw->pid, SIGHUP), 0);
	brq_gw_await_log(gw, outcome, n, 10000);
	assert_alive(gw);
}

/* ---- SIGHUP: token files ----------------------------------------------------------------- */

Test(ops, sighup_rotates_token_files_without_dropping_connections)
{
	char  *dsn = brq_testdb_create(true);
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	struct client c;
	client_open(&c, &gw);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_OK);

	char fresh[65], old[65];
	brq_gw_new_token(fresh);
	memcpy(old, gw.worker_token, sizeof(old));
	brq_t_write_file(gw.worker_token_file, fresh, 0600);
	reload_and_wait(&gw, "msg=reload_done", 1);

	cr_assert_eq(client_ping(&c, old), BRQ_ST_UNAUTHENTICATED, "the rotated-out token still works");
	cr_assert_eq(client_ping(&c, fresh), BRQ_ST_OK, "the new token is refused");
	cr_assert_eq(client_ping(&c, gw.admin_token), BRQ_ST_OK, "the unchanged admin token");
	cr_assert_eq(atomic_load(&c.pipes), 1, "the client had to reconnect");
	char        sock[400];
	struct stat st;
	snprintf(sock, sizeof(sock), "%s/gw.sock", gw.dir);
	cr_assert(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode), "the ipc socket file is gone after SIGHUP");
	const char *log = brq_gw_log(&gw);
	cr_assert(strstr(log, "msg=token_changed role=worker path=") != NULL, "%s", log);
	cr_assert(strstr(log, "msg=tokens_reloaded worker=1 admin=1 added=0 removed=0 changed=1") != NULL,
		  "%s", log);
	cr_assert_null(strstr(log, fresh), "the new token was logged");
	cr_assert_null(strstr(log, old), "the old token was logged");
	nng_close(c.s);
	memcpy(gw.worker_token, fresh, sizeof(fresh));
	brq_gw_stop(&gw); /* SIGTERM as before: exit 0 */
	brq_testdb_drop(dsn);
}

Test(ops, a_bad_reload_keeps_the_old_tokens_and_says_why)
{
	char  *dsn = brq_testdb_create(true);
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	struct client c;
	client_open(&c, &gw);
	char fresh[65];
	brq_gw_new_token(fresh);

	/* A missing file revokes its token (revocation tests below); one present but bad
	 * is a mistake: the old token stays. */
	brq_t_write_file(gw.worker_token_file, "short\n", 0600);
	reload_and_wait(&gw, "msg=reload_failed", 1);
	cr_assert(strstr(brq_gw_log(&gw), "/worker-token: token too short") != NULL);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_OK);

	brq_t_write_file(gw.worker_token_file, fresh, 0644);
	reload_and_wait(&gw, "msg=reload_failed", 2);
	cr_assert(strstr(brq_gw_log(&gw), "/worker-token: mode 0644 lets others read or write it") != NULL);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, fresh), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(brq_gw_count(brq_gw_log(&gw), "msg=reload_done"), 0);

	cr_assert_eq(chmod(gw.worker_token_file, 0640), 0); /* group access is fine */
	reload_and_wait(&gw, "msg=reload_done", 1);
	cr_assert_eq(client_ping(&c, fresh), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(atomic_load(&c.pipes), 1);
	nng_close(c.s);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

/* ---- revoking a token: its file removed ------------------------------------------------------ */

/* Two worker token files of the test's own (a leaked one, a kept one) in dir, named
 * in BROOQ_WORKER_TOKEN_FILES (the env string into e_list). */
static void
two_worker_files(const char *dir, char leaked[65], char kept[65], char *leaked_path, char *e_list, size_t cap)
{
	char kept_path[128];
	brq_gw_new_token(leaked), brq_gw_new_token(kept);
	snprintf(leaked_path, 128, "%s/leaked", dir);
	snprintf(kept_path, sizeof(kept_path), "%s/kept", dir);
	brq_t_write_file(leaked_path, leaked, 0600);
	brq_t_write_file(kept_path, kept, 0600);
	snprintf(e_list, cap, "BROOQ_WORKER_TOKEN_FILES=%s,%s", leaked_path, kept_path);
}

Test(ops, removing_a_listed_token_file_revokes_its_token_on_sighup_and_at_the_next_start)
{
	char  *dsn   = brq_testdb_create(true);
	char   dir[] = "/tmp/brooq-revoke.XXXXXX", leaked[65], kept[65], leaked_path[128], e_list[300];
	brq_gw gw;
	cr_assert_not_null(mkdtemp(dir));
	two_worker_files(dir, leaked, kept, leaked_path, e_list, sizeof(e_list));
	const char *env[] = {e_list, NULL};
	brq_gw_start(&gw, dsn, env);
	struct client c;
	client_open(&c, &gw);
	cr_assert_eq(client_ping(&c, leaked), BRQ_ST_OK);

	cr_assert_eq(unlink(leaked_path), 0);
	reload_and_wait(&gw, "msg=reload_done", 1);
	cr_assert_eq(client_ping(&c, leaked), BRQ_ST_UNAUTHENTICATED, "the removed file's token still works");
	cr_assert_eq(client_ping(&c, kept), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, gw.admin_token), BRQ_ST_OK);
	cr_assert_eq(atomic_load(&c.pipes), 1, "a revocation drops no connection");
	const char *log = brq_gw_log(&gw);
	char        want[300];
	snprintf(want, sizeof(want), "level=warn msg=token_file_missing role=worker path=%s effect=revoked\n",
		 leaked_path);
	cr_assert_not_null(strstr(log, want), "%s", log);
	cr_assert_not_null(strstr(log, "msg=tokens_reloaded worker=1 admin=1 added=0 removed=1 changed=0"),
			   "%s", log);
	cr_assert_eq(brq_gw_count(log, "msg=reload_failed"), 0, "%s", log);
	nng_close(c.s);
	brq_gw_stop(&gw);

	/* A restart with the file still missing and still listed (say, after a crash, before
	 * anyone edited the list): the gateway starts, says so, and the token stays revoked. */
	brq_gw_start(&gw, dsn, env);
	client_open(&c, &gw);
	cr_assert_eq(client_ping(&c, leaked), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(client_ping(&c, kept), BRQ_ST_OK);
	log = brq_gw_log(&gw);
	snprintf(want, sizeof(want),
		 "level=warn msg=token_file_missing role=worker path=%s effect=not_loaded\n", leaked_path);
	cr_assert_not_null(strstr(log, want), "%s", log);
	cr_assert_not_null(strstr(log, "msg=tokens_loaded worker=1 admin=1"), "%s", log);
	nng_close(c.s);
	brq_gw_stop(&gw);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	brq_testdb_drop(dsn);
}

Test(ops, a_reload_that_would_leave_no_token_is_refused_and_keeps_the_tokens)
{
	char  *dsn = brq_testdb_create(true);
	brq_gw gw;
	brq_gw_start(&gw, dsn, NULL);
	struct client c;
	client_open(&c, &gw);

	cr_assert_eq(unlink(gw.worker_token_file), 0);
	cr_assert_eq(unlink(gw.admin_token_file), 0);
	reload_and_wait(&gw, "msg=reload_failed", 1);
	const char *log = brq_gw_log(&gw);
	cr_assert_not_null(strstr(log,
				  "msg=reload_problem problem=\"auth: no token left: every token file is "
				  "missing (2); at least one token must remain"),
			   "%s", log);
	cr_assert_not_null(strstr(log, "kept=previous_settings"), "%s", log);
	cr_assert_eq(brq_gw_count(log, "msg=token_file_missing"), 0, "nothing was published: %s", log);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_OK, "the tokens in force stay");
	cr_assert_eq(client_ping(&c, gw.admin_token), BRQ_ST_OK);

	/* One file back: that one is accepted, the other revoked. */
	brq_t_write_file(gw.admin_token_file, gw.admin_token, 0600);
	reload_and_wait(&gw, "msg=reload_done", 1);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(client_ping(&c, gw.admin_token), BRQ_ST_OK);
	brq_t_write_file(gw.worker_token_file, gw.worker_token, 0600); /* brq_gw_stop pings with it */
	nng_close(c.s);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

/* ---- SIGHUP: the env file ------------------------------------------------------------------ */

Test(ops, sighup_rereads_the_env_file_for_the_log_level_and_names_what_needs_a_restart)
{
	char  *dsn   = brq_testdb_create(true);
	char   dir[] = "/tmp/brooq-envfile.XXXXXX", envf[64], arg[80];
	brq_gw gw;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(envf, sizeof(envf), "%s/gateway.env", dir);
	snprintf(arg, sizeof(arg), "--env-file=%s", envf);
	brq_t_write_file(envf, "; systemd-style comment\nBROOQ_LOG_LEVEL=info\n", 0600);
	const char *env[]  = {"BROOQ_LOG_LEVEL=", NULL}; /* empty: unset, the file decides */
	const char *args[] = {arg, NULL};
	brq_gw_start_args(&gw, dsn, env, args);

	/* The self-probe's period once went unnamed (settings_test walks every setting). */
	brq_t_write_file(envf, "BROOQ_LOG_LEVEL=\"de\"'bug'\nBROOQ_MAX_BATCH=7\nBROOQ_SELFPROBE_INTERVAL=0\n",
			 0600);
	reload_and_wait(&gw, "msg=reload_done", 1);
	const char *log = brq_gw_log(&gw);
	cr_assert(strstr(log, "msg=log_level_changed from=info to=debug") != NULL, "%s", log);
	cr_assert(strstr(log,
			 "msg=reload_needs_restart changed=BROOQ_MAX_BATCH,BROOQ_SELFPROBE_INTERVAL "
			 "kept=running_values") != NULL,
		  "%s", log);

	brq_t_write_file(envf, "BROOQ_LOG_LEVEL=loud\n", 0600);
	reload_and_wait(&gw, "msg=reload_failed", 1);
	cr_assert(strstr(brq_gw_log(&gw), "BROOQ_LOG_LEVEL: must be debug, info, warn or error") != NULL);
	/* Debug stayed on: a good reload at debug changes no level. */
	brq_t_write_file(envf, "BROOQ_LOG_LEVEL=debug\n", 0600);
	reload_and_wait(&gw, "msg=reload_done", 2);
	cr_assert_eq(brq_gw_count(brq_gw_log(&gw), "msg=log_level_changed"), 1, "%s", brq_gw_log(&gw));
	cr_assert_eq(brq_gw_count(brq_gw_log(&gw), "msg=reload_done log_level=debug"), 2);
	brq_gw_stop(&gw);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	brq_testdb_drop(dsn);
}

/* ---- $CREDENTIALS_DIRECTORY as systemd lays it out ------------------------------------------ */

/* LoadCredential=worker-token:/etc/brooq/credentials/worker-tokens (a directory) gives one
 * credential per file, named worker-token_<file>; systemd makes the directory 0500 and
 * each credential 0400, owned by the service's user. */
static void
add_credential(const char *creds, const char *name, const char *content)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", creds, name);
	cr_assert_eq(chmod(creds, 0700), 0);
	brq_t_write_file(path, content, 0400);
	cr_assert_eq(chmod(creds, 0500), 0);
}

Test(ops, tokens_from_a_credentials_directory_rotate_on_sighup)
{
	char  *dsn   = brq_testdb_create(true);
	char   dir[] = "/tmp/brooq-creds.XXXXXX", creds[64], e_creds[96], path[512];
	char   ta[65], tb[65], tc[65], adm[65];
	brq_gw gw;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(creds, sizeof(creds), "%s/credentials", dir);
	cr_assert_eq(mkdir(creds, 0500), 0);
	brq_gw_new_token(ta), brq_gw_new_token(tb), brq_gw_new_token(tc), brq_gw_new_token(adm);
	add_credential(creds, "dsn", dsn);
	add_credential(creds, "worker-token_a", ta);
	add_credential(creds, "worker-token_b", tb);
	add_credential(creds, "admin-token", adm);
	snprintf(e_creds, sizeof(e_creds), "CREDENTIALS_DIRECTORY=%s", creds);
	/* Nothing but the directory: no DSN, no token file lists. */
	const char *env[] = {e_creds,
			     "BROOQ_DSN=", "BROOQ_WORKER_TOKEN_FILES=", "BROOQ_ADMIN_TOKEN_FILES=", NULL};
	brq_gw_start(&gw, dsn, env);
	struct client c;
	client_open(&c, &gw);
	cr_assert_eq(client_ping(&c, ta), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, tb), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, adm), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, gw.worker_token), BRQ_ST_UNAUTHENTICATED,
		     "BROOQ_WORKER_TOKEN_FILES is off");
	cr_assert(strstr(brq_gw_log(&gw), "msg=tokens_loaded worker=2 admin=1") != NULL, "%s",
		  brq_gw_log(&gw));

	/* Rotation: the new token appears (as a systemd that refreshes credentials, or a
	 * restart, would make it appear), workers move, the old one goes. */
	add_credential(creds, "worker-token_c", tc);
	reload_and_wait(&gw, "msg=reload_done", 1);
	cr_assert_eq(client_ping(&c, tc), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, ta), BRQ_ST_OK);
	snprintf(path, sizeof(path), "%s/worker-token_a", creds);
	cr_assert_eq(chmod(creds, 0700), 0);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(chmod(creds, 0500), 0);
	reload_and_wait(&gw, "msg=reload_done", 2);
	cr_assert_eq(client_ping(&c, ta), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(client_ping(&c, tb), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, tc), BRQ_ST_OK);
	cr_assert_eq(atomic_load(&c.pipes), 1);
	const char *log = brq_gw_log(&gw);
	cr_assert(strstr(log, "msg=token_added role=worker path=") && strstr(log, "/worker-token_c"), "%s",
		  log);
	cr_assert(strstr(log, "msg=token_removed role=worker path=") && strstr(log, "/worker-token_a"), "%s",
		  log);
	nng_close(c.s);
	brq_gw_stop(&gw);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "chmod -R u+w %s && rm -rf %s", dir, dir);
	cr_assert_eq(system(cmd), 0);
	brq_testdb_drop(dsn);
}

/* --credentials-dir: the directory the unit loads its credentials from, read as systemd
 * loads it (worker-tokens/ and admin-tokens/ of one token per file); a reload reads it
 * again, so a token added there or removed from it applies at a SIGHUP. */
Test(ops, tokens_from_the_units_credentials_dir_rotate_on_sighup)
{
	char  *dsn   = brq_testdb_create(true);
	char   dir[] = "/tmp/brooq-unitcreds.XXXXXX", path[512];
	char   ta[65], tb[65], adm[65];
	brq_gw gw;
	cr_assert_not_null(mkdtemp(dir));
	brq_gw_new_token(ta), brq_gw_new_token(tb), brq_gw_new_token(adm);
	snprintf(path, sizeof(path), "%s/worker-tokens", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/admin-tokens", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/dsn", dir);
	brq_t_write_file(path, dsn, 0600);
	snprintf(path, sizeof(path), "%s/worker-tokens/1", dir);
	brq_t_write_file(path, ta, 0600);
	snprintf(path, sizeof(path), "%s/admin-tokens/1", dir);
	brq_t_write_file(path, adm, 0600);
	/* Nothing but the directory: no DSN, no token file lists. */
	const char *env[]  = {"BROOQ_DSN=", "BROOQ_WORKER_TOKEN_FILES=", "BROOQ_ADMIN_TOKEN_FILES=", NULL};
	const char *args[] = {"--credentials-dir", dir, NULL};
	brq_gw_start_args(&gw, dsn, env, args);
	struct client c;
	client_open(&c, &gw);
	cr_assert_eq(client_ping(&c, ta), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, adm), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, tb), BRQ_ST_UNAUTHENTICATED);
	cr_assert(strstr(brq_gw_log(&gw), "msg=tokens_loaded worker=1 admin=1") != NULL, "%s",
		  brq_gw_log(&gw));

	snprintf(path, sizeof(path), "%s/worker-tokens/2", dir);
	brq_t_write_file(path, tb, 0600);
	reload_and_wait(&gw, "msg=reload_done", 1);
	cr_assert_eq(client_ping(&c, tb), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, ta), BRQ_ST_OK);
	snprintf(path, sizeof(path), "%s/worker-tokens/1", dir);
	cr_assert_eq(unlink(path), 0);
	reload_and_wait(&gw, "msg=reload_done", 2);
	cr_assert_eq(client_ping(&c, ta), BRQ_ST_UNAUTHENTICATED);
	cr_assert_eq(client_ping(&c, tb), BRQ_ST_OK);
	cr_assert_eq(client_ping(&c, adm), BRQ_ST_OK);
	cr_assert_eq(atomic_load(&c.pipes), 1);
	nng_close(c.s);
	brq_gw_stop(&gw);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	brq_testdb_drop(dsn);
}

/* ---- start-up checks (--check-config: no database needed) -------------------------------- */

Test(ops, a_token_file_readable_by_others_is_refused_at_start_group_readable_is_fine)
{
	char dir[] = "/tmp/brooq-mode.XXXXXX", tok[64], e_tok[96], hex[65];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(tok, sizeof(tok), "%s/worker-token", dir);
	snprintf(e_tok, sizeof(e_tok), "BROOQ_WORKER_TOKEN_FILES=%s", tok);
	brq_gw_new_token(hex);
	const char *env[]  = {"BROOQ_DSN=host=/nonexistent dbname=x", e_tok, NULL};
	const char *args[] = {"--check-config", NULL};
	const char *out;

	brq_t_write_file(tok, hex, 0640);
	cr_assert_eq(brq_gw_run_once(env, args, &out), 0, "0640 refused: %s", out);
	cr_assert(strstr(out, "configuration ok") != NULL, "%s", out);

	brq_t_write_file(tok, hex, 0644);
	cr_assert_eq(brq_gw_run_once(env, args, &out), 2, "0644 accepted: %s", out);
	cr_assert(strstr(out, tok) != NULL && strstr(out, "mode 0644 lets others read or write it") != NULL,
		  "%s", out);
	cr_assert_null(strstr(out, hex), "the token was printed");

	brq_t_write_file(tok, hex, 0606);
	cr_assert_eq(brq_gw_run_once(env, args, &out), 2, "0606 accepted: %s", out);
	cr_assert(strstr(out, "mode 0606") != NULL, "%s", out);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(ops, every_configuration_problem_is_reported_in_one_round)
{
	char dir[] = "/tmp/brooq-round.XXXXXX", tok[64], envf[64], e_tok[256], a_env[80], hex[65], mode_f[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(tok, sizeof(tok), "%s/worker-token", dir);
	snprintf(envf, sizeof(envf), "%s/gateway.env", dir);
	snprintf(e_tok, sizeof(e_tok), "BROOQ_WORKER_TOKEN_FILES=%s,%s/missing,%s/mode", tok, dir, dir);
	snprintf(a_env, sizeof(a_env), "--env-file=%s", envf);
	brq_t_write_file(tok, "too-short\n", 0600);
	brq_gw_new_token(hex);
	snprintf(mode_f, sizeof(mode_f), "%s/mode", dir);
	brq_t_write_file(mode_f, hex, 0644);
	brq_t_write_file(envf, "; a systemd comment\nBROOQ_POOL_SIZE=0\nBROOQ_LEASEE=1s\n", 0600);
	const char *env[]  = {"BROOQ_DSN=host=/x password=hunter2", "BROOQ_LEASE=120", "BROOQ_TYPO=1", e_tok,
			      NULL};
	const char *args[] = {a_env, "--check-config", NULL};
	const char *out;

	cr_assert_eq(brq_gw_run_once(env, args, &out), 2, "%s", out);
	static const char *const want[] = {
		"BROOQ_LEASE: duration needs a unit",
		"BROOQ_POOL_SIZE: must be between 1 and 256",
		"line 3: unknown variable BROOQ_LEASEE",
		"environment: unknown variable BROOQ_TYPO",
		"/worker-token: token too short",
		"/mode: mode 0644 lets others read",
		"(6 problems)",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(out, want[i]) != NULL, "missing '%s' in:\n%s", want[i], out);
	cr_assert_null(strstr(out, "hunter2"), "the DSN password was printed");

	/* Fixed, --env-file=FILE and --env-file FILE both load the same file. */
	brq_gw_new_token(hex);
	brq_t_write_file(tok, hex, 0600);
	brq_t_write_file(envf, "; ok now\nBROOQ_POOL_SIZE=2\n", 0600);
	snprintf(e_tok, sizeof(e_tok), "BROOQ_WORKER_TOKEN_FILES=%s", tok);
	const char *env_ok[] = {"BROOQ_DSN=host=/x", e_tok, NULL};
	cr_assert_eq(brq_gw_run_once(env_ok, args, &out), 0, "%s", out);
	const char *args2[] = {"--env-file", envf, "--check-config", NULL};
	cr_assert_eq(brq_gw_run_once(env_ok, args2, &out), 0, "%s", out);
	const char *args3[] = {"--env-file=", "--check-config", NULL};
	cr_assert_eq(brq_gw_run_once(env_ok, args3, &out), 2, "an empty --env-file= must be refused: %s",
		     out);

	/* A listed file that does not exist is a revoked token, not a problem: said, and the
	 * gateway would start with the others; with no token left at all it would not. */
	snprintf(e_tok, sizeof(e_tok), "BROOQ_WORKER_TOKEN_FILES=%s,%s/missing", tok, dir);
	cr_assert_eq(brq_gw_run_once(env_ok, args, &out), 0, "%s", out);
	cr_assert_not_null(strstr(out, "msg=token_file_missing role=worker path="), "%s", out);
	cr_assert_not_null(strstr(out, "/missing effect=not_loaded"), "%s", out);
	cr_assert_not_null(strstr(out, "configuration ok"), "%s", out);
	snprintf(e_tok, sizeof(e_tok), "BROOQ_WORKER_TOKEN_FILES=%s/missing", dir);
	cr_assert_eq(brq_gw_run_once(env_ok, args, &out), 2, "%s", out);
	cr_assert_not_null(strstr(out, "auth: no token left: every token file is missing (1)"), "%s", out);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* ---- a flood of failed auths (issue 10, item 2) ----------------------------------------------- */

#define FLOOD_THREADS 4
#define FLOOD_EACH    2500

static brq_gw flood_gw;

static void *
flood(void *arg)
{
	struct client c;
	(void) arg;
	client_open(&c, &flood_gw);
	for (int i = 0; i < FLOOD_EACH; i++)
		cr_assert_eq(client_ping(&c, "not-a-token-not-a-token-not-a-token"), BRQ_ST_UNAUTHENTICATED);
	nng_close(c.s);
	return NULL;
}

/* Lines written plus the counts of every summary. */
static long long
auth_failures_logged(const char *log, int *lines)
{
	static const char key[] = "msg=log_suppressed event=auth_failed suppressed=";
	long long         sum = *lines = brq_gw_count(log, "msg=auth_failed ");
	for (const char *p = log; (p = strstr(p, key)) != NULL; p += sizeof(key) - 1)
		sum += strtoll(p + sizeof(key) - 1, NULL, 10);
	return sum;
}

/* The `field` or `field=value` tokens the alert's description tells an operator to look
 * for, in backticks, must be what the log carries. */
static void
assert_alert_text_matches(const char *log)
{
	char        path[512], text[8192];
	const char *src = getenv("BROOQ_SOURCE_DIR");
	snprintf(path, sizeof(path), "%s/deploy/prometheus/brooq-rules.yml", src);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n]           = '\0';
	const char *alert = strstr(text, "alert: BrooqAuthFailuresSpike");
	cr_assert_not_null(alert);
	const char *end     = strstr(alert + 1, "- alert:");
	int         checked = 0;
	for (const char *p = strchr(alert, '`'); p != NULL && (end == NULL || p < end);
	     p             = strchr(p + 1, '`')) {
		const char *q = strchr(p + 1, '`');
		char        tok[64];
		cr_assert(q != NULL && q - p - 1 < (long) sizeof(tok) - 2);
		snprintf(tok, sizeof(tok), "%.*s%s", (int) (q - p - 1), p + 1,
			 memchr(p, '=', (size_t) (q - p)) ? "" : "=");
		cr_assert(strstr(log, tok) != NULL, "the alert mentions `%.*s`, the log has no '%s'",
			  (int) (q - p - 1), p + 1, tok);
		checked++;
		p = q;
	}
	cr_assert_geq(checked, 7, "the alert names the log fields in backticks");
}

Test(ops, a_flood_of_failed_auths_writes_a_bounded_log_and_counts_every_one)
{
	char    *dsn  = brq_testdb_create(true);
	uint16_t port = brq_gw_start_http(&flood_gw, dsn, NULL);

	pthread_t th[FLOOD_THREADS];
	uint64_t  t0 = brq_now_ms();
	for (int i = 0; i < FLOOD_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, flood, NULL), 0);
	for (int i = 0; i < FLOOD_THREADS; i++)
		pthread_join(th[i], NULL);
	double secs = (double) (brq_now_ms() - t0) / 1000.0;

	cr_assert_eq(brq_gw_metric(port, "brooq_auth_failures_total"), FLOOD_THREADS * FLOOD_EACH);
	/* The summary of each 5 s window comes at its end (the main loop's tick), without
	 * another failure: wait until every failure is accounted for. */
	int       lines = 0;
	long long total = 0;
	for (int i = 0; i < 150 && total < FLOOD_THREADS * FLOOD_EACH; i++) {
		total = auth_failures_logged(brq_gw_log(&flood_gw), &lines);
		usleep(100 * 1000);
	}
	const char *log = brq_gw_log(&flood_gw);
	cr_log_info("%d failed auths in %.1f s: %d lines, %d summaries", FLOOD_THREADS * FLOOD_EACH, secs,
		    lines, brq_gw_count(log, "msg=log_suppressed"));
	cr_assert_eq(total, FLOOD_THREADS * FLOOD_EACH, "lines + suppressed = %lld:\n%s", total, log);
	/* At most 10 lines per 5 s window the flood touched. */
	cr_assert_leq(lines, 10 * ((int) (secs / 5.0) + 2), "%d lines in %.1f s", lines, secs);
	char peer[96];
	snprintf(peer, sizeof(peer), "token_len=35 peer_uid=%u peer_pid=%d\n", (unsigned) getuid(),
		 (int) getpid());
	cr_assert(strstr(log, peer) != NULL, "no '%s' in:\n%s", peer, log);
	assert_alert_text_matches(log);
	brq_gw_stop(&flood_gw);
	brq_testdb_drop(dsn);
}
