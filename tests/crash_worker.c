/* SPDX-License-Identifier: MIT */
/* crash_worker: a worker whose handler kills its own process, the crash loop of SPEC
 * invariant 18 (issue 26), for quarantine_test. It handles one topic with one thread;
 * each job it claims ends the process by SIGKILL, so no outcome is ever recorded and the
 * lease runs out. Usage: crash_worker URL TOKEN_FILE TOPIC. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <brooq/brooq.h>

/* What a segfaulting or OOM-killed handler does to its worker: nothing after it runs. */
static void
die(brooq_job_ctx *job, void *arg)
{
	(void) job;
	(void) arg;
	kill(getpid(), SIGKILL);
	pause();
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s URL TOKEN_FILE TOPIC\n", argv[0]);
		return 2;
	}
	brooq_client_opts co = {.size = sizeof(co), .url = argv[1], .token_file = argv[2]};
	brooq_worker_opts wo = {.size = sizeof(wo), .threads = 1, .wait_ms = 500};
	brooq_client     *c  = NULL;
	brooq_worker     *w  = NULL;
	brooq_err         err;
	if ((err = brooq_client_open(&co, &c)) != BROOQ_OK ||
	    (err = brooq_worker_new(c, &wo, &w)) != BROOQ_OK ||
	    (err = brooq_worker_handle(w, argv[3], die, NULL)) != BROOQ_OK ||
	    (err = brooq_worker_run(w)) != BROOQ_OK) {
		fprintf(stderr, "crash_worker: %s: %s\n", brooq_strerror(err), brooq_last_message());
		brooq_worker_free(w);
		brooq_client_close(c);
		return 1;
	}
	brooq_worker_free(w);
	brooq_client_close(c);
	return 0;
}
