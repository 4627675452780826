// SPDX-License-Identifier: MIT
// Tests for gateway/auth.c: token files and their modes, constant-time role lookup, role permissions,
// replacing the tokens while checks run.
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "log/log.h"
#include "status.h"

#define W1 "worker-one-0123456789abcdefghijklmnopqrstuvwxyz"
#define W2 "worker-two-ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210"
#define A1 "admin-one-0123456789abcdefghijklmnopqrstuvwxyz!"
#define A2 "admin-two-\x01\x02\x7f\xff binary and spaces inside ok"

static brq_auth            auth;
static brq_config_problems probs;
static char                tmpdir[64];

static void
setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/brq_auth_test_XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	brq_config_problems_init(&probs);
}

static void
teardown(void)
{
	brq_auth_fini(&auth);
	brq_config_problems_fini(&probs);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0) {
		cr_log_warn("could not remove %s", tmpdir);
	}
}

TestSuite(auth, .init = setup, .fini = teardown);

// Writes len bytes to tmpdir/name with `mode`; returns the path (static storage, 16
// slots per test, so that LeakSanitizer has nothing to report).
static char *
token_file(const char *name, const void *content, size_t len, mode_t mode)
{
	static char paths[16][256];
	static int  slot;
	char       *p = paths[slot++ % 16];
	snprintf(p, 256, "%s/%s", tmpdir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, content, len), (ssize_t) len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
	return p;
}

#define TOKEN_FILE(name, str, mode) token_file((name), (str), sizeof(str) - 1, (mode))

static bool
has_problem(const char *needle)
{
	for (size_t i = 0; i < probs.count; i++) {
		if (strstr(probs.lines[i], needle) != NULL) {
			return true;
		}
	}
	return false;
}

static brq_role
check(const char *tok)
{
	return brq_auth_check(&auth, tok, strlen(tok));
}

static void
load_standard(void)
{
	const char *w[] = {TOKEN_FILE("w1", W1 "\n", 0600), TOKEN_FILE("w2", W2 " \t\r\n\n", 0640)};
	const char *a[] = {TOKEN_FILE("a1", A1, 0400), TOKEN_FILE("a2", A2 "\n", 0600)};
	int         rc  = brq_auth_init(&auth, w, 2, a, 2, &probs);
	for (size_t i = 0; i < probs.count; i++) {
		cr_log_info("problem: %s", probs.lines[i]);
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(probs.count, 0);
}

Test(auth, maps_each_token_to_its_role_with_several_tokens_per_role)
{
	load_standard();
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(check(W2), BRQ_ROLE_WORKER);
	cr_assert_eq(check(A1), BRQ_ROLE_ADMIN);
	cr_assert_eq(check(A2), BRQ_ROLE_ADMIN);
}

Test(auth, an_added_token_has_its_role_and_the_loaded_ones_keep_theirs)
{
	const char probe[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	load_standard();
	cr_assert_eq(check(probe), BRQ_ROLE_NONE);
	cr_assert_eq(brq_auth_add_token(&auth, probe, strlen(probe), BRQ_ROLE_WORKER), 0);
	cr_assert_eq(check(probe), BRQ_ROLE_WORKER);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(check(A2), BRQ_ROLE_ADMIN);

	/* Bad length or role: refused, nothing added. */
	cr_assert_eq(brq_auth_add_token(&auth, probe, BRQ_AUTH_TOKEN_MIN - 1, BRQ_ROLE_WORKER), BRQ_EINVAL);
	cr_assert_eq(brq_auth_add_token(&auth, probe, strlen(probe), BRQ_ROLE_NONE), BRQ_EINVAL);
	cr_assert_eq(brq_auth_add_token(&auth, NULL, 40, BRQ_ROLE_ADMIN), BRQ_EINVAL);
	/* Only one in-memory token: a second is refused and the first keeps its role. */
	cr_assert_eq(brq_auth_add_token(&auth, A1, strlen(A1), BRQ_ROLE_WORKER), BRQ_EINVAL);
	cr_assert_eq(check(A1), BRQ_ROLE_ADMIN);
	cr_assert_eq(check("0123456789abcdef0123456789abcdef"), BRQ_ROLE_NONE);
}

Test(auth, refuses_wrong_empty_partial_and_extended_tokens)
{
	load_standard();
	cr_assert_eq(check("not-a-token-not-a-token-not-a-token"), BRQ_ROLE_NONE);
	cr_assert_eq(brq_auth_check(&auth, "", 0), BRQ_ROLE_NONE);
	cr_assert_eq(brq_auth_check(&auth, NULL, 0), BRQ_ROLE_NONE);
	cr_assert_eq(brq_auth_check(&auth, NULL, 5), BRQ_ROLE_NONE);
	cr_assert_eq(brq_auth_check(&auth, W1, sizeof(W1) - 2), BRQ_ROLE_NONE, "prefix");
	cr_assert_eq(brq_auth_check(&auth, W1, 1), BRQ_ROLE_NONE, "one-byte prefix");
	cr_assert_eq(check(W1 "x"), BRQ_ROLE_NONE, "extra byte");
	cr_assert_eq(check(W1 "\n"), BRQ_ROLE_NONE, "the trimmed newline is not part of it");
	cr_assert_eq(brq_auth_check(&auth, W1, sizeof(W1)), BRQ_ROLE_NONE, "with the NUL");
	cr_assert_eq(check("x" W1), BRQ_ROLE_NONE);
	char flipped[] = A1;
	flipped[5] ^= 1;
	cr_assert_eq(check(flipped), BRQ_ROLE_NONE, "one bit off");

	static char big[2000];
	memset(big, 'a', sizeof(big));
	memcpy(big, W1, sizeof(W1) - 1);
	cr_assert_eq(brq_auth_check(&auth, big, sizeof(big)), BRQ_ROLE_NONE, "2000 bytes");
	cr_assert_eq(brq_auth_check(&auth, big, BRQ_AUTH_TOKEN_MAX + 1), BRQ_ROLE_NONE);
}

Test(auth, accepts_tokens_of_any_bytes_up_to_the_maximum)
{
	static unsigned char tok[BRQ_AUTH_TOKEN_MAX];
	for (size_t i = 0; i < sizeof(tok); i++) {
		tok[i] = (unsigned char) (i * 7 + 1); // includes NUL-free binary; no trailing space
	}
	tok[10]              = '\0'; // an embedded NUL is just a byte
	tok[sizeof(tok) - 1] = 'z';
	const char *w[]      = {token_file("big", tok, sizeof(tok), 0600)};
	cr_assert_eq(brq_auth_init(&auth, w, 1, NULL, 0, &probs), 0);
	cr_assert_eq(brq_auth_check(&auth, tok, sizeof(tok)), BRQ_ROLE_WORKER);
	cr_assert_eq(brq_auth_check(&auth, tok, 10), BRQ_ROLE_NONE);
}

Test(auth, rejects_a_short_token_file_by_name_without_showing_it)
{
	const char *w[] = {
		TOKEN_FILE("short-worker", "Sh0rtSecretValue\n", 0600),
		TOKEN_FILE("ok-worker", W1, 0600),
	};
	const char *a[] = {TOKEN_FILE("empty-admin", "\n\n  \n", 0600)};
	cr_assert_eq(brq_auth_init(&auth, w, 2, a, 1, &probs), BRQ_EINVAL);
	for (size_t i = 0; i < probs.count; i++) {
		cr_log_info("problem: %s", probs.lines[i]);
		cr_assert_null(strstr(probs.lines[i], "Sh0rtSecretValue"), "content leaked");
		cr_assert_null(strstr(probs.lines[i], "worker-one"), "content leaked");
	}
	cr_assert_eq(probs.count, 2, "all bad files reported at once");
	cr_assert(has_problem("worker token file "));
	cr_assert(has_problem("/short-worker: token too short (16 bytes after trimming"));
	cr_assert(has_problem("admin token file "));
	cr_assert(has_problem("/empty-admin: token too short (0 bytes"));
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 0, "nothing kept on failure");
	cr_assert_null(auth.live);
}

Test(auth, rejects_unreadable_oversized_and_non_regular_token_files)
{
	static char big[5000];
	memset(big, 'q', sizeof(big));
	const char *w[] = {
		"/nonexistent/brooq/worker-token", // missing: revoked, no problem of its own
		token_file("long", big, BRQ_AUTH_TOKEN_MAX + 1, 0600),
		token_file("huge", big, sizeof(big), 0600),
		tmpdir,
		token_file("unreadable", W1, strlen(W1), 0000),
	};
	// root reads a 0000 file: the last one is a problem only for other users.
	size_t n = geteuid() == 0 ? 4 : 5;
	cr_assert_eq(brq_auth_init(&auth, w, n, NULL, 0, &probs), BRQ_EINVAL);
	cr_assert_not(has_problem("/nonexistent/brooq/worker-token"), "a missing file is no problem");
	cr_assert(has_problem("/long: token too long (at most 1024 bytes)"));
	cr_assert(has_problem("/huge: token too long"));
	cr_assert(has_problem(": not a regular file"));
	cr_assert(n == 4 || has_problem("/unreadable: cannot open: Permission denied"));
	cr_assert_eq(probs.count, n - 1);
}

static const char *logged_during(void (*fn)(void));

// Revoking a leaked token: its file is removed, the next set has the others only.
static void
revoke_w2_by_removing_its_file(void)
{
	char w2[300];
	snprintf(w2, sizeof(w2), "%s/w2", tmpdir);
	cr_assert_eq(unlink(w2), 0);
	const char   *w[] = {TOKEN_FILE("w1", W1 "\n", 0600), w2};
	const char   *a[] = {TOKEN_FILE("a1", A1, 0400), TOKEN_FILE("a2", A2 "\n", 0600)};
	brq_auth_set *set = NULL;
	cr_assert_eq(brq_auth_prepare(&auth, w, 2, a, 2, &set, &probs), 0);
	cr_assert_eq(probs.count, 0);
	brq_auth_publish(&auth, set);
}

static void
revoke_w2_by_removing_its_file_again(void)
{
	char w2[300];
	snprintf(w2, sizeof(w2), "%s/w2", tmpdir);
	const char   *w[] = {TOKEN_FILE("w1", W1 "\n", 0600), w2};
	const char   *a[] = {TOKEN_FILE("a1", A1, 0400), TOKEN_FILE("a2", A2 "\n", 0600)};
	brq_auth_set *set = NULL;
	cr_assert_eq(brq_auth_prepare(&auth, w, 2, a, 2, &set, &probs), 0);
	brq_auth_publish(&auth, set);
}

Test(auth, a_token_file_that_no_longer_exists_revokes_its_token_and_keeps_the_others)
{
	load_standard();
	const char *out = logged_during(revoke_w2_by_removing_its_file);
	cr_log_info("%s", out);
	cr_assert_eq(check(W2), BRQ_ROLE_NONE, "the removed file's token is revoked");
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(check(A1), BRQ_ROLE_ADMIN);
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 3);
	cr_assert(strstr(out, "level=warn msg=token_file_missing role=worker path=") &&
			  strstr(out, "/w2 effect=revoked\n"),
		  "%s", out);
	cr_assert(strstr(out, "msg=token_removed role=worker path="), "%s", out);
	cr_assert_not_null(strstr(out, "msg=tokens_reloaded worker=1 admin=2 added=0 removed=1 changed=0\n"),
			   "%s", out);
	// The next reload, the file still listed and still missing: said again, as not loaded.
	out = logged_during(revoke_w2_by_removing_its_file_again);
	cr_assert(strstr(out, "msg=token_file_missing role=worker path=") &&
			  strstr(out, "/w2 effect=not_loaded\n"),
		  "%s", out);
	cr_assert_not_null(strstr(out, "removed=0 changed=0\n"), "%s", out);
	cr_assert_eq(check(W2), BRQ_ROLE_NONE);
}

static int init_rc;

static void
init_with_a_typo(void)
{
	const char *w[] = {TOKEN_FILE("w1", W1, 0600), "/nonexistent/brooq/w-typo"};
	init_rc         = brq_auth_init(&auth, w, 2, NULL, 0, &probs);
}

Test(auth, a_missing_file_at_start_is_not_loaded_and_said_so)
{
	const char *out = logged_during(init_with_a_typo);
	cr_assert_eq(init_rc, 0, "a missing file alone does not stop the start");
	cr_assert_eq(probs.count, 0);
	cr_assert_not_null(strstr(out,
				  "level=warn msg=token_file_missing role=worker "
				  "path=/nonexistent/brooq/w-typo effect=not_loaded\n"),
			   "%s", out);
	cr_assert_not_null(strstr(out, "msg=tokens_loaded worker=1 admin=0"), "%s", out);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
}

Test(auth, a_set_left_without_any_token_is_refused_and_the_published_one_kept)
{
	load_standard();
	const char   *w[] = {"/nonexistent/w1", "/nonexistent/w2"};
	const char   *a[] = {"/nonexistent/a1"};
	brq_auth_set *set = (brq_auth_set *) 1;
	cr_assert_eq(brq_auth_prepare(&auth, w, 2, a, 1, &set, &probs), BRQ_EINVAL);
	cr_assert_null(set);
	cr_assert_eq(probs.count, 1);
	cr_assert(has_problem(
		"auth: no token left: every token file is missing (3); at least one token must remain"));
	cr_assert_eq(check(W2), BRQ_ROLE_WORKER, "the published set stays");
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 4);
	// At start (nothing published yet) the same is a problem: no gateway without tokens.
	brq_auth other;
	brq_config_problems_fini(&probs);
	brq_config_problems_init(&probs);
	cr_assert_eq(brq_auth_init(&other, w, 2, NULL, 0, &probs), BRQ_EINVAL);
	cr_assert(has_problem("auth: no token left: every token file is missing (2)"));
	cr_assert_null(other.live);
}

Test(auth, a_token_file_of_exactly_the_minimum_length_is_accepted)
{
	const char *w[] = {TOKEN_FILE("min", "0123456789abcdef0123456789abcdef\n", 0600)};
	cr_assert_eq(brq_auth_init(&auth, w, 1, NULL, 0, &probs), 0);
	cr_assert_eq(check("0123456789abcdef0123456789abcdef"), BRQ_ROLE_WORKER);
	brq_auth_fini(&auth);
	const char *w31[] = {TOKEN_FILE("min31", "0123456789abcdef0123456789abcde", 0600)};
	cr_assert_eq(brq_auth_init(&auth, w31, 1, NULL, 0, &probs), BRQ_EINVAL);
}

Test(auth, refuses_one_token_for_both_roles)
{
	const char *w[] = {TOKEN_FILE("w", W1, 0600)};
	const char *a[] = {TOKEN_FILE("a", W1 "\n", 0600)};
	cr_assert_eq(brq_auth_init(&auth, w, 1, a, 1, &probs), BRQ_EINVAL);
	cr_assert(has_problem("same token as admin token file"));
}

Test(auth, allows_the_same_token_twice_in_one_role)
{
	const char *w[] = {TOKEN_FILE("w", W1, 0600), TOKEN_FILE("w-copy", W1 "\n", 0600)};
	cr_assert_eq(brq_auth_init(&auth, w, 2, NULL, 0, &probs), 0);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
}

Test(auth, needs_at_least_one_token)
{
	cr_assert_eq(brq_auth_init(&auth, NULL, 0, NULL, 0, &probs), BRQ_EINVAL);
	cr_assert(has_problem("no token files"));
	cr_assert_eq(brq_auth_check(&auth, W1, sizeof(W1) - 1), BRQ_ROLE_NONE);
}

Test(auth, refuses_a_token_file_others_may_read_or_write_naming_file_and_mode)
{
	const char *w[] = {TOKEN_FILE("group-ok", W1, 0640), TOKEN_FILE("world", W2, 0644),
			   TOKEN_FILE("world-write", W2, 0602)};
	const char *a[] = {TOKEN_FILE("admin-exec", A1, 0601)};
	cr_assert_eq(brq_auth_init(&auth, w, 3, a, 1, &probs), BRQ_EINVAL);
	for (size_t i = 0; i < probs.count; i++) {
		cr_log_info("problem: %s", probs.lines[i]);
		cr_assert_null(strstr(probs.lines[i], "worker-two"), "content leaked");
	}
	cr_assert(has_problem("worker token file "));
	cr_assert(has_problem("/world: mode 0644 lets others read or write it"));
	cr_assert(has_problem("/world-write: mode 0602 lets others"));
	cr_assert(has_problem("admin token file "));
	cr_assert(has_problem("/admin-exec: mode 0601 lets others"));
	cr_assert_not(has_problem("group-ok"), "group access is the brooq group model");
	cr_assert_eq(probs.count, 3);
}

Test(auth, accepts_group_readable_token_files)
{
	const char *w[] = {TOKEN_FILE("w0640", W1, 0640), TOKEN_FILE("w0440", W2, 0440)};
	const char *a[] = {TOKEN_FILE("a0600", A1, 0600), TOKEN_FILE("a0400", A2, 0400)};
	cr_assert_eq(brq_auth_init(&auth, w, 2, a, 2, &probs), 0);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_WORKER), 2);
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_ADMIN), 2);
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 4);
}

Test(auth, role_permissions_follow_the_table)
{
	// op name, admin only? Every op: the dispatcher passes brq_op_admin_only(op), the
	// one list of admin-only operations.
	static const struct {
		const char *op;
		bool        admin_only;
	} ops[] = {
		{"ping", false},        {"enqueue", false},      {"claim", false},
		{"heartbeat", false},   {"settle", false},       {"job", false},
		{"stats", false},       {"cancel", true},        {"pause", true},
		{"resume", true},       {"topic_limits", true},  {"topics", true},
		{"list", true},         {"retry", true},         {"delete", true},
		{"schedule_add", true}, {"schedule_list", true}, {"schedule_remove", true},
		{"watch", false},
	};
	cr_assert_eq(sizeof(ops) / sizeof(ops[0]), BRQ_OP__COUNT - 1, "a new op needs a row here");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int op = brq_op_lookup(ops[i].op, strlen(ops[i].op));
		cr_assert_gt(op, 0, "%s", ops[i].op);
		cr_assert_eq(brq_op_admin_only((brq_op) op), ops[i].admin_only, "brq_op_admin_only(%s)",
			     ops[i].op);
		cr_assert_eq(brq_auth_role_may(BRQ_ROLE_WORKER, ops[i].admin_only), !ops[i].admin_only,
			     "worker %s", ops[i].op);
		cr_assert(brq_auth_role_may(BRQ_ROLE_ADMIN, ops[i].admin_only), "admin %s", ops[i].op);
		cr_assert_not(brq_auth_role_may(BRQ_ROLE_NONE, ops[i].admin_only), "none %s", ops[i].op);
	}
	cr_assert_not(brq_auth_role_may((brq_role) 99, false));
	cr_assert_str_eq(brq_auth_role_name(BRQ_ROLE_NONE), "none");
	cr_assert_str_eq(brq_auth_role_name(BRQ_ROLE_WORKER), "worker");
	cr_assert_str_eq(brq_auth_role_name(BRQ_ROLE_ADMIN), "admin");
}

Test(auth, loads_from_a_config_struct)
{
	char      *w = TOKEN_FILE("w", W1, 0600);
	char      *a = TOKEN_FILE("a", A1, 0600);
	brq_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.worker_token_files   = &w;
	cfg.n_worker_token_files = 1;
	cfg.admin_token_files    = &a;
	cfg.n_admin_token_files  = 1;
	cr_assert_eq(brq_auth_init_config(&auth, &cfg, &probs), 0);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(check(A1), BRQ_ROLE_ADMIN);
}

Test(auth, loading_twice_and_fini_twice_is_clean)
{
	// Under ASan (BROOQ_SANITIZE=ON) LeakSanitizer fails the test on any leak.
	for (int i = 0; i < 3; i++) {
		load_standard();
		cr_assert_eq(check(A2), BRQ_ROLE_ADMIN);
		brq_auth_fini(&auth);
		cr_assert_null(auth.live);
		cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 0);
		static const unsigned char zero[32];
		cr_assert_eq(memcmp(auth.key, zero, sizeof(zero)), 0, "key wiped");
	}
	brq_auth_fini(&auth);
	brq_auth_fini(NULL);
	// Each init draws a new key: the same token hashes differently per instance.
	brq_auth other;
	load_standard();
	const char *w[] = {TOKEN_FILE("w9", W1, 0600)};
	cr_assert_eq(brq_auth_init(&other, w, 1, NULL, 0, &probs), 0);
	cr_assert_neq(memcmp(auth.key, other.key, sizeof(auth.key)), 0);
	brq_auth_fini(&other);
}

// ---- replacing the tokens while checks run (SIGHUP) ------------------------------------------

// Log lines written while fn runs.
static const char *
logged_during(void (*fn)(void))
{
	static char out[16384];
	int         fds[2];
	cr_assert_eq(pipe(fds), 0);
	cr_assert_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	brq_log_set_fd(fds[1]);
	fn();
	brq_log_set_fd(STDERR_FILENO);
	ssize_t n          = read(fds[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	close(fds[1]);
	return out;
}

static void
rotate_w2_out_and_w3_in(void)
{
	const char   *w[] = {TOKEN_FILE("w1", W1 "\n", 0600),
			     TOKEN_FILE("w3", "worker-three-0123456789abcdefghijklm", 0600)};
	const char   *a[] = {TOKEN_FILE("a1", "admin-one-CHANGED-0123456789abcdefghijkl", 0400),
			     TOKEN_FILE("a2", A2 "\n", 0600)};
	brq_auth_set *set = NULL;
	cr_assert_eq(brq_auth_prepare(&auth, w, 2, a, 2, &set, &probs), 0);
	cr_assert_eq(check(W2), BRQ_ROLE_WORKER, "prepare alone changes nothing");
	brq_auth_publish(&auth, set);
}

Test(auth, publish_swaps_the_tokens_and_logs_each_change_by_file_never_the_token)
{
	load_standard();
	const char *out = logged_during(rotate_w2_out_and_w3_in);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER, "unchanged file still valid");
	cr_assert_eq(check(W2), BRQ_ROLE_NONE, "removed file refused");
	cr_assert_eq(check("worker-three-0123456789abcdefghijklm"), BRQ_ROLE_WORKER, "added file accepted");
	cr_assert_eq(check(A1), BRQ_ROLE_NONE, "old content of a changed file refused");
	cr_assert_eq(check("admin-one-CHANGED-0123456789abcdefghijkl"), BRQ_ROLE_ADMIN);
	cr_log_info("%s", out);
	cr_assert(strstr(out, "msg=token_added role=worker path=") && strstr(out, "/w3\n"), "%s", out);
	cr_assert(strstr(out, "msg=token_removed role=worker path=") && strstr(out, "/w2\n"), "%s", out);
	cr_assert(strstr(out, "msg=token_changed role=admin path=") && strstr(out, "/a1\n"), "%s", out);
	cr_assert_not_null(strstr(out, "msg=tokens_reloaded worker=2 admin=2 added=1 removed=1 changed=1\n"),
			   "%s", out);
	cr_assert_null(strstr(out, "worker-three"), "token leaked: %s", out);
	cr_assert_null(strstr(out, "CHANGED"), "token leaked: %s", out);
}

// The same tokens under new paths (the first reload from the tokens' copy, reload.h),
// but w2 dropped and w3 new.
static void
move_every_file(void)
{
	const char   *w[] = {TOKEN_FILE("moved-w1", W1 "\n", 0400),
			     TOKEN_FILE("moved-w3", "worker-three-0123456789abcdefghijklm", 0400)};
	const char   *a[] = {TOKEN_FILE("moved-a1", A1, 0400), TOKEN_FILE("moved-a2", A2 "\n", 0400)};
	brq_auth_set *set = NULL;
	cr_assert_eq(brq_auth_prepare(&auth, w, 2, a, 2, &set, &probs), 0);
	brq_auth_publish(&auth, set);
}

Test(auth, a_token_whose_file_moved_is_neither_added_nor_removed)
{
	load_standard();
	const char *out = logged_during(move_every_file);
	cr_log_info("%s", out);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(check(W2), BRQ_ROLE_NONE);
	cr_assert(strstr(out, "msg=token_added role=worker path=") && strstr(out, "/moved-w3\n"), "%s", out);
	cr_assert(strstr(out, "msg=token_removed role=worker path=") && strstr(out, "/w2\n"), "%s", out);
	int lines = 0;
	for (const char *at = out; (at = strstr(at, "msg=token_")) != NULL; at++)
		lines++;
	cr_assert_eq(lines, 2, "only w2 and w3 changed: %s", out);
	cr_assert_not_null(strstr(out, "msg=tokens_reloaded worker=2 admin=2 added=1 removed=1 changed=0\n"),
			   "%s", out);
}

static void
bad_reload(void)
{
	// The new set cannot be built: a file others may read, another too short.
	const char   *w[] = {TOKEN_FILE("w1", W1, 0644), TOKEN_FILE("w2", "short\n", 0600)};
	brq_auth_set *set = (brq_auth_set *) 1;
	cr_assert_eq(brq_auth_prepare(&auth, w, 2, NULL, 0, &set, &probs), BRQ_EINVAL);
	cr_assert_null(set);
	brq_auth_publish(&auth, set); // NULL: ignored
}

Test(auth, the_in_memory_token_survives_a_reload)
{
	const char probe[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	load_standard();
	cr_assert_eq(brq_auth_add_token(&auth, probe, strlen(probe), BRQ_ROLE_WORKER), 0);
	(void) logged_during(rotate_w2_out_and_w3_in);
	cr_assert_eq(check(W2), BRQ_ROLE_NONE, "the reload happened");
	cr_assert_eq(check(probe), BRQ_ROLE_WORKER, "the self-probe's token went with the file set");
}

Test(auth, a_failed_prepare_keeps_the_published_tokens)
{
	load_standard();
	const char *out = logged_during(bad_reload);
	cr_assert_str_eq(out, "", "nothing changed, nothing logged");
	cr_assert_eq(probs.count, 2);
	cr_assert_eq(check(W1), BRQ_ROLE_WORKER);
	cr_assert_eq(check(A2), BRQ_ROLE_ADMIN);
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 4);
}

Test(auth, an_open_auth_without_tokens_refuses_everything)
{
	cr_assert_eq(brq_auth_open(&auth), 0);
	cr_assert_eq(check(W1), BRQ_ROLE_NONE);
	cr_assert_eq(brq_auth_count(&auth, BRQ_ROLE_NONE), 0);
}

static atomic_bool stop_checking;

static void *
checker(void *arg)
{
	long *bad = arg;
	while (!atomic_load(&stop_checking)) {
		// W1 is in every generation; A1 in none after the first swap: its answer
		// may be either while swaps run, but never anything else.
		if (check(W1) != BRQ_ROLE_WORKER) {
			(*bad)++;
		}
		brq_role r = check(A1);
		if (r != BRQ_ROLE_ADMIN && r != BRQ_ROLE_NONE) {
			(*bad)++;
		}
	}
	return NULL;
}

// Under the sanitizer build, a set freed while a check still read it is a
// heap-use-after-free report; here it would also be a wrong answer.
Test(auth, checks_on_many_threads_stay_correct_while_tokens_are_republished, .timeout = 60)
{
	load_standard();
	const char *w[] = {TOKEN_FILE("w1", W1, 0600), TOKEN_FILE("w2", W2, 0600)};
	pthread_t   th[4];
	long        bad[4] = {0};
	atomic_store(&stop_checking, false);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pthread_create(&th[i], NULL, checker, &bad[i]), 0);
	}
	brq_log_set_level(BRQ_LOG_LVL_WARN); // 2000 reload summaries are not the point
	for (int i = 0; i < 2000; i++) {
		brq_auth_set *set = NULL;
		cr_assert_eq(brq_auth_prepare(&auth, w, 1 + (size_t) (i % 2), NULL, 0, &set, &probs), 0);
		brq_auth_publish(&auth, set);
	}
	atomic_store(&stop_checking, true);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(bad[i], 0, "thread %d saw %ld wrong answers", i, bad[i]);
	}
	cr_assert_eq(check(A1), BRQ_ROLE_NONE);
	cr_assert_eq(check(W2), BRQ_ROLE_WORKER, "the last set (i = 1999) has both files");
}
