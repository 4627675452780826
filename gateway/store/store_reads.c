// SPDX-License-Identifier: MIT
// The store's reads: a job, stats, the topics of lost leases, the monitor's depth counts
// and table stats, a connection's ping.
#include "store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
read_topic(const PGresult *r, int row, void *topic)
{
	*(brq_str *) topic = brq_store_str(r, row, TOPIC_TOPIC);
}

int
brq_store_topics_column(brq_store_conn *c, const PGresult *r, brq_str **topics, uint32_t *n)
{
	*topics = brq_store_read_all(c, r, sizeof(**topics), read_topic, n);
	return *topics != NULL ? 0 : brq_store_fail(c, BRQ_ENOMEM, "out of memory");
}

int
brq_store_topics_of(brq_store_conn *c, const uint64_t *ids, uint32_t n, brq_str **topics, uint32_t *n_topics)
{
	brq_pgarr *a = &c->arr[0];
	brq_pgarr_begin(a, BRQ_OID_INT8);
	for (uint32_t i = 0; i < n; i++)
		brq_pgarr_int8(a, (int64_t) ids[i]);
	const char *v[1];
	int         l[1], f[1] = {BRQ_BINARY};
	PGresult   *r;
	if (brq_store_param(a, v, l, 0) != 0)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	int rv = brq_store_run(c, BRQ_STMT_TOPICS_OF, v, l, f, TOPIC__N, &r);
	return rv != 0 ? rv : brq_store_topics_column(c, r, topics, n_topics);
}

void
brq_store_job_row(const brq_config *cfg, const PGresult *r, int row, brq_job_info *out)
{
	*out = (brq_job_info) {
		.id                  = (uint64_t) brq_store_int(r, row, JOB_ID),
		.topic               = brq_store_str(r, row, JOB_TOPIC),
		.payload             = brq_store_str(r, row, JOB_PAYLOAD),
		.state               = brq_store_state(r, row, JOB_STATE),
		.attempts            = (uint32_t) brq_store_int(r, row, JOB_ATTEMPTS),
		.max_attempts        = (uint32_t) brq_store_int(r, row, JOB_MAX_ATTEMPTS),
		.available_at_ms     = brq_store_int(r, row, JOB_AVAILABLE_MS),
		.has_locked_by       = !brq_store_is_null(r, row, JOB_LOCKED_BY),
		.locked_by           = brq_store_str(r, row, JOB_LOCKED_BY),
		.has_locked_until_ms = !brq_store_is_null(r, row, JOB_LOCKED_UNTIL_MS),
		.locked_until_ms     = brq_store_int(r, row, JOB_LOCKED_UNTIL_MS),
		.has_last_error      = !brq_store_is_null(r, row, JOB_LAST_ERROR),
		.last_error          = brq_store_str(r, row, JOB_LAST_ERROR),
		.has_key             = !brq_store_is_null(r, row, JOB_KEY),
		.key                 = brq_store_str(r, row, JOB_KEY),
		.created_at_ms       = brq_store_int(r, row, JOB_CREATED_MS),
		.updated_at_ms       = brq_store_int(r, row, JOB_UPDATED_MS),
		.priority            = (uint32_t) brq_store_int(r, row, JOB_PRIORITY),
		.has_result          = !brq_store_is_null(r, row, JOB_RESULT),
		.result              = brq_store_str(r, row, JOB_RESULT),
		.has_retry_of        = !brq_store_is_null(r, row, JOB_RETRY_OF),
		.retry_of            = brq_store_is_null(r, row, JOB_RETRY_OF)
				   ? 0
				   : (uint64_t) brq_store_int(r, row, JOB_RETRY_OF),
		.has_claimed_at_ms   = !brq_store_is_null(r, row, JOB_CLAIMED_MS),
		.claimed_at_ms       = brq_store_int(r, row, JOB_CLAIMED_MS),
		.lost_leases         = (uint32_t) brq_store_int(r, row, JOB_LOST_LEASES),
	};
	// The running attempt's deadlines, from its claim and the topic's timeouts
	// (the topic is a NUL-terminated PQgetvalue).
	if (out->state == BRQ_STATE_PROCESSING && out->has_claimed_at_ms) {
		uint64_t at, mx;
		brq_config_topic_timeouts(cfg, out->topic.ptr, &at, &mx);
		out->attempt_deadline_ms       = at != 0 ? out->claimed_at_ms + (int64_t) at : 0;
		out->max_execution_deadline_ms = mx != 0 ? out->claimed_at_ms + (int64_t) mx : 0;
	}
}

// The job statement's JOB_ERRORS column of row 0 into out->errors (strings borrowed from
// r, the array in the connection's arena), has_errors set: the job reply always says.
static int
read_errors(brq_store_conn *c, const PGresult *r, brq_job_info *out)
{
	out->has_errors = true;
	if (brq_store_is_null(r, 0, JOB_ERRORS))
		return 0;
	brq_str s   = brq_store_str(r, 0, JOB_ERRORS);
	out->errors = brq_arena_alloc(&c->arena, BRQ_JOB_ERRORS_MAX, sizeof(*out->errors));
	if (out->errors == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "job: out of memory");
	// PQgetvalue's text ends in NUL, so strto* stop inside it.
	const char *p = s.ptr, *end = s.ptr + s.len;
	while (p < end && out->n_errors < BRQ_JOB_ERRORS_MAX) {
		char              *q;
		unsigned long long attempt = strtoull(p, &q, 10);
		if (q == p || *q != ' ')
			goto bad;
		long long at = strtoll(p = q + 1, &q, 10);
		if (q == p || *q != ' ')
			goto bad;
		unsigned long long len = strtoull(p = q + 1, &q, 10);
		if (q == p || *q != ':' || len > (unsigned long long) (end - q - 1))
			goto bad;
		out->errors[out->n_errors++] = (brq_attempt_error) {
			.attempt = (uint32_t) attempt,
			.at_ms   = (int64_t) at,
			.error   = {.ptr = q + 1, .len = (uint32_t) len},
		};
		p = q + 1 + len;
	}
	return 0;
bad:
	return brq_store_fail(c, BRQ_EINTERNAL, "job: errors column unreadable at byte %td", p - s.ptr);
}

int
brq_store_job(brq_store_conn *c, uint64_t id, brq_job_info *out)
{
	PGresult *r;
	int       rv = brq_store_run_by_id(c, BRQ_STMT_JOB, id, JOB__N + 1, &r);
	if (rv != 0)
		return rv;
	brq_store_job_row(c->st->cfg, r, 0, out);
	return read_errors(c, r, out);
}

static void
read_stats(const PGresult *r, int row, void *elem)
{
	// The count columns follow brq_state's order.
	_Static_assert(STATS_PENDING + BRQ_STATE_CANCELED == STATS_CANCELED, "stats columns in state order");
	brq_topic_stats *ts     = elem;
	ts->topic               = brq_store_str(r, row, STATS_TOPIC);
	ts->oldest_ready_age_ms = (uint64_t) brq_store_int(r, row, STATS_OLDEST_READY_MS);
	for (int k = 0; k < BRQ_STATE__COUNT; k++)
		ts->count[k] = (uint64_t) brq_store_int(r, row, STATS_PENDING + k);
}

int
brq_store_stats(brq_store_conn *c, brq_topic_stats **topics, uint32_t *n)
{
	return brq_store_run_all(c, BRQ_STMT_STATS, STATS__N, sizeof(**topics), read_stats,
				 "stats: out of memory", topics, n);
}

int
brq_store_depth(brq_store_conn *c, brq_store_depth_kind kind, double sample_pct, brq_store_depth_row **rows,
		size_t *n)
{
	char        pct[32];
	const char *v[1]    = {pct};
	bool        sampled = kind == BRQ_DEPTH_TERMINAL && sample_pct < 100;
	brq_stmt    st      = kind == BRQ_DEPTH_ACTIVE ? BRQ_STMT_DEPTH_ACTIVE
			: sampled                      ? BRQ_STMT_DEPTH_TERMINAL_SAMPLE
						       : BRQ_STMT_DEPTH_TERMINAL;
	double      scale   = sampled ? 100 / sample_pct : 1;
	PGresult   *r;
	snprintf(pct, sizeof(pct), "%.4f", sample_pct);
	int rv = brq_store_run(c, st, sampled ? v : NULL, NULL, NULL, DEPTH__N, &r);
	if (rv != 0)
		return rv;
	int count = PQntuples(r);
	*rows     = brq_arena_alloc(&c->arena, count > 0 ? (size_t) count : 1, sizeof(**rows));
	if (*rows == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "depth: out of memory");
	size_t k = 0;
	for (int row = 0; row < count; row++) {
		const char *state = PQgetvalue(r, row, DEPTH_STATE);
		int         s     = brq_state_lookup(state, (size_t) PQgetlength(r, row, DEPTH_STATE));
		if (s < 0)
			continue; // a state this build does not know: not ours to count
		uint64_t cnt = (uint64_t) brq_store_int(r, row, DEPTH_COUNT);
		(*rows)[k++] = (brq_store_depth_row) {
			.topic       = brq_store_str(r, row, DEPTH_TOPIC),
			.state       = (brq_state) s,
			.count       = scale == 1 ? cnt : (uint64_t) ((double) cnt * scale + 0.5),
			.ready_age_s = brq_store_double(r, row, DEPTH_AGE_S),
		};
	}
	*n = k;
	return 0;
}

int
brq_store_table_stats(brq_store_conn *c, brq_store_table_figures *out)
{
	PGresult *r;
	int       rv = brq_store_run(c, BRQ_STMT_TABLE_STATS, NULL, NULL, NULL, TABLE__N, &r);
	if (rv != 0)
		return rv;
	if (PQntuples(r) != 1)
		return brq_store_fail(c, BRQ_EINTERNAL, "table stats: %d rows", PQntuples(r));
	*out = (brq_store_table_figures) {
		.dead_tuples       = brq_store_int(r, 0, TABLE_DEAD_TUPLES),
		.live_tuples       = brq_store_int(r, 0, TABLE_LIVE_TUPLES),
		.bytes             = brq_store_int(r, 0, TABLE_BYTES),
		.index_bytes       = brq_store_int(r, 0, TABLE_INDEX_BYTES),
		.autovacuum_age_s  = brq_store_double(r, 0, TABLE_AUTOVACUUM_AGE_S),
		.vacuum_age_s      = brq_store_double(r, 0, TABLE_VACUUM_AGE_S),
		.autovacuums       = brq_store_int(r, 0, TABLE_AUTOVACUUMS),
		.oldest_xact_age_s = brq_store_double(r, 0, TABLE_OLDEST_XACT_S),
	};
	return 0;
}

int
brq_store_ping(brq_store_conn *c)
{
	PGresult *r  = brq_db_query(&c->db, "SELECT 1", 0);
	int       rv = brq_db_ok(r) ? 0 : brq_db_error(&c->db, r);
	PQclear(r);
	return rv;
}
