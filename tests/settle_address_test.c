/* SPDX-License-Identifier: MIT */
/* The settle by row address (gateway/store/store_hint.h), against two real gateways on one
 * database: a lease settled through the gateway that claimed it reaches its row by the
 * address the claim returned; a row moved since (a heartbeat through the other gateway,
 * any update) or a lease claimed elsewhere is found by id, and settled exactly once. The
 * statement's own guard (a stale address holding another lease matches nothing) is in
 * schema_test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "brooq/brooq.h"
#include "gw.h"
#include "tclient.h"
#include "testdb.h"
#include "tutil.h"

#define OK BRQ_OK /* tests/support/tutil.h */

static char         *dsn;
static brq_gw        gw1, gw2;
static uint16_t      port1, port2; /* their /metrics */
static brooq_client *c1, *c2;      /* worker clients of gw1, gw2 */
static PGconn       *db;

static void
setup(void)
{
	dsn   = brq_testdb_create(true);
	port1 = brq_gw_start_http(&gw1, dsn, NULL);
	port2 = brq_gw_start_http(&gw2, dsn, NULL);
	c1    = brq_t_client_open(gw1.url, gw1.worker_token_file, 5000);
	c2    = brq_t_client_open(gw2.url, gw2.worker_token_file, 5000);
	db    = brq_testdb_connect(dsn);
}

static void
teardown(void)
{
	brooq_client_close(c1);
	brooq_client_close(c2);
	if (db != NULL)
		PQfinish(db);
	brq_gw_stop(&gw1);
	brq_gw_stop(&gw2);
	brq_testdb_drop(dsn);
}

TestSuite(settle_address, .init = setup, .fini = teardown, .timeout = 60);

static void
enqueue(size_t n)
{
	brooq_job_spec       j[8];
	brooq_enqueue_result r[8];
	for (size_t i_ = 0; i_ < 8; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	cr_assert(n <= 8);
	for (size_t i = 0; i < n; i++)
		j[i] = (brooq_job_spec) {.size = sizeof(brooq_job_spec), .topic = "addr", .payload = "{}"};
	OK(brooq_enqueue(c1, j, n, r));
}

/* Claims exactly n jobs of "addr" through c. */
static brooq_job **
claim(brooq_client *c, size_t n)
{
	brooq_claim_opts o   = BROOQ_CLAIM_OPTS_INIT;
	const char      *t[] = {"addr"};
	o.topics             = t;
	o.n_topics           = 1;
	o.max_jobs           = (uint32_t) n;
	brooq_job **jobs     = NULL;
	size_t      got      = 0;
	OK(brooq_claim(c, &o, &jobs, &got));
	cr_assert_eq(got, n);
	return jobs;
}

/* Settles jobs[0..n) done through c; asserts each was applied. */
static void
settle_done(brooq_client *c, brooq_job *const *jobs, size_t n)
{
	brooq_settle_item   it[8];
	brooq_settle_result res[8];
	for (size_t i_ = 0; i_ < 8; i_++)
		res[i_] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	cr_assert(n <= 8);
	for (size_t i = 0; i < n; i++)
		it[i] = (brooq_settle_item) {.size    = sizeof(brooq_settle_item),
					     .lease   = jobs[i]->lease,
					     .outcome = BROOQ_OUTCOME_DONE};
	OK(brooq_settle(c, it, n, res));
	for (size_t i = 0; i < n; i++) {
		cr_assert(res[i].applied, "item %zu not applied", i);
		cr_assert_eq(res[i].state, BROOQ_DONE);
	}
}

static long long
lookups(uint16_t port, const char *by)
{
	char sample[64];
	snprintf(sample, sizeof(sample), "brooq_settle_lookups_total{by=\"%s\"}", by);
	return brq_gw_metric(port, sample);
}

#define sql_int(...) brq_testdb_intf(db, __VA_ARGS__)

Test(settle_address, the_claiming_gateway_settles_by_the_address_its_claim_returned)
{
	enqueue(3);
	brooq_job **jobs = claim(c1, 3);
	settle_done(c1, jobs, 3);
	cr_assert_eq(lookups(port1, "address"), 3);
	cr_assert_eq(lookups(port1, "id"), 0);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'done' AND lease_token IS NULL"), 3);
	brooq_jobs_free(jobs, 3);
}

/* A heartbeat through the other gateway moves job 0's row (a new row version), an
 * update by hand moves job 1's: the claiming gateway's addresses are stale, and both
 * are still settled, once, by id. Job 2 was not moved and goes by address. */
Test(settle_address, rows_moved_since_the_claim_are_settled_by_id_exactly_once)
{
	enqueue(3);
	brooq_job **jobs = claim(c1, 3);
	bool        extended;
	OK(brooq_heartbeat(c2, &jobs[0]->lease, 1, 30000, &extended));
	cr_assert(extended);
	char sql[128];
	snprintf(sql, sizeof(sql), "UPDATE job SET updated_at = updated_at WHERE id = %llu",
		 (unsigned long long) jobs[1]->lease.id);
	brq_testdb_exec(db, sql);
	settle_done(c1, jobs, 3);
	cr_assert_eq(lookups(port1, "address"), 1);
	cr_assert_eq(lookups(port1, "id"), 2);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'done' AND attempts = 1"), 3);
	/* Settled once: a second settle of the same leases finds them gone. */
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = jobs[0]->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(c1, &it, 1, &res));
	cr_assert_not(res.applied);
	brooq_jobs_free(jobs, 3);
}

/* The other gateway has no address for a lease it did not hand out, and after a
 * heartbeat through it, it has the new one. */
Test(settle_address, a_lease_claimed_through_another_gateway_is_found_by_id)
{
	enqueue(2);
	brooq_job **jobs = claim(c1, 2);
	settle_done(c2, &jobs[0], 1);
	cr_assert_eq(lookups(port2, "id"), 1);
	cr_assert_eq(lookups(port2, "address"), 0);
	bool extended;
	OK(brooq_heartbeat(c2, &jobs[1]->lease, 1, 30000, &extended));
	cr_assert(extended);
	settle_done(c2, &jobs[1], 1);
	cr_assert_eq(lookups(port2, "address"), 1);
	cr_assert_eq(lookups(port1, "address") + lookups(port1, "id"), 0);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'done'"), 2);
	brooq_jobs_free(jobs, 2);
}

/* ---- lock order --------------------------------------------------------------------- */

#define MANY 1000 /* the default max_batch: one request each */

/* The far side of the race below: leases[0..MANY) extended through c2 once the barrier
 * opens. */
typedef struct hb_side {
	brooq_lease        leases[MANY];
	bool               extended[MANY];
	brooq_err          rc;
	char               msg[256]; /* the gateway's message when rc is not OK */
	pthread_barrier_t *go;
} hb_side;

static void *
heartbeat_all(void *arg)
{
	hb_side *h = arg;
	pthread_barrier_wait(h->go);
	h->rc = brooq_heartbeat(c2, h->leases, MANY, 30000, h->extended);
	snprintf(h->msg, sizeof(h->msg), "%s", brooq_last_message());
	return NULL;
}

/* A worker's heartbeat round and its settle of the same leases run at once on two pool
 * connections (the keeper and the dispatcher do, and in any order: the watch's resync at
 * start heartbeats every lease just claimed while the first results are settled). Each
 * statement locks its rows as it goes; taken in two orders, each waits for a row the
 * other holds and PostgreSQL ends one with "deadlock detected" after a second (the
 * worker saw a failed claim). The store sends every batch in id order, so the second
 * waits for the first at their first common row. Here the settle's items come in the
 * reverse of the heartbeat's order, over two gateways (so some rows are also settled
 * by id after the heartbeat moved them), four times. */
Test(settle_address, a_heartbeat_and_a_settle_of_the_same_leases_at_once_never_deadlock, .timeout = 120)
{
	static brooq_job_spec       specs[MANY];
	static brooq_enqueue_result er[MANY];
	static brooq_settle_item    items[MANY];
	static brooq_settle_result  res[MANY];
	static hb_side              hb;
	pthread_barrier_t           go;
	cr_assert_eq(pthread_barrier_init(&go, NULL, 2), 0);
	hb.go = &go;
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < MANY; i++) {
			specs[i] = (brooq_job_spec) {
				.size = sizeof(brooq_job_spec), .topic = "addr", .payload = "{}"};
			er[i] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
		}
		OK(brooq_enqueue(c1, specs, MANY, er));
		brooq_job **jobs = claim(c1, MANY);
		for (size_t i = 0; i < MANY; i++) {
			hb.leases[i]        = jobs[i]->lease;
			items[MANY - 1 - i] = (brooq_settle_item) {.size    = sizeof(brooq_settle_item),
								   .lease   = jobs[i]->lease,
								   .outcome = BROOQ_OUTCOME_DONE};
			res[i]              = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
		}
		pthread_t th;
		cr_assert_eq(pthread_create(&th, NULL, heartbeat_all, &hb), 0);
		pthread_barrier_wait(&go);
		brooq_err settle_rc = brooq_settle(c1, items, MANY, res);
		pthread_join(th, NULL);
		cr_assert_eq(hb.rc, BROOQ_OK, "round %d: the heartbeat failed: %s", round, hb.msg);
		cr_assert_eq(settle_rc, BROOQ_OK, "round %d: the settle failed: %s", round,
			     brooq_last_message());
		for (size_t i = 0; i < MANY; i++)
			cr_assert(res[i].applied, "round %d: item %zu not applied", round, i);
		brooq_jobs_free(jobs, MANY);
	}
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE state = 'done'"), 4 * MANY);
	pthread_barrier_destroy(&go);
}
