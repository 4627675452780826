// SPDX-License-Identifier: MIT
// The benchmark driver's shared pieces: options, clocks, statistics, result lines, the database.
//
// brooq-bench runs one measurement per invocation (tests/bench/run.sh sequences them)
// and appends one JSON object per figure to the results file (--out), one line each:
//   {"run":1,"scenario":"drain_c32","variant":"gateway","metric":"rate","unit":"jobs/s","value":41234.5}
// `brooq-bench report` turns such a file into the markdown table and the JSON summary.
#ifndef BRQ_BENCH_H
#define BRQ_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

// Options common to every subcommand, from the command line and the environment
// (BROOQ_BENCH_URL, BROOQ_BENCH_TOKEN_FILE, BROOQ_BENCH_DSN, BROOQ_BENCH_WORKER).
typedef struct bench_opts {
	const char *url;        // gateway URL (ipc://...)
	const char *token_file; // worker token file
	const char *dsn;        // libpq connection string of the benchmark database
	const char *worker_bin; // path of brooq-bench-worker
	const char *out;        // results file (JSON lines, appended); NULL: stdout only
	int         run;        // repetition number, for the results file

	// Scenario parameters (meaning depends on the subcommand; 0: its default).
	int    producers;      // enqueue/ping: concurrent callers; raw: connections
	int    batch;          // jobs per RPC / per statement
	double seconds;        // time-bounded scenarios
	long   jobs;           // drain: jobs to process
	int    procs;          // worker processes
	int    threads;        // handler threads per worker process
	double rate;           // latency: jobs per second
	int    polls;          // longpoll: concurrent long-polls
	long   gw_pid;         // longpoll: gateway process id (for its RSS)
	long   terminal;       // growth: terminal rows present during the drain (> 0: keep
			       // the rows bench_db_keep keeps instead of emptying the table)
	long        ready;     // growth: ready rows present while measuring claims
	bool        hold_xmin; // growth: a transaction holds back vacuum meanwhile
	bool        cross;     // claim-ready: the ready rows are another topic's
	bool        discard;   // drain: jobs of BENCH_TOPIC_DISCARD, which discards done jobs
	const char *lever;     // raw-drain: an optimisation to try (see raw.c); NULL: none
	const char *label;     // overrides the scenario name in the results
	const char *json_out;  // report: where the JSON summary goes
	const char *url2;      // drain: a second gateway; odd-numbered worker processes use it
	double      interval;  // soak: seconds between two rows of the minute series
	const char *csv;       // soak: where the minute series goes
} bench_opts;

// ---- clocks -----------------------------------------------------------------------

// CLOCK_MONOTONIC in ns: system-wide on Linux, so comparable across processes.
int64_t bench_now_ns(void);
void    bench_sleep_ns(int64_t ns);

// ---- statistics -------------------------------------------------------------------

// Sorts v[0..n) in place (ascending).
void bench_sort(int64_t *v, size_t n);
// Nearest-rank percentile q (0..1) of a sorted array; 0 when n == 0.
int64_t bench_pct(const int64_t *sorted, size_t n, double q);

// A growable array of int64 samples (latencies in ns).
typedef struct bench_samples {
	int64_t *v;
	size_t   n, cap;
} bench_samples;

void bench_samples_add(bench_samples *s, int64_t x);
// Appends all of src to dst.
void bench_samples_merge(bench_samples *dst, const bench_samples *src);
void bench_samples_free(bench_samples *s);

// ---- results -------------------------------------------------------------------------

// Appends one figure to o->out and prints it on stdout. `variant` is "gateway" or
// "raw"; `scenario` is replaced by o->label when set.
void bench_result(const bench_opts *o, const char *scenario, const char *variant, const char *metric,
		  const char *unit, double value);

// Prints to stderr and exits 1.
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

// ---- database -------------------------------------------------------------------------

// Connects or dies.
PGconn *bench_db_connect(const char *dsn);
// Runs a command (no parameters) or dies.
void bench_db_exec(PGconn *c, const char *sql);
// Runs a query that returns one bigint or dies.
int64_t bench_db_int(PGconn *c, const char *sql);

// Empties the job table and checkpoints, so each run starts from the same state.
void bench_db_reset(PGconn *c);
// Growth runs: deletes every row but those made for the run's whole length (topics
// bench.old*: terminal rows; bench.held*: pending rows not due yet or paused), then
// VACUUM ANALYZE and CHECKPOINT.
void bench_db_keep(PGconn *c);
// Inserts n ready no-op jobs on topic in one statement, then VACUUM ANALYZE.
void bench_db_fill(PGconn *c, const char *topic, long n);
// Inserts n terminal ('done') rows, aged 1 day, on a topic no worker claims.
void bench_db_fill_terminal(PGconn *c, long n);
// Waits until no job of `topic` is processing, pending or failed (cheap: the claim and
// lease indexes).
void bench_db_wait_idle(PGconn *c, const char *topic);
// Checks that exactly `n` jobs of `topic` are done, or with `discarded` that none is left
// (dies otherwise). Reads every row of the topic: on a big table (the growth runs' 10M)
// a second or more, so a drain's clock and CPU snapshot stop before it.
void bench_db_check_drained(PGconn *c, const char *topic, long n, bool discarded);
// Both, one after the other.
void bench_db_wait_drained(PGconn *c, const char *topic, long n, bool discarded);

// The topic of `drain --discard`: configured discard_done=true (BROOQ_TOPIC_OVERRIDES
// in run.sh; raw.c builds its statements the same way).
#define BENCH_TOPIC_DISCARD "bench.discard"

// ---- CPU accounting --------------------------------------------------------------------

typedef struct bench_cs {
	double vol, invol;
} bench_cs;

// CPU seconds so far of the gateway ($BROOQ_BENCH_GW_PID), the benchmark's PostgreSQL
// (the postmaster $BROOQ_BENCH_PG_PID and its children), this process, and its
// waited-for children (worker processes). A backend's CPU counts only while it is
// alive: snapshots must be taken while the connections measured are open.
typedef struct bench_cpu {
	double  gw, pg, self, children;
	double  gw2;     // a second gateway ($BROOQ_BENCH_GW2_PID), when there is one
	double  busy;    // the whole machine's busy CPU seconds (/proc/stat)
	int64_t wall_ns; // when taken
	// Context switches so far (issue 30.5: what a job costs in wake-ups): voluntary ones
	// (the task slept: a wait for a message, a lock, I/O; each is a wake-up later) and
	// involuntary ones (preempted: the core was wanted by another task), summed over
	// every thread; the gateways' and PostgreSQL's from /proc, ours from getrusage.
	bench_cs cs_pg, cs_gw, cs_clients;
	// Where other processes' CPU went (issue 30.1: the big-table drains showed 34-57 % of
	// a core there): kernel threads (writeback, kworkers: children of kthreadd), and
	// interrupts (irq + softirq of /proc/stat: a disk's completions, counted to no
	// process), in seconds; and what the machine read from and wrote to its disks
	// (/proc/vmstat pgpgin/pgpgout), in KiB.
	double kthreads, irq;
	double disk_read_kb, disk_written_kb;
} bench_cpu;

void bench_cpu_now(bench_cpu *c);
// Reports CPU microseconds per job between two snapshots (where the time goes), and
// what other processes on the machine used meanwhile (% of one core): a benchmark
// sharing its 2 cores with someone else's build says so in its results.
void bench_cpu_report(const bench_opts *o, const char *scenario, const char *variant, const bench_cpu *a,
		      const bench_cpu *b, double jobs);

// ---- gateway metrics ---------------------------------------------------------------------

// The value of one sample of the gateway's /metrics (exact series text, e.g.
// `brooq_rpc_requests_total{op="claim",code="ok"}`), from $BROOQ_BENCH_METRICS
// (host:port); -1 when unavailable.
double bench_metric(const char *series);

// ---- worker processes -----------------------------------------------------------------

// Shared memory between the driver and its worker processes: a file in /dev/shm,
// mapped by both. Counters are lock-free atomics (always lock-free for 64 bits here).
typedef struct bench_shm {
	_Atomic uint64_t handled; // handler calls, all workers
	char             pad0[56];
	_Atomic int64_t  first_ns; // first handler start (CLOCK_MONOTONIC ns), 0 until then
	char             pad1[56];
	_Atomic uint64_t lat_n;   // latency samples written (may exceed lat_cap)
	uint64_t         lat_cap; // room in lat_ns
	int              record_latency;
	char             pad2[44];
	// The soak's lost/doubled check: handler calls per job sequence number ("s" in the
	// payload), seen_cap counters of one byte after lat_ns[lat_cap] (0: not counted).
	uint64_t seen_cap;
	char     pad3[56];
	int64_t  lat_ns[]; // enqueue -> handler start, ns
} bench_shm;

// The counters of sequence numbers after the latency samples.
static inline _Atomic uint8_t *
bench_shm_seen(bench_shm *shm)
{
	return (_Atomic uint8_t *) (void *) (shm->lat_ns + shm->lat_cap);
}

typedef struct bench_workers {
	char       path[128]; // shm file
	bench_shm *shm;
	size_t     shm_len;
	int        n;
	int       *pids;
} bench_workers;

// Creates the shared memory (room for lat_cap latency samples) and starts `procs`
// worker processes with `threads` handler threads each, handling `topic`.
void bench_workers_start(bench_workers *w, const bench_opts *o, const char *topic, int procs, int threads,
			 uint64_t lat_cap);
// The same with room for seen_cap sequence numbers' counters (bench_shm_seen).
void bench_workers_start_seen(bench_workers *w, const bench_opts *o, const char *topic, int procs,
			      int threads, uint64_t lat_cap, uint64_t seen_cap);
// SIGTERM to every worker, waits for them (SIGKILL after 15 s), removes the shm.
void bench_workers_stop(bench_workers *w);

// ---- subcommands ------------------------------------------------------------------------

int bench_gw_enqueue(const bench_opts *o);
int bench_gw_drain(const bench_opts *o);
int bench_gw_latency(const bench_opts *o);
int bench_gw_ping(const bench_opts *o);
int bench_gw_longpoll(const bench_opts *o);
int bench_gw_rss(const bench_opts *o);
int bench_raw_enqueue(const bench_opts *o);
int bench_raw_drain(const bench_opts *o);
int bench_min_drain(const bench_opts *o);
int bench_floor(const bench_opts *o);
int bench_socket_floor(const bench_opts *o);
int bench_growth_claim(const bench_opts *o);
int bench_report(const bench_opts *o, const char *in);
int bench_explain_claim(const bench_opts *o, const char *topic);
int bench_soak(const bench_opts *o);

// Shared by the drain scenarios (gateway and raw): the drain itself, after the
// caller has reset and filled the table. Returns jobs/s.
// CPU snapshots are taken at its start and end into cpu[0], cpu[1].
double bench_gw_drain_once(const bench_opts *o, PGconn *db, const char *topic, long jobs, bench_cpu cpu[2]);
double bench_raw_drain_once(const bench_opts *o, PGconn *db, const char *topic, long jobs, int conns,
			    int batch, bench_cpu cpu[2]);

#endif
