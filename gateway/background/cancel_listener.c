// SPDX-License-Identifier: MIT
// Cancel listener: its own connection LISTENs to the cancels of running jobs and hands them on.
#include "cancel_listener.h"

#include <stdlib.h>
#include <string.h>

#include "bgthread.h"
#include "brq_clock.h"
#include "log/log.h"

#define IDLE_MS_DEFAULT 10000
// Cancels handed on at once at most; a longer burst goes in several batches.
#define BATCH_MAX 256
// While the database is away, how often the thread looks again (the store's backoff
// decides when it actually tries).
#define RETRY_MS 100

struct brq_cancel_listener {
	brq_cancel_listener_opts o;
	brq_bgthread             bg;

	// Owned by the thread.
	bool     is_live;
	uint64_t connects; // brq_store_connects when it last went live
	size_t   n;        // cancels in the batch
	uint64_t ids[BATCH_MAX];
	brq_str  topics[BATCH_MAX];
	char     text[BATCH_MAX][BRQ_TOPIC_MAX];
};

static void
flush(brq_cancel_listener *l)
{
	if (l->n > 0)
		l->o.on_cancels(l->o.arg, l->ids, l->topics, l->n);
	l->n = 0;
}

// One cancel heard (brq_store_cancel_fn): into the batch.
static void
heard(void *arg, uint64_t id, const char *topic, size_t len)
{
	brq_cancel_listener *l = arg;
	if (l->n == BATCH_MAX)
		flush(l);
	memcpy(l->text[l->n], topic, len);
	l->ids[l->n]    = id;
	l->topics[l->n] = (brq_str) {l->text[l->n], (uint32_t) len};
	l->n++;
}

static void
set_live(brq_cancel_listener *l, bool live)
{
	l->is_live = live;
	l->o.on_live(l->o.arg, live);
	BRQ_LOG_INFO(live ? "cancel_listener_up" : "cancel_listener_down", "conn=%s", "listener");
}

// One round (bgthread.h): connected, it listens until something is heard or the idle
// time has passed (a round trip then), and hands over what came. Runs again at once.
static uint64_t
listener_round(void *arg)
{
	brq_cancel_listener *l = arg;
	brq_store_conn      *c = &l->bg.conn;
	if (!brq_store_ready(c)) {
		if (l->is_live)
			set_live(l, false);
		return brq_now_ms() + RETRY_MS;
	}
	// A new connection: it listens from its connect on, and what was announced before
	// went unheard. Said before anything heard on it is handed on.
	if (!l->is_live || brq_store_connects(c) != l->connects) {
		l->connects = brq_store_connects(c);
		set_live(l, true);
	}
	int rv = brq_store_listen(c, l->o.idle_ms, heard, l);
	flush(l);
	if (rv != 0 && !brq_bgthread_is_stopping(&l->bg)) {
		BRQ_LOG_WARN("cancel_listener_lost", "error=%s", BRQ_LOG_Q(brq_store_errmsg(c)));
		set_live(l, false);
	}
	return brq_now_ms();
}

int
brq_cancel_listener_start(const brq_store *st, const brq_cancel_listener_opts *opts,
			  brq_cancel_listener **out)
{
	brq_cancel_listener *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return BRQ_ENOMEM;
	l->o = *opts;
	if (l->o.idle_ms == 0)
		l->o.idle_ms = IDLE_MS_DEFAULT;
	int rv = brq_bgthread_init(&l->bg, st,
				   &(brq_store_conn_opts) {.name = "listener", .role = BRQ_STORE_LISTENER});
	if (rv == 0)
		rv = brq_bgthread_start(&l->bg, &(brq_bgthread_loop) {.round = listener_round, .arg = l});
	if (rv != 0) {
		free(l);
		return rv;
	}
	*out = l;
	return 0;
}

void
brq_cancel_listener_stop(brq_cancel_listener *l)
{
	if (l == NULL)
		return;
	brq_bgthread_stop(&l->bg);
	free(l);
}
