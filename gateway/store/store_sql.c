// SPDX-License-Identifier: MIT
// The store's statement texts, built once at start-up from the configuration.
//
// Per-topic overrides (lease, backoff) are compiled into the text as CASE expressions:
// topics are validated [a-z0-9._-] names, so they can be inlined safely, and the hot
// path then sends no extra parameters for them.
#define _GNU_SOURCE // open_memstream
#include "store_sql.h"

#include "store.h" // BRQ_STORE_CANCEL_CHANNEL
#include "store_sql_console.h"
#include "store_sql_sched.h"
#include "store_sql_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const enq_cols[]     = {ENQ_COLS(BRQ_COL_EXPR)};
static const char *const lookup_cols[]  = {LOOKUP_COLS(BRQ_COL_EXPR)};
static const char *const claim_cols[]   = {CLAIM_COLS(BRQ_COL_EXPR)};
static const char *const hb_cols[]      = {HB_COLS(BRQ_COL_EXPR)};
static const char *const settle_cols[]  = {SETTLE_COLS(BRQ_COL_EXPR)};
static const char *const unclaim_cols[] = {UNCLAIM_COLS(BRQ_COL_EXPR)};
static const char *const topic_cols[]   = {TOPIC_COLS(BRQ_COL_EXPR)};
static const char *const reap_cols[]    = {REAP_COLS(BRQ_COL_EXPR)};
static const char *const cancel_cols[]  = {CANCEL_COLS(BRQ_COL_EXPR)};
static const char *const job_cols[]     = {JOB_COLS(BRQ_COL_EXPR)};
static const char *const stats_cols[]   = {STATS_COLS(BRQ_COL_EXPR)};
static const char *const depth_cols[]   = {DEPTH_COLS(BRQ_COL_EXPR)};
static const char *const table_cols[]   = {TABLE_COLS(BRQ_COL_EXPR)};
static const char *const policy_cols[]  = {POLICY_COLS(BRQ_COL_EXPR)};
static const char *const lost_cols[]    = {LOST_COLS(BRQ_COL_EXPR)};

static const char *const names[BRQ_STMT__COUNT] = {
	[BRQ_STMT_ENQUEUE]               = "brq_enqueue",
	[BRQ_STMT_ENQUEUE_LOOKUP]        = "brq_enqueue_lookup",
	[BRQ_STMT_CLAIM]                 = "brq_claim",
	[BRQ_STMT_HEARTBEAT]             = "brq_heartbeat",
	[BRQ_STMT_SETTLE]                = "brq_settle",
	[BRQ_STMT_SETTLE_AT]             = "brq_settle_at",
	[BRQ_STMT_UNCLAIM]               = "brq_unclaim",
	[BRQ_STMT_TOPICS_OF]             = "brq_topics_of",
	[BRQ_STMT_CANCEL]                = "brq_cancel",
	[BRQ_STMT_JOB]                   = "brq_job",
	[BRQ_STMT_STATS]                 = "brq_stats",
	[BRQ_STMT_REAP]                  = "brq_reap",
	[BRQ_STMT_RETENTION]             = "brq_retention",
	[BRQ_STMT_DEPTH_ACTIVE]          = "brq_depth_active",
	[BRQ_STMT_DEPTH_TERMINAL]        = "brq_depth_terminal",
	[BRQ_STMT_DEPTH_TERMINAL_SAMPLE] = "brq_depth_terminal_sample",
	[BRQ_STMT_TABLE_STATS]           = "brq_table_stats",
	[BRQ_STMT_CLAIM_POLICY]          = "brq_claim_policy",
	[BRQ_STMT_CLAIM_MULTI]           = "brq_claim_multi",
	[BRQ_STMT_POLICY_LOCK]           = "brq_policy_lock",
	[BRQ_STMT_POLICY_TOPICS]         = "brq_policy_topics",
	[BRQ_STMT_POLICY_SET]            = "brq_policy_set",
	[BRQ_STMT_POLICY_PRUNE]          = "brq_policy_prune",
	[BRQ_STMT_POLICY_LIST]           = "brq_policy_list",
	[BRQ_STMT_LIST_ALL]              = "brq_list_all",
	[BRQ_STMT_LIST_STATE]            = "brq_list_state",
	[BRQ_STMT_LIST_TOPIC]            = "brq_list_topic",
	[BRQ_STMT_LIST_KEY]              = "brq_list_key",
	[BRQ_STMT_RETRY_ONE]             = "brq_retry_one",
	[BRQ_STMT_RETRY_BULK]            = "brq_retry_bulk",
	[BRQ_STMT_DELETE]                = "brq_delete",
	[BRQ_STMT_LOST_OF]               = "brq_lost_of",
	[BRQ_STMT_SCHED_DUE]             = "brq_sched_due",
	[BRQ_STMT_SCHED_TZ]              = "brq_sched_tz",
	[BRQ_STMT_SCHED_ZONE_NOW]        = "brq_sched_zone_now",
	[BRQ_STMT_SCHED_ADVANCE]         = "brq_sched_advance",
	[BRQ_STMT_SCHED_UPSERT]          = "brq_sched_upsert",
	[BRQ_STMT_SCHED_LIST]            = "brq_sched_list",
	[BRQ_STMT_SCHED_REMOVE]          = "brq_sched_remove",
	[BRQ_STMT_HISTORY_ADD]           = "brq_history_add",
	[BRQ_STMT_HISTORY_DEPTH]         = "brq_history_depth",
	[BRQ_STMT_HISTORY_PRUNE]         = "brq_history_prune",
	[BRQ_STMT_HISTORY_READ]          = "brq_history_read",
	[BRQ_STMT_WORKERS]               = "brq_workers",
	[BRQ_STMT_WORKER_JOBS]           = "brq_worker_jobs",
	[BRQ_STMT_SPAN_MAP]              = "brq_span_map",
	[BRQ_STMT_SPAN_PRUNE]            = "brq_span_prune",
	[BRQ_STMT_RETENTION_LAG]         = "brq_retention_lag",
};

static const int nparams[BRQ_STMT__COUNT] = {
	[BRQ_STMT_ENQUEUE] = 7,        [BRQ_STMT_ENQUEUE_LOOKUP] = 2,
	[BRQ_STMT_CLAIM] = 5,          [BRQ_STMT_HEARTBEAT] = 3,
	[BRQ_STMT_SETTLE] = 6,         [BRQ_STMT_SETTLE_AT] = 7,
	[BRQ_STMT_UNCLAIM] = 2,        [BRQ_STMT_TOPICS_OF] = 1,
	[BRQ_STMT_CANCEL] = 1,         [BRQ_STMT_JOB] = 1,
	[BRQ_STMT_STATS] = 0,          [BRQ_STMT_REAP] = 1,
	[BRQ_STMT_RETENTION] = 2,      [BRQ_STMT_DEPTH_ACTIVE] = 0,
	[BRQ_STMT_DEPTH_TERMINAL] = 0, [BRQ_STMT_DEPTH_TERMINAL_SAMPLE] = 1,
	[BRQ_STMT_CLAIM_POLICY] = 5,   [BRQ_STMT_CLAIM_MULTI] = 5,
	[BRQ_STMT_POLICY_LOCK] = 1,    [BRQ_STMT_POLICY_TOPICS] = 0,
	[BRQ_STMT_POLICY_SET] = 6,     [BRQ_STMT_POLICY_PRUNE] = 1,
	[BRQ_STMT_POLICY_LIST] = 0,    [BRQ_STMT_LIST_ALL] = 7,
	[BRQ_STMT_LIST_STATE] = 7,     [BRQ_STMT_LIST_TOPIC] = 7,
	[BRQ_STMT_LIST_KEY] = 7,       [BRQ_STMT_RETRY_ONE] = 1,
	[BRQ_STMT_RETRY_BULK] = 3,     [BRQ_STMT_DELETE] = 1,
	[BRQ_STMT_LOST_OF] = 2,        [BRQ_STMT_SCHED_DUE] = 0,
	[BRQ_STMT_SCHED_TZ] = 2,       [BRQ_STMT_SCHED_ZONE_NOW] = 2,
	[BRQ_STMT_SCHED_ADVANCE] = 3,  [BRQ_STMT_SCHED_UPSERT] = 11,
	[BRQ_STMT_SCHED_LIST] = 0,     [BRQ_STMT_SCHED_REMOVE] = 1,
	[BRQ_STMT_TABLE_STATS] = 0,    [BRQ_STMT_HISTORY_ADD] = 5,
	[BRQ_STMT_HISTORY_DEPTH] = 1,  [BRQ_STMT_HISTORY_PRUNE] = 1,
	[BRQ_STMT_HISTORY_READ] = 3,   [BRQ_STMT_WORKERS] = 1,
	[BRQ_STMT_WORKER_JOBS] = 2,    [BRQ_STMT_SPAN_MAP] = 1,
	[BRQ_STMT_SPAN_PRUNE] = 0,     [BRQ_STMT_RETENTION_LAG] = 1,
};

// LEASE_GUARD: how heartbeat, settle and unclaim find their rows. Each joins the
// (id, token) pairs it was given, unnested, to job by `j.id = x.id AND j.lease_token
// = x.token`, and says nothing else about the row:
// - the token is the guard. A lease token is set exactly while a job is
//   `processing` (CHECK job_lease_iff_processing), so "same token" means "still
//   processing and still this lease" (invariant 2) without naming the state;
// - naming the state would let the planner read the partial index of processing
//   rows; a generic plan made while few rows were processing then scanned all of
//   them for every pair (O(n^2): 1.1 s for a settle of 2,000 with 2,000 held);
// - the pairs drive the join (a nested loop probing the primary key per pair):
//   O(n log N) whatever the plan was made on.

// Which per-topic setting a CASE expression selects.
enum setting { LEASE_MS, BACKOFF_BASE_MS, BACKOFF_MAX_MS, MAX_EXECUTION_MS, MAX_LOST_LEASES };

// Writes "CASE <col> WHEN 'a' THEN 1 ... ELSE <default> END" for one setting, or just
// the default when no override sets it.
static void
topic_case(FILE *f, const brq_config *cfg, const char *col, enum setting which)
{
	uint64_t def = which == LEASE_MS   ? cfg->lease_ms
		: which == BACKOFF_BASE_MS ? cfg->backoff_base_ms
		: which == BACKOFF_MAX_MS  ? cfg->backoff_max_ms
		: which == MAX_LOST_LEASES ? cfg->max_lost_leases
					   : cfg->max_execution_ms;
	bool     any = false;
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		const brq_topic_override *o = &cfg->topic_overrides[i];
		bool                      has;
		uint64_t                  v;
		switch (which) {
		case LEASE_MS: has = o->has_lease, v = o->lease_ms; break;
		case BACKOFF_BASE_MS: has = o->has_backoff_base, v = o->backoff_base_ms; break;
		case BACKOFF_MAX_MS: has = o->has_backoff_max, v = o->backoff_max_ms; break;
		case MAX_LOST_LEASES: has = o->has_max_lost_leases, v = o->max_lost_leases; break;
		default: has = o->has_max_execution, v = o->max_execution_ms; break;
		}
		if (!has)
			continue;
		if (!any)
			fprintf(f, "(CASE %s", col);
		any = true;
		// Topic names are validated [a-z0-9._-]: no quote can appear in them.
		fprintf(f, " WHEN '%s' THEN %llu", o->topic, (unsigned long long) v);
	}
	if (any)
		fprintf(f, " ELSE %llu END)", (unsigned long long) def);
	else
		fprintf(f, "%llu", (unsigned long long) def);
}

void
brq_store_sql_lease_case(FILE *f, const brq_config *cfg, const char *col)
{
	topic_case(f, cfg, col, LEASE_MS);
}

// The backoff of SPEC §3 in milliseconds, for attempts expression `a` of topic column
// `col`: d = min(base * 2^(a-1), max), drawn uniformly from [d/2, d]. The exponent is
// clamped before exponentiation and the arithmetic is float8, so no attempt count can
// overflow (2^62 * 24h in ms is far inside float8's range).
static void
backoff_ms(FILE *f, const brq_config *cfg, const char *col, const char *a)
{
	fputs("(least(", f);
	topic_case(f, cfg, col, BACKOFF_BASE_MS);
	fprintf(f, "::float8 * power(2::float8, least(greatest(%s - 1, 0), 62)), ", a);
	topic_case(f, cfg, col, BACKOFF_MAX_MS);
	fputs("::float8) * (0.5 + random() * 0.5))", f);
}

// The nine priorities in claim order, each read by its own range scan (claim_sql).
#define PRIORITIES                                                                  \
	"(VALUES (1::int2), (2::int2), (3::int2), (4::int2), (5::int2), (6::int2)," \
	" (7::int2), (8::int2), (9::int2))"

// The claim's update of the rows locked in CTE c (claim_sql, step 2). claimed_at is
// `claimed` (an expression of the time).
static void
claim_update(FILE *f, const brq_config *cfg, const char *claimed)
{
	fprintf(f,
		" UPDATE job j SET state = 'processing', attempts = j.attempts + 1, locked_by = $3,"
		"  lease_token = ($4::uuid[])[c.k], updated_at = now(), claimed_at = %s,"
		"  locked_until = now() + coalesce($5::int8, ",
		claimed);
	topic_case(f, cfg, "j.topic", LEASE_MS);
	fputs(") * interval '1 millisecond'"
	      " FROM c WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM c)) AND j.ctid = c.ctid"
	      " RETURNING ",
	      f);
	brq_store_sql_cols(f, BRQ_COLS(claim_cols));
}

// claim_sql's step 3, the guard: topics with a row in topic_policy (paused or
// limited) are left out here. They are claimed by claim_policy_sql, which the store
// chooses for them from its cache of such topics; the guard keeps a stale cache
// safe: a topic paused or limited through another gateway gives nothing here until
// this gateway's cache sees it (one poll interval), never more than its policy. One
// primary-key probe of a small table per topic.
#define NO_POLICY(topic) "NOT EXISTS (SELECT 1 FROM topic_policy tp WHERE tp.topic = " topic ")"

// The claim of one topic ($1 has one element), the hot path.
static void
claim_sql(FILE *f, const brq_config *cfg)
{
	// $1 topics text[], $2 n, $3 worker, $4 lease tokens uuid[] (n of them, from
	// libsodium), $5 lease_ms (NULL = the topic's default).
	// One statement claims the batch (invariant 2); attempts are counted here
	// (invariant 6); order is priority (1 first), then available_at, then id
	// (invariant 9).
	// 1. One ordered index scan per priority (job_claim_priority_idx), 1 to 9, each
	//    locking at most n rows, in that order, and the first n rows they give
	//    are the batch: a nested loop over the VALUES list emits its rows in list
	//    order, each scan in index order, and LIMIT stops it as soon as n rows
	//    came, so the scans of later priorities never run. So a batch taken from
	//    the first priority (the default) costs one scan, as before priorities;
	//    each scan stops at its first job not yet due, so delayed jobs are not
	//    walked over (one scan over (topic) with available_at as a filter read all
	//    of them: 50 ms per claim behind 100k). The order is the plan's, there is
	//    no ORDER BY (a sort would need every scan): schema_test checks the plan
	//    and policy_test the order. Rows are numbered k as they come.
	// 2. The update finds the locked rows by their ctid (a TID scan: one heap
	//    fetch per row, whatever the table's size; the rows are locked by this very
	//    statement, so their ctids cannot change under it). By id, the generic plan
	//    is made on the table as it was at the connection's sixth claim: on a new,
	//    small table that plan was a sequential scan of `job` for every claim, kept
	//    until the next ANALYZE (10 s per claim at 300k rows in memory_test's soak;
	//    a plain join was the same, 60 ms at 100k rows). Joined back to c on the
	//    ctid, each row takes token k of $4: no per-row search of an array, which
	//    cost O(n^2) for big batches.
	// 3. The guard (NO_POLICY), evaluated once.
	fputs("WITH c AS MATERIALIZED ("
	      " SELECT x.ctid, row_number() OVER () AS k FROM ("
	      "  SELECT l.ctid FROM " PRIORITIES " AS p(priority)"
	      "  CROSS JOIN LATERAL ("
	      "   SELECT ctid FROM job"
	      "   WHERE topic = ($1::text[])[1] AND priority = p.priority AND state IN ('pending', 'failed')"
	      "    AND available_at <= now() AND " NO_POLICY(
		      "($1::text[])[1]") "   ORDER BY available_at, id LIMIT $2"
					 "   FOR NO KEY UPDATE SKIP LOCKED) l"
					 "  LIMIT $2) x)",
	      f);
	claim_update(f, cfg, "now()");
}

// The claim of several topics: claim_sql's scans for each (topic, priority) pair,
// merged by (priority, available_at, id) and numbered k in that order. The merge
// sorts, so every scan runs; extra rows locked (another topic, another priority)
// are released when the statement commits.
static void
claim_multi_sql(FILE *f, const brq_config *cfg)
{
	fputs("WITH c AS MATERIALIZED ("
	      " SELECT l.ctid, row_number() OVER (ORDER BY l.priority, l.available_at, l.id) AS k"
	      " FROM (SELECT DISTINCT u.topic FROM unnest($1::text[]) AS u(topic)"
	      "  WHERE " NO_POLICY("u.topic") ") AS t(topic)"
					      " CROSS JOIN " PRIORITIES " AS p(priority)"
					      " CROSS JOIN LATERAL ("
					      "  SELECT ctid, id, priority, available_at FROM job"
					      "  WHERE topic = t.topic AND priority = p.priority AND state "
					      "IN ('pending', 'failed')"
					      "   AND available_at <= now()"
					      "  ORDER BY available_at, id LIMIT $2"
					      "  FOR NO KEY UPDATE SKIP LOCKED) l"
					      " ORDER BY l.priority, l.available_at, l.id LIMIT $2)",
	      f);
	claim_update(f, cfg, "now()");
}

// The policy path of the claim, for topics with a row in topic_policy. Same
// parameters and result as claim_sql. It runs after BRQ_STMT_POLICY_LOCK, in the
// same transaction: the rows of the limited topics are locked, so gateways claiming
// them take turns, and this statement's snapshot, taken after the lock was granted,
// sees every claim committed before (READ COMMITTED). So:
// - allowed = min(n, max_running - processing now, rate_per_s - started in this
//   second of the database clock), 0 when paused or below 0; a missing row or
//   limit does not limit;
// - the scans are claim_sql's, each limited to `allowed`, and a topic keeps only
//   its first `allowed` rows across priorities;
// - the second's count is written in the row the same statement (statement_timestamp:
//   after the lock, so windows only move forward from one holder to the next).
static void
claim_policy_sql(FILE *f, const brq_config *cfg)
{
	fputs("WITH pol AS MATERIALIZED ("
	      " SELECT t.topic, CASE WHEN p.paused THEN 0 ELSE greatest(0, least($2::int8,"
	      "  coalesce(p.max_running - (SELECT count(*) FROM job r"
	      "   WHERE r.topic = t.topic AND r.state = 'processing'), $2::int8),"
	      "  coalesce(p.rate_per_s - CASE WHEN p.rate_window = date_trunc('second', "
	      "statement_timestamp())"
	      "   THEN p.rate_started ELSE 0 END, $2::int8))) END AS allowed"
	      " FROM (SELECT DISTINCT unnest($1::text[])) AS t(topic)"
	      " LEFT JOIN topic_policy p ON p.topic = t.topic"
	      "), c AS MATERIALIZED ("
	      " SELECT x.ctid, x.topic, row_number() OVER (ORDER BY x.priority, x.available_at, x.id) AS k"
	      " FROM (SELECT l.ctid, l.id, l.topic, l.priority, l.available_at, pol.allowed,"
	      "  row_number() OVER (PARTITION BY l.topic ORDER BY l.priority, l.available_at, l.id) AS kt"
	      "  FROM pol CROSS JOIN " PRIORITIES " AS p(priority)"
	      "  CROSS JOIN LATERAL ("
	      "   SELECT ctid, id, topic, priority, available_at FROM job"
	      "   WHERE topic = pol.topic AND priority = p.priority AND state IN ('pending', 'failed')"
	      "    AND available_at <= now()"
	      "   ORDER BY available_at, id LIMIT pol.allowed"
	      "   FOR NO KEY UPDATE SKIP LOCKED) l"
	      "  WHERE pol.allowed > 0) x"
	      " WHERE x.kt <= x.allowed"
	      " ORDER BY x.priority, x.available_at, x.id LIMIT $2"
	      "), started AS ("
	      " UPDATE topic_policy tp SET rate_started = s.n + CASE WHEN tp.rate_window ="
	      "  date_trunc('second', statement_timestamp()) THEN tp.rate_started ELSE 0 END,"
	      "  rate_window = date_trunc('second', statement_timestamp())"
	      " FROM (SELECT topic, count(*) AS n FROM c GROUP BY topic) s"
	      " WHERE tp.topic = s.topic AND tp.rate_per_s IS NOT NULL)",
	      f);
	// claimed_at is the time the start was counted at (the rate's second), not the
	// transaction's start, which may be a lock wait earlier.
	claim_update(f, cfg, "statement_timestamp()");
}

// Whether any topic has a maximum execution time (the global one or an override).
static bool
any_max_execution(const brq_config *cfg)
{
	for (size_t i = 0; i < cfg->n_topic_overrides; i++)
		if (cfg->topic_overrides[i].has_max_execution &&
		    cfg->topic_overrides[i].max_execution_ms != 0)
			return true;
	return cfg->max_execution_ms != 0;
}

// " AND <the attempt of j is still within its maximum execution time>", or nothing
// when no topic has one (the statement is then exactly what it was without them).
static void
within_max_execution(FILE *f, const brq_config *cfg)
{
	if (!any_max_execution(cfg))
		return;
	fputs(" AND (", f);
	topic_case(f, cfg, "j.topic", MAX_EXECUTION_MS);
	fputs(" = 0 OR now() < j.claimed_at + ", f);
	topic_case(f, cfg, "j.topic", MAX_EXECUTION_MS);
	fputs(" * interval '1 millisecond')", f);
}

static void
heartbeat_sql(FILE *f, const brq_config *cfg)
{
	// $1 ids int8[], $2 tokens uuid[], $3 lease_ms (NULL = the topic's default).
	// Guard: still this lease (invariant 2). See LEASE_GUARD for how it is written.
	// An attempt past its topic's maximum execution time (from claimed_at) is not
	// extended: its lease runs out and the reaper returns the job.
	fputs("UPDATE job j SET locked_until = now() + coalesce($3::int8, ", f);
	topic_case(f, cfg, "j.topic", LEASE_MS);
	fputs(") * interval '1 millisecond'"
	      " FROM unnest($1::int8[], $2::uuid[]) AS h(id, token)"
	      " WHERE j.id = h.id AND j.lease_token = h.token",
	      f);
	within_max_execution(f, cfg);
	fputs(" RETURNING ", f);
	brq_store_sql_cols(f, BRQ_COLS(hb_cols));
}

// The settle's items, unnested as s, and how each finds its row (LEASE_GUARD):
// " <kw> unnest(...) AS s(...) WHERE <join>". `at`: see settle_sql.
static void
settle_items_sql(FILE *f, const char *kw, bool at)
{
	fprintf(f, " %s unnest($1::int8[], $2::uuid[], $3::text[], $4::text[], $5::int8[], ", kw);
	fputs(at ? "$7::jsonb[], $6::tid[]) AS s(id, token, outcome, error, delay_ms, result, loc)"
		   " WHERE j.ctid = s.loc AND j.id = s.id AND j.lease_token = s.token"
		 : "$6::jsonb[]) AS s(id, token, outcome, error, delay_ms, result)"
		   " WHERE j.id = s.id AND j.lease_token = s.token",
	      f);
}

// "(s.outcome = 'done' AND j.topic IN ('a', ...))": the items settled done of the
// topics that discard their done jobs.
static void
discarded_sql(FILE *f, const brq_config *cfg)
{
	const char *sep = "";
	fputs("(s.outcome = 'done' AND j.topic IN (", f);
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		if (!cfg->topic_overrides[i].discard_done)
			continue;
		// Topic names are validated [a-z0-9._-]: no quote can appear in them.
		fprintf(f, "%s'%s'", sep, cfg->topic_overrides[i].topic);
		sep = ", ";
	}
	fputs("))", f);
}

// " jsonb": the errors array of row j with one entry more, {"attempt": j.attempts, "at_ms":
// now, "error": <the text expression the caller writes next>}, then ending with "))": the
// oldest entry dropped when BRQ_JOB_ERRORS_MAX are there already (migration 00013).
// Only the statements that write last_error append, one entry each, so dropping one keeps
// the bound. The attempt is the one that ended: attempts as the row holds it before this
// UPDATE (SET reads the old row), whatever the outcome makes of it.
static void
errors_with(FILE *f)
{
	fprintf(f,
		" (CASE WHEN jsonb_array_length(coalesce(j.errors, '[]'::jsonb)) >= %d THEN j.errors - 0"
		"  ELSE coalesce(j.errors, '[]'::jsonb) END)"
		" || jsonb_build_array(jsonb_build_object('attempt', j.attempts, 'at_ms', " JOB_MS(
			"now()") ","
				 "  'error',",
		BRQ_JOB_ERRORS_MAX);
}

static void
settle_sql(FILE *f, const brq_config *cfg, bool at)
{
	// $1 ids int8[], $2 tokens uuid[], $3 outcomes text[], $4 errors text[] (NULL =
	// keep last_error), $5 delay_ms int8[], $6 results jsonb[] (done items' results;
	// the whole array NULL when no item has one: unnest pads a NULL array with NULLs,
	// so the common settle sends nothing for it). Guarded like heartbeat
	// (LEASE_GUARD); a row whose lease is gone matches nothing and is reported "not
	// applied".
	// `at` (BRQ_STMT_SETTLE_AT): $6 is each row's address (ctid, store_hint.h) and
	// $7 the results: a nested loop of TID scans instead of primary-key probes, the
	// same guard on top, so a stale address matches nothing (the store then settles
	// that item by id).
	// Topics with discard_done (opt-in, SPEC invariant 17): their done items delete
	// the row instead, in the same statement, under the same guard, and report the
	// state they reached; every other item updates its row as usual. Without such a
	// topic the statement is the plain UPDATE.
	bool discard = brq_config_discards_done(cfg);
	if (discard) {
		const char *gone[SETTLE__N];
		memcpy(gone, settle_cols, sizeof(gone));
		gone[SETTLE_STATE] = "'done'::text";
		fputs("WITH gone AS (DELETE FROM job j", f);
		settle_items_sql(f, "USING", at);
		fputs(" AND ", f);
		discarded_sql(f, cfg);
		fputs(" RETURNING ", f);
		brq_store_sql_cols(f, BRQ_COLS(gone));
		fputs("), kept AS (", f);
	}
	fputs("UPDATE job j SET"
	      " state = CASE s.outcome WHEN 'done' THEN 'done' WHEN 'cancel' THEN 'canceled'"
	      "  WHEN 'preserve' THEN 'failed'"
	      "  ELSE CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'failed' END END,"
	      " attempts = CASE WHEN s.outcome = 'preserve' THEN greatest(j.attempts - 1, 0)"
	      "  ELSE j.attempts END,"
	      " available_at = CASE s.outcome WHEN 'fail' THEN now() + ",
	      f);
	backoff_ms(f, cfg, "j.topic", "j.attempts");
	fputs(" * interval '1 millisecond' WHEN 'preserve' THEN now() + ", f);
	backoff_ms(f, cfg, "j.topic", "j.attempts");
	fputs(" * interval '1 millisecond' WHEN 'delay' THEN now() + least(s.delay_ms, ", f);
	topic_case(f, cfg, "j.topic", BACKOFF_MAX_MS);
	fputs(") * interval '1 millisecond' ELSE j.available_at END,"
	      " last_error = coalesce(s.error, j.last_error), result = coalesce(s.result, j.result),"
	      " errors = CASE WHEN s.error IS NULL THEN j.errors ELSE",
	      f);
	// The error also joins the attempts' errors; a settle without one (the common
	// `done`) leaves the column as it is.
	errors_with(f);
	fputs(" s.error)) END, locked_by = NULL, locked_until = NULL, lease_token = NULL, updated_at = now()",
	      f);
	settle_items_sql(f, "FROM", at);
	if (discard) {
		fputs(" AND NOT ", f);
		discarded_sql(f, cfg);
	}
	fputs(" RETURNING ", f);
	brq_store_sql_cols(f, BRQ_COLS(settle_cols));
	if (discard)
		fputs(") SELECT * FROM gone UNION ALL SELECT * FROM kept", f);
}

// " (<the topic's max_lost_leases> <> 0 AND j.lost_leases + 1 >= it)": whether the
// lease the reaper takes back from row j is the one that quarantines the job.
static void
quarantines(FILE *f, const brq_config *cfg)
{
	fputs(" (", f);
	topic_case(f, cfg, "j.topic", MAX_LOST_LEASES);
	fputs(" <> 0 AND j.lost_leases + 1 >= ", f);
	topic_case(f, cfg, "j.topic", MAX_LOST_LEASES);
	fputs(")", f);
}

// The quarantine's reason (reap_sql), an SQL text expression of row j.
static void
quarantine_reason(FILE *f, const brq_config *cfg)
{
	fputs(" format('quarantined: %s leases ran out without a recorded outcome"
	      " (max_lost_leases %s); last held by %s, expired %s', j.lost_leases + 1, ",
	      f);
	topic_case(f, cfg, "j.topic", MAX_LOST_LEASES);
	fputs(", left(j.locked_by, 128),"
	      " to_char(j.locked_until AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))",
	      f);
}

// The reaper (SPEC §4 and invariant 18). $1 batch size. Expired leases go back to
// pending, attempts unchanged: an expired lease is not a failure (invariant 7);
// available_at unchanged: a reaped job keeps its place in line (invariant 11), it
// does not wait behind everything queued meanwhile. Each lease taken back is counted
// in lost_leases; the one that reaches the topic's max_lost_leases (0: never) writes
// `dead` instead, with a last_error naming the count, the last holder and when its
// lease ran out (the old row's locked_by and locked_until, read by SET before it
// clears them). Exactly once whatever the number of gateways: the rows are locked
// by the inner SELECT (SKIP LOCKED: each row is reaped by one statement), and the
// outer guard (still processing, still expired) is evaluated again on the newest
// version of a row another statement changed meanwhile, so a lease is counted, and
// a job quarantined, by the first statement that takes it back and by no other.
static void
reap_sql(FILE *f, const brq_config *cfg)
{
	fputs("UPDATE job j SET state = CASE WHEN", f);
	quarantines(f, cfg);
	fputs(" THEN 'dead' ELSE 'pending' END, lost_leases = j.lost_leases + 1,"
	      " last_error = CASE WHEN",
	      f);
	quarantines(f, cfg);
	fputs(" THEN", f);
	quarantine_reason(f, cfg);
	fputs(" ELSE j.last_error END, errors = CASE WHEN", f);
	quarantines(f, cfg);
	// The reason is the attempt's error too (migration 00013): the last one it has.
	fputs(" THEN", f);
	errors_with(f);
	quarantine_reason(f, cfg);
	fputs(")) ELSE j.errors END,"
	      " locked_by = NULL, locked_until = NULL, lease_token = NULL, updated_at = now()"
	      " WHERE j.id = ANY(ARRAY(SELECT id FROM job WHERE state = 'processing'"
	      "  AND locked_until < now() ORDER BY locked_until LIMIT $1"
	      "  FOR NO KEY UPDATE SKIP LOCKED))"
	      " AND j.state = 'processing' AND j.locked_until < now() RETURNING ",
	      f);
	brq_store_sql_cols(f, BRQ_COLS(reap_cols));
}

static void
janitor_sql(FILE *f, brq_stmt st)
{
	switch (st) {
	case BRQ_STMT_RETENTION:
		// $1 ttl_ms, $2 batch size. Only terminal rows, oldest first. Both janitor
		// statements reach rows through `id = ANY(ARRAY(...))` on the primary key,
		// like the claim: a join to a LIMIT $n subquery gets a generic plan that
		// may scan the whole table.
		fputs("DELETE FROM job j WHERE j.id = ANY(ARRAY(SELECT id FROM job"
		      "  WHERE state IN ('done', 'dead', 'canceled')"
		      "  AND updated_at < now() - $1::int8 * interval '1 millisecond'"
		      "  ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED))"
		      " AND j.state IN ('done', 'dead', 'canceled') RETURNING ",
		      f);
		brq_store_sql_cols(f, BRQ_COLS(topic_cols));
		break;
	case BRQ_STMT_RETENTION_LAG:
		// $1 ttl_ms. Milliseconds the oldest terminal row has outlived its TTL (0 when
		// none has): how far behind retention is. One end of job_retention_idx.
		fputs("SELECT greatest(0, coalesce((extract(epoch FROM now() - $1::int8 * interval '1 "
		      "millisecond'"
		      " - min(updated_at)) * 1000)::int8, 0)) FROM job"
		      " WHERE state IN ('done', 'dead', 'canceled')",
		      f);
		break;
	case BRQ_STMT_DEPTH_TERMINAL:
	case BRQ_STMT_DEPTH_TERMINAL_SAMPLE:
		// Terminal rows: the bulk of the table, counted rarely; exactly, or over a
		// TABLESAMPLE SYSTEM ($1 percent) page sample when an exact count does not
		// fit the monitor's budget. Columns as DEPTH_COLS, age 0.
		fputs("SELECT topic, state, count(*), 0::float8 FROM job", f);
		if (st == BRQ_STMT_DEPTH_TERMINAL_SAMPLE)
			fputs(" TABLESAMPLE SYSTEM ($1::float8)", f);
		fputs(" WHERE state IN ('done', 'dead', 'canceled') GROUP BY topic, state ORDER BY 1", f);
		break;
	default: break;
	}
}

// The statements whose text is fixed: head, result columns, tail (brq_sql_text).
static const brq_sql_text fixed[BRQ_STMT__COUNT] = {
	// $1 topics text[], $2 payloads jsonb[], $3 keys text[] (NULL = no key),
	// $4 delay_ms int8[] (NULL = none), $5 run_at_ms int8[] (NULL = none),
	// $6 max_attempts int4[], $7 priority int4[]. Ids are drawn first so that the reply can tell, per
	// input row, whether this statement created it; a key that conflicts yields
	// NULL: the store resolves those with BRQ_STMT_ENQUEUE_LOOKUP, in one batch (a
	// join back to job here got a plan made on a small table, a scan of all of
	// job, that stayed: 860 us per insert instead of 230 us; docs/benchmarks.md).
	[BRQ_STMT_ENQUEUE] =
		{"WITH input AS MATERIALIZED ("
		 " SELECT nextval('job_id_seq'::regclass) AS id, t.*"
		 " FROM unnest($1::text[], $2::jsonb[], $3::text[], $4::int8[], $5::int8[], $6::int4[],"
		 "  $7::int4[])"
		 "  WITH ORDINALITY AS t(topic, payload, key, delay_ms, run_at_ms, max_attempts, priority, "
		 "ord)"
		 "), ins AS ("
		 " INSERT INTO job (id, topic, payload, idempotency_key, available_at, max_attempts, "
		 "priority)"
		 " SELECT id, topic, payload, key,"
		 "  CASE WHEN run_at_ms IS NOT NULL"
		 "   THEN greatest(now(), to_timestamp(run_at_ms / 1000.0))"
		 "   ELSE now() + coalesce(delay_ms, 0) * interval '1 millisecond' END,"
		 "  max_attempts, priority"
		 " FROM input ORDER BY ord"
		 " ON CONFLICT (topic, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
		 " RETURNING id"
		 ") SELECT ",
		 BRQ_COLS(enq_cols), " FROM input i LEFT JOIN ins ON ins.id = i.id ORDER BY i.ord"},
	// $1 topics text[], $2 keys text[]: the ids of existing keyed jobs, by the
	// position (1-based) of their (topic, key) in the arrays.
	[BRQ_STMT_ENQUEUE_LOOKUP] =
		{"SELECT ", BRQ_COLS(lookup_cols),
		 " FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS i(topic, key, ord)"
		 " JOIN job j ON j.topic = i.topic AND j.idempotency_key = i.key"},
	// $1 ids int8[], $2 tokens uuid[]: leases a heartbeat did not extend, and why
	// (brq_lost_reason's words): canceled; still this lease, so past the maximum
	// execution time; else gone (reaped, settled, another lease). Jobs that no
	// longer exist return no row.
	[BRQ_STMT_LOST_OF] = {"SELECT ", BRQ_COLS(lost_cols),
			      " FROM unnest($1::int8[], $2::uuid[]) WITH ORDINALITY AS l(id, token, ord)"
			      " JOIN job j ON j.id = l.id"},
	// $1 ids int8[], $2 tokens uuid[]: leases committed for a reply that could not
	// be delivered go back at once, as if never claimed: the attempt is returned
	// and available_at (its place in line) is kept.
	[BRQ_STMT_UNCLAIM] = {"UPDATE job j SET state = 'pending', attempts = greatest(j.attempts - 1, 0),"
			      " locked_by = NULL, locked_until = NULL, lease_token = NULL, updated_at = now()"
			      " FROM unnest($1::int8[], $2::uuid[]) AS u(id, token)"
			      " WHERE j.id = u.id AND j.lease_token = u.token RETURNING ",
			      BRQ_COLS(unclaim_cols)},
	// $1 ids int8[]: topics of jobs whose lease was lost, for the metrics.
	[BRQ_STMT_TOPICS_OF] = {"SELECT ", BRQ_COLS(topic_cols), " FROM job j WHERE j.id = ANY($1::int8[])"},
	// $1 id. Terminal rows are left alone and reported as they are. A job that was
	// running is announced on BRQ_STORE_CANCEL_CHANNEL ("<id> <topic>"), delivered at
	// commit to every gateway's listener (store_listen.c), which wakes the watches of
	// the workers of its topic (docs/architecture.md "Cancels"). The row is locked
	// first, so `was` is the state the update replaced, whatever ran concurrently.
	[BRQ_STMT_CANCEL] = {"WITH o AS (SELECT id, state FROM job WHERE id = $1 FOR NO KEY UPDATE),"
			     " c AS ("
			     " UPDATE job j SET state = 'canceled', locked_by = NULL, locked_until = NULL,"
			     "  lease_token = NULL, updated_at = now()"
			     " FROM o WHERE j.id = o.id AND o.state IN ('pending', 'failed', 'processing')"
			     " RETURNING j.id, j.topic, o.state AS was"
			     "), n AS (SELECT pg_notify('" BRQ_STORE_CANCEL_CHANNEL
			     "', c.id::text || ' ' || c.topic)"
			     " FROM c WHERE c.was = 'processing'"
			     ") SELECT ",
			     BRQ_COLS(cancel_cols),
			     " FROM (SELECT 'canceled' AS state, true AS canceled, topic FROM c"
			     " UNION ALL SELECT j.state, false, j.topic FROM job j JOIN o ON o.id = j.id"
			     " WHERE NOT EXISTS (SELECT 1 FROM c)) x"
			     // n runs only when something reads it (a CTE without a write is
			     // evaluated on demand): one row either way.
			     " WHERE (SELECT count(*) FROM n) >= 0"},
	[BRQ_STMT_JOB]    = {"SELECT ", BRQ_COLS(job_cols), ", " JOB_ERRORS_COL " FROM job WHERE id = $1"},
	// A full scan: an operator's question, not a hot path (docs/operations.md).
	[BRQ_STMT_STATS] = {"SELECT ", BRQ_COLS(stats_cols), " FROM job GROUP BY topic ORDER BY topic"},
	// Active rows only. Each branch's WHERE is exactly the predicate of a partial
	// index (job_claim_priority_idx, job_running_idx), so on a big table the
	// planner reads those small indexes (plus the heap pages of active rows)
	// instead of the whole table: the cost follows the backlog, not the history.
	// The second branch's columns mirror DEPTH_COLS.
	[BRQ_STMT_DEPTH_ACTIVE] = {"SELECT ", BRQ_COLS(depth_cols),
				   " FROM job WHERE state IN ('pending', 'failed') GROUP BY topic, state"
				   " UNION ALL SELECT topic, 'processing', count(*), 0::float8"
				   " FROM job WHERE state = 'processing' GROUP BY topic ORDER BY 1"},
	// Statistics and file sizes only, no row of job read: well under a millisecond
	// however big the table (docs/operations.md, section 3).
	[BRQ_STMT_TABLE_STATS] = {"SELECT ", BRQ_COLS(table_cols),
				  " FROM (SELECT to_regclass('job') AS oid) t"
				  " LEFT JOIN pg_stat_user_tables s ON s.relid = t.oid"},
	// $1 topics text[]: locks the rows of the limited topics among them, in topic
	// order (every claim locks in the same order: no deadlock between two claims
	// of several limited topics). Paused topics need no turn.
	[BRQ_STMT_POLICY_LOCK] = {"SELECT ", BRQ_COLS(topic_cols),
				  " FROM topic_policy j WHERE j.topic = ANY($1::text[]) AND NOT j.paused"
				  " AND (j.max_running IS NOT NULL OR j.rate_per_s IS NOT NULL)"
				  " ORDER BY j.topic FOR NO KEY UPDATE"},
	// The topics that take the claim's policy path (the store's cache).
	[BRQ_STMT_POLICY_TOPICS] = {"SELECT ", BRQ_COLS(topic_cols), " FROM topic_policy j"},
	// $1 topic, $2 what ('pause', 'resume', 'limits'), $3 max_running int8 (0:
	// unlimited), $4 set it (bool), $5 rate_per_s int8 (0: unlimited), $6 set it
	// (bool). Creates the row if needed; BRQ_STMT_POLICY_PRUNE then drops a row
	// that says nothing, so the topic goes back to the fast path.
	[BRQ_STMT_POLICY_SET] =
		{"WITH p AS ("
		 " INSERT INTO topic_policy AS t (topic, paused, max_running, rate_per_s)"
		 " VALUES ($1::text, $2::text = 'pause',"
		 "  CASE WHEN $4::bool THEN nullif($3::int8, 0)::int4 END,"
		 "  CASE WHEN $6::bool THEN nullif($5::int8, 0)::int4 END)"
		 " ON CONFLICT (topic) DO UPDATE SET"
		 "  paused = CASE $2::text WHEN 'pause' THEN true WHEN 'resume' THEN false ELSE "
		 "t.paused END,"
		 "  max_running = CASE WHEN $4::bool THEN nullif($3::int8, 0)::int4 ELSE t.max_running "
		 "END,"
		 "  rate_per_s = CASE WHEN $6::bool THEN nullif($5::int8, 0)::int4 ELSE t.rate_per_s "
		 "END,"
		 "  updated_at = now()"
		 " RETURNING t.*) SELECT ",
		 BRQ_COLS(policy_cols), " FROM p"},
	[BRQ_STMT_POLICY_PRUNE] = {"DELETE FROM topic_policy WHERE topic = $1::text AND NOT paused"
				   " AND max_running IS NULL AND rate_per_s IS NULL"},
	// Every topic with a policy, with its jobs processing now (job_running_idx).
	[BRQ_STMT_POLICY_LIST] = {"SELECT ", BRQ_COLS(policy_cols), " FROM topic_policy p ORDER BY p.topic"},
};

static char *
build(const brq_config *cfg, brq_stmt st)
{
	char  *buf = NULL;
	size_t len = 0;
	FILE  *f   = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;
	switch (st) {
	case BRQ_STMT_CLAIM: claim_sql(f, cfg); break;
	case BRQ_STMT_CLAIM_POLICY: claim_policy_sql(f, cfg); break;
	case BRQ_STMT_CLAIM_MULTI: claim_multi_sql(f, cfg); break;
	case BRQ_STMT_HEARTBEAT: heartbeat_sql(f, cfg); break;
	case BRQ_STMT_SETTLE: settle_sql(f, cfg, false); break;
	case BRQ_STMT_SETTLE_AT: settle_sql(f, cfg, true); break;
	case BRQ_STMT_REAP: reap_sql(f, cfg); break;
	case BRQ_STMT_RETENTION:
	case BRQ_STMT_RETENTION_LAG:
	case BRQ_STMT_DEPTH_TERMINAL:
	case BRQ_STMT_DEPTH_TERMINAL_SAMPLE: janitor_sql(f, st); break;
	case BRQ_STMT_LIST_ALL:
	case BRQ_STMT_LIST_STATE:
	case BRQ_STMT_LIST_TOPIC:
	case BRQ_STMT_LIST_KEY: brq_store_sql_list(f, st); break;
	case BRQ_STMT_RETRY_ONE:
	case BRQ_STMT_RETRY_BULK:
	case BRQ_STMT_DELETE: brq_store_sql_retry_delete(f, st); break;
	case BRQ_STMT_SPAN_MAP:
	case BRQ_STMT_SPAN_PRUNE: brq_store_sql_span(f, st); break;
	case BRQ_STMT_SCHED_DUE:
	case BRQ_STMT_SCHED_TZ:
	case BRQ_STMT_SCHED_ZONE_NOW:
	case BRQ_STMT_SCHED_ADVANCE:
	case BRQ_STMT_SCHED_UPSERT:
	case BRQ_STMT_SCHED_LIST:
	case BRQ_STMT_SCHED_REMOVE: brq_store_sql_sched(f, st); break;
	case BRQ_STMT_HISTORY_ADD:
	case BRQ_STMT_HISTORY_DEPTH:
	case BRQ_STMT_HISTORY_PRUNE:
	case BRQ_STMT_HISTORY_READ:
	case BRQ_STMT_WORKERS:
	case BRQ_STMT_WORKER_JOBS: brq_store_sql_console(f, cfg, st); break;
	default: brq_store_sql_text(f, &fixed[st]); break;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int
brq_store_sql_build(const brq_config *cfg, char *texts[BRQ_STMT__COUNT], brq_db_stmt stmts[BRQ_STMT__COUNT])
{
	for (int i = 0; i < BRQ_STMT__COUNT; i++)
		texts[i] = NULL;
	for (int i = 0; i < BRQ_STMT__COUNT; i++) {
		texts[i] = build(cfg, (brq_stmt) i);
		if (texts[i] == NULL) {
			brq_store_sql_fini(texts);
			return BRQ_ENOMEM;
		}
		stmts[i] = (brq_db_stmt) {.name = names[i], .text = texts[i], .nparams = nparams[i]};
	}
	return 0;
}

void
brq_store_sql_fini(char *texts[BRQ_STMT__COUNT])
{
	for (int i = 0; i < BRQ_STMT__COUNT; i++) {
		free(texts[i]);
		texts[i] = NULL;
	}
}
