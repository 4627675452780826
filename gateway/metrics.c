// SPDX-License-Identifier: MIT
// Prometheus metrics: lock-free counters for the hot path, a per-topic registry, and the /metrics renderer.
#include "metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>

#include "log.h"

// The registry holds at most this many distinct topics; later topics are counted
// under OTHER_TOPIC (which no valid topic can spell: topics start with [a-z0-9]).
// Each topic costs ~25 series, so the cap bounds a scrape to a few hundred thousand
// lines even when a buggy producer invents topics.
#define MAX_TOPICS  10000
#define OTHER_TOPIC "_other"

// Open-addressing table of entry pointers; capacity is a power of two, kept at most
// half full, so a lookup probes a couple of slots.
#define TABLE_MIN_CAP 64

// brooq_rpc_duration_seconds buckets, upper bounds in microseconds (le="...").
// Sub-millisecond for cheap ops up to minutes for long-poll claims (op="claim_wait").
static const uint64_t bucket_le_us[] = {
	50,       100,      250,       500,                    // µs
	1000,     2500,     5000,      10000,    25000, 50000, // ms
	100000,   250000,   500000,                            //
	1000000,  2500000,  5000000,   10000000,               // s
	30000000, 60000000, 300000000,                         // long polls
};
static const char *const bucket_le_str[] = {
	"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
	"0.1",   "0.25",   "0.5",     "1",      "2.5",   "5",      "10",    "30",   "60",    "300",
};
#define N_BUCKETS (sizeof(bucket_le_us) / sizeof(bucket_le_us[0]))
_Static_assert(sizeof(bucket_le_str) / sizeof(bucket_le_str[0]) == N_BUCKETS, "one label per bucket bound");

// Histogram rows: one per op, plus the long-poll claims that waited.
#define HIST_CLAIM_WAIT BRQ_OP__COUNT
#define N_HIST          (BRQ_OP__COUNT + 1)

struct histogram {
	// Per-bucket (NOT cumulative) counts; the last slot is the +Inf overflow. The
	// renderer accumulates them and derives _count from the same reads, so _count
	// always equals the +Inf bucket even while updates race a scrape.
	_Atomic uint64_t bucket[N_BUCKETS + 1];
	_Atomic uint64_t sum_us; // total observed, microseconds (exact integer)
};

struct topic_entry {
	char            *name; // owned, NUL-terminated (a topic has no NUL)
	size_t           len;
	uint64_t         hash;
	_Atomic uint64_t counter[BRQ_MT__COUNT];
	_Atomic uint64_t settle[BRQ_OUTCOME__COUNT];
	_Atomic uint64_t dead; // brooq_dead_total
	// Depth gauges: written by brq_metrics_depth_set and read by the renderer, both
	// under depth_mu, so a scrape never sees half of a snapshot.
	uint64_t jobs[BRQ_STATE__COUNT];
	double   oldest_ready_age_s;
	uint64_t depth_gen; // snapshot that last wrote the gauges above
};

struct registry {
	// Lock order: depth_mu before rw. The RPC path takes only rw, as a reader,
	// except for the first update of a new topic (writer, once per topic).
	pthread_rwlock_t     rw;
	struct topic_entry **slots; // cap slots, NULL = empty
	size_t               cap;
	struct topic_entry **list; // n entries in insertion order (list_cap slots)
	size_t               n;
	size_t               list_cap;
	struct topic_entry  *other; // the overflow entry, created on first overflow
	atomic_bool          is_overflow_logged;

	pthread_mutex_t depth_mu;
	uint64_t        depth_gen;
};

static struct {
	struct registry  reg;
	_Atomic uint64_t rpc[BRQ_OP__COUNT][BRQ_ST__COUNT];
	struct histogram hist[N_HIST];
	_Atomic uint64_t auth_failures;
	_Atomic uint64_t expired;
	_Atomic uint64_t attempt_sum_us;
	_Atomic uint64_t attempt_count;
	_Atomic int64_t  pool[BRQ_POOL__COUNT];
	_Atomic int64_t  waiters;
	_Atomic int      db_up;
	char            *version; // owned; NULL before init
	double           start_time_s;
} M = {
	.reg =
		{
			.rw       = PTHREAD_RWLOCK_INITIALIZER,
			.depth_mu = PTHREAD_MUTEX_INITIALIZER,
		},
};

static const char *const pool_state_names[BRQ_POOL__COUNT] = {
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
// overflow entry; NULL only when even that cannot be allocated (the update is lost).
static struct topic_entry *
topic_get(const char *s, size_t len)
{
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
static int
registry_snapshot(struct topic_entry ***out, size_t *n)
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

static int
entry_cmp(const void *a, const void *b)
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
brq_metrics_expired(void)
{
	atomic_fetch_add_explicit(&M.expired, 1, memory_order_relaxed);
}

void
brq_metrics_topic_add(const char *topic, size_t topic_len, brq_topic_counter c, uint64_t n)
{
	if ((unsigned) c >= BRQ_MT__COUNT || topic == NULL) {
		return;
	}
	struct topic_entry *e = topic_get(topic, topic_len);
	if (e != NULL) {
		atomic_fetch_add_explicit(&e->counter[c], n, memory_order_relaxed);
	}
}

void
brq_metrics_settle(const char *topic, size_t topic_len, brq_outcome oc, uint64_t n)
{
	if ((unsigned) oc >= BRQ_OUTCOME__COUNT || topic == NULL) {
		return;
	}
	struct topic_entry *e = topic_get(topic, topic_len);
	if (e != NULL) {
		atomic_fetch_add_explicit(&e->settle[oc], n, memory_order_relaxed);
	}
}

void
brq_metrics_dead(const char *topic, size_t topic_len, uint64_t n)
{
	if (topic == NULL) {
		return;
	}
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
brq_metrics_db_up_set(int up)
{
	atomic_store_explicit(&M.db_up, up ? 1 : 0, memory_order_relaxed);
}

void
brq_metrics_depth_set(const brq_depth_row *rows, size_t n)
{
	struct registry *r = &M.reg;

	pthread_mutex_lock(&r->depth_mu);
	uint64_t gen = ++r->depth_gen;
	for (size_t i = 0; i < n; i++) {
		const brq_depth_row *row = &rows[i];
		if (row->topic == NULL) {
			continue;
		}
		struct topic_entry *e = topic_get(row->topic, row->topic_len);
		if (e == NULL) {
			continue;
		}
		double age = row->oldest_ready_age_s > 0 ? row->oldest_ready_age_s : 0;
		if (e->depth_gen != gen) {
			memset(e->jobs, 0, sizeof(e->jobs));
			e->oldest_ready_age_s = 0;
			e->depth_gen          = gen;
		}
		// Several rows can land on one entry (overflow topics share "_other"):
		// counts add up, the age is the oldest.
		for (int s = 0; s < BRQ_STATE__COUNT; s++) {
			e->jobs[s] += row->count[s];
		}
		if (age > e->oldest_ready_age_s) {
			e->oldest_ready_age_s = age;
		}
	}

	// Topics absent from this snapshot report 0. The list only grows, and new
	// entries are created with zero gauges, so a racing insertion is harmless.
	pthread_rwlock_rdlock(&r->rw);
	for (size_t i = 0; i < r->n; i++) {
		struct topic_entry *e = r->list[i];
		if (e->depth_gen != gen) {
			memset(e->jobs, 0, sizeof(e->jobs));
			e->oldest_ready_age_s = 0;
			e->depth_gen          = gen;
		}
	}
	pthread_rwlock_unlock(&r->rw);
	pthread_mutex_unlock(&r->depth_mu);
}

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
	if (b->is_oom || b->len + more + 1 <= b->cap) {
		return;
	}
	size_t ncap = b->cap == 0 ? 16384 : b->cap;
	while (ncap < b->len + more + 1) {
		ncap *= 2;
	}
	char *np = realloc(b->p, ncap);
	if (np == NULL) {
		b->is_oom = true;
		return;
	}
	b->p   = np;
	b->cap = ncap;
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
	family(b, "brooq_ready_oldest_age_seconds", "gauge",
	       "Age of the oldest ready job (pending or failed, available_at <= now()) per topic; 0 when "
	       "nothing is ready.");
	for (size_t i = 0; i < n; i++) {
		topic_sample(b, "brooq_ready_oldest_age_seconds", v[i]);
		buf_printf(b, "} %.3f\n", v[i]->oldest_ready_age_s);
	}
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
	       "op=\"claim_wait\".");
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

int
brq_metrics_render(char **out, size_t *len)
{
	struct buf           b = {0};
	struct topic_entry **v = NULL;
	size_t               n = 0;

	if (registry_snapshot(&v, &n) != 0) {
		return BRQ_ENOMEM;
	}
	qsort(v, n, sizeof(*v), entry_cmp);

	family(&b, "brooq_build_info", "gauge", "Build information; the value is always 1.");
	buf_str(&b, "brooq_build_info{version=\"");
	const char *ver = M.version != NULL ? M.version : "unknown";
	buf_label_value(&b, ver, strlen(ver));
	buf_str(&b, "\"} 1\n");
	family(&b, "brooq_start_time_seconds", "gauge",
	       "Start time of the gateway since the Unix epoch, in seconds.");
	buf_printf(&b, "brooq_start_time_seconds %.3f\n", M.start_time_s);

	render_depth(&b, v, n);
	render_topic_counter(
		&b, v, n, "brooq_enqueued_total",
		"Jobs created by enqueue and by chained jobs of settle done (idempotent repeats excluded).",
		BRQ_MT_ENQUEUED);
	render_topic_counter(&b, v, n, "brooq_claimed_total",
			     "Jobs handed to workers by claim (each is one attempt).", BRQ_MT_CLAIMED);
	render_settle(&b, v, n);
	family(&b, "brooq_dead_total", "counter",
	       "Jobs that reached dead: a recorded failure on their last attempt.");
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

	family(&b, "brooq_attempt_duration_seconds", "summary", "Time from claim to settle of an attempt.");
	buf_str(&b, "brooq_attempt_duration_seconds_sum ");
	render_seconds_us(&b, atomic_load_explicit(&M.attempt_sum_us, memory_order_relaxed));
	buf_printf(&b, "\nbrooq_attempt_duration_seconds_count %" PRIu64 "\n",
		   atomic_load_explicit(&M.attempt_count, memory_order_relaxed));

	render_rpc(&b);

	family(&b, "brooq_auth_failures_total", "counter",
	       "Requests refused with unauthenticated (missing or unknown token).");
	buf_printf(&b, "brooq_auth_failures_total %" PRIu64 "\n",
		   atomic_load_explicit(&M.auth_failures, memory_order_relaxed));

	family(&b, "brooq_requests_expired_total", "counter",
	       "Requests not run, or claims whose leases were given back, because the caller's "
	       "timeout (the request's timeout_ms) had passed.");
	buf_printf(&b, "brooq_requests_expired_total %" PRIu64 "\n",
		   atomic_load_explicit(&M.expired, memory_order_relaxed));
	uint64_t rx_used, rx_refused;
	nng_rx_budget_stats(&rx_used, &rx_refused);
	family(&b, "brooq_request_bytes_in_flight", "gauge",
	       "Bytes of requests over 64 KiB held now, from the transport reading their length to "
	       "their answer (bounded by BROOQ_MAX_INFLIGHT_BYTES).");
	buf_printf(&b, "brooq_request_bytes_in_flight %" PRIu64 "\n", rx_used);
	family(&b, "brooq_request_budget_refused_total", "counter",
	       "Requests over 64 KiB refused, their connection closed, because "
	       "BROOQ_MAX_INFLIGHT_BYTES was spent.");
	buf_printf(&b, "brooq_request_budget_refused_total %" PRIu64 "\n", rx_refused);

	family(&b, "brooq_db_pool_connections", "gauge",
	       "Database pool connections by state (down: not connected, reconnecting).");
	for (int s = 0; s < BRQ_POOL__COUNT; s++) {
		buf_printf(&b, "brooq_db_pool_connections{state=\"%s\"} %" PRId64 "\n", pool_state_names[s],
			   atomic_load_explicit(&M.pool[s], memory_order_relaxed));
	}
	family(&b, "brooq_db_up", "gauge",
	       "1 when the monitor's last database round trip succeeded recently, else 0.");
	buf_printf(&b, "brooq_db_up %d\n", atomic_load_explicit(&M.db_up, memory_order_relaxed));
	family(&b, "brooq_long_polls", "gauge", "Claims parked in a long poll right now.");
	buf_printf(&b, "brooq_long_polls %" PRId64 "\n",
		   atomic_load_explicit(&M.waiters, memory_order_relaxed));

	free(v);
	if (b.is_oom) {
		free(b.p);
		return BRQ_ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
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

	memset((void *) M.rpc, 0, sizeof(M.rpc));
	memset((void *) M.hist, 0, sizeof(M.hist));
	atomic_store(&M.auth_failures, 0);
	atomic_store(&M.expired, 0);
	atomic_store(&M.attempt_sum_us, 0);
	atomic_store(&M.attempt_count, 0);
	for (int s = 0; s < BRQ_POOL__COUNT; s++) {
		atomic_store(&M.pool[s], 0);
	}
	atomic_store(&M.waiters, 0);
	atomic_store(&M.db_up, 0);
	free(M.version);
	M.version = NULL;
}
