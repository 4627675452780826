// SPDX-License-Identifier: MIT
// The web console's operations as work items on the RPC's pool: queued from the HTTP thread, run
// on a pool thread with its store connection, answered from there.
//
// Why the pool and not a connection of the console's own: the operations are the RPC's
// (console_ops.h runs them through brq_ops_run), so they need what a pool thread has --
// a prepared store connection with the pool's session settings, the waiters an enqueue
// wakes, the metrics -- and the pool already bounds what operators cost: reads go to
// its capped lane (pool.h), so a console left open on a busy page never takes the
// connections the hot path needs, and actions queue with the RPC's in one FIFO. A
// dedicated connection would have been one more backend per gateway, idle nearly
// always, and a second place where statements run outside the lane's cap. The items
// carry their own run function (work.h brq_work_run_fn), so the pool runs them
// directly and the RPC's server knows nothing of them.
#include "console_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"
#include "log/log.h"

// A console request on its way through the pool.
typedef struct console_item {
	brq_work                 w; // first: the pool holds &item->w
	brq_console             *con;
	nng_aio                 *aio; // the HTTP handler's, finished from the pool thread
	const brq_console_route *route;
	bool                     is_ro; // holds one of the read-only sessions' slots
	brq_form                 in;
	char                     actor[96];
	brq_jw                   out;
} console_item;

static void
item_free(console_item *it)
{
	brq_arena_fini(&it->w.arena);
	brq_buf_fini(&it->w.out);
	brq_form_fini(&it->in);
	brq_jw_fini(&it->out);
	free(it);
}

// Takes a slot for a request of a session of role: 0, or 503's message (nothing taken).
// A read-only session takes one of its role's slots first, so its requests never hold
// more than BRQ_CONSOLE_INFLIGHT_RO_MAX of the console's.
static const char *
take_slot(brq_console *con, bool is_ro)
{
	if (is_ro && atomic_fetch_add(&con->inflight_ro, 1) >= BRQ_CONSOLE_INFLIGHT_RO_MAX) {
		atomic_fetch_sub(&con->inflight_ro, 1);
		return "the console is busy: too many requests of read-only sessions at once; retry";
	}
	if (atomic_fetch_add(&con->inflight, 1) >= BRQ_CONSOLE_INFLIGHT_MAX) {
		atomic_fetch_sub(&con->inflight, 1);
		if (is_ro) {
			atomic_fetch_sub(&con->inflight_ro, 1);
		}
		return "the console is busy: too many requests at once; retry";
	}
	return NULL;
}

static void
give_slot(brq_console *con, bool is_ro)
{
	if (is_ro) {
		atomic_fetch_sub(&con->inflight_ro, 1);
	}
	atomic_fetch_sub(&con->inflight, 1);
}

// On a pool thread (the item's run, work.h): runs the operation, replies, frees the item.
static void
run_item(brq_work *w, brq_store_conn *c)
{
	console_item *it  = (console_item *) w;
	brq_console  *con = it->con;
	brq_store_set_deadline(c, brq_now_ms() + BRQ_CONSOLE_DEADLINE_MS);
	brq_console_call call = {
		.ops   = con->env.ops,
		.lim   = con->env.lim,
		.c     = c,
		.w     = w,
		.in    = &it->in,
		.out   = &it->out,
		.actor = it->actor,
	};
	// Every 200 reply is one object: the operation writes its members.
	brq_jw_obj(&it->out);
	int status = it->route->op(&call);
	// Before the reply: finishing the aio lets brq_http_stop() return, and the
	// gateway then frees con (main.c stop()), so nothing may touch con after it.
	give_slot(con, it->is_ro);
	if (status == 200) {
		brq_jw_end(&it->out);
		brq_console_reply_json(con, it->aio, 200, &it->out, NULL);
	} else {
		if (status >= 500 && status != 501 && status != 503) {
			BRQ_LOG_ERROR("console_op_failed", "path=%s status=%d reason=%s", it->route->path,
				      status, BRQ_LOG_Q(call.err));
		}
		brq_console_reply_error_code(con, it->aio, (uint16_t) status, call.code, call.err);
	}
	item_free(it); // the item's own memory only
}

void
brq_console_submit(brq_console *con, nng_aio *aio, const brq_console_route *route, brq_form *in,
		   const brq_console_who *who)
{
	bool        is_ro = who->role != BRQ_ROLE_ADMIN;
	const char *busy  = take_slot(con, is_ro);
	if (busy != NULL) {
		brq_form_fini(in);
		brq_console_reply_error_retry(con, aio, 503, busy, 1);
		return;
	}
	console_item *it = calloc(1, sizeof(*it));
	if (it == NULL) {
		give_slot(con, is_ro);
		brq_form_fini(in);
		brq_console_reply_error(con, aio, 500, "out of memory");
		return;
	}
	it->is_ro = is_ro;
	it->con   = con;
	it->aio   = aio;
	it->route = route;
	it->in    = *in;
	memset(in, 0, sizeof(*in));
	snprintf(it->actor, sizeof(it->actor), "role=%s token_fp=%s session=%s via=console",
		 brq_auth_role_name(who->role), who->token_fp, who->tag);
	brq_jw_init(&it->out, BRQ_CONSOLE_REPLY_MAX);
	brq_arena_init(&it->w.arena);
	// A reply as large as the RPC's largest (a job of the largest payload).
	brq_buf_init(&it->w.out, (size_t) con->env.cfg->max_request_bytes * 2 + 65536);
	it->w.run              = run_item;
	it->w.role             = who->role;
	it->w.is_operator_read = route->is_operator_read;
	it->w.start_us         = brq_now_us();
	it->w.state            = BRQ_W_DB;
	brq_pool_submit(con->env.pool, &it->w);
}
