/* SPDX-License-Identifier: MIT */
/* Gateway black-box tests: real brooq-gateway, real PostgreSQL, real msgpack over ipc://. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "gw.h"
#include "testdb.h"

static char     *dsn;
static PGconn   *db;
static brq_gw    gw;
static uint16_t  http_port; /* the gateway's /metrics: brooq_long_polls shows a claim parked */
static brq_arena arena;

static void
setup(void)
{
	static const char *env[] = {"BROOQ_MAX_PAYLOAD=64KiB",     "BROOQ_MAX_REQUEST=1MiB",
				    "BROOQ_MAX_BATCH=100",         "BROOQ_MAX_WAITERS=4",
				    "BROOQ_REAPER_INTERVAL=300ms", NULL};
	dsn                      = brq_testdb_create(true);
	db                       = brq_testdb_connect(dsn);
	http_port                = brq_gw_start_http(&gw, dsn, env);
	brq_arena_init(&arena);
}

static void
teardown(void)
{
	brq_arena_fini(&arena);
	brq_gw_stop(&gw);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(gateway, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers: one call each, asserting the transport worked ---------------------- */

static brq_status
call(brq_request *req, brq_reply *rep, void **keep)
{
	if (req->token.len == 0)
		req->token = brq_gw_worker(&gw);
	return brq_gw_call(&gw, req, rep, &arena, keep);
}

/* Enqueues one job; returns its id. */
static uint64_t
enqueue(const char *topic, const char *payload, const char *key, bool *created)
{
	brq_job_spec j   = {.topic = brq_str_c(topic), .payload = brq_str_c(payload), .key = brq_str_c(key)};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply    rep;
	void        *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK, "enqueue: %.*s", (int) rep.msg.len, rep.msg.ptr);
	cr_assert_eq(rep.enqueue.n_results, 1);
	uint64_t id = rep.enqueue.results[0].id;
	if (created)
		*created = rep.enqueue.results[0].created;
	free(keep);
	return id;
}

/* Enqueues one job of topic with its own max_attempts; returns its id. */
static uint64_t
enqueue_max_attempts(const char *topic, uint32_t max_attempts)
{
	brq_job_spec j   = {.topic            = brq_str_c(topic),
			    .payload          = brq_str_c("{}"),
			    .has_max_attempts = true,
			    .max_attempts     = max_attempts};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply    rep;
	void        *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	uint64_t id = rep.enqueue.results[0].id;
	free(keep);
	return id;
}

/* Claims up to n jobs of topic; copies them to out (leases included). */
static uint32_t
claim(const char *topic, uint32_t n, uint32_t wait_ms, brq_lease_ref *out)
{
	brq_str     t   = brq_str_c(topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .claim = {.worker      = brq_str_c("test"),
				     .topics      = &t,
				     .n_topics    = 1,
				     .n           = n,
				     .has_wait_ms = wait_ms > 0,
				     .wait_ms     = wait_ms}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK, "claim: %.*s", (int) rep.msg.len, rep.msg.ptr);
	for (uint32_t i = 0; i < rep.claim.n_jobs; i++) {
		out[i].id = rep.claim.jobs[i].id;
		memcpy(out[i].lease, rep.claim.jobs[i].lease, BRQ_LEASE_LEN);
	}
	uint32_t got = rep.claim.n_jobs;
	free(keep);
	return got;
}

/* Settles one held job; returns applied, and the new state via *st. */
static bool
settle(const brq_lease_ref *l, brq_outcome oc, const char *error, uint64_t delay_ms, brq_state *st)
{
	brq_settle_item it = {.id        = l->id,
			      .outcome   = oc,
			      .has_error = error != NULL,
			      .error     = brq_str_c(error),
			      .delay_ms  = delay_ms};
	memcpy(it.lease, l->lease, BRQ_LEASE_LEN);
	brq_request req = {.op = BRQ_OP_SETTLE, .settle = {.items = &it, .n_items = 1}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK, "settle: %.*s", (int) rep.msg.len, rep.msg.ptr);
	bool applied = rep.settle.results[0].applied;
	if (st != NULL)
		*st = rep.settle.results[0].state;
	free(keep);
	return applied;
}

static char *
row(uint64_t id, const char *cols)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT %s FROM job WHERE id = %llu", cols, (unsigned long long) id);
	return brq_testdb_value(db, sql);
}

static void
assert_row(uint64_t id, const char *cols, const char *want)
{
	char *v = row(id, cols);
	cr_assert_str_eq(v, want, "job %llu: %s = %s, want %s", (unsigned long long) id, cols, v, want);
	free(v);
}

/* ---- happy paths -------------------------------------------------------------------- */

Test(gateway, answers_ping_with_its_version)
{
	brq_request req = {.op = BRQ_OP_PING};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(rep.ping.server.len > 14 && memcmp(rep.ping.server.ptr, "brooq-gateway ", 14) == 0);
	free(keep);
}

Test(gateway, enqueues_claims_and_settles_a_job_done)
{
	uint64_t id = enqueue("email.send", "{\"to\":\"a@b\"}", NULL, NULL);
	assert_row(id, "state || attempts", "pending0");
	brq_lease_ref l[2];
	cr_assert_eq(claim("email.send", 2, 0, l), 1);
	cr_assert_eq(l[0].id, id);
	assert_row(id, "state || attempts || locked_by", "processing1test");
	brq_state st;
	cr_assert(settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, &st));
	cr_assert_eq(st, BRQ_STATE_DONE);
	assert_row(id, "state || coalesce(locked_by, '-') || (lease_token IS NULL)", "done-true");
}

Test(gateway, enqueues_a_batch_atomically)
{
	brq_job_spec jobs[3] = {
		{.topic = brq_str_c("a"), .payload = brq_str_c("1")},
		{.topic = brq_str_c("b"), .payload = brq_str_c("[1,2]")},
		{.topic            = brq_str_c("c"),
		 .payload          = brq_str_c("{\"x\":null}"),
		 .has_max_attempts = true,
		 .max_attempts     = 9},
	};
	brq_request req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = jobs, .n_jobs = 3}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.enqueue.n_results, 3);
	cr_assert(rep.enqueue.results[0].id < rep.enqueue.results[1].id);
	assert_row(rep.enqueue.results[2].id, "max_attempts::text", "9");
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 3);
}

Test(gateway, delays_a_job_until_its_time)
{
	brq_job_spec j   = {.topic        = brq_str_c("later"),
			    .payload      = brq_str_c("{}"),
			    .has_delay_ms = true,
			    .delay_ms     = 3600000};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &j, .n_jobs = 1}};
	brq_reply    rep;
	void        *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	free(keep);
	brq_lease_ref l[1];
	cr_assert_eq(claim("later", 1, 0, l), 0);
	cr_assert_eq(
		brq_testdb_int(db,
			       "SELECT count(*) FROM job WHERE available_at > now() + interval '59 minutes'"),
		1);
}

/* ---- invariants (SPEC §2) ---------------------------------------------------------------- */

/* Invariant 8. */
Test(gateway, returns_the_same_id_for_the_same_topic_and_key)
{
	bool     c1, c2, c3;
	uint64_t a = enqueue("t", "{}", "order-42", &c1);
	uint64_t b = enqueue("t", "{\"other\":1}", "order-42", &c2);
	uint64_t c = enqueue("u", "{}", "order-42", &c3);
	cr_assert(c1 && !c2 && c3);
	cr_assert_eq(a, b);
	cr_assert_neq(a, c);
	/* A terminal row still holds its key. */
	brq_lease_ref l[1];
	cr_assert_eq(claim("t", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, NULL));
	cr_assert_eq(enqueue("t", "{}", "order-42", &c2), a);
	cr_assert(!c2);
	/* The same key twice in one batch: one row, both get its id. */
	brq_job_spec jobs[2] = {{.topic = brq_str_c("v"), .payload = brq_str_c("1"), .key = brq_str_c("k")},
				{.topic = brq_str_c("v"), .payload = brq_str_c("2"), .key = brq_str_c("k")}};
	brq_request  req     = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = jobs, .n_jobs = 2}};
	brq_reply    rep;
	void        *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.enqueue.results[0].id, rep.enqueue.results[1].id);
	cr_assert(rep.enqueue.results[0].created && !rep.enqueue.results[1].created);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'v'"), 1);
}

Test(gateway, never_deduplicates_an_empty_key_and_keeps_a_key_of_spaces)
{
	bool c1, c2;
	cr_assert_neq(enqueue("t", "{}", "", &c1), enqueue("t", "{}", "", &c2));
	cr_assert(c1 && c2);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE idempotency_key IS NULL"), 2);
	uint64_t a = enqueue("t", "{}", "   ", &c1);
	cr_assert_eq(enqueue("t", "{}", "   ", &c2), a);
	cr_assert(c1 && !c2);
}

/* Invariant 2 and 10: many claimers at once never share a job. */
#define HAMMER_THREADS 8
#define HAMMER_JOBS    400
static _Atomic uint32_t seen[HAMMER_JOBS + 1];
static uint64_t         first_id;

static void *
hammer(void *arg)
{
	(void) arg;
	brq_arena a;
	brq_arena_init(&a);
	for (int round = 0; round < 200; round++) {
		brq_str     t   = brq_str_c("race");
		brq_request req = {.op    = BRQ_OP_CLAIM,
				   .token = brq_gw_worker(&gw),
				   .claim = {.worker = brq_str_c("h"), .topics = &t, .n_topics = 1, .n = 7}};
		brq_reply   rep;
		void       *keep;
		brq_arena_reset(&a);
		cr_assert_eq(brq_gw_call(&gw, &req, &rep, &a, &keep), BRQ_ST_OK);
		uint32_t n = rep.claim.n_jobs;
		for (uint32_t i = 0; i < n; i++)
			atomic_fetch_add(&seen[rep.claim.jobs[i].id - first_id], 1);
		free(keep);
		if (n == 0)
			break;
	}
	brq_arena_fini(&a);
	return NULL;
}

Test(gateway, never_gives_one_job_to_two_claimers)
{
	brq_job_spec jobs[100];
	for (int i = 0; i < 100; i++)
		jobs[i] = (brq_job_spec) {.topic = brq_str_c("race"), .payload = brq_str_c("{}")};
	for (int b = 0; b < HAMMER_JOBS / 100; b++) {
		brq_request req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = jobs, .n_jobs = 100}};
		brq_reply   rep;
		void       *keep;
		cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
		if (b == 0)
			first_id = rep.enqueue.results[0].id;
		free(keep);
	}
	pthread_t th[HAMMER_THREADS];
	for (int i = 0; i < HAMMER_THREADS; i++)
		pthread_create(&th[i], NULL, hammer, NULL);
	for (int i = 0; i < HAMMER_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < HAMMER_JOBS; i++)
		cr_assert_eq(atomic_load(&seen[i]), 1, "job %d claimed %u times", i, atomic_load(&seen[i]));
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing' AND attempts = 1"),
		HAMMER_JOBS);
}

/* Invariant 2: a worker without the lease token cannot settle or heartbeat. */
Test(gateway, refuses_a_settle_without_the_lease_token)
{
	uint64_t      id = enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	cr_assert_eq(claim("t", 1, 0, l), 1);
	brq_lease_ref forged = l[0];
	forged.lease[0] ^= 0xff;
	cr_assert(!settle(&forged, BRQ_OUTCOME_DONE, NULL, 0, NULL));
	cr_assert(!settle(&forged, BRQ_OUTCOME_FAIL, "x", 0, NULL));
	assert_row(id, "state || coalesce(last_error, '-')", "processing-");
	cr_assert(settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, NULL));
}

/* Invariant 3 and SPEC §3 cancel: settle after cancel is not applied. */
Test(gateway, does_not_apply_a_settle_after_cancel)
{
	uint64_t      id = enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	cr_assert_eq(claim("t", 1, 0, l), 1);
	brq_request req = {.op = BRQ_OP_CANCEL, .token = brq_gw_admin(&gw), .cancel = {.id = id}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(rep.cancel.canceled);
	cr_assert_eq(rep.cancel.state, BRQ_STATE_CANCELED);
	free(keep);
	/* The holder learns it through heartbeat: lost, a normal answer. */
	brq_request hb = {.op = BRQ_OP_HEARTBEAT, .heartbeat = {.leases = l, .n_leases = 1}};
	cr_assert_eq(call(&hb, &rep, &keep), BRQ_ST_OK);
	cr_assert(!rep.heartbeat.extended[0]);
	free(keep);
	cr_assert(!settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, NULL));
	cr_assert(!settle(&l[0], BRQ_OUTCOME_FAIL, "late", 0, NULL));
	assert_row(id, "state || coalesce(last_error, '-')", "canceled-");
}

Test(gateway, never_overwrites_a_terminal_state)
{
	uint64_t      id = enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	cr_assert_eq(claim("t", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, NULL));
	/* A second settle with the same lease, of any outcome, is not applied. */
	for (int oc = 0; oc < BRQ_OUTCOME__COUNT; oc++)
		cr_assert(!settle(&l[0], (brq_outcome) oc, "x", 10, NULL));
	/* Cancel answers with the current state and changes nothing. */
	brq_request req = {.op = BRQ_OP_CANCEL, .token = brq_gw_admin(&gw), .cancel = {.id = id}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(!rep.cancel.canceled);
	cr_assert_eq(rep.cancel.state, BRQ_STATE_DONE);
	free(keep);
	assert_row(id, "state || coalesce(last_error, '-')", "done-");
	/* And it is never claimed again. */
	cr_assert_eq(claim("t", 1, 0, l), 0);
}

/* Invariants 6 and 7. */
Test(gateway, counts_attempts_at_claim_and_dies_only_on_a_recorded_last_failure)
{
	uint64_t      id = enqueue_max_attempts("t", 2);
	brq_lease_ref l[1];
	brq_state     st;
	cr_assert_eq(claim("t", 1, 0, l), 1);
	assert_row(id, "attempts::text", "1");
	cr_assert(settle(&l[0], BRQ_OUTCOME_FAIL, "boom 1", 0, &st));
	cr_assert_eq(st, BRQ_STATE_FAILED);
	assert_row(id, "last_error", "boom 1");
	brq_testdb_exec(db, "UPDATE job SET available_at = now()");
	cr_assert_eq(claim("t", 1, 0, l), 1);
	assert_row(id, "attempts::text", "2");
	cr_assert(settle(&l[0], BRQ_OUTCOME_FAIL, "boom 2", 0, &st));
	cr_assert_eq(st, BRQ_STATE_DEAD);
	assert_row(id, "state || ' ' || last_error", "dead boom 2");
}

Test(gateway, never_kills_a_job_through_an_expired_lease)
{
	uint64_t      id = enqueue_max_attempts("t", 1);
	brq_lease_ref l[1];
	cr_assert_eq(claim("t", 1, 0, l), 1);
	/* Expire the lease; the reaper (every 300 ms here) returns it to pending. */
	brq_testdb_exec(db, "UPDATE job SET locked_until = now() - interval '1 second'");
	for (int i = 0; i < 100; i++) {
		char *s    = row(id, "state");
		bool  back = strcmp(s, "pending") == 0;
		free(s);
		if (back)
			break;
		usleep(100000);
	}
	assert_row(id, "state || attempts || (lease_token IS NULL)", "pending1true");
	/* The old holder's late settle is not applied. */
	cr_assert(!settle(&l[0], BRQ_OUTCOME_FAIL, "late", 0, NULL));
	assert_row(id, "state", "pending");
}

Test(gateway, preserve_gives_the_attempt_back_and_never_goes_below_zero)
{
	uint64_t      id = enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	brq_state     st;
	cr_assert_eq(claim("t", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_PRESERVE, "not now", 0, &st));
	cr_assert_eq(st, BRQ_STATE_FAILED);
	assert_row(id, "attempts::text", "0");
	brq_testdb_exec(db, "UPDATE job SET available_at = now()");
	cr_assert_eq(claim("t", 1, 0, l), 1);
	brq_testdb_exec(db, "UPDATE job SET attempts = 0"); /* as if counted elsewhere */
	cr_assert(settle(&l[0], BRQ_OUTCOME_PRESERVE, NULL, 0, &st));
	assert_row(id, "attempts::text", "0");
	/* preserve never reaches dead, even at max_attempts */
	brq_testdb_exec(db, "UPDATE job SET available_at = now(), max_attempts = 1");
	cr_assert_eq(claim("t", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_PRESERVE, NULL, 0, &st));
	cr_assert_eq(st, BRQ_STATE_FAILED);
}

Test(gateway, clamps_a_delay_to_the_backoff_maximum)
{
	uint64_t      id = enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	brq_state     st;
	cr_assert_eq(claim("t", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_DELAY, NULL, 36000000, &st));
	cr_assert_eq(st, BRQ_STATE_FAILED);
	/* default backoff max is 1m */
	assert_row(
		id,
		"(available_at BETWEEN now() + interval '55 seconds' AND now() + interval '61 seconds')::text"
		" || attempts",
		"true1");
}

Test(gateway, cancel_outcome_cancels_whatever_attempts_remain)
{
	uint64_t      id = enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	brq_state     st;
	cr_assert_eq(claim("t", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_CANCEL, "obsolete", 0, &st));
	cr_assert_eq(st, BRQ_STATE_CANCELED);
	assert_row(id, "state", "canceled");
}

/* SPEC §3 backoff: d = min(1s * 2^(a-1), 60s), drawn from [d/2, d]; no overflow. */
Test(gateway, keeps_backoff_in_bounds_for_attempts_1_to_1000)
{
	uint64_t id = enqueue("bo", "{}", NULL, NULL);
	brq_testdb_exec(db, "UPDATE job SET max_attempts = 1000");
	for (int a = 1; a <= 1000; a++) {
		char sql[256];
		snprintf(sql, sizeof(sql),
			 "UPDATE job SET attempts = %d, available_at = now() WHERE id = %llu", a - 1,
			 (unsigned long long) id);
		brq_testdb_exec(db, sql);
		brq_lease_ref l[1];
		brq_state     st;
		cr_assert_eq(claim("bo", 1, 0, l), 1);
		cr_assert(settle(&l[0], BRQ_OUTCOME_FAIL, "e", 0, &st));
		if (a == 1000) {
			cr_assert_eq(st, BRQ_STATE_DEAD);
			break;
		}
		double d = a >= 7 ? 60.0 : (double) (1 << (a - 1));
		snprintf(sql, sizeof(sql),
			 "SELECT extract(epoch FROM available_at - updated_at) FROM job WHERE id = %llu",
			 (unsigned long long) id);
		char  *v     = brq_testdb_value(db, sql);
		double delay = strtod(v, NULL);
		free(v);
		cr_assert(delay >= d / 2 - 0.001 && delay <= d + 0.001,
			  "attempt %d: delay %.3f outside [%.1f, %.1f]", a, delay, d / 2, d);
	}
}

Test(gateway, settles_done_with_chained_jobs_in_one_transaction)
{
	enqueue("parent", "{}", NULL, NULL);
	brq_lease_ref l[1];
	cr_assert_eq(claim("parent", 1, 0, l), 1);
	brq_job_spec    chain[2] = {{.topic = brq_str_c("child"), .payload = brq_str_c("{\"n\":1}")},
				    {.topic = brq_str_c("child"), .payload = brq_str_c("{\"n\":2}")}};
	brq_settle_item it       = {
		      .id = l[0].id, .outcome = BRQ_OUTCOME_DONE, .chain = chain, .n_chain = 2, .has_chain = true};
	memcpy(it.lease, l[0].lease, BRQ_LEASE_LEN);
	brq_request req = {.op = BRQ_OP_SETTLE, .settle = {.items = &it, .n_items = 1}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(rep.settle.results[0].applied);
	free(keep);
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'child' AND state = 'pending'"),
		2);
	/* The same settle again (lease gone): not applied, and no more children. */
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(!rep.settle.results[0].applied);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'child'"), 2);
}

/* One combined round trip: settle `held` as done, then claim up to n jobs of
 * topic, waiting up to wait_ms. The reply borrows *keep (caller frees). */
static brq_status
claim_settling(const char *topic, uint32_t n, uint32_t wait_ms, const brq_lease_ref *held, brq_reply *rep,
	       void **keep)
{
	brq_settle_item it = {.id = held->id, .outcome = BRQ_OUTCOME_DONE};
	memcpy(it.lease, held->lease, BRQ_LEASE_LEN);
	brq_str     t   = brq_str_c(topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .claim = {.worker      = brq_str_c("w"),
				     .topics      = &t,
				     .n_topics    = 1,
				     .n           = n,
				     .has_wait_ms = wait_ms > 0,
				     .wait_ms     = wait_ms,
				     .has_settle  = true,
				     .settle      = &it,
				     .n_settle    = 1}};
	return call(&req, rep, keep);
}

Test(gateway, claims_and_settles_in_one_round_trip)
{
	enqueue("t", "{}", NULL, NULL);
	enqueue("t", "{}", NULL, NULL);
	brq_lease_ref l[1];
	cr_assert_eq(claim("t", 1, 0, l), 1);
	brq_reply rep;
	void     *keep;
	cr_assert_eq(claim_settling("t", 5, 0, &l[0], &rep, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.claim.n_jobs, 1);
	cr_assert(rep.claim.has_settled && rep.claim.n_settled == 1 && rep.claim.settled[0].applied);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'done'"), 1);
}

/* A long-poll claiming `topic` once (wait 5 s), on its own thread. */
typedef struct poller {
	pthread_t     th;
	const char   *topic;
	brq_status    st;
	uint32_t      n_jobs;
	brq_lease_ref job;
} poller;

static void *
poll_once(void *arg)
{
	poller     *p = arg;
	brq_arena   a;
	brq_str     t   = brq_str_c(p->topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .token = brq_gw_worker(&gw),
			   .claim = {.worker      = brq_str_c("lp"),
				     .topics      = &t,
				     .n_topics    = 1,
				     .n           = 1,
				     .has_wait_ms = true,
				     .wait_ms     = 5000}};
	brq_reply   rep;
	void       *keep;
	brq_arena_init(&a);
	p->st     = brq_gw_call(&gw, &req, &rep, &a, &keep);
	p->n_jobs = p->st == BRQ_ST_OK ? rep.claim.n_jobs : 0;
	if (p->n_jobs > 0) {
		p->job.id = rep.claim.jobs[0].id;
		memcpy(p->job.lease, rep.claim.jobs[0].lease, BRQ_LEASE_LEN);
	}
	free(keep);
	brq_arena_fini(&a);
	return NULL;
}

Test(gateway, an_enqueue_starts_a_parked_long_poll_in_its_own_transaction)
{
	poller p = {.topic = "onecommit"};
	pthread_create(&p.th, NULL, poll_once, &p);
	/* Parked (an enqueue before that would be found by the claim itself, in a later
	 * transaction): waited for, up to 10 s, rather than slept for. */
	bool parked = false;
	for (int i = 0; i < 500 && !(parked = brq_gw_metric(http_port, "brooq_long_polls") == 1); i++)
		usleep(20 * 1000);
	if (!parked)
		pthread_join(p.th, NULL); /* p lives on this stack: the thread must end first */
	cr_assert(parked, "the long-poll never parked");
	uint64_t id = enqueue("onecommit", "{}", NULL, NULL);
	pthread_join(p.th, NULL);
	cr_assert_eq(p.st, BRQ_ST_OK);
	cr_assert_eq(p.n_jobs, 1);
	cr_assert_eq(p.job.id, id);
	/* One transaction: now() is the same for the insert and the claim. */
	char *same = row(id, "created_at = claimed_at");
	cr_assert_str_eq(same, "t", "the claim ran in a transaction of its own");
	free(same);
	cr_assert(settle(&p.job, BRQ_OUTCOME_DONE, NULL, 0, NULL), "the lease the long-poll got works");
}

Test(gateway, enqueues_and_long_polls_racing_never_lose_or_double_a_job, .timeout = 120)
{
	/* Long-polls park, time out and are taken by enqueues, all at once: every
	 * job reaches exactly one poller, every poller gets exactly one answer. */
	enum { POLLERS = 4, JOBS = 120 }; /* BROOQ_MAX_WAITERS=4 in this suite */
	int got = 0;
	for (int round = 0; round < JOBS / POLLERS; round++) {
		poller p[POLLERS];
		for (int i = 0; i < POLLERS; i++) {
			p[i] = (poller) {.topic = "race"};
			pthread_create(&p[i].th, NULL, poll_once, &p[i]);
		}
		for (int i = 0; i < POLLERS; i++) {
			enqueue("race", "{}", NULL, NULL);
			if (i % 3 == 0)
				usleep(1000);
		}
		for (int i = 0; i < POLLERS; i++) {
			pthread_join(p[i].th, NULL);
			cr_assert_eq(p[i].st, BRQ_ST_OK, "a long-poll got %s", brq_status_name(p[i].st));
			got += (int) p[i].n_jobs;
			if (p[i].n_jobs > 0)
				cr_assert(settle(&p[i].job, BRQ_OUTCOME_DONE, NULL, 0, NULL));
		}
	}
	/* What the pollers did not get is still ready: claimed by nobody. */
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'race' AND attempts > 1"), 0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'race' AND state = 'done'"),
		     got);
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'race' AND state = 'pending'"),
		JOBS - got);
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE topic = 'race' AND state = 'processing'"),
		0);
}

Test(gateway, long_poll_wakes_on_enqueue_and_ends_empty_at_its_deadline)
{
	brq_lease_ref l[1];
	uint64_t      t0 = brq_testdb_int(db, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
	cr_assert_eq(claim("idle", 1, 300, l), 0);
	uint64_t t1 = brq_testdb_int(db, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
	cr_assert(t1 - t0 >= 290, "returned after %llu ms", (unsigned long long) (t1 - t0));
}

static void *
long_poller(void *arg)
{
	brq_arena   a;
	brq_str     t   = brq_str_c("none");
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .token = brq_gw_worker(&gw),
			   .claim = {.worker      = brq_str_c("lp"),
				     .topics      = &t,
				     .n_topics    = 1,
				     .n           = 1,
				     .has_wait_ms = true,
				     .wait_ms     = 5000}};
	brq_reply   rep;
	void       *keep;
	brq_arena_init(&a);
	*(brq_status *) arg = brq_gw_call(&gw, &req, &rep, &a, &keep);
	free(keep);
	brq_arena_fini(&a);
	return NULL;
}

Test(gateway, refuses_long_polls_past_the_configured_maximum)
{
	/* BROOQ_MAX_WAITERS=4 here: park 4, the 5th is refused at once. */
	pthread_t  th[4];
	brq_status st[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, long_poller, &st[i]);
	usleep(500000);
	brq_lease_ref l[1];
	brq_str       t   = brq_str_c("none");
	brq_request   req = {.op    = BRQ_OP_CLAIM,
			     .claim = {.worker      = brq_str_c("x"),
				       .topics      = &t,
				       .n_topics    = 1,
				       .n           = 1,
				       .has_wait_ms = true,
				       .wait_ms     = 1000}};
	brq_reply     rep;
	void         *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_RESOURCE_EXHAUSTED);
	free(keep);
	/* A claim without a wait is still served. */
	cr_assert_eq(claim("none", 1, 0, l), 0);
	/* Four jobs wake the four waiters, each gets one. */
	for (int i = 0; i < 4; i++)
		enqueue("none", "{}", NULL, NULL);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(st[i], BRQ_ST_OK);
	}
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing'"), 4);
}

Test(gateway, a_long_poll_whose_peer_leaves_while_its_claim_runs_gives_the_lease_back_at_once)
{
	/* The job is there, but the table is locked: the long-poll's claim goes to the
	 * database and waits there, running, for the lock. */
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('gone')");
	/* Every pool connection is up, its statements prepared (the lock would block
	 * a PREPARE of the claim): the gateway logs each one when it is. */
	int ready = 0;
	for (int i = 0; i < 100 && ready < 4; i++) {
		char  cmd[400];
		FILE *f;
		snprintf(cmd, sizeof(cmd), "grep -c 'db_connected conn=pool-' %s", gw.log);
		if ((f = popen(cmd, "r")) != NULL) {
			if (fscanf(f, "%d", &ready) != 1)
				ready = 0;
			pclose(f);
		}
		if (ready < 4)
			usleep(50 * 1000);
	}
	cr_assert_eq(ready, 4, "the pool never connected");
	PGconn *locker = brq_testdb_connect(dsn);
	brq_testdb_exec(locker, "BEGIN");
	brq_testdb_exec(locker, "LOCK TABLE job IN SHARE MODE");
	brq_str     t      = brq_str_c("gone");
	brq_request req    = {.op    = BRQ_OP_CLAIM,
			      .claim = {.worker      = brq_str_c("leaver"),
					.topics      = &t,
					.n_topics    = 1,
					.n           = 1,
					.has_wait_ms = true,
					.wait_ms     = 10000}};
	req.token          = brq_gw_worker(&gw);
	nng_socket s       = brq_gw_send_open(&gw, &req);
	int        waiting = 0;
	for (int i = 0; i < 100 && waiting == 0; i++) {
		usleep(50 * 1000);
		waiting = (int) brq_testdb_int(
			db,
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
			" AND query LIKE 'WITH c AS MATERIALIZED%'");
	}
	/* The peer leaves while its claim runs; then the claim completes. */
	nng_close(s);
	usleep(300 * 1000);
	brq_testdb_exec(locker, "COMMIT");
	PQfinish(locker);
	cr_assert_eq(waiting, 1, "the claim never reached the lock");

	/* Its lease came back at once, with its attempt: another worker gets the job
	 * now, not when the two-minute lease runs out (asked for up to 10 s: a busy
	 * machine takes its time to finish the claim, and 10 s is still not 2 min). */
	brq_lease_ref l[1];
	uint32_t      got = 0;
	for (int i = 0; i < 200 && got == 0; i++) {
		usleep(50 * 1000);
		got = claim("gone", 1, 0, l);
	}
	cr_assert_eq(got, 1, "the job stayed leased to the peer that left");
	char *attempts = row(l[0].id, "attempts");
	cr_assert_str_eq(attempts, "1", "the undelivered claim kept its attempt");
	free(attempts);
}

Test(gateway, a_claim_of_big_payloads_returns_what_fits_and_leases_nothing_else)
{
	/* 40 jobs of ~60 KB: a claim of all 40 would be a 2.4 MB reply, over the 1 MiB
	 * request limit of this suite (the reply budget). */
	static char payload[61000];
	payload[0] = '"';
	memset(payload + 1, 'x', sizeof(payload) - 3);
	payload[sizeof(payload) - 2] = '"';
	for (int r = 0; r < 4; r++) {
		brq_job_spec j[10];
		for (int i = 0; i < 10; i++)
			j[i] = (brq_job_spec) {.topic = brq_str_c("big"), .payload = brq_str_c(payload)};
		brq_request req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = j, .n_jobs = 10}};
		brq_reply   rep;
		void       *keep;
		cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
		free(keep);
	}
	brq_lease_ref l[40];
	uint32_t      got = claim("big", 40, 0, l);
	cr_assert(got > 0 && got < 40, "claim returned %u of 40 big jobs", got);
	/* Only what was sent is leased; the rest is ready again, its attempt returned. */
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing'"), got);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'pending' AND attempts = 0"),
		     40 - got);
	uint32_t total = got;
	for (int i = 0; i < 10 && total < 40; i++)
		total += claim("big", 40, 0, l);
	cr_assert_eq(total, 40);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE attempts = 1"), 40);
}

Test(gateway, job_reads_the_whole_row_and_stats_count_per_topic)
{
	uint64_t    id  = enqueue("s.a", "{\"k\":1}", "key-1", NULL);
	brq_request req = {.op = BRQ_OP_JOB, .job = {.id = id}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.job.job.id, id);
	cr_assert_eq(rep.job.job.state, BRQ_STATE_PENDING);
	cr_assert(rep.job.job.has_key && rep.job.job.key.len == 5);
	cr_assert(!rep.job.job.has_locked_by);
	free(keep);
	req = (brq_request) {.op = BRQ_OP_JOB, .job = {.id = id + 1000}};
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_NOT_FOUND);
	free(keep);
	req = (brq_request) {.op = BRQ_OP_STATS};
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.stats.n_topics, 1);
	cr_assert_eq(rep.stats.topics[0].count[BRQ_STATE_PENDING], 1);
	free(keep);
	req = (brq_request) {.op = BRQ_OP_CANCEL, .token = brq_gw_admin(&gw), .cancel = {.id = id + 1000}};
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_NOT_FOUND);
	free(keep);
}

Test(gateway, settles_once_before_a_long_poll_and_reports_it_after_the_wait)
{
	for (int round = 0; round < 3; round++) {
		uint64_t      id = enqueue("lp", "{}", NULL, NULL);
		brq_lease_ref l[1];
		cr_assert_eq(claim("lp", 1, 0, l), 1);
		brq_reply rep;
		void     *keep;
		cr_assert_eq(claim_settling("lp", 1, 200, &l[0], &rep, &keep), BRQ_ST_OK);
		cr_assert_eq(rep.claim.n_jobs, 0);
		cr_assert(rep.claim.has_settled && rep.claim.n_settled == 1);
		cr_assert(rep.claim.settled[0].applied, "round %d: settle not applied", round);
		cr_assert_eq(rep.claim.settled[0].state, BRQ_STATE_DONE);
		free(keep);
		assert_row(id, "state", "done");
	}
}

/* Concurrent enqueues are grouped into one statement by the gateway (group
 * commit); every request must still get exactly its own answer. */
#define GROUP_THREADS 8
#define GROUP_ROUNDS  60
static uint64_t group_ids[GROUP_THREADS][GROUP_ROUNDS];
static uint64_t group_own[GROUP_THREADS][GROUP_ROUNDS];

static void *
group_enqueuer(void *arg)
{
	int       me = (int) (intptr_t) arg;
	brq_arena a;
	brq_arena_init(&a);
	for (int r = 0; r < GROUP_ROUNDS; r++) {
		char key[32], payload[64];
		snprintf(key, sizeof(key), "k-%d", r); /* every thread uses the same keys */
		snprintf(payload, sizeof(payload), "{\"t\":%d,\"r\":%d}", me, r);
		bool         bad  = me == 0 && r % 10 == 5; /* valid JSON that jsonb refuses */
		brq_job_spec j[2] = {
			{.topic = brq_str_c("grp"), .payload = brq_str_c(payload)},
			{.topic   = brq_str_c("grp"),
			 .payload = brq_str_c(bad ? "1e1000000" : "{}"),
			 .key     = brq_str_c(key)},
		};
		brq_request req = {.op      = BRQ_OP_ENQUEUE,
				   .token   = brq_gw_worker(&gw),
				   .enqueue = {.jobs = j, .n_jobs = 2}};
		brq_reply   rep;
		void       *keep;
		brq_arena_reset(&a);
		brq_status st = brq_gw_call(&gw, &req, &rep, &a, &keep);
		if (bad) {
			cr_assert_eq(st, BRQ_ST_INVALID_ARGUMENT, "a refused payload was accepted");
			group_ids[me][r] = 0;
		} else {
			cr_assert_eq(st, BRQ_ST_OK, "%.*s", (int) rep.msg.len, rep.msg.ptr);
			cr_assert_eq(rep.enqueue.n_results, 2);
			group_ids[me][r] = rep.enqueue.results[1].id;
			/* the unkeyed job's id is this request's own row: recorded to check below */
			group_own[me][r] = rep.enqueue.results[0].id;
		}
		free(keep);
	}
	brq_arena_fini(&a);
	return NULL;
}

Test(gateway, groups_concurrent_enqueues_without_mixing_their_answers)
{
	pthread_t th[GROUP_THREADS];
	for (int i = 0; i < GROUP_THREADS; i++)
		pthread_create(&th[i], NULL, group_enqueuer, (void *) (intptr_t) i);
	for (int i = 0; i < GROUP_THREADS; i++)
		pthread_join(th[i], NULL);
	/* Every keyed job was created once; all requests with a key got that row's id. */
	for (int r = 0; r < GROUP_ROUNDS; r++) {
		char sql[128];
		snprintf(sql, sizeof(sql),
			 "SELECT id FROM job WHERE topic = 'grp' AND idempotency_key = 'k-%d'", r);
		long long id = brq_testdb_int(db, sql);
		for (int t = 0; t < GROUP_THREADS; t++)
			if (group_ids[t][r] != 0)
				cr_assert_eq(group_ids[t][r], (uint64_t) id,
					     "thread %d round %d got %llu, key's row is %lld", t, r,
					     (unsigned long long) group_ids[t][r], id);
	}
	/* One unkeyed row per accepted request, none for the refused ones. */
	int refused = GROUP_ROUNDS / 10;
	cr_assert_eq(brq_testdb_int(
			     db, "SELECT count(*) FROM job WHERE topic = 'grp' AND idempotency_key IS NULL"),
		     GROUP_THREADS * GROUP_ROUNDS - refused);
	/* Each request's unkeyed id holds that request's own payload. */
	for (int t = 0; t < GROUP_THREADS; t++)
		for (int r = 0; r < GROUP_ROUNDS; r++) {
			if (group_ids[t][r] == 0)
				continue;
			char sql[160], want[32];
			snprintf(sql, sizeof(sql),
				 "SELECT (payload->>'t') || '/' || (payload->>'r') FROM job WHERE id = %llu",
				 (unsigned long long) group_own[t][r]);
			snprintf(want, sizeof(want), "%d/%d", t, r);
			char *got = brq_testdb_value(db, sql);
			cr_assert_str_eq(got, want, "request %s was answered with the id of %s", want, got);
			free(got);
		}
}

static uint32_t sql_claimed;

static void *
sql_waiter(void *arg)
{
	(void) arg;
	brq_lease_ref l[1];
	sql_claimed = claim("sqlins", 1, 10000, l);
	return NULL;
}

Test(gateway, a_job_inserted_by_sql_wakes_a_parked_long_poll_within_the_poll_interval)
{
	pthread_t th;
	pthread_create(&th, NULL, sql_waiter, NULL);
	usleep(300000);
	long long t0 = brq_testdb_int(db, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
	brq_testdb_exec(db, "INSERT INTO job (topic, payload) VALUES ('sqlins', '{}')");
	pthread_join(th, NULL);
	long long t1 = brq_testdb_int(db, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
	cr_assert_eq(sql_claimed, 1);
	/* BROOQ_POLL_INTERVAL is 1 s by default; the wait was 10 s. */
	cr_assert_lt(t1 - t0, 2500, "picked up after %lld ms", t1 - t0);
}

/* ---- docs/protocol.md, settled where an independent client found it ambiguous -------- */

/* A ping of exactly `total` bytes (total >= 128) with rid `rid` (< 128): the envelope,
 * then a str32 `pad` filling the rest. Caller frees. */
static uint8_t *
ping_of_size(size_t total, uint8_t rid)
{
	uint8_t *m = malloc(total);
	size_t   n = 0;
	m[n++]     = 0x85;
#define PUT_STR(s)                                     \
	do {                                           \
		m[n++] = (uint8_t) (0xa0 | strlen(s)); \
		memcpy(m + n, s, strlen(s));           \
		n += strlen(s);                        \
	} while (0)
	PUT_STR("v");
	m[n++] = 1;
	PUT_STR("op");
	PUT_STR("ping");
	PUT_STR("token");
	m[n++] = 0xd9; /* str8: 64 hex chars */
	m[n++] = 64;
	memcpy(m + n, gw.worker_token, 64);
	n += 64;
	PUT_STR("rid");
	m[n++] = rid;
	PUT_STR("pad");
#undef PUT_STR
	size_t pad = total - n - 5;
	m[n++]     = 0xdb;
	m[n++]     = (uint8_t) (pad >> 24);
	m[n++]     = (uint8_t) (pad >> 16);
	m[n++]     = (uint8_t) (pad >> 8);
	m[n++]     = (uint8_t) pad;
	memset(m + n, 'x', pad);
	return m;
}

/* Sends a ping of `total` bytes; the reply's code and rid, or -1 when the connection was
 * dropped without one. */
static int
ping_sized(size_t total, uint8_t rid, uint64_t *rid_out)
{
	uint8_t   *m = ping_of_size(total, rid);
	size_t     n = 0;
	void      *r = brq_gw_raw(&gw, m, total, &n, 3000);
	brq_reply  rep;
	brq_limits lim;
	char       err[256];
	free(m);
	if (r == NULL)
		return -1;
	brq_limits_default(&lim);
	cr_assert_eq(brq_reply_decode(&rep, BRQ_OP_PING, r, n, &lim, &arena, err, sizeof(err)), BRQ_ST_OK,
		     "%s", err);
	*rid_out = rep.rid;
	free(r);
	return (int) rep.code;
}

/* §1: max_request (1 MiB here) and the transport ceiling, max_request + max_request/4 +
 * 4096 = 1314816 bytes, both counted on the request body (the SP header a REQ socket
 * adds is not the client's to count). */
Test(gateway, counts_max_request_and_the_transport_ceiling_on_the_body_to_the_byte)
{
	const size_t max = 1048576, ceiling = max + max / 4 + 4096;
	uint64_t     rid = 0;
	cr_assert_eq(ping_sized(max, 61, &rid), BRQ_ST_OK);
	cr_assert_eq(rid, 61);
	cr_assert_eq(ping_sized(max + 1, 62, &rid), BRQ_ST_TOO_LARGE);
	cr_assert_eq(rid, 0, "too_large is answered before the envelope is read");
	cr_assert_eq(ping_sized(ceiling, 63, &rid), BRQ_ST_TOO_LARGE, "the ceiling itself is answered");
	cr_assert_eq(rid, 0);
	cr_assert_eq(ping_sized(ceiling + 1, 64, &rid), -1, "one byte over the ceiling: no reply");
	cr_assert(brq_gw_answers(&gw, 2000), "the gateway still serves");
}

/* §7.5: a heartbeat that extends nothing still carries lease_until_ms, 0; lost_reasons
 * is there (the gateway could tell why) and says `gone` for a lease it never gave. */
Test(gateway, a_heartbeat_that_extends_nothing_says_lease_until_0_and_why)
{
	brq_lease_ref l = {.id = 424242};
	memset(l.lease, 0x5a, sizeof(l.lease));
	brq_request req = {.op = BRQ_OP_HEARTBEAT, .heartbeat = {.leases = &l, .n_leases = 1}};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert_eq(rep.heartbeat.n_extended, 1);
	cr_assert_not(rep.heartbeat.extended[0]);
	cr_assert_eq(rep.heartbeat.lease_until_ms, 0);
	cr_assert_not_null(rep.heartbeat.lost_reasons);
	cr_assert_eq(rep.heartbeat.lost_reasons[0], BRQ_LOST_GONE);
	free(keep);

	/* One held and one unknown: the held one's new expiry; reasons "" and gone. */
	enqueue("hb", "{}", NULL, NULL);
	brq_lease_ref two[2];
	cr_assert_eq(claim("hb", 1, 0, two), 1);
	two[1]                 = l;
	req.heartbeat.leases   = two;
	req.heartbeat.n_leases = 2;
	long long before       = brq_testdb_int(db, "SELECT (extract(epoch FROM now()) * 1000)::int8");
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(rep.heartbeat.extended[0]);
	cr_assert_not(rep.heartbeat.extended[1]);
	cr_assert_geq(rep.heartbeat.lease_until_ms, before + 100000, "default lease is 120 s");
	cr_assert_eq(rep.heartbeat.lost_reasons[0], BRQ_LOST_NONE);
	cr_assert_eq(rep.heartbeat.lost_reasons[1], BRQ_LOST_GONE);
	free(keep);
	/* Nothing lost: no lost_reasons at all. */
	req.heartbeat.n_leases = 1;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	cr_assert(rep.heartbeat.extended[0]);
	cr_assert_null(rep.heartbeat.lost_reasons);
	free(keep);
}

/* stats: whether `topic` has an entry, and *age the reply's terminal_age_ms (-1: absent). */
static bool
stats_has(const char *topic, long long *age)
{
	brq_request req = {.op = BRQ_OP_STATS};
	brq_reply   rep;
	void       *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	bool has = false;
	for (uint32_t i = 0; i < rep.stats.n_topics; i++)
		has = has || brq_str_eq(rep.stats.topics[i].topic, topic);
	if (age != NULL)
		*age = rep.stats.has_terminal_age ? (long long) rep.stats.terminal_age_ms : -1;
	free(keep);
	return has;
}

/* §7.9: the terminal counts come from the monitor's last count; a topic whose rows all
 * became terminal since it must not vanish from stats until the next count (60 s). */
Test(gateway, a_topic_whose_jobs_all_ended_since_the_last_count_stays_in_stats)
{
	long long age = 0;
	for (int i = 0; i < 100 && age <= 0; i++) {
		(void) stats_has("none", &age);
		if (age <= 0)
			usleep(100000);
	}
	cr_assert_gt(age, 0, "the monitor's first terminal count did not come");
	/* Seen by a stats call while pending, then done. */
	enqueue("gone.a", "{}", NULL, NULL);
	cr_assert(stats_has("gone.a", NULL));
	brq_lease_ref l[1];
	cr_assert_eq(claim("gone.a", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, NULL));
	cr_assert(stats_has("gone.a", &age), "a topic of done jobs vanished (terminal counts %lld ms old)",
		  age);
	/* Seen only by the monitor's active count (every poll interval, 1 s here). */
	enqueue("gone.b", "{}", NULL, NULL);
	long long pending = -1;
	for (int i = 0; i < 3000 && pending != 1; i++) { /* up to 30 s: the count, not its period */
		pending = brq_gw_metric(http_port, "brooq_jobs{topic=\"gone.b\",state=\"pending\"}");
		if (pending != 1)
			usleep(10 * 1000);
	}
	cr_assert_eq(pending, 1, "the monitor's active count never saw gone.b");
	cr_assert_eq(claim("gone.b", 1, 0, l), 1);
	cr_assert(settle(&l[0], BRQ_OUTCOME_DONE, NULL, 0, NULL));
	cr_assert(stats_has("gone.b", &age), "a topic of done jobs vanished (terminal counts %lld ms old)",
		  age);
	cr_assert(stats_has("gone.a", NULL));
}
