// SPDX-License-Identifier: MIT
// The statement texts of the console's history and workers (store_history.c, migration
// 00014), for brq_store_sql_build (store_sql.c).
#include "store_sql_console.h"

#include "store_sql.h"

static const char *const hist_cols[]   = {HIST_COLS(BRQ_COL_EXPR)};
static const char *const worker_cols[] = {WORKER_COLS(BRQ_COL_EXPR)};
static const char *const job_cols[]    = {JOB_COLS(BRQ_COL_EXPR)};

// A minute of the history from unix ms $1 (the writer's wall clock, floored to the minute).
#define MINUTE "to_timestamp($1::int8 / 1000.0)"

static const brq_sql_text texts[] = {
	// $1 minute (ms), $2 topics text[], $3 started int8[], $4 finished int8[], $5 the
	// waits' histograms text[] ("{n,n,...}"): what one gateway counted since its last
	// write, added to the minute's rows. Several gateways add theirs: counts and
	// histograms add up (percentiles would not). The topics come sorted, so two
	// gateways lock the rows they share in the same order.
	{"INSERT INTO job_history AS h (topic, minute, started, finished, wait_hist)"
	 " SELECT u.topic, " MINUTE ", u.started, u.finished, u.wait::int8[]"
	 " FROM unnest($2::text[], $3::int8[], $4::int8[], $5::text[]) AS u(topic, started, finished, wait)"
	 " ON CONFLICT (topic, minute) DO UPDATE SET started = h.started + excluded.started,"
	 " finished = h.finished + excluded.finished,"
	 " wait_hist = CASE WHEN h.wait_hist IS NULL THEN excluded.wait_hist"
	 "  WHEN excluded.wait_hist IS NULL THEN h.wait_hist"
	 "  ELSE (SELECT array_agg(coalesce(a, 0) + coalesce(b, 0) ORDER BY k)"
	 "   FROM unnest(h.wait_hist, excluded.wait_hist) WITH ORDINALITY AS w(a, b, k)) END",
	 NULL, 0, NULL},
	// $1 minute (ms): the backlog per topic now (jobs pending or failed, and of them
	// those due), counted through job_claim_priority_idx as the monitor counts it
	// (the cost of the backlog, not of the history), written into the minute's rows:
	// the last count of the minute wins. A topic of the minute's rows without a
	// backlog (it emptied since an earlier count, or the minute's row holds only
	// starts) gets 0; a minute without a row stays without one (docs/console.md).
	{"WITH d AS (SELECT topic, count(*) AS pending,"
	 "  count(*) FILTER (WHERE available_at <= now()) AS ready"
	 "  FROM job WHERE state IN ('pending', 'failed') GROUP BY topic),"
	 " z AS (UPDATE job_history h SET pending = 0, ready = 0 WHERE h.minute = " MINUTE
	 "  AND (h.pending IS NULL OR h.pending > 0) AND NOT EXISTS (SELECT 1 FROM d WHERE d.topic = "
	 "h.topic))"
	 " INSERT INTO job_history AS h (topic, minute, pending, ready)"
	 " SELECT d.topic, " MINUTE ", d.pending, d.ready FROM d ORDER BY d.topic"
	 " ON CONFLICT (topic, minute) DO UPDATE SET pending = excluded.pending, ready = excluded.ready",
	 NULL, 0, NULL},
	// $1 ms to keep: the minutes older go (job_history_minute_idx).
	{"DELETE FROM job_history WHERE minute < now() - $1::int8 * interval '1 millisecond'", NULL, 0, NULL},
	// $1 topic, $2 from, $3 to (unix ms): the topic's minutes in [from, to) (the
	// primary key).
	{"SELECT ", BRQ_COLS(hist_cols),
	 " FROM job_history h WHERE h.topic = $1 AND h.minute >= to_timestamp($2::int8 / 1000.0)"
	 " AND h.minute < to_timestamp($3::int8 / 1000.0) ORDER BY h.minute"},
};

// The workers: the holders of processing jobs, through job_running_idx (the cost of the
// jobs running, not of the table). $1 the most holders listed.
static void
workers_sql(FILE *f, const brq_config *cfg)
{
	fputs("SELECT ", f);
	brq_store_sql_cols(f, BRQ_COLS(worker_cols));
	fputs(" FROM (SELECT locked_by, count(*) AS jobs,"
	      " count(*) FILTER (WHERE locked_until < now()) AS expired,"
	      " min(claimed_at) AS oldest_claim, max(locked_until) AS lease_until,"
	      " max(locked_until - ",
	      f);
	brq_store_sql_lease_case(f, cfg, "topic");
	fputs(" * interval '1 millisecond') AS last_beat,"
	      " array_agg(DISTINCT topic ORDER BY topic) AS topics"
	      " FROM job WHERE state = 'processing' GROUP BY locked_by ORDER BY locked_by LIMIT $1) w"
	      " ORDER BY w.locked_by",
	      f);
}

void
brq_store_sql_console(FILE *f, const brq_config *cfg, brq_stmt st)
{
	switch (st) {
	case BRQ_STMT_HISTORY_ADD: brq_store_sql_text(f, &texts[0]); break;
	case BRQ_STMT_HISTORY_DEPTH: brq_store_sql_text(f, &texts[1]); break;
	case BRQ_STMT_HISTORY_PRUNE: brq_store_sql_text(f, &texts[2]); break;
	case BRQ_STMT_HISTORY_READ: brq_store_sql_text(f, &texts[3]); break;
	case BRQ_STMT_WORKERS: workers_sql(f, cfg); break;
	default:
		// $1 holder, $2 the most jobs: its jobs, oldest claim first (job_running_idx).
		fputs("SELECT ", f);
		brq_store_sql_cols(f, BRQ_COLS(job_cols));
		fputs(" FROM job WHERE state = 'processing' AND locked_by = $1 ORDER BY claimed_at, id LIMIT "
		      "$2",
		      f);
		break;
	}
}
