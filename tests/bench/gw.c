// SPDX-License-Identifier: MIT
// The gateway scenarios: enqueue, drain by the worker runtime, enqueue->start latency, ping, long-polls.
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <brooq/brooq.h>

#define TOPIC_ENQ   "bench.enq"
#define TOPIC_DRAIN "bench.drain"
#define TOPIC_LAT   "bench.lat"
#define TOPIC_IDLE  "bench.idle"

#define CLAIMS_OK  "brooq_rpc_requests_total{op=\"claim\",code=\"ok\"}"
#define SETTLES_OK "brooq_rpc_requests_total{op=\"settle\",code=\"ok\"}"
// Settles that reached their row by the address the claim returned (gateway/store/store_hint.h).
#define BY_ADDRESS "brooq_settle_lookups_total{by=\"address\"}"
#define AUTOVACUUM_RUNS                                                                          \
	"SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables" \
	" WHERE relname = 'job'"
#define AUTOVACUUM_BUSY                                                                  \
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'" \
	" AND query ~ 'public\\.job( |$)'"

static brooq_client *
client_open(const bench_opts *o)
{
	brooq_client     *c  = NULL;
	brooq_client_opts co = {.size       = sizeof(brooq_client_opts),
				.url        = o->url,
				.token_file = o->token_file,
				.timeout_ms = 60000};
	brooq_err         e  = brooq_client_open(&co, &c);
	if (e != BROOQ_OK)
		bench_die("client open %s: %s: %s", o->url, brooq_strerror(e), brooq_last_message());
	return c;
}

// A start line for threads: every caller is connected before the clock starts.
typedef struct gate {
	pthread_mutex_t mtx;
	pthread_cond_t  cv;
	int             waiting, total;
	bool            open;
	int64_t         start_ns, end_ns;
} gate;

static void
gate_init(gate *g, int total)
{
	pthread_mutex_init(&g->mtx, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->waiting = 0;
	g->total   = total;
	g->open    = false;
}

// Waits until every thread has arrived; the last one sets the window's start.
static void
gate_wait(gate *g, double seconds)
{
	pthread_mutex_lock(&g->mtx);
	if (++g->waiting == g->total) {
		g->start_ns = bench_now_ns();
		g->end_ns   = g->start_ns + (int64_t) (seconds * 1e9);
		g->open     = true;
		pthread_cond_broadcast(&g->cv);
	}
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mtx);
	pthread_mutex_unlock(&g->mtx);
}

static void
report_latency(const bench_opts *o, const char *scenario, const char *variant, const char *what,
	       bench_samples *s)
{
	char p50[64], p99[64], max[64];
	bench_sort(s->v, s->n);
	snprintf(p50, sizeof(p50), "%s_p50", what);
	snprintf(p99, sizeof(p99), "%s_p99", what);
	snprintf(max, sizeof(max), "%s_max", what);
	bench_result(o, scenario, variant, p50, "us", (double) bench_pct(s->v, s->n, 0.50) / 1e3);
	bench_result(o, scenario, variant, p99, "us", (double) bench_pct(s->v, s->n, 0.99) / 1e3);
	bench_result(o, scenario, variant, max, "us", s->n ? (double) s->v[s->n - 1] / 1e3 : 0);
}

// ---- enqueue ---------------------------------------------------------------------------

typedef struct enq_thread {
	const bench_opts *o;
	gate             *g;
	pthread_t         th;
	brooq_client     *c;
	long              jobs; // enqueued inside the window
	int64_t           last_ns;
	bench_samples     rpc; // per-call latency
} enq_thread;

static void *
enq_main(void *arg)
{
	enq_thread           *t     = arg;
	int                   b     = t->o->batch;
	brooq_job_spec       *specs = calloc((size_t) b, sizeof(*specs));
	brooq_enqueue_result *res   = calloc((size_t) b, sizeof(*res));
	char(*pay)[32]              = calloc((size_t) b, sizeof(*pay));
	if (specs == NULL || res == NULL || pay == NULL)
		bench_die("out of memory");
	for (int i = 0; i < b; i++)
		res[i] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	gate_wait(t->g, t->o->seconds);
	long k = 0;
	for (;;) {
		int64_t t0 = bench_now_ns();
		if (t0 >= t->g->end_ns)
			break;
		for (int i = 0; i < b; i++) {
			snprintf(pay[i], sizeof(pay[i]), "{\"i\":%ld}", k++);
			specs[i] = (brooq_job_spec) {
				.size = sizeof(brooq_job_spec), .topic = TOPIC_ENQ, .payload = pay[i]};
		}
		brooq_err e = brooq_enqueue(t->c, specs, (size_t) b, res);
		if (e != BROOQ_OK)
			bench_die("enqueue: %s: %s", brooq_strerror(e), brooq_last_message());
		int64_t t1 = bench_now_ns();
		bench_samples_add(&t->rpc, t1 - t0);
		t->jobs += b;
		t->last_ns = t1;
	}
	free(specs);
	free(res);
	free(pay);
	return NULL;
}

int
bench_gw_enqueue(const bench_opts *o)
{
	PGconn *db = bench_db_connect(o->dsn);
	bench_db_reset(db);
	int         n = o->producers;
	enq_thread *t = calloc((size_t) n, sizeof(*t));
	gate        g;
	bench_cpu   cpu[2];
	gate_init(&g, n);
	for (int i = 0; i < n; i++)
		t[i] = (enq_thread) {.o = o, .g = &g, .c = client_open(o)};
	bench_cpu_now(&cpu[0]);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i].th, NULL, enq_main, &t[i]) != 0)
			bench_die("pthread_create");
	long          jobs = 0;
	int64_t       end  = 0;
	bench_samples rpc  = {0};
	for (int i = 0; i < n; i++) {
		pthread_join(t[i].th, NULL);
		jobs += t[i].jobs;
		end = t[i].last_ns > end ? t[i].last_ns : end;
		bench_samples_merge(&rpc, &t[i].rpc);
		bench_samples_free(&t[i].rpc);
	}
	bench_cpu_now(&cpu[1]);
	for (int i = 0; i < n; i++)
		brooq_client_close(t[i].c);
	char sql[128];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM job WHERE topic = '%s'", TOPIC_ENQ);
	if (bench_db_int(db, sql) != jobs)
		bench_die("enqueue: the table does not hold the %ld jobs enqueued", jobs);
	char scen[64];
	snprintf(scen, sizeof(scen), "enqueue_b%d_p%d", o->batch, n);
	bench_result(o, scen, "gateway", "rate", "jobs/s",
		     (double) jobs / ((double) (end - g.start_ns) / 1e9));
	bench_sort(rpc.v, rpc.n);
	bench_result(o, scen, "gateway", "call_p50", "us", (double) bench_pct(rpc.v, rpc.n, 0.5) / 1e3);
	bench_cpu_report(o, scen, "gateway", &cpu[0], &cpu[1], (double) jobs);
	bench_samples_free(&rpc);
	free(t);
	PQfinish(db);
	return 0;
}

// ---- drain ------------------------------------------------------------------------------

double
bench_gw_drain_once(const bench_opts *o, PGconn *db, const char *topic, long jobs, bench_cpu cpu[2])
{
	bench_workers w;
	bench_cpu_now(&cpu[0]);
	bench_workers_start(&w, o, topic, o->procs, o->threads, 0);
	int64_t give_up = bench_now_ns() + 600 * 1000000000LL;
	while (atomic_load(&w.shm->handled) < (uint64_t) jobs) {
		if (bench_now_ns() > give_up)
			bench_die("drain: only %llu of %ld jobs handled after 600 s",
				  (unsigned long long) atomic_load(&w.shm->handled), jobs);
		// 1 ms: the end is known to 0.05 % of a 2 s drain; polling at 200 us woke this
		// process 5,000 times a second, on the cores the drain was measured on.
		bench_sleep_ns(1000 * 1000);
	}
	// Every handler has run; the last settles may still be on their way.
	bench_db_wait_idle(db, topic);
	int64_t end   = bench_now_ns();
	int64_t start = atomic_load(&w.shm->first_ns);
	bench_workers_stop(&w);
	bench_cpu_now(&cpu[1]);
	// Checked after the clock: until this revision the check's reads of every row of the
	// topic were inside it, ~1 s of a 100k drain at 10M rows (issue 30.1).
	bench_db_check_drained(db, topic, jobs, o->discard);
	return (double) jobs / ((double) (end - start) / 1e9);
}

// Opens a transaction whose snapshot holds back vacuum (and index cleanup) until
// closed: what a forgotten `BEGIN` in psql or a long report does.
static PGconn *
hold_xmin(const bench_opts *o)
{
	PGconn *h = bench_db_connect(o->dsn);
	bench_db_exec(h, "BEGIN ISOLATION LEVEL REPEATABLE READ");
	bench_db_exec(h, "SELECT count(*) FROM job WHERE id = 1");
	return h;
}

int
bench_gw_drain(const bench_opts *o)
{
	PGconn *db = bench_db_connect(o->dsn);
	if (o->terminal > 0) {
		// Growth runs: keep the terminal rows made once by `terminal`, drop the rest.
		bench_db_keep(db);
	} else {
		bench_db_reset(db);
	}
	const char *topic = o->discard ? BENCH_TOPIC_DISCARD : TOPIC_DRAIN;
	bench_db_fill(db, topic, o->jobs);
	PGconn   *h = o->hold_xmin ? hold_xmin(o) : NULL;
	bench_cpu cpu[2];
	double    claims0 = bench_metric(CLAIMS_OK), settles0 = bench_metric(SETTLES_OK);
	double    addr0 = bench_metric(BY_ADDRESS);
	int64_t   av0 = bench_db_int(db, AUTOVACUUM_RUNS), av_busy0 = bench_db_int(db, AUTOVACUUM_BUSY);
	double    rate    = bench_gw_drain_once(o, db, topic, o->jobs, cpu);
	double    claims1 = bench_metric(CLAIMS_OK), settles1 = bench_metric(SETTLES_OK);
	double    addr1 = bench_metric(BY_ADDRESS);
	int64_t   av1 = bench_db_int(db, AUTOVACUUM_RUNS), av_busy1 = bench_db_int(db, AUTOVACUUM_BUSY);
	if (h != NULL)
		PQfinish(h);
	char scen[64];
	snprintf(scen, sizeof(scen), "drain_c%d%s", o->procs * o->threads, o->discard ? "_discard" : "");
	bench_result(o, scen, "gateway", "rate", "jobs/s", rate);
	bench_cpu_report(o, scen, "gateway", &cpu[0], &cpu[1], (double) o->jobs);
	// Autovacuum's work on job that ended during the drain, and whether one was running on
	// it at the start or the end (its CPU is PostgreSQL's: it slows the drain from inside).
	bench_result(o, scen, "gateway", "autovacuum_runs", "vacuums + analyzes", (double) (av1 - av0));
	bench_result(o, scen, "gateway", "autovacuum_busy", "at start + at end",
		     (double) (av_busy0 + av_busy1));
	// With a second gateway (run.sh --gateways) the first one's counters see half the jobs.
	if (o->url2 == NULL && claims0 >= 0 && claims1 > claims0) {
		// How full the worker runtime's claims were (the raw loop's are all full).
		bench_result(o, scen, "gateway", "jobs_per_claim", "jobs",
			     (double) o->jobs / (claims1 - claims0));
		bench_result(o, scen, "gateway", "plain_settles", "per 1k jobs",
			     (settles1 - settles0) * 1000 / (double) o->jobs);
	}
	if (o->url2 == NULL && addr0 >= 0 && addr1 >= addr0)
		bench_result(o, scen, "gateway", "settled_by_address", "% of jobs",
			     (addr1 - addr0) * 100 / (double) o->jobs);
	PQfinish(db);
	return 0;
}

// ---- latency ----------------------------------------------------------------------------

int
bench_gw_latency(const bench_opts *o)
{
	PGconn *db = bench_db_connect(o->dsn);
	if (o->terminal > 0)
		bench_db_keep(db); // growth: the big table stays
	else
		bench_db_reset(db);
	long          n = (long) (o->rate * o->seconds);
	bench_workers w;
	bench_workers_start(&w, o, TOPIC_LAT, o->procs, o->threads, (uint64_t) n + 16);
	// Let every worker connect and park its long-poll.
	bench_sleep_ns(1500 * 1000000LL);

	brooq_client *c     = client_open(o);
	bench_samples rpc   = {0};
	int64_t       start = bench_now_ns();
	for (long i = 0; i < n; i++) {
		bench_sleep_ns(start + (int64_t) ((double) i * 1e9 / o->rate) - bench_now_ns());
		char    pay[48];
		int64_t t0 = bench_now_ns();
		snprintf(pay, sizeof(pay), "{\"t\":%lld}", (long long) t0);
		brooq_job_spec spec = {.size = sizeof(brooq_job_spec), .topic = TOPIC_LAT, .payload = pay};
		brooq_enqueue_result res = BROOQ_ENQUEUE_RESULT_INIT;
		brooq_err            e   = brooq_enqueue(c, &spec, 1, &res);
		if (e != BROOQ_OK)
			bench_die("enqueue: %s: %s", brooq_strerror(e), brooq_last_message());
		bench_samples_add(&rpc, bench_now_ns() - t0);
	}
	int64_t give_up = bench_now_ns() + 30 * 1000000000LL;
	while (atomic_load(&w.shm->handled) < (uint64_t) n) {
		if (bench_now_ns() > give_up)
			bench_die("latency: only %llu of %ld jobs handled",
				  (unsigned long long) atomic_load(&w.shm->handled), n);
		bench_sleep_ns(1000000);
	}
	bench_samples lat = {0};
	uint64_t      m   = atomic_load(&w.shm->lat_n);
	for (uint64_t i = 0; i < m && i < w.shm->lat_cap; i++)
		bench_samples_add(&lat, w.shm->lat_ns[i]);
	bench_workers_stop(&w);
	brooq_client_close(c);
	if (lat.n != (size_t) n)
		bench_die("latency: %zu samples for %ld jobs", lat.n, n);
	report_latency(o, "latency", "gateway", "start", &lat);
	bench_sort(rpc.v, rpc.n);
	bench_result(o, "latency", "gateway", "enqueue_call_p50", "us",
		     (double) bench_pct(rpc.v, rpc.n, 0.5) / 1e3);
	// The producer's own call (enqueue, commit, reply) against the start's tail: is
	// a slow start a slow commit, or a slow delivery to the handler?
	bench_result(o, "latency", "gateway", "enqueue_call_p99", "us",
		     (double) bench_pct(rpc.v, rpc.n, 0.99) / 1e3);
	bench_samples_free(&lat);
	bench_samples_free(&rpc);
	bench_db_wait_drained(db, TOPIC_LAT, n, false);
	PQfinish(db);
	return 0;
}

// ---- ping ----------------------------------------------------------------------------------

static void *
ping_main(void *arg)
{
	enq_thread *t = arg;
	char        server[64];
	gate_wait(t->g, t->o->seconds);
	for (;;) {
		int64_t t0 = bench_now_ns();
		if (t0 >= t->g->end_ns)
			break;
		brooq_err e = brooq_ping(t->c, server, sizeof(server));
		if (e != BROOQ_OK)
			bench_die("ping: %s: %s", brooq_strerror(e), brooq_last_message());
		t->last_ns = bench_now_ns();
		bench_samples_add(&t->rpc, t->last_ns - t0);
		t->jobs++;
	}
	return NULL;
}

int
bench_gw_ping(const bench_opts *o)
{
	int         n = o->producers;
	enq_thread *t = calloc((size_t) n, sizeof(*t));
	gate        g;
	gate_init(&g, n);
	for (int i = 0; i < n; i++) {
		t[i] = (enq_thread) {.o = o, .g = &g, .c = client_open(o)};
		if (pthread_create(&t[i].th, NULL, ping_main, &t[i]) != 0)
			bench_die("pthread_create");
	}
	bench_samples all   = {0};
	long          calls = 0;
	int64_t       end   = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i].th, NULL);
		calls += t[i].jobs;
		end = t[i].last_ns > end ? t[i].last_ns : end;
		bench_samples_merge(&all, &t[i].rpc);
		bench_samples_free(&t[i].rpc);
		brooq_client_close(t[i].c);
	}
	char scen[64];
	snprintf(scen, sizeof(scen), "ping_c%d", n);
	bench_sort(all.v, all.n);
	bench_result(o, scen, "gateway", "rtt_p50", "us", (double) bench_pct(all.v, all.n, 0.50) / 1e3);
	bench_result(o, scen, "gateway", "rtt_p99", "us", (double) bench_pct(all.v, all.n, 0.99) / 1e3);
	bench_result(o, scen, "gateway", "rate", "calls/s",
		     (double) calls / ((double) (end - g.start_ns) / 1e9));
	bench_samples_free(&all);
	free(t);
	return 0;
}

// ---- long-polls: memory and connections ------------------------------------------------

typedef struct poll_thread {
	pthread_t     th;
	brooq_client *c;
	_Atomic int  *returned;
	_Atomic int  *got;
	_Atomic int  *failed;
} poll_thread;

static void *
poll_main(void *arg)
{
	poll_thread      *t         = arg;
	const char *const topics[1] = {TOPIC_IDLE};
	brooq_claim_opts  co        = {.size     = sizeof(brooq_claim_opts),
				       .worker   = "bench-poll",
				       .topics   = topics,
				       .n_topics = 1,
				       .max_jobs = 1,
				       .wait_ms  = 120000};
	brooq_job       **jobs      = NULL;
	size_t            n         = 0;
	brooq_err         e         = brooq_claim(t->c, &co, &jobs, &n);
	if (e != BROOQ_OK) {
		fprintf(stderr, "brooq-bench: long-poll claim: %s: %s\n", brooq_strerror(e),
			brooq_last_message());
		atomic_fetch_add(t->failed, 1);
	} else {
		atomic_fetch_add(t->got, (int) n);
		brooq_jobs_free(jobs, n);
	}
	atomic_fetch_add(t->returned, 1);
	return NULL;
}

// VmRSS of a process in KiB (0 when unknown).
static long
rss_kib(long pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "r");
	long  v = 0;
	if (f == NULL)
		return 0;
	size_t fl = strlen(field);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':')
			v = strtol(line + fl + 1, NULL, 10);
	fclose(f);
	return v;
}

int
bench_gw_longpoll(const bench_opts *o)
{
	PGconn *db = bench_db_connect(o->dsn);
	bench_db_reset(db);
	// --ready N: a backlog of N ready jobs of another topic that nobody claims. Each
	// parked poll's periodic re-check is a claim that must get past it.
	if (o->ready > 0)
		bench_db_fill(db, "bench.other", o->ready);
	int         n         = o->polls;
	int         per_cl    = 100;
	int         n_clients = (n + per_cl - 1) / per_cl;
	long        rss0      = rss_kib(o->gw_pid, "VmRSS");
	_Atomic int returned = 0, got = 0, failed = 0;

	brooq_client **cl = calloc((size_t) n_clients, sizeof(*cl));
	poll_thread   *t  = calloc((size_t) n, sizeof(*t));
	for (int i = 0; i < n_clients; i++)
		cl[i] = client_open(o);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (int i = 0; i < n; i++) {
		t[i] = (poll_thread) {
			.c = cl[i / per_cl], .returned = &returned, .got = &got, .failed = &failed};
		if (pthread_create(&t[i].th, &attr, poll_main, &t[i]) != 0)
			bench_die("pthread_create: %s", strerror(errno));
	}
	// Every poll reaches the gateway and parks; none may come back meanwhile. Then
	// what the parked polls cost while nothing happens: the gateway and PostgreSQL
	// CPU over a quiet window (parked polls re-check the database every
	// BROOQ_POLL_INTERVAL, default 1 s).
	bench_sleep_ns(1000000000LL + (int64_t) n * 1000000);
	bench_cpu cpu[2];
	int64_t   q0 = bench_now_ns();
	bench_cpu_now(&cpu[0]);
	bench_sleep_ns(2 * 1000000000LL);
	bench_cpu_now(&cpu[1]);
	double quiet_s = (double) (bench_now_ns() - q0) / 1e9;
	if (atomic_load(&returned) != 0)
		bench_die("longpoll: %d of %d long-polls returned early (max waiters?)",
			  atomic_load(&returned), n);
	long    rss   = rss_kib(o->gw_pid, "VmRSS");
	int64_t busy  = bench_db_int(db,
				     "SELECT count(*) FROM pg_stat_activity"
				      " WHERE application_name = 'brooq-gateway' AND state <> 'idle'");
	int64_t conns = bench_db_int(db,
				     "SELECT count(*) FROM pg_stat_activity"
				     " WHERE application_name = 'brooq-gateway'");

	// Release them: one job each, through the gateway, which wakes one poll per job.
	brooq_job_spec       *specs = calloc(100, sizeof(*specs));
	brooq_enqueue_result *res   = calloc(100, sizeof(*res));
	for (int i = 0; i < 100; i++) {
		specs[i] = (brooq_job_spec) {.size = sizeof(brooq_job_spec), .topic = TOPIC_IDLE};
		res[i]   = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	}
	for (int done = 0; done < n; done += 100) {
		size_t    k = (size_t) (n - done < 100 ? n - done : 100);
		brooq_err e = brooq_enqueue(cl[0], specs, k, res);
		if (e != BROOQ_OK)
			bench_die("enqueue: %s: %s", brooq_strerror(e), brooq_last_message());
	}
	int64_t wake0 = bench_now_ns();
	for (int i = 0; i < n; i++)
		pthread_join(t[i].th, NULL);
	int64_t wake1 = bench_now_ns();
	if (atomic_load(&failed) != 0 || atomic_load(&got) != n)
		bench_die("longpoll: %d failed, %d jobs for %d polls", atomic_load(&failed),
			  atomic_load(&got), n);
	long hwm = rss_kib(o->gw_pid, "VmHWM");
	for (int i = 0; i < n_clients; i++)
		brooq_client_close(cl[i]);

	char scen[64];
	if (o->ready > 0)
		snprintf(scen, sizeof(scen), "longpoll_%d_backlog_%ld", n, o->ready);
	else
		snprintf(scen, sizeof(scen), "longpoll_%d", n);
	bench_result(o, scen, "gateway", "rss_idle", "MiB", (double) rss0 / 1024.0);
	bench_result(o, scen, "gateway", "rss", "MiB", (double) rss / 1024.0);
	bench_result(o, scen, "gateway", "rss_hwm", "MiB", (double) hwm / 1024.0);
	bench_result(o, scen, "gateway", "db_busy", "conns", (double) busy);
	bench_result(o, scen, "gateway", "db_conns", "conns", (double) conns);
	bench_result(o, scen, "gateway", "wake_all", "ms", (double) (wake1 - wake0) / 1e6);
	bench_result(o, scen, "gateway", "idle_cpu_gateway", "% of a core",
		     (cpu[1].gw - cpu[0].gw) * 100 / quiet_s);
	bench_result(o, scen, "gateway", "idle_cpu_postgres", "% of a core",
		     (cpu[1].pg - cpu[0].pg) * 100 / quiet_s);
	free(specs);
	free(res);
	free(t);
	free(cl);
	PQfinish(db);
	return 0;
}

// The gateway's memory now: after the throughput scenarios, work items keep the
// buffers their largest requests grew.
int
bench_gw_rss(const bench_opts *o)
{
	bench_result(o, "gateway_after_load", "gateway", "rss", "MiB",
		     (double) rss_kib(o->gw_pid, "VmRSS") / 1024.0);
	return 0;
}
