// SPDX-License-Identifier: MIT
// Janitor: the lease reaper, retention and the topics' spans of ids (migration 00015), on
// their own thread and connection (SPEC §4).
#include "janitor.h"

#include <inttypes.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "brq_clock.h"

#include "log/log.h"
#include "metrics/metrics.h"

// Rows per reaper statement; a pass repeats until a statement reaps fewer.
#define REAP_BATCH 1000
// The spans' pace: a new job is mapped two or three passes after its insert (a
// candidate, its seal, then the mapping), and until then the list by topic walks the
// primary key above the mark: ~0.5 s of enqueues at this pace.
#define SPAN_INTERVAL_MS 200
// Ids mapped per pass at most (~0.1 s of PostgreSQL's work): a big backlog of unmapped
// ids, after a long stop, is caught up over several passes.
#define SPAN_MAX_IDS 262144
// The shortest pause between retention ticks while it is behind (retention_pause).
#define RETENTION_CATCHUP_MIN_MS 100

// Counts rows per topic into metric c; the topics are the store's (one per row).
static void
count(const brq_str *topics, uint32_t n, brq_topic_counter c)
{
	for (uint32_t i = 0; i < n; i++)
		brq_metrics_topic_add(topics[i].ptr, topics[i].len, c, 1);
}

// Counts the leases taken back, and the jobs quarantined among them (SPEC invariant
// 18): in brooq_quarantined_total and, as every move to dead, brooq_dead_total. Each
// quarantine is logged: a crash loop is a handler bug an operator must hear of.
// Returns how many were quarantined.
static uint32_t
count_reaped(const brq_store_reaped *rows, uint32_t n)
{
	uint32_t quarantined = 0;
	for (uint32_t i = 0; i < n; i++) {
		brq_metrics_topic_add(rows[i].topic.ptr, rows[i].topic.len, BRQ_MT_REAPED, 1);
		if (!rows[i].is_quarantined)
			continue;
		brq_metrics_topic_add(rows[i].topic.ptr, rows[i].topic.len, BRQ_MT_QUARANTINED, 1);
		brq_metrics_dead(rows[i].topic.ptr, rows[i].topic.len, 1);
		quarantined++;
	}
	return quarantined;
}

int64_t
brq_janitor_reap(brq_janitor *j)
{
	int64_t           total = 0, quarantined = 0;
	uint32_t          n;
	brq_store_reaped *rows;
	if (!brq_store_ready(&j->bg.conn))
		return BRQ_EUNAVAIL;
	do {
		int rv = brq_store_reap(&j->bg.conn, REAP_BATCH, &rows, &n);
		if (rv != 0) {
			BRQ_LOG_WARN("janitor_statement_failed", "stmt=reap error=%s",
				     BRQ_LOG_Q(brq_store_errmsg(&j->bg.conn)));
			brq_store_reset(&j->bg.conn);
			return rv;
		}
		quarantined += count_reaped(rows, n);
		brq_store_reset(&j->bg.conn);
		total += n;
	} while (n == REAP_BATCH);
	if (total > 0)
		BRQ_LOG_INFO("reaped", "jobs=%lld", (long long) total);
	// The jobs are named by brooqctl list --state dead; their last_error says why.
	if (quarantined > 0)
		BRQ_LOG_WARN(
			"quarantined", "jobs=%lld hint=%s", (long long) quarantined,
			BRQ_LOG_Q("leases ran out max_lost_leases times without an outcome: "
				  "a handler that kills or hangs its worker; see the dead jobs' last_error"));
	return total;
}

// Whether retention is behind (a tick ended at its batch limit: its next tick comes
// early), and what operators are told. At a high enough rate every tick ends at the
// limit and the next finds rows that expired meanwhile, so "behind" alone is a steady
// state, not news: once per interval while behind, retention asks how long past its
// TTL the oldest row is, and warns only when that is more than an interval (what the
// interval alone would have allowed). A warned-of backlog is said caught up when it is.
static void
retention_track(brq_janitor *j, bool behind, int64_t deleted)
{
	uint64_t now = brq_now_ms(), interval = j->cfg->retention_interval_ms;
	if (!behind) {
		if (j->retention_warned)
			BRQ_LOG_INFO("retention_caught_up", "jobs=%lld behind_ms=%llu",
				     (long long) (j->retention_behind_deleted + deleted),
				     (unsigned long long) (now - j->retention_behind_since_ms));
		j->retention_behind_since_ms = j->retention_checked_ms = 0;
		j->retention_warned                                    = false;
		return;
	}
	if (j->retention_behind_since_ms == 0) {
		j->retention_behind_since_ms = now;
		j->retention_behind_deleted  = 0;
	}
	j->retention_behind_deleted += deleted;
	if (j->retention_checked_ms != 0 && now - j->retention_checked_ms < interval)
		return;
	j->retention_checked_ms = now;
	int64_t lag_ms          = 0;
	int     rv              = brq_store_retention_lag(&j->bg.conn, j->cfg->retention_ttl_ms, &lag_ms);
	brq_store_reset(&j->bg.conn);
	if (rv != 0 || lag_ms <= (int64_t) interval)
		return;
	j->retention_warned = true;
	BRQ_LOG_WARN("retention_backlog", "lag_ms=%lld batches=%u batch=%u hint=%s", (long long) lag_ms,
		     j->cfg->retention_max_batches, j->cfg->retention_batch,
		     "expired rows wait longer than an interval; retention ticks early until they are gone; "
		     "if this repeats, raise BROOQ_RETENTION_BATCH");
}

int64_t
brq_janitor_retain(brq_janitor *j)
{
	const brq_config *cfg = j->cfg;
	// TTL 0 disables retention; it never means "delete everything".
	if (cfg->retention_ttl_ms == 0)
		return 0;
	if (!brq_store_ready(&j->bg.conn))
		return BRQ_EUNAVAIL;
	int64_t  total = 0;
	uint32_t n = 0, batches = 0;
	brq_str *topics;
	// Each batch is its own transaction (autocommit), so locks are short and a
	// crash loses at most one batch of work.
	for (; batches < cfg->retention_max_batches; batches++) {
		int rv = brq_store_retention(&j->bg.conn, cfg->retention_ttl_ms, cfg->retention_batch,
					     &topics, &n);
		if (rv != 0) {
			BRQ_LOG_WARN("janitor_statement_failed", "stmt=retention error=%s",
				     BRQ_LOG_Q(brq_store_errmsg(&j->bg.conn)));
			brq_store_reset(&j->bg.conn);
			return total > 0 ? total : rv;
		}
		count(topics, n, BRQ_MT_RETENTION_DELETED);
		brq_store_reset(&j->bg.conn);
		total += n;
		if (n < cfg->retention_batch || brq_bgthread_is_stopping(&j->bg))
			break;
	}
	if (total > 0)
		BRQ_LOG_INFO("retention_deleted", "jobs=%lld batches=%u", (long long) total,
			     batches + (batches < cfg->retention_max_batches));
	retention_track(j, batches == cfg->retention_max_batches, total);
	return total;
}

int64_t
brq_janitor_map_spans(brq_janitor *j)
{
	if (!brq_store_ready(&j->bg.conn))
		return BRQ_EUNAVAIL;
	int64_t mapped, cand;
	int     rv = brq_store_span_map(&j->bg.conn, SPAN_MAX_IDS, &mapped, &cand);
	if (rv != 0)
		BRQ_LOG_WARN("janitor_statement_failed", "stmt=span_map error=%s",
			     BRQ_LOG_Q(brq_store_errmsg(&j->bg.conn)));
	brq_store_reset(&j->bg.conn);
	return rv != 0 ? rv : mapped;
}

// Drops the spans retention left below the oldest job.
static void
prune_spans(brq_janitor *j)
{
	if (!brq_store_ready(&j->bg.conn))
		return;
	if (brq_store_span_prune(&j->bg.conn) != 0)
		BRQ_LOG_WARN("janitor_statement_failed", "stmt=span_prune error=%s",
			     BRQ_LOG_Q(brq_store_errmsg(&j->bg.conn)));
	brq_store_reset(&j->bg.conn);
}

// The topic limits of the configuration, written once at start (retried every reaper
// round until the database takes them): from then on an admin's topic_limits may
// change them, until a gateway with this configuration starts again.
static void
configure_limits(brq_janitor *j)
{
	if (!brq_store_ready(&j->bg.conn))
		return;
	int rv = brq_store_policy_configure(&j->bg.conn);
	if (rv == 0) {
		j->limits_configured = true;
		for (size_t i = 0; i < j->cfg->n_topic_overrides; i++) {
			const brq_topic_override *o = &j->cfg->topic_overrides[i];
			if (o->has_concurrency || o->has_rate)
				BRQ_LOG_INFO("topic_limits_configured",
					     "topic=%s concurrency=%s%" PRIu32 " rate=%s%" PRIu32, o->topic,
					     o->has_concurrency ? "" : "kept:", o->concurrency,
					     o->has_rate ? "" : "kept:", o->rate);
		}
	} else {
		BRQ_LOG_WARN("topic_limits_not_configured", "error=%s reason=%s", brq_err_name(rv),
			     BRQ_LOG_Q(brq_store_errmsg(&j->bg.conn)));
	}
	brq_store_reset(&j->bg.conn);
}

// How long until the next retention tick. While behind, as long as the tick took (at
// least RETENTION_CATCHUP_MIN_MS): retention then deletes as fast as half of one
// connection's time allows, whatever the rate jobs end at, and leaves the database and
// this thread's other work (the reaper, the spans) the other half.
static uint64_t
retention_pause(const brq_janitor *j, uint64_t took)
{
	uint64_t interval = j->cfg->retention_interval_ms;
	if (j->retention_behind_since_ms == 0)
		return interval;
	uint64_t pause = took > RETENTION_CATCHUP_MIN_MS ? took : RETENTION_CATCHUP_MIN_MS;
	return pause < interval ? pause : interval;
}

// One round (bgthread.h): the reaper, retention and the spans when they are due. Returns when
// the next of them is due.
static uint64_t
janitor_round(void *arg)
{
	brq_janitor *j      = arg;
	uint64_t     now    = brq_now_ms();
	bool         reap   = now >= j->next_reap_ms;
	bool         retain = now >= j->next_retention_ms;
	if (reap && !j->limits_configured)
		configure_limits(j);
	if (reap)
		(void) brq_janitor_reap(j);
	if (retain) {
		(void) brq_janitor_retain(j);
		prune_spans(j);
	}
	uint64_t took  = brq_now_ms() - now; // the reaper's and retention's time, this round
	bool     spans = now >= j->next_span_ms;
	if (spans)
		(void) brq_janitor_map_spans(j);
	now = brq_now_ms();
	if (reap)
		j->next_reap_ms = now + j->cfg->reaper_interval_ms;
	if (retain)
		j->next_retention_ms = now + retention_pause(j, took);
	if (spans)
		j->next_span_ms = now + SPAN_INTERVAL_MS;
	uint64_t next = j->next_reap_ms < j->next_retention_ms ? j->next_reap_ms : j->next_retention_ms;
	return next < j->next_span_ms ? next : j->next_span_ms;
}

int
brq_janitor_start(brq_janitor *j, const brq_config *cfg, const brq_store *st)
{
	memset(j, 0, sizeof(*j));
	j->cfg               = cfg;
	j->next_reap_ms      = brq_now_ms();
	j->next_retention_ms = brq_now_ms();
	j->next_span_ms      = brq_now_ms();
	int rv               = brq_bgthread_init(&j->bg, st,
						 &(brq_store_conn_opts) {.name = "janitor", .role = BRQ_STORE_JANITOR});
	return rv != 0 ? rv
		       : brq_bgthread_start(&j->bg, &(brq_bgthread_loop) {.round = janitor_round, .arg = j});
}

void
brq_janitor_stop(brq_janitor *j)
{
	brq_bgthread_stop(&j->bg);
}
