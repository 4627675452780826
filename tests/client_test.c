/* SPDX-License-Identifier: MIT */
/* libbrooq-client against a real brooq-gateway and real PostgreSQL, through the public API only. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include <brooq/brooq.h>

#include "brq_version.h"

#include "gw.h"
#include "tclient.h"
#include "tutil.h"
#include "testdb.h"

static char         *dsn;
static brq_gw        gw;
static brooq_client *wc; /* worker token */
static brooq_client *ac; /* admin token */

static void
setup(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, NULL);
	wc = brq_t_client_open(gw.url, gw.worker_token_file, 10000);
	ac = brq_t_client_open(gw.url, gw.admin_token_file, 10000);
}

static void
teardown(void)
{
	brooq_client_close(wc);
	brooq_client_close(ac);
	brq_gw_stop(&gw);
	brq_testdb_drop(dsn);
}

TestSuite(client, .init = setup, .fini = teardown, .timeout = 120);

/* Failures that need no gateway (a bad token file, nobody listening).
 * Every suite here has the same .timeout: Criterion 2.4's runner leaks 48 bytes
 * (reported by LeakSanitizer, failing the sanitizer build) when suites of one
 * binary run in parallel with different timeouts. */
TestSuite(client_offline, .timeout = 120);

/* ---- helpers ----------------------------------------------------------------------- */

#define OK BRQ_OK /* tests/support/tutil.h */

static uint64_t
enqueue1(const char *topic, const char *payload, const char *key, bool *created)
{
	brooq_job_spec j = {.size = sizeof(brooq_job_spec), .topic = topic, .payload = payload, .key = key};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &j, 1, &r));
	if (created != NULL)
		*created = r.created;
	return r.id;
}

static size_t
claim(const char *topic, uint32_t max, uint32_t wait_ms, brooq_job ***jobs)
{
	const char      *topics[] = {topic};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .worker   = "client-test",
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = max,
				     .wait_ms  = wait_ms};
	size_t           n        = 0;
	OK(brooq_claim(wc, &o, jobs, &n));
	return n;
}

static brooq_job_info *
job(uint64_t id)
{
	brooq_job_info *j = NULL;
	OK(brooq_job_get(wc, id, &j));
	return j;
}

static brooq_state
state_of(uint64_t id)
{
	brooq_job_info *j  = job(id);
	brooq_state     st = j->state;
	brooq_job_info_free(j);
	return st;
}

static bool
token_is_zero(const uint8_t *t)
{
	for (int i = 0; i < BROOQ_LEASE_LEN; i++)
		if (t[i] != 0)
			return false;
	return true;
}

/* ---- ping, enqueue ---------------------------------------------------------------- */

Test(client, ping_names_the_gateway)
{
	char server[128];
	OK(brooq_ping(wc, server, sizeof(server)));
	cr_assert(strncmp(server, "brooq-gateway ", 14) == 0, "server = '%s'", server);
	cr_assert_str_empty(brooq_last_message());
}

Test(client, ping_truncates_to_the_callers_buffer)
{
	char server[6];
	OK(brooq_ping(wc, server, sizeof(server)));
	cr_assert_str_eq(server, "brooq");
}

Test(client, enqueue_returns_an_id_per_job_aligned_with_the_batch)
{
	bool     created = false;
	uint64_t one     = enqueue1("mail.send", "{\"to\":\"a\"}", NULL, &created);
	cr_assert(one > 0);
	cr_assert(created);

	brooq_job_spec jobs[3] = {
		{.size = sizeof(brooq_job_spec), .topic = "batch.a", .payload = "{\"n\":1}"},
		{.size = sizeof(brooq_job_spec), .topic = "batch.b", .payload = "[1,2,3]", .max_attempts = 7},
		{.size = sizeof(brooq_job_spec), .topic = "batch.c", .payload = NULL},
	};
	brooq_enqueue_result r[3];
	for (size_t i_ = 0; i_ < 3; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, jobs, 3, r));
	for (int i = 0; i < 3; i++) {
		cr_assert(r[i].created);
		cr_assert_neq(r[i].id, one);
		brooq_job_info *j = job(r[i].id);
		cr_assert_str_eq(j->topic, jobs[i].topic, "results must be aligned with jobs");
		cr_assert_eq(j->state, BROOQ_PENDING);
		brooq_job_info_free(j);
	}
	cr_assert(r[0].id != r[1].id && r[1].id != r[2].id && r[0].id != r[2].id);
	brooq_job_info *j = job(r[1].id);
	cr_assert_eq(j->max_attempts, 7);
	cr_assert_str_eq(j->payload, "[1, 2, 3]"); /* jsonb's own text form */
	brooq_job_info_free(j);
	j = job(r[2].id);
	cr_assert_str_eq(j->payload, "{}", "a NULL payload means {}");
	brooq_job_info_free(j);
}

Test(client, enqueue_with_an_existing_key_returns_that_id_and_created_false)
{
	bool     c1 = false, c2 = true;
	uint64_t a = enqueue1("mail.send", "{}", "order-17", &c1);
	uint64_t b = enqueue1("mail.send", "{\"other\":true}", "order-17", &c2);
	cr_assert(c1);
	cr_assert_not(c2);
	cr_assert_eq(a, b);
	brooq_job_info *j = job(a);
	cr_assert_str_eq(j->key, "order-17");
	cr_assert_str_eq(j->payload, "{}", "the second enqueue changes nothing");
	brooq_job_info_free(j);
	/* The key is per topic. */
	uint64_t c = enqueue1("mail.other", "{}", "order-17", &c2);
	cr_assert(c2);
	cr_assert_neq(c, a);
}

Test(client, an_empty_key_is_never_deduplicated)
{
	bool     c1 = false, c2 = false, c3 = false;
	uint64_t a = enqueue1("t", "{}", "", &c1);
	uint64_t b = enqueue1("t", "{}", "", &c2);
	uint64_t c = enqueue1("t", "{}", NULL, &c3);
	cr_assert(c1 && c2 && c3);
	cr_assert(a != b && b != c && a != c);
	brooq_job_info *j = job(a);
	cr_assert_null(j->key, "an empty key is stored as no key");
	brooq_job_info_free(j);
}

Test(client, null_options_take_the_url_and_token_file_from_the_environment)
{
	setenv("BROOQ_URL", gw.url, 1);
	setenv("BROOQ_TOKEN_FILE", gw.worker_token_file, 1);
	brooq_client *c = NULL;
	OK(brooq_client_open(NULL, &c));
	char server[64];
	OK(brooq_ping(c, server, sizeof(server)));
	brooq_client_close(c);
	unsetenv("BROOQ_URL");
	unsetenv("BROOQ_TOKEN_FILE");
}

Test(client, a_large_payload_round_trips_through_enqueue_claim_and_job)
{
	size_t len     = 900 * 1024;
	char  *payload = malloc(len + 1);
	cr_assert_not_null(payload);
	payload[0] = '"';
	for (size_t i = 1; i < len - 1; i++)
		payload[i] = (char) ('a' + i % 26);
	payload[len - 1] = '"';
	payload[len]     = '\0';
	uint64_t    id   = enqueue1("big", payload, NULL, NULL);
	brooq_job **jobs;
	cr_assert_eq(claim("big", 1, 0, &jobs), 1);
	cr_assert_eq(jobs[0]->lease.id, id);
	cr_assert_eq(jobs[0]->payload_len, len);
	cr_assert(memcmp(jobs[0]->payload, payload, len) == 0);
	brooq_jobs_free(jobs, 1);
	brooq_job_info *j = job(id);
	cr_assert_str_eq(j->payload, payload);
	brooq_job_info_free(j);
	free(payload);
}

Test(client, a_gateway_refusal_carries_its_status_and_message)
{
	brooq_job_spec       bad = {.size = sizeof(brooq_job_spec), .topic = "Not A Topic", .payload = "{}"};
	brooq_enqueue_result r   = {.size = sizeof(r), .id = 99};
	cr_assert_eq(brooq_enqueue(wc, &bad, 1, &r), BROOQ_EINVALID_ARGUMENT);
	cr_assert(strstr(brooq_last_message(), "topic") != NULL, "message: %s", brooq_last_message());
	cr_assert_eq(r.id, 99, "outputs are written only on success");

	brooq_job_spec not_json = {.size = sizeof(brooq_job_spec), .topic = "t", .payload = "{nope"};
	cr_assert_eq(brooq_enqueue(wc, &not_json, 1, &r), BROOQ_EINVALID_ARGUMENT);
	cr_assert_str_not_empty(brooq_last_message());

	brooq_job_info *j = NULL;
	cr_assert_eq(brooq_job_get(wc, 987654321, &j), BROOQ_ENOT_FOUND);
	cr_assert_null(j);
	cr_assert_str_not_empty(brooq_last_message());
	/* A success clears the message. */
	char server[64];
	OK(brooq_ping(wc, server, sizeof(server)));
	cr_assert_str_empty(brooq_last_message());
}

Test(client, bad_arguments_fail_locally_with_einval)
{
	brooq_job_spec       spec     = {.size = sizeof(brooq_job_spec), .topic = "t"};
	brooq_enqueue_result r        = BROOQ_ENQUEUE_RESULT_INIT;
	brooq_job          **jobs     = NULL;
	size_t               n        = 0;
	const char          *topics[] = {"t"};
	bool                 ext;
	brooq_lease          lease = {0};

	cr_assert_eq(brooq_enqueue(wc, &spec, 0, &r), BROOQ_EINVAL);
	cr_assert_str_not_empty(brooq_last_message());
	cr_assert_eq(brooq_enqueue(wc, NULL, 1, &r), BROOQ_EINVAL);
	cr_assert_eq(brooq_enqueue(wc, &spec, 1, NULL), BROOQ_EINVAL);
	cr_assert_eq(brooq_enqueue(NULL, &spec, 1, &r), BROOQ_EINVAL);
	if (sizeof(size_t) > sizeof(uint32_t))
		cr_assert_eq(brooq_enqueue(wc, &spec, (size_t) UINT32_MAX + 1, &r), BROOQ_EINVAL);
	brooq_job_spec no_topic = {.size = sizeof(brooq_job_spec), .payload = "{}"};
	cr_assert_eq(brooq_enqueue(wc, &no_topic, 1, &r), BROOQ_EINVAL);
	brooq_job_spec both = {.size = sizeof(brooq_job_spec), .topic = "t", .delay_ms = 5, .run_at_ms = 5};
	cr_assert_eq(brooq_enqueue(wc, &both, 1, &r), BROOQ_EINVAL);

	brooq_claim_opts o = {
		.size = sizeof(brooq_claim_opts), .topics = topics, .n_topics = 1, .max_jobs = 0};
	cr_assert_eq(brooq_claim(wc, &o, &jobs, &n), BROOQ_EINVAL);
	o.max_jobs = 1;
	o.n_topics = 0;
	cr_assert_eq(brooq_claim(wc, &o, &jobs, &n), BROOQ_EINVAL);
	o.n_topics = 1;
	o.n_settle = 1;
	cr_assert_eq(brooq_claim(wc, &o, &jobs, &n), BROOQ_EINVAL);
	cr_assert_eq(brooq_claim(wc, NULL, &jobs, &n), BROOQ_EINVAL);

	cr_assert_eq(brooq_heartbeat(wc, &lease, 0, 0, &ext), BROOQ_EINVAL);
	cr_assert_eq(brooq_heartbeat(wc, &lease, 1, 0, NULL), BROOQ_EINVAL);
	brooq_settle_item   s  = {.size = sizeof(brooq_settle_item), .outcome = (brooq_outcome) 42};
	brooq_settle_result sr = BROOQ_SETTLE_RESULT_INIT;
	cr_assert_eq(brooq_settle(wc, &s, 1, &sr), BROOQ_EINVAL);
	brooq_settle_item chained_fail = {.size    = sizeof(brooq_settle_item),
					  .outcome = BROOQ_OUTCOME_FAIL,
					  .chain   = &spec,
					  .n_chain = 1};
	cr_assert_eq(brooq_settle(wc, &chained_fail, 1, &sr), BROOQ_EINVAL);
	cr_assert_eq(brooq_settle(wc, &s, 0, &sr), BROOQ_EINVAL);

	brooq_state st;
	bool        canceled;
	cr_assert_eq(brooq_cancel(ac, 0, &st, &canceled), BROOQ_EINVAL);
	brooq_job_info *j;
	cr_assert_eq(brooq_job_get(wc, 0, &j), BROOQ_EINVAL);
	cr_assert_eq(brooq_job_get(wc, 1, NULL), BROOQ_EINVAL);
	cr_assert_eq(brooq_stats(wc, NULL, &n), BROOQ_EINVAL);
	char buf[8];
	cr_assert_eq(brooq_ping(wc, buf, 0), BROOQ_EINVAL);
	cr_assert_eq(brooq_client_open(NULL, NULL), BROOQ_EINVAL);
}

/* ---- claim, heartbeat, settle -------------------------------------------------------- */

Test(client, claim_returns_lease_tokens_and_counts_the_attempt)
{
	uint64_t a      = enqueue1("img.resize", "{\"w\":64}", NULL, NULL);
	uint64_t b      = enqueue1("img.resize", "{\"w\":128}", NULL, NULL);
	int64_t  before = (int64_t) time(NULL) * 1000;

	brooq_job **jobs = NULL;
	size_t      n    = claim("img.resize", 5, 0, &jobs);
	cr_assert_eq(n, 2);
	cr_assert_eq(jobs[0]->lease.id, a, "order is by available_at, then id");
	cr_assert_eq(jobs[1]->lease.id, b);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(jobs[i]->attempts, 1);
		cr_assert_not(token_is_zero(jobs[i]->lease.token));
		cr_assert_str_eq(jobs[i]->topic, "img.resize");
		cr_assert(jobs[i]->lease_until_ms > before);
		cr_assert(jobs[i]->created_at_ms > 0);
	}
	cr_assert_str_eq(jobs[0]->payload, "{\"w\": 64}");
	cr_assert_eq(jobs[0]->payload_len, strlen(jobs[0]->payload));
	cr_assert(memcmp(jobs[0]->lease.token, jobs[1]->lease.token, BROOQ_LEASE_LEN) != 0);

	brooq_job_info *j = job(a);
	cr_assert_eq(j->state, BROOQ_PROCESSING);
	cr_assert_eq(j->attempts, 1);
	cr_assert_str_eq(j->locked_by, "client-test");
	cr_assert(j->locked_until_ms > before);
	brooq_job_info_free(j);
	brooq_jobs_free(jobs, n);

	/* Nothing left, and no wait: an empty answer at once. */
	jobs = (brooq_job **) 1;
	n    = claim("img.resize", 5, 0, &jobs);
	cr_assert_eq(n, 0);
	cr_assert_null(jobs);
}

Test(client, claim_without_a_worker_name_uses_host_and_pid)
{
	uint64_t         id       = enqueue1("t", "{}", NULL, NULL);
	const char      *topics[] = {"t"};
	brooq_claim_opts o        = {
		       .size = sizeof(brooq_claim_opts), .topics = topics, .n_topics = 1, .max_jobs = 1};
	brooq_job **jobs;
	size_t      n;
	OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 1);
	brooq_job_info *j = job(id);
	char            pid[32];
	snprintf(pid, sizeof(pid), ":%ld", (long) getpid());
	cr_assert(strstr(j->locked_by, pid) != NULL, "locked_by = %s", j->locked_by);
	brooq_job_info_free(j);
	brooq_jobs_free(jobs, n);
}

Test(client, heartbeat_extends_a_held_lease_and_reports_it_lost_after_cancel)
{
	uint64_t    id = enqueue1("t", "{}", NULL, NULL);
	brooq_job **jobs;
	cr_assert_eq(claim("t", 1, 0, &jobs), 1);
	brooq_lease lease = jobs[0]->lease;
	int64_t     until = jobs[0]->lease_until_ms;
	brooq_jobs_free(jobs, 1);

	bool ext = false;
	usleep(20000);
	OK(brooq_heartbeat(wc, &lease, 1, 600000, &ext));
	cr_assert(ext);
	brooq_job_info *j = job(id);
	cr_assert(j->locked_until_ms > until, "the lease must be extended");
	brooq_job_info_free(j);

	brooq_state st;
	bool        canceled = false;
	OK(brooq_cancel(ac, id, &st, &canceled));
	cr_assert(canceled);
	cr_assert_eq(st, BROOQ_CANCELED);

	ext = true;
	OK(brooq_heartbeat(wc, &lease, 1, 0, &ext));
	cr_assert_not(ext, "a canceled job's lease is lost");

	/* A made-up token never extends anything. */
	brooq_lease forged = lease;
	forged.token[0] ^= 0xff;
	ext = true;
	OK(brooq_heartbeat(wc, &forged, 1, 0, &ext));
	cr_assert_not(ext);
}

Test(client, settle_outcomes_lead_to_their_states)
{
	brooq_job_spec specs[5];
	for (int i = 0; i < 5; i++)
		specs[i] = (brooq_job_spec) {.size         = sizeof(brooq_job_spec),
					     .topic        = "settle.me",
					     .payload      = "{}",
					     .max_attempts = 3};
	brooq_enqueue_result ids[5];
	for (size_t i_ = 0; i_ < 5; i_++)
		ids[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, specs, 5, ids));
	brooq_job **jobs;
	cr_assert_eq(claim("settle.me", 5, 0, &jobs), 5);

	int64_t           t0       = (int64_t) time(NULL) * 1000;
	brooq_settle_item items[5] = {
		{.size = sizeof(brooq_settle_item), .lease = jobs[0]->lease, .outcome = BROOQ_OUTCOME_DONE},
		{.size    = sizeof(brooq_settle_item),
		 .lease   = jobs[1]->lease,
		 .outcome = BROOQ_OUTCOME_FAIL,
		 .error   = "boom"},
		{.size     = sizeof(brooq_settle_item),
		 .lease    = jobs[2]->lease,
		 .outcome  = BROOQ_OUTCOME_DELAY,
		 .delay_ms = 30000},
		{.size    = sizeof(brooq_settle_item),
		 .lease   = jobs[3]->lease,
		 .outcome = BROOQ_OUTCOME_PRESERVE,
		 .error   = "not my fault"},
		{.size = sizeof(brooq_settle_item), .lease = jobs[4]->lease, .outcome = BROOQ_OUTCOME_CANCEL},
	};
	brooq_settle_result res[5];
	for (size_t i_ = 0; i_ < 5; i_++)
		res[i_] = (brooq_settle_result) BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, items, 5, res));
	const brooq_state want[5] = {BROOQ_DONE, BROOQ_FAILED, BROOQ_FAILED, BROOQ_FAILED, BROOQ_CANCELED};
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(res[i].id, jobs[i]->lease.id);
		cr_assert(res[i].applied, "item %d not applied", i);
		cr_assert_eq(res[i].state, want[i], "item %d: %s", i, brooq_state_name(res[i].state));
		cr_assert_eq(state_of(jobs[i]->lease.id), want[i], "item %d read back", i);
	}
	brooq_job_info *j = job(jobs[1]->lease.id);
	cr_assert_str_eq(j->last_error, "boom");
	cr_assert_eq(j->attempts, 1);
	cr_assert_null(j->locked_by, "a settled job has no lease");
	cr_assert_eq(j->locked_until_ms, 0);
	brooq_job_info_free(j);
	j = job(jobs[2]->lease.id);
	cr_assert(j->available_at_ms >= t0 + 25000, "delay moves available_at");
	cr_assert_eq(j->attempts, 1, "the attempt stays spent");
	brooq_job_info_free(j);
	j = job(jobs[3]->lease.id);
	cr_assert_eq(j->attempts, 0, "preserve gives the attempt back");
	cr_assert_str_eq(j->last_error, "not my fault");
	brooq_job_info_free(j);

	/* Settling again: the lease is gone, nothing is written. */
	brooq_settle_item again = {.size    = sizeof(brooq_settle_item),
				   .lease   = jobs[0]->lease,
				   .outcome = BROOQ_OUTCOME_FAIL,
				   .error   = "late"};
	OK(brooq_settle(wc, &again, 1, res));
	cr_assert_not(res[0].applied);
	cr_assert_eq(state_of(jobs[0]->lease.id), BROOQ_DONE);
	brooq_jobs_free(jobs, 5);
}

/* Settles one claimed job of `topic` with item (its lease filled in); returns the id. */
static uint64_t
claim_and_settle(const char *topic, brooq_settle_item item)
{
	brooq_job         **jobs;
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	cr_assert_eq(claim(topic, 1, 2000, &jobs), 1);
	item.lease = jobs[0]->lease;
	OK(brooq_settle(wc, &item, 1, &res));
	cr_assert(res.applied);
	uint64_t id = jobs[0]->lease.id;
	brooq_jobs_free(jobs, 1);
	return id;
}

/* docs/protocol.md §7.6: `error` is stored in last_error with every outcome, done
 * included; an item without `error` leaves last_error as it was. */
Test(client, settle_stores_its_error_with_every_outcome_and_keeps_the_last_without_one)
{
	uint64_t a = enqueue1("err.done", "{}", NULL, NULL);
	cr_assert_eq(claim_and_settle("err.done",
				      (brooq_settle_item) {.size    = sizeof(brooq_settle_item),
							   .outcome = BROOQ_OUTCOME_DONE,
							   .error   = "done, with a note"}),
		     a);
	brooq_job_info *j = job(a);
	cr_assert_eq(j->state, BROOQ_DONE);
	cr_assert_str_eq(j->last_error, "done, with a note");
	brooq_job_info_free(j);

	/* delay 0 with an error, then done without one: the first error stays. */
	uint64_t b = enqueue1("err.keep", "{}", NULL, NULL);
	claim_and_settle("err.keep",
			 (brooq_settle_item) {.size     = sizeof(brooq_settle_item),
					      .outcome  = BROOQ_OUTCOME_DELAY,
					      .delay_ms = 0,
					      .error    = "first"});
	claim_and_settle(
		"err.keep",
		(brooq_settle_item) {.size = sizeof(brooq_settle_item), .outcome = BROOQ_OUTCOME_DONE});
	j = job(b);
	cr_assert_eq(j->state, BROOQ_DONE);
	cr_assert_eq(j->attempts, 2);
	cr_assert_str_eq(j->last_error, "first");
	brooq_job_info_free(j);

	uint64_t c = enqueue1("err.cancel", "{}", NULL, NULL);
	claim_and_settle("err.cancel",
			 (brooq_settle_item) {.size    = sizeof(brooq_settle_item),
					      .outcome = BROOQ_OUTCOME_CANCEL,
					      .error   = "moot"});
	j = job(c);
	cr_assert_eq(j->state, BROOQ_CANCELED);
	cr_assert_str_eq(j->last_error, "moot");
	brooq_job_info_free(j);
}

/* The behaviours docs/protocol.md states beside the fields. */
Test(client, a_past_run_at_stores_the_enqueue_time_and_a_terminal_job_has_no_lease)
{
	brooq_job_spec       spec = {.size      = sizeof(brooq_job_spec),
				     .topic     = "past",
				     .payload   = "{}",
				     .run_at_ms = 1000}; /* 1970 */
	brooq_enqueue_result r    = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &spec, 1, &r));
	brooq_job_info *j = job(r.id);
	cr_assert_eq(j->available_at_ms, j->created_at_ms, "available_at %lld, created_at %lld",
		     (long long) j->available_at_ms, (long long) j->created_at_ms);
	brooq_job_info_free(j);

	brooq_job **jobs;
	cr_assert_eq(claim("past", 1, 0, &jobs), 1);
	j = job(r.id);
	cr_assert_str_eq(j->locked_by, "client-test", "a processing job names its holder");
	cr_assert_gt(j->locked_until_ms, 0);
	brooq_job_info_free(j);
	brooq_settle_item it = {
		.size = sizeof(brooq_settle_item), .lease = jobs[0]->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &it, 1, &res));
	brooq_jobs_free(jobs, 1);
	j = job(r.id);
	cr_assert_null(j->locked_by, "terminal: locked_by is nil");
	cr_assert_eq(j->locked_until_ms, 0, "terminal: locked_until_ms is nil");
	brooq_job_info_free(j);
}

/* §7.6: after `fail` a job waits d = min(base * 2^(attempts-1), max), drawn from
 * [d/2, d]; the defaults are base 1 s, max 1 min. */
Test(client, a_failed_job_waits_the_documented_backoff)
{
	uint64_t        id = enqueue1("backoff", "{}", NULL, NULL);
	brooq_job_info *j;
	for (int attempt = 1; attempt <= 2; attempt++) {
		cr_assert_eq(claim_and_settle("backoff",
					      (brooq_settle_item) {.size    = sizeof(brooq_settle_item),
								   .outcome = BROOQ_OUTCOME_FAIL,
								   .error   = "x"}),
			     id);
		j           = job(id);
		int64_t d   = 1000LL << (attempt - 1);
		int64_t got = j->available_at_ms - j->updated_at_ms;
		cr_assert(got >= d / 2 - 1 && got <= d + 1, "attempt %d: waits %lld ms, want %lld..%lld",
			  attempt, (long long) got, (long long) d / 2, (long long) d);
		cr_assert_eq(j->attempts, (uint32_t) attempt);
		brooq_job_info_free(j);
		/* The next claim long-polls until it is ready again. */
	}
}

Test(client, a_failure_on_the_last_attempt_is_dead)
{
	brooq_job_spec spec = {
		.size = sizeof(brooq_job_spec), .topic = "once", .payload = "{}", .max_attempts = 1};
	brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
	OK(brooq_enqueue(wc, &spec, 1, &r));
	brooq_job **jobs;
	cr_assert_eq(claim("once", 1, 0, &jobs), 1);
	brooq_settle_item   s   = {.size    = sizeof(brooq_settle_item),
				   .lease   = jobs[0]->lease,
				   .outcome = BROOQ_OUTCOME_FAIL,
				   .error   = "fatal"};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &s, 1, &res));
	cr_assert(res.applied);
	cr_assert_eq(res.state, BROOQ_DEAD);
	cr_assert_eq(state_of(r.id), BROOQ_DEAD);
	brooq_jobs_free(jobs, 1);
}

Test(client, done_may_chain_jobs_enqueued_in_the_same_transaction)
{
	enqueue1("step.one", "{}", NULL, NULL);
	brooq_job **jobs;
	cr_assert_eq(claim("step.one", 1, 0, &jobs), 1);
	brooq_job_spec next = {
		.size = sizeof(brooq_job_spec), .topic = "step.two", .payload = "{\"from\":1}"};
	brooq_settle_item   s   = {.size    = sizeof(brooq_settle_item),
				   .lease   = jobs[0]->lease,
				   .outcome = BROOQ_OUTCOME_DONE,
				   .chain   = &next,
				   .n_chain = 1};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &s, 1, &res));
	cr_assert(res.applied);
	brooq_jobs_free(jobs, 1);
	cr_assert_eq(claim("step.two", 1, 0, &jobs), 1);
	cr_assert_str_eq(jobs[0]->payload, "{\"from\": 1}");
	brooq_jobs_free(jobs, 1);
}

Test(client, claim_can_settle_the_previous_job_in_the_same_round_trip)
{
	uint64_t    a = enqueue1("pipe", "{}", NULL, NULL);
	uint64_t    b = enqueue1("pipe", "{}", NULL, NULL);
	brooq_job **first;
	cr_assert_eq(claim("pipe", 1, 0, &first), 1);
	cr_assert_eq(first[0]->lease.id, a);

	const char       *topics[] = {"pipe"};
	brooq_settle_item s        = {
		       .size = sizeof(brooq_settle_item), .lease = first[0]->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result settled = BROOQ_SETTLE_RESULT_INIT;
	brooq_claim_opts    o       = {.size     = sizeof(brooq_claim_opts),
				       .worker   = "w",
				       .topics   = topics,
				       .n_topics = 1,
				       .max_jobs = 1,
				       .settle   = &s,
				       .n_settle = 1,
				       .settled  = &settled};
	brooq_job         **jobs;
	size_t              n;
	OK(brooq_claim(wc, &o, &jobs, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(jobs[0]->lease.id, b);
	cr_assert_eq(settled.id, a);
	cr_assert(settled.applied);
	cr_assert_eq(settled.state, BROOQ_DONE);
	cr_assert_eq(state_of(a), BROOQ_DONE);
	cr_assert_eq(state_of(b), BROOQ_PROCESSING);
	brooq_jobs_free(first, 1);
	brooq_jobs_free(jobs, n);
}

/* ---- roles and tokens ------------------------------------------------------------------ */

Test(client, a_worker_token_cannot_cancel_and_changes_nothing)
{
	uint64_t    id       = enqueue1("t", "{}", NULL, NULL);
	brooq_state st       = BROOQ_DONE;
	bool        canceled = true;
	cr_assert_eq(brooq_cancel(wc, id, &st, &canceled), BROOQ_EPERMISSION_DENIED);
	cr_assert(strstr(brooq_last_message(), "admin") != NULL, "message: %s", brooq_last_message());
	cr_assert_eq(st, BROOQ_DONE, "outputs untouched on failure");
	cr_assert(canceled);
	cr_assert_eq(state_of(id), BROOQ_PENDING);
}

Test(client, cancel_of_a_terminal_job_answers_its_state_and_changes_nothing)
{
	uint64_t    id = enqueue1("t", "{}", NULL, NULL);
	brooq_job **jobs;
	cr_assert_eq(claim("t", 1, 0, &jobs), 1);
	brooq_settle_item s = {
		.size = sizeof(brooq_settle_item), .lease = jobs[0]->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result res = BROOQ_SETTLE_RESULT_INIT;
	OK(brooq_settle(wc, &s, 1, &res));
	brooq_jobs_free(jobs, 1);

	brooq_state st;
	bool        canceled = true;
	OK(brooq_cancel(ac, id, &st, &canceled));
	cr_assert_not(canceled);
	cr_assert_eq(st, BROOQ_DONE);
	cr_assert_eq(brooq_cancel(ac, 424242, &st, &canceled), BROOQ_ENOT_FOUND);
}

Test(client, a_wrong_token_is_unauthenticated)
{
	char path[320];
	snprintf(path, sizeof(path), "%s/wrong-token", gw.dir);
	brq_t_write_file(path, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", 0600);
	brooq_client *c = brq_t_client_open(gw.url, path, 5000);
	char          server[64];
	cr_assert_eq(brooq_ping(c, server, sizeof(server)), BROOQ_EUNAUTHENTICATED);
	cr_assert_str_not_empty(brooq_last_message());
	brooq_job_spec       spec = {.size = sizeof(brooq_job_spec), .topic = "t"};
	brooq_enqueue_result r    = BROOQ_ENQUEUE_RESULT_INIT;
	cr_assert_eq(brooq_enqueue(c, &spec, 1, &r), BROOQ_EUNAUTHENTICATED);
	brooq_client_close(c);
}

Test(client_offline, a_too_short_or_missing_token_file_fails_to_open)
{
	char dir[] = "/tmp/brooq-ct.XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/short", dir);
	brq_t_write_file(path, "sixteen-byte-tok\n\n", 0600);

	brooq_client_opts o = {
		.size = sizeof(brooq_client_opts), .url = "ipc:///nonexistent/x.sock", .token_file = path};
	brooq_client *c = (brooq_client *) 1;
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_ETOKEN);
	cr_assert_eq(c, (brooq_client *) 1, "out untouched on failure");
	cr_assert(strstr(brooq_last_message(), "too short") != NULL, "message: %s", brooq_last_message());
	cr_assert(strstr(brooq_last_message(), "sixteen") == NULL, "the token never appears");

	snprintf(path, sizeof(path), "%s/absent", dir);
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_ETOKEN);
	cr_assert(strstr(brooq_last_message(), path) != NULL, "message: %s", brooq_last_message());

	o.token_file = NULL;
	unsetenv("BROOQ_TOKEN_FILE");
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_ETOKEN);

	snprintf(path, sizeof(path), "%s/short", dir);
	unlink(path);
	rmdir(dir);
}

Test(client_offline, a_bad_url_fails_to_open_with_einval)
{
	char dir[] = "/tmp/brooq-ct.XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	brq_t_write_file(path, "0123456789abcdef0123456789abcdef\n", 0600);
	brooq_client_opts o = {
		.size = sizeof(brooq_client_opts), .url = "carrier-pigeon://coop", .token_file = path};
	brooq_client *c = NULL;
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_EINVAL);
	cr_assert_null(c);
	unlink(path);
	rmdir(dir);
}

Test(client_offline, a_call_to_an_ipc_socket_nobody_listens_on_fails_at_once_unreachable)
{
	char dir[] = "/tmp/brooq-ct.XXXXXX", path[64], url[96];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	snprintf(url, sizeof(url), "ipc://%s/nobody.sock", dir);
	brq_t_write_file(path, "0123456789abcdef0123456789abcdef\n", 0600);

	/* Opens although nothing listens; each call finds nobody and sends nothing. */
	brooq_client *c = brq_t_client_open(url, path, 5000);
	char          server[64];
	double        t0 = brq_t_now_ms();
	brooq_err     e  = brooq_ping(c, server, sizeof(server));
	double        dt = brq_t_now_ms() - t0;
	cr_assert_eq(e, BROOQ_ECONNECT, "got %s: %s", brooq_strerror(e), brooq_last_message());
	/* The bound is the behaviour: nothing listens, so the 5 s timeout is not waited
	 * out. Half of it: the call takes a few ms, longer on a busy machine. */
	cr_assert(dt < 2500, "took %.0f ms with nothing listening", dt);
	cr_assert(strstr(brooq_last_message(), "nothing was sent") != NULL, "%s", brooq_last_message());
	cr_assert(strstr(brooq_last_message(), url) != NULL, "%s", brooq_last_message());

	/* A long-poll claim too: no wait for a gateway that is not there. */
	const char      *topics[] = {"t"};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = 1,
				     .wait_ms  = 2000};
	brooq_job      **jobs;
	size_t           n;
	t0 = brq_t_now_ms();
	e  = brooq_claim(c, &o, &jobs, &n);
	dt = brq_t_now_ms() - t0;
	cr_assert_eq(e, BROOQ_ECONNECT, "got %s", brooq_strerror(e));
	cr_assert(dt < 1000, "took %.0f ms: waited for the 2 s long-poll", dt); /* half of it */
	brooq_client_close(c);
	unlink(path);
	rmdir(dir);
}

Test(client_offline, a_request_sent_but_never_answered_times_out_and_may_have_run)
{
	char dir[] = "/tmp/brooq-ct.XXXXXX", path[64], url[96];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	snprintf(url, sizeof(url), "ipc://%s/silent.sock", dir);
	brq_t_write_file(path, "0123456789abcdef0123456789abcdef\n", 0600);
	/* A REP socket that listens and never answers. */
	nng_socket rep;
	cr_assert_eq(nng_rep0_open(&rep), 0);
	cr_assert_eq(nng_listen(rep, url, NULL, 0), 0);

	brooq_client *c = brq_t_client_open(url, path, 300);
	char          server[64];
	double        t0 = brq_t_now_ms();
	brooq_err     e  = brooq_ping(c, server, sizeof(server));
	double        dt = brq_t_now_ms() - t0;
	cr_assert_eq(e, BROOQ_ETIMEDOUT, "got %s: %s", brooq_strerror(e), brooq_last_message());
	cr_assert(dt >= 250 && dt < 2000, "took %.0f ms with a 300 ms timeout", dt);
	cr_assert(strstr(brooq_last_message(), "may have run") != NULL, "%s", brooq_last_message());
	cr_assert_str_eq(brooq_strerror(e), "timed out (the request may have run)");
	brooq_client_close(c);
	nng_close(rep);
	unlink(path);
	rmdir(dir);
}

Test(client_offline, a_call_over_tcp_with_nobody_listening_fails_unreachable_within_its_timeout)
{
	char dir[] = "/tmp/brooq-ct.XXXXXX", path[64], url[96];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	brq_t_write_file(path, "0123456789abcdef0123456789abcdef\n", 0600);
	/* A loopback port nobody listens on: bound, read, closed. */
	struct sockaddr_in sa  = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t          len = sizeof(sa);
	int                fd  = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
		  getsockname(fd, (struct sockaddr *) &sa, &len) == 0);
	close(fd);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%u", (unsigned) ntohs(sa.sin_port));

	brooq_client *c = brq_t_client_open(url, path, 300);
	char          server[64];
	double        t0 = brq_t_now_ms();
	brooq_err     e  = brooq_ping(c, server, sizeof(server));
	double        dt = brq_t_now_ms() - t0;
	cr_assert_eq(e, BROOQ_ECONNECT, "got %s: %s", brooq_strerror(e), brooq_last_message());
	cr_assert(dt >= 250 && dt < 2000, "took %.0f ms with a 300 ms timeout", dt);
	cr_assert(strstr(brooq_last_message(), "nothing was sent") != NULL, "%s", brooq_last_message());
	brooq_client_close(c);
	unlink(path);
	rmdir(dir);
}

/* ---- concurrency --------------------------------------------------------------------------- */

#define N_THREADS  8
#define PER_THREAD 200

typedef struct enq_arg {
	int       t;
	uint64_t  ids[PER_THREAD];
	int       failures;
	brooq_err first_err;
} enq_arg;

static void *
enqueue_many(void *p)
{
	enq_arg *a = p;
	char     payload[64];
	for (int i = 0; i < PER_THREAD; i++) {
		snprintf(payload, sizeof(payload), "{\"t\":%d,\"i\":%d}", a->t, i);
		brooq_job_spec spec = {.size = sizeof(brooq_job_spec), .topic = "conc", .payload = payload};
		brooq_enqueue_result r = BROOQ_ENQUEUE_RESULT_INIT;
		brooq_err            e = brooq_enqueue(wc, &spec, 1, &r);
		if (e != BROOQ_OK) {
			if (a->failures++ == 0)
				a->first_err = e;
			continue;
		}
		a->ids[i] = r.id;
	}
	return NULL;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;
	return a < b ? -1 : a > b;
}

Test(client, many_threads_share_one_client_handle)
{
	static enq_arg args[N_THREADS];
	pthread_t      th[N_THREADS];
	for (int t = 0; t < N_THREADS; t++) {
		args[t] = (enq_arg) {.t = t};
		cr_assert_eq(pthread_create(&th[t], NULL, enqueue_many, &args[t]), 0);
	}
	for (int t = 0; t < N_THREADS; t++)
		pthread_join(th[t], NULL);

	static uint64_t all[N_THREADS * PER_THREAD];
	for (int t = 0; t < N_THREADS; t++) {
		cr_assert_eq(args[t].failures, 0, "thread %d: %d failures, first %s", t, args[t].failures,
			     brooq_strerror(args[t].first_err));
		memcpy(all + t * PER_THREAD, args[t].ids, sizeof(args[t].ids));
	}
	qsort(all, N_THREADS * PER_THREAD, sizeof(uint64_t), cmp_u64);
	for (int i = 1; i < N_THREADS * PER_THREAD; i++)
		cr_assert_neq(all[i], all[i - 1], "id %llu handed out twice", (unsigned long long) all[i]);

	brooq_topic_stats **s;
	size_t              n;
	OK(brooq_stats(wc, &s, &n));
	cr_assert_eq(n, 1);
	cr_assert_str_eq(s[0]->topic, "conc");
	cr_assert_eq(s[0]->count[BROOQ_PENDING], N_THREADS * PER_THREAD);
	brooq_stats_free(s, n);
}

typedef struct poll_arg {
	double      returned_ms;
	brooq_err   err;
	size_t      n;
	brooq_job **jobs;
	char        msg[512]; /* brooq_last_message() of the polling thread */
} poll_arg;

static void *
long_poll(void *p)
{
	poll_arg        *a        = p;
	const char      *topics[] = {"wake.me"};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .worker   = "poller",
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = 1,
				     .wait_ms  = 10000};
	a->err                    = brooq_claim(wc, &o, &a->jobs, &a->n);
	a->returned_ms            = brq_t_now_ms();
	return NULL;
}

Test(client, a_long_poll_claim_returns_as_soon_as_a_job_is_enqueued)
{
	poll_arg  a = {0};
	pthread_t th;
	double    t0 = brq_t_now_ms();
	cr_assert_eq(pthread_create(&th, NULL, long_poll, &a), 0);
	usleep(500000);
	/* Another thread, the same client: the enqueue is not stuck behind the poll. */
	double   t_enq = brq_t_now_ms();
	uint64_t id    = enqueue1("wake.me", "{}", NULL, NULL);
	pthread_join(th, NULL);
	cr_assert_eq(a.err, BROOQ_OK, "%s", brooq_strerror(a.err));
	cr_assert_eq(a.n, 1);
	cr_assert_eq(a.jobs[0]->lease.id, id);
	cr_assert(a.returned_ms - t0 >= 450, "the claim did not wait (%.0f ms)", a.returned_ms - t0);
	cr_assert(a.returned_ms - t_enq < 1000, "woke %.0f ms after the enqueue", a.returned_ms - t_enq);
	brooq_jobs_free(a.jobs, a.n);
}

Test(client, a_long_poll_with_nothing_to_claim_returns_empty_after_its_wait)
{
	const char      *topics[] = {"never"};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = 3,
				     .wait_ms  = 400};
	brooq_job      **jobs     = (brooq_job **) 1;
	size_t           n        = 9;
	double           t0       = brq_t_now_ms();
	OK(brooq_claim(wc, &o, &jobs, &n));
	double dt = brq_t_now_ms() - t0;
	cr_assert_eq(n, 0);
	cr_assert_null(jobs);
	cr_assert(dt >= 350 && dt < 3000, "waited %.0f ms for 400", dt);
}

Test(client, stats_count_jobs_per_topic_and_state)
{
	enqueue1("s.a", "{}", NULL, NULL);
	enqueue1("s.a", "{}", NULL, NULL);
	enqueue1("s.b", "{}", NULL, NULL);
	brooq_job **jobs;
	cr_assert_eq(claim("s.b", 1, 0, &jobs), 1);
	brooq_jobs_free(jobs, 1);

	brooq_topic_stats **s = NULL;
	size_t              n = 0;
	OK(brooq_stats(ac, &s, &n));
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s[i]->topic, "s.a") == 0) {
			cr_assert_eq(s[i]->count[BROOQ_PENDING], 2);
			cr_assert_eq(s[i]->count[BROOQ_PROCESSING], 0);
		} else {
			cr_assert_str_eq(s[i]->topic, "s.b");
			cr_assert_eq(s[i]->count[BROOQ_PENDING], 0);
			cr_assert_eq(s[i]->count[BROOQ_PROCESSING], 1);
			cr_assert_eq(s[i]->oldest_ready_age_ms, 0, "nothing ready in s.b");
		}
	}
	brooq_stats_free(s, n);
}

Test(client_offline, error_and_state_names_are_never_null)
{
	for (int e = BROOQ_OK; e <= BROOQ_EINTERNAL + 1; e++)
		cr_assert_not_null(brooq_strerror((brooq_err) e));
	cr_assert_str_eq(brooq_strerror(BROOQ_ETIMEDOUT), "timed out (the request may have run)");
	cr_assert_str_eq(brooq_state_name(BROOQ_CANCELED), "canceled");
	cr_assert_str_eq(brooq_state_name(BROOQ_PENDING), "pending");
	cr_assert_not_null(brooq_state_name((brooq_state) 77));
	brooq_client_close(NULL);
	brooq_jobs_free(NULL, 3);
	brooq_job_info_free(NULL);
	brooq_stats_free(NULL, 2);
}

Test(client_offline, the_version_is_the_headers_and_the_builds)
{
	char want[32];
	snprintf(want, sizeof(want), "%d.%d.%d", BROOQ_VERSION_MAJOR, BROOQ_VERSION_MINOR,
		 BROOQ_VERSION_PATCH);
	cr_assert_str_eq(brooq_version(), want, "the library and brooq.h disagree");
	/* brq_version.h is generated from CMake's PROJECT_VERSION. */
	cr_assert_str_eq(brooq_version(), BROOQ_VERSION, "brooq.h and PROJECT_VERSION disagree");
}

/* A later header's client options: one field more than this library knows. */
typedef struct later_opts {
	brooq_client_opts o;
	uint64_t          added;
} later_opts;

/* The message of a refused options size names an initializer the header really has:
 * declaring a variable with it fails the build if it does not. */
#define ASSERT_HINT_NAMES(type, init)                                                                \
	do {                                                                                         \
		type hint_ = init;                                                                   \
		(void) hint_;                                                                        \
		cr_assert(strstr(brooq_last_message(), "(" #init ")") != NULL, "%s names no " #init, \
			  brooq_last_message());                                                     \
	} while (0)

Test(client_offline, options_structs_are_read_by_their_size)
{
	char dir[] = "/tmp/brooq-ct.XXXXXX", path[64], url[96];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);
	snprintf(url, sizeof(url), "ipc://%s/nobody.sock", dir);
	brq_t_write_file(path, "0123456789abcdef0123456789abcdef\n", 0600);
	brooq_client *c = NULL;

	brooq_client_opts o = {.url = url, .token_file = path}; /* size left 0 */
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "brooq_client_opts.size") != NULL, "%s", brooq_last_message());
	ASSERT_HINT_NAMES(brooq_client_opts, BROOQ_CLIENT_OPTS_INIT);
	cr_assert_null(c);
	/* Older than the first release (which ended with log_arg): impossible. */
	o.size = offsetof(brooq_client_opts, log_arg);
	cr_assert_eq(brooq_client_open(&o, &c), BROOQ_EINVAL);

	later_opts l = {.o = {.size = sizeof(later_opts), .url = url, .token_file = path}};
	OK(brooq_client_open(&l.o, &c)); /* the added field unset: fine */
	brooq_client_close(c);
	c       = NULL;
	l.added = 1;
	cr_assert_eq(brooq_client_open(&l.o, &c), BROOQ_EINVAL, "an unknown field set must be refused");
	cr_assert(strstr(brooq_last_message(), "does not know") != NULL, "%s", brooq_last_message());

	o.size = sizeof(o);
	OK(brooq_client_open(&o, &c));
	const char      *topics[] = {"t"};
	brooq_claim_opts co       = {.topics = topics, .n_topics = 1, .max_jobs = 1};
	brooq_job      **jobs;
	size_t           n;
	cr_assert_eq(brooq_claim(c, &co, &jobs, &n), BROOQ_EINVAL, "claim options without size");
	ASSERT_HINT_NAMES(brooq_claim_opts, BROOQ_CLAIM_OPTS_INIT);
	brooq_worker *w = NULL;
	cr_assert_eq(brooq_worker_new(c, &(brooq_worker_opts) {.threads = 1}, &w), BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_worker_opts, BROOQ_WORKER_OPTS_INIT);
	cr_assert_null(w);
	brooq_job_page *page = NULL;
	cr_assert_eq(brooq_list(c, &(brooq_list_opts) {.limit = 1}, &page), BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_list_opts, BROOQ_LIST_OPTS_INIT);
	cr_assert_eq(brooq_schedule_add(c, &(brooq_schedule) {.name = "s", .topic = "t", .every_ms = 60000},
					NULL, NULL),
		     BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_schedule, BROOQ_SCHEDULE_INIT);
	OK(brooq_worker_new(c, &(brooq_worker_opts) BROOQ_WORKER_OPTS_INIT, &w));
	brooq_worker_free(w);
	brooq_client_close(c);
	unlink(path);
	rmdir(dir);
}

/* Runs fn with stderr going to a temporary file; returns what was written (malloc'd). */
static char *
capture_stderr(void (*fn)(void))
{
	char  path[] = "/tmp/brooq-ct-stderr.XXXXXX";
	int   fd     = mkstemp(path);
	int   saved  = dup(2);
	char *buf    = calloc(1, 4096);
	cr_assert(fd >= 0 && saved >= 0 && buf != NULL);
	fflush(stderr);
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(fd, buf, 4095, 0);
	cr_assert_geq(got, 0);
	close(fd);
	unlink(path);
	return buf;
}

static void
log_two_lines(void)
{
	const brooq_log_field f[] = {
		{"err", "gateway unreachable"}, {"detail", "say \"hi\"\n\\"}, {"n", "3"}, {"empty", ""}};
	brooq_log_stderr(BROOQ_LOG_WARN, "claim_failed", f, 4, NULL);
	brooq_log_stderr(BROOQ_LOG_INFO, "worker_stopped", NULL, 0, NULL);
}

Test(client_offline, the_default_log_sink_writes_one_quoted_line_per_event)
{
	char *out = capture_stderr(log_two_lines);
	cr_assert_str_eq(
		out,
		"level=warn msg=claim_failed err=\"gateway unreachable\" detail=\"say \\\"hi\\\"\\x0a\\\\\" "
		"n=3 empty=\"\"\n"
		"level=info msg=worker_stopped\n");
	free(out);
	cr_assert_str_eq(brooq_log_level_name(BROOQ_LOG_ERROR), "error");
	cr_assert_str_eq(brooq_log_level_name(BROOQ_LOG_DEBUG), "debug");
	cr_assert_not_null(brooq_log_level_name((brooq_log_level) 9));
}

/* ---- a gateway that dies under a call --------------------------------------------------- */

/* Its own gateways: one is killed mid-call, another takes over its address
 * (the client reaches it through a symlinked directory). */
static brq_gw gw2;
static char   link_path[128];

static void
restart_setup(void)
{
	dsn = brq_testdb_create(true);
	brq_gw_start(&gw, dsn, NULL);
	memset(&gw2, 0, sizeof(gw2));
	snprintf(link_path, sizeof(link_path), "/tmp/brooq-ct-link.%ld", (long) getpid());
	unlink(link_path);
	cr_assert_eq(symlink(gw.dir, link_path), 0);
}

static void
restart_teardown(void)
{
	char cmd[400];
	brooq_client_close(wc);
	wc = NULL;
	unlink(link_path);
	if (gw2.pid > 0)
		brq_gw_stop(&gw2);
	if (gw.pid > 0) {
		kill(gw.pid, SIGKILL);
		waitpid(gw.pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", gw.dir);
	(void) system(cmd);
	brq_testdb_drop(dsn);
}

TestSuite(client_restart, .init = restart_setup, .fini = restart_teardown, .timeout = 120);

static void *
claim_x(void *p)
{
	poll_arg        *a        = p;
	const char      *topics[] = {"x"};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .worker   = "restart-test",
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = 1,
				     .wait_ms  = 20000};
	a->err                    = brooq_claim(wc, &o, &a->jobs, &a->n);
	a->returned_ms            = brq_t_now_ms();
	snprintf(a->msg, sizeof(a->msg), "%s", brooq_last_message());
	return NULL;
}

Test(client_restart, a_call_in_flight_when_the_gateway_dies_fails_and_is_never_resent)
{
	char url[200], env_w[400], env_a[400], server[64];

	snprintf(url, sizeof(url), "ipc://%s/gw.sock", link_path);
	wc = brq_t_client_open(url, gw.worker_token_file, 10000);
	OK(brooq_ping(wc, server, sizeof(server)));

	/* 1. A long-poll is on the wire when the gateway is killed: the call fails at
	 *    once with BROOQ_ECONNECT instead of waiting out its 30 s. */
	poll_arg  a = {0};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, claim_x, &a), 0);
	usleep(300000);
	double t_kill = brq_t_now_ms();
	kill(gw.pid, SIGKILL);
	waitpid(gw.pid, NULL, 0);
	gw.pid = 0;
	pthread_join(th, NULL);
	cr_assert_eq(a.err, BROOQ_ECONNECT, "got %s: %s", brooq_strerror(a.err), a.msg);
	cr_assert(a.returned_ms - t_kill < 3000, "took %.0f ms after the kill", a.returned_ms - t_kill);

	/* 2. A new gateway on the same URL, accepting the same tokens. */
	snprintf(env_w, sizeof(env_w), "BROOQ_WORKER_TOKEN_FILES=%s", gw.worker_token_file);
	snprintf(env_a, sizeof(env_a), "BROOQ_ADMIN_TOKEN_FILES=%s", gw.admin_token_file);
	const char *env[] = {env_w, env_a, NULL};
	brq_gw_start(&gw2, dsn, env);
	unlink(link_path);
	cr_assert_eq(symlink(gw2.dir, link_path), 0);

	/* 3. The same handle reconnects, and the dead call's claim was not re-sent
	 *    there: a job enqueued now stays pending (nobody long-polls for it). */
	brooq_err e = BROOQ_ETIMEDOUT;
	for (int i = 0; i < 50 && e != BROOQ_OK; i++) {
		e = brooq_ping(wc, server, sizeof(server));
		if (e != BROOQ_OK)
			usleep(100000);
	}
	cr_assert_eq(e, BROOQ_OK, "no reconnect: %s: %s", brooq_strerror(e), brooq_last_message());
	uint64_t id = enqueue1("x", "{}", NULL, NULL);
	usleep(500000);
	cr_assert_eq(state_of(id), BROOQ_PENDING, "a re-sent claim took the job");
}

/* ---- ABI: size-versioned structs in arrays, library-allocated results ---------------- */

/* A later header's job spec and enqueue result: one field more than this library knows,
 * so arrays of them have a larger stride. */
typedef struct later_spec {
	brooq_job_spec s;
	uint64_t       added;
} later_spec;
typedef struct later_result {
	brooq_enqueue_result r;
	uint64_t             added;
} later_result;

Test(client, arrays_are_stepped_by_their_elements_size)
{
	later_spec   specs[2] = {{.s = {.size = sizeof(later_spec), .topic = "abi.a", .payload = "{}"}},
				 {.s = {.size = sizeof(later_spec), .topic = "abi.b", .payload = "{}"}}};
	later_result res[2]   = {{.r = {.size = sizeof(later_result)}, .added = 7},
				 {.r = {.size = sizeof(later_result)}, .added = 8}};
	OK(brooq_enqueue(wc, &specs[0].s, 2, &res[0].r));
	cr_assert(res[0].r.created && res[1].r.created);
	cr_assert_neq(res[0].r.id, res[1].r.id);
	cr_assert_eq(res[0].added, 7, "a field this library does not know was written");
	cr_assert_eq(res[1].added, 8, "a field this library does not know was written");
	brooq_job_info *a = job(res[0].r.id), *b = job(res[1].r.id);
	cr_assert_str_eq(a->topic, "abi.a");
	cr_assert_str_eq(b->topic, "abi.b", "the second spec was not read at the caller's stride");
	brooq_job_info_free(a);
	brooq_job_info_free(b);

	/* A later field set: refused, nothing enqueued. */
	specs[1].added = 1;
	cr_assert_eq(brooq_enqueue(wc, &specs[0].s, 2, &res[0].r), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "does not know") != NULL, "%s", brooq_last_message());
	specs[1].added = 0;
	/* Sizes that differ within one array, a size of 0, a result array without sizes. */
	specs[1].s.size = sizeof(brooq_job_spec);
	cr_assert_eq(brooq_enqueue(wc, &specs[0].s, 2, &res[0].r), BROOQ_EINVAL);
	cr_assert(strstr(brooq_last_message(), "brooq_job_spec[1].size") != NULL, "%s", brooq_last_message());
	brooq_job_spec       zero = {.topic = "abi.a"};
	brooq_enqueue_result r    = BROOQ_ENQUEUE_RESULT_INIT;
	cr_assert_eq(brooq_enqueue(wc, &zero, 1, &r), BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_job_spec, BROOQ_JOB_SPEC_INIT);
	brooq_job_spec       one = {.size = sizeof(one), .topic = "abi.a"};
	brooq_enqueue_result bad = {.id = 5};
	cr_assert_eq(brooq_enqueue(wc, &one, 1, &bad), BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_enqueue_result, BROOQ_ENQUEUE_RESULT_INIT);

	/* Settle items and results likewise. */
	brooq_job **jobs;
	cr_assert_eq(claim("abi.a", 1, 0, &jobs), 1);
	brooq_settle_item   it = {.lease = jobs[0]->lease, .outcome = BROOQ_OUTCOME_DONE};
	brooq_settle_result sr = BROOQ_SETTLE_RESULT_INIT;
	cr_assert_eq(brooq_settle(wc, &it, 1, &sr), BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_settle_item, BROOQ_SETTLE_ITEM_INIT);
	it.size                 = sizeof(it);
	brooq_settle_result nos = {.id = 1};
	cr_assert_eq(brooq_settle(wc, &it, 1, &nos), BROOQ_EINVAL);
	ASSERT_HINT_NAMES(brooq_settle_result, BROOQ_SETTLE_RESULT_INIT);
	OK(brooq_settle(wc, &it, 1, &sr));
	cr_assert(sr.applied);
	cr_assert_eq(sr.size, sizeof(sr), "the library wrote the size field");
	brooq_jobs_free(jobs, 1);
}

Test(client, a_claim_is_one_allocation_of_pointers_jobs_and_strings)
{
	enqueue1("abi.claim", "{\"n\": 1}", NULL, NULL);
	enqueue1("abi.claim", "{\"n\": 2}", NULL, NULL);
	brooq_job **jobs;
	cr_assert_eq(claim("abi.claim", 2, 0, &jobs), 2);
	/* The jobs and their strings live inside the array's own block, right after the
	 * pointers: freeing the array frees them all (client_valgrind checks no leak). */
	const char *lo = (const char *) jobs, *hi = lo + 2 * sizeof(brooq_job *) + 2 * sizeof(brooq_job);
	for (int i = 0; i < 2; i++) {
		cr_assert((const char *) jobs[i] >= lo + 2 * sizeof(brooq_job *) &&
			  (const char *) jobs[i] < hi);
		cr_assert(jobs[i]->topic >= hi && jobs[i]->payload >= hi);
		cr_assert_str_eq(jobs[i]->topic, "abi.claim");
	}
	brooq_jobs_free(jobs, 2);
}
