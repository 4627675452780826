// SPDX-License-Identifier: MIT
// Benchmark helpers: clocks, percentiles, result lines, database set-up, worker processes.
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// ---- clocks -----------------------------------------------------------------------

int64_t
bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
bench_sleep_ns(int64_t ns)
{
	if (ns <= 0)
		return;
	struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

// ---- statistics -------------------------------------------------------------------

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

void
bench_sort(int64_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_i64);
}

int64_t
bench_pct(const int64_t *sorted, size_t n, double q)
{
	if (n == 0)
		return 0;
	// Nearest rank: the smallest value with at least q of the samples at or below it.
	size_t k = (size_t) (q * (double) n + 0.999999);
	if (k == 0)
		k = 1;
	if (k > n)
		k = n;
	return sorted[k - 1];
}

void
bench_samples_add(bench_samples *s, int64_t x)
{
	if (s->n == s->cap) {
		size_t   cap = s->cap ? s->cap * 2 : 4096;
		int64_t *v   = realloc(s->v, cap * sizeof(*v));
		if (v == NULL)
			bench_die("out of memory");
		s->v   = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
}

void
bench_samples_merge(bench_samples *dst, const bench_samples *src)
{
	for (size_t i = 0; i < src->n; i++)
		bench_samples_add(dst, src->v[i]);
}

void
bench_samples_free(bench_samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

// ---- results -------------------------------------------------------------------------

void
bench_result(const bench_opts *o, const char *scenario, const char *variant, const char *metric,
	     const char *unit, double value)
{
	char line[512];
	snprintf(line, sizeof(line),
		 "{\"run\":%d,\"scenario\":\"%s\",\"variant\":\"%s\",\"metric\":\"%s\",\"unit\":\"%s\","
		 "\"value\":%.3f}\n",
		 o->run, o->label ? o->label : scenario, variant, metric, unit, value);
	fputs(line, stdout);
	fflush(stdout);
	if (o->out == NULL)
		return;
	FILE *f = fopen(o->out, "a");
	if (f == NULL)
		bench_die("cannot append to %s: %s", o->out, strerror(errno));
	fputs(line, f);
	fclose(f);
}

void
bench_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("brooq-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

// ---- database -------------------------------------------------------------------------

PGconn *
bench_db_connect(const char *dsn)
{
	PGconn *c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		bench_die("database: %s", PQerrorMessage(c));
	PQsetNoticeProcessor(c, NULL, NULL);
	return c;
}

void
bench_db_exec(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		bench_die("database: %s: %s", sql, PQerrorMessage(c));
	PQclear(r);
}

int64_t
bench_db_int(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		bench_die("database: %s: %s", sql, PQerrorMessage(c));
	int64_t v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return v;
}

void
bench_db_reset(PGconn *c)
{
	bench_db_exec(c, "TRUNCATE job RESTART IDENTITY");
	// A queue in service has history, and the planner statistics that go with it.
	// On an empty, analyzed table the planner picks plans fit for an empty table
	// (sequential scans), and each connection keeps them as its generic plan while
	// the table grows: the scenario `enqueue_empty_table` measures that case.
	const char *empty = getenv("BROOQ_BENCH_EMPTY_TABLE");
	if (empty == NULL || *empty == '\0')
		bench_db_exec(c,
			      "INSERT INTO job (topic, payload, state, attempts, created_at, updated_at, "
			      "available_at)"
			      " SELECT 'bench.old', jsonb_build_object('i', g), 'done', 1, now() - interval "
			      "'1 day',"
			      "  now() - interval '1 day', now() - interval '1 day' FROM generate_series(1, "
			      "10000) g");
	bench_db_exec(c, "VACUUM ANALYZE job");
	bench_db_exec(c, "CHECKPOINT");
}

void
bench_db_keep(PGconn *c)
{
	bench_db_exec(c,
		      "DELETE FROM job WHERE topic NOT LIKE 'bench.old%' AND topic NOT LIKE 'bench.held%'");
	bench_db_exec(c, "VACUUM ANALYZE job");
	bench_db_exec(c, "CHECKPOINT");
}

void
bench_db_fill(PGconn *c, const char *topic, long n)
{
	char sql[512];
	// Columns not named take the table's defaults, as an enqueue without options
	// would (max_attempts 5 = the gateway's default).
	snprintf(sql, sizeof(sql),
		 "INSERT INTO job (topic, payload, max_attempts)"
		 " SELECT '%s', jsonb_build_object('i', g), 5 FROM generate_series(1, %ld) g",
		 topic, n);
	bench_db_exec(c, sql);
	bench_db_exec(c, "VACUUM ANALYZE job");
	bench_db_exec(c, "CHECKPOINT");
}

void
bench_db_fill_terminal(PGconn *c, long n)
{
	char sql[512];
	// Old finished jobs: what retention has not removed yet. Done rows carry no
	// lease (invariant 1); updated_at a day ago, like a 30-day retention's tail.
	snprintf(sql, sizeof(sql),
		 "INSERT INTO job (topic, payload, state, attempts, created_at, updated_at, available_at)"
		 " SELECT 'bench.old', jsonb_build_object('i', g), 'done', 1,"
		 "  now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'"
		 " FROM generate_series(1, %ld) g",
		 n);
	bench_db_exec(c, sql);
	bench_db_exec(c, "VACUUM ANALYZE job");
	bench_db_exec(c, "CHECKPOINT");
}

void
bench_db_wait_idle(PGconn *c, const char *topic)
{
	// The claim index (pending, failed) and the lease index (processing) make these
	// counts cheap once the queue is nearly empty.
	int64_t until = bench_now_ns() + 60 * 1000000000LL;
	for (;;) {
		// This topic's only: the growth runs keep other topics' pending rows (not due
		// yet, or paused) in the table meanwhile.
		char q[320];
		snprintf(q, sizeof(q),
			 "SELECT (SELECT count(*) FROM job WHERE topic = '%s' AND state IN ('pending', "
			 "'failed'))"
			 " + (SELECT count(*) FROM job WHERE topic = '%s' AND state = 'processing')",
			 topic, topic);
		int64_t left = bench_db_int(c, q);
		if (left == 0)
			break;
		if (bench_now_ns() > until)
			bench_die("drain: %lld jobs still not done after 60 s", (long long) left);
		bench_sleep_ns(1000 * 1000); // as graphile-worker's drain.js polls its table
	}
}

void
bench_db_check_drained(PGconn *c, const char *topic, long n, bool discarded)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM job WHERE topic = '%s' AND state = 'done'", topic);
	int64_t done = bench_db_int(c, sql);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM job WHERE topic = '%s'", topic);
	int64_t all = bench_db_int(c, sql);
	if (discarded)
		n = 0; // each done job's row went with its settle
	if (done != n || all != n)
		bench_die("drain: %lld of %lld jobs done, %ld expected", (long long) done, (long long) all,
			  n);
}

void
bench_db_wait_drained(PGconn *c, const char *topic, long n, bool discarded)
{
	bench_db_wait_idle(c, topic);
	bench_db_check_drained(c, topic, n, discarded);
}

// ---- CPU accounting --------------------------------------------------------------------

// utime + stime of a process in seconds, its parent's pid, and (reaped, if not NULL)
// cutime + cstime: what its children that exited and were waited for used; false if it
// is gone.
static bool
proc_cpu_ex(long pid, double *sec, long *ppid, double *reaped)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	// The command may hold spaces: fields start after its closing parenthesis.
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return false;
	char               state;
	long               pp;
	unsigned long long ut = 0, st = 0;
	long long          cut = 0, cst = 0;
	if (sscanf(p + 2, "%c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &state, &pp, &ut,
		   &st, &cut, &cst) != 6)
		return false;
	*sec = (double) (ut + st) / (double) sysconf(_SC_CLK_TCK);
	if (ppid != NULL)
		*ppid = pp;
	if (reaped != NULL)
		*reaped = (double) (cut + cst) / (double) sysconf(_SC_CLK_TCK);
	return true;
}

static bool
proc_cpu(long pid, double *sec, long *ppid)
{
	return proc_cpu_ex(pid, sec, ppid, NULL);
}

// Adds the context switches of every thread of pid (/proc/PID/task/*/status) to cs; a
// thread or process that is gone adds nothing.
static void
proc_cs_add(long pid, bench_cs *cs)
{
	char path[320], line[128];
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (atol(e->d_name) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%s/status", pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		unsigned long long v;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
				cs->vol += (double) v;
			else if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				cs->invol += (double) v;
		}
		fclose(f);
	}
	closedir(d);
}

static long
env_pid(const char *name)
{
	const char *v = getenv(name);
	return v != NULL ? atol(v) : 0;
}

void
bench_cpu_now(bench_cpu *c)
{
	memset(c, 0, sizeof(*c));
	long gw = env_pid("BROOQ_BENCH_GW_PID"), pm = env_pid("BROOQ_BENCH_PG_PID");
	if (gw > 0 && proc_cpu(gw, &c->gw, NULL))
		proc_cs_add(gw, &c->cs_gw);
	long gw2 = env_pid("BROOQ_BENCH_GW2_PID");
	if (gw2 > 0 && proc_cpu(gw2, &c->gw2, NULL))
		proc_cs_add(gw2, &c->cs_gw);
	if (pm > 0) {
		DIR           *d = opendir("/proc");
		struct dirent *e;
		while (d != NULL && (e = readdir(d)) != NULL) {
			long   pid = atol(e->d_name), ppid = 0;
			double sec;
			double reaped = 0;
			if (pid <= 0 || !proc_cpu_ex(pid, &sec, &ppid, &reaped))
				continue;
			if (pid == pm || ppid == pm) {
				// The postmaster's reaped children too: backends and parallel or
				// autovacuum workers that exited between two snapshots (a parallel
				// scan's workers used to show as other processes' CPU).
				c->pg += sec + (pid == pm ? reaped : 0);
				proc_cs_add(pid, &c->cs_pg);
			} else if (pid == 2 || ppid == 2) {
				c->kthreads += sec; // kthreadd and its children: the kernel's own threads
			}
		}
		if (d != NULL)
			closedir(d);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	c->self = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
		(double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
	getrusage(RUSAGE_CHILDREN, &ru);
	c->children = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
		(double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
	// The worker processes' switches (waited for, so counted whole); not this process's
	// own: its polling for the end of a drain is the measurement's, not the queue's.
	c->cs_clients = (bench_cs) {(double) ru.ru_nvcsw, (double) ru.ru_nivcsw};
	// cpu  user nice system idle iowait irq softirq steal: busy = all but idle, iowait.
	FILE *f = fopen("/proc/stat", "r");
	if (f != NULL) {
		unsigned long long u, n, s, idle, io, irq, sirq, steal = 0;
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &n, &s, &idle, &io, &irq,
			   &sirq, &steal) >= 7) {
			c->busy = (double) (u + n + s + irq + sirq + steal) / (double) sysconf(_SC_CLK_TCK);
			c->irq  = (double) (irq + sirq) / (double) sysconf(_SC_CLK_TCK);
		}
		fclose(f);
	}
	if ((f = fopen("/proc/vmstat", "r")) != NULL) {
		char               key[64];
		unsigned long long v;
		while (fscanf(f, "%63s %llu", key, &v) == 2) {
			if (strcmp(key, "pgpgin") == 0)
				c->disk_read_kb = (double) v;
			else if (strcmp(key, "pgpgout") == 0)
				c->disk_written_kb = (double) v;
		}
		fclose(f);
	}
	c->wall_ns = bench_now_ns();
}

static void
cs_report(const bench_opts *o, const char *scenario, const char *variant, const char *who, const bench_cs *a,
	  const bench_cs *b, double jobs)
{
	char m[64];
	snprintf(m, sizeof(m), "wakeups_%s", who);
	bench_result(o, scenario, variant, m, "per job", (b->vol - a->vol) / jobs);
	snprintf(m, sizeof(m), "preemptions_%s", who);
	bench_result(o, scenario, variant, m, "per job", (b->invol - a->invol) / jobs);
}

void
bench_cpu_report(const bench_opts *o, const char *scenario, const char *variant, const bench_cpu *a,
		 const bench_cpu *b, double jobs)
{
	if (jobs <= 0)
		return;
	if (env_pid("BROOQ_BENCH_PG_PID") > 0)
		bench_result(o, scenario, variant, "cpu_postgres", "us/job", (b->pg - a->pg) * 1e6 / jobs);
	if (strcmp(variant, "gateway") == 0 && env_pid("BROOQ_BENCH_GW_PID") > 0)
		bench_result(o, scenario, variant, "cpu_gateway", "us/job", (b->gw - a->gw) * 1e6 / jobs);
	if (strcmp(variant, "gateway") == 0 && env_pid("BROOQ_BENCH_GW2_PID") > 0)
		bench_result(o, scenario, variant, "cpu_gateway2", "us/job", (b->gw2 - a->gw2) * 1e6 / jobs);
	bench_result(o, scenario, variant, "cpu_clients", "us/job",
		     (b->self - a->self + b->children - a->children) * 1e6 / jobs);
	if (strcmp(variant, "gateway") == 0 && env_pid("BROOQ_BENCH_GW_PID") > 0)
		bench_result(
			o, scenario, variant, "cpu_gateway_clients", "us/job",
			(b->gw - a->gw + b->gw2 - a->gw2 + b->self - a->self + b->children - a->children) *
				1e6 / jobs);
	// Wake-ups (voluntary switches) and preemptions per job, by process, and of them all.
	if (env_pid("BROOQ_BENCH_PG_PID") > 0)
		cs_report(o, scenario, variant, "postgres", &a->cs_pg, &b->cs_pg, jobs);
	if (strcmp(variant, "gateway") == 0 && env_pid("BROOQ_BENCH_GW_PID") > 0)
		cs_report(o, scenario, variant, "gateway", &a->cs_gw, &b->cs_gw, jobs);
	cs_report(o, scenario, variant, "clients", &a->cs_clients, &b->cs_clients, jobs);
	bench_result(o, scenario, variant, "preemptions", "per job",
		     (b->cs_pg.invol - a->cs_pg.invol + b->cs_gw.invol - a->cs_gw.invol +
		      b->cs_clients.invol - a->cs_clients.invol) /
			     jobs);
	double ours = (b->gw - a->gw) + (b->gw2 - a->gw2) + (b->pg - a->pg) + (b->self - a->self) +
		(b->children - a->children);
	double other = (b->busy - a->busy) - ours;
	double wall  = (double) (b->wall_ns - a->wall_ns) / 1e9;
	if (b->busy > 0 && wall > 0) {
		bench_result(o, scenario, variant, "cpu_other_processes", "% of a core",
			     (other > 0 ? other : 0) * 100 / wall);
		// Of which: the kernel's threads and interrupts.
		bench_result(o, scenario, variant, "cpu_kernel_threads", "% of a core",
			     (b->kthreads - a->kthreads) * 100 / wall);
		bench_result(o, scenario, variant, "cpu_interrupts", "% of a core",
			     (b->irq - a->irq) * 100 / wall);
		bench_result(o, scenario, variant, "disk_read", "MiB",
			     (b->disk_read_kb - a->disk_read_kb) / 1024);
		bench_result(o, scenario, variant, "disk_written", "MiB",
			     (b->disk_written_kb - a->disk_written_kb) / 1024);
	}
}

// ---- gateway metrics ---------------------------------------------------------------------

double
bench_metric(const char *series)
{
	const char *hp    = getenv("BROOQ_BENCH_METRICS");
	const char *colon = hp != NULL ? strrchr(hp, ':') : NULL;
	if (colon == NULL)
		return -1;
	char host[64];
	snprintf(host, sizeof(host), "%.*s", (int) (colon - hp), hp);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(colon + 1))};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	double v   = -1;
	char  *buf = NULL;
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
		goto out;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
	if (write(fd, req, sizeof(req) - 1) != (ssize_t) sizeof(req) - 1)
		goto out;
	size_t len = 0, cap = 1 << 16;
	if ((buf = malloc(cap + 1)) == NULL)
		goto out;
	for (;;) {
		if (len == cap) {
			char *nb = realloc(buf, cap * 2 + 1);
			if (nb == NULL)
				goto out;
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t) r;
		buf[len]       = '\0';
		const char *cl = strstr(buf, "Content-Length:");
		const char *bd = strstr(buf, "\r\n\r\n");
		if (cl != NULL && bd != NULL && len >= (size_t) (bd + 4 - buf) + strtoul(cl + 15, NULL, 10))
			break;
	}
	buf[len]  = '\0';
	size_t sl = strlen(series);
	for (char *line = buf; line != NULL && *line != '\0';) {
		char *next = strchr(line, '\n');
		if (strncmp(line, series, sl) == 0 && line[sl] == ' ') {
			v = strtod(line + sl + 1, NULL);
			break;
		}
		line = next != NULL ? next + 1 : NULL;
	}
out:
	free(buf);
	close(fd);
	return v;
}

// ---- worker processes -----------------------------------------------------------------

void
bench_workers_start(bench_workers *w, const bench_opts *o, const char *topic, int procs, int threads,
		    uint64_t lat_cap)
{
	bench_workers_start_seen(w, o, topic, procs, threads, lat_cap, 0);
}

void
bench_workers_start_seen(bench_workers *w, const bench_opts *o, const char *topic, int procs, int threads,
			 uint64_t lat_cap, uint64_t seen_cap)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->path, sizeof(w->path), "/dev/shm/brooq-bench-%ld", (long) getpid());
	w->shm_len = sizeof(bench_shm) + lat_cap * sizeof(int64_t) + seen_cap;
	int fd     = open(w->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t) w->shm_len) != 0)
		bench_die("shm %s: %s", w->path, strerror(errno));
	w->shm = mmap(NULL, w->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (w->shm == MAP_FAILED)
		bench_die("mmap %s: %s", w->path, strerror(errno));
	w->shm->lat_cap        = lat_cap;
	w->shm->record_latency = lat_cap > 0;
	w->shm->seen_cap       = seen_cap;

	w->pids = calloc((size_t) procs, sizeof(*w->pids));
	if (w->pids == NULL)
		bench_die("out of memory");
	char th[16];
	snprintf(th, sizeof(th), "%d", threads);
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			bench_die("fork: %s", strerror(errno));
		if (pid == 0) {
			// With a second gateway, every other process is its (the --gateways drain).
			const char *url = o->url2 != NULL && i % 2 == 1 ? o->url2 : o->url;
			execl(o->worker_bin, o->worker_bin, "--url", url, "--token-file", o->token_file,
			      "--topic", topic, "--threads", th, "--shm", w->path, (char *) NULL);
			fprintf(stderr, "brooq-bench: exec %s: %s\n", o->worker_bin, strerror(errno));
			_exit(127);
		}
		w->pids[w->n++] = pid;
	}
}

void
bench_workers_stop(bench_workers *w)
{
	for (int i = 0; i < w->n; i++)
		kill(w->pids[i], SIGTERM);
	int64_t until = bench_now_ns() + 15 * 1000000000LL;
	for (int i = 0; i < w->n; i++) {
		int st;
		for (;;) {
			pid_t r = waitpid(w->pids[i], &st, WNOHANG);
			if (r == w->pids[i] || (r < 0 && errno != EINTR))
				break;
			if (bench_now_ns() > until) {
				fprintf(stderr, "brooq-bench: worker %d did not stop; killing it\n",
					w->pids[i]);
				kill(w->pids[i], SIGKILL);
				waitpid(w->pids[i], &st, 0);
				break;
			}
			bench_sleep_ns(5 * 1000000);
		}
	}
	free(w->pids);
	w->pids = NULL;
	w->n    = 0;
	munmap(w->shm, w->shm_len);
	unlink(w->path);
}
