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
	bool is_live;
	bool is_deaf; // the last echo did not come back

	uint64_t connects; // brq_store_connects of the connection it listens on
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

// What this round's echo said (-1: none was sent).
static void
after_echo(brq_cancel_listener *l, int echo)
{
	if (echo == 1 && !l->is_live) {
		l->is_deaf = false;
		set_live(l, true);
	} else if (echo == 0 && !l->is_deaf) {
		l->is_deaf = true;
		BRQ_LOG_WARN("cancel_listener_deaf", "hint=%s",
			     BRQ_LOG_Q("LISTEN hears nothing on this connection (a pooler in transaction "
				       "mode?): cancels reach running handlers at their heartbeats only"));
		if (l->is_live)
			set_live(l, false);
	}
}

// One round (bgthread.h): connected, it listens until something is heard or the idle
// time has passed, hands over what came, then proves with an echo that the connection
// still hears (docs: store.h brq_store_listen). It says it listens only once a new
// connection's echo came back: cancels announced before were not heard, and the RPC
// side has its workers ask the database (a new epoch). Runs again at once.
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
	if (brq_store_connects(c) != l->connects) {
		l->connects = brq_store_connects(c);
		l->is_deaf  = false;
		if (l->is_live)
			set_live(l, false); // its epoch ended with the old connection
	}
	// Not listening yet: the echo at once. Deaf: ask again after the idle time.
	uint64_t wait = l->is_live || l->is_deaf ? l->o.idle_ms : 0;
	int      echo;
	int      rv = brq_store_listen(c, wait, !l->is_live, heard, l, &echo);
	flush(l);
	if (rv != 0) {
		if (!brq_bgthread_is_stopping(&l->bg)) {
			BRQ_LOG_WARN("cancel_listener_lost", "error=%s", BRQ_LOG_Q(brq_store_errmsg(c)));
			if (l->is_live)
				set_live(l, false);
		}
		return brq_now_ms();
	}
	after_echo(l, echo);
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
