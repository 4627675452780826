// SPDX-License-Identifier: MIT
// Watches: the ring of cancels heard, workers' watches parked until one of their topics'.
#include "watch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

// A cursor: the epoch (16 hex digits) and a seq, "<epoch>.<seq>".
#define CURSOR_FMT "%016" PRIx64 ".%" PRIu64

int
brq_watches_init(brq_watches *wt)
{
	memset(wt, 0, sizeof(*wt));
	wt->ring = calloc(BRQ_WATCH_RING, sizeof(*wt->ring));
	if (wt->ring == NULL)
		return BRQ_ENOMEM;
	if (pthread_mutex_init(&wt->mtx, NULL) != 0) {
		free(wt->ring);
		wt->ring = NULL;
		return BRQ_ENOMEM;
	}
	brq_list_init(&wt->parked, offsetof(brq_work, park_link));
	crypto_shorthash_keygen(wt->key);
	wt->next_seq = wt->epoch_start = 1;
	return 0;
}

void
brq_watches_fini(brq_watches *wt)
{
	if (wt->ring == NULL)
		return;
	pthread_mutex_destroy(&wt->mtx);
	free(wt->ring);
	wt->ring = NULL;
}

static uint64_t
topic_hash(const brq_watches *wt, const char *p, size_t len)
{
	unsigned char h[crypto_shorthash_BYTES];
	uint64_t      v;
	crypto_shorthash(h, (const unsigned char *) p, len, wt->key);
	memcpy(&v, h, sizeof(v));
	return v;
}

static uint64_t
bloom_bit(uint64_t th)
{
	return UINT64_C(1) << (th >> 58);
}

// Whether note n is of one of w's topics.
static bool
is_watched(const brq_work *w, const brq_watch_note *n)
{
	if ((w->watch.bloom & bloom_bit(n->th)) == 0)
		return false;
	for (uint32_t i = 0; i < w->req.watch.n_topics; i++)
		if (w->watch.th[i] == n->th)
			return true;
	return false;
}

// Reads the request's cursor: ours or not at all (has_cursor false: resync).
static void
parse_cursor(brq_work *w)
{
	brq_str c = w->req.watch.cursor;
	char    txt[BRQ_CURSOR_MAX + 1], back[BRQ_CURSOR_MAX + 1];
	w->watch.has_cursor = false;
	if (c.len == 0 || c.len > BRQ_CURSOR_MAX)
		return;
	memcpy(txt, c.ptr, c.len);
	txt[c.len] = '\0';
	uint64_t e, s;
	// Read back and print again: only the exact text we would have written passes.
	if (sscanf(txt, "%16" SCNx64 ".%" SCNu64, &e, &s) != 2)
		return;
	snprintf(back, sizeof(back), CURSOR_FMT, e, s);
	if (strcmp(back, txt) != 0 || e == 0)
		return;
	w->watch.epoch      = e;
	w->watch.seq        = s;
	w->watch.has_cursor = true;
}

int
brq_watches_begin(brq_watches *wt, brq_work *w)
{
	uint32_t n  = w->req.watch.n_topics;
	w->watch.th = brq_arena_alloc(&w->arena, n, sizeof(uint64_t));
	if (w->watch.th == NULL)
		return BRQ_ENOMEM;
	w->watch.bloom = 0;
	for (uint32_t i = 0; i < n; i++) {
		w->watch.th[i] = topic_hash(wt, w->req.watch.topics[i].ptr, w->req.watch.topics[i].len);
		w->watch.bloom |= bloom_bit(w->watch.th[i]);
	}
	parse_cursor(w);
	return 0;
}

// Whether w's cursor covers everything heard since it in this epoch (under wt->mtx).
static bool
is_cursor_good(const brq_watches *wt, const brq_work *w)
{
	uint64_t s = w->watch.seq;
	return w->watch.has_cursor && wt->epoch != 0 && w->watch.epoch == wt->epoch && s >= wt->epoch_start &&
		s <= wt->next_seq && wt->next_seq - s <= BRQ_WATCH_RING;
}

// The cancels of w's topics from its cursor on, at most BRQ_WATCH_IDS_MAX, into rep;
// *to: the seq after the last note read (under wt->mtx). Returns how many, or -1 when
// out of memory.
static int
collect(brq_watches *wt, brq_work *w, brq_watch_rep *rep, uint64_t *to)
{
	uint64_t s      = w->watch.seq;
	rep->n_canceled = 0;
	rep->canceled   = NULL;
	for (; s < wt->next_seq && rep->n_canceled < BRQ_WATCH_IDS_MAX; s++) {
		const brq_watch_note *n = &wt->ring[s % BRQ_WATCH_RING];
		if (!is_watched(w, n))
			continue;
		if (rep->canceled == NULL) {
			rep->canceled = brq_arena_alloc(&w->arena, BRQ_WATCH_IDS_MAX, sizeof(uint64_t));
			if (rep->canceled == NULL)
				return -1;
		}
		rep->canceled[rep->n_canceled++] = n->id;
	}
	*to = s;
	return (int) rep->n_canceled;
}

// rep's cursor: (epoch, seq) written into w's arena. False when out of memory.
static bool
set_next(brq_work *w, brq_watch_rep *rep, uint64_t epoch, uint64_t seq)
{
	char *buf = brq_arena_alloc(&w->arena, 1, BRQ_CURSOR_MAX + 1);
	if (buf == NULL)
		return false;
	int n     = snprintf(buf, BRQ_CURSOR_MAX + 1, CURSOR_FMT, epoch, seq);
	rep->next = (brq_str) {buf, (uint32_t) n};
	return true;
}

// Parks w for ms (under wt->mtx), as waiters.c parks a claim.
static void
park(brq_watches *wt, brq_work *w, uint64_t ms)
{
	w->waited    = true;
	w->is_parked = true;
	brq_list_push(&wt->parked, w);
	brq_metrics_watches_add(1);
	w->state = BRQ_W_PARK;
	// Started under the lock, so a waker that finds w in the list always finds its sleep
	// in progress. A timeout left on the aio from an earlier stage would cut the sleep
	// short (NNG-NOTES §2.2): reset it.
	nng_aio_set_timeout(w->aio, NNG_DURATION_DEFAULT);
	nng_sleep_aio((nng_duration) ms, w->aio);
}

bool
brq_watches_answer(brq_watches *wt, brq_work *w, bool final, uint64_t ms, brq_watch_rep *rep)
{
	bool     answered = true, ok = true;
	uint64_t to;
	memset(rep, 0, sizeof(*rep));
	pthread_mutex_lock(&wt->mtx);
	final = final || wt->stopping;
	if (wt->epoch == 0 && !final) {
		park(wt, w, ms); // nothing can be told until the listener listens
		answered = false;
	} else if (wt->epoch == 0) {
		rep->resync = true;
		ok          = set_next(w, rep, 0, 0);
	} else if (!is_cursor_good(wt, w)) {
		rep->resync = true;
		ok          = set_next(w, rep, wt->epoch, wt->next_seq);
	} else {
		int got = collect(wt, w, rep, &to);
		if (got < 0) {
			ok = false;
		} else if (got > 0 || final) {
			ok = set_next(w, rep, wt->epoch, to);
		} else {
			park(wt, w, ms);
			answered = false;
		}
	}
	pthread_mutex_unlock(&wt->mtx);
	if (!ok) // out of memory: an answer that tells the worker to ask the database
		*rep = (brq_watch_rep) {.resync = true, .next = brq_str_c("0000000000000000.0")};
	return answered;
}

// Under wt->mtx.
static void
parked_remove(brq_watches *wt, brq_work *w)
{
	if (!w->is_parked)
		return;
	brq_list_del(&wt->parked, w);
	w->is_parked = false;
	brq_metrics_watches_add(-1);
}

void
brq_watches_unpark(brq_watches *wt, brq_work *w)
{
	pthread_mutex_lock(&wt->mtx);
	parked_remove(wt, w);
	pthread_mutex_unlock(&wt->mtx);
}

// Wakes w (under wt->mtx): its callback answers it.
static void
wake(brq_watches *wt, brq_work *w)
{
	parked_remove(wt, w);
	nng_aio_cancel(w->aio);
}

void
brq_watches_live(brq_watches *wt, bool live)
{
	uint64_t epoch = 0;
	while (live && epoch == 0)
		randombytes_buf(&epoch, sizeof(epoch));
	pthread_mutex_lock(&wt->mtx);
	wt->epoch       = epoch;
	wt->epoch_start = wt->next_seq;
	if (live) // a lost connection wakes nobody: the watches wait for the next one
		while (wt->parked.head != NULL)
			wake(wt, wt->parked.head);
	pthread_mutex_unlock(&wt->mtx);
}

void
brq_watches_heard(brq_watches *wt, const uint64_t *ids, const brq_str *topics, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&wt->mtx);
	uint64_t first = wt->next_seq, bloom = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t        seq = wt->next_seq++;
		brq_watch_note *nt  = &wt->ring[seq % BRQ_WATCH_RING];
		*nt = (brq_watch_note) {seq, ids[i], topic_hash(wt, topics[i].ptr, topics[i].len)};
		bloom |= bloom_bit(nt->th);
	}
	// Only the notes still in the ring: a batch larger than it ends every watch's cursor
	// anyway (resync).
	if (wt->next_seq - first > BRQ_WATCH_RING)
		first = wt->next_seq - BRQ_WATCH_RING;
	for (brq_work *w = wt->parked.head, *next; w != NULL; w = next) {
		next = brq_list_next(&wt->parked, w);
		if ((w->watch.bloom & bloom) == 0)
			continue;
		for (uint64_t s = first; s < wt->next_seq; s++) {
			if (is_watched(w, &wt->ring[s % BRQ_WATCH_RING])) {
				wake(wt, w);
				break;
			}
		}
	}
	pthread_mutex_unlock(&wt->mtx);
}

void
brq_watches_pipe_gone(brq_watches *wt, uint32_t pipe_id)
{
	pthread_mutex_lock(&wt->mtx);
	for (brq_work *w = wt->parked.head, *next; w != NULL; w = next) {
		next = brq_list_next(&wt->parked, w);
		if (w->pipe_id != pipe_id)
			continue;
		atomic_store(&w->orphaned, true);
		wake(wt, w); // its callback drops it
	}
	pthread_mutex_unlock(&wt->mtx);
}

void
brq_watches_stop(brq_watches *wt)
{
	pthread_mutex_lock(&wt->mtx);
	wt->stopping = true;
	while (wt->parked.head != NULL)
		wake(wt, wt->parked.head);
	pthread_mutex_unlock(&wt->mtx);
}
