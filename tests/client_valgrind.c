/* SPDX-License-Identifier: MIT */
/* A small libbrooq-client program for the valgrind leak check (client_valgrind_test.c runs it). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <brooq/brooq.h>

#define CHECK(call)                                                                       \
	do {                                                                              \
		brooq_err e_ = (call);                                                    \
		if (e_ != BROOQ_OK) {                                                     \
			fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, \
				brooq_strerror(e_), brooq_last_message());                \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

#define EXPECT(call, want)                                                                \
	do {                                                                              \
		brooq_err e_ = (call);                                                    \
		if (e_ != (want)) {                                                       \
			fprintf(stderr, "%s:%d: %s: got %s\n", __FILE__, __LINE__, #call, \
				brooq_strerror(e_));                                      \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

static brooq_client *wc, *ac;

/* ---- the worker's timeouts and an operator's cancel: the paths that replace or discard a
 * result (the cancel through the worker's watch) ---------------------------------------- */

static atomic_bool cancel_started; /* vg.cancel's handler has begun */
static atomic_int  n_flagged;

/* Waits for its flag (at most 20 s), then fails: the timeout replaces it, or the lost
 * lease discards it. */
static void
h_wait_flag(brooq_job_ctx *job, void *arg)
{
	brooq_cancel_reason want = (brooq_cancel_reason) (intptr_t) arg;
	if (want == BROOQ_CANCEL_OPERATOR)
		atomic_store(&cancel_started, true);
	for (int i = 0; i < 20000 && !brooq_job_canceled(job); i++)
		usleep(1000);
	if (brooq_job_cancel_reason(job) == want)
		atomic_fetch_add(&n_flagged, 1);
	brooq_job_fail(job, "handler gave up");
}

static void *
worker_main(void *arg)
{
	CHECK(brooq_worker_run(arg));
	return NULL;
}

static void
worker_timeouts(void)
{
	brooq_job_spec specs[3] = {
		{.size = sizeof(brooq_job_spec), .topic = "vg.slow", .payload = "{}", .max_attempts = 1},
		{.size = sizeof(brooq_job_spec), .topic = "vg.hang", .payload = "{}"},
		{.size = sizeof(brooq_job_spec), .topic = "vg.cancel", .payload = "{}"}};
	brooq_enqueue_result r[3];
	for (size_t i_ = 0; i_ < 3; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	CHECK(brooq_enqueue(wc, specs, 3, r));
	brooq_worker_opts o = {.size = sizeof(o), .threads = 3, .lease_ms = 1000, .wait_ms = 200};
	brooq_worker     *w;
	CHECK(brooq_worker_new(wc, &o, &w));
	CHECK(brooq_worker_handle(w, "vg.slow", h_wait_flag, (void *) (intptr_t) BROOQ_CANCEL_TIMEOUT));
	CHECK(brooq_worker_handle(w, "vg.hang", h_wait_flag, (void *) (intptr_t) BROOQ_CANCEL_MAX_EXECUTION));
	CHECK(brooq_worker_handle(w, "vg.cancel", h_wait_flag, (void *) (intptr_t) BROOQ_CANCEL_OPERATOR));
	pthread_t th;
	pthread_create(&th, NULL, worker_main, w);
	/* vg.cancel's handler runs (not only its claim: a job canceled before its handler
	 * starts is dropped unrun, and would never see the flag): an operator cancels it, and
	 * the worker's watch raises the flag (or the next heartbeat, a third of a second
	 * later: the lease is short for vg.hang). */
	brooq_job_info *j;
	for (int i = 0; i < 20000 && !atomic_load(&cancel_started); i++)
		usleep(1000);
	brooq_state cst;
	bool        canceled;
	CHECK(brooq_cancel(ac, r[2].id, &cst, &canceled));
	for (int i = 0; i < 20000 && atomic_load(&n_flagged) < 3; i++)
		usleep(1000);
	usleep(300000); /* the timed-out result is settled */
	brooq_worker_stop(w);
	pthread_join(th, NULL);
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(w, &st);
	brooq_worker_free(w);
	CHECK(brooq_job_get(wc, r[0].id, &j));
	bool dead = j->state == BROOQ_DEAD && j->last_error != NULL &&
		strncmp(j->last_error, "attempt timed out after 200 ms", 30) == 0;
	brooq_job_info_free(j);
	if (atomic_load(&n_flagged) != 3 || st.hung != 1 || !dead) {
		fprintf(stderr, "worker timeouts: flagged %d hung %llu dead %d\n", atomic_load(&n_flagged),
			(unsigned long long) st.hung, dead);
		exit(1);
	}
}

static void *
pinger(void *arg)
{
	char server[64];
	(void) arg;
	for (int i = 0; i < 20; i++)
		CHECK(brooq_ping(wc, server, sizeof(server)));
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: client_valgrind URL WORKER_TOKEN_FILE ADMIN_TOKEN_FILE DEAD_URL\n");
		return 2;
	}
	brooq_client_opts wo = {.size       = sizeof(brooq_client_opts),
				.url        = argv[1],
				.token_file = argv[2],
				.timeout_ms = 20000};
	brooq_client_opts ao = {.size       = sizeof(brooq_client_opts),
				.url        = argv[1],
				.token_file = argv[3],
				.timeout_ms = 20000};
	CHECK(brooq_client_open(&wo, &wc));
	CHECK(brooq_client_open(&ao, &ac));

	char server[64];
	CHECK(brooq_ping(wc, server, sizeof(server)));

	/* Several threads at once: the context pool grows and is drained on close. */
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, pinger, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);

	brooq_job_spec specs[3] = {
		{.size = sizeof(brooq_job_spec), .topic = "vg", .payload = "{\"a\":1}", .key = "k"},
		{.size = sizeof(brooq_job_spec), .topic = "vg", .payload = "[]"},
		{.size = sizeof(brooq_job_spec), .topic = "vg.next", .payload = NULL}};
	brooq_enqueue_result r[3];
	for (size_t i_ = 0; i_ < 3; i_++)
		r[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	CHECK(brooq_enqueue(wc, specs, 3, r));

	const char      *topics[] = {"vg"};
	brooq_claim_opts o        = {.size     = sizeof(brooq_claim_opts),
				     .topics   = topics,
				     .n_topics = 1,
				     .max_jobs = 1,
				     .wait_ms  = 100};
	brooq_job      **jobs;
	size_t           n;
	CHECK(brooq_claim(wc, &o, &jobs, &n));
	if (n != 1)
		return 1;

	bool ext;
	CHECK(brooq_heartbeat(wc, &jobs[0]->lease, 1, 0, &ext));

	/* Claim the second job while settling the first (with a chained job). */
	brooq_job_spec      chain   = {.size = sizeof(brooq_job_spec), .topic = "vg.chain", .payload = "{}"};
	brooq_settle_item   s       = {.size    = sizeof(brooq_settle_item),
				       .lease   = jobs[0]->lease,
				       .outcome = BROOQ_OUTCOME_DONE,
				       .chain   = &chain,
				       .n_chain = 1};
	brooq_settle_result settled = BROOQ_SETTLE_RESULT_INIT;
	o.settle                    = &s;
	o.n_settle                  = 1;
	o.settled                   = &settled;
	brooq_job **more;
	size_t      m;
	CHECK(brooq_claim(wc, &o, &more, &m));
	brooq_jobs_free(jobs, n);

	brooq_settle_item fail = {.size    = sizeof(brooq_settle_item),
				  .lease   = more[0]->lease,
				  .outcome = BROOQ_OUTCOME_FAIL,
				  .error   = "nope"};
	CHECK(brooq_settle(wc, &fail, 1, &settled));
	brooq_jobs_free(more, m);

	brooq_job_info *j;
	CHECK(brooq_job_get(wc, r[1].id, &j));
	brooq_job_info_free(j);
	CHECK(brooq_job_get(wc, r[0].id, &j));
	brooq_job_info_free(j);

	brooq_state st;
	bool        canceled;
	CHECK(brooq_cancel(ac, r[2].id, &st, &canceled));
	EXPECT(brooq_cancel(wc, r[2].id, &st, &canceled), BROOQ_EPERMISSION_DENIED);
	EXPECT(brooq_job_get(wc, 999999, &j), BROOQ_ENOT_FOUND);
	brooq_job_spec bad = {.size = sizeof(brooq_job_spec), .topic = "Bad Topic"};
	EXPECT(brooq_enqueue(wc, &bad, 1, r), BROOQ_EINVALID_ARGUMENT);

	brooq_topic_stats **ts;
	size_t              nt;
	CHECK(brooq_stats(wc, &ts, &nt));
	brooq_stats_free(ts, nt);

	worker_timeouts();

	/* A call that times out: its context is discarded, not leaked. */
	brooq_client     *dc;
	brooq_client_opts dopts = {
		.size = sizeof(brooq_client_opts), .url = argv[4], .token_file = argv[2], .timeout_ms = 200};
	CHECK(brooq_client_open(&dopts, &dc));
	brooq_err e = brooq_ping(dc, server, sizeof(server));
	if (e != BROOQ_ETIMEDOUT && e != BROOQ_ECONNECT)
		return 1;
	brooq_client_close(dc);

	brooq_client_close(ac);
	brooq_client_close(wc);
	puts("client_valgrind: ok");
	return 0;
}
