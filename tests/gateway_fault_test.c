/* SPDX-License-Identifier: MIT */
/*
 * Failure paths reached through the fault seams (store's brq_db_fault_hook, server's
 * brq_server_msg_alloc), on a gateway server run inside the test process against
 * the harness PostgreSQL: each failure ends with a clear error to the caller and
 * nothing half-done in the database.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <sodium.h>

#include "auth.h"
#include "config.h"
#include "db.h"
#include "metrics.h"
#include "server.h"
#include "store.h"
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
	brq_db_fault_hook    = NULL;
	brq_server_msg_alloc = nng_msg_alloc;
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
