// SPDX-License-Identifier: MIT
// The store's schedule statements: due schedules locked and advanced, time zone conversions, upsert, list,
// remove.
#include "store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

// A NUL-terminated copy of s in the connection's arena; NULL when out of memory.
static const char *
cstr(brq_store_conn *c, brq_str s)
{
	char *p = brq_arena_alloc(&c->arena, (size_t) s.len + 1, 1);
	if (p != NULL && s.len > 0)
		memcpy(p, s.ptr, s.len);
	return p;
}

// The schedule of row `row` of a SCHED_COLS result into *(brq_schedule *) elem
// (strings borrow r).
static void
read_schedule(const PGresult *r, int row, void *elem)
{
	brq_schedule *s = elem;
	*s              = (brq_schedule) {
			     .name         = brq_store_str(r, row, SCHED_NAME),
			     .topic        = brq_store_str(r, row, SCHED_TOPIC),
			     .payload      = brq_store_str(r, row, SCHED_PAYLOAD),
			     .cron         = brq_store_str(r, row, SCHED_CRON),
			     .tz           = brq_store_str(r, row, SCHED_TZ),
			     .every_ms     = brq_store_is_null(r, row, SCHED_EVERY_MS)
					 ? 0
					 : (uint64_t) brq_store_int(r, row, SCHED_EVERY_MS),
			     .catch_up     = brq_store_bool(r, row, SCHED_CATCH_UP),
			     .catch_up_max = (uint32_t) brq_store_int(r, row, SCHED_CATCH_UP_MAX),
			     .max_attempts = (uint32_t) brq_store_int(r, row, SCHED_MAX_ATTEMPTS),
			     .enabled      = brq_store_bool(r, row, SCHED_ENABLED),
			     .next_slot_ms = brq_store_int(r, row, SCHED_NEXT_MS),
			     .last_slot_ms = brq_store_int(r, row, SCHED_LAST_MS),
			     .source       = brq_store_str(r, row, SCHED_SOURCE),
        };
	if (s->cron.len == 0)
		s->tz = (brq_str) {0}; // the column's default: an interval has no zone
}

int
brq_store_sched_due(brq_store_conn *c, bool *found, brq_store_due *out)
{
	*found = false;
	int rv = brq_store_begin(c);
	if (rv != 0)
		return rv;
	PGresult *r;
	rv = brq_store_run(c, BRQ_STMT_SCHED_DUE, NULL, NULL, NULL, SCHED__N, &r);
	if (rv != 0 || PQntuples(r) == 0) {
		brq_store_rollback(c);
		return rv;
	}
	read_schedule(r, 0, &out->s);
	out->now_ms = brq_store_int(r, 0, SCHED_NOW_MS);
	*found      = true;
	return 0;
}

int
brq_store_sched_advance(brq_store_conn *c, brq_str name, int64_t next_ms, int64_t last_ms)
{
	char        next[24], last[24];
	const char *v[3] = {cstr(c, name), next_ms >= 0 ? next : NULL, last_ms >= 0 ? last : NULL};
	snprintf(next, sizeof(next), "%" PRId64, next_ms);
	snprintf(last, sizeof(last), "%" PRId64, last_ms);
	PGresult *r;
	int       rv = v[0] == NULL ? brq_store_fail(c, BRQ_ENOMEM, "out of memory")
				    : brq_store_run(c, BRQ_STMT_SCHED_ADVANCE, v, NULL, NULL, 0, &r);
	if (rv != 0) {
		brq_store_rollback(c);
		return rv;
	}
	return brq_store_commit(c);
}

void
brq_store_sched_abort(brq_store_conn *c)
{
	brq_store_rollback(c);
}

int
brq_store_sched_disable(brq_store_conn *c, brq_str name)
{
	int rv = brq_store_begin(c);
	return rv != 0 ? rv : brq_store_sched_advance(c, name, -1, -1);
}

int
brq_store_sched_tz(brq_store_conn *c, brq_str tz, const int64_t *local, uint32_t n, int64_t *utc_ms,
		   bool *exists)
{
	brq_pgarr *a = &c->arr[0];
	brq_pgarr_begin(a, BRQ_OID_INT8);
	for (uint32_t i = 0; i < n; i++)
		brq_pgarr_int8(a, local[i]);
	const char *v[2];
	int         l[2], f[2] = {BRQ_BINARY, BRQ_TEXT};
	if (brq_store_param(a, v, l, 0) != 0 || (v[1] = cstr(c, tz)) == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	l[1] = 0;
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_SCHED_TZ, v, l, f, TZ__N, &r);
	if (rv != 0)
		return rv;
	if ((uint32_t) PQntuples(r) != n)
		return brq_store_fail(c, BRQ_EINTERNAL, "sched_tz: %d rows for %u times", PQntuples(r), n);
	for (uint32_t i = 0; i < n; i++) {
		utc_ms[i] = brq_store_int(r, (int) i, TZ_UTC_MS);
		exists[i] = brq_store_bool(r, (int) i, TZ_EXISTS);
	}
	return 0;
}

int
brq_store_sched_zone_now(brq_store_conn *c, brq_str tz, int64_t at_ms, int64_t *now_ms, int64_t *local_now,
			 int64_t *local_at)
{
	char        at[24];
	const char *v[2] = {cstr(c, tz), at};
	snprintf(at, sizeof(at), "%" PRId64, at_ms);
	if (v[0] == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_SCHED_ZONE_NOW, v, NULL, NULL, ZNOW__N, &r);
	if (rv == BRQ_EINVAL)
		return brq_store_fail(c, BRQ_EINVAL, "time zone \"%.64s\" is not known", v[0]);
	if (rv != 0)
		return rv;
	*now_ms    = brq_store_int(r, 0, ZNOW_MS);
	*local_now = brq_store_int(r, 0, ZNOW_LOCAL);
	*local_at  = brq_store_int(r, 0, ZNOW_LOCAL_AT);
	return 0;
}

int
brq_store_sched_upsert(brq_store_conn *c, const brq_schedule *s, int64_t next_ms, bool from_config,
		       bool *created, int64_t *owed)
{
	char every[24], cmax[16], attempts[16], next[24];
	snprintf(every, sizeof(every), "%" PRIu64, s->every_ms);
	snprintf(cmax, sizeof(cmax), "%" PRIu32, s->catch_up_max);
	snprintf(attempts, sizeof(attempts), "%" PRIu32, s->max_attempts);
	snprintf(next, sizeof(next), "%" PRId64, next_ms);
	const char *v[11] = {
		cstr(c, s->name),
		cstr(c, s->topic),
		s->payload.len > 0 ? cstr(c, s->payload) : "{}",
		s->cron.len > 0 ? cstr(c, s->cron) : NULL,
		s->tz.len > 0 ? cstr(c, s->tz) : "UTC",
		s->every_ms > 0 ? every : NULL,
		s->catch_up ? "catch_up" : "skip",
		cmax,
		s->max_attempts > 0 ? attempts : NULL,
		next,
		from_config ? "config" : "admin",
	};
	if (v[0] == NULL || v[1] == NULL || v[2] == NULL || (s->cron.len > 0 && v[3] == NULL) || v[4] == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_SCHED_UPSERT, v, NULL, NULL, 2, &r);
	if (rv != 0)
		return rv;
	if (PQntuples(r) != 1)
		return brq_store_fail(c, BRQ_EINTERNAL, "sched_upsert: %d rows", PQntuples(r));
	*created = brq_store_bool(r, 0, 0);
	if (owed != NULL)
		*owed = brq_store_int(r, 0, 1);
	return 0;
}

int
brq_store_sched_list(brq_store_conn *c, brq_schedule **out, uint32_t *n)
{
	return brq_store_run_all(c, BRQ_STMT_SCHED_LIST, SCHED__N, sizeof(**out), read_schedule,
				 "out of memory", out, n);
}

int
brq_store_sched_remove(brq_store_conn *c, brq_str name)
{
	const char *v[1] = {cstr(c, name)};
	if (v[0] == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_SCHED_REMOVE, v, NULL, NULL, 1, &r);
	if (rv != 0)
		return rv;
	if (PQntuples(r) == 0)
		return brq_store_fail(c, BRQ_ENOTFOUND, "schedule %.128s not found", v[0]);
	return 0;
}
