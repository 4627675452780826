// SPDX-License-Identifier: MIT
// Prometheus metrics: the text exposition of /metrics, from the state in metrics_int.h.
#include "metrics_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "brq_grow.h"

// ---- rendering ------------------------------------------------------------

struct buf {
	char  *p;
	size_t len;
	size_t cap;
	bool   is_oom;
};

static void
buf_reserve(struct buf *b, size_t more)
{
	if (!b->is_oom && brq_grow(&b->p, &b->cap, b->len + more + 1, 16384) != 0) {
		b->is_oom = true;
	}
}

static void
buf_mem(struct buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	if (b->is_oom) {
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
buf_str(struct buf *b, const char *s)
{
	buf_mem(b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char    tmp[256];
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->is_oom = true;
		return;
	}
	if ((size_t) n < sizeof(tmp)) {
		buf_mem(b, tmp, (size_t) n);
		return;
	}
	buf_reserve(b, (size_t) n);
	if (b->is_oom) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
}

// A label value, escaped as the text format requires: \\ \" \n.
static void
buf_label_value(struct buf *b, const char *s, size_t n)
{
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		const char *esc = NULL;
		switch (s[i]) {
		case '\\': esc = "\\\\"; break;
		case '"': esc = "\\\""; break;
		case '\n': esc = "\\n"; break;
		default: continue;
		}
		buf_mem(b, s + start, i - start);
		buf_str(b, esc);
		start = i + 1;
	}
	buf_mem(b, s + start, n - start);
}

static void
family(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

// name{topic="..."[,extra]} prefix of a per-topic sample.
static void
topic_sample(struct buf *b, const char *name, const struct topic_entry *e)
{
	buf_str(b, name);
	buf_str(b, "{topic=\"");
	buf_label_value(b, e->name, e->len);
	buf_str(b, "\"");
}

static void
render_seconds_us(struct buf *b, uint64_t us)
{
	buf_printf(b, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

static void
render_topic_counter(struct buf *b, struct topic_entry **v, size_t n, const char *name, const char *help,
		     brq_topic_counter c)
{
	family(b, name, "counter", help);
	for (size_t i = 0; i < n; i++) {
		topic_sample(b, name, v[i]);
		buf_printf(b, "} %" PRIu64 "\n",
			   atomic_load_explicit(&v[i]->counter[c], memory_order_relaxed));
	}
}

static void
render_depth(struct buf *b, struct topic_entry **v, size_t n)
{
	pthread_mutex_lock(&M.reg.depth_mu);
	family(b, "brooq_jobs", "gauge",
	       "Jobs per topic and state, from the periodic depth query (terminal states refresh less "
	       "often).");
	for (size_t i = 0; i < n; i++) {
		for (int s = 0; s < BRQ_STATE__COUNT; s++) {
			topic_sample(b, "brooq_jobs", v[i]);
			buf_printf(b, ",state=\"%s\"} %" PRIu64 "\n", brq_state_name((brq_state) s),
				   v[i]->jobs[s]);
		}
	}
	family(b, "brooq_jobs_estimated", "gauge",
	       "1 while brooq_jobs' done, dead and canceled counts are estimates from a page sample (the "
	       "table outgrew the monitor's budget), 0 while they are exact.");
	buf_printf(b, "brooq_jobs_estimated %d\n",
		   atomic_load_explicit(&M.jobs_estimated, memory_order_relaxed));
	family(b, "brooq_ready_oldest_age_seconds", "gauge",
	       "Age of the oldest ready job (pending or failed, available_at <= now()) per topic; 0 when "
	       "nothing is ready.");
	for (size_t i = 0; i < n; i++) {
		topic_sample(b, "brooq_ready_oldest_age_seconds", v[i]);
		buf_printf(b, "} %.3f\n", v[i]->oldest_ready_age_s);
	}
	family(b, "brooq_topic_paused", "gauge",
	       "1 while the topic is paused (brooqctl pause): no gateway claims its jobs.");
	for (size_t i = 0; i < n; i++) {
		topic_sample(b, "brooq_topic_paused", v[i]);
		buf_printf(b, "} %d\n", v[i]->paused ? 1 : 0);
	}
	family(b, "brooq_topic_max_running", "gauge",
	       "The topic's concurrency limit: at most this many of its jobs processing at once; 0 when "
	       "unlimited.");
	for (size_t i = 0; i < n; i++) {
		topic_sample(b, "brooq_topic_max_running", v[i]);
		buf_printf(b, "} %" PRIu32 "\n", v[i]->max_running);
	}
	family(b, "brooq_topic_rate_limit_per_second", "gauge",
	       "The topic's rate limit: at most this many of its jobs started per second; 0 when unlimited.");
	for (size_t i = 0; i < n; i++) {
		topic_sample(b, "brooq_topic_rate_limit_per_second", v[i]);
		buf_printf(b, "} %" PRIu32 "\n", v[i]->rate_per_s);
	}
	pthread_mutex_unlock(&M.reg.depth_mu);
}

// A gauge of one sample without labels, or without a sample while is_known is false.
static void
render_gauge(struct buf *b, const char *name, const char *help, bool is_known, int decimals, double v)
{
	family(b, name, "gauge", help);
	if (is_known) {
		buf_printf(b, "%s %.*f\n", name, decimals, v);
	}
}

// The job table's upkeep and the oldest transaction: what a vacuum falling behind
// looks like before the claims slow down (docs/operations.md, section 6).
static void
render_table(struct buf *b)
{
	pthread_mutex_lock(&M.reg.depth_mu);
	const brq_table_stats *t  = &M.reg.table;
	bool                   ok = M.reg.has_table;
	render_gauge(b, "brooq_job_table_dead_tuples",
		     "Dead row versions in the job table that vacuum has not removed yet "
		     "(pg_stat_user_tables.n_dead_tup, an estimate).",
		     ok, 0, (double) t->dead_tuples);
	render_gauge(b, "brooq_job_table_live_tuples",
		     "Live rows in the job table (pg_stat_user_tables.n_live_tup, an estimate).", ok, 0,
		     (double) t->live_tuples);
	render_gauge(b, "brooq_job_table_size_bytes",
		     "Size on disk of the job table with its indexes and TOAST "
		     "(pg_total_relation_size).",
		     ok, 0, (double) t->bytes);
	render_gauge(b, "brooq_job_table_index_size_bytes",
		     "Size on disk of the job table's indexes (pg_indexes_size).", ok, 0,
		     (double) t->index_bytes);
	render_gauge(b, "brooq_job_table_last_autovacuum_age_seconds",
		     "Seconds since autovacuum last finished on the job table (never since the server "
		     "started: since its start).",
		     ok, 3, t->autovacuum_age_s);
	render_gauge(b, "brooq_job_table_last_vacuum_age_seconds",
		     "Seconds since a manual VACUUM last finished on the job table (never since the "
		     "server started: since its start).",
		     ok, 3, t->vacuum_age_s);
	family(b, "brooq_job_table_autovacuums_total", "counter",
	       "Autovacuum runs on the job table since PostgreSQL's statistics began "
	       "(pg_stat_user_tables.autovacuum_count).");
	if (ok) {
		buf_printf(b, "brooq_job_table_autovacuums_total %" PRIu64 "\n", t->autovacuums);
	}
	render_gauge(b, "brooq_db_oldest_transaction_age_seconds",
		     "Age of the oldest transaction in the database that holds a snapshot or a "
		     "transaction id (what keeps vacuum from removing dead rows); 0 when none.",
		     ok, 3, t->oldest_xact_age_s);
	pthread_mutex_unlock(&M.reg.depth_mu);
}

static void
render_histogram(struct buf *b, const char *op, const struct histogram *h)
{
	uint64_t cum = 0;
	for (size_t i = 0; i <= N_BUCKETS; i++) {
		cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
		buf_printf(b, "brooq_rpc_duration_seconds_bucket{op=\"%s\",le=\"%s\"} %" PRIu64 "\n", op,
			   i < N_BUCKETS ? bucket_le_str[i] : "+Inf", cum);
	}
	buf_printf(b, "brooq_rpc_duration_seconds_sum{op=\"%s\"} ", op);
	render_seconds_us(b, atomic_load_explicit(&h->sum_us, memory_order_relaxed));
	buf_printf(b, "\nbrooq_rpc_duration_seconds_count{op=\"%s\"} %" PRIu64 "\n", op, cum);
}

static bool
hist_is_empty(const struct histogram *h)
{
	for (size_t i = 0; i <= N_BUCKETS; i++) {
		if (atomic_load_explicit(&h->bucket[i], memory_order_relaxed) != 0) {
			return false;
		}
	}
	return true;
}

static void
render_rpc(struct buf *b)
{
	family(b, "brooq_rpc_requests_total", "counter",
	       "RPCs answered, by operation and reply status code.");
	for (int op = 0; op < BRQ_OP__COUNT; op++) {
		for (int st = 0; st < BRQ_ST__COUNT; st++) {
			uint64_t v = atomic_load_explicit(&M.rpc[op][st], memory_order_relaxed);
			// Every known op shows code="ok" from the start, so rate() sees the
			// first request; other codes appear when they first happen.
			bool is_always = op != BRQ_OP_NONE && st == BRQ_ST_OK;
			if (v == 0 && !is_always) {
				continue;
			}
			buf_printf(b, "brooq_rpc_requests_total{op=\"%s\",code=\"%s\"} %" PRIu64 "\n",
				   brq_op_name((brq_op) op), brq_status_name((brq_status) st), v);
		}
	}
	family(b, "brooq_rpc_duration_seconds", "histogram",
	       "RPC latency from receipt to reply, by operation; long-poll claims that waited are "
	       "op=\"claim_wait\"; op=\"watch\" includes the watch's wait.");
	for (int op = 0; op < BRQ_OP__COUNT; op++) {
		if (op == BRQ_OP_NONE && hist_is_empty(&M.hist[op])) {
			continue;
		}
		render_histogram(b, brq_op_name((brq_op) op), &M.hist[op]);
	}
	render_histogram(b, "claim_wait", &M.hist[HIST_CLAIM_WAIT]);
}

static void
render_settle(struct buf *b, struct topic_entry **v, size_t n)
{
	family(b, "brooq_settle_total", "counter",
	       "Settles applied (the row was changed), by topic and outcome.");
	for (size_t i = 0; i < n; i++) {
		for (int oc = 0; oc < BRQ_OUTCOME__COUNT; oc++) {
			topic_sample(b, "brooq_settle_total", v[i]);
			buf_printf(b, ",outcome=\"%s\"} %" PRIu64 "\n", brq_outcome_name((brq_outcome) oc),
				   atomic_load_explicit(&v[i]->settle[oc], memory_order_relaxed));
		}
	}
}

// A family of one sample without labels.
static void
render_single(struct buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	family(b, name, type, help);
	buf_printf(b, "%s %" PRIu64 "\n", name, v);
}

// A counter family of two samples, label=a and label=b.
static void
render_two(struct buf *b, const char *name, const char *help, const char *label, const char *a, uint64_t va,
	   const char *bn, uint64_t vb)
{
	family(b, name, "counter", help);
	buf_printf(b, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, a, va);
	buf_printf(b, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, bn, vb);
}

// The gateway-wide families: refusals, the request budget, the pool, health, long-polls.
static void
render_gateway(struct buf *b)
{
	render_single(b, "brooq_auth_failures_total", "counter",
		      "Requests refused with unauthenticated (missing or unknown token).",
		      atomic_load_explicit(&M.auth_failures, memory_order_relaxed));
	render_single(b, "brooq_connections_closed_total", "counter",
		      "RPC connections the gateway closed because their peer went over its share "
		      "of requests or stopped reading its replies.",
		      atomic_load_explicit(&M.conns_closed, memory_order_relaxed));
	render_single(b, "brooq_quota_refused_total", "counter",
		      "Requests refused with resource_exhausted for their connection's, token's or "
		      "operator lane's share of the gateway.",
		      atomic_load_explicit(&M.quota_refused, memory_order_relaxed));

	render_two(b, "brooq_settle_lookups_total",
		   "Settled leases by how their row was found: by the address this gateway "
		   "recorded at claim or heartbeat, or by id (settled through another gateway, or "
		   "the row moved since).",
		   "by", "address", atomic_load_explicit(&M.settle_by_address, memory_order_relaxed), "id",
		   atomic_load_explicit(&M.settle_by_id, memory_order_relaxed));
	render_two(b, "brooq_schedule_slots_total",
		   "Schedule slots: jobs this gateway's scheduler enqueued, and missed slots its "
		   "misfire policy skipped.",
		   "outcome", "enqueued", atomic_load_explicit(&M.schedule_enqueued, memory_order_relaxed),
		   "skipped", atomic_load_explicit(&M.schedule_skipped, memory_order_relaxed));
	render_single(b, "brooq_cancels_heard_total", "counter",
		      "Cancels of running jobs this gateway's listener heard, whichever gateway made them.",
		      atomic_load_explicit(&M.cancels_heard, memory_order_relaxed));
	render_single(b, "brooq_requests_expired_total", "counter",
		      "Requests not run, or claims whose leases were given back, because the caller's "
		      "timeout (the request's timeout_ms) had passed.",
		      atomic_load_explicit(&M.expired, memory_order_relaxed));
	uint64_t rx_used, rx_refused;
	nng_rx_budget_stats(&rx_used, &rx_refused);
	render_single(b, "brooq_request_bytes_in_flight", "gauge",
		      "Bytes of requests held now, from the transport reading their length to their "
		      "answer (bounded by BROOQ_MAX_INFLIGHT_BYTES; those over 64 KiB by three quarters "
		      "of it).",
		      rx_used);
	render_single(b, "brooq_request_budget_refused_total", "counter",
		      "Requests refused, their connection closed, because their part of "
		      "BROOQ_MAX_INFLIGHT_BYTES was spent.",
		      rx_refused);

	family(b, "brooq_db_pool_connections", "gauge",
	       "Database pool connections by state (down: not connected, reconnecting).");
	for (int s = 0; s < BRQ_POOL__COUNT; s++) {
		buf_printf(b, "brooq_db_pool_connections{state=\"%s\"} %" PRId64 "\n",
			   brq_metrics_pool_state_names[s],
			   atomic_load_explicit(&M.pool[s], memory_order_relaxed));
	}
	family(b, "brooq_db_up", "gauge",
	       "1 when the monitor's last database round trip succeeded recently, else 0.");
	buf_printf(b, "brooq_db_up %d\n", atomic_load_explicit(&M.db_up, memory_order_relaxed));
	family(b, "brooq_long_polls", "gauge", "Claims parked in a long poll right now.");
	buf_printf(b, "brooq_long_polls %" PRId64 "\n",
		   atomic_load_explicit(&M.waiters, memory_order_relaxed));
	family(b, "brooq_watches", "gauge",
	       "Workers' watches for the cancels of their running jobs parked right now.");
	buf_printf(b, "brooq_watches %" PRId64 "\n", atomic_load_explicit(&M.watches, memory_order_relaxed));
	family(b, "brooq_cancel_listener_up", "gauge",
	       "1 while the gateway listens to the cancels of running jobs (LISTEN), else 0.");
	buf_printf(b, "brooq_cancel_listener_up %d\n",
		   atomic_load_explicit(&M.listener_up, memory_order_relaxed));
}

int
brq_metrics_render(char **out, size_t *len)
{
	struct buf           b = {0};
	struct topic_entry **v = NULL;
	size_t               n = 0;

	if (brq_metrics_snapshot(&v, &n) != 0) {
		return BRQ_ENOMEM;
	}
	qsort(v, n, sizeof(*v), brq_metrics_entry_cmp);

	family(&b, "brooq_build_info", "gauge", "Build information; the value is always 1.");
	buf_str(&b, "brooq_build_info{version=\"");
	const char *ver = M.version != NULL ? M.version : "unknown";
	buf_label_value(&b, ver, strlen(ver));
	buf_str(&b, "\"} 1\n");
	family(&b, "brooq_start_time_seconds", "gauge",
	       "Start time of the gateway since the Unix epoch, in seconds.");
	buf_printf(&b, "brooq_start_time_seconds %.3f\n", M.start_time_s);

	render_depth(&b, v, n);
	render_table(&b);
	render_topic_counter(
		&b, v, n, "brooq_enqueued_total",
		"Jobs created by enqueue and by chained jobs of settle done (idempotent repeats excluded).",
		BRQ_MT_ENQUEUED);
	render_topic_counter(&b, v, n, "brooq_claimed_total",
			     "Jobs handed to workers by claim (each is one attempt).", BRQ_MT_CLAIMED);
	render_settle(&b, v, n);
	family(&b, "brooq_dead_total", "counter",
	       "Jobs that reached dead: a recorded failure on their last attempt, or quarantined "
	       "by the reaper.");
	for (size_t i = 0; i < n; i++) {
		topic_sample(&b, "brooq_dead_total", v[i]);
		buf_printf(&b, "} %" PRIu64 "\n", atomic_load_explicit(&v[i]->dead, memory_order_relaxed));
	}
	render_topic_counter(&b, v, n, "brooq_lease_lost_total",
			     "Heartbeats or settles that found the lease gone (canceled, reaped or settled).",
			     BRQ_MT_LEASE_LOST);
	render_topic_counter(&b, v, n, "brooq_reaped_total",
			     "Expired leases returned to pending by the reaper.", BRQ_MT_REAPED);
	render_topic_counter(&b, v, n, "brooq_retention_deleted_total", "Terminal jobs deleted by retention.",
			     BRQ_MT_RETENTION_DELETED);
	render_topic_counter(&b, v, n, "brooq_retried_total",
			     "Jobs re-run as new jobs by the retry operation.", BRQ_MT_RETRIED);
	render_topic_counter(&b, v, n, "brooq_deleted_total",
			     "Terminal jobs deleted by the delete operation.", BRQ_MT_DELETED);
	render_topic_counter(&b, v, n, "brooq_max_execution_exceeded_total",
			     "Heartbeats refused because the attempt ran past its topic's maximum execution "
			     "time (its lease then runs out).",
			     BRQ_MT_MAX_EXECUTION);
	render_topic_counter(&b, v, n, "brooq_quarantined_total",
			     "Jobs the reaper wrote dead because their leases ran out max_lost_leases times "
			     "without an outcome (a crash loop).",
			     BRQ_MT_QUARANTINED);

	family(&b, "brooq_attempt_duration_seconds", "summary", "Time from claim to settle of an attempt.");
	buf_str(&b, "brooq_attempt_duration_seconds_sum ");
	render_seconds_us(&b, atomic_load_explicit(&M.attempt_sum_us, memory_order_relaxed));
	buf_printf(&b, "\nbrooq_attempt_duration_seconds_count %" PRIu64 "\n",
		   atomic_load_explicit(&M.attempt_count, memory_order_relaxed));

	render_rpc(&b);

	render_gateway(&b);

	free(v);
	if (b.is_oom) {
		free(b.p);
		return BRQ_ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
