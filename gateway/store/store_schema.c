// SPDX-License-Identifier: MIT
// The schema check: the migrations applied to the database against the ones this build
// needs (generated from migrations/), at start and on every connection as it connects.
#include "store_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"
#include "store_schema_versions.h"

// goose's rule, as brooqctl's migrate.c applies it: the newest row of a version says
// whether it is applied. A plain query (nothing to prepare: it runs before the
// statements are prepared, which is the point), on the table brooqctl creates.
#define SCHEMA_SQL                                                                       \
	"SELECT version_id FROM (SELECT DISTINCT ON (version_id) version_id, is_applied" \
	" FROM goose_db_version ORDER BY version_id, id DESC) v WHERE is_applied"

static const int64_t known[] = {BRQ_SCHEMA_VERSIONS};
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

struct brq_schema_box {
	atomic_bool      is_claimed; // one connection writes `found`, the first to refuse
	atomic_bool      is_refused; // `found` is written (release): readers may read it
	brq_schema_state found;
};

int
brq_schema_box_new(brq_schema_box **out)
{
	*out = calloc(1, sizeof(**out));
	return *out != NULL ? 0 : BRQ_ENOMEM;
}

void
brq_schema_box_free(brq_schema_box *b)
{
	free(b);
}

const int64_t *
brq_store_schema_known(size_t *n)
{
	*n = N_KNOWN;
	return known;
}

static bool
is_applied(const int64_t *applied, size_t n, int64_t v)
{
	for (size_t i = 0; i < n; i++)
		if (applied[i] == v)
			return true;
	return false;
}

void
brq_store_schema_judge(const int64_t *applied, size_t n, brq_schema_state *out)
{
	memset(out, 0, sizeof(*out));
	out->need        = known[N_KNOWN - 1];
	bool has_unknown = false;
	for (size_t i = 0; i < n; i++) {
		if (applied[i] > out->have)
			out->have = applied[i];
		if (applied[i] > 0 && !is_applied(known, N_KNOWN, applied[i]))
			has_unknown = true;
	}
	// The oldest needed one that is missing: `brooqctl migrate up` applies every
	// missing one, not only those above the newest applied.
	for (size_t k = 0; k < N_KNOWN && out->missing == 0; k++)
		if (!is_applied(applied, n, known[k]))
			out->missing = known[k];
	out->verdict = out->missing != 0 ? BRQ_SCHEMA_TOO_OLD
		: has_unknown            ? BRQ_SCHEMA_NEWER
					 : BRQ_SCHEMA_OK;
}

// Reads the applied versions on db (connected) and judges them. Returns 0 and *out, or
// the failure of the query (db->errmsg says why) when the server did not answer it
// with the versions, an absent table (42P01: never migrated, version 0) or a refusal
// to read it (42501: UNREADABLE).
static int
read_schema(brq_db *db, brq_schema_state *out)
{
	int       rv = 0;
	PGresult *r  = brq_db_query(db, SCHEMA_SQL, brq_now_ms() + db->o.connect_timeout_ms);

	if (brq_db_ok(r) && PQnfields(r) == 1) {
		size_t   n       = (size_t) PQntuples(r);
		int64_t *applied = calloc(n + 1, sizeof(*applied));
		if (applied == NULL) {
			PQclear(r);
			snprintf(db->errmsg, sizeof(db->errmsg), "schema: out of memory");
			return BRQ_ENOMEM;
		}
		for (size_t i = 0; i < n; i++)
			applied[i] = strtoll(PQgetvalue(r, (int) i, 0), NULL, 10);
		brq_store_schema_judge(applied, n, out);
		free(applied);
	} else if (brq_db_ok(r)) {
		rv = BRQ_EINTERNAL;
		snprintf(db->errmsg, sizeof(db->errmsg), "schema: unexpected answer");
	} else {
		rv = brq_db_error(db, r);
		if (r != NULL && strcmp(db->sqlstate, "42P01") == 0) {
			brq_store_schema_judge(NULL, 0, out);
			rv = 0;
		} else if (r != NULL && strcmp(db->sqlstate, "42501") == 0) {
			brq_store_schema_judge(NULL, 0, out);
			out->verdict = BRQ_SCHEMA_UNREADABLE;
			snprintf(out->why, sizeof(out->why), "%s", db->errmsg);
			rv = 0;
		}
	}
	PQclear(r);
	return rv;
}

static bool
is_refusal(const brq_schema_state *s)
{
	return s->verdict == BRQ_SCHEMA_TOO_OLD || s->verdict == BRQ_SCHEMA_UNREADABLE;
}

int
brq_store_schema_on_connect(brq_db *db, void *arg)
{
	const brq_store *st = arg;
	brq_schema_box  *b  = st->schema;
	brq_schema_state s;

	int rv = read_schema(db, &s);
	if (rv != 0)
		return rv;
	if (!is_refusal(&s))
		return 0;
	// The first connection to refuse records what it found, for the one log line the
	// gateway writes before it stops (main.c).
	bool expected = false;
	if (atomic_compare_exchange_strong(&b->is_claimed, &expected, true)) {
		b->found = s;
		atomic_store_explicit(&b->is_refused, true, memory_order_release);
	}
	if (s.verdict == BRQ_SCHEMA_UNREADABLE)
		snprintf(db->errmsg, sizeof(db->errmsg), "schema unreadable: %.200s", s.why);
	else
		snprintf(db->errmsg, sizeof(db->errmsg), "schema too old: have %lld, need %lld",
			 (long long) s.have, (long long) s.need);
	return BRQ_EUNAVAIL;
}

bool
brq_store_schema_refused(const brq_store *st, brq_schema_state *out)
{
	if (!atomic_load_explicit(&st->schema->is_refused, memory_order_acquire))
		return false;
	if (out != NULL)
		*out = st->schema->found;
	return true;
}

int
brq_store_schema_check(const brq_store *st, brq_schema_state *out, char *err, size_t errlen)
{
	brq_db            db;
	const brq_db_opts o = {.name = "schema", .app_name = "brooq-gateway"};

	brq_db_init(&db, st->cfg->dsn, &o);
	int rv = brq_db_ready(&db) ? read_schema(&db, out) : BRQ_EUNAVAIL;
	if (rv != 0) {
		snprintf(err, errlen, "%s", db.errmsg[0] != '\0' ? db.errmsg : "no connection");
		rv = BRQ_EUNAVAIL;
	}
	brq_db_fini(&db);
	return rv;
}
