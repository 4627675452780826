/* SPDX-License-Identifier: MIT */
/* discard_done, the opt-in per-topic mode that gives up invariant 4 for its topic (SPEC
 * invariant 17): a job of such a topic settled `done` is deleted by the settle's own
 * statement, under the same lease guard; every other outcome, and every other topic,
 * keeps its row. Two real gateways with the same setting on one real database, so both
 * of the settle's paths (by row address through the claiming gateway, by id through the
 * other) and the combined settle-and-claim are covered. */
#define _GNU_SOURCE
#include <inttypes.h>
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
	dsn                      = brq_testdb_create(true);
	static const char *env[] = {"BROOQ_TOPIC_OVERRIDES=gone:discard_done=true;kept:discard_done=false",
				    NULL};
	port1                    = brq_gw_start_http(&gw1, dsn, env);
	port2                    = brq_gw_start_http(&gw2, dsn, env);
	c1                       = brq_t_client_open(gw1.url, gw1.worker_token_file, 5000);
	c2                       = brq_t_client_open(gw2.url, gw2.worker_token_file, 5000);
	db                       = brq_testdb_connect(dsn);
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

TestSuite(discard, .init = setup, .fini = teardown, .timeout = 60);

#define sql_int(...) brq_testdb_intf(db, __VA_ARGS__)

/* Enqueues n jobs of topic, the i-th with max_attempts[i] (NULL: the default). */
static void
enqueue(const char *topic, size_t n, const uint32_t *max_attempts)
{
	brooq_job_spec       j[8];
	brooq_enqueue_result r[8];
	for (size_t i_ = 0; i_ < 8; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	cr_assert(n <= 8);
	for (size_t i = 0; i < n; i++)
		j[i] = (brooq_job_spec) {.size         = sizeof(brooq_job_spec),
					 .topic        = topic,
					 .payload      = "{}",
					 .max_attempts = max_attempts ? max_attempts[i] : 0};
	OK(brooq_enqueue(c1, j, n, r));
}

/* Claims exactly n jobs of topic through c, oldest first (one at a time: a batch's
 * order is not defined). */
static void
claim(brooq_client *c, const char *topic, size_t n, brooq_lease *out)
{
	brooq_claim_opts o   = BROOQ_CLAIM_OPTS_INIT;
	const char      *t[] = {topic};
	o.topics             = t;
	o.n_topics           = 1;
	o.max_jobs           = 1;
	for (size_t i = 0; i < n; i++) {
		brooq_job **jobs = NULL;
		size_t      got  = 0;
		OK(brooq_claim(c, &o, &jobs, &got));
		cr_assert_eq(got, 1, "%s: claim %zu got nothing", topic, i);
		out[i] = jobs[0]->lease;
		brooq_jobs_free(jobs, got);
	}
}

static long long
lookups(uint16_t port, const char *by)
{
	char sample[64];
	snprintf(sample, sizeof(sample), "brooq_settle_lookups_total{by=\"%s\"}", by);
	return brq_gw_metric(port, sample);
}

static long long
rows_of(uint64_t id)
{
	return sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64, id);
}

/* One settle of every outcome on the discarding topic and of done on the other,
 * through the claiming gateway (by address): only the discarding topic's done rows go,
 * and each item reports the state it reached. */
Test(discard, done_rows_of_the_topic_go_every_other_outcome_and_topic_keeps_its_row)
{
	static const uint32_t att[] = {5, 5, 5, 1, 5, 5};
	enqueue("gone", 6, att);
	enqueue("kept", 2, NULL);
	brooq_lease l[8];
	claim(c1, "gone", 6, l);
	claim(c1, "kept", 2, l + 6);
	brooq_settle_item          it[8];
	static const brooq_outcome oc[8]   = {BROOQ_OUTCOME_DONE, BROOQ_OUTCOME_DONE,   BROOQ_OUTCOME_FAIL,
					      BROOQ_OUTCOME_FAIL, BROOQ_OUTCOME_CANCEL, BROOQ_OUTCOME_DELAY,
					      BROOQ_OUTCOME_DONE, BROOQ_OUTCOME_DONE};
	static const brooq_state   want[8] = {BROOQ_DONE,     BROOQ_DONE,   BROOQ_FAILED, BROOQ_DEAD,
					      BROOQ_CANCELED, BROOQ_FAILED, BROOQ_DONE,   BROOQ_DONE};
	for (size_t i = 0; i < 8; i++)
		it[i] = (brooq_settle_item) {.size     = sizeof(brooq_settle_item),
					     .lease    = l[i],
					     .outcome  = oc[i],
					     .delay_ms = 60000};
	/* A result on a discarded done job goes with its row. */
	const char         *results[8] = {NULL, "{\"n\": 1}", NULL, NULL, NULL, NULL, "{\"n\": 2}", NULL};
	brooq_settle_result res[8];
	for (size_t i_ = 0; i_ < 8; i_++)
		res[i_] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle_results(c1, it, results, 8, res));
	for (size_t i = 0; i < 8; i++) {
		cr_assert(res[i].applied, "item %zu not applied", i);
		cr_assert_eq(res[i].id, l[i].id);
		cr_assert_eq(res[i].state, want[i], "item %zu: state %d, want %d", i, res[i].state, want[i]);
	}
	cr_assert_eq(rows_of(l[0].id) + rows_of(l[1].id), 0, "the discarded done jobs still have rows");
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 'gone' AND state IN"
			     " ('failed', 'dead', 'canceled') AND lease_token IS NULL"),
		     4);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 'kept' AND state = 'done'"), 2);
	cr_assert_eq(
		sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64 " AND result->>'n' = '2'", l[6].id),
		1);
	cr_assert_eq(lookups(port1, "address"), 8, "all reached by address");
	/* Counted as settles like any done job. */
	cr_assert_eq(brq_gw_metric(port1, "brooq_settle_total{topic=\"gone\",outcome=\"done\"}"), 2);
	cr_assert_eq(brq_gw_metric(port1, "brooq_settle_total{topic=\"kept\",outcome=\"done\"}"), 2);
	cr_assert_eq(lookups(port1, "id"), 0);
	/* Settled once: the leases are gone with the rows. */
	OK(brooq_settle(c1, it, 1, res));
	cr_assert_not(res[0].applied);
	/* The gateway said at start which topic gives up its done rows, and only that one. */
	const char *log = brq_gw_log(&gw1);
	cr_assert_eq(brq_gw_count(log, "msg=discard_done topic=gone "), 1, "%s", log);
	cr_assert_eq(brq_gw_count(log, "msg=discard_done"), 1, "%s", log);
}

/* Through the other gateway the rows are found by id, and deleted the same way. */
Test(discard, the_other_gateway_deletes_them_by_id)
{
	enqueue("gone", 2, NULL);
	brooq_lease l[2];
	claim(c1, "gone", 2, l);
	brooq_settle_item it[2] = {
		{.size = sizeof(brooq_settle_item), .lease = l[0], .outcome = BROOQ_OUTCOME_DONE},
		{.size = sizeof(brooq_settle_item), .lease = l[1], .outcome = BROOQ_OUTCOME_DONE}};
	brooq_settle_result res[2];
	for (size_t i_ = 0; i_ < 2; i_++)
		res[i_] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(c2, it, 2, res));
	cr_assert(res[0].applied && res[1].applied);
	cr_assert_eq(res[0].state, BROOQ_DONE);
	cr_assert_eq(lookups(port2, "id"), 2);
	cr_assert_eq(sql_int("SELECT count(*) FROM job"), 0);
}

/* The guard holds for the delete: a lease that is no longer the row's deletes nothing. */
Test(discard, a_lost_lease_deletes_nothing)
{
	enqueue("gone", 1, NULL);
	brooq_lease l;
	claim(c1, "gone", 1, &l);
	/* Another holder's lease now (as after a reap and a new claim). */
	brq_testdb_exec(db, "UPDATE job SET lease_token = gen_random_uuid()");
	brooq_settle_item it = {.size = sizeof(brooq_settle_item), .lease = l, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(c1, &it, 1, &res));
	cr_assert_not(res.applied);
	OK(brooq_settle(c2, &it, 1, &res));
	cr_assert_not(res.applied);
	cr_assert_eq(
		sql_int("SELECT count(*) FROM job WHERE id = %" PRIu64 " AND state = 'processing'", l.id), 1);
}

/* The settle carried by a claim (one transaction) discards too, and the claim goes on. */
Test(discard, the_settle_of_a_claim_round_trip_discards_too)
{
	enqueue("gone", 3, NULL);
	brooq_lease l[2];
	claim(c1, "gone", 2, l);
	brooq_settle_item it[2] = {
		{.size = sizeof(brooq_settle_item), .lease = l[0], .outcome = BROOQ_OUTCOME_DONE},
		{.size = sizeof(brooq_settle_item), .lease = l[1], .outcome = BROOQ_OUTCOME_FAIL}};
	brooq_settle_result settled[2];
	for (size_t i_ = 0; i_ < 2; i_++)
		settled[i_] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	brooq_claim_opts o   = BROOQ_CLAIM_OPTS_INIT;
	const char      *t[] = {"gone"};
	o.topics             = t;
	o.n_topics           = 1;
	o.max_jobs           = 5;
	o.settle             = it;
	o.n_settle           = 2;
	o.settled            = settled;
	brooq_job **jobs     = NULL;
	size_t      got      = 0;
	OK(brooq_claim(c2, &o, &jobs, &got));
	cr_assert_eq(got, 1);
	cr_assert(settled[0].applied && settled[1].applied);
	cr_assert_eq(settled[0].state, BROOQ_DONE);
	cr_assert_eq(settled[1].state, BROOQ_FAILED);
	cr_assert_eq(rows_of(l[0].id), 0);
	cr_assert_eq(rows_of(l[1].id), 1);
	brooq_jobs_free(jobs, got);
}

/* What the mode gives up besides the outcome: a discarded job's idempotency key is free
 * again (invariant 8 holds for the life of the row, and the row is gone); a kept one's
 * is not. */
Test(discard, a_discarded_jobs_key_is_free_again_a_kept_ones_is_not)
{
	brooq_job_spec j[2] = {
		{.size = sizeof(brooq_job_spec), .topic = "gone", .payload = "{}", .key = "k"},
		{.size = sizeof(brooq_job_spec), .topic = "kept", .payload = "{}", .key = "k"}};
	brooq_enqueue_result r[2], again[2];
	for (size_t i_ = 0; i_ < 2; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	for (size_t i_ = 0; i_ < 2; i_++)
		again[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(c1, j, 2, r));
	brooq_lease l[2];
	claim(c1, "gone", 1, &l[0]);
	claim(c1, "kept", 1, &l[1]);
	brooq_settle_item it[2] = {
		{.size = sizeof(brooq_settle_item), .lease = l[0], .outcome = BROOQ_OUTCOME_DONE},
		{.size = sizeof(brooq_settle_item), .lease = l[1], .outcome = BROOQ_OUTCOME_DONE}};
	brooq_settle_result res[2];
	for (size_t i_ = 0; i_ < 2; i_++)
		res[i_] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(c1, it, 2, res));
	OK(brooq_enqueue(c1, j, 2, again));
	cr_assert(again[0].created, "the discarded job's key was not free");
	cr_assert_neq(again[0].id, r[0].id);
	cr_assert_not(again[1].created, "the kept job's key was reused");
	cr_assert_eq(again[1].id, r[1].id);
}

/* A done settle's chained jobs are enqueued in the same transaction as the delete: the
 * parent's row goes, its successor is there. */
Test(discard, a_discarded_jobs_chained_job_is_enqueued)
{
	enqueue("gone", 1, NULL);
	brooq_lease l;
	claim(c1, "gone", 1, &l);
	brooq_job_spec next = {.size = sizeof(brooq_job_spec), .topic = "kept", .payload = "{\"step\": 2}"};
	brooq_settle_item   it  = {.size    = sizeof(brooq_settle_item),
				   .lease   = l,
				   .outcome = BROOQ_OUTCOME_DONE,
				   .chain   = &next,
				   .n_chain = 1};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(c1, &it, 1, &res));
	cr_assert(res.applied);
	cr_assert_eq(rows_of(l.id), 0);
	cr_assert_eq(sql_int("SELECT count(*) FROM job WHERE topic = 'kept' AND state = 'pending'"
			     " AND payload->>'step' = '2'"),
		     1);
}
