/* SPDX-License-Identifier: MIT */
/* Goose-compatible migration runner: applies migrations/ and records them in goose_db_version. */
#include "migrate.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "brq_units.h"
#include "fmt.h"

/* Serialises concurrent migrators (two deploys at once) on one database. */
#define MIGRATE_LOCK_KEY "7264918370145538817"

typedef struct {
	char **v;
	int    n;
	int    cap;
} strlist;

static int
strlist_push(strlist *l, char *s)
{
	if (l->n == l->cap) {
		int    cap = l->cap ? l->cap * 2 : 8;
		char **v   = realloc(l->v, (size_t) cap * sizeof(*v));
		if (v == NULL)
			return BRQ_ENOMEM;
		l->v   = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

static void
strlist_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* True when `line` (without newline) is the goose annotation `what`. */
static bool
is_annotation(const char *line, size_t len, const char *what)
{
	const char *p   = line;
	const char *end = line + len;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	size_t n = strlen("-- +goose ");
	if ((size_t) (end - p) < n || strncmp(p, "-- +goose ", n) != 0)
		return false;
	p += n;
	size_t wl = strlen(what);
	if ((size_t) (end - p) < wl || strncasecmp(p, what, wl) != 0)
		return false;
	p += wl;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p == end;
}

/* True when the line, ignoring trailing blanks and a trailing "-- comment"
 * free zone, ends with ';'. Goose uses the same line-based rule. */
static bool
ends_statement(const char *line, size_t len)
{
	while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	return len > 0 && line[len - 1] == ';';
}

/* True when every line of s is blank or a "--" comment: nothing to execute. */
static bool
is_blank_or_comment(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
			i++;
		if (i == len)
			break;
		if (len - i < 2 || s[i] != '-' || s[i + 1] != '-')
			return false;
		while (i < len && s[i] != '\n')
			i++;
	}
	return true;
}

/* Appends line[0..n) and a newline to the growing statement *cur. 0 or BRQ_ENOMEM. */
static int
append_line(char **cur, size_t *len, size_t *cap, const char *line, size_t n)
{
	if (*len + n + 2 > *cap) {
		size_t c   = (*cap + n + 2) * 2;
		char  *buf = realloc(*cur, c);
		if (buf == NULL)
			return BRQ_ENOMEM;
		*cur = buf;
		*cap = c;
	}
	memcpy(*cur + *len, line, n);
	*len += n;
	(*cur)[(*len)++] = '\n';
	(*cur)[*len]     = '\0';
	return 0;
}

int
brq_migration_parse(const char *sql, brq_migration *m, char *err, size_t errlen)
{
	enum { NONE, UP, DOWN } section = NONE;
	strlist     up = {0}, down = {0};
	bool        in_block = false, seen_up = false;
	int         no_tx = 0, rv = BRQ_EINVAL;
	size_t      cur_cap = 0, cur_len = 0;
	char       *cur = NULL;
	const char *p   = sql;

	while (*p != '\0') {
		const char *nl  = strchr(p, '\n');
		size_t      len = nl ? (size_t) (nl - p) : strlen(p);

		if (is_annotation(p, len, "Up")) {
			section = UP;
			seen_up = true;
		} else if (is_annotation(p, len, "Down")) {
			section = DOWN;
		} else if (is_annotation(p, len, "NO TRANSACTION")) {
			no_tx = 1;
		} else if (is_annotation(p, len, "StatementBegin")) {
			in_block = true;
		} else if (is_annotation(p, len, "StatementEnd")) {
			in_block = false;
			goto flush;
		} else if (section != NONE) {
			if (append_line(&cur, &cur_len, &cur_cap, p, len) != 0)
				goto oom;
			if (!in_block && ends_statement(p, len))
				goto flush;
		}
		goto next;
	flush:
		if (cur != NULL && !is_blank_or_comment(cur, cur_len)) {
			if (strlist_push(section == UP ? &up : &down, cur) != 0)
				goto oom;
			cur = NULL;
		}
		free(cur);
		cur     = NULL;
		cur_len = cur_cap = 0;
	next:
		p += len;
		if (*p == '\n')
			p++;
	}
	if (in_block) {
		snprintf(err, errlen, "StatementBegin without StatementEnd");
		goto fail;
	}
	if (!seen_up) {
		snprintf(err, errlen, "no '-- +goose Up' annotation");
		goto fail;
	}
	if (cur != NULL && !is_blank_or_comment(cur, cur_len)) {
		snprintf(err, errlen, "statement without a terminating ';'");
		goto fail;
	}
	free(cur);
	m->up     = up.v;
	m->n_up   = up.n;
	m->down   = down.v;
	m->n_down = down.n;
	m->no_tx  = no_tx;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	rv = BRQ_ENOMEM;
fail:
	free(cur);
	strlist_free(up.v, up.n);
	strlist_free(down.v, down.n);
	return rv;
}

void
brq_migration_fini(brq_migration *m)
{
	if (m == NULL)
		return;
	free(m->name);
	strlist_free(m->up, m->n_up);
	strlist_free(m->down, m->n_down);
	memset(m, 0, sizeof(*m));
}

static char *
read_file(const char *path)
{
	FILE *f   = fopen(path, "rb");
	char *buf = NULL;
	long  n;
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	buf = malloc((size_t) n + 1);
	if (buf == NULL)
		goto out;
	if (fread(buf, 1, (size_t) n, f) != (size_t) n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
out:
	fclose(f);
	return buf;
}

static int
cmp_migration(const void *a, const void *b)
{
	const brq_migration *x = a, *y = b;
	return (x->version > y->version) - (x->version < y->version);
}

/* One run of brq_migrate_run: where its output goes and its last failure, which --json
 * prints as the error object (the same line went to stderr). */
typedef struct mig_run {
	FILE       *out;
	bool        json;
	const char *code; /* the failure's kind: "migration" (the files), "database"; NULL: none */
	char        msg[1024];
} mig_run;

/* Reports a failure: "migrate: TEXT" on stderr, and kept (without the trailing newline
 * libpq's messages have) for --json. */
static void __attribute__((format(printf, 3, 4))) fail(mig_run *r, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	size_t n = strlen(r->msg);
	while (n > 0 && (r->msg[n - 1] == '\n' || r->msg[n - 1] == ' '))
		r->msg[--n] = '\0';
	r->code = code;
	fprintf(stderr, "migrate: %s\n", r->msg);
}

/* Loads every NNNNN_name.sql in dir, sorted by version. Caller frees with
 * free_migrations(). Returns 0, or BRQ_EINVAL after reporting why (a directory or
 * file that cannot be read or used counts as bad input here). */
static int
load_migrations(mig_run *r, const char *dir, brq_migration **out, int *n_out)
{
	DIR           *d = opendir(dir);
	struct dirent *e;
	brq_migration *v = NULL;
	int            n = 0, cap = 0;

	if (d == NULL) {
		fail(r, "migration", "cannot open %s: %s", dir, strerror(errno));
		return BRQ_EINVAL;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char  *endp;
		char   err[256], path[4096];
		if (len < 5 || strcmp(e->d_name + len - 4, ".sql") != 0)
			continue;
		long long ver = strtoll(e->d_name, &endp, 10);
		if (endp == e->d_name || *endp != '_' || ver <= 0) {
			fail(r, "migration", "%s: name must be NNNNN_name.sql", e->d_name);
			goto fail;
		}
		if (n == cap) {
			cap               = cap ? cap * 2 : 16;
			brq_migration *nv = realloc(v, (size_t) cap * sizeof(*v));
			if (nv == NULL)
				goto fail;
			v = nv;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		char *sql = read_file(path);
		if (sql == NULL) {
			fail(r, "migration", "cannot read %s", path);
			goto fail;
		}
		memset(&v[n], 0, sizeof(v[n]));
		int rc = brq_migration_parse(sql, &v[n], err, sizeof(err));
		free(sql);
		if (rc != 0) {
			fail(r, "migration", "%s: %s", e->d_name, err);
			goto fail;
		}
		v[n].version = ver;
		v[n].name    = strdup(e->d_name);
		n++;
	}
	closedir(d);
	d = NULL;
	qsort(v, (size_t) n, sizeof(*v), cmp_migration);
	for (int i = 1; i < n; i++) {
		if (v[i].version == v[i - 1].version) {
			fail(r, "migration", "duplicate version %lld (%s, %s)", v[i].version, v[i - 1].name,
			     v[i].name);
			goto fail;
		}
	}
	*out   = v;
	*n_out = n;
	return 0;
fail:
	if (d != NULL)
		closedir(d);
	for (int i = 0; i < n; i++)
		brq_migration_fini(&v[i]);
	free(v);
	return BRQ_EINVAL;
}

static void
free_migrations(brq_migration *v, int n)
{
	for (int i = 0; i < n; i++)
		brq_migration_fini(&v[i]);
	free(v);
}

/* Runs one command; reports the server's message on failure. */
static bool
exec_ok(mig_run *r, PGconn *c, const char *sql, const char *what)
{
	PGresult *res = PQexec(c, sql);
	bool      ok  = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!ok)
		fail(r, "database", "%s: %s", what, PQerrorMessage(c));
	PQclear(res);
	return ok;
}

/* A migration's state in the database. */
typedef struct mig_state {
	bool    applied;
	bool    has_at; /* applied, and goose_db_version says when */
	int64_t at_ms;  /* when it was applied (unix ms) */
} mig_state;

/* Reads which versions are applied, and when: goose's rule is that the newest row for
 * a version decides. Returns a malloc'd array indexed like `v`, or NULL (reported).
 * goose_db_version.tstamp is a timestamp without time zone that PostgreSQL filled
 * with now() in the session's zone (goose and this runner alike leave it to its
 * default), so it is read back in the database's zone setting to make an instant. */
static mig_state *
applied_set(mig_run *r, PGconn *c, const brq_migration *v, int n)
{
	mig_state *set = calloc((size_t) n + 1, sizeof(*set));
	PGresult  *res;
	if (set == NULL) {
		fail(r, "database", "out of memory");
		return NULL;
	}
	res = PQexec(c,
		     "SELECT DISTINCT ON (version_id) version_id, is_applied,"
		     " round(extract(epoch FROM tstamp AT TIME ZONE current_setting('TimeZone')) * 1000)"
		     " FROM goose_db_version ORDER BY version_id, id DESC");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		fail(r, "database", "reading goose_db_version: %s", PQerrorMessage(c));
		PQclear(res);
		free(set);
		return NULL;
	}
	for (int row = 0; row < PQntuples(res); row++) {
		long long ver = strtoll(PQgetvalue(res, row, 0), NULL, 10);
		bool      on  = PQgetvalue(res, row, 1)[0] == 't';
		for (int i = 0; i < n; i++) {
			if (v[i].version != ver)
				continue;
			set[i].applied = on;
			set[i].has_at  = on && !PQgetisnull(res, row, 2);
			set[i].at_ms   = set[i].has_at ? strtoll(PQgetvalue(res, row, 2), NULL, 10) : 0;
		}
	}
	PQclear(res);
	return set;
}

/* Applies (up) or rolls back (down) one migration and records it, in one
 * transaction unless the file says NO TRANSACTION. */
static bool
apply_one(mig_run *r, PGconn *c, const brq_migration *m, bool up)
{
	char   rec[128];
	char **stmts = up ? m->up : m->down;
	int    n     = up ? m->n_up : m->n_down;

	if (!m->no_tx && !exec_ok(r, c, "BEGIN", "begin"))
		return false;
	for (int i = 0; i < n; i++) {
		if (!exec_ok(r, c, stmts[i], m->name))
			goto fail;
	}
	if (up)
		snprintf(rec, sizeof(rec),
			 "INSERT INTO goose_db_version (version_id, is_applied) VALUES (%lld, true)",
			 m->version);
	else
		snprintf(rec, sizeof(rec), "DELETE FROM goose_db_version WHERE version_id = %lld",
			 m->version);
	if (!exec_ok(r, c, rec, "recording version"))
		goto fail;
	if (!m->no_tx && !exec_ok(r, c, "COMMIT", "commit"))
		goto fail;
	if (!r->json)
		fprintf(r->out, "%s %s\n", up ? "OK   " : "UNDO ", m->name);
	return true;
fail:
	if (!m->no_tx) {
		/* The statement's failure is the one --json reports, not the rollback's. */
		mig_run scratch = *r;
		(void) exec_ok(&scratch, c, "ROLLBACK", "rollback");
	}
	return false;
}

/* Connects, takes the migration lock and makes sure goose's own table exists (exactly
 * as goose creates it for PostgreSQL, so the real goose tool sees the same state,
 * seeded with version 0 as goose does). NULL on failure (reported). */
static PGconn *
connect_locked(mig_run *r, const char *dsn)
{
	PGconn *c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK) {
		fail(r, "database", "cannot connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, NULL, NULL);
	if (!exec_ok(r, c, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")", "lock") ||
	    !exec_ok(
		    r, c,
		    "DO $$ BEGIN IF to_regclass('goose_db_version') IS NULL THEN "
		    "EXECUTE $q$ CREATE TABLE goose_db_version (id serial NOT NULL, version_id bigint NOT "
		    "NULL,"
		    " is_applied boolean NOT NULL, tstamp timestamp NULL DEFAULT now(), PRIMARY KEY (id)) "
		    "$q$;"
		    " INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true); END IF; END $$",
		    "creating goose_db_version")) {
		PQfinish(c);
		return NULL;
	}
	return c;
}

/* up / up-to target: applies the pending migrations in order, noting each in done[]. */
static bool
migrate_up(mig_run *r, PGconn *c, const brq_migration *v, const mig_state *set, int n, bool to,
	   long long target, bool *done)
{
	int applied = 0;
	for (int i = 0; i < n; i++) {
		if (set[i].applied || (to && v[i].version > target))
			continue;
		if (!apply_one(r, c, &v[i], true))
			return false;
		done[i] = true;
		applied++;
	}
	if (applied == 0 && !r->json)
		fprintf(r->out, "no migrations to apply\n");
	return true;
}

/* down (the last one) / down-to target (every one above it), newest first, noting
 * each in done[]. */
static bool
migrate_down(mig_run *r, PGconn *c, const brq_migration *v, const mig_state *set, int n, bool to,
	     long long target, bool *done)
{
	int undone = 0;
	for (int i = n - 1; i >= 0; i--) {
		if (!set[i].applied || (to && v[i].version <= target))
			continue;
		if (!apply_one(r, c, &v[i], false))
			return false;
		done[i] = true;
		undone++;
		if (!to)
			break;
	}
	if (undone == 0 && !r->json)
		fprintf(r->out, "no migrations to roll back\n");
	return true;
}

/* The schema's version: the newest migration applied (0: none). */
static long long
current_version(const brq_migration *v, const mig_state *set, int n)
{
	long long cur = 0;
	for (int i = 0; i < n; i++)
		if (set[i].applied)
			cur = v[i].version;
	return cur;
}

/* --json: the migrations pick[i] names (all when pick is NULL), each as the JSON form's
 * migration (docs/protocol.md, "JSON form"): version, name, applied, applied_at_ms,
 * applied_at. Those of down and down-to newest first, as they ran. */
static void
json_migrations(FILE *f, const brq_migration *v, const mig_state *set, int n, const bool *pick,
		bool newest_first)
{
	char t[BRQ_TIME_TEXT_MAX];
	bool first = true;
	fputs("\"migrations\":[", f);
	for (int k = 0; k < n; k++) {
		int i = newest_first ? n - 1 - k : k;
		if (pick != NULL && !pick[i])
			continue;
		fprintf(f, "%s{\"version\":%lld,\"name\":", first ? "" : ",", v[i].version);
		brq_ctl_json_cstr(f, v[i].name);
		fprintf(f, ",\"applied\":%s", set[i].applied ? "true" : "false");
		if (set[i].has_at)
			fprintf(f, ",\"applied_at_ms\":%lld,\"applied_at\":\"%s\"}", (long long) set[i].at_ms,
				brq_fmt_time_ms(t, sizeof(t), set[i].at_ms));
		else
			fputs(",\"applied_at_ms\":null,\"applied_at\":null}", f);
		first = false;
	}
	fputs("]", f);
}

/* --json's one object: after a failure the error (code, msg, exit) with the migrations
 * changed before it; else the version and the migrations the command is about. set may
 * be NULL (nothing could be read). */
static void
json_result(mig_run *r, int rc, const char *cmd, const brq_migration *v, const mig_state *set, int n,
	    const bool *done)
{
	bool down = strncmp(cmd, "down", 4) == 0, all = strcmp(cmd, "status") == 0;
	bool list = set != NULL && strcmp(cmd, "version") != 0;
	fputc('{', r->out);
	if (rc != 0) {
		fprintf(r->out, "\"code\":\"%s\",\"msg\":", r->code != NULL ? r->code : "database");
		brq_ctl_json_cstr(r->out, r->msg[0] != '\0' ? r->msg : "failed");
		fprintf(r->out, ",\"exit\":%d", rc);
	} else {
		fprintf(r->out, "\"version\":%lld", current_version(v, set, n));
	}
	if (list) {
		fputc(',', r->out);
		json_migrations(r->out, v, set, n, all ? NULL : done, down);
	}
	fputs("}\n", r->out);
}

int
brq_migrate_run(const char *dsn, const char *dir, const char *cmd, long long target, FILE *out, bool json)
{
	brq_migration *v    = NULL;
	mig_state     *set  = NULL;
	bool          *done = NULL;
	int            n = 0, rc = 1;
	PGconn        *c = NULL;
	mig_run        r = {.out = out, .json = json};

	bool is_up = strcmp(cmd, "up") == 0, is_up_to = strcmp(cmd, "up-to") == 0;
	bool is_down = strcmp(cmd, "down") == 0, is_down_to = strcmp(cmd, "down-to") == 0;
	bool is_status = strcmp(cmd, "status") == 0, is_version = strcmp(cmd, "version") == 0;
	if (!(is_up || is_up_to || is_down || is_down_to || is_status || is_version)) {
		fprintf(stderr,
			"migrate: unknown command '%s' (up, up-to N, down, down-to N, status, version)\n",
			cmd);
		if (json)
			fprintf(out,
				"{\"code\":\"usage\",\"msg\":\"unknown command (up, up-to N, down, "
				"down-to N, status, version)\",\"exit\":2}\n");
		return 2;
	}
	if (load_migrations(&r, dir, &v, &n) != 0)
		goto out;
	if ((done = calloc((size_t) n + 1, sizeof(*done))) == NULL) {
		fail(&r, "database", "out of memory");
		goto out;
	}
	if ((c = connect_locked(&r, dsn)) == NULL || (set = applied_set(&r, c, v, n)) == NULL)
		goto out;

	if (is_status || is_version) {
		for (int i = 0; is_status && !json && i < n; i++)
			fprintf(out, "%-8s %s\n", set[i].applied ? "applied" : "pending", v[i].name);
		if (!json)
			fprintf(out, "version %lld\n", current_version(v, set, n));
		rc = 0;
	} else if (is_up || is_up_to) {
		rc = migrate_up(&r, c, v, set, n, is_up_to, target, done) ? 0 : 1;
	} else {
		rc = migrate_down(&r, c, v, set, n, is_down_to, target, done) ? 0 : 1;
	}
	if (json && !is_status && !is_version) {
		/* Read back what changed, with the database's own times; after a failure,
		 * keeping that failure's message. */
		mig_run    scratch = r;
		mig_state *now     = applied_set(rc == 0 ? &r : &scratch, c, v, n);
		free(set);
		set = now;
		rc  = now != NULL ? rc : 1;
	}
out:
	if (json)
		json_result(&r, rc, cmd, v, set, n, done);
	PQfinish(c);
	free(set);
	free(done);
	free_migrations(v, n);
	return rc;
}
