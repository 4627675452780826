/* SPDX-License-Identifier: MIT */
/*
 * Failure paths reached through the fault seams (store's brq_db_fault_hook, server's
 * brq_server_msg_alloc), on a gateway server run inside the test process against
 * the harness PostgreSQL: each failure ends with a clear error to the caller and
 * nothing half-done in the database.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <sodium.h>

#include "auth.h"
#include "config/config.h"
#include "store/db.h"
#include "metrics/metrics.h"
#include "rpc/server.h"
#include "store/store.h"
#include "testdb.h"

static char       *dsn;
static PGconn     *db;
static char        dir[64];
static char        url[128];
static char        token[65];
static brq_config  cfg;
static brq_auth    auth;
static brq_store  *store;
static brq_server  srv;
static brq_arena   arena;
static const char *env[16][2];

static const char *
lookup(const char *name, void *arg)
{
	(void) arg;
	for (int i = 0; env[i][0] != NULL; i++)
		if (strcmp(env[i][0], name) == 0)
			return env[i][1];
	return NULL;
}

static void
setup(void)
{
	static char   tokfile[128];
	unsigned char raw[32];
	cr_assert(sodium_init() >= 0);
	dsn = brq_testdb_create(true);
	db  = brq_testdb_connect(dsn);
	snprintf(dir, sizeof(dir), "/tmp/brooq-fault.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(url, sizeof(url), "ipc://%s/gw.sock", dir);
	snprintf(tokfile, sizeof(tokfile), "%s/worker-token", dir);
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(token, sizeof(token), raw, sizeof(raw));
	int fd = open(tokfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, token, 64), 64);
	close(fd);
	const char *pairs[][2] = {
		{"BROOQ_DSN", dsn},           {"BROOQ_LISTEN", url},    {"BROOQ_WORKER_TOKEN_FILES", tokfile},
		{"BROOQ_HTTP_LISTEN", "off"}, {"BROOQ_POOL_SIZE", "1"}, {NULL, NULL}};
	memcpy(env, pairs, sizeof(pairs));
	brq_config_problems p = {0};
	cr_assert_eq(brq_config_load(&cfg, NULL, lookup, NULL, &p), 0, "%s", p.count ? p.lines[0] : "");
	brq_config_problems_fini(&p);
	brq_config_problems_init(&p);
	cr_assert_eq(brq_auth_init_config(&auth, &cfg, &p), 0, "%s", p.count ? p.lines[0] : "");
	brq_config_problems_fini(&p);
	cr_assert_eq(brq_metrics_init("test"), 0);
	cr_assert_eq(brq_store_new(&cfg, &store), 0);
	cr_assert_eq(brq_server_start(&srv, &cfg, &auth, store), 0);
	brq_arena_init(&arena);
}

static void
teardown(void)
{
	brq_db_fault_hook        = NULL;
	brq_server_msg_alloc     = nng_msg_alloc;
	brq_server_handback_seam = NULL;
	brq_server_stop(&srv);
	brq_store_free(store);
	brq_metrics_fini();
	brq_auth_fini(&auth);
	brq_config_fini(&cfg);
	brq_arena_fini(&arena);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	PQfinish(db);
	brq_testdb_drop(dsn);
}

TestSuite(fault, .init = setup, .fini = teardown, .timeout = 60);

/* One request over a fresh REQ socket; the reply decoded into rep (strings borrow
 * *keep, which the caller frees). */
static brq_status
call(brq_request *req, brq_reply *rep, void **keep)
{
	brq_buf    b;
	brq_limits lim;
	nng_socket s;
	nng_msg   *m = NULL;
	char       err[256];
	req->token = (brq_str) {token, 64};
	brq_limits_default(&lim);
	brq_buf_init(&b, 0);
	cr_assert_eq(brq_request_encode(&b, req), 0);
	cr_assert_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 10000);
	cr_assert_eq(nng_dial(s, url, NULL, 0), 0);
	cr_assert_eq(nng_msg_alloc(&m, 0), 0);
	cr_assert_eq(nng_msg_append(m, b.data, b.len), 0);
	brq_buf_fini(&b);
	cr_assert_eq(nng_sendmsg(s, m, 0), 0);
	cr_assert_eq(nng_recvmsg(s, &m, 0), 0, "no reply to %s", brq_op_name(req->op));
	size_t n = nng_msg_len(m);
	*keep    = malloc(n);
	memcpy(*keep, nng_msg_body(m), n);
	nng_msg_free(m);
	nng_close(s);
	cr_assert_eq(brq_reply_decode(rep, req->op, *keep, n, &lim, &arena, err, sizeof(err)), BRQ_ST_OK,
		     "%s", err);
	return rep->code;
}

static uint32_t
claim(const char *topic, uint32_t n, brq_settle_item *settle, uint32_t n_settle, brq_lease_ref *out,
      brq_status *code, char *msg, size_t msg_cap)
{
	brq_str     t   = brq_str_c(topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .claim = {.worker     = brq_str_c("fault"),
				     .topics     = &t,
				     .n_topics   = 1,
				     .n          = n,
				     .has_settle = settle != NULL,
				     .settle     = settle,
				     .n_settle   = n_settle}};
	brq_reply   rep;
	void       *keep;
	*code = call(&req, &rep, &keep);
	snprintf(msg, msg_cap, "%.*s", (int) rep.msg.len, rep.msg.ptr);
	uint32_t got = *code == BRQ_ST_OK ? rep.claim.n_jobs : 0;
	for (uint32_t i = 0; i < got; i++) {
		out[i].id = rep.claim.jobs[i].id;
		memcpy(out[i].lease, rep.claim.jobs[i].lease, BRQ_LEASE_LEN);
	}
	free(keep);
	return got;
}

static const char *fail_what;

static bool
fail_on(const char *what)
{
	return fail_what != NULL && strcmp(what, fail_what) == 0;
}

Test(fault, a_commit_failure_during_claim_and_settle_settles_nothing_and_claims_nothing)
{
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('f'), ('f')");
	brq_lease_ref held[2];
	brq_status    code;
	char          msg[256];
	cr_assert_eq(claim("f", 1, NULL, 0, held, &code, msg, sizeof(msg)), 1);

	brq_settle_item done = {.id = held[0].id, .outcome = BRQ_OUTCOME_DONE};
	memcpy(done.lease, held[0].lease, BRQ_LEASE_LEN);
	fail_what         = "COMMIT";
	brq_db_fault_hook = fail_on;
	brq_lease_ref got[1];
	cr_assert_eq(claim("f", 1, &done, 1, got, &code, msg, sizeof(msg)), 0);
	brq_db_fault_hook = NULL;
	cr_assert_eq(code, BRQ_ST_UNAVAILABLE, "code %s: %s", brq_status_name(code), msg);
	cr_assert(strstr(msg, "claim:") != NULL && strstr(msg, "retry") != NULL, "%s", msg);

	/* Nothing half-done: the held job is still held (not settled), the other one
	 * was not claimed. */
	cr_assert_eq(
		brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'processing' AND attempts = 1"),
		1);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'pending' AND attempts = 0"),
		     1);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'done'"), 0);

	/* And the same request works once the database commits again (the failed
	 * connection is re-made after its backoff: the client retries). */
	uint32_t n = 0;
	for (int i = 0; i < 50 && (n = claim("f", 1, &done, 1, got, &code, msg, sizeof(msg))) == 0; i++)
		usleep(100 * 1000);
	cr_assert_eq(n, 1, "%s", msg);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'done'"), 1);
}

static int
no_memory(nng_msg **m, size_t size)
{
	(void) m;
	(void) size;
	return NNG_ENOMEM;
}

Test(fault, a_reply_that_cannot_be_allocated_answers_internal_and_gives_the_leases_back)
{
	brq_testdb_exec(db, "INSERT INTO job (topic) VALUES ('r'), ('r'), ('r')");
	brq_lease_ref got[3];
	brq_status    code;
	char          msg[256];
	brq_server_msg_alloc = no_memory;
	cr_assert_eq(claim("r", 3, NULL, 0, got, &code, msg, sizeof(msg)), 0);
	brq_server_msg_alloc = nng_msg_alloc;
	cr_assert_eq(code, BRQ_ST_INTERNAL, "code %s: %s", brq_status_name(code), msg);
	cr_assert(strstr(msg, "out of memory") != NULL, "%s", msg);
	/* The leases went back at once, attempts returned: claimable now, not after
	 * the two-minute lease. */
	cr_assert_eq(brq_testdb_int(db,
				    "SELECT count(*) FROM job WHERE state = 'pending' AND attempts = 0"
				    " AND locked_by IS NULL"),
		     3);
	cr_assert_eq(claim("r", 3, NULL, 0, got, &code, msg, sizeof(msg)), 3, "%s", msg);
}

/* The hook deletes the keyed row between the insert (which found the key taken) and
 * the lookup of its id: the row-gone path. */
static bool
delete_keyed_row(const char *what)
{
	if (strcmp(what, "brq_enqueue_lookup") == 0)
		brq_testdb_exec(db, "DELETE FROM job WHERE idempotency_key = 'k1'");
	return false;
}

Test(fault, an_enqueue_whose_key_conflicts_with_a_row_that_goes_away_writes_nothing)
{
	brq_testdb_exec(db, "INSERT INTO job (topic, idempotency_key, state) VALUES ('e', 'k1', 'done')");
	brq_job_spec jobs[2] = {
		{.topic = brq_str_c("e"), .payload = brq_str_c("{}"), .key = brq_str_c("k1")},
		{.topic = brq_str_c("e"), .payload = brq_str_c("{\"second\":true}")},
	};
	brq_request req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = jobs, .n_jobs = 2}};
	brq_reply   rep;
	void       *keep;
	brq_db_fault_hook = delete_keyed_row;
	brq_status code   = call(&req, &rep, &keep);
	brq_db_fault_hook = NULL;
	cr_assert_eq(code, BRQ_ST_UNAVAILABLE, "code %s: %.*s", brq_status_name(code), (int) rep.msg.len,
		     rep.msg.ptr);
	cr_assert(memmem(rep.msg.ptr, rep.msg.len, "went away", 9) != NULL, "%.*s", (int) rep.msg.len,
		  rep.msg.ptr);
	free(keep);
	/* The batch is atomic: the job without a key was not inserted either. */
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 0);

	/* Retried, it goes through: the key is free now. */
	code = call(&req, &rep, &keep);
	cr_assert_eq(code, BRQ_ST_OK);
	cr_assert(rep.enqueue.results[0].created && rep.enqueue.results[1].created);
	free(keep);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job"), 2);
}

/* ---- a taken long-poll whose callback ran before its taker decided ---------------------- */

typedef struct long_poll {
	pthread_t     th;
	const char   *topic;
	uint32_t      wait_ms;
	brq_status    code;
	uint32_t      n_jobs;
	brq_lease_ref job;
} long_poll;

static void *
long_poll_main(void *arg)
{
	long_poll  *p   = arg;
	brq_str     t   = brq_str_c(p->topic);
	brq_request req = {.op    = BRQ_OP_CLAIM,
			   .claim = {.worker      = brq_str_c("fault"),
				     .topics      = &t,
				     .n_topics    = 1,
				     .n           = 1,
				     .has_wait_ms = true,
				     .wait_ms     = p->wait_ms}};
	brq_reply   rep;
	void       *keep;
	p->code   = call(&req, &rep, &keep);
	p->n_jobs = p->code == BRQ_ST_OK ? rep.claim.n_jobs : 0;
	if (p->n_jobs > 0) {
		p->job.id = rep.claim.jobs[0].id;
		memcpy(p->job.lease, rep.claim.jobs[0].lease, BRQ_LEASE_LEN);
	}
	free(keep);
	return NULL;
}

/* Waits (at most 5 s) until a claim is parked in the server. */
static void
wait_parked(void)
{
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&srv.waiters.mtx);
		bool parked = srv.waiters.parked.head != NULL;
		pthread_mutex_unlock(&srv.waiters.mtx);
		if (parked)
			return;
		usleep(10 * 1000);
	}
	cr_assert_fail("the long-poll never parked");
}

static atomic_int seam_calls, seam_saw_callback_first;

/* Holds the taker until the claim's callback has run and left the hand-back to it
 * (BRQ_STEAL_WAITING), at most 5 s: the path where the taker performs it. */
static void
callback_first(const brq_work *w)
{
	atomic_fetch_add(&seam_calls, 1);
	for (int i = 0; i < 5000; i++) {
		if (atomic_load(&w->steal) == BRQ_STEAL_WAITING) {
			atomic_fetch_add(&seam_saw_callback_first, 1);
			return;
		}
		usleep(1000);
	}
}

/* Parks p's long-poll, enqueues one job to its topic with the taker held until the
 * claim's callback has run (the taker hands it back), waits for p's answer; returns
 * the job's id. */
static uint64_t
take_after_callback(long_poll *p)
{
	atomic_store(&seam_calls, 0);
	atomic_store(&seam_saw_callback_first, 0);
	brq_server_handback_seam = callback_first;
	pthread_create(&p->th, NULL, long_poll_main, p);
	wait_parked();
	brq_job_spec job = {.topic = brq_str_c(p->topic), .payload = brq_str_c("{}")};
	brq_request  req = {.op = BRQ_OP_ENQUEUE, .enqueue = {.jobs = &job, .n_jobs = 1}};
	brq_reply    rep;
	void        *keep;
	cr_assert_eq(call(&req, &rep, &keep), BRQ_ST_OK);
	uint64_t id = rep.enqueue.results[0].id;
	free(keep);
	pthread_join(p->th, NULL);
	brq_server_handback_seam = NULL;
	cr_assert_eq(atomic_load(&seam_calls), 1, "the enqueue took the parked claim");
	cr_assert_eq(atomic_load(&seam_saw_callback_first), 1, "the callback ran before the taker decided");
	cr_assert_eq(p->code, BRQ_ST_OK, "%s", brq_status_name(p->code));
	return id;
}

Test(fault, a_taken_long_poll_whose_callback_ran_first_gets_its_job_from_the_taker)
{
	long_poll p  = {.topic = "handback", .wait_ms = 5000};
	uint64_t  id = take_after_callback(&p);
	cr_assert_eq(p.n_jobs, 1, "the long-poll got the job, not an empty answer at its deadline");
	cr_assert_eq(p.job.id, id);
	/* Leased in the enqueue's own transaction, once, and the lease works. */
	char sql[160];
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM job WHERE id = %llu AND state = 'processing' AND attempts = 1"
		 " AND created_at = claimed_at",
		 (unsigned long long) id);
	cr_assert_eq(brq_testdb_int(db, sql), 1);
	brq_settle_item done = {.id = p.job.id, .outcome = BRQ_OUTCOME_DONE};
	memcpy(done.lease, p.job.lease, BRQ_LEASE_LEN);
	brq_lease_ref none[1];
	brq_status    code;
	char          msg[256];
	cr_assert_eq(claim("handback", 1, &done, 1, none, &code, msg, sizeof(msg)), 0);
	cr_assert_eq(code, BRQ_ST_OK, "%s", msg);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'done'"), 1);
}

Test(fault, a_taken_long_poll_whose_callback_ran_first_and_got_nothing_waits_again)
{
	/* Paused: the claim made for it in the enqueue's transaction gets nothing, so the
	 * taker sends it round again; it parks until its deadline and answers empty. */
	brq_testdb_exec(db, "INSERT INTO topic_policy (topic, paused) VALUES ('held', true)");
	long_poll p = {.topic = "held", .wait_ms = 1500};
	take_after_callback(&p);
	cr_assert_eq(p.n_jobs, 0);
	cr_assert_eq(brq_testdb_int(db, "SELECT count(*) FROM job WHERE state = 'pending' AND attempts = 0"),
		     1);
}
