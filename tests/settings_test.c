// SPDX-License-Identifier: MIT
// Tests for the settings table (gateway/config/config_settings.def): every row against
// reload's decision, the parsers' bounds, the sources that read BROOQ_* names, the env
// example and the man page.
#include <criterion/criterion.h>

#include <dirent.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "brq_units.h"
#include "config/config.h"
#include "config/config_settings.h"
#include "reload.h"

struct kv {
	const char *k, *v;
};

static char tmp[64];    // this test's directory
static char certs[128]; // tmp/certs: tests/support/tls_certs.sh's files

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
run(const char *fmt, ...)
{
	char    cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

// The checkout: ctest sets BROOQ_SOURCE_DIR; otherwise the parent of this file's folder.
static const char *
source_dir(void)
{
	static char dir[512];
	const char *env = getenv("BROOQ_SOURCE_DIR");
	if (env != NULL) {
		return env;
	}
	snprintf(dir, sizeof(dir), "%s", __FILE__);
	*strrchr(dir, '/') = '\0';
	*strrchr(dir, '/') = '\0';
	return dir;
}

static void
setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/brq_settings_test_XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(certs, sizeof(certs), "%s/certs", tmp);
	run("%s/tests/support/tls_certs.sh %s", source_dir(), certs);
	// Second paths with the same content: a setting that changes its path alone.
	run("cd %s && cp -p server.pem server-copy.pem && cp -p server.key server-copy.key && "
	    "cp -p ca.pem ca-copy.pem && printf 'host=/nonexistent user=brooq\\n' >dsn1 && cp dsn1 dsn2",
	    certs);
}

static void
teardown(void)
{
	run("rm -rf '%s'", tmp);
}

TestSuite(settings, .init = setup, .fini = teardown);

// --- loading ----------------------------------------------------------------------------

// A value "@/NAME" is the file NAME in the certificates' directory.
static const char *
tab_lookup(const char *name, void *arg)
{
	static char path[256];
	for (const struct kv *t = arg; t->k != NULL; t++) {
		if (strcmp(t->k, name) != 0) {
			continue;
		}
		if (strncmp(t->v, "@/", 2) == 0) {
			snprintf(path, sizeof(path), "%s/%s", certs, t->v + 2);
			return path;
		}
		return t->v;
	}
	return NULL;
}

// Loads the NULL-terminated lists in order (an earlier list wins) on top of a DSN and a
// token file. Returns the result; *cfg owns the configuration when it is 0.
static int
load(brq_config *cfg, const struct kv *first, const struct kv *second)
{
	struct kv           tab[32];
	size_t              n = 0;
	brq_config_problems probs;
	for (size_t i = 0; first != NULL && first[i].k != NULL; i++) {
		tab[n++] = first[i];
	}
	for (size_t i = 0; second != NULL && second[i].k != NULL; i++) {
		tab[n++] = second[i];
	}
	tab[n++] = (struct kv) {"BROOQ_DSN", "host=/nonexistent user=brooq"};
	tab[n++] = (struct kv) {"BROOQ_WORKER_TOKEN_FILES", "/run/brooq/worker-token"};
	tab[n]   = (struct kv) {NULL, NULL};
	int rc   = brq_config_load(cfg, NULL, tab_lookup, tab, &probs);
	for (size_t i = 0; i < probs.count; i++) {
		cr_log_info("problem: %s", probs.lines[i]);
	}
	brq_config_problems_fini(&probs);
	return rc;
}

static bool
is_listed(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], name) == 0) {
			return true;
		}
	}
	return false;
}

// --- every row against reload ------------------------------------------------------------

#define TLS_LISTEN                                         \
	{                                                  \
		"BROOQ_LISTEN", "tls+tcp://127.0.0.1:7443" \
	}
#define TLS_FILES                                    \
	{"BROOQ_TLS_CERT_FILE", "@/server.pem"},     \
	{                                            \
		"BROOQ_TLS_KEY_FILE", "@/server.key" \
	}

// Rows whose change needs more than the row's example on top of the defaults: `both`
// goes into both configurations, `after` (instead of the example) into the second
// alone; `also` names the other settings the change moves (a derived default, a
// companion without which the new value is refused).
static const struct row_case {
	const char *name;
	struct kv   both[6];
	struct kv   after[3];
	const char *also[2];
} cases[] = {
	{"BROOQ_DSN_FILE", {{"BROOQ_DSN", ""}, {"BROOQ_DSN_FILE", "@/dsn1"}}, {{"BROOQ_DSN_FILE", "@/dsn2"}}},
	{"BROOQ_TLS_CERT_FILE", {TLS_LISTEN, TLS_FILES}, {{"BROOQ_TLS_CERT_FILE", "@/server-copy.pem"}}},
	{"BROOQ_TLS_KEY_FILE", {TLS_LISTEN, TLS_FILES}, {{"BROOQ_TLS_KEY_FILE", "@/server-copy.key"}}},
	{"BROOQ_TLS_CA_FILE",
	 {TLS_LISTEN, TLS_FILES, {"BROOQ_TLS_CLIENT_AUTH", "required"}, {"BROOQ_TLS_CA_FILE", "@/ca.pem"}},
	 {{"BROOQ_TLS_CA_FILE", "@/ca-copy.pem"}}},
	// required needs a CA and none refuses one: the CA goes with it.
	{"BROOQ_TLS_CLIENT_AUTH",
	 {TLS_LISTEN, TLS_FILES, {"BROOQ_TLS_CLIENT_AUTH", "required"}, {"BROOQ_TLS_CA_FILE", "@/ca.pem"}},
	 {{"BROOQ_TLS_CLIENT_AUTH", "none"}, {"BROOQ_TLS_CA_FILE", ""}},
	 {"BROOQ_TLS_CA_FILE"}},
	{"BROOQ_HTTP_TLS_CERT_FILE",
	 {{"BROOQ_HTTP_TLS_CERT_FILE", "@/server.pem"}, {"BROOQ_HTTP_TLS_KEY_FILE", "@/server.key"}},
	 {{"BROOQ_HTTP_TLS_CERT_FILE", "@/server-copy.pem"}}},
	{"BROOQ_HTTP_TLS_KEY_FILE",
	 {{"BROOQ_HTTP_TLS_CERT_FILE", "@/server.pem"}, {"BROOQ_HTTP_TLS_KEY_FILE", "@/server.key"}},
	 {{"BROOQ_HTTP_TLS_KEY_FILE", "@/server-copy.key"}}},
	// The reaper's default period follows the shortest lease.
	{"BROOQ_LEASE", {{NULL, NULL}}, {{"BROOQ_LEASE", "30s"}}, {"BROOQ_REAPER_INTERVAL"}},
};

static const struct row_case *
find_case(const char *name)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i].name, name) == 0) {
			return &cases[i];
		}
	}
	return NULL;
}

// Every name in d is the row's or one of c's `also`; the row's is where its RELOAD says.
static void
assert_decision(const brq_setting *s, const struct row_case *c, const brq_reload_diff *d)
{
	bool is_applied = s->reload == BRQ_RELOAD_APPLIED;
	cr_assert(is_listed(is_applied ? d->applied : d->restart, is_applied ? d->n_applied : d->n_restart,
			    s->name),
		  "%s changed: reload neither applies it nor says it needs a restart", s->name);
	cr_assert(!is_listed(is_applied ? d->restart : d->applied, is_applied ? d->n_restart : d->n_applied,
			     s->name),
		  "%s is both applied and needing a restart", s->name);
	for (size_t k = 0; k < d->n_applied + d->n_restart; k++) {
		const char *name = k < d->n_applied ? d->applied[k] : d->restart[k - d->n_applied];
		bool        ok   = strcmp(name, s->name) == 0 ||
			(c != NULL &&
			 ((c->also[0] != NULL && strcmp(name, c->also[0]) == 0) ||
			  (c->also[1] != NULL && strcmp(name, c->also[1]) == 0)));
		cr_assert(ok, "changing %s alone made reload name %s too", s->name, name);
	}
}

Test(settings, every_row_is_applied_or_needs_a_restart_when_it_changes)
{
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		const brq_setting     *s          = &brq_settings[i];
		const struct row_case *c          = find_case(s->name);
		struct kv              example[2] = {{s->name, s->example}, {NULL, NULL}};
		const struct kv       *after      = c != NULL ? c->after : example;
		brq_config             before, cur, again;
		brq_reload_diff        d;

		cr_assert_not_null(s->example, "%s: no example value", s->name);
		cr_assert_str_neq(s->example, s->dflt, "%s: the example is the default", s->name);
		cr_assert_eq(load(&before, c != NULL ? c->both : NULL, NULL), 0, "%s: before", s->name);
		cr_assert_eq(load(&cur, after, c != NULL ? c->both : NULL), 0, "%s: after", s->name);
		brq_reload_diff_of(&before, &cur, &d);
		assert_decision(s, c, &d);

		// The same settings loaded twice differ in nothing (no pointer compared as a value).
		cr_assert_eq(load(&again, after, c != NULL ? c->both : NULL), 0);
		brq_reload_diff_of(&cur, &again, &d);
		cr_assert_eq(d.n_applied + d.n_restart, 0, "%s: loaded twice, %s differs", s->name,
			     d.n_restart > 0 ? d.restart[0] : d.applied[0]);
		brq_config_fini(&before);
		brq_config_fini(&cur);
		brq_config_fini(&again);
	}
}

// The bug that made the table: a SIGHUP changing the probe's period applied nothing
// and said nothing.
Test(settings, a_new_selfprobe_interval_needs_a_restart)
{
	brq_config      before, cur;
	brq_reload_diff d;
	cr_assert_eq(load(&before, NULL, NULL), 0);
	cr_assert_eq(load(&cur, (const struct kv[]) {{"BROOQ_SELFPROBE_INTERVAL", "0"}, {NULL, NULL}}, NULL),
		     0);
	brq_reload_diff_of(&before, &cur, &d);
	cr_assert_eq(d.n_restart, 1);
	cr_assert_str_eq(d.restart[0], "BROOQ_SELFPROBE_INTERVAL");
	cr_assert_eq(d.n_applied, 0);
	brq_config_fini(&before);
	brq_config_fini(&cur);
}

// --- numbers: the parsers hold the rows' bounds and defaults ----------------------------

static bool
is_number(const brq_setting *s)
{
	return s->kind == BRQ_SK_U32 || s->kind == BRQ_SK_DURATION || s->kind == BRQ_SK_SIZE;
}

static const char *
fmt_value(const brq_setting *s, char *buf, size_t cap, uint64_t v)
{
	if (s->kind == BRQ_SK_DURATION) {
		return v == 0 ? "0" : brq_fmt_duration(buf, cap, v);
	}
	if (s->kind == BRQ_SK_SIZE) {
		return brq_fmt_size(buf, cap, v);
	}
	snprintf(buf, cap, "%llu", (unsigned long long) v);
	return buf;
}

static bool
parse_value(const brq_setting *s, const char *text, uint64_t *v)
{
	const char *why;
	switch (s->kind) {
	case BRQ_SK_DURATION: return brq_parse_duration_ms(text, v, &why) == 0;
	case BRQ_SK_SIZE: return brq_parse_size(text, v, &why) == 0;
	default: return brq_parse_u64(text, v, &why) == 0;
	}
}

// Loads the row set to v; returns whether a problem says it is out of the row's range.
static bool
is_refused(const brq_setting *s, uint64_t v)
{
	char                buf[64];
	struct kv           tab[] = {{s->name, fmt_value(s, buf, sizeof(buf), v)},
				     {"BROOQ_DSN", "host=/nonexistent"},
				     {"BROOQ_WORKER_TOKEN_FILES", "/run/w"},
				     {NULL, NULL}};
	brq_config          cfg;
	brq_config_problems probs;
	char                range[64], zero[64];
	bool                is_named = false;
	// "must be between A and B", or "must be 0 (none|off) or A..B"; not the problems of
	// two settings together ("must be at least BROOQ_BACKOFF_BASE").
	snprintf(range, sizeof(range), "%s: must be between ", s->name);
	snprintf(zero, sizeof(zero), "%s: must be 0 ", s->name);
	if (brq_config_load(&cfg, NULL, tab_lookup, tab, &probs) == 0) {
		brq_config_fini(&cfg);
	}
	for (size_t i = 0; i < probs.count; i++) {
		is_named = is_named || strncmp(probs.lines[i], range, strlen(range)) == 0 ||
			strncmp(probs.lines[i], zero, strlen(zero)) == 0;
	}
	brq_config_problems_fini(&probs);
	return is_named;
}

Test(settings, numbers_are_refused_just_outside_their_rows_bounds)
{
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		const brq_setting *s = &brq_settings[i];
		if (!is_number(s)) {
			continue;
		}
		cr_assert(!is_refused(s, s->max), "%s: its maximum is refused", s->name);
		cr_assert(is_refused(s, s->max + 1), "%s: max + 1 is accepted", s->name);
		cr_assert(s->min == 0 || !is_refused(s, s->min), "%s: its minimum is refused", s->name);
		cr_assert(s->min == 0 || is_refused(s, s->min - 1), "%s: min - 1 is accepted", s->name);
	}
}

// A numeric row read by the table alone documents exactly its bounds, and its default
// (when it is a number, not a rule) is brq_config_init_defaults()'s.
Test(settings, numeric_rows_document_their_bounds_and_defaults)
{
	brq_config cfg;
	size_t     n_defaults = 0;
	cr_assert_eq(brq_config_init_defaults(&cfg), 0);
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		const brq_setting *s = &brq_settings[i];
		char               a[32], b[32], want[80], got[32];
		if (!is_number(s) || s->parser != NULL) {
			continue;
		}
		// "A..B", perhaps followed by ", <= OTHER" or " (...)"; A and B in any unit.
		uint64_t lo = 0, hi = 0;
		snprintf(want, sizeof(want), "%.*s", (int) strcspn(s->bounds, ", "), s->bounds);
		char *dots = strstr(want, "..");
		cr_assert_not_null(dots, "%s: bounds \"%s\"", s->name, s->bounds);
		*dots = '\0';
		cr_assert(parse_value(s, want, &lo) && parse_value(s, dots + 2, &hi), "%s: bounds \"%s\"",
			  s->name, s->bounds);
		cr_assert(lo == s->min && hi == s->max, "%s: bounds \"%s\", table says %s..%s", s->name,
			  s->bounds, fmt_value(s, a, sizeof(a), s->min), fmt_value(s, b, sizeof(b), s->max));
		if (strchr(s->dflt, '(') != NULL) {
			continue; // a rule (the reaper's period follows the leases)
		}
		const char *field = (const char *) &cfg + s->offset;
		uint64_t    v     = 0;
		if (s->kind == BRQ_SK_U32) {
			v = *(const uint32_t *) field;
		} else {
			v = *(const uint64_t *) field;
		}
		uint64_t dflt;
		cr_assert(parse_value(s, s->dflt, &dflt), "%s: default \"%s\"", s->name, s->dflt);
		cr_assert_eq(v, dflt, "%s: default %s, the table says %s", s->name,
			     fmt_value(s, got, sizeof(got), v), s->dflt);
		n_defaults++;
	}
	cr_assert_geq(n_defaults, 15);
	brq_config_fini(&cfg);
}

// --- the table against the sources and the documents ------------------------------------

// Reads a whole file (NUL-terminated, malloc'd) or fails the test.
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	cr_assert_geq(n, 0);
	rewind(f);
	char *buf = malloc((size_t) n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t) n, f), (size_t) n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

// The string literals of a C file, each on its own line; comments and code dropped.
static char *
c_literals(const char *text)
{
	size_t n   = strlen(text);
	char  *out = malloc(n + 2), *o = out;
	cr_assert_not_null(out);
	for (size_t i = 0; i < n;) {
		if (strncmp(text + i, "//", 2) == 0) {
			i += strcspn(text + i, "\n");
		} else if (strncmp(text + i, "/*", 2) == 0) {
			const char *end = strstr(text + i + 2, "*/");
			i               = end != NULL ? (size_t) (end - text) + 2 : n;
		} else if (text[i] == '\'' || text[i] == '"') {
			char q = text[i++];
			for (; i < n && text[i] != q && text[i] != '\n'; i++) {
				if (text[i] == '\\' && i + 1 < n) {
					i++;
					continue;
				}
				if (q == '"') {
					*o++ = text[i];
				}
			}
			i++;
			*o++ = '\n';
		} else {
			i++;
		}
	}
	*o = '\0';
	return out;
}

// Calls fn(name, where, arg) for every BROOQ_[A-Z0-9_]+ word of text that is not
// written between '@' (the man page's CMake substitutions, @BROOQ_FULL_DOCDIR@).
static void
each_name(const char *text, const char *where, void (*fn)(const char *, const char *, void *), void *arg)
{
	regex_t    re;
	regmatch_t m;
	cr_assert_eq(regcomp(&re, "BROOQ_[A-Z0-9_]+", REG_EXTENDED), 0);
	for (const char *p = text; regexec(&re, p, 1, &m, 0) == 0; p += m.rm_eo) {
		char name[96];
		int  len = (int) (m.rm_eo - m.rm_so);
		snprintf(name, sizeof(name), "%.*s", len, p + m.rm_so);
		if ((p + m.rm_so > text && p[m.rm_so - 1] == '@') || p[m.rm_eo] == '@') {
			continue;
		}
		fn(name, where, arg);
	}
	regfree(&re);
}

// A name in the gateway's code: a row, or (in config_settings.c, which lists them)
// another program's.
static void
check_code_name(const char *name, const char *where, void *arg)
{
	(void) arg;
	bool is_list = strstr(where, "gateway/config/config_settings.c") != NULL;
	bool is_prefix =
		is_list && name[strlen(name) - 1] == '_' && brq_setting_is_foreign(name, strlen(name) + 1);
	cr_assert(brq_setting_find(name, strlen(name)) != NULL ||
			  (is_list && (brq_setting_is_foreign(name, strlen(name)) || is_prefix)),
		  "%s: reads %s, which has no row in gateway/config/config_settings.def", where, name);
}

static size_t
scan_code(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "cannot open %s", dir);
	size_t         n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char        path[1024];
		struct stat st;
		size_t      len = strlen(de->d_name);
		if (de->d_name[0] == '.') {
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_eq(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			n += scan_code(path);
		} else if (len > 2 &&
			   (strcmp(de->d_name + len - 2, ".c") == 0 ||
			    strcmp(de->d_name + len - 2, ".h") == 0)) {
			char *text = slurp(path), *lits = c_literals(text);
			each_name(lits, path, check_code_name, NULL);
			free(lits);
			free(text);
			n++;
		}
	}
	closedir(d);
	return n;
}

// Every BROOQ_* name a string literal of the gateway holds has a row: a variable read
// without one would be called unknown by the loader, and a reload would never name it.
Test(settings, every_name_the_gateway_reads_has_a_row)
{
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/gateway", source_dir());
	cr_assert_geq(scan_code(dir), 50, "too few sources under %s", dir);
}

// Each row with its own parser names code that exists: "file function" with the file
// under gateway/config/ and the function defined there.
Test(settings, bespoke_rows_name_their_parser)
{
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		const brq_setting *s = &brq_settings[i];
		char               file[64], fn[64], path[700], def[80];
		if (s->parser == NULL) {
			cr_assert(is_number(s), "%s: only numbers are read by the table alone", s->name);
			continue;
		}
		cr_assert_eq(sscanf(s->parser, "%63s %63s", file, fn), 2, "%s: parser \"%s\"", s->name,
			     s->parser);
		snprintf(path, sizeof(path), "%s/gateway/config/%s", source_dir(), file);
		snprintf(def, sizeof(def), "\n%s(", fn);
		char *text = slurp(path);
		cr_assert_not_null(strstr(text, def), "%s: %s defines no %s()", s->name, file, fn);
		free(text);
	}
}

// What a document names: a bitmap over the rows, and the names without one.
struct doc_names {
	bool seen[BRQ_SETTINGS_COUNT];
};

static void
note_doc_name(const char *name, const char *where, void *arg)
{
	struct doc_names  *dn = arg;
	const brq_setting *s  = brq_setting_find(name, strlen(name));
	cr_assert_not_null(s, "%s names %s, which has no row in gateway/config/config_settings.def", where,
			   name);
	dn->seen[s - brq_settings] = true;
}

// The env example names only rows, and shows each as a (commented-out) assignment.
Test(settings, the_env_example_shows_every_row_and_nothing_else)
{
	char             path[600];
	struct doc_names dn = {{false}};
	snprintf(path, sizeof(path), "%s/deploy/brooq-gateway.env.example", source_dir());
	char *text = slurp(path);
	each_name(text, path, note_doc_name, &dn);
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		char line[80];
		snprintf(line, sizeof(line), "\n#%s=", brq_settings[i].name);
		cr_assert_not_null(strstr(text, line), "%s: no #%s= line", path, brq_settings[i].name);
	}
	free(text);
}

// The packaged settings file (deploy/brooq-gateway.env, the Debian conffile) is short:
// it holds an admin's changes, the settings themselves are the man page's. What it
// shows names rows only, each commented out at its documented default, and it sends
// the reader to brooq-gateway(8).
Test(settings, the_packaged_env_file_is_short_and_shows_only_rows_at_their_defaults)
{
	char             path[600];
	struct doc_names dn = {{false}};
	snprintf(path, sizeof(path), "%s/deploy/brooq-gateway.env", source_dir());
	char *text = slurp(path);
	cr_assert_lt(strlen(text), 1024, "%s: %zu bytes; the settings belong in brooq-gateway(8)", path,
		     strlen(text));
	cr_assert_not_null(strstr(text, "man 8 brooq-gateway"), "%s does not name the man page", path);
	each_name(text, path, note_doc_name, &dn);
	size_t n = 0;
	for (char *line = text; line != NULL && *line != '\0';
	     line       = strchr(line, '\n'), line += line != NULL) {
		if (strncmp(line, "#BROOQ_", 7) != 0 && strncmp(line, "BROOQ_", 6) != 0)
			continue;
		cr_assert_eq(line[0], '#', "%s: an active setting: %.40s", path, line);
		const char *eq = strchr(line, '=');
		const char *nl = strchr(line, '\n');
		cr_assert_not_null(eq);
		const brq_setting *st = brq_setting_find(line + 1, (size_t) (eq - line - 1));
		cr_assert_not_null(st);
		int len = (int) ((nl != NULL ? nl : eq + strlen(eq)) - eq - 1);
		cr_assert(strlen(st->dflt) == (size_t) len && strncmp(eq + 1, st->dflt, (size_t) len) == 0,
			  "%s: %s=%.*s, the default is %s", path, st->name, len, eq + 1, st->dflt);
		n++;
	}
	cr_assert_gt(n, 0);
	free(text);
}

// The man page names only rows, and its CONFIGURATION section has an entry (a line
// starting with "*NAME*") for each.
Test(settings, the_man_page_describes_every_row_and_nothing_else)
{
	char             path[600];
	struct doc_names dn = {{false}};
	snprintf(path, sizeof(path), "%s/docs/man/brooq-gateway.8.scd", source_dir());
	char *text = slurp(path);
	each_name(text, path, note_doc_name, &dn);
	char *start = strstr(text, "\n# CONFIGURATION\n");
	cr_assert_not_null(start);
	char *end = strstr(start + 1, "\n# ");
	cr_assert_not_null(end);
	*end = '\0';
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		char entry[80];
		bool is_found = false;
		snprintf(entry, sizeof(entry), "*%s*", brq_settings[i].name);
		for (char *line = start; line != NULL && !is_found; line = strchr(line + 1, '\n')) {
			char *eol = strchr(line + 1, '\n');
			if (line[1] != '*') {
				continue;
			}
			char *hit = strstr(line + 1, entry);
			is_found  = hit != NULL && (eol == NULL || hit < eol);
		}
		cr_assert(is_found, "%s: CONFIGURATION has no entry *%s*", path, brq_settings[i].name);
	}
	free(text);
}
