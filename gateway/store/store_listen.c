// SPDX-License-Identifier: MIT
// The cancels of running jobs as PostgreSQL announces them (NOTIFY on BRQ_STORE_CANCEL_CHANNEL,
// sent by the cancel statement, store_sql.c), heard on a BRQ_STORE_LISTENER connection.
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "brq_clock.h"

// The echo's round trip is bounded by this.
#define ECHO_DEADLINE_MS 5000
// "echo " and 16 hex digits.
#define ECHO_LEN 21

struct relay {
	brq_store_cancel_fn *fn;
	void                *arg;
	const char          *echo; // this call's echo payload, NULL: none sent
	bool                 has_echo;
};

// One notification: "<id> <topic>" on our channel, or our own echo. Anything else (a
// NOTIFY someone else sent on the channel, another gateway's echo) is skipped: a watch
// only ever hears well-formed cancels.
static void
relay_one(void *arg, const char *channel, const char *payload)
{
	struct relay *r = arg;
	char         *end;
	if (strcmp(channel, BRQ_STORE_CANCEL_CHANNEL) != 0)
		return;
	if (r->echo != NULL && strcmp(payload, r->echo) == 0)
		r->has_echo = true;
	if (payload[0] < '1' || payload[0] > '9')
		return;
	errno         = 0;
	uint64_t id   = strtoull(payload, &end, 10);
	size_t   tlen = *end == ' ' ? strlen(end + 1) : 0;
	if (errno != 0 || id > BRQ_ID_MAX || *end != ' ' || !brq_topic_valid(end + 1, tlen))
		return;
	r->fn(r->arg, id, end + 1, tlen);
}

int
brq_store_listen(brq_store_conn *c, uint64_t wait_ms, bool prove, brq_store_cancel_fn *fn, void *arg,
		 int *echo)
{
	struct relay r = {fn, arg, NULL, false};
	char         payload[ECHO_LEN + 1], sql[128];
	*echo = -1;
	int n = brq_db_notifications(&c->db, wait_ms, relay_one, &r);
	if (n < 0)
		return BRQ_EUNAVAIL;
	bool stopping = c->db.o.stop != NULL && atomic_load(c->db.o.stop);
	if ((n > 0 && !prove) || c->db.conn == NULL || stopping)
		return 0;
	// The echo: a NOTIFY of our own, which a session that LISTENs hears before the
	// statement's answer ends (notifications go out at commit). A pooler in transaction
	// mode runs the LISTEN and the NOTIFY on sessions of its choosing: no echo.
	uint64_t nonce;
	randombytes_buf(&nonce, sizeof(nonce));
	snprintf(payload, sizeof(payload), "echo %016" PRIx64, nonce);
	snprintf(sql, sizeof(sql), "SELECT pg_notify('" BRQ_STORE_CANCEL_CHANNEL "', '%s')", payload);
	r.echo        = payload;
	PGresult *res = brq_db_query(&c->db, sql, brq_now_ms() + ECHO_DEADLINE_MS);
	bool      ok  = brq_db_ok(res);
	PQclear(res);
	if (!ok)
		return BRQ_EUNAVAIL;
	n = brq_db_notifications(&c->db, 0, relay_one, &r); // what came with the answer
	if (n < 0)
		return BRQ_EUNAVAIL;
	*echo = r.has_echo ? 1 : 0;
	return 0;
}

uint64_t
brq_store_connects(const brq_store_conn *c)
{
	return c->db.n_connects;
}
