// SPDX-License-Identifier: MIT
// The store's per-topic policy: which topics take the claim's policy path (a cache of
// topic_policy, refreshed every poll interval), their locks, and the admin changes.
#include "store_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"

// The topics that have a row in topic_policy, as this gateway last read them. Shared
// by every connection of the store.
struct brq_policy_cache {
	pthread_mutex_t mtx;
	char          **topics; // owned, NUL-terminated
	size_t          n;
	uint64_t        at_ms; // brq_now_ms() of the last read; 0: read at the next claim
};

int
brq_policy_cache_new(brq_policy_cache **out)
{
	brq_policy_cache *pc = calloc(1, sizeof(*pc));
	if (pc == NULL)
		return BRQ_ENOMEM;
	pthread_mutex_init(&pc->mtx, NULL);
	*out = pc;
	return 0;
}

static void
free_topics(char **topics, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(topics[i]);
	free(topics);
}

void
brq_policy_cache_free(brq_policy_cache *pc)
{
	if (pc == NULL)
		return;
	free_topics(pc->topics, pc->n);
	pthread_mutex_destroy(&pc->mtx);
	free(pc);
}

void
brq_store_policy_invalidate(const brq_store *st)
{
	pthread_mutex_lock(&st->pc->mtx);
	st->pc->at_ms = 0;
	pthread_mutex_unlock(&st->pc->mtx);
}

// Reads topic_policy's topics into the cache. 0 or the statement's failure.
static int
refresh(brq_store_conn *c)
{
	brq_policy_cache *pc = c->st->pc;
	PGresult         *r;
	int               rv = brq_store_run(c, BRQ_STMT_POLICY_TOPICS, NULL, NULL, NULL, TOPIC__N, &r);
	if (rv != 0)
		return rv;
	size_t n      = (size_t) PQntuples(r);
	char **topics = calloc(n > 0 ? n : 1, sizeof(*topics));
	for (size_t i = 0; topics != NULL && i < n; i++)
		if ((topics[i] = strdup(PQgetvalue(r, (int) i, TOPIC_TOPIC))) == NULL) {
			free_topics(topics, i);
			topics = NULL;
		}
	if (topics == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "policy: out of memory");
	pthread_mutex_lock(&pc->mtx);
	char **old   = pc->topics;
	size_t n_old = pc->n;
	pc->topics   = topics;
	pc->n        = n;
	pc->at_ms    = brq_now_ms();
	pthread_mutex_unlock(&pc->mtx);
	free_topics(old, n_old);
	return 0;
}

bool
brq_store_policy_applies(brq_store_conn *c, const brq_str *topics, uint32_t n)
{
	brq_policy_cache *pc       = c->st->pc;
	uint64_t          interval = c->st->cfg->poll_interval_ms;
	pthread_mutex_lock(&pc->mtx);
	bool stale = pc->at_ms == 0 || brq_now_ms() - pc->at_ms >= interval;
	pthread_mutex_unlock(&pc->mtx);
	// A cache that cannot be read sends the claim down the policy path, which is
	// right for every topic (only slower).
	if (stale && refresh(c) != 0)
		return true;
	bool hit = false;
	pthread_mutex_lock(&pc->mtx);
	for (uint32_t i = 0; i < n && !hit; i++)
		for (size_t k = 0; k < pc->n && !hit; k++)
			hit = strlen(pc->topics[k]) == topics[i].len &&
				memcmp(pc->topics[k], topics[i].ptr, topics[i].len) == 0;
	pthread_mutex_unlock(&pc->mtx);
	return hit;
}

bool
brq_store_policy_known(const brq_store *st, brq_str topic)
{
	brq_policy_cache *pc  = st->pc;
	bool              hit = false;
	pthread_mutex_lock(&pc->mtx);
	for (size_t k = 0; k < pc->n && !hit; k++)
		hit = strlen(pc->topics[k]) == topic.len && memcmp(pc->topics[k], topic.ptr, topic.len) == 0;
	pthread_mutex_unlock(&pc->mtx);
	return hit;
}

int
brq_store_policy_lock(brq_store_conn *c, const brq_str *topics, uint32_t n)
{
	brq_pgarr *a = &c->arr[0];
	brq_pgarr_begin(a, BRQ_OID_TEXT);
	for (uint32_t i = 0; i < n; i++)
		brq_pgarr_text(a, topics[i].ptr, topics[i].len);
	const char *v[1];
	int         l[1], f[1] = {BRQ_BINARY};
	PGresult   *r;
	if (brq_store_param(a, v, l, 0) != 0)
		return brq_store_fail(c, BRQ_ENOMEM, "claim: out of memory");
	return brq_store_run(c, BRQ_STMT_POLICY_LOCK, v, l, f, TOPIC__N, &r);
}

// Row `row` of a POLICY_COLS result into *(brq_topic_policy *) out (strings borrowed
// from r).
static void
read_policy(const PGresult *r, int row, void *out)
{
	*(brq_topic_policy *) out = (brq_topic_policy) {
		.topic       = brq_store_str(r, row, POLICY_TOPIC),
		.paused      = brq_store_bool(r, row, POLICY_PAUSED),
		.max_running = (uint32_t) brq_store_int(r, row, POLICY_MAX_RUNNING),
		.rate_per_s  = (uint32_t) brq_store_int(r, row, POLICY_RATE_PER_S),
		.running     = (uint64_t) brq_store_int(r, row, POLICY_RUNNING),
	};
}

// The change and the pruning of a row left saying nothing, in the open transaction.
static int
policy_write(brq_store_conn *c, const brq_store_policy_in *in, brq_topic_policy *out)
{
	static const char *const what[] = {"pause", "resume", "limits"};
	char                     topic[BRQ_TOPIC_MAX + 1], max[16], rate[16];
	size_t                   len = in->topic.len < BRQ_TOPIC_MAX ? in->topic.len : BRQ_TOPIC_MAX;
	PGresult                *r;
	memcpy(topic, in->topic.ptr, len);
	topic[len] = '\0';
	snprintf(max, sizeof(max), "%u", in->max_running);
	snprintf(rate, sizeof(rate), "%u", in->rate_per_s);
	const char *v[6] = {topic, what[in->what],          max, in->set_max ? "t" : "f",
			    rate,  in->set_rate ? "t" : "f"};
	int         rv   = brq_store_run(c, BRQ_STMT_POLICY_SET, v, NULL, NULL, POLICY__N, &r);
	if (rv != 0)
		return rv;
	if (PQntuples(r) != 1)
		return brq_store_fail(c, BRQ_EINTERNAL, "policy: %d rows written", PQntuples(r));
	read_policy(r, 0, out);
	return brq_store_run(c, BRQ_STMT_POLICY_PRUNE, v, NULL, NULL, 0, &r);
}

int
brq_store_policy_set(brq_store_conn *c, const brq_store_policy_in *in, brq_topic_policy *out)
{
	int rv = brq_store_begin(c);
	if (rv == 0)
		rv = policy_write(c, in, out);
	if (rv == 0)
		rv = brq_store_commit(c);
	else
		brq_store_rollback(c);
	// This gateway's claims see the change at once; the others within a poll
	// interval (their caches), and never more than it allows (claim_sql's guard).
	brq_store_policy_invalidate(c->st);
	return rv;
}

int
brq_store_policy_list(brq_store_conn *c, brq_topic_policy **out, uint32_t *n)
{
	return brq_store_run_all(c, BRQ_STMT_POLICY_LIST, POLICY__N, sizeof(**out), read_policy,
				 "topics: out of memory", out, n);
}

int
brq_store_policy_configure(brq_store_conn *c)
{
	const brq_config *cfg = c->st->cfg;
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		const brq_topic_override *o = &cfg->topic_overrides[i];
		if (!o->has_concurrency && !o->has_rate)
			continue;
		brq_store_policy_in in = {.what        = BRQ_POLICY_LIMITS,
					  .topic       = brq_str_c(o->topic),
					  .set_max     = o->has_concurrency,
					  .max_running = o->concurrency,
					  .set_rate    = o->has_rate,
					  .rate_per_s  = o->rate};
		brq_topic_policy    p;
		int                 rv = brq_store_policy_set(c, &in, &p);
		brq_store_reset(c);
		if (rv != 0)
			return rv;
	}
	return 0;
}
