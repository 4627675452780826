/* SPDX-License-Identifier: MIT */
/* Opening a libbrooq-client handle in a test (for tests that link the client library;
 * tutil.h stays free of it). */
#ifndef BRQ_TEST_TCLIENT_H
#define BRQ_TEST_TCLIENT_H

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

#endif
