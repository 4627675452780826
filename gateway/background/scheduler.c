// SPDX-License-Identifier: MIT
// Periodic jobs: the scheduler thread, slot arithmetic, and the checks of a schedule's fields.
#include "scheduler.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"

#include "cron.h"
#include "schedule_check.h"
#include "log/log.h"
#include "metrics/metrics.h"

// Schedules handled per tick at most; more wait for the next tick (a backlog is logged).
#define TICK_SCHEDULES 100
// Local times more than this before the zone's "now" are surely in the past, and more
// than this after it surely in the future, whatever the zone's offsets (they span
// UTC-12 to UTC+14, and a zone has skipped a whole day: Samoa, 2011).
#define ZONE_SLACK_S (26 * 3600)
// Candidates converted per extra round when the next slot lies beyond the window.
#define BEYOND 8

// ---- slots -------------------------------------------------------------------------------

// Keeps the latest `k` values pushed (a ring), counting those pushed out.
typedef struct ring {
	int64_t *v;
	uint32_t k, n; // capacity, values held
	uint32_t head; // index of the oldest when full
	uint64_t dropped;
} ring;

static void
ring_push(ring *r, int64_t x)
{
	if (r->n < r->k) {
		r->v[(r->head + r->n++) % r->k] = x;
		return;
	}
	r->v[r->head] = x;
	r->head       = (r->head + 1) % r->k;
	r->dropped++;
}

// Copies the ring's values, oldest first, to out.
static void
ring_copy(const ring *r, int64_t *out)
{
	for (uint32_t i = 0; i < r->n; i++)
		out[i] = r->v[(r->head + i) % r->k];
}

static int
every_slots(const brq_schedule *s, int64_t from_ms, int64_t now_ms, uint32_t k, int64_t *due, uint32_t *n_due,
	    uint64_t *n_skipped, int64_t *next_ms)
{
	int64_t every = (int64_t) s->every_ms;
	*n_due = 0, *n_skipped = 0;
	if (from_ms > now_ms) {
		// The first whole multiple of every_ms after now.
		int64_t q = now_ms >= 0 ? now_ms / every : (now_ms - every + 1) / every;
		*next_ms  = (q + 1) * every;
		return 0;
	}
	int64_t n     = (now_ms - from_ms) / every + 1;
	int64_t first = n > (int64_t) k ? n - (int64_t) k : 0;
	for (int64_t i = first; i < n; i++)
		due[(*n_due)++] = from_ms + i * every;
	*n_skipped = (uint64_t) first;
	*next_ms   = from_ms + n * every;
	return 0;
}

// The cron candidates' growing list.
typedef struct cands {
	int64_t *local;
	uint32_t n, cap;
} cands;

static int
cands_add(cands *c, int64_t t)
{
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 256;
		int64_t *p   = realloc(c->local, cap * sizeof(*p));
		if (p == NULL)
			return BRQ_ENOMEM;
		c->local = p, c->cap = cap;
	}
	c->local[c->n++] = t;
	return 0;
}

// Converts cand[0..n) and sorts them into `due` (u in [lo, now]) or the next slot (the
// first u > now). *found when the next slot was among them.
static int
classify(brq_store_conn *c, brq_str tz, const cands *cd, int64_t lo, int64_t now_ms, ring *due,
	 int64_t *next_ms, bool *found)
{
	int64_t *u  = malloc((cd->n ? cd->n : 1) * sizeof(*u));
	bool    *ok = malloc((cd->n ? cd->n : 1) * sizeof(*ok));
	int rv = u == NULL || ok == NULL ? BRQ_ENOMEM : brq_store_sched_tz(c, tz, cd->local, cd->n, u, ok);
	for (uint32_t i = 0; rv == 0 && i < cd->n && !*found; i++) {
		if (!ok[i] || u[i] < lo)
			continue; // a wall-clock time the zone skips has no slot
		if (u[i] <= now_ms)
			ring_push(due, u[i]);
		else
			*next_ms = u[i], *found = true;
	}
	free(u);
	free(ok);
	return rv;
}

static int
cron_slots(brq_store_conn *c, const brq_schedule *s, int64_t from_ms, int64_t local_from, int64_t now_ms,
	   int64_t local_now, ring *due, int64_t *next_ms)
{
	brq_cron cr;
	char     err[200];
	if (brq_sched_parse_cron(s, &cr, err, sizeof(err)) != 0)
		return brq_store_fail(c, BRQ_EINVAL, "schedule %.*s: %s", (int) s->name.len, s->name.ptr,
				      err);
	// From the slot owed (inclusive), or when asked for the first slot after now,
	// from well before now: the zone's offset is not known here.
	bool    first = from_ms > now_ms;
	int64_t lo = first ? now_ms + 1 : from_ms, t = first ? local_now - ZONE_SLACK_S : local_from - 60;
	cands   cd    = {0};
	int     rv    = 0;
	bool    found = false, more = true;
	*next_ms = -1;
	// 1. Candidates surely due only go through the ring (the latest k count); the
	//    rest, up to the window's end, are converted and sorted by their instants.
	while (rv == 0 && more) {
		if (brq_cron_next(&cr, t, &t) != 0) {
			more = false;
		} else if (t <= local_now - ZONE_SLACK_S) {
			ring_push(due, t);
		} else {
			rv   = cands_add(&cd, t);
			more = t <= local_now + ZONE_SLACK_S;
		}
	}
	// The ring holds local times so far: convert them with the window (they are
	// older, so they come first in order).
	uint32_t n_ring = due->n;
	uint64_t gone   = due->dropped;
	cands    all    = {0};
	for (uint32_t i = 0; rv == 0 && i < n_ring; i++)
		rv = cands_add(&all, due->v[(due->head + i) % due->k]);
	for (uint32_t i = 0; rv == 0 && i < cd.n; i++)
		rv = cands_add(&all, cd.local[i]);
	due->n = 0, due->head = 0, due->dropped = gone;
	if (rv == 0)
		rv = classify(c, s->tz, &all, lo, now_ms, due, next_ms, &found);
	// 2. The next slot lies beyond the window (or in a skipped gap): a few more at a
	//    time until one is found or the expression has no more within its horizon.
	for (int round = 0; rv == 0 && !found && all.n > 0 && round < 64; round++) {
		t     = all.local[all.n - 1];
		all.n = 0;
		for (int i = 0; rv == 0 && i < BEYOND && brq_cron_next(&cr, t, &t) == 0; i++)
			rv = cands_add(&all, t);
		if (rv == 0 && all.n > 0)
			rv = classify(c, s->tz, &all, lo, now_ms, due, next_ms, &found);
	}
	free(cd.local);
	free(all.local);
	return rv == BRQ_ENOMEM ? brq_store_fail(c, BRQ_ENOMEM, "out of memory") : rv;
}

int
brq_sched_slots(brq_store_conn *c, const brq_schedule *s, int64_t from_ms, int64_t local_from, int64_t now_ms,
		int64_t local_now, uint32_t k, int64_t *due, uint32_t *n_due, uint64_t *n_skipped,
		int64_t *next_ms)
{
	if (k == 0)
		k = 1;
	if (s->every_ms > 0)
		return every_slots(s, from_ms, now_ms, k, due, n_due, n_skipped, next_ms);
	ring r  = {.v = due, .k = k};
	int  rv = cron_slots(c, s, from_ms, local_from, now_ms, local_now, &r, next_ms);
	if (rv != 0)
		return rv;
	// The ring wrote into due in place: rotate it to oldest first.
	int64_t *tmp = malloc(k * sizeof(*tmp));
	if (tmp == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "out of memory");
	ring_copy(&r, tmp);
	memcpy(due, tmp, r.n * sizeof(*tmp));
	free(tmp);
	*n_due     = r.n;
	*n_skipped = r.dropped;
	return 0;
}

int64_t
brq_sched_grace_ms(const brq_config *cfg)
{
	int64_t two_ticks = 2 * (int64_t) cfg->schedule_tick_ms;
	return two_ticks > 60000 ? two_ticks : 60000;
}

uint32_t
brq_sched_due_cap(const brq_schedule *s, int64_t grace_ms)
{
	// Slots at least every_ms (cron: a minute) apart: at most grace / period + 1 on time.
	int64_t  period  = s->every_ms > 0 ? (int64_t) s->every_ms : 60000;
	uint32_t on_time = (uint32_t) (grace_ms / period) + 2;
	return on_time + (s->catch_up ? s->catch_up_max : 1);
}

void
brq_sched_misfire(const brq_schedule *s, int64_t now_ms, int64_t grace_ms, const int64_t *due, uint32_t n,
		  uint64_t dropped, uint32_t *first, uint32_t *keep, uint64_t *skipped)
{
	uint32_t on_time = 0;
	while (on_time < n && due[n - 1 - on_time] > now_ms - grace_ms)
		on_time++;
	uint32_t missed  = n - on_time;
	uint32_t allowed = s->catch_up ? s->catch_up_max : on_time == 0 ? 1 : 0;
	uint32_t kept    = allowed < missed ? allowed : missed;
	*first           = missed - kept;
	*keep            = on_time + kept;
	*skipped         = dropped + (missed - kept);
}

int
brq_sched_upsert(brq_store_conn *c, const brq_schedule *s, bool from_config, bool *created, int64_t *owed)
{
	int64_t  now_ms, local_now, local_at, due[1], next_ms;
	uint32_t n_due;
	uint64_t skipped;
	int      rv = brq_store_sched_zone_now(c, s->tz, 0, &now_ms, &local_now, &local_at);
	if (rv == 0)
		rv = brq_sched_slots(c, s, now_ms + 1, 0, now_ms, local_now, 1, due, &n_due, &skipped,
				     &next_ms);
	if (rv == 0 && next_ms < 0)
		rv = brq_store_fail(c, BRQ_EINVAL, "cron: no slot in the next years");
	if (rv == 0)
		rv = brq_store_sched_upsert(c, s, next_ms, from_config, created, owed);
	return rv;
}

// ---- the thread ----------------------------------------------------------------------------

// Enqueues due[0..n) of the locked schedule d (its transaction open), then advances it
// to next_ms and commits. *created counts the jobs that are new.
static int
enqueue_slots(brq_sched *sc, const brq_store_due *d, const int64_t *due, uint32_t n, int64_t next_ms,
	      uint32_t *created)
{
	brq_store_conn     *c    = &sc->bg.conn;
	brq_job_spec       *jobs = calloc(n ? n : 1, sizeof(*jobs));
	brq_enqueue_result *res  = calloc(n ? n : 1, sizeof(*res));
	char               *keys = malloc((size_t) (n ? n : 1) * (BRQ_KEY_MAX + 1));
	int                 rv   = 0;
	*created                 = 0;
	if (jobs == NULL || res == NULL || keys == NULL) {
		rv = brq_store_fail(c, BRQ_ENOMEM, "out of memory");
		goto cleanup;
	}
	for (uint32_t i = 0; i < n; i++) {
		char *key = keys + (size_t) i * (BRQ_KEY_MAX + 1);
		brq_sched_key(key, BRQ_KEY_MAX + 1, d->s.name, due[i]);
		jobs[i] = (brq_job_spec) {
			.topic            = d->s.topic,
			.payload          = d->s.payload,
			.key              = brq_str_c(key),
			.has_max_attempts = d->s.max_attempts > 0,
			.max_attempts     = d->s.max_attempts,
		};
	}
	if (n > 0)
		rv = brq_store_enqueue(c, jobs, n, res);
	if (rv != 0) {
		brq_store_sched_abort(c);
		goto cleanup;
	}
	rv = brq_store_sched_advance(c, d->s.name, next_ms, n > 0 ? due[n - 1] : -1);
	for (uint32_t i = 0; rv == 0 && i < n; i++)
		*created += res[i].created;
cleanup:
	free(jobs);
	free(res);
	free(keys);
	return rv;
}

// One due schedule: 1 when one was handled, 0 when none was due, or a BRQ_E* code.
static int
tick_one(brq_sched *sc, int64_t *total)
{
	brq_store_conn *c = &sc->bg.conn;
	brq_store_due   d;
	bool            found;
	int             rv = brq_store_sched_due(c, &found, &d);
	if (rv != 0 || !found)
		return rv;
	int64_t  grace = brq_sched_grace_ms(sc->cfg);
	uint32_t k = brq_sched_due_cap(&d.s, grace), first = 0, n_due = 0, created = 0;
	int64_t *due = malloc(k * sizeof(*due)), next_ms, now_ms, local_now = 0, local_next = 0;
	uint64_t skipped = 0;
	// A cron schedule's slot and now on its zone's wall clock (a zone PostgreSQL does
	// not know fails here, for this row only).
	rv = due == NULL ? brq_store_fail(c, BRQ_ENOMEM, "out of memory")
		: d.s.cron.len > 0
		? brq_store_sched_zone_now(c, d.s.tz, d.s.next_slot_ms, &now_ms, &local_now, &local_next)
		: 0;
	if (rv == 0)
		rv = brq_sched_slots(c, &d.s, d.s.next_slot_ms, local_next, d.now_ms, local_now, k, due,
				     &n_due, &skipped, &next_ms);
	if (rv == BRQ_EINVAL) {
		// The row cannot be computed (edited by hand, a zone PostgreSQL no longer
		// knows): disable it rather than stop every schedule behind it.
		BRQ_LOG_ERROR("schedule_disabled", "name=%.*s error=%s", (int) d.s.name.len, d.s.name.ptr,
			      BRQ_LOG_Q(brq_store_errmsg(c)));
		brq_store_sched_abort(c);
		rv = brq_store_sched_disable(c, d.s.name);
		free(due);
		return rv == 0 ? 1 : rv;
	}
	if (rv == 0) {
		brq_sched_misfire(&d.s, d.now_ms, grace, due, n_due, skipped, &first, &n_due, &skipped);
		rv = enqueue_slots(sc, &d, due + first, n_due, next_ms, &created);
	} else
		brq_store_sched_abort(c);
	if (rv == 0) {
		brq_metrics_topic_add(d.s.topic.ptr, d.s.topic.len, BRQ_MT_ENQUEUED, created);
		brq_metrics_schedule(created, skipped);
		if (skipped > 0)
			BRQ_LOG_WARN("schedule_slots_skipped", "name=%.*s skipped=%" PRIu64 " misfire=%s",
				     (int) d.s.name.len, d.s.name.ptr, skipped,
				     d.s.catch_up ? "catch_up" : "skip");
		BRQ_LOG_DEBUG("schedule_enqueued", "name=%.*s slots=%u created=%u next_ms=%" PRId64,
			      (int) d.s.name.len, d.s.name.ptr, n_due, created, next_ms);
		if (created > 0 && sc->wake != NULL)
			sc->wake(sc->wake_arg, d.s.topic.ptr, d.s.topic.len);
		*total += created;
	}
	free(due);
	return rv == 0 ? 1 : rv;
}

// Upserts the configured schedules once the database answers. Their fields were
// checked when the configuration was loaded; a zone PostgreSQL does not know is logged.
static void
upsert_configured(brq_sched *sc)
{
	for (size_t i = 0; i < sc->cfg->n_schedules; i++) {
		const brq_schedule *s = &sc->cfg->schedules[i];
		bool                created;
		int                 rv = brq_sched_upsert(&sc->bg.conn, s, true, &created, NULL);
		if (rv == BRQ_EUNAVAIL || rv == BRQ_ETIMEDOUT) {
			brq_store_reset(&sc->bg.conn);
			return; // again at the next tick
		}
		if (rv != 0)
			BRQ_LOG_ERROR("schedule_config_failed", "name=%.*s error=%s", (int) s->name.len,
				      s->name.ptr, BRQ_LOG_Q(brq_store_errmsg(&sc->bg.conn)));
		else
			BRQ_LOG_INFO("schedule_configured", "name=%.*s created=%s", (int) s->name.len,
				     s->name.ptr, created ? "true" : "false");
		brq_store_reset(&sc->bg.conn);
	}
	sc->configured = true;
}

int64_t
brq_sched_tick(brq_sched *sc)
{
	if (!brq_store_ready(&sc->bg.conn))
		return BRQ_EUNAVAIL;
	if (!sc->configured)
		upsert_configured(sc);
	int64_t total = 0;
	int     i     = 0, rv;
	for (; i < TICK_SCHEDULES && !brq_bgthread_is_stopping(&sc->bg); i++) {
		rv = tick_one(sc, &total);
		brq_store_reset(&sc->bg.conn);
		if (rv < 0) {
			BRQ_LOG_WARN("scheduler_statement_failed", "error=%s",
				     BRQ_LOG_Q(brq_store_errmsg(&sc->bg.conn)));
			return total > 0 ? total : rv;
		}
		if (rv == 0)
			break;
	}
	if (i == TICK_SCHEDULES)
		BRQ_LOG_WARN("schedule_backlog", "schedules=%d hint=%s", i,
			     "more schedules are due; next tick");
	return total;
}

// One round (bgthread.h): a tick; with the scheduler off, the configured schedules'
// upsert until the database takes them, and then the thread's end.
static uint64_t
sched_round(void *arg)
{
	brq_sched *sc   = arg;
	uint64_t   tick = sc->cfg->schedule_tick_ms;
	if (tick > 0)
		(void) brq_sched_tick(sc);
	else if (brq_store_ready(&sc->bg.conn))
		upsert_configured(sc); // scheduler off here: only declare the schedules
	if (tick == 0 && sc->configured)
		return BRQ_BGTHREAD_END;
	return brq_now_ms() + (tick > 0 ? tick : 1000);
}

int
brq_sched_start(brq_sched *sc, const brq_config *cfg, const brq_store *st, brq_sched_wake_fn wake,
		void *wake_arg)
{
	memset(sc, 0, sizeof(*sc));
	sc->cfg      = cfg;
	sc->wake     = wake;
	sc->wake_arg = wake_arg;
	int rv       = brq_bgthread_init(&sc->bg, st,
					 &(brq_store_conn_opts) {.name = "scheduler", .role = BRQ_STORE_JANITOR});
	// Scheduler off and nothing to declare: no thread. Off but with schedules in
	// BROOQ_SCHEDULES: a thread that upserts them once the database answers, then ends
	// (the other gateways enqueue their slots).
	if (rv != 0 || (cfg->schedule_tick_ms == 0 && cfg->n_schedules == 0))
		return rv;
	return brq_bgthread_start(&sc->bg, &(brq_bgthread_loop) {.round = sched_round, .arg = sc});
}

void
brq_sched_stop(brq_sched *sc)
{
	brq_bgthread_stop(&sc->bg);
}
