/* SPDX-License-Identifier: MIT */
/* Opening a libbrooq-client handle in a test (for tests that link the client library;
 * tutil.h stays free of it). */
#ifndef BRQ_TEST_TCLIENT_H
#define BRQ_TEST_TCLIENT_H

#include <pthread.h>
#include <stdatomic.h>

#include <criterion/criterion.h>

#include <brooq/brooq.h>

#include "tutil.h"

/* A client of the gateway at url with the token in token_file and a per-call timeout
 * of timeout_ms; fails the current test (showing why) when it cannot open. The caller
 * closes it. */
static inline brooq_client *
brq_t_client_open(const char *url, const char *token_file, int timeout_ms)
{
	brooq_client_opts o = {.size       = sizeof(brooq_client_opts),
			       .url        = url,
			       .token_file = token_file,
			       .timeout_ms = timeout_ms};
	brooq_client     *c = NULL;
	BRQ_OK(brooq_client_open(&o, &c));
	return c;
}

/* A worker running brooq_worker_run on a thread of its own. */
typedef struct brq_t_runner {
	brooq_worker *w; /* borrowed: the caller frees it after brq_t_runner_stop */
	pthread_t     th;
	brooq_err     rc;       /* brooq_worker_run's result, once it has returned */
	atomic_bool   returned; /* brooq_worker_run has returned */
} brq_t_runner;

static inline void *
brq_t_runner_main(void *arg)
{
	brq_t_runner *r = arg;
	r->rc           = brooq_worker_run(r->w);
	atomic_store(&r->returned, true);
	return NULL;
}

/* Runs w on a new thread. */
static inline void
brq_t_runner_start(brq_t_runner *r, brooq_worker *w)
{
	r->w  = w;
	r->rc = BROOQ_OK;
	atomic_init(&r->returned, false);
	cr_assert_eq(pthread_create(&r->th, NULL, brq_t_runner_main, r), 0);
}

/* brooq_worker_stop, then waits for brooq_worker_run to return; asserts it returned OK. */
static inline void
brq_t_runner_stop(brq_t_runner *r)
{
	brooq_worker_stop(r->w);
	pthread_join(r->th, NULL);
	cr_assert_eq(r->rc, BROOQ_OK, "worker_run: %s", brooq_strerror(r->rc));
}

#endif
