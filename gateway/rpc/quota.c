// SPDX-License-Identifier: MIT
// Who may hold what in the RPC server: the shares of work items per connection, per
// token and on the operator lane (quota.h says why and how much).
#include "quota.h"

#include <stdlib.h>

#define BRQ_STR_(x) #x
#define BRQ_STR(x)  BRQ_STR_(x)

struct brq_tally_entry {
	brq_tally_entry *next;
	uint64_t         key;
	uint32_t         count;
};

// Buckets of each table: busy connections or tokens are spread over them; more only
// costs a little memory (8 bytes a bucket).
#define TALLY_BUCKETS 1024u

static int
tally_init(brq_tally *t)
{
	t->n_buckets = TALLY_BUCKETS;
	t->buckets   = calloc(t->n_buckets, sizeof(*t->buckets));
	return t->buckets != NULL ? 0 : BRQ_ENOMEM;
}

static void
tally_fini(brq_tally *t)
{
	for (uint32_t i = 0; t->buckets != NULL && i < t->n_buckets; i++) {
		brq_tally_entry *e = t->buckets[i];
		while (e != NULL) {
			brq_tally_entry *next = e->next;
			free(e);
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = NULL;
}

static brq_tally_entry **
tally_slot(brq_tally *t, uint64_t key)
{
	uint64_t          h = key * 0x9E3779B97F4A7C15ull; // Fibonacci hashing: pipe ids are sequential
	brq_tally_entry **p = &t->buckets[(h >> 32) & (t->n_buckets - 1)];
	while (*p != NULL && (*p)->key != key)
		p = &(*p)->next;
	return p;
}

// The count under key (0 when none).
static uint32_t
tally_get(brq_tally *t, uint64_t key)
{
	brq_tally_entry *e = *tally_slot(t, key);
	return e != NULL ? e->count : 0;
}

// Adds one under key. False (nothing added) when out of memory.
static bool
tally_add(brq_tally *t, uint64_t key)
{
	brq_tally_entry **p = tally_slot(t, key);
	if (*p == NULL) {
		brq_tally_entry *e = malloc(sizeof(*e));
		if (e == NULL)
			return false;
		*e = (brq_tally_entry) {.key = key};
		*p = e;
	}
	(*p)->count++;
	return true;
}

// Takes one back under key; the entry goes with its last count.
static void
tally_sub(brq_tally *t, uint64_t key)
{
	brq_tally_entry **p = tally_slot(t, key);
	brq_tally_entry  *e = *p;
	if (e == NULL)
		return;
	if (--e->count == 0) {
		*p = e->next;
		free(e);
	}
}

int
brq_quota_init(brq_quota *q, const brq_quota_opts *o)
{
	*q = (brq_quota) {.o = *o};
	if (pthread_mutex_init(&q->mu, NULL) != 0)
		return BRQ_ENOMEM;
	q->live = true;
	if (tally_init(&q->conns) != 0 || tally_init(&q->tokens) != 0 || tally_init(&q->reads) != 0 ||
	    tally_init(&q->watch_conns) != 0 || tally_init(&q->watch_tokens) != 0) {
		brq_quota_fini(q);
		return BRQ_ENOMEM;
	}
	return 0;
}

void
brq_quota_fini(brq_quota *q)
{
	if (!q->live)
		return;
	q->live = false;
	tally_fini(&q->conns);
	tally_fini(&q->tokens);
	tally_fini(&q->reads);
	tally_fini(&q->watch_conns);
	tally_fini(&q->watch_tokens);
	pthread_mutex_destroy(&q->mu);
}

void
brq_quota_arrive(brq_quota *q, brq_quota_hold *h)
{
	pthread_mutex_lock(&q->mu);
	if (tally_add(&q->conns, h->pipe_id))
		h->held |= BRQ_QUOTA_CONN;
	h->conn_n = tally_get(&q->conns, h->pipe_id);
	pthread_mutex_unlock(&q->mu);
}

brq_quota_verdict
brq_quota_admit_conn(const brq_quota *q, const brq_quota_hold *h, bool authed, const char **why)
{
	uint32_t n = h->conn_n;
	if (!authed) {
		*why = "too many requests without a valid token on one connection";
		return n > q->o.conn_max_anon ? BRQ_QUOTA_CLOSE : BRQ_QUOTA_OK;
	}
	if (n <= q->o.conn_max)
		return BRQ_QUOTA_OK;
	*why = "too many requests in the gateway from this connection "
	       "(BROOQ_CONN_MAX_REQUESTS); wait for replies before sending more";
	return n > 2 * q->o.conn_max ? BRQ_QUOTA_CLOSE : BRQ_QUOTA_REFUSE;
}

brq_quota_verdict
brq_quota_admit(brq_quota *q, brq_quota_hold *h, bool is_read, bool is_long_poll, const char **why)
{
	brq_quota_verdict v = BRQ_QUOTA_OK;
	pthread_mutex_lock(&q->mu);
	if (is_long_poll) {
		// max_waiters bounds long-polls; a worker's threads may each park one on the
		// worker's one connection. Its reply, once due, is held to the send timeout.
		if (h->held & BRQ_QUOTA_CONN) {
			tally_sub(&q->conns, h->pipe_id);
			h->held &= ~(unsigned) BRQ_QUOTA_CONN;
		}
		goto out;
	}
	if (tally_get(&q->tokens, h->token_key) >= q->o.token_max) {
		*why = "too many requests in the gateway for this token "
		       "(BROOQ_TOKEN_MAX_REQUESTS); retry later";
		v    = BRQ_QUOTA_REFUSE;
		goto out;
	}
	if (is_read &&
	    (tally_get(&q->reads, h->token_key) >= q->o.token_max_reads || q->reads_all >= q->o.reads_max)) {
		*why = "too many operator reads queued (stats, job, topics, list, "
		       "schedule_list); retry later";
		v    = BRQ_QUOTA_REFUSE;
		goto out;
	}
	if (!tally_add(&q->tokens, h->token_key)) {
		*why = "out of memory";
		v    = BRQ_QUOTA_REFUSE;
		goto out;
	}
	h->held |= BRQ_QUOTA_TOKEN;
	if (is_read && tally_add(&q->reads, h->token_key)) {
		q->reads_all++;
		h->held |= BRQ_QUOTA_READ;
	}
out:
	pthread_mutex_unlock(&q->mu);
	return v;
}

brq_quota_verdict
brq_quota_admit_watch(brq_quota *q, brq_quota_hold *h, const char **why)
{
	brq_quota_verdict v = BRQ_QUOTA_REFUSE;
	pthread_mutex_lock(&q->mu);
	if (q->watches_all >= q->o.watches_max)
		*why = "too many watches waiting (BROOQ_MAX_WATCHES); cancels reach this worker at its "
		       "heartbeats";
	else if (tally_get(&q->watch_conns, h->pipe_id) >= q->o.watch_conn_max)
		*why = "too many watches on this connection (" BRQ_STR(BRQ_WATCH_CONN_MAX) ")";
	else if (tally_get(&q->watch_tokens, h->token_key) >= q->o.watch_token_max)
		*why = "too many watches for this token (all of BROOQ_MAX_WATCHES but an eighth)";
	else if (!tally_add(&q->watch_conns, h->pipe_id))
		*why = "out of memory";
	else if (!tally_add(&q->watch_tokens, h->token_key)) {
		tally_sub(&q->watch_conns, h->pipe_id);
		*why = "out of memory";
	} else {
		q->watches_all++;
		h->held |= BRQ_QUOTA_WATCH;
		v = BRQ_QUOTA_OK;
	}
	pthread_mutex_unlock(&q->mu);
	return v;
}

// Gives back h's operator read (under q->mu).
static void
read_give(brq_quota *q, brq_quota_hold *h)
{
	if (h->held & BRQ_QUOTA_READ) {
		tally_sub(&q->reads, h->token_key);
		q->reads_all--;
		h->held &= ~(unsigned) BRQ_QUOTA_READ;
	}
}

void
brq_quota_read_done(brq_quota *q, brq_quota_hold *h)
{
	if ((h->held & BRQ_QUOTA_READ) == 0)
		return;
	pthread_mutex_lock(&q->mu);
	read_give(q, h);
	pthread_mutex_unlock(&q->mu);
}

void
brq_quota_release(brq_quota *q, brq_quota_hold *h)
{
	if (h->held == 0)
		return;
	pthread_mutex_lock(&q->mu);
	read_give(q, h);
	if (h->held & BRQ_QUOTA_TOKEN)
		tally_sub(&q->tokens, h->token_key);
	if (h->held & BRQ_QUOTA_CONN)
		tally_sub(&q->conns, h->pipe_id);
	if (h->held & BRQ_QUOTA_WATCH) {
		tally_sub(&q->watch_conns, h->pipe_id);
		tally_sub(&q->watch_tokens, h->token_key);
		q->watches_all--;
	}
	h->held = 0;
	pthread_mutex_unlock(&q->mu);
}
