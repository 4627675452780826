// SPDX-License-Identifier: MIT
// brooq-chaos: the worker and the producer of the chaos and failover tests (tests/chaos/).
//
//   brooq-chaos work --url URL --token-file F --log FILE [--threads N] [--lease-ms MS]
//                    [--tag T] [--ignore-cancel]
//       The real worker runtime (libbrooq-client) on topic "chaos" until SIGTERM. The
//       handler sleeps the payload's "ms" in 2 ms steps, stopping early once the job is
//       canceled (its lease lost), and fails its first "fail" attempts. It appends one
//       line to FILE before it starts and one after it ends, each with one write(2) on
//       an O_APPEND descriptor, so a SIGKILL'd process leaves a start without an end:
//         S <id> <attempt> <start_us> <pid> <tag>
//         E <id> <attempt> <start_us> <end_us> <pid> <tag> <done|fail|canceled>
//       --ignore-cancel: a deliberately broken handler that never looks at its cancel
//       flag (the chaos test's proof that its overlap check can fail).
//   brooq-chaos produce --url URL[,URL...] --token-file F --ack FILE [--jobs N] [--rate R]
//                       [--batch B] [--seed S] [--long-pct P] [--long-ms MIN-MAX]
//                       [--fail-pct P] [--first K]
//       Enqueues jobs with idempotency keys k<K>, k<K+1>, ... in batches of B, R jobs a
//       second, each batch through the next URL; a batch that fails is sent again
//       (same keys, so at most one job per key) through the next URL until it is
//       acknowledged. Appends per acknowledged job and per failed call:
//         A <seq> <id> <ack_us> <url_index> <created 0|1>
//         X <t_us> <url_index> <error>
//       --jobs 0: until SIGTERM. Exit 0 once every job is acknowledged (or on SIGTERM).
//
// Times are unix microseconds (CLOCK_REALTIME): the test driver's kill times come from
// `date` and every process must share one clock; monotonic time would not survive a
// comparison with them. Durations here are measured on the monotonic clock.
#include <brooq/brooq.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOPIC     "chaos"
#define MAX_URLS  8
#define MAX_BATCH 1000
#define STEP_MS   2

static brooq_worker *the_worker;
static atomic_bool   stopping;

static int64_t
wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !atomic_load(&stopping)) {
	}
}

static void
die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("brooq-chaos: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void
on_signal(int sig)
{
	(void) sig;
	atomic_store(&stopping, true);
	if (the_worker != NULL)
		brooq_worker_stop(the_worker); // async-signal-safe (brooq.h)
}

// One line, one write(2): O_APPEND makes concurrent lines from several threads and
// processes land whole. Lines are short (< PIPE_BUF), so a write is never split.
static void
log_line(int fd, const char *fmt, ...)
{
	char    buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n <= 0 || (size_t) n >= sizeof(buf) || write(fd, buf, (size_t) n) != n)
		die("cannot append to the log: %s", strerror(errno));
}

static int
open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	return fd;
}

// ---- worker ----------------------------------------------------------------------------

typedef struct work_ctx {
	int         log_fd;
	const char *tag;
	bool        ignore_cancel;
} work_ctx;

// The integer after "key": in a flat JSON object, or 0.
static long
json_int(const char *json, size_t len, const char *key)
{
	char text[256], pat[32];
	if (len >= sizeof(text))
		len = sizeof(text) - 1;
	memcpy(text, json, len);
	text[len] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(text, pat);
	return p != NULL ? strtol(p + strlen(pat), NULL, 10) : 0;
}

static void
handler(brooq_job_ctx *job, void *arg)
{
	work_ctx   *w = arg;
	size_t      len;
	const char *payload = brooq_job_payload(job, &len);
	long        ms      = json_int(payload, len, "ms");
	long        fail    = json_int(payload, len, "fail");
	uint64_t    id      = brooq_job_id(job);
	uint32_t    attempt = brooq_job_attempts(job);
	int64_t     start   = wall_us();

	log_line(w->log_fd, "S %" PRIu64 " %" PRIu32 " %" PRId64 " %ld %s\n", id, attempt, start,
		 (long) getpid(), w->tag);
	int64_t end_ms   = mono_ms() + ms;
	bool    canceled = false;
	while (mono_ms() < end_ms) {
		if (!w->ignore_cancel && brooq_job_canceled(job)) {
			canceled = true;
			break;
		}
		int64_t left = end_ms - mono_ms();
		sleep_ms(left < STEP_MS ? left : STEP_MS);
	}
	const char *outcome = "done";
	if (canceled)
		outcome = "canceled"; // whatever we return is discarded
	else if (attempt <= (uint32_t) fail) {
		brooq_job_fail(job, "chaos: planned failure");
		outcome = "fail";
	}
	log_line(w->log_fd, "E %" PRIu64 " %" PRIu32 " %" PRId64 " %" PRId64 " %ld %s %s\n", id, attempt,
		 start, wall_us(), (long) getpid(), w->tag, outcome);
}

static int
cmd_work(int argc, char **argv)
{
	brooq_client_opts co  = {.size = sizeof(co)};
	brooq_worker_opts wo  = {.size = sizeof(wo), .threads = 4, .wait_ms = 2000, .stop_grace_ms = 5000};
	work_ctx          ctx = {.log_fd = -1, .tag = "-"};
	const char       *log = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--ignore-cancel") == 0) {
			ctx.ignore_cancel = true;
			continue;
		}
		if (v == NULL)
			die("work: %s needs a value", a);
		i++;
		if (strcmp(a, "--url") == 0)
			co.url = v;
		else if (strcmp(a, "--token-file") == 0)
			co.token_file = v;
		else if (strcmp(a, "--log") == 0)
			log = v;
		else if (strcmp(a, "--threads") == 0)
			wo.threads = atoi(v);
		else if (strcmp(a, "--lease-ms") == 0)
			wo.lease_ms = (uint32_t) atol(v);
		else if (strcmp(a, "--tag") == 0)
			ctx.tag = v;
		else
			die("work: unknown option %s", a);
	}
	if (log == NULL || co.url == NULL || co.token_file == NULL)
		die("work: --url, --token-file and --log are required");
	ctx.log_fd = open_log(log);

	brooq_client *c;
	brooq_err     err = brooq_client_open(&co, &c);
	if (err != BROOQ_OK)
		die("work: %s: %s", brooq_strerror(err), brooq_last_message());
	if ((err = brooq_worker_new(c, &wo, &the_worker)) != BROOQ_OK ||
	    (err = brooq_worker_handle(the_worker, TOPIC, handler, &ctx)) != BROOQ_OK)
		die("work: %s: %s", brooq_strerror(err), brooq_last_message());
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	err                   = brooq_worker_run(the_worker);
	brooq_worker_stats st = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(the_worker, &st);
	fprintf(stderr,
		"brooq-chaos work: pid=%ld claimed=%" PRIu64 " settled=%" PRIu64 " lease_lost=%" PRIu64
		" hung=%" PRIu64 " errors=%" PRIu64 "\n",
		(long) getpid(), st.claimed, st.settled, st.lease_lost, st.hung, st.errors);
	brooq_worker_free(the_worker);
	brooq_client_close(c);
	return err == BROOQ_OK ? 0 : 1;
}

// ---- producer ----------------------------------------------------------------------------

typedef struct produce_opts {
	char       *urls[MAX_URLS];
	int         n_urls;
	const char *token_file, *ack;
	long        jobs, first;
	double      rate;
	int         batch, long_pct, fail_pct;
	int         long_min_ms, long_max_ms;
	unsigned    seed;
} produce_opts;

static void
parse_produce(int argc, char **argv, produce_opts *o)
{
	*o = (produce_opts) {.jobs        = 1000,
			     .first       = 1,
			     .rate        = 100,
			     .batch       = 10,
			     .seed        = 1,
			     .long_min_ms = 2000,
			     .long_max_ms = 6000};
	for (int i = 0; i < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (v == NULL)
			die("produce: %s needs a value", a);
		if (strcmp(a, "--url") == 0) {
			char *list = strdup(v);
			for (char *s = strtok(list, ","); s != NULL && o->n_urls < MAX_URLS;
			     s       = strtok(NULL, ","))
                                o->urls[o->n_urls++] = s;
		} else if (strcmp(a, "--token-file") == 0)
			o->token_file = v;
		else if (strcmp(a, "--ack") == 0)
			o->ack = v;
		else if (strcmp(a, "--jobs") == 0)
			o->jobs = atol(v);
		else if (strcmp(a, "--first") == 0)
			o->first = atol(v);
		else if (strcmp(a, "--rate") == 0)
			o->rate = atof(v);
		else if (strcmp(a, "--batch") == 0)
			o->batch = atoi(v);
		else if (strcmp(a, "--seed") == 0)
			o->seed = (unsigned) atol(v);
		else if (strcmp(a, "--long-pct") == 0)
			o->long_pct = atoi(v);
		else if (strcmp(a, "--long-ms") == 0) {
			if (sscanf(v, "%d-%d", &o->long_min_ms, &o->long_max_ms) != 2)
				die("produce: --long-ms MIN-MAX");
		} else if (strcmp(a, "--fail-pct") == 0)
			o->fail_pct = atoi(v);
		else
			die("produce: unknown option %s", a);
	}
	if (o->n_urls == 0 || o->token_file == NULL || o->ack == NULL)
		die("produce: --url, --token-file and --ack are required");
	if (o->batch < 1 || o->batch > MAX_BATCH || o->rate <= 0 || o->jobs < 0 || o->long_min_ms < 0 ||
	    o->long_max_ms < o->long_min_ms)
		die("produce: --batch 1..%d, --rate > 0, --jobs >= 0, --long-ms MIN-MAX", MAX_BATCH);
}

// What a job does: mostly short runs (0..40 ms); long_pct % run long_min_ms..long_max_ms
// (longer than a short lease: they live on heartbeats); fail_pct % of the short ones fail
// their first one or two attempts (long ones never fail: retries of a long job would
// make the drain long).
static void
job_payload(const produce_opts *o, unsigned *rnd, char *buf, size_t cap)
{
	bool is_long = rand_r(rnd) % 100 < o->long_pct;
	int  ms      = is_long ? o->long_min_ms + rand_r(rnd) % (o->long_max_ms - o->long_min_ms + 1)
			       : rand_r(rnd) % 40;
	int  fail    = !is_long && rand_r(rnd) % 100 < o->fail_pct ? 1 + rand_r(rnd) % 2 : 0;
	snprintf(buf, cap, "{\"ms\":%d,\"fail\":%d}", ms, fail);
}

// Sends jobs[0..n) until acknowledged, each try through the next client; false when
// stopping first.
static bool
send_batch(brooq_client **c, int n_c, int *next, int fd, const brooq_job_spec *jobs, size_t n,
	   brooq_enqueue_result *res)
{
	for (;;) {
		int       k   = *next;
		brooq_err err = brooq_enqueue(c[k], jobs, n, res);
		*next         = (k + 1) % n_c;
		if (err == BROOQ_OK) {
			int64_t t = wall_us();
			for (size_t i = 0; i < n; i++)
				log_line(fd, "A %s %" PRIu64 " %" PRId64 " %d %d\n", jobs[i].key + 1,
					 res[i].id, t, k, res[i].created ? 1 : 0);
			return true;
		}
		log_line(fd, "X %" PRId64 " %d %s\n", wall_us(), k, brooq_strerror(err));
		if (atomic_load(&stopping))
			return false;
		sleep_ms(50);
	}
}

static int
cmd_produce(int argc, char **argv)
{
	produce_opts o;
	parse_produce(argc, argv, &o);
	int                  fd = open_log(o.ack);
	brooq_client        *c[MAX_URLS];
	brooq_job_spec       jobs[MAX_BATCH];
	char                 keys[MAX_BATCH][32], payloads[MAX_BATCH][64];
	brooq_enqueue_result res[MAX_BATCH];
	for (size_t i_ = 0; i_ < MAX_BATCH; i_++)
		res[i_] = (brooq_enqueue_result) BROOQ_ENQUEUE_RESULT_INIT;
	for (int i = 0; i < o.n_urls; i++) {
		brooq_client_opts co = {
			.size = sizeof(co), .url = o.urls[i], .token_file = o.token_file, .timeout_ms = 5000};
		brooq_err err = brooq_client_open(&co, &c[i]);
		if (err != BROOQ_OK)
			die("produce: %s: %s", brooq_strerror(err), brooq_last_message());
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	unsigned rnd  = o.seed;
	int      next = 0;
	int64_t  t0 = mono_ms(), sent = 0;
	for (long seq = o.first; (o.jobs == 0 || seq < o.first + o.jobs) && !atomic_load(&stopping);) {
		size_t n = 0;
		for (; n < (size_t) o.batch && (o.jobs == 0 || seq < o.first + o.jobs); n++, seq++) {
			snprintf(keys[n], sizeof(keys[n]), "k%ld", seq);
			job_payload(&o, &rnd, payloads[n], sizeof(payloads[n]));
			jobs[n] = (brooq_job_spec) {.size    = sizeof(brooq_job_spec),
						    .topic   = TOPIC,
						    .payload = payloads[n],
						    .key     = keys[n]};
		}
		if (!send_batch(c, o.n_urls, &next, fd, jobs, n, res))
			break;
		sent += (int64_t) n;
		int64_t due = t0 + (int64_t) ((double) sent * 1000.0 / o.rate);
		if (due > mono_ms())
			sleep_ms(due - mono_ms());
	}
	for (int i = 0; i < o.n_urls; i++)
		brooq_client_close(c[i]);
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "work") == 0)
		return cmd_work(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "produce") == 0)
		return cmd_produce(argc - 2, argv + 2);
	fprintf(stderr, "usage: brooq-chaos work|produce OPTIONS (see tests/chaos/chaos.c)\n");
	return 2;
}
