/* SPDX-License-Identifier: MIT */
/*
 * The man pages' examples as they are written. Every fenced block of a man page source
 * (docs/man/PAGE.scd) with a line "; test: NAME" (an scdoc comment) right above it is
 * taken out of the source, scdoc's escapes undone, and the example NAME of the table
 * below compiles it (C: with -Wall -Wextra -Werror against the built library) and runs
 * it against a real gateway and PostgreSQL, or says why it cannot run here. Every block
 * of an EXAMPLE(S) section must carry a marker, and every marker must name an example of
 * the table: an example that stops compiling or working, or a new one nobody runs,
 * fails this test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "gw.h"
#include "testdb.h"
#include "tutil.h"

typedef struct man_example {
	const char *page; /* under docs/man/ */
	const char *name; /* its marker: "; test: NAME" */
	const char *skip; /* why it cannot run here; NULL: it runs (a Test below) */
} man_example;

static const man_example examples[] = {
	{"brooq.3.scd", "worker", NULL},
	{"brooqctl.1.scd", "brooqctl", NULL},
	{"brooq-gateway.8.scd", "gateway-setup",
	 "it writes /etc/brooq and starts the unit with systemctl: it needs root and systemd as PID 1 "
	 "(systemd_boot_test follows README's install steps in such a container)"},
	{"brooq-gateway.8.scd", "gateway-check-config", NULL},
};
#define N_EXAMPLES (sizeof(examples) / sizeof(examples[0]))

/* The stand-in for the example's deliver(), compiled beside the brooq(3) worker: it
 * appends each payload to the file $EXAMPLE_DELIVERED, a line each, and fails the
 * payloads that name "refuse". ISO C only, like the example. */
static const char deliver_c[] = "#include <stdio.h>\n"
				"#include <stdlib.h>\n"
				"#include <string.h>\n"
				"int deliver(const char *payload, size_t len);\n"
				"int\n"
				"deliver(const char *payload, size_t len)\n"
				"{\n"
				"\tFILE *f = fopen(getenv(\"EXAMPLE_DELIVERED\"), \"a\");\n"
				"\tif (f == NULL)\n"
				"\t\treturn -1;\n"
				"\tfprintf(f, \"%.*s\\n\", (int) len, payload);\n"
				"\tif (fclose(f) != 0)\n"
				"\t\treturn -1;\n"
				"\treturn strstr(payload, \"refuse\") != NULL ? -1 : 0;\n"
				"}\n";

/* ---- the man page sources ---------------------------------------------------------- */

/* One fenced block of a page. */
typedef struct block {
	char *text;        /* its lines, scdoc's escapes undone (malloc'd) */
	char  name[64];    /* the marker's NAME; "" without a marker */
	char  section[64]; /* the "# SECTION" it is in */
	int   line;        /* of its opening fence */
} block;

/* A whole file, NUL-terminated (malloc'd); fails the test when it cannot be read. */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "cannot read %s", path);
	char  *buf = NULL;
	size_t cap = 0, len = 0, got;
	do {
		if (len + 4096 > cap)
			cr_assert_not_null(buf = realloc(buf, cap = cap * 2 + 4096));
		got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

/* Appends line to *text without scdoc's escapes: a backslash makes the next character
 * literal ("\\n" in the source is the C text "\n"), as scdoc renders it. */
static void
append_unescaped(FILE *text, const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (line[i] == '\\' && i + 1 < len)
			i++;
		fputc(line[i], text);
	}
	fputc('\n', text);
}

/*
 * Every fenced block of docs/man/PAGE, in order, into *out (malloc'd; free each text,
 * then the array). Fails the test on a marker that is not right above a block, or a
 * block that is not closed.
 */
static size_t
page_blocks(const char *page, block **out)
{
	char   path[512], *src, *line, *next, marker[64] = "", section[64] = "";
	int    lineno = 0, marker_line = 0;
	FILE  *text = NULL;
	char  *buf  = NULL;
	size_t len = 0, n = 0;
	snprintf(path, sizeof(path), "%s/docs/man/%s", getenv("BROOQ_SOURCE_DIR"), page);
	src  = slurp(path);
	*out = NULL;
	for (line = src; *line != '\0'; line = next) {
		size_t l = strcspn(line, "\n");
		next     = line[l] == '\n' ? line + l + 1 : line + l;
		lineno++;
		bool fence = strncmp(line, "```", 3) == 0;
		if (text != NULL) {
			if (!fence) {
				append_unescaped(text, line, l);
				continue;
			}
			fclose(text);
			text             = NULL;
			(*out)[n++].text = buf;
			continue;
		}
		if (strncmp(line, "# ", 2) == 0)
			snprintf(section, sizeof(section), "%.*s", (int) l - 2, line + 2);
		cr_assert(marker[0] == '\0' || fence,
			  "%s:%d: the marker \"; test: %s\" is not right above a fenced block", path,
			  marker_line, marker);
		if (strncmp(line, "; test: ", 8) == 0) {
			snprintf(marker, sizeof(marker), "%.*s", (int) l - 8, line + 8);
			marker_line = lineno;
		} else if (fence) {
			cr_assert_not_null(*out = realloc(*out, (n + 1) * sizeof(**out)));
			(*out)[n] = (block) {.line = lineno};
			snprintf((*out)[n].name, sizeof((*out)[n].name), "%s", marker);
			snprintf((*out)[n].section, sizeof((*out)[n].section), "%s", section);
			cr_assert_not_null(text = open_memstream(&buf, &len));
			marker[0] = '\0';
		}
	}
	if (text != NULL)
		cr_assert_fail("%s: the block of line %d is not closed", path, (*out)[n].line);
	cr_assert_eq(marker[0], '\0', "%s:%d: the marker \"; test: %s\" stands above no block", path,
		     marker_line, marker);
	free(src);
	return n;
}

/* The text of example `name` of `page` (malloc'd): its one marked block. */
static char *
example_text(const char *page, const char *name)
{
	block *b;
	char  *text = NULL;
	size_t n    = page_blocks(page, &b);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(b[i].name, name) == 0) {
			cr_assert_null(text, "docs/man/%s marks two blocks \"; test: %s\"", page, name);
			text = b[i].text;
		} else {
			free(b[i].text);
		}
	}
	free(b);
	cr_assert_not_null(text, "docs/man/%s marks no block \"; test: %s\"", page, name);
	return text;
}

/* ---- the gateway, and programs run against it ------------------------------------------ */

static char   *dsn;
static brq_gw  gw;
static PGconn *db;

static void
start(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, NULL);
	db = brq_testdb_connect(dsn);
}

static void
stop(void)
{
	if (db != NULL)
		PQfinish(db);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(man_examples, .timeout = 120);

/* Compiles the C example `name` (text) with deliver_c beside it, as a user of the
 * library would (its header, the shared library, C11, every warning an error), into
 * gw.dir/NAME; its path into bin. Fails the test, showing the compiler's output. */
static void
compile_c(const char *name, const char *text, char *bin, size_t cap)
{
	char src[400], harness[400], libdir[512], cmd[4096], *out = NULL;
	snprintf(src, sizeof(src), "%s/%s.c", gw.dir, name);
	snprintf(harness, sizeof(harness), "%s/deliver.c", gw.dir);
	snprintf(bin, cap, "%s/%s", gw.dir, name);
	brq_t_write_file(src, text, 0600);
	brq_t_write_file(harness, deliver_c, 0600);
	snprintf(libdir, sizeof(libdir), "%s", BRQ_EX_LIB);
	*strrchr(libdir, '/') = '\0';
	snprintf(cmd, sizeof(cmd),
		 "'%s' -std=c11 -pedantic -Wall -Wextra -Werror %s -I'%s' -o '%s' '%s' '%s' '%s' "
		 "-Wl,-rpath,'%s' 2>&1",
		 BRQ_EX_CC, BRQ_EX_FLAGS, BRQ_EX_INCLUDE, bin, src, harness, BRQ_EX_LIB, libdir);
	int rc = brq_testdb_run(cmd, &out);
	cr_assert_eq(rc, 0, "the example \"%s\" does not compile:\n%s\n%s", name, cmd, out);
	free(out);
}

/*
 * Starts argv (argv[0] a path) with the test's environment, minus every BROOQ_* variable
 * and CREDENTIALS_DIRECTORY, with the built programs first on PATH and the "KEY=VALUE"
 * strings of extra (NULL-terminated) added; stdout and stderr into log. The process gets
 * SIGTERM if the test's process ends first. Returns its pid.
 */
static pid_t
spawn(const char *const *argv, const char *const *extra, const char *log)
{
	extern char **environ;
	size_t        n = 0, k = 0;
	while (environ[n] != NULL)
		n++;
	for (; extra[k] != NULL; k++)
		;
	char **env = calloc(n + k + 2, sizeof(*env)), path[4096];
	cr_assert_not_null(env);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "BROOQ_", 6) != 0 && strncmp(environ[i], "PATH=", 5) != 0 &&
		    strncmp(environ[i], "CREDENTIALS_DIRECTORY=", 22) != 0)
			env[m++] = environ[i];
	snprintf(path, sizeof(path), "PATH=%s:%s", getenv("BROOQ_TEST_BIN_DIR"),
		 getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin");
	env[m++] = path;
	for (size_t i = 0; i < k; i++)
		env[m++] = (char *) extra[i];
	pid_t parent = getpid(), pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
			_exit(127);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
			_exit(127);
		execve(argv[0], (char *const *) argv, env);
		_exit(127);
	}
	free(env);
	return pid;
}

/* Waits up to timeout_ms for pid; returns its wait status, or -1 after a SIGKILL. */
static int
wait_exit(pid_t pid, int timeout_ms)
{
	int st;
	for (int waited = 0; waited < timeout_ms; waited += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		cr_assert_geq(r, 0);
		if (r == pid)
			return st;
		brq_t_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Exit code of a wait status; -1 when the process did not exit on its own. */
static int
exit_code(int st)
{
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- shell examples: the installed system's paths, in the sandbox ----------------------- */

/* What the test has in place of an installed system's files. */
typedef struct sandbox {
	char url[300];         /* the gateway's socket */
	char admin_token[300]; /* a token file of each role */
	char worker_token[300];
	char dsn_file[300]; /* the DSN, first line */
	char env_file[300]; /* brooq-gateway's env file */
} sandbox;

static void
sandbox_init(sandbox *sb)
{
	char text[2048];
	snprintf(sb->url, sizeof(sb->url), "%s", gw.url);
	snprintf(sb->admin_token, sizeof(sb->admin_token), "%s", gw.admin_token_file);
	snprintf(sb->worker_token, sizeof(sb->worker_token), "%s", gw.worker_token_file);
	snprintf(sb->dsn_file, sizeof(sb->dsn_file), "%s/dsn", gw.dir);
	snprintf(sb->env_file, sizeof(sb->env_file), "%s/brooq-gateway.env", gw.dir);
	snprintf(text, sizeof(text), "%s\n", dsn);
	brq_t_write_file(sb->dsn_file, text, 0600);
	snprintf(text, sizeof(text),
		 "BROOQ_DSN_FILE=%s\nBROOQ_LISTEN=ipc://%s/check.sock\nBROOQ_WORKER_TOKEN_FILES=%s\n"
		 "BROOQ_ADMIN_TOKEN_FILES=%s\n",
		 sb->dsn_file, gw.dir, sb->worker_token, sb->admin_token);
	brq_t_write_file(sb->env_file, text, 0600);
	/* What a page's relative paths name, in the directory its examples run in
	 * (run_sh): an env file without secrets and a credentials directory laid out as
	 * the unit loads it. */
	char path[400];
	snprintf(path, sizeof(path), "%s/test.env", gw.dir);
	snprintf(text, sizeof(text), "BROOQ_LISTEN=ipc://%s/check2.sock\n", gw.dir);
	brq_t_write_file(path, text, 0600);
	static const char *const dirs[] = {"credentials", "credentials/worker-tokens",
					   "credentials/admin-tokens"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", gw.dir, dirs[i]);
		cr_assert(mkdir(path, 0700) == 0, "mkdir %s", path);
	}
	snprintf(path, sizeof(path), "%s/credentials/dsn", gw.dir);
	snprintf(text, sizeof(text), "%s\n", dsn);
	brq_t_write_file(path, text, 0600);
	static const char *const roles[] = {"worker", "admin"};
	for (size_t i = 0; i < 2; i++) {
		char *token = slurp(i == 0 ? sb->worker_token : sb->admin_token);
		snprintf(path, sizeof(path), "%s/credentials/%s-tokens/1", gw.dir, roles[i]);
		brq_t_write_file(path, token, 0600);
		cr_assert(chmod(path, 0600) == 0);
		free(token);
	}
	/* An operator's own token file in $HOME (run_sh sets HOME to the test's directory). */
	char *admin = slurp(sb->admin_token);
	snprintf(path, sizeof(path), "%s/.brooq-token", gw.dir);
	brq_t_write_file(path, admin, 0600);
	cr_assert(chmod(path, 0600) == 0);
	free(admin);
}

/* The sandbox's file for an installed path, by what its name says it holds; NULL when
 * the test does not know. */
static const char *
sandbox_file(const sandbox *sb, const char *path, size_t len)
{
	char p[300];
	snprintf(p, sizeof(p), "%.*s", (int) len, path);
	size_t l = strlen(p);
	if (strstr(p, "admin-token") != NULL)
		return sb->admin_token;
	if (strstr(p, "worker-token") != NULL)
		return sb->worker_token;
	if (l >= 4 && strcmp(p + l - 4, "/dsn") == 0)
		return sb->dsn_file;
	if (l >= 18 && strcmp(p + l - 18, "/brooq-gateway.env") == 0)
		return sb->env_file;
	return NULL;
}

/*
 * The example's text with the installed system's paths replaced by the sandbox's
 * (malloc'd): the default socket's URL by the test gateway's, each /etc/brooq/ path by
 * the sandbox file its name says (a role's token, the DSN, the env file). Fails the test
 * on any other path under /etc/brooq or /run/brooq: an example never touches the host's.
 */
static char *
sandboxed(const char *text, const sandbox *sb)
{
	static const char sock[] = "ipc:///run/brooq/gateway.sock";
	char             *out    = NULL;
	size_t            len    = 0;
	FILE             *f      = open_memstream(&out, &len);
	cr_assert_not_null(f);
	for (const char *p = text; *p != '\0';) {
		if (strncmp(p, sock, sizeof(sock) - 1) == 0) {
			fputs(sb->url, f);
			p += sizeof(sock) - 1;
		} else if (strncmp(p, "/etc/brooq/", 11) == 0 || strncmp(p, "/run/brooq/", 11) == 0) {
			size_t      l    = strcspn(p, " \t\n'\";|&)");
			const char *file = sandbox_file(sb, p, l);
			cr_assert_not_null(file, "the test has nothing in place of %.*s", (int) l, p);
			fputs(file, f);
			p += l;
		} else {
			fputc(*p++, f);
		}
	}
	cr_assert_eq(fclose(f), 0);
	return out;
}

/* Runs the shell example `name` of `page` with sh -eux (any failing command fails it),
 * its paths sandboxed, the admin token's as the operator's environment (what brooqctl
 * finds on an installed system); returns its exit code, its output into log. */
static int
run_sh(const char *page, const char *name, const sandbox *sb, char *log, size_t cap)
{
	char  script[400], e_url[400], e_token[400];
	char *text = example_text(page, name), *sh = sandboxed(text, sb), *full = NULL;
	snprintf(script, sizeof(script), "%s/%s.sh", gw.dir, name);
	snprintf(log, cap, "%s/%s.log", gw.dir, name);
	/* The operator's shell: relative paths and $HOME are the test's directory; sudo
	 * (not installed here, and the test is root) runs the command as it is. */
	cr_assert(asprintf(&full, "cd '%s'\nHOME='%s'\nsudo() { \"$@\"; }\n%s", gw.dir, gw.dir, sh) > 0);
	brq_t_write_file(script, full, 0600);
	free(full);
	snprintf(e_url, sizeof(e_url), "BROOQ_URL=%s", sb->url);
	snprintf(e_token, sizeof(e_token), "BROOQ_TOKEN_FILE=%s", sb->admin_token);
	const char *const argv[]  = {"/bin/sh", "-eux", script, NULL};
	const char *const extra[] = {e_url, e_token, NULL};
	int               rc      = exit_code(wait_exit(spawn(argv, extra, log), 60000));
	free(text);
	free(sh);
	return rc;
}

/* ---- the examples ------------------------------------------------------------------- */

Test(man_examples, every_example_block_is_marked_and_every_marker_names_an_example)
{
	char           dir[512];
	int            found[N_EXAMPLES] = {0};
	struct dirent *e;
	snprintf(dir, sizeof(dir), "%s/docs/man", getenv("BROOQ_SOURCE_DIR"));
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "cannot read %s", dir);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".scd") != 0)
			continue;
		block *b;
		size_t n = page_blocks(e->d_name, &b);
		for (size_t i = 0; i < n; i++) {
			bool known = false;
			for (size_t k = 0; k < N_EXAMPLES; k++)
				if (strcmp(examples[k].page, e->d_name) == 0 &&
				    strcmp(examples[k].name, b[i].name) == 0) {
					found[k]++;
					known = true;
				}
			cr_expect(b[i].name[0] != '\0' || strncmp(b[i].section, "EXAMPLE", 7) != 0,
				  "docs/man/%s:%d: a block of %s without a \"; test: NAME\" marker",
				  e->d_name, b[i].line, b[i].section);
			cr_expect(b[i].name[0] == '\0' || known,
				  "docs/man/%s:%d: \"; test: %s\" is no example of man_examples_test.c",
				  e->d_name, b[i].line - 1, b[i].name);
			free(b[i].text);
		}
		free(b);
	}
	closedir(d);
	for (size_t k = 0; k < N_EXAMPLES; k++)
		cr_expect_eq(found[k], 1, "docs/man/%s marks %d blocks \"; test: %s\"", examples[k].page,
			     found[k], examples[k].name);
}

/* The examples that cannot run here are at least valid shell, and say why they are skipped. */
Test(man_examples, the_examples_that_cannot_run_here_parse)
{
	char reasons[2048] = "";
	for (size_t k = 0; k < N_EXAMPLES; k++) {
		if (examples[k].skip == NULL)
			continue;
		char *text = example_text(examples[k].page, examples[k].name);
		FILE *sh   = popen("sh -n", "w"); /* its complaint goes to the test's stderr */
		cr_assert_not_null(sh);
		fputs(text, sh);
		int st = pclose(sh);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "docs/man/%s, example %s, is not valid shell", examples[k].page, examples[k].name);
		snprintf(reasons + strlen(reasons), sizeof(reasons) - strlen(reasons), "%s (%s): %s; ",
			 examples[k].name, examples[k].page, examples[k].skip);
		free(text);
	}
	cr_log_info("not run: %s", reasons);
}

/* Enqueues one job with the worker token; returns its id. */
static uint64_t
enqueue(const char *topic, const char *payload, uint32_t max_attempts)
{
	brooq_client_opts    o = {.size = sizeof(o), .url = gw.url, .token_file = gw.worker_token_file};
	brooq_client        *c;
	brooq_job_spec       spec = {.size         = sizeof(brooq_job_spec),
				     .topic        = topic,
				     .payload      = payload,
				     .max_attempts = max_attempts};
	brooq_enqueue_result r    = BROOQ_ENQUEUE_RESULT_INIT;
	BRQ_OK(brooq_client_open(&o, &c));
	BRQ_OK(brooq_enqueue(c, &spec, 1, &r));
	brooq_client_close(c);
	return r.id;
}

/* brooq(3): the worker does a job, fails one its deliver() refuses as the page says, and
 * stops gracefully, exit 0, on SIGTERM. */
Test(man_examples, the_brooq_3_worker_does_jobs_and_stops_on_sigterm, .init = start, .fini = stop)
{
	char  bin[400], log[400], delivered[400], e_url[400], e_token[400], e_deliv[450];
	char *text = example_text("brooq.3.scd", "worker");
	compile_c("worker", text, bin, sizeof(bin));
	free(text);
	uint64_t ok  = enqueue("email.send", "{\"to\":\"a@example.org\"}", 1);
	uint64_t bad = enqueue("email.send", "{\"to\":\"refuse@example.org\"}", 1);

	snprintf(log, sizeof(log), "%s/worker.log", gw.dir);
	snprintf(delivered, sizeof(delivered), "%s/delivered", gw.dir);
	snprintf(e_url, sizeof(e_url), "BROOQ_URL=%s", gw.url);
	snprintf(e_token, sizeof(e_token), "BROOQ_TOKEN_FILE=%s", gw.worker_token_file);
	snprintf(e_deliv, sizeof(e_deliv), "EXAMPLE_DELIVERED=%s", delivered);
	const char *const argv[]  = {bin, NULL};
	const char *const extra[] = {e_url, e_token, e_deliv, NULL};
	pid_t             pid     = spawn(argv, extra, log);

	long long done = brq_testdb_wait_int(
		db, 2, 20000,
		"SELECT count(*) FROM job WHERE (id = %" PRIu64 " AND state = 'done') OR (id = %" PRIu64
		" AND state = 'dead' AND last_error = 'smtp: connection refused')",
		ok, bad);
	if (done != 2)
		kill(pid, SIGKILL);
	char *out = slurp(log);
	cr_assert_eq(done, 2, "the example did not settle its two jobs as it says; its output:\n%s", out);
	free(out);

	/* Nothing running: the stop abandons the long-poll, run() returns within ms. */
	double t0 = brq_t_now_ms();
	cr_assert_eq(kill(pid, SIGTERM), 0);
	int    st = wait_exit(pid, 15000);
	double ms = brq_t_now_ms() - t0;
	out       = slurp(log);
	cr_assert_eq(exit_code(st), 0,
		     "the example did not exit 0 on SIGTERM (wait status %d); its output:\n%s", st, out);
	cr_assert_lt(ms, 3000.0, "the example took %.0f ms to stop", ms);
	free(out);
	out = slurp(delivered);
	cr_assert(strstr(out, "a@example.org") != NULL && strstr(out, "refuse@example.org") != NULL,
		  "deliver() got: %s", out);
	free(out);
}

/* brooq(3): a client that cannot open is reported, and the example exits 1 at once. */
Test(man_examples, the_brooq_3_worker_reports_a_failed_open_and_exits_1, .init = start, .fini = stop)
{
	char  bin[400], log[400], e_url[400];
	char *text = example_text("brooq.3.scd", "worker");
	compile_c("worker", text, bin, sizeof(bin));
	free(text);
	snprintf(log, sizeof(log), "%s/worker.log", gw.dir);
	snprintf(e_url, sizeof(e_url), "BROOQ_URL=%s", gw.url);
	const char *const argv[]  = {bin, NULL};
	const char *const extra[] = {e_url, "BROOQ_TOKEN_FILE=/nonexistent/token", NULL};
	int               rc      = exit_code(wait_exit(spawn(argv, extra, log), 10000));
	char             *out     = slurp(log);
	cr_assert_eq(rc, 1, "exit %d; output:\n%s", rc, out);
	cr_assert(strstr(out, "open: ") != NULL && strstr(out, "/nonexistent/token") != NULL, "%s", out);
	free(out);
}

/* brooqctl(1): the commands of EXAMPLES, in the order given, with the next job id 17 (the
 * one they name): enqueued, shown, canceled; stats; the schema's status. */
Test(man_examples, the_brooqctl_1_examples_run_as_an_operator_types_them, .init = start, .fini = stop)
{
	sandbox sb;
	char    log[400], *out;
	sandbox_init(&sb);
	brq_testdb_exec(db, "SELECT setval('job_id_seq', 16)");
	int rc = run_sh("brooqctl.1.scd", "brooqctl", &sb, log, sizeof(log));
	out    = slurp(log);
	cr_assert_eq(rc, 0, "brooqctl(1)'s examples failed (exit %d):\n%s", rc, out);
	cr_assert(strstr(out, "enqueued job 17") != NULL, "%s", out);
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM job WHERE id = 17 AND topic = 'email.send' AND "
				    "idempotency_key = 'order-42' AND state = 'canceled' AND "
				    "payload = '{\"to\":\"a@example.org\"}'"),
		     1, "job 17 is not the canceled email.send of the examples:\n%s", out);
	free(out);
}

/* brooq-gateway(8): --check-config of an env file that names the DSN file and tokens. */
Test(man_examples, the_brooq_gateway_8_config_check_passes_on_a_valid_env_file, .init = start, .fini = stop)
{
	sandbox sb;
	char    log[400], *out;
	sandbox_init(&sb);
	int rc = run_sh("brooq-gateway.8.scd", "gateway-check-config", &sb, log, sizeof(log));
	out    = slurp(log);
	cr_assert_eq(rc, 0, "brooq-gateway(8)'s --check-config example failed (exit %d):\n%s", rc, out);
	free(out);
}
