// SPDX-License-Identifier: MIT
// Janitor: the lease reaper and retention, on their own thread and connection (SPEC §4).
#include "janitor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "metrics.h"

// Rows per reaper statement; a pass repeats until a statement reaps fewer.
#define REAP_BATCH 1000

// Runs one batch statement returning a topic per affected row, counts the rows per
// topic into metric c. Returns the number of rows, or -1.
static int64_t
batch(brq_janitor *j, brq_stmt st, const char *const *v, brq_topic_counter c)
{
	PGresult *r = brq_db_exec(&j->db, st, v, NULL, NULL);
	if (!brq_db_ok(r)) {
		BRQ_LOG_WARN("janitor_statement_failed", "stmt=%s error=%s", brq_sql_name(st),
			     BRQ_LOG_Q(r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : "no connection"));
		PQclear(r);
		return -1;
	}
	int n = PQntuples(r);
	for (int i = 0; i < n; i++)
		brq_metrics_topic_add(PQgetvalue(r, i, 0), (size_t) PQgetlength(r, i, 0), c, 1);
	PQclear(r);
	return n;
}

int64_t
brq_janitor_reap(brq_janitor *j)
{
	char        lim[16];
	const char *v[1]  = {lim};
	int64_t     total = 0, n;
	snprintf(lim, sizeof(lim), "%d", REAP_BATCH);
	if (!brq_db_ready(&j->db))
		return -1;
	do {
		n = batch(j, BRQ_STMT_REAP, v, BRQ_MT_REAPED);
		if (n < 0)
			return -1;
		total += n;
	} while (n == REAP_BATCH);
	if (total > 0)
		BRQ_LOG_INFO("reaped", "jobs=%lld", (long long) total);
	return total;
}

int64_t
brq_janitor_retain(brq_janitor *j)
{
	const struct brq_config *cfg = j->cfg;
	// TTL 0 disables retention; it never means "delete everything".
	if (cfg->retention_ttl_ms == 0)
		return 0;
	if (!brq_db_ready(&j->db))
		return -1;
	char        ttl[24], lim[16];
	const char *v[2]  = {ttl, lim};
	int64_t     total = 0, n = 0;
	uint32_t    batches = 0;
	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long) cfg->retention_ttl_ms);
	snprintf(lim, sizeof(lim), "%u", cfg->retention_batch);
	// Each batch is its own transaction (autocommit), so locks are short and a
	// crash loses at most one batch of work.
	for (; batches < cfg->retention_max_batches; batches++) {
		n = batch(j, BRQ_STMT_RETENTION, v, BRQ_MT_RETENTION_DELETED);
		if (n < 0)
			return total > 0 ? total : -1;
		total += n;
		if ((uint32_t) n < cfg->retention_batch)
			break;
		pthread_mutex_lock(&j->mtx);
		bool stop = j->stopping;
		pthread_mutex_unlock(&j->mtx);
		if (stop)
			break;
	}
	if (total > 0)
		BRQ_LOG_INFO("retention_deleted", "jobs=%lld batches=%u", (long long) total,
			     batches + (batches < cfg->retention_max_batches));
	if (batches == cfg->retention_max_batches)
		BRQ_LOG_WARN("retention_backlog", "batches=%u batch=%u hint=%s", batches,
			     cfg->retention_batch,
			     "more expired rows remain; raise BROOQ_RETENTION_BATCH or _MAX_BATCHES");
	return total;
}

static void *
janitor_main(void *arg)
{
	brq_janitor *j = arg;
	pthread_mutex_lock(&j->mtx);
	while (!j->stopping) {
		uint64_t now = brq_now_ms();
		if (now >= j->next_reap_ms || now >= j->next_retention_ms) {
			bool reap = now >= j->next_reap_ms, retain = now >= j->next_retention_ms;
			pthread_mutex_unlock(&j->mtx);
			if (reap)
				(void) brq_janitor_reap(j);
			if (retain)
				(void) brq_janitor_retain(j);
			pthread_mutex_lock(&j->mtx);
			now = brq_now_ms();
			if (reap)
				j->next_reap_ms = now + j->cfg->reaper_interval_ms;
			if (retain)
				j->next_retention_ms = now + j->cfg->retention_interval_ms;
			continue;
		}
		uint64_t next =
			j->next_reap_ms < j->next_retention_ms ? j->next_reap_ms : j->next_retention_ms;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t wait_ms = next - now;
		ts.tv_sec += (time_t) (wait_ms / 1000);
		ts.tv_nsec += (long) (wait_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&j->cv, &j->mtx, &ts);
	}
	pthread_mutex_unlock(&j->mtx);
	return NULL;
}

int
brq_janitor_start(brq_janitor *j, const struct brq_config *cfg, const brq_sql *sql)
{
	pthread_condattr_t ca;
	memset(j, 0, sizeof(*j));
	j->cfg = cfg;
	brq_db_init(&j->db, cfg->dsn, sql, "janitor");
	pthread_mutex_init(&j->mtx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	j->next_reap_ms      = brq_now_ms();
	j->next_retention_ms = brq_now_ms();
	if (pthread_create(&j->thread, NULL, janitor_main, j) != 0) {
		pthread_mutex_destroy(&j->mtx);
		pthread_cond_destroy(&j->cv);
		return -1;
	}
	return 0;
}

void
brq_janitor_stop(brq_janitor *j)
{
	pthread_mutex_lock(&j->mtx);
	j->stopping = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mtx);
	pthread_join(j->thread, NULL);
	brq_db_fini(&j->db);
	pthread_mutex_destroy(&j->mtx);
	pthread_cond_destroy(&j->cv);
}
