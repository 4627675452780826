// SPDX-License-Identifier: MIT
// The cancels of running jobs as PostgreSQL announces them (NOTIFY on BRQ_STORE_CANCEL_CHANNEL,
// sent by the cancel statement, store_sql.c), heard on a BRQ_STORE_LISTENER connection.
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "brq_clock.h"

// Every few seconds of silence the connection is proven with a round trip: a connection
// that died without a word (a host gone) must not pass for one where nobody cancels.
#define PING_DEADLINE_MS 5000

struct relay {
	brq_store_cancel_fn *fn;
	void                *arg;
};

// One notification: "<id> <topic>" on our channel. Anything else (a NOTIFY someone else
// sent on the channel, by hand) is skipped: a watch only ever hears well-formed cancels.
static void
relay_one(void *arg, const char *channel, const char *payload)
{
	const struct relay *r = arg;
	char               *end;
	if (strcmp(channel, BRQ_STORE_CANCEL_CHANNEL) != 0 || payload[0] < '1' || payload[0] > '9')
		return;
	errno         = 0;
	uint64_t id   = strtoull(payload, &end, 10);
	size_t   tlen = *end == ' ' ? strlen(end + 1) : 0;
	if (errno != 0 || id > BRQ_ID_MAX || *end != ' ' || !brq_topic_valid(end + 1, tlen))
		return;
	r->fn(r->arg, id, end + 1, tlen);
}

int
brq_store_listen(brq_store_conn *c, uint64_t wait_ms, brq_store_cancel_fn *fn, void *arg)
{
	struct relay r = {fn, arg};
	int          n = brq_db_notifications(&c->db, wait_ms, relay_one, &r);
	if (n < 0)
		return BRQ_EUNAVAIL;
	bool stopping = c->db.o.stop != NULL && atomic_load(c->db.o.stop);
	if (n > 0 || c->db.conn == NULL || stopping)
		return 0;
	PGresult *res = brq_db_query(&c->db, "SELECT 1", brq_now_ms() + PING_DEADLINE_MS);
	bool      ok  = brq_db_ok(res);
	PQclear(res);
	if (!ok)
		return BRQ_EUNAVAIL;
	n = brq_db_notifications(&c->db, 0, relay_one, &r); // what came with the answer
	return n < 0 ? BRQ_EUNAVAIL : 0;
}

uint64_t
brq_store_connects(const brq_store_conn *c)
{
	return c->db.n_connects;
}
