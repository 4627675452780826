// SPDX-License-Identifier: MIT
// Prometheus metrics: lock-free counters for the hot path and a per-topic registry
// (the exposition is rendered by metrics_render.c).
#include "metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brq_clock.h"
#include "log/log.h"
#include "metrics_int.h"

struct brq_metrics_state brq_metrics_m = {
	.reg =
		{
			.rw       = PTHREAD_RWLOCK_INITIALIZER,
			.depth_mu = PTHREAD_MUTEX_INITIALIZER,
		},
};

const char *const brq_metrics_pool_state_names[BRQ_POOL__COUNT] = {
	[BRQ_POOL_IDLE] = "idle",
	[BRQ_POOL_BUSY] = "busy",
	[BRQ_POOL_DOWN] = "down",
};

// ---- registry -------------------------------------------------------------

static uint64_t
hash_topic(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL; // FNV-1a
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char) s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static bool
entry_is(const struct topic_entry *e, const char *s, size_t len, uint64_t h)
{
	return e->hash == h && e->len == len && memcmp(e->name, s, len) == 0;
}

// Caller holds rw (either mode).
static struct topic_entry *
table_find(const struct registry *r, const char *s, size_t len, uint64_t h)
{
	if (r->cap == 0) {
		return NULL;
	}
	for (size_t i = h & (r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
		struct topic_entry *e = r->slots[i];
		if (e == NULL) {
			return NULL;
		}
		if (entry_is(e, s, len, h)) {
			return e;
		}
	}
}

// Caller holds rw as writer and has made room (load <= 1/2 after insertion).
static void
table_put(struct topic_entry **slots, size_t cap, struct topic_entry *e)
{
	size_t i = e->hash & (cap - 1);
	while (slots[i] != NULL) {
		i = (i + 1) & (cap - 1);
	}
	slots[i] = e;
}

static struct topic_entry *
entry_new(const char *s, size_t len, uint64_t h)
{
	struct topic_entry *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		return NULL;
	}
	e->name = malloc(len + 1);
	if (e->name == NULL) {
		free(e);
		return NULL;
	}
	memcpy(e->name, s, len);
	e->name[len] = '\0';
	e->len       = len;
	e->hash      = h;
	return e;
}

static void
entry_free(struct topic_entry *e)
{
	if (e != NULL) {
		free(e->name);
		free(e);
	}
}

// Caller holds rw as writer. Appends e to the list and the table, growing both.
// On failure nothing changed and the caller still owns e.
static int
registry_insert_locked(struct registry *r, struct topic_entry *e)
{
	if (r->n == r->list_cap) {
		size_t               ncap = r->list_cap == 0 ? TABLE_MIN_CAP : r->list_cap * 2;
		struct topic_entry **nl   = realloc(r->list, ncap * sizeof(*nl));
		if (nl == NULL) {
			return BRQ_ENOMEM;
		}
		r->list     = nl;
		r->list_cap = ncap;
	}
	if ((r->n + 1) * 2 > r->cap) {
		size_t               ncap = r->cap == 0 ? TABLE_MIN_CAP : r->cap * 2;
		struct topic_entry **ns   = calloc(ncap, sizeof(*ns));
		if (ns == NULL) {
			return BRQ_ENOMEM;
		}
		for (size_t i = 0; i < r->n; i++) {
			table_put(ns, ncap, r->list[i]);
		}
		free(r->slots);
		r->slots = ns;
		r->cap   = ncap;
	}
	table_put(r->slots, r->cap, e);
	r->list[r->n++] = e;
	return 0;
}

// Caller holds rw as writer.
static struct topic_entry *
other_entry_locked(struct registry *r)
{
	if (r->other == NULL) {
		uint64_t            h = hash_topic(OTHER_TOPIC, strlen(OTHER_TOPIC));
		struct topic_entry *e = entry_new(OTHER_TOPIC, strlen(OTHER_TOPIC), h);
		if (e == NULL) {
			return NULL;
		}
		// The overflow entry does not count against MAX_TOPICS.
		if (registry_insert_locked(r, e) != 0) {
			entry_free(e);
			return NULL;
		}
		r->other = e;
	}
	return r->other;
}

// Returns the entry for topic, creating it on first use; the entry lives until
// brq_metrics_fini. Past MAX_TOPICS, or when memory runs out, returns the shared
// overflow entry; NULL only when even that cannot be allocated (the update is lost), or
// for a NULL topic (nothing to count).
static struct topic_entry *
topic_get(const char *s, size_t len)
{
	if (s == NULL) {
		return NULL;
	}
	struct registry    *r = &M.reg;
	uint64_t            h = hash_topic(s, len);
	struct topic_entry *e;

	pthread_rwlock_rdlock(&r->rw);
	e = table_find(r, s, len, h);
	pthread_rwlock_unlock(&r->rw);
	if (e != NULL) {
		return e;
	}

	// 1. Allocate outside the lock. 2. Re-check under the writer lock: another
	// thread may have inserted the same topic meanwhile.
	struct topic_entry *fresh   = entry_new(s, len, h);
	bool                is_full = false;
	pthread_rwlock_wrlock(&r->rw);
	e = table_find(r, s, len, h);
	if (e == NULL) {
		size_t n_real = r->n - (r->other != NULL ? 1 : 0);
		if (fresh != NULL && n_real < MAX_TOPICS && registry_insert_locked(r, fresh) == 0) {
			e     = fresh;
			fresh = NULL;
		} else {
			is_full = n_real >= MAX_TOPICS;
			e       = other_entry_locked(r);
		}
	}
	pthread_rwlock_unlock(&r->rw);
	entry_free(fresh);

	if (is_full && !atomic_exchange(&r->is_overflow_logged, true)) {
		BRQ_LOG_WARN("metrics_topics_overflow", "max_topics=%d label=%s", MAX_TOPICS, OTHER_TOPIC);
	}
	return e;
}

// Copies the entry pointers (stable until fini) so rendering runs without the lock.
int
brq_metrics_snapshot(struct topic_entry ***out, size_t *n)
{
	struct registry *r = &M.reg;
	pthread_rwlock_rdlock(&r->rw);
	size_t               cnt = r->n;
	struct topic_entry **v   = malloc((cnt > 0 ? cnt : 1) * sizeof(*v));
	if (v != NULL && cnt > 0) {
		memcpy(v, r->list, cnt * sizeof(*v));
	}
	pthread_rwlock_unlock(&r->rw);
	if (v == NULL) {
		return BRQ_ENOMEM;
	}
	*out = v;
	*n   = cnt;
	return 0;
}

int
brq_metrics_entry_cmp(const void *a, const void *b)
{
	const struct topic_entry *x = *(struct topic_entry *const *) a;
	const struct topic_entry *y = *(struct topic_entry *const *) b;
	size_t                    n = x->len < y->len ? x->len : y->len;
	int                       c = memcmp(x->name, y->name, n);
	if (c != 0) {
		return c;
	}
	return (x->len > y->len) - (x->len < y->len);
}

// ---- updates --------------------------------------------------------------

static uint64_t
seconds_to_us(double s)
{
	if (!(s > 0)) { // also NaN
		return 0;
	}
	if (s > 1e12) {
		return (uint64_t) 1e18;
	}
	return (uint64_t) (s * 1e6 + 0.5); // no libm needed
}

static void
hist_observe(struct histogram *h, uint64_t us)
{
	size_t i = 0;
	while (i < N_BUCKETS && us > bucket_le_us[i]) {
		i++;
	}
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void
brq_metrics_rpc(brq_op op, brq_status code, uint64_t duration_us, int waited)
{
	if ((unsigned) op >= BRQ_OP__COUNT) {
		op = BRQ_OP_NONE;
	}
	if ((unsigned) code >= BRQ_ST__COUNT) {
		code = BRQ_ST_INTERNAL;
	}
	atomic_fetch_add_explicit(&M.rpc[op][code], 1, memory_order_relaxed);
	size_t row = (waited && op == BRQ_OP_CLAIM) ? HIST_CLAIM_WAIT : (size_t) op;
	hist_observe(&M.hist[row], duration_us);
}

void
brq_metrics_auth_failure(void)
{
	atomic_fetch_add_explicit(&M.auth_failures, 1, memory_order_relaxed);
}

void
brq_metrics_conn_closed(void)
{
	atomic_fetch_add_explicit(&M.conns_closed, 1, memory_order_relaxed);
}

void
brq_metrics_quota_refused(void)
{
	atomic_fetch_add_explicit(&M.quota_refused, 1, memory_order_relaxed);
}

void
brq_metrics_settle_lookup(uint64_t by_address, uint64_t by_id)
{
	atomic_fetch_add_explicit(&M.settle_by_address, by_address, memory_order_relaxed);
	atomic_fetch_add_explicit(&M.settle_by_id, by_id, memory_order_relaxed);
}

void
brq_metrics_schedule(uint64_t enqueued, uint64_t skipped)
{
	atomic_fetch_add_explicit(&M.schedule_enqueued, enqueued, memory_order_relaxed);
	atomic_fetch_add_explicit(&M.schedule_skipped, skipped, memory_order_relaxed);
}

void
brq_metrics_expired(void)
{
	atomic_fetch_add_explicit(&M.expired, 1, memory_order_relaxed);
}

void
brq_metrics_topic_add(const char *topic, size_t topic_len, brq_topic_counter c, uint64_t n)
{
	struct topic_entry *e = (unsigned) c < BRQ_MT__COUNT ? topic_get(topic, topic_len) : NULL;
	if (e != NULL) {
		atomic_fetch_add_explicit(&e->counter[c], n, memory_order_relaxed);
	}
}

void
brq_metrics_settle(const char *topic, size_t topic_len, brq_outcome oc, uint64_t n)
{
	struct topic_entry *e = (unsigned) oc < BRQ_OUTCOME__COUNT ? topic_get(topic, topic_len) : NULL;
	if (e != NULL) {
		atomic_fetch_add_explicit(&e->settle[oc], n, memory_order_relaxed);
	}
}

void
brq_metrics_claimed(const char *topic, size_t topic_len, uint64_t wait_ms)
{
	struct topic_entry *e = topic_get(topic, topic_len);
	if (e != NULL) {
		atomic_fetch_add_explicit(&e->counter[BRQ_MT_CLAIMED], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&e->wait[brq_wait_bucket(wait_ms)], 1, memory_order_relaxed);
	}
}

void
brq_metrics_dead(const char *topic, size_t topic_len, uint64_t n)
{
	struct topic_entry *e = topic_get(topic, topic_len);
	if (e != NULL) {
		atomic_fetch_add_explicit(&e->dead, n, memory_order_relaxed);
	}
}

void
brq_metrics_attempt_duration(double seconds)
{
	atomic_fetch_add_explicit(&M.attempt_sum_us, seconds_to_us(seconds), memory_order_relaxed);
	atomic_fetch_add_explicit(&M.attempt_count, 1, memory_order_relaxed);
}

void
brq_metrics_pool_move(brq_pool_state from, brq_pool_state to)
{
	if ((unsigned) from >= BRQ_POOL__COUNT || (unsigned) to >= BRQ_POOL__COUNT) {
		return;
	}
	atomic_fetch_sub_explicit(&M.pool[from], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&M.pool[to], 1, memory_order_relaxed);
}

void
brq_metrics_pool_set(brq_pool_state st, int64_t n)
{
	if ((unsigned) st < BRQ_POOL__COUNT) {
		atomic_store_explicit(&M.pool[st], n, memory_order_relaxed);
	}
}

void
brq_metrics_waiters_set(int64_t n)
{
	atomic_store_explicit(&M.waiters, n, memory_order_relaxed);
}

void
brq_metrics_waiters_add(int64_t delta)
{
	atomic_fetch_add_explicit(&M.waiters, delta, memory_order_relaxed);
}

void
brq_metrics_watches_add(int64_t delta)
{
	atomic_fetch_add_explicit(&M.watches, delta, memory_order_relaxed);
}

void
brq_metrics_listener_up_set(int up)
{
	atomic_store_explicit(&M.listener_up, up ? 1 : 0, memory_order_relaxed);
}

void
brq_metrics_cancels_heard(uint64_t n)
{
	atomic_fetch_add_explicit(&M.cancels_heard, n, memory_order_relaxed);
}

void
brq_metrics_db_up_set(int up)
{
	atomic_store_explicit(&M.db_up, up ? 1 : 0, memory_order_relaxed);
}

// A topic's depth gauges at zero, unless the snapshot gen wrote them already. Under depth_mu.
static void
depth_reset(struct topic_entry *e, uint64_t gen)
{
	if (e->depth_gen != gen) {
		memset(e->jobs, 0, sizeof(e->jobs));
		e->oldest_ready_age_s = 0;
		e->depth_gen          = gen;
	}
}

// A topic's policy gauges at their defaults (not paused, unlimited), unless the snapshot
// gen wrote them. Under depth_mu.
static void
policy_reset(struct topic_entry *e, uint64_t gen)
{
	if (e->policy_gen != gen) {
		e->paused      = false;
		e->max_running = 0;
		e->rate_per_s  = 0;
		e->policy_gen  = gen;
	}
}

// A snapshot of per-topic gauges (depth, policy) is written under depth_mu: begun by
// taking it and numbering the snapshot from *gen_counter, ended by applying reset to
// every topic, so that those absent from the snapshot report their defaults, and
// releasing it. The list only grows, and new entries are created with zero gauges, so a
// racing insertion is harmless.
static uint64_t
snapshot_begin(uint64_t *gen_counter)
{
	pthread_mutex_lock(&M.reg.depth_mu);
	return ++*gen_counter;
}

static void
snapshot_end(void (*reset)(struct topic_entry *, uint64_t), uint64_t gen)
{
	struct registry *r = &M.reg;
	pthread_rwlock_rdlock(&r->rw);
	for (size_t i = 0; i < r->n; i++) {
		reset(r->list[i], gen);
	}
	pthread_rwlock_unlock(&r->rw);
	pthread_mutex_unlock(&r->depth_mu);
}

void
brq_metrics_depth_set(const brq_depth_row *rows, size_t n)
{
	uint64_t gen = snapshot_begin(&M.reg.depth_gen);
	for (size_t i = 0; i < n; i++) {
		const brq_depth_row *row = &rows[i];
		struct topic_entry  *e   = topic_get(row->topic, row->topic_len);
		if (e == NULL) {
			continue;
		}
		double age = row->oldest_ready_age_s > 0 ? row->oldest_ready_age_s : 0;
		depth_reset(e, gen);
		// Several rows can land on one entry (overflow topics share "_other"):
		// counts add up, the age is the oldest.
		for (int s = 0; s < BRQ_STATE__COUNT; s++) {
			e->jobs[s] += row->count[s];
		}
		if (age > e->oldest_ready_age_s) {
			e->oldest_ready_age_s = age;
		}
	}
	snapshot_end(depth_reset, gen);
	atomic_store_explicit(&M.depth_at_ms, brq_wall_ms(), memory_order_relaxed);
}

void
brq_metrics_depth_estimated_set(bool estimated)
{
	atomic_store_explicit(&M.jobs_estimated, estimated ? 1 : 0, memory_order_relaxed);
}

void
brq_metrics_depth_info(uint64_t *at_wall_ms, bool *estimated, bool *db_up)
{
	*at_wall_ms = atomic_load_explicit(&M.depth_at_ms, memory_order_relaxed);
	*estimated  = atomic_load_explicit(&M.jobs_estimated, memory_order_relaxed) != 0;
	*db_up      = atomic_load_explicit(&M.db_up, memory_order_relaxed) != 0;
}

void
brq_metrics_policy_set(const brq_policy_row *rows, size_t n)
{
	uint64_t gen = snapshot_begin(&M.reg.policy_gen);
	for (size_t i = 0; i < n; i++) {
		struct topic_entry *e = topic_get(rows[i].topic, rows[i].topic_len);
		if (e == NULL) {
			continue;
		}
		e->paused      = rows[i].paused;
		e->max_running = rows[i].max_running;
		e->rate_per_s  = rows[i].rate_per_s;
		e->policy_gen  = gen;
	}
	snapshot_end(policy_reset, gen);
}

void
brq_metrics_table_set(const brq_table_stats *t)
{
	pthread_mutex_lock(&M.reg.depth_mu);
	M.reg.table     = *t;
	M.reg.has_table = true;
	pthread_mutex_unlock(&M.reg.depth_mu);
}

// ---- lifecycle ------------------------------------------------------------

int
brq_metrics_init(const char *version)
{
	char *v = strdup(version != NULL ? version : "unknown");
	if (v == NULL) {
		return BRQ_ENOMEM;
	}
	free(M.version);
	M.version = v;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	M.start_time_s = (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
	return 0;
}

void
brq_metrics_fini(void)
{
	struct registry *r = &M.reg;
	pthread_rwlock_wrlock(&r->rw);
	for (size_t i = 0; i < r->n; i++) {
		entry_free(r->list[i]);
	}
	free(r->list);
	free(r->slots);
	r->list  = NULL;
	r->slots = NULL;
	r->n = r->cap = r->list_cap = 0;
	r->other                    = NULL;
	atomic_store(&r->is_overflow_logged, false);
	pthread_rwlock_unlock(&r->rw);
	pthread_mutex_lock(&r->depth_mu);
	r->has_table = false;
	pthread_mutex_unlock(&r->depth_mu);

	memset((void *) M.rpc, 0, sizeof(M.rpc));
	memset((void *) M.hist, 0, sizeof(M.hist));
	atomic_store(&M.auth_failures, 0);
	atomic_store(&M.conns_closed, 0);
	atomic_store(&M.quota_refused, 0);
	atomic_store(&M.expired, 0);
	atomic_store(&M.schedule_enqueued, 0);
	atomic_store(&M.schedule_skipped, 0);
	atomic_store(&M.settle_by_address, 0);
	atomic_store(&M.settle_by_id, 0);
	atomic_store(&M.attempt_sum_us, 0);
	atomic_store(&M.attempt_count, 0);
	for (int s = 0; s < BRQ_POOL__COUNT; s++) {
		atomic_store(&M.pool[s], 0);
	}
	atomic_store(&M.waiters, 0);
	atomic_store(&M.watches, 0);
	atomic_store(&M.cancels_heard, 0);
	atomic_store(&M.listener_up, 0);
	atomic_store(&M.db_up, 0);
	atomic_store(&M.jobs_estimated, 0);
	atomic_store(&M.depth_at_ms, 0);
	free(M.version);
	M.version = NULL;
}
