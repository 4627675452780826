// SPDX-License-Identifier: MIT
// `brooq-gateway --reload-credentials PID`: copies the unit's tokens where a running
// gateway can read them, then reloads it (the steps and why: reload_creds.h).
#define _GNU_SOURCE // renameat2, setresuid, setresgid
#include "reload_creds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "config/config.h"

// A file larger than this holds no token (auth.h: at most BRQ_AUTH_TOKEN_MAX bytes):
// refused before it is read into memory.
#define FILE_MAX (64 * 1024)
// Directories of the unit that hold one token per file (brq_unit_credentials).
#define DIRS_MAX 4

// One token file as read from the unit's directory. data is wiped before it is freed.
struct cred_file {
	char          *name; // owned: the file's name in its directory
	unsigned char *data; // owned: its bytes
	size_t         len;
};

// One directory credential (worker-tokens/, admin-tokens/) and its files.
struct cred_dir {
	const brq_unit_credential *uc; // borrowed: the table's row
	struct cred_file          *files;
	size_t                     n;
};

// One run of the mode.
struct job {
	const char     *etc_dir; // borrowed: the unit's credentials directory
	pid_t           pid;     // the gateway to reload
	uid_t           uid;     // its effective uid and gid: the copy's owner
	gid_t           gid;
	char            run_dir[PATH_MAX]; // $RUNTIME_DIRECTORY (its first element)
	int             run_fd;            // run_dir, open; -1 before
	char            tmp[64];           // the new copy's name in run_dir; "" before it exists
	struct cred_dir dirs[DIRS_MAX];
	size_t          n_dirs;
};

// One line to stderr, prefixed with the mode; never a token (callers pass paths).
static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("brooq-gateway: --reload-credentials: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

// $RUNTIME_DIRECTORY's first element, then "/" and name when name is not NULL, into
// buf. Returns as brq_reload_creds_copy_path().
static int
runtime_path(char *buf, size_t cap, const char *name)
{
	const char *rt = getenv("RUNTIME_DIRECTORY");
	if (rt == NULL || rt[0] != '/') {
		return BRQ_ENOTFOUND;
	}
	// systemd joins several RuntimeDirectory= entries with ':'; the unit has one.
	int len = (int) strcspn(rt, ":");
	int w   = name != NULL ? snprintf(buf, cap, "%.*s/%s", len, rt, name)
			       : snprintf(buf, cap, "%.*s", len, rt);
	return w > 0 && (size_t) w < cap ? 0 : BRQ_EINVAL;
}

int
brq_reload_creds_copy_path(char *buf, size_t cap)
{
	return runtime_path(buf, cap, BRQ_RELOAD_CREDS_NAME);
}

// The PID as given: decimal digits, above 1 (systemd's $MAINPID). Returns 0 or REFUSED.
static int
parse_pid(const char *arg, pid_t *out)
{
	char *end = NULL;
	errno     = 0;
	long v    = arg[0] >= '0' && arg[0] <= '9' ? strtol(arg, &end, 10) : 0;
	if (errno != 0 || end == NULL || *end != '\0' || v <= 1 || v > INT_MAX) {
		say("PID \"%s\": not a process id (the unit passes $MAINPID)", arg);
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	*out = (pid_t) v;
	return 0;
}

// Is PID a brooq-gateway, and as which user does it run? From /proc/PID/comm and the
// effective ids of /proc/PID/status (the owner of /proc/PID would be root for a process
// that is not dumpable). Returns 0 or REFUSED (said why).
static int
inspect_target(struct job *j)
{
	char  path[64], line[256], comm[32] = "";
	bool  has_uid = false, has_gid = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int) j->pid);
	if ((f = fopen(path, "re")) == NULL) {
		say("no process %d: %s", (int) j->pid, strerror(errno));
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	if (fgets(comm, sizeof(comm), f) == NULL) {
		comm[0] = '\0';
	}
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	if (strcmp(comm, "brooq-gateway") != 0) {
		say("process %d is \"%s\", not brooq-gateway: not signalled", (int) j->pid, comm);
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int) j->pid);
	if ((f = fopen(path, "re")) == NULL) {
		say("%s: %s", path, strerror(errno));
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned real, eff;
		if (sscanf(line, "Uid: %u %u", &real, &eff) == 2) {
			j->uid  = (uid_t) eff;
			has_uid = true;
		} else if (sscanf(line, "Gid: %u %u", &real, &eff) == 2) {
			j->gid  = (gid_t) eff;
			has_gid = true;
		}
	}
	fclose(f);
	if (!has_uid || !has_gid) {
		say("%s: no Uid:/Gid: line", path);
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	return 0;
}

// Reads the file `name` of the directory dfd into *out. Returns 0, 1 when it is to be
// skipped (gone since readdir, or not a regular file: said), REFUSED (a symbolic link,
// too large) or FAILED.
static int
read_one(int dfd, const char *dir, const char *name, struct cred_file *out)
{
	struct stat st;
	int         rc = BRQ_RELOAD_CREDS_FAILED;
	int         fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		return 1;
	}
	if (fd < 0 && errno == ELOOP) {
		say("%s/%s: a symbolic link, which systemd does not load: make it a regular file", dir, name);
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	if (fd < 0 || fstat(fd, &st) != 0) {
		say("%s/%s: cannot open: %s", dir, name, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		say("%s/%s: not a regular file: skipped, as systemd skips it", dir, name);
		rc = 1;
		goto out;
	}
	if (st.st_size > FILE_MAX) {
		say("%s/%s: %lld bytes: too large for a token", dir, name, (long long) st.st_size);
		rc = BRQ_RELOAD_CREDS_REFUSED;
		goto out;
	}
	out->name = strdup(name);
	out->data = malloc((size_t) st.st_size + 1); // + 1: an empty file is one malloc too
	if (out->name == NULL || out->data == NULL) {
		say("out of memory");
		goto out;
	}
	while (out->len < (size_t) st.st_size) { // a file growing meanwhile is cut at its stat size
		ssize_t n = read(fd, out->data + out->len, (size_t) st.st_size - out->len);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			say("%s/%s: cannot read: %s", dir, name,
			    n < 0 ? strerror(errno) : "shorter than its size");
			goto out;
		}
		out->len += (size_t) n;
	}
	rc = 0;
out:
	if (fd >= 0) {
		close(fd);
	}
	return rc;
}

// Wipes and frees one directory's files.
static void
cred_dir_fini(struct cred_dir *d)
{
	for (size_t i = 0; i < d->n; i++) {
		if (d->files[i].data != NULL) {
			sodium_memzero(d->files[i].data, d->files[i].len);
		}
		free(d->files[i].data);
		free(d->files[i].name);
	}
	free(d->files);
	d->files = NULL;
	d->n     = 0;
}

// Reads every file of the unit's directory credential uc into *d (which owns them on
// every path: cred_dir_fini). Returns 0, REFUSED or FAILED.
static int
read_dir(const struct job *j, const brq_unit_credential *uc, struct cred_dir *d)
{
	char           dir[PATH_MAX];
	int            rc = BRQ_RELOAD_CREDS_FAILED;
	struct dirent *de;

	d->uc = uc;
	snprintf(dir, sizeof(dir), "%s/%s", j->etc_dir, uc->source);
	DIR *dp = opendir(dir);
	if (dp == NULL) {
		say("%s: %s (the unit loads it with LoadCredential=%s:)", dir, strerror(errno), uc->id);
		return errno == ENOENT || errno == ENOTDIR ? BRQ_RELOAD_CREDS_REFUSED
							   : BRQ_RELOAD_CREDS_FAILED;
	}
	while ((errno = 0, de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.') { // hidden, "." and "..": systemd skips them too
			continue;
		}
		struct cred_file *grown = realloc(d->files, (d->n + 1) * sizeof(*grown));
		if (grown == NULL) {
			say("out of memory");
			goto out;
		}
		d->files = grown;
		memset(&d->files[d->n], 0, sizeof(d->files[d->n]));
		int one = read_one(dirfd(dp), dir, de->d_name, &d->files[d->n++]);
		if (one == 1) {
			d->n--; // nothing was kept
		} else if (one != 0) {
			rc = one;
			goto out;
		}
	}
	if (errno != 0) {
		say("%s: cannot list: %s", dir, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	closedir(dp);
	return rc;
}

// The service's user from here on, when run as root; otherwise the caller must be that
// user already. Returns 0 or REFUSED.
static int
become_service_user(const struct job *j)
{
	if (geteuid() == 0) {
		// Groups first: setresuid() takes away the right to change them.
		if (setgroups(0, NULL) != 0 || setresgid(j->gid, j->gid, j->gid) != 0 ||
		    setresuid(j->uid, j->uid, j->uid) != 0) {
			say("cannot become uid %u gid %u: %s", (unsigned) j->uid, (unsigned) j->gid,
			    strerror(errno));
			return BRQ_RELOAD_CREDS_REFUSED;
		}
		return 0;
	}
	if (geteuid() != j->uid) {
		say("process %d runs as uid %u: run this as root (the unit's ExecReload=+) or as that user",
		    (int) j->pid, (unsigned) j->uid);
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	return 0;
}

// Writes data into a new file name of dfd, mode 0400. Returns 0 or FAILED (said).
static int
write_one(int dfd, const char *where, const struct cred_file *f)
{
	size_t done = 0;
	int    fd   = openat(dfd, f->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (fd < 0) {
		say("%s/%s: cannot create: %s", where, f->name, strerror(errno));
		return BRQ_RELOAD_CREDS_FAILED;
	}
	while (done < f->len) {
		ssize_t n = write(fd, f->data + done, f->len - done);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			say("%s/%s: cannot write: %s", where, f->name, strerror(errno));
			close(fd);
			return BRQ_RELOAD_CREDS_FAILED;
		}
		done += (size_t) n;
	}
	if (close(fd) != 0) {
		say("%s/%s: cannot write: %s", where, f->name, strerror(errno));
		return BRQ_RELOAD_CREDS_FAILED;
	}
	return 0;
}

// Removes name (a file, or a directory and what it holds, depth levels down) from
// parent, never following a link. Returns 0, or -1 with errno set.
static int
remove_tree(int parent, const char *name, int depth)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) {
		return 0;
	}
	if (errno != EISDIR && errno != EPERM) { // a directory: EISDIR on Linux, EPERM in POSIX
		return -1;
	}
	int  fd = depth > 0 ? openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (dp == NULL) {
		if (fd >= 0) {
			close(fd);
		}
		return -1;
	}
	struct dirent *de;
	while ((de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			(void) remove_tree(dirfd(dp), de->d_name, depth - 1);
		}
	}
	closedir(dp);
	return unlinkat(parent, name, AT_REMOVEDIR);
}

// Creates the new copy, a fresh run_dir/credentials.new-XXXXXXXXXXXX holding every
// token file, as the service's user. Returns 0 or FAILED (said); j->tmp names the
// directory as soon as it exists, for the caller to remove on failure.
static int
write_copy(struct job *j)
{
	char where[PATH_MAX + 128];
	int  tfd = -1, rc = BRQ_RELOAD_CREDS_FAILED;

	for (int tries = 0; j->tmp[0] == '\0' && tries < 8; tries++) {
		unsigned char rnd[6];
		char          hex[2 * sizeof(rnd) + 1];
		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
		snprintf(j->tmp, sizeof(j->tmp), "%s.new-%s", BRQ_RELOAD_CREDS_NAME, hex);
		if (mkdirat(j->run_fd, j->tmp, 0700) != 0) {
			int e     = errno;
			j->tmp[0] = '\0';
			if (e != EEXIST) {
				say("%s: cannot create a directory: %s", j->run_dir, strerror(e));
				return BRQ_RELOAD_CREDS_FAILED;
			}
		}
	}
	if (j->tmp[0] == '\0' ||
	    (tfd = openat(j->run_fd, j->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		say("%s: cannot create a fresh directory: %s", j->run_dir, strerror(errno));
		return BRQ_RELOAD_CREDS_FAILED;
	}
	for (size_t k = 0; k < j->n_dirs; k++) {
		const struct cred_dir *d = &j->dirs[k];
		snprintf(where, sizeof(where), "%s/%s/%s", j->run_dir, j->tmp, d->uc->source);
		int sfd = -1;
		if (mkdirat(tfd, d->uc->source, 0700) != 0 ||
		    (sfd = openat(tfd, d->uc->source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			say("%s: cannot create: %s", where, strerror(errno));
			goto out;
		}
		for (size_t i = 0; i < d->n; i++) {
			if (write_one(sfd, where, &d->files[i]) != 0) {
				close(sfd);
				goto out;
			}
		}
		close(sfd);
	}
	rc = 0;
out:
	close(tfd);
	return rc;
}

// One problem of the check, with the copy's directory named as the unit's (the file
// the operator must fix).
static void
say_problem(const struct job *j, const char *line)
{
	char        copy[PATH_MAX + 80];
	const char *at;
	snprintf(copy, sizeof(copy), "%s/%s", j->run_dir, j->tmp);
	if ((at = strstr(line, copy)) != NULL) {
		say("%.*s%s%s", (int) (at - line), line, j->etc_dir, at + strlen(copy));
	} else {
		say("%s", line);
	}
}

// Checks the copy's token files as the gateway's reload will (auth.h: length, one role
// per token): what it would refuse is refused here. With no file at all the gateway's
// own lists decide (BROOQ_*_TOKEN_FILES): not checked. Returns 0, REFUSED or FAILED.
static int
check_copy(const struct job *j)
{
	size_t              total = 0, n[2] = {0, 0}; // worker, admin
	char              **paths[2] = {NULL, NULL};
	brq_auth            auth;
	brq_auth_set       *set = NULL;
	brq_config_problems problems;
	int                 rc = BRQ_RELOAD_CREDS_FAILED;

	brq_config_problems_init(&problems);
	for (size_t k = 0; k < j->n_dirs; k++) {
		total += j->dirs[k].n;
	}
	if (total == 0) {
		return 0;
	}
	if (brq_auth_open(&auth) != 0) {
		say("libsodium failed to initialise");
		return BRQ_RELOAD_CREDS_FAILED;
	}
	paths[0] = calloc(total, sizeof(char *));
	paths[1] = calloc(total, sizeof(char *));
	for (size_t k = 0; paths[0] != NULL && paths[1] != NULL && k < j->n_dirs; k++) {
		const struct cred_dir *d        = &j->dirs[k];
		int                    is_admin = strcmp(d->uc->id, "admin-token") == 0;
		for (size_t i = 0; i < d->n; i++) {
			if (asprintf(&paths[is_admin][n[is_admin]], "%s/%s/%s/%s", j->run_dir, j->tmp,
				     d->uc->source, d->files[i].name) < 0) {
				say("out of memory");
				goto out;
			}
			n[is_admin]++;
		}
	}
	int prc = paths[0] == NULL || paths[1] == NULL
		? BRQ_ENOMEM
		: brq_auth_prepare(&auth, (const char *const *) paths[0], n[0],
				   (const char *const *) paths[1], n[1], &set, &problems);
	for (size_t i = 0; i < problems.count; i++) {
		say_problem(j, problems.lines[i]);
	}
	rc = prc == 0 ? 0 : prc == BRQ_EINVAL ? BRQ_RELOAD_CREDS_REFUSED : BRQ_RELOAD_CREDS_FAILED;
out:
	for (int r = 0; r < 2; r++) {
		for (size_t i = 0; paths[r] != NULL && i < n[r]; i++) {
			free(paths[r][i]);
		}
		free(paths[r]);
	}
	brq_auth_set_free(set);
	brq_auth_fini(&auth);
	brq_config_problems_fini(&problems);
	return rc;
}

// Puts the new copy (j->tmp) in place of run_dir/credentials and removes the previous
// one. Returns 0 (j->tmp then "") or FAILED (said; the previous copy stays).
static int
swap_in(struct job *j)
{
	const char *name = BRQ_RELOAD_CREDS_NAME;
	char        old[sizeof(j->tmp)];

	// One step: the old copy takes the new one's name, which is removed below.
	if (renameat2(j->run_fd, j->tmp, j->run_fd, name, RENAME_EXCHANGE) == 0) {
		snprintf(old, sizeof(old), "%s", j->tmp);
	} else if (errno == ENOENT) { // the first copy
		if (renameat(j->run_fd, j->tmp, j->run_fd, name) != 0) {
			goto fail;
		}
		old[0] = '\0';
	} else if (errno == EINVAL || errno == ENOSYS) {
		// A file system without the exchange: two steps, between which a SIGHUP from
		// elsewhere would read $CREDENTIALS_DIRECTORY (the tokens of the start).
		snprintf(old, sizeof(old), "%s.old-%s", name, j->tmp + strlen(name) + strlen(".new-"));
		if (renameat(j->run_fd, name, j->run_fd, old) != 0) {
			goto fail;
		}
		if (renameat(j->run_fd, j->tmp, j->run_fd, name) != 0) {
			int e = errno;
			(void) renameat(j->run_fd, old, j->run_fd, name);
			errno = e;
			goto fail;
		}
	} else {
		goto fail;
	}
	j->tmp[0] = '\0';
	if (old[0] != '\0' && remove_tree(j->run_fd, old, 2) != 0) {
		say("%s/%s: the previous copy could not be removed: %s", j->run_dir, old, strerror(errno));
	}
	return 0;
fail:
	say("%s/%s: cannot put the new copy in place: %s", j->run_dir, name, strerror(errno));
	return BRQ_RELOAD_CREDS_FAILED;
}

// Reads the unit's directory credentials (as root) into j->dirs. Returns 0, REFUSED or
// FAILED.
static int
read_all(struct job *j)
{
	for (size_t i = 0; i < brq_unit_credentials_count && j->n_dirs < DIRS_MAX; i++) {
		if (!brq_unit_credentials[i].is_dir) {
			continue; // the DSN (and TLS files) apply at a restart: not copied
		}
		int rc = read_dir(j, &brq_unit_credentials[i], &j->dirs[j->n_dirs++]);
		if (rc != 0) {
			return rc;
		}
	}
	return 0;
}

// The success line: what was copied where, and whom it reloads.
static void
say_done(const struct job *j)
{
	char   counts[256] = "";
	size_t len         = 0;
	for (size_t k = 0; k < j->n_dirs && len < sizeof(counts); k++) {
		int w = snprintf(counts + len, sizeof(counts) - len, "%s%s/ %zu file%s", k > 0 ? ", " : "",
				 j->dirs[k].uc->source, j->dirs[k].n, j->dirs[k].n == 1 ? "" : "s");
		len += w > 0 ? (size_t) w : 0;
	}
	printf("brooq-gateway: --reload-credentials: %s (%s) copied to %s/%s; SIGHUP sent to %d\n",
	       j->etc_dir, counts, j->run_dir, BRQ_RELOAD_CREDS_NAME, (int) j->pid);
	fflush(stdout);
}

int
brq_reload_creds_main(const char *pid_arg, const char *etc_dir)
{
	struct job j = {.etc_dir = etc_dir != NULL ? etc_dir : BRQ_UNIT_CREDENTIALS_DIR, .run_fd = -1};
	int        rc;

	umask(0077);
	if ((rc = parse_pid(pid_arg, &j.pid)) != 0) {
		return rc;
	}
	if (runtime_path(j.run_dir, sizeof(j.run_dir), NULL) != 0) {
		say("RUNTIME_DIRECTORY is not set to an absolute path (systemd sets it for the unit's "
		    "RuntimeDirectory=): nowhere to copy to");
		return BRQ_RELOAD_CREDS_REFUSED;
	}
	if (sodium_init() < 0) {
		say("libsodium failed to initialise");
		return BRQ_RELOAD_CREDS_FAILED;
	}
	if ((rc = inspect_target(&j)) != 0 || (rc = read_all(&j)) != 0 ||
	    (rc = become_service_user(&j)) != 0) {
		goto out;
	}
	j.run_fd = open(j.run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j.run_fd < 0) {
		say("%s: %s", j.run_dir, strerror(errno));
		rc = BRQ_RELOAD_CREDS_FAILED;
		goto out;
	}
	if ((rc = write_copy(&j)) != 0 || (rc = check_copy(&j)) != 0 || (rc = swap_in(&j)) != 0) {
		goto out;
	}
	if (kill(j.pid, SIGHUP) != 0) {
		say("the copy is in place, but process %d could not be signalled: %s", (int) j.pid,
		    strerror(errno));
		rc = BRQ_RELOAD_CREDS_FAILED;
		goto out;
	}
	say_done(&j);
out:
	if (j.tmp[0] != '\0' && remove_tree(j.run_fd, j.tmp, 2) != 0) {
		say("%s/%s: could not be removed: %s", j.run_dir, j.tmp, strerror(errno));
	}
	if (j.run_fd >= 0) {
		close(j.run_fd);
	}
	for (size_t k = 0; k < j.n_dirs; k++) {
		cred_dir_fini(&j.dirs[k]);
	}
	return rc;
}
