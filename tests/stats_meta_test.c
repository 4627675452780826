/* SPDX-License-Identifier: MIT */
/* What a stats reply says about its counts reaches the operator (issue 28.3): the
 * terminal counts' age and whether they are an estimate, through brooq_stats_ex and
 * brooqctl stats (table and JSON). A real gateway estimates only past its monitor's
 * budget (millions of rows: observability_test covers that side), so the gateway here is
 * a stand-in that answers every stats request with the reply the test chose. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "proto.h"
#include "tclient.h"
#include "testdb.h"

typedef struct fakegw {
	nng_socket  rep;
	pthread_t   th;
	char        dir[64], url[128], token_file[128];
	atomic_bool estimated; /* what the next replies say */
	atomic_int  answered;
} fakegw;

static fakegw g;

/* Answers each stats request: one topic "t" (1 pending, 30 done, 4 dead, 2 canceled),
 * terminal_age_ms 1234, terminal_estimated as g.estimated says. */
static void *
fake_main(void *arg)
{
	(void) arg;
	brq_limits lim;
	char       err[256];
	brq_limits_default(&lim);
	for (;;) {
		nng_msg *m;
		if (nng_recvmsg(g.rep, &m, 0) != 0)
			return NULL; /* closed */
		brq_request req;
		brq_buf     b;
		brq_buf_init(&b, 0);
		brq_topic_stats t           = {.topic = {.ptr = "t", .len = 1}};
		t.count[BRQ_STATE_PENDING]  = 1;
		t.count[BRQ_STATE_DONE]     = 30;
		t.count[BRQ_STATE_DEAD]     = 4;
		t.count[BRQ_STATE_CANCELED] = 2;
		brq_reply rep               = {.op = BRQ_OP_STATS, .code = BRQ_ST_OK};
		rep.stats                   = (brq_stats_rep) {.topics             = &t,
							       .n_topics           = 1,
							       .has_terminal_age   = true,
							       .terminal_age_ms    = 1234,
							       .terminal_estimated = atomic_load(&g.estimated)};
		int rv                      = 1;
		if (brq_request_decode_envelope(&req, nng_msg_body(m), nng_msg_len(m), &lim, err,
						sizeof(err)) == BRQ_ST_OK &&
		    req.op == BRQ_OP_STATS) {
			rep.rid = req.rid;
			rv      = brq_reply_encode(&b, &rep);
		}
		nng_msg_free(m);
		if (rv == 0 && nng_send(g.rep, b.data, b.len, 0) == 0)
			atomic_fetch_add(&g.answered, 1);
		brq_buf_fini(&b);
	}
}

static void
setup(void)
{
	memset(&g, 0, sizeof(g));
	snprintf(g.dir, sizeof(g.dir), "/tmp/brq-statsmeta.XXXXXX");
	cr_assert_not_null(mkdtemp(g.dir));
	snprintf(g.url, sizeof(g.url), "ipc://%s/gw.sock", g.dir);
	snprintf(g.token_file, sizeof(g.token_file), "%s/token", g.dir);
	FILE *f = fopen(g.token_file, "w");
	cr_assert_not_null(f);
	fputs("a-token-the-stand-in-does-not-check\n", f);
	fclose(f);
	cr_assert_eq(nng_rep0_open(&g.rep), 0);
	cr_assert_eq(nng_listen(g.rep, g.url, NULL, 0), 0);
	cr_assert_eq(pthread_create(&g.th, NULL, fake_main, NULL), 0);
	unsetenv("BROOQ_URL");
	unsetenv("BROOQ_TOKEN_FILE");
}

static void
teardown(void)
{
	nng_close(g.rep);
	pthread_join(g.th, NULL);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g.dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(stats_meta, .init = setup, .fini = teardown, .timeout = 60);

Test(stats_meta, brooq_stats_ex_says_how_old_the_counts_are_and_whether_they_are_estimates)
{
	brooq_client       *c = brq_t_client_open(g.url, g.token_file, 5000);
	brooq_topic_stats **s;
	size_t              n;
	for (int est = 0; est < 2; est++) {
		atomic_store(&g.estimated, est == 1);
		brooq_stats_meta m   = BROOQ_STATS_META_INIT;
		m.terminal_estimated = est == 0; /* written over */
		BRQ_OK(brooq_stats_ex(c, &s, &n, &m));
		cr_assert_eq(n, 1);
		cr_assert_str_eq(s[0]->topic, "t");
		cr_assert_eq(s[0]->count[BROOQ_DONE], 30);
		cr_assert_eq(m.size, sizeof(m), "the size field is the caller's");
		cr_assert_eq(m.terminal_age_ms, 1234);
		cr_assert_eq(m.terminal_estimated, est == 1);
		brooq_stats_free(s, n);
	}
	/* The older calls still answer; a meta without its size is refused before sending. */
	uint64_t age = 0;
	BRQ_OK(brooq_stats_aged(c, &s, &n, &age));
	cr_assert_eq(age, 1234);
	brooq_stats_free(s, n);
	BRQ_OK(brooq_stats_ex(c, &s, &n, NULL));
	brooq_stats_free(s, n);
	int              before = atomic_load(&g.answered);
	brooq_stats_meta bad    = {0};
	cr_assert_eq(brooq_stats_ex(c, &s, &n, &bad), BROOQ_EINVAL);
	cr_assert_not_null(strstr(brooq_last_message(), "BROOQ_STATS_META_INIT"), "%s", brooq_last_message());
	cr_assert_eq(atomic_load(&g.answered), before, "a refused call sent nothing");
	brooq_client_close(c);
}

/* brooqctl's output of `stats` (stdout and stderr), with JSON or not. */
static char *
ctl_stats(bool json)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s --url '%s' --token-file '%s' %s stats 2>&1",
		 brq_testdb_bin("brooqctl"), g.url, g.token_file, json ? "--json" : "");
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char  *out = calloc(1, 8192);
	size_t len = fread(out, 1, 8191, p);
	out[len]   = '\0';
	cr_assert_eq(pclose(p), 0, "%s", out);
	return out;
}

Test(stats_meta, brooqctl_stats_marks_estimated_counts_in_the_table_and_the_json)
{
	atomic_store(&g.estimated, false);
	char *out = ctl_stats(true);
	cr_assert_not_null(strstr(out, "{\"terminal_age_ms\":1234,\"topics\":["), "%s", out);
	cr_assert_null(strstr(out, "terminal_estimated"), "absent when exact, as in the reply: %s", out);
	free(out);
	out = ctl_stats(false);
	cr_assert_null(strstr(out, "~"), "%s", out);
	free(out);

	atomic_store(&g.estimated, true);
	out = ctl_stats(true);
	cr_assert_not_null(strstr(out, "{\"terminal_age_ms\":1234,\"terminal_estimated\":true,\"topics\":["),
			   "%s", out);
	free(out);
	out = ctl_stats(false);
	/* done, dead and canceled are marked; pending is exact and is not. */
	cr_assert_not_null(strstr(out, "~       30"), "%s", out);
	cr_assert_not_null(strstr(out, "~        4"), "%s", out);
	cr_assert_not_null(strstr(out, "~        2"), "%s", out);
	cr_assert_null(strstr(out, "~        1"), "%s", out);
	cr_assert_not_null(strstr(out, "~ estimated from a sample of the table"), "%s", out);
	free(out);
}
