// SPDX-License-Identifier: MIT
// The web console's history and workers: reads of job_history and of the leases held, which the
// RPC has no operation for, so they call the store on the pool thread's connection.
#include "console_ops.h"

#include <inttypes.h>
#include <string.h>

#include "brq_clock.h"
#include "metrics/metrics.h"

// The two windows of the history and the step of each: 60 points of a minute, or 288 of
// five minutes.
#define HOUR_MS         3600000
#define DAY_MS          86400000
#define MINUTE_MS       60000
#define DAY_STEP_MS     300000
#define WORKERS_MAX     500
#define WORKER_JOBS_MAX 200

// One step of the chart: the minutes of job_history in it, added up.
typedef struct step {
	uint64_t started, finished;
	bool     has_depth;
	uint64_t pending, ready; // the step's last count
	uint64_t wait[BRQ_WAIT_BUCKETS];
} step;

static void
opt_ms(brq_jw *out, const char *key, double v)
{
	brq_jw_kv_opt_u64(out, key, v >= 0 ? (uint64_t) (v + 0.5) : 0, v >= 0);
}

static void
step_json(brq_jw *out, int64_t at_ms, const step *s, uint64_t step_ms)
{
	double minutes = (double) step_ms / MINUTE_MS;
	brq_jw_obj(out);
	brq_jw_kv_instant(out, "at", at_ms, true);
	brq_jw_kv_dbl(out, "started_per_min", (double) s->started / minutes);
	brq_jw_kv_dbl(out, "finished_per_min", (double) s->finished / minutes);
	brq_jw_kv_opt_u64(out, "pending", s->pending, s->has_depth);
	brq_jw_kv_opt_u64(out, "ready", s->ready, s->has_depth);
	opt_ms(out, "wait_p50_ms", brq_wait_quantile(s->wait, 0.5));
	opt_ms(out, "wait_p99_ms", brq_wait_quantile(s->wait, 0.99));
	brq_jw_end(out);
}

// GET /console/api/history?topic=T&window=1h|24h. 200: the topic's steps from the
// window's start to the step in progress, every step present (docs/console.md).
int
brq_console_op_history(brq_console_call *call)
{
	brq_str        topic  = {0};
	const brq_str *window = brq_form_get(call->in, "window");
	int            status = brq_console_param_topic(call, "topic", true, &topic);
	if (status != 0)
		return status;
	bool is_day = window != NULL && window->len == 3 && memcmp(window->ptr, "24h", 3) == 0;
	if (window != NULL && window->len > 0 && !is_day &&
	    !(window->len == 2 && memcmp(window->ptr, "1h", 2) == 0))
		return brq_console_fail(call, 400, "window: must be 1h or 24h");
	uint64_t window_ms = is_day ? DAY_MS : HOUR_MS, step_ms = is_day ? DAY_STEP_MS : MINUTE_MS;
	int64_t  now = (int64_t) brq_wall_ms(), to = now - now % (int64_t) step_ms + (int64_t) step_ms;
	int64_t  from = to - (int64_t) window_ms;
	brq_store_history_row *rows;
	uint32_t               n;
	if (brq_store_history_read(call->c, topic, from, to, &rows, &n) != 0)
		return brq_console_fail(call, 503, "history: %s", brq_store_errmsg(call->c));
	brq_jw *o = call->out;
	brq_jw_kv_str(o, "topic", topic.ptr, topic.len);
	brq_jw_kv_u64(o, "window_ms", window_ms);
	brq_jw_kv_u64(o, "step_ms", step_ms);
	brq_jw_kv_instant(o, "from", from, true);
	brq_jw_kv_instant(o, "to", to, true);
	brq_jw_key(o, "points");
	brq_jw_arr(o);
	uint32_t r = 0;
	for (int64_t at = from; at < to; at += (int64_t) step_ms) {
		step s = {0};
		for (; r < n && rows[r].minute_ms < at + (int64_t) step_ms; r++) {
			const brq_store_history_row *h = &rows[r];
			s.started += h->started;
			s.finished += h->finished;
			if (h->has_depth) {
				s.has_depth = true;
				s.pending   = h->pending;
				s.ready     = h->ready;
			}
			for (uint32_t b = 0; b < h->n_wait && b < BRQ_WAIT_BUCKETS; b++)
				s.wait[b] += h->wait[b];
		}
		step_json(o, at, &s, step_ms);
	}
	brq_jw_end(o);
	return 200;
}

// GET /console/api/workers. 200: {"at", "workers": [...]}: the holders of processing
// jobs, whichever gateway they claimed through.
int
brq_console_op_workers(brq_console_call *call)
{
	brq_store_worker *w;
	uint32_t          n;
	if (brq_store_workers(call->c, WORKERS_MAX, &w, &n) != 0)
		return brq_console_fail(call, 503, "workers: %s", brq_store_errmsg(call->c));
	brq_jw *o = call->out;
	brq_jw_kv_instant(o, "at", (int64_t) brq_wall_ms(), true);
	brq_jw_key(o, "workers");
	brq_jw_arr(o);
	for (uint32_t i = 0; i < n; i++) {
		brq_jw_obj(o);
		brq_jw_kv_str(o, "worker", w[i].name.ptr, w[i].name.len);
		brq_jw_kv_u64(o, "jobs", w[i].jobs);
		brq_jw_kv_u64(o, "lease_expired", w[i].expired);
		brq_jw_kv_instant(o, "oldest_claim", w[i].oldest_claim_ms, w[i].oldest_claim_ms != 0);
		brq_jw_kv_instant(o, "last_heartbeat", w[i].last_beat_ms, true);
		brq_jw_kv_instant(o, "lease_until", w[i].lease_until_ms, true);
		brq_jw_key(o, "topics");
		brq_jw_arr(o);
		for (const char *p = w[i].topics.ptr, *end = p + w[i].topics.len; p < end;) {
			const char *sp = memchr(p, ' ', (size_t) (end - p));
			size_t      l  = sp != NULL ? (size_t) (sp - p) : (size_t) (end - p);
			brq_jw_str(o, p, l);
			p += l + 1;
		}
		brq_jw_end(o);
		brq_jw_kv_u64(o, "n_topics", w[i].n_topics);
		brq_jw_end(o);
	}
	brq_jw_end(o);
	brq_jw_kv_bool(o, "truncated", n == WORKERS_MAX);
	return 200;
}

// GET /console/api/worker_jobs?worker=NAME. 200: {"at", "worker", "jobs": [job...]}: the
// processing jobs it holds, oldest claim first (at most 200).
int
brq_console_op_worker_jobs(brq_console_call *call)
{
	const brq_str *name = brq_form_get(call->in, "worker");
	if (name == NULL || name->len == 0)
		return brq_console_fail(call, 400, "worker: required");
	if (name->len > BRQ_WORKER_MAX)
		return brq_console_fail(call, 400, "worker: at most %d bytes", BRQ_WORKER_MAX);
	brq_job_info *jobs;
	uint32_t      n;
	if (brq_store_worker_jobs(call->c, *name, WORKER_JOBS_MAX, &jobs, &n) != 0)
		return brq_console_fail(call, 503, "worker_jobs: %s", brq_store_errmsg(call->c));
	brq_jw *o = call->out;
	brq_jw_kv_instant(o, "at", (int64_t) brq_wall_ms(), true);
	brq_jw_kv_str(o, "worker", name->ptr, name->len);
	brq_jw_key(o, "jobs");
	brq_jw_arr(o);
	for (uint32_t i = 0; i < n; i++)
		brq_console_json_job(o, &jobs[i]);
	brq_jw_end(o);
	return 200;
}
