/* SPDX-License-Identifier: MIT */
/* example-worker: a brooq worker for the demo.* topics, short enough to read in a minute. */
#include <brooq/brooq.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static brooq_worker *worker;

/* brooq_worker_stop is async-signal-safe: SIGTERM/SIGINT start a graceful stop. */
static void
on_signal(int sig)
{
	(void) sig;
	brooq_worker_stop(worker);
}

/* demo.hello: print the payload; done, with a result (brooqctl job shows it). */
static void
hello(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	size_t      len;
	char        result[64];
	const char *payload = brooq_job_payload(job, &len);
	printf("job=%" PRIu64 " topic=demo.hello payload=%.*s\n", brooq_job_id(job), (int) len, payload);
	snprintf(result, sizeof(result), "{\"printed_bytes\":%zu}", len);
	brooq_job_done_result(job, result, 0);
}

/* demo.flaky: fail on attempts 1 and 2, done on the 3rd. */
static void
flaky(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	uint32_t attempt = brooq_job_attempts(job);
	if (attempt < 3) {
		brooq_job_fail(job, attempt == 1 ? "flaky: first try fails" : "flaky: second try fails");
		printf("job=%" PRIu64 " topic=demo.flaky attempt=%" PRIu32 " outcome=fail\n",
		       brooq_job_id(job), attempt);
		return;
	}
	printf("job=%" PRIu64 " topic=demo.flaky attempt=%" PRIu32 " outcome=done\n", brooq_job_id(job),
	       attempt);
}

/* demo.slow: 30 s of "work" in 100 ms steps, giving up as soon as the job is canceled
 * (an operator's cancel reaches us through the next heartbeat) or its attempt timeout
 * passes (the gateway's BROOQ_ATTEMPT_TIMEOUT, per topic attempt_timeout): the reason
 * says which. */
static void
slow(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	struct timespec step = {0, 100 * 1000 * 1000};
	int             i    = 0;
	printf("job=%" PRIu64 " topic=demo.slow started\n", brooq_job_id(job));
	fflush(stdout);
	for (; i < 300 && !brooq_job_canceled(job); i++)
		nanosleep(&step, NULL);
	printf("job=%" PRIu64 " topic=demo.slow %s after %d ms reason=%s\n", brooq_job_id(job),
	       i < 300 ? "canceled" : "done", i * 100,
	       brooq_cancel_reason_name(brooq_job_cancel_reason(job)));
}

/* demo.chain: done, with one demo.hello job enqueued in the same transaction. */
static void
chain(brooq_job_ctx *job, void *arg)
{
	(void) arg;
	char payload[64];
	snprintf(payload, sizeof(payload), "{\"parent\":%" PRIu64 "}", brooq_job_id(job));
	brooq_job_spec next = {.size = sizeof(brooq_job_spec), .topic = "demo.hello", .payload = payload};
	brooq_job_done_chain(job, &next, 1);
	printf("job=%" PRIu64 " topic=demo.chain chained=demo.hello\n", brooq_job_id(job));
}

static int
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--url URL] [--token-file FILE] [--threads N]\n"
		"  (defaults: $BROOQ_URL, else ipc:///run/brooq/gateway.sock; $BROOQ_TOKEN_FILE; 4)\n",
		prog);
	return 2;
}

int
main(int argc, char **argv)
{
	brooq_client_opts co = {.size = sizeof(brooq_client_opts)};
	brooq_worker_opts wo = {.size = sizeof(brooq_worker_opts)};
	brooq_client     *c;
	brooq_err         err;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
			co.url = argv[++i];
		else if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc)
			co.token_file = argv[++i];
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			wo.threads = atoi(argv[++i]);
		else
			return usage(argv[0]);
	}
	/* Lines from several handler threads: one line each, flushed at once. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	if ((err = brooq_client_open(&co, &c)) != BROOQ_OK) {
		fprintf(stderr, "example-worker: %s: %s\n", brooq_strerror(err), brooq_last_message());
		return 1;
	}
	if ((err = brooq_worker_new(c, &wo, &worker)) != BROOQ_OK ||
	    (err = brooq_worker_handle(worker, "demo.hello", hello, NULL)) != BROOQ_OK ||
	    (err = brooq_worker_handle(worker, "demo.flaky", flaky, NULL)) != BROOQ_OK ||
	    (err = brooq_worker_handle(worker, "demo.slow", slow, NULL)) != BROOQ_OK ||
	    (err = brooq_worker_handle(worker, "demo.chain", chain, NULL)) != BROOQ_OK) {
		fprintf(stderr, "example-worker: %s: %s\n", brooq_strerror(err), brooq_last_message());
		brooq_worker_free(worker);
		brooq_client_close(c);
		return 1;
	}

	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	err = brooq_worker_run(worker); /* until SIGTERM/SIGINT */

	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(worker, &st);
	printf("stopped: claimed=%" PRIu64 " settled=%" PRIu64 " lease_lost=%" PRIu64 " hung=%" PRIu64
	       " errors=%" PRIu64 "\n",
	       st.claimed, st.settled, st.lease_lost, st.hung, st.errors);
	brooq_worker_free(worker);
	brooq_client_close(c);
	return err == BROOQ_OK ? 0 : 1;
}
