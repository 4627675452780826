// SPDX-License-Identifier: MIT
// `brooq-bench soak` (issue 30.2): producers enqueue at a fixed rate while a worker fleet
// drains, for --seconds; every --interval seconds one row of the series goes to --csv:
// the rates, enqueue -> start p50/p99, the job table's and each index's size, dead
// tuples, autovacuum runs and the oldest transaction's age. At the end, every job's
// handler calls are counted from its sequence number: none lost, none doubled.
// Retention (run.sh starts the gateway with a 5-minute TTL) keeps the table bounded.
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <brooq/brooq.h>

#define TOPIC_SOAK "bench.soak"
#define MAX_BATCH  1000

typedef struct soak {
	const bench_opts *o;
	int64_t           start_ns;
	uint64_t          seq_cap;   // jobs that can be numbered (the shm's counters)
	uint64_t          lat_every; // one job in lat_every carries its enqueue time
	_Atomic uint64_t  seq;       // next sequence number
	_Atomic uint64_t  enqueued;
	atomic_bool       stop;
} soak;

typedef struct producer {
	soak     *s;
	int       i;
	pthread_t th;
} producer;

// Producer i sends its batches at start + (k * producers + i) * batch / rate: together
// they enqueue `rate` jobs a second, evenly spread. Behind schedule, it sends at once.
static void *
producer_main(void *arg)
{
	producer         *p  = arg;
	soak             *s  = p->s;
	const bench_opts *o  = s->o;
	brooq_client     *c  = NULL;
	brooq_client_opts co = {
		.size = sizeof(co), .url = o->url, .token_file = o->token_file, .timeout_ms = 60000};
	if (brooq_client_open(&co, &c) != BROOQ_OK)
		bench_die("soak: client open: %s", brooq_last_message());
	int                       b = o->batch;
	brooq_job_spec            specs[MAX_BATCH];
	brooq_enqueue_result      res[MAX_BATCH];
	static _Thread_local char pay[MAX_BATCH][64];
	double                    period_ns = (double) b * o->producers / o->rate * 1e9;
	for (int64_t k = 0; !atomic_load(&s->stop); k++) {
		int64_t at =
			s->start_ns + (int64_t) (((double) k + (double) p->i / o->producers) * period_ns);
		bench_sleep_ns(at - bench_now_ns());
		if (atomic_load(&s->stop))
			break;
		uint64_t first = atomic_fetch_add(&s->seq, (uint64_t) b);
		if (first + (uint64_t) b > s->seq_cap)
			bench_die("soak: more jobs than the %llu numbered", (unsigned long long) s->seq_cap);
		int64_t now = bench_now_ns();
		for (int j = 0; j < b; j++) {
			uint64_t q = first + (uint64_t) j;
			if (q % s->lat_every == 0)
				snprintf(pay[j], sizeof(pay[j]), "{\"t\":%lld,\"s\":%llu}", (long long) now,
					 (unsigned long long) q);
			else
				snprintf(pay[j], sizeof(pay[j]), "{\"s\":%llu}", (unsigned long long) q);
			specs[j]         = (brooq_job_spec) BROOQ_JOB_SPEC_INIT;
			specs[j].topic   = TOPIC_SOAK;
			specs[j].payload = pay[j];
			res[j]           = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
		}
		brooq_err e = brooq_enqueue(c, specs, (size_t) b, res);
		if (e != BROOQ_OK)
			bench_die("soak: enqueue: %s: %s", brooq_strerror(e), brooq_last_message());
		atomic_fetch_add(&s->enqueued, (uint64_t) b);
	}
	brooq_client_close(c);
	return NULL;
}

// The job table's figures for one row: sizes, dead tuples, autovacuum runs, the oldest
// transaction (as the gateway's brooq_db_oldest_transaction_age_seconds counts it).
static const char table_sql[] =
	"SELECT pg_relation_size('job'), pg_indexes_size('job'), s.n_live_tup, s.n_dead_tup,"
	" s.autovacuum_count, (SELECT count(*) FROM job WHERE state IN ('pending', 'failed')),"
	" (SELECT greatest(coalesce(extract(epoch FROM now() - min(a.xact_start)), 0), 0)"
	" FROM pg_stat_activity a"
	"  WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
	"  AND a.backend_type <> 'autovacuum worker'"
	"  AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL))"
	" FROM pg_stat_user_tables s WHERE s.relid = 'job'::regclass";
static const char index_sql[] = "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i"
				" JOIN pg_class c ON c.oid = i.indexrelid"
				" WHERE i.indrelid = 'job'::regclass ORDER BY c.relname";

static void
write_header(FILE *f, PGconn *db)
{
	fputs("minute,enqueued_per_s,drained_per_s,start_p50_ms,start_p99_ms,table_bytes,indexes_bytes,"
	      "live_tuples,dead_tuples,autovacuum_count,backlog,oldest_xact_s",
	      f);
	PGresult *r = PQexec(db, index_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		bench_die("soak: %s", PQerrorMessage(db));
	for (int i = 0; i < PQntuples(r); i++)
		fprintf(f, ",%s_bytes", PQgetvalue(r, i, 0));
	fputc('\n', f);
	PQclear(r);
}

// Appends the table's columns and each index's size to the current row.
static void
write_table(FILE *f, PGconn *db)
{
	PGresult *r = PQexec(db, table_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		bench_die("soak: %s", PQerrorMessage(db));
	for (int k = 0; k < PQnfields(r); k++)
		fprintf(f, ",%s", PQgetvalue(r, 0, k));
	PQclear(r);
	r = PQexec(db, index_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		bench_die("soak: %s", PQerrorMessage(db));
	for (int i = 0; i < PQntuples(r); i++)
		fprintf(f, ",%s", PQgetvalue(r, i, 1));
	PQclear(r);
}

// p50 and p99 (ms) of the latency samples [from, to) written so far (0: a slot taken
// but not written yet, skipped).
static void
slice_pcts(const bench_shm *shm, uint64_t from, uint64_t to, double *p50, double *p99)
{
	bench_samples v = {0};
	for (uint64_t i = from; i < to && i < shm->lat_cap; i++)
		if (shm->lat_ns[i] > 0)
			bench_samples_add(&v, shm->lat_ns[i]);
	bench_sort(v.v, v.n);
	*p50 = (double) bench_pct(v.v, v.n, 0.50) / 1e6;
	*p99 = (double) bench_pct(v.v, v.n, 0.99) / 1e6;
	bench_samples_free(&v);
}

// Counts the jobs never handled and the jobs handled more than once among the first n.
static void
count_seen(bench_shm *shm, uint64_t n, uint64_t *lost, uint64_t *doubled)
{
	*lost = *doubled      = 0;
	_Atomic uint8_t *seen = bench_shm_seen(shm);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t k = atomic_load(&seen[i]);
		*lost += k == 0;
		*doubled += k > 1;
	}
}

int
bench_soak(const bench_opts *o)
{
	if (o->csv == NULL || o->batch > MAX_BATCH)
		bench_die("soak: --csv FILE is required, --batch at most %d", MAX_BATCH);
	PGconn *db = bench_db_connect(o->dsn);
	bench_db_reset(db);
	FILE *f = fopen(o->csv, "w");
	if (f == NULL)
		bench_die("soak: cannot write %s", o->csv);
	write_header(f, db);
	soak s            = {.o = o, .seq_cap = (uint64_t) (o->rate * (o->seconds + 60) * 1.2) + 10000};
	s.lat_every       = o->rate > 2000 ? (uint64_t) (o->rate / 1000) : 1;
	uint64_t      lat = s.seq_cap / s.lat_every + 1000;
	bench_workers w;
	bench_workers_start_seen(&w, o, TOPIC_SOAK, o->procs, o->threads, lat, s.seq_cap);
	bench_sleep_ns(1500 * 1000000LL); // the workers connect and park their long-polls
	producer *p = calloc((size_t) o->producers, sizeof(*p));
	s.start_ns  = bench_now_ns();
	for (int i = 0; i < o->producers; i++) {
		p[i] = (producer) {.s = &s, .i = i};
		if (pthread_create(&p[i].th, NULL, producer_main, &p[i]) != 0)
			bench_die("pthread_create");
	}
	int      rows = (int) (o->seconds / o->interval + 0.5);
	double  *p99s = calloc((size_t) rows + 1, sizeof(*p99s));
	uint64_t enq0 = 0, done0 = 0, lat0 = 0;
	for (int m = 1; m <= rows; m++) {
		int64_t at = s.start_ns + (int64_t) (m * o->interval * 1e9);
		bench_sleep_ns(at - bench_now_ns());
		uint64_t enq = atomic_load(&s.enqueued), done = atomic_load(&w.shm->handled);
		uint64_t ln = atomic_load(&w.shm->lat_n);
		double   p50, p99;
		slice_pcts(w.shm, lat0, ln, &p50, &p99);
		p99s[m] = p99;
		fprintf(f, "%.2f,%.1f,%.1f,%.3f,%.3f", m * o->interval / 60,
			(double) (enq - enq0) / o->interval, (double) (done - done0) / o->interval, p50, p99);
		write_table(f, db);
		fputc('\n', f);
		fflush(f);
		fprintf(stderr, "soak: %d/%d enqueued %.0f/s drained %.0f/s start p99 %.2f ms\n", m, rows,
			(double) (enq - enq0) / o->interval, (double) (done - done0) / o->interval, p99);
		enq0 = enq, done0 = done, lat0 = ln;
	}
	atomic_store(&s.stop, true);
	for (int i = 0; i < o->producers; i++)
		pthread_join(p[i].th, NULL);
	uint64_t n       = atomic_load(&s.seq);
	int64_t  give_up = bench_now_ns() + 120 * 1000000000LL;
	while (atomic_load(&w.shm->handled) < n && bench_now_ns() < give_up)
		bench_sleep_ns(10 * 1000000);
	// A job run twice would come late: give doubles the time of a heartbeat round.
	bench_sleep_ns(2000 * 1000000LL);
	uint64_t lost, doubled;
	count_seen(w.shm, n, &lost, &doubled);
	bench_workers_stop(&w);
	fclose(f);

	// The targets: the rate held, the last 5 rows' p99 against the first 5
	// after the first (warm-up) row.
	int    k     = rows >= 11 ? 5 : (rows - 1) / 2;
	double first = 0, last = 0;
	for (int i = 0; i < k; i++) {
		first += p99s[2 + i] / k;
		last += p99s[rows - i] / k;
	}
	bench_result(o, "soak", "gateway", "enqueued", "jobs", (double) n);
	bench_result(o, "soak", "gateway", "rate", "jobs/s", (double) n / o->seconds);
	bench_result(o, "soak", "gateway", "lost", "jobs", (double) lost);
	bench_result(o, "soak", "gateway", "doubled", "jobs", (double) doubled);
	if (k > 0) {
		bench_result(o, "soak", "gateway", "start_p99_first", "ms", first);
		bench_result(o, "soak", "gateway", "start_p99_last", "ms", last);
	}
	free(p99s);
	free(p);
	PQfinish(db);
	if (lost > 0 || doubled > 0)
		bench_die("soak: %llu jobs lost, %llu doubled", (unsigned long long) lost,
			  (unsigned long long) doubled);
	return 0;
}
