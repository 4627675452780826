// SPDX-License-Identifier: MIT
// brooq-bench: one benchmark measurement per invocation, or the report of a results file.
#include "bench.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: brooq-bench COMMAND [options]\n"
	"commands (each appends its figures to --out as JSON lines):\n"
	"  enqueue      --producers P --batch B --seconds S   enqueue through the gateway\n"
	"  raw-enqueue  --producers P --batch B --seconds S   the same statement over libpq\n"
	"               [--lever enqueue-nojoin]: without its LEFT JOIN to job\n"
	"  drain        --jobs N --procs X --threads T        worker runtime drains N jobs\n"
	"  raw-drain    --jobs N --procs X --threads T        X claim loops, batch T, over libpq\n"
	"               (both: [--discard] the jobs' topic discards done jobs: discard_done)\n"
	"  min-drain    --jobs N --procs C --threads B        the minimal-SQL comparator: C connections,\n"
	"               claim B with SKIP LOCKED, settle by id array, on a minimal table\n"
	"               raw-drain [--lever pipeline|literal|generic|pipeline+literal|\n"
	"               pipeline+generic]: the same statements in one libpq pipeline / the\n"
	"               claim's LIMIT as a literal / plan_cache_mode = force_generic_plan\n"
	"               (both: [--terminal M] keep the M terminal rows made by `terminal`;\n"
	"                      [--hold-xmin] an open snapshot holds back vacuum meanwhile)\n"
	"  latency      --rate R --seconds S --procs X --threads T   enqueue -> handler start\n"
	"  ping         --producers C --seconds S             ping round trips\n"
	"  raw-ping     --producers C --seconds S             NNG req/rep echo over ipc (the floor)\n"
	"  socket-ping  --producers C --seconds S             the same over a bare Unix socket (no NNG)\n"
	"  longpoll     --polls N --gw-pid PID [--ready N]    gateway RSS, DB connections, idle cost\n"
	"               (--ready N: another topic has N ready jobs meanwhile)\n"
	"  rss          --gw-pid PID                          gateway RSS now\n"
	"  terminal     --terminal M                          empty the table, add M done rows\n"
	"  claim-ready  --ready N [--cross]                   claim latency with N ready jobs\n"
	"               (--cross: the N are another topic's, enqueued before ours)\n"
	"  explain-claim --batch B                            EXPLAIN (ANALYZE, BUFFERS) of the claim\n"
	"               of bench.drain, as the gateway runs it (rolled back), on stdout\n"
	"  soak         --seconds S --rate R --producers P --batch B --procs X --threads T\n"
	"               --interval I --csv FILE: enqueue at R jobs/s, a row of figures every\n"
	"               I s into FILE, no job lost or doubled at the end\n"
	"  report FILE  [--json OUT]                          markdown table (+ JSON summary)\n"
	"common: --out FILE --run R --label NAME; environment: BROOQ_BENCH_URL,\n"
	"  BROOQ_BENCH_TOKEN_FILE, BROOQ_BENCH_DSN, BROOQ_BENCH_WORKER\n";

static const char *
env_or_die(const char *name)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		bench_die("%s is not set", name);
	return v;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	bench_opts  o   = {.producers = 1,
			   .batch     = 1,
			   .seconds   = 5,
			   .jobs      = 100000,
			   .procs     = 1,
			   .threads   = 8,
			   .rate      = 200,
			   .polls     = 1000,
			   .run       = 1,
			   .interval  = 60};
	enum {
		O_PROD = 1,
		O_BATCH,
		O_SEC,
		O_JOBS,
		O_PROCS,
		O_THREADS,
		O_RATE,
		O_POLLS,
		O_GWPID,
		O_OUT,
		O_RUN,
		O_LABEL,
		O_JSON,
		O_TERM,
		O_READY,
		O_XMIN,
		O_LEVER,
		O_CROSS,
		O_DISCARD,
		O_INTERVAL,
		O_CSV
	};
	static const struct option lo[] = {
		{"producers", required_argument, NULL, O_PROD},
		{"batch", required_argument, NULL, O_BATCH},
		{"seconds", required_argument, NULL, O_SEC},
		{"jobs", required_argument, NULL, O_JOBS},
		{"procs", required_argument, NULL, O_PROCS},
		{"threads", required_argument, NULL, O_THREADS},
		{"rate", required_argument, NULL, O_RATE},
		{"polls", required_argument, NULL, O_POLLS},
		{"gw-pid", required_argument, NULL, O_GWPID},
		{"out", required_argument, NULL, O_OUT},
		{"run", required_argument, NULL, O_RUN},
		{"label", required_argument, NULL, O_LABEL},
		{"json", required_argument, NULL, O_JSON},
		{"terminal", required_argument, NULL, O_TERM},
		{"ready", required_argument, NULL, O_READY},
		{"hold-xmin", no_argument, NULL, O_XMIN},
		{"lever", required_argument, NULL, O_LEVER},
		{"cross", no_argument, NULL, O_CROSS},
		{"discard", no_argument, NULL, O_DISCARD},
		{"interval", required_argument, NULL, O_INTERVAL},
		{"csv", required_argument, NULL, O_CSV},
		{NULL, 0, NULL, 0},
	};
	optind = 2;
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case O_PROD: o.producers = atoi(optarg); break;
		case O_BATCH: o.batch = atoi(optarg); break;
		case O_SEC: o.seconds = atof(optarg); break;
		case O_JOBS: o.jobs = atol(optarg); break;
		case O_PROCS: o.procs = atoi(optarg); break;
		case O_THREADS: o.threads = atoi(optarg); break;
		case O_RATE: o.rate = atof(optarg); break;
		case O_POLLS: o.polls = atoi(optarg); break;
		case O_GWPID: o.gw_pid = atol(optarg); break;
		case O_OUT: o.out = optarg; break;
		case O_RUN: o.run = atoi(optarg); break;
		case O_LABEL: o.label = optarg; break;
		case O_JSON: o.json_out = optarg; break;
		case O_TERM: o.terminal = atol(optarg); break;
		case O_READY: o.ready = atol(optarg); break;
		case O_XMIN: o.hold_xmin = true; break;
		case O_LEVER: o.lever = optarg; break;
		case O_CROSS: o.cross = true; break;
		case O_DISCARD: o.discard = true; break;
		case O_INTERVAL: o.interval = atof(optarg); break;
		case O_CSV: o.csv = optarg; break;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (o.producers < 1 || o.batch < 1 || o.seconds <= 0 || o.jobs < 1 || o.procs < 1 || o.threads < 1 ||
	    o.rate <= 0 || o.polls < 1 || o.interval <= 0)
		bench_die("bad option value");

	if (strcmp(cmd, "report") == 0) {
		if (optind >= argc)
			bench_die("report: which results file?");
		return bench_report(&o, argv[optind]);
	}
	signal(SIGPIPE, SIG_IGN);
	o.dsn = env_or_die("BROOQ_BENCH_DSN");
	if (strcmp(cmd, "raw-enqueue") == 0)
		return bench_raw_enqueue(&o);
	if (strcmp(cmd, "raw-drain") == 0)
		return bench_raw_drain(&o);
	if (strcmp(cmd, "min-drain") == 0)
		return bench_min_drain(&o);
	if (strcmp(cmd, "raw-ping") == 0)
		return bench_floor(&o);
	if (strcmp(cmd, "socket-ping") == 0)
		return bench_socket_floor(&o);
	if (strcmp(cmd, "claim-ready") == 0)
		return bench_growth_claim(&o);
	if (strcmp(cmd, "explain-claim") == 0)
		return bench_explain_claim(&o, "bench.drain");
	if (strcmp(cmd, "terminal") == 0) {
		PGconn *db = bench_db_connect(o.dsn);
		bench_db_reset(db);
		bench_db_fill_terminal(db, o.terminal);
		PQfinish(db);
		return 0;
	}
	o.url        = env_or_die("BROOQ_BENCH_URL");
	o.token_file = env_or_die("BROOQ_BENCH_TOKEN_FILE");
	o.worker_bin = getenv("BROOQ_BENCH_WORKER");
	// A second gateway (run.sh --gateways): every other worker process uses it.
	o.url2 = getenv("BROOQ_BENCH_URL2") != NULL && *getenv("BROOQ_BENCH_URL2") != '\0'
		? getenv("BROOQ_BENCH_URL2")
		: NULL;
	if (strcmp(cmd, "enqueue") == 0)
		return bench_gw_enqueue(&o);
	if (strcmp(cmd, "ping") == 0)
		return bench_gw_ping(&o);
	if (strcmp(cmd, "longpoll") == 0) {
		if (o.gw_pid <= 0)
			bench_die("longpoll: --gw-pid is required");
		return bench_gw_longpoll(&o);
	}
	if (strcmp(cmd, "rss") == 0) {
		if (o.gw_pid <= 0)
			bench_die("rss: --gw-pid is required");
		return bench_gw_rss(&o);
	}
	if (o.worker_bin == NULL)
		bench_die("BROOQ_BENCH_WORKER is not set");
	if (strcmp(cmd, "drain") == 0)
		return bench_gw_drain(&o);
	if (strcmp(cmd, "latency") == 0)
		return bench_gw_latency(&o);
	if (strcmp(cmd, "soak") == 0)
		return bench_soak(&o);
	fputs(usage, stderr);
	return 2;
}
