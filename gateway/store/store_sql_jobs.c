// SPDX-License-Identifier: MIT
// The statement texts of the job list, retry and delete (store_jobs.c, migration 00007),
// for brq_store_sql_build (store_sql.c).
#include "store_sql_jobs.h"

static const char *const job_cols[]     = {JOB_COLS(BRQ_COL_EXPR)};
static const char *const retry_cols[]   = {RETRY_COLS(BRQ_COL_EXPR)};
static const char *const retried_cols[] = {RETRIED_COLS(BRQ_COL_EXPR)};
static const char *const delete_cols[]  = {DELETE_COLS(BRQ_COL_EXPR)};

// The list's filters besides topic and state, for a FROM job without alias: $3
// created_after_ms, $4 created_before_ms, $5 key (each NULL = any), $6 the largest id
// the page may hold (the cursor). Residual filters: they never choose the index. The
// time filters compare created_at_ms as the reply gives it (JOB_MS, rounded to the
// millisecond), not the microseconds stored: compared as a timestamp, a job reported
// at T was left out by created_after_ms = T and kept by created_before_ms = T.
#define LIST_FILTERS_REST                                          \
	" AND ($3::int8 IS NULL OR " JOB_MS(                       \
		"created_at") " >= $3::int8)"                      \
			      " AND ($4::int8 IS NULL OR " JOB_MS( \
				      "created_at") " < $4::int8)" \
						    " AND ($5::text IS NULL OR idempotency_key = $5::text)"
// The first id whose created_at is at or after ts (a timestamptz expression; NULL when ts
// is NULL or the table is empty): a binary search over job_pkey, ~log2(ids) probes of
// one row each. Ids and created_at (now() at insert: the transaction's start) grow
// together, out of order only by how long an enqueue transaction lasts or a clock step.
#define LIST_ID_AT(ts)                                                                     \
	"(WITH RECURSIVE s(lo, hi) AS (SELECT (SELECT min(id) FROM job),"                  \
	" (SELECT max(id) FROM job) + 1 WHERE " ts " IS NOT NULL"                          \
	" UNION ALL SELECT CASE WHEN p.created_at < " ts " THEN LEAST(p.id + 1, s.hi)"     \
	" ELSE s.lo END, CASE WHEN p.created_at < " ts " THEN s.hi"                        \
	" ELSE s.lo + (s.hi - s.lo) / 2 END FROM s CROSS JOIN LATERAL (SELECT id,"         \
	" created_at FROM job WHERE id >= s.lo + (s.hi - s.lo) / 2 ORDER BY id LIMIT 1) p" \
	" WHERE s.lo < s.hi) SELECT lo FROM s WHERE lo >= hi)"
// The created-time window as a range of ids, for the branches that walk an index by id
// (issue 28): the window widened by LIST_SLACK on both sides, so a row whose
// created_at is out of id order by less than that is still in the range; the time
// filters stay, so the range only narrows the walk (a day four weeks back: the pkey
// walked through ~1,000 ids instead of 900,000 at 1M rows). No bound without a time.
#define LIST_SLACK "interval '1 minute'"
#define LIST_ID_LO "COALESCE(" LIST_ID_AT("(to_timestamp($3::int8 / 1000.0) - " LIST_SLACK ")") ", 0)"
#define LIST_ID_HI                                                                        \
	"COALESCE(" LIST_ID_AT("(to_timestamp($4::int8 / 1000.0) + " LIST_SLACK ")") ", " \
										     "9223372036854775807)"
#define LIST_ID_RANGE " AND id >= " LIST_ID_LO " AND id < " LIST_ID_HI
#define LIST_FILTERS  " AND id <= $6::int8" LIST_ID_RANGE LIST_FILTERS_REST
// For the active rows: `id + 0` keeps the cursor from becoming a condition on the
// primary key, which the planner would then walk (through the whole history) instead
// of the small partial index of the backlog.
#define LIST_FILTERS_ACTIVE " AND id + 0 <= $6::int8" LIST_FILTERS_REST

// Done rows of any topic, newest first, at most $7: job_pkey walked backwards from the
// cursor, keeping the done rows. No index holds done rows (migration 00009: every job
// settles done, and one more index entry per job cost the drain 10 %); done is the
// bulk of the history, so a page is usually found near the top. The cost follows how
// far back the page's rows lie (docs/operations.md, "What the list reads"). Gated on
// 'done' being asked, like list_active's branches. `state || ''`: an expression, so no
// partial index proves it matches; as `state = 'done'` a plan made on a small table
// took job_retention_idx (every terminal row, then a sort).
static void
list_done_any(FILE *f)
{
	fputs(" UNION ALL (SELECT * FROM job WHERE $1::text IS NULL AND state || '' = 'done'"
	      "  AND 'done' = ANY($2::text[])" LIST_FILTERS " ORDER BY id DESC LIMIT $7)",
	      f);
}

// A topic's active rows of the asked states up to the id `top` (an expression:
// list_topic's fallback bound), newest first, at most $7: the ready ones through
// job_claim_priority_idx, the held ones through job_running_idx (partial indexes: the
// cost follows the backlog, not the history; the sort is over the backlog). Each
// branch is gated on the asked states by a condition on $2 alone, which PostgreSQL
// evaluates once (a "One-Time Filter"): a list of dead jobs never reads the backlog;
// so is `top IS NOT NULL` (a bound on id + 0 is only a filter: without the gate a
// backlog would be read whole to keep nothing).
static void
list_active(FILE *f, const char *top)
{
	fprintf(f,
		" UNION ALL (SELECT * FROM job WHERE topic = $1::text AND state IN ('pending', 'failed')"
		"  AND $2::text[] && '{pending,failed}'::text[] AND %s IS NOT NULL AND id + 0 <= %s"
		"  AND state = ANY($2::text[])" LIST_FILTERS_ACTIVE " ORDER BY id + 0 DESC LIMIT $7)"
		" UNION ALL (SELECT * FROM job WHERE topic = $1::text AND state = 'processing'"
		"  AND 'processing' = ANY($2::text[]) AND %s IS NOT NULL AND id + 0 <= %s" LIST_FILTERS_ACTIVE
		"  ORDER BY id + 0 DESC LIMIT $7)",
		top, top, top, top);
}

// The spans a topic's list walks before it falls back (list_topic): enough for a page
// of the sparsest topic (one job per span; pages are at most 200 + 1 rows, the
// console's 50 + 1), ~1,024 ids read per span.
#define SPAN_WALK "64"
// A span's ids: bucket b holds the ids b << 10 .. (b << 10) + 1023 (migration 00015).
#define SPAN_SHIFT "10"

// A topic's rows, newest first, at most $7. The topic's spans (job_topic_span: the ranges
// of 1,024 ids that hold its jobs, mapped by the janitor up to mk.mapped) are read
// newest first, each a bounded range of job_pkey, after the ids above the mark (the
// janitor's lag, walked by the primary key): w, every asked state, stopping at a page.
// A topic's jobs of every state lie in its spans, so a page costs about a page of the
// topic's jobs (a sparse topic: a span per job) -- not the history after them. Only
// when SPAN_WALK spans held less than a page of the asked states (a rare state of a
// busy topic) is the rest read below the walked spans (fb.top): dead and canceled rows
// through job_list_dead_idx, done rows through the remaining spans, active rows through
// their partial indexes. A list of only dead or canceled rows skips the walk (fb.top
// is the cursor). Exact either way: w holds every asked row of the ids it read.
static void
list_topic(FILE *f)
{
	fputs(" FROM (WITH mk AS (SELECT mapped FROM job_topic_span_mark),"
	      " sp AS MATERIALIZED (SELECT bucket FROM job_topic_span WHERE topic = $1::text"
	      "  AND bucket <= LEAST($6::int8, (SELECT mapped FROM mk), " LIST_ID_HI ") >> " SPAN_SHIFT
	      "  AND bucket >= " LIST_ID_LO " >> " SPAN_SHIFT
	      "  AND $2::text[] && '{pending,failed,processing,done}'::text[]"
	      "  ORDER BY bucket DESC LIMIT " SPAN_WALK " + 1),"
	      " w AS MATERIALIZED ((SELECT * FROM job WHERE topic = $1::text AND state || '' = "
	      "ANY($2::text[])"
	      "  AND $2::text[] && '{pending,failed,processing,done}'::text[]"
	      "  AND id > (SELECT mapped FROM mk)" LIST_FILTERS " ORDER BY id DESC LIMIT $7)"
	      " UNION ALL (SELECT l.* FROM (SELECT bucket FROM sp ORDER BY bucket DESC LIMIT " SPAN_WALK
	      ") b CROSS JOIN LATERAL (SELECT * FROM job WHERE topic = $1::text"
	      "  AND state || '' = ANY($2::text[]) AND id >= b.bucket << " SPAN_SHIFT
	      "  AND id < (b.bucket + 1) << " SPAN_SHIFT " AND id <= (SELECT mapped FROM mk)" LIST_FILTERS
	      "  ORDER BY id DESC LIMIT $7) l LIMIT $7)),"
	      // The fallback's bound: NULL when w is the answer.
	      " fb AS (SELECT CASE WHEN NOT $2::text[] && '{pending,failed,processing,done}'::text[]"
	      "  THEN $6::int8 WHEN (SELECT count(*) FROM w) >= $7"
	      "  OR (SELECT count(*) FROM sp) <= " SPAN_WALK " THEN NULL"
	      "  ELSE ((SELECT min(bucket) FROM (SELECT bucket FROM sp ORDER BY bucket DESC LIMIT " SPAN_WALK
	      ") s) << " SPAN_SHIFT ") - 1 END AS top)"
	      " (SELECT * FROM w)"
	      " UNION ALL (SELECT l.* FROM unnest($2::text[]) AS s(state) CROSS JOIN LATERAL ("
	      "  SELECT * FROM job WHERE topic = $1::text AND state = s.state AND state IN ('dead', "
	      "'canceled')"
	      "  AND id <= (SELECT top FROM fb)" LIST_FILTERS " ORDER BY id DESC LIMIT $7) l)"
	      " UNION ALL (SELECT l.* FROM (SELECT bucket FROM job_topic_span WHERE topic = $1::text"
	      "  AND bucket <= (SELECT top FROM fb) >> " SPAN_SHIFT " AND bucket >= " LIST_ID_LO
	      " >> " SPAN_SHIFT "  AND 'done' = ANY($2::text[])"
	      "  ORDER BY bucket DESC) b CROSS JOIN LATERAL (SELECT * FROM job WHERE topic = $1::text"
	      "  AND state || '' = 'done' AND id >= b.bucket << " SPAN_SHIFT
	      " AND id < (b.bucket + 1) << " SPAN_SHIFT "  AND id <= (SELECT top FROM fb)" LIST_FILTERS
	      " ORDER BY id DESC LIMIT $7) l LIMIT $7)",
	      f);
	list_active(f, "(SELECT top FROM fb)");
	fputs(") x", f);
}

// The ids the newest-first read of a backlog of any topic walks first (list_active_any).
#define LIST_NEAR "65536"
// The top of that walk: the cursor, or the newest id when the cursor is past it.
#define LIST_TOP "(SELECT LEAST($6::int8, max(id)) FROM job)"

// One state group's branch of the any-topic active list, newest first, at most $7.
// cond: the group's states and its gate on $2 (as list_active's). No index holds the
// backlog by id, and one would cost every job (docs/benchmarks.md, "Console reads"):
// first job_pkey is walked backwards over the newest LIST_NEAR ids (n), and it stops
// at a page, a few pages of ids when the group is a few percent of the rows; only
// when those ids hold less than a page is the rest of the group (the ids below them)
// read through its partial index and sorted, as before. The union is exact either way:
// n holds every row of its range when it holds less than $7.
static void
list_active_any(FILE *f, const char *cond)
{
	fprintf(f,
		" UNION ALL (WITH n AS (SELECT * FROM job WHERE $1::text IS NULL AND %s"
		"  AND id <= $6::int8 AND id > " LIST_TOP " - " LIST_NEAR LIST_FILTERS_REST
		"  ORDER BY id DESC LIMIT $7)"
		" SELECT * FROM n UNION ALL (SELECT * FROM job WHERE $1::text IS NULL AND %s"
		"  AND id + 0 <= " LIST_TOP " - " LIST_NEAR LIST_FILTERS_REST
		"  AND (SELECT count(*) FROM n) < $7 ORDER BY id + 0 DESC LIMIT $7))",
		cond, cond);
}

// $1 topic (NULL = any), $2 states text[] (the asked ones; all six when none was),
// $3..$6 LIST_FILTERS, $7 rows. Newest first (id DESC); the caller asks one row more
// than the page to learn whether another page follows. Keyset on id: rows inserted
// meanwhile have larger ids, so a page never shifts. Plans: docs/operations.md.
void
brq_store_sql_list(FILE *f, brq_stmt st)
{
	fputs("SELECT ", f);
	brq_store_sql_cols(f, BRQ_COLS(job_cols));
	switch (st) {
	case BRQ_STMT_LIST_ALL:
		// Every state: any row matches, so the primary key walked backwards finds
		// a page after reading about a page (more with time filters).
		fputs(" FROM job WHERE ($1::text IS NULL OR topic = $1::text)"
		      " AND state = ANY($2::text[])" LIST_FILTERS,
		      f);
		break;
	case BRQ_STMT_LIST_KEY:
		// (topic, key) is unique: job_idempotency_uq finds the one row. Without a
		// topic (issue 28.8), the topics that have keyed rows are found by skipping
		// through the same index (one probe per topic, as LIST_STATE does), and each
		// is probed for the key: no other index, the cost follows the topics. Each
		// branch is gated on $1 alone, so only one of them reads.
		fputs(" FROM ((SELECT * FROM job WHERE topic = $1::text AND idempotency_key = $5::text"
		      "  AND state = ANY($2::text[])" LIST_FILTERS ")"
		      " UNION ALL (WITH RECURSIVE t(topic) AS ("
		      "  (SELECT topic::text FROM job WHERE idempotency_key IS NOT NULL AND $1::text IS NULL"
		      "   ORDER BY topic LIMIT 1)"
		      "  UNION ALL SELECT (SELECT j.topic::text FROM job j"
		      "   WHERE j.idempotency_key IS NOT NULL AND j.topic > t.topic"
		      "   ORDER BY j.topic LIMIT 1) FROM t WHERE t.topic IS NOT NULL)"
		      "  SELECT l.* FROM t CROSS JOIN LATERAL ("
		      "   SELECT * FROM job WHERE topic = t.topic AND idempotency_key = $5::text"
		      "   AND state = ANY($2::text[])" LIST_FILTERS ") l"
		      "  WHERE t.topic IS NOT NULL)) x",
		      f);
		break;
	case BRQ_STMT_LIST_TOPIC: list_topic(f); break;
	default: // BRQ_STMT_LIST_STATE
		// Dead and canceled rows of any topic: the topics that have some, found by
		// skipping through job_list_dead_idx (one probe per topic), then per topic
		// and asked state as in LIST_TOPIC. The cost follows the number of topics.
		fputs(" FROM (WITH RECURSIVE t(topic) AS ("
		      "  (SELECT topic::text FROM job WHERE state IN ('dead', 'canceled')"
		      "   ORDER BY topic LIMIT 1)"
		      "  UNION ALL SELECT (SELECT j.topic::text FROM job j"
		      "   WHERE j.state IN ('dead', 'canceled') AND j.topic > t.topic"
		      "   ORDER BY j.topic LIMIT 1) FROM t WHERE t.topic IS NOT NULL)"
		      " (SELECT l.* FROM t CROSS JOIN unnest($2::text[]) AS s(state) CROSS JOIN LATERAL ("
		      "  SELECT * FROM job WHERE topic = t.topic AND state = s.state"
		      "  AND state IN ('dead', 'canceled')" LIST_FILTERS " ORDER BY id DESC LIMIT $7) l"
		      "  WHERE t.topic IS NOT NULL AND $1::text IS NULL)",
		      f);
		list_done_any(f);
		list_active_any(f,
				"state IN ('pending', 'failed') AND $2::text[] && '{pending,failed}'::text[]"
				" AND state = ANY($2::text[])");
		list_active_any(f, "state = 'processing' AND 'processing' = ANY($2::text[])");
		fputs(") x", f);
		break;
	}
	fputs(" ORDER BY id DESC LIMIT $7", f);
}

// retry and delete. A retry is a new job (the terminal original is never written:
// invariant 3): same topic, payload, max_attempts and priority, no key (the original keeps it),
// retry_of = the original. job_retry_of_uq allows one retry per job: ON CONFLICT
// makes a repeated request find the retry that exists instead of failing.
static const brq_sql_text retry_delete[BRQ_STMT__COUNT] = {
	// $1 id. One row when the job exists: its state and topic, the new job's
	// id (when this call made one), the id of a retry that existed before.
	[BRQ_STMT_RETRY_ONE] = {"WITH o AS (SELECT id, topic, payload, max_attempts, priority, state,"
				"  (SELECT r.id FROM job r WHERE r.retry_of = $1::int8) AS existing"
				"  FROM job WHERE id = $1::int8),"
				" ins AS (INSERT INTO job (topic, payload, max_attempts, priority, retry_of)"
				"  SELECT topic, payload, max_attempts, priority, id FROM o"
				"  WHERE state IN ('dead', 'canceled') AND existing IS NULL"
				"  ON CONFLICT (retry_of) WHERE retry_of IS NOT NULL DO NOTHING RETURNING id)"
				" SELECT ",
				BRQ_COLS(retry_cols), " FROM o LEFT JOIN ins ON true"},
	// $1 topic, $2 state (dead or canceled), $3 limit. Oldest first, through
	// job_list_dead_idx; jobs retried already are skipped (job_retry_of_uq).
	[BRQ_STMT_RETRY_BULK] =
		{"WITH o AS (SELECT id, topic, payload, max_attempts, priority FROM job j"
		 "  WHERE topic = $1::text AND state = $2::text AND state IN ('dead', 'canceled')"
		 "  AND NOT EXISTS (SELECT 1 FROM job r WHERE r.retry_of = j.id)"
		 "  ORDER BY id LIMIT $3::int4),"
		 " ins AS (INSERT INTO job (topic, payload, max_attempts, priority, retry_of)"
		 "  SELECT topic, payload, max_attempts, priority, id FROM o ORDER BY id"
		 "  ON CONFLICT (retry_of) WHERE retry_of IS NOT NULL DO NOTHING RETURNING id)"
		 " SELECT ",
		 BRQ_COLS(retried_cols), " FROM ins ORDER BY id"},
	// $1 id. Only a terminal job; any other is reported as it is.
	[BRQ_STMT_DELETE] = {"WITH d AS (DELETE FROM job WHERE id = $1::int8"
			     "  AND state IN ('done', 'dead', 'canceled') RETURNING topic)"
			     " SELECT ",
			     BRQ_COLS(delete_cols),
			     " FROM (SELECT true AS deleted, 'deleted' AS state, topic FROM d"
			     " UNION ALL SELECT false, state, topic FROM job"
			     " WHERE id = $1::int8 AND NOT EXISTS (SELECT 1 FROM d)) x"},
};

// The janitor's pass over the topics' spans (migration 00015 says why the mark moves as
// it does). $1: most ids mapped in one pass. SKIP LOCKED: with several gateways, one
// pass at a time; another's is skipped, not queued. A pass does one step: maps the ids
// up to the candidate once the seal's transactions have all ended (at most $1 of them;
// the rest next pass), takes the seal once the candidate is >= 100 ms old, or reads a new
// candidate (the sequence's last value drawn) when the last is mapped. No step, no
// write: an idle queue costs one read a pass. Only the first range of the ids mapped can
// hold spans already (the passes are one at a time and the mark only grows): it alone is
// checked, since ON CONFLICT's speculative insert cost every span more (0.6 % of a job's
// PostgreSQL instructions with 100 topics in every range; docs/benchmarks.md).
static const char span_map[] =
	"WITH m AS (SELECT mapped, cand, cand_at, seal FROM job_topic_span_mark FOR UPDATE SKIP LOCKED),"
	" go AS (SELECT mapped AS lo, LEAST(cand, mapped + $1::int8) AS hi FROM m WHERE seal IS NOT NULL"
	"  AND pg_snapshot_xmin(pg_current_snapshot()) >= pg_snapshot_xmax(seal)),"
	" ins AS (INSERT INTO job_topic_span (topic, bucket) SELECT d.t, d.b FROM go CROSS JOIN LATERAL"
	"  (SELECT DISTINCT topic AS t, id >> " SPAN_SHIFT
	" AS b FROM job WHERE id > go.lo AND id <= go.hi) d"
	"  WHERE d.b > go.lo >> " SPAN_SHIFT " OR NOT EXISTS (SELECT 1 FROM job_topic_span s"
	"  WHERE s.topic = d.t AND s.bucket = d.b)),"
	" n AS (SELECT coalesce(go.hi, m.mapped) AS mapped,"
	"  CASE WHEN go.hi IS NULL OR go.hi < m.cand THEN m.cand END AS cand, m.cand_at, m.seal"
	"  FROM m LEFT JOIN go ON true),"
	" s AS MATERIALIZED (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS v FROM "
	"job_id_seq)"
	" UPDATE job_topic_span_mark t SET mapped = n.mapped,"
	"  cand = CASE WHEN n.cand IS NOT NULL THEN n.cand WHEN s.v > n.mapped THEN s.v END,"
	"  cand_at = CASE WHEN n.cand IS NOT NULL THEN n.cand_at WHEN s.v > n.mapped THEN now() END,"
	"  seal = CASE WHEN n.cand IS NULL THEN NULL WHEN n.seal IS NOT NULL THEN n.seal"
	"  WHEN now() - n.cand_at >= interval '100 milliseconds' THEN pg_current_snapshot() END"
	" FROM n, s WHERE EXISTS (SELECT 1 FROM go) OR (n.cand IS NULL AND s.v > n.mapped)"
	"  OR (n.cand IS NOT NULL AND n.seal IS NULL AND now() - n.cand_at >= interval '100 milliseconds')"
	" RETURNING ";

// Spans below the oldest job (retention deletes the oldest first): a whole read of the
// span table (~100 bytes a span, a span per topic per 1,024 ids), at retention's pace.
static const char span_prune[] =
	"DELETE FROM job_topic_span WHERE bucket < (SELECT min(id) FROM job) >> " SPAN_SHIFT;

void
brq_store_sql_span(FILE *f, brq_stmt st)
{
	if (st == BRQ_STMT_SPAN_PRUNE) {
		fputs(span_prune, f);
		return;
	}
	static const char *const cols[] = {SPAN_COLS(BRQ_COL_EXPR)};
	fputs(span_map, f);
	brq_store_sql_cols(f, BRQ_COLS(cols));
}

void
brq_store_sql_retry_delete(FILE *f, brq_stmt st)
{
	brq_store_sql_text(f, &retry_delete[st]);
}
