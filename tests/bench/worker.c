// SPDX-License-Identifier: MIT
// brooq-bench-worker: the real worker runtime with a no-op handler, counting into shared memory.
//
// Usage: brooq-bench-worker --url URL --token-file FILE --topic TOPIC --threads N --shm PATH
// Runs until SIGTERM/SIGINT. Each handler call bumps the shared `handled` counter; when
// the driver asks for latencies, a payload {"t": <CLOCK_MONOTONIC ns>} written by the
// producer just before its enqueue gives enqueue -> handler start; when it counts jobs
// (the soak), "s": <sequence number> says which job this call ran.
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <brooq/brooq.h>

static brooq_worker *the_worker;

static void
on_signal(int sig)
{
	(void) sig;
	if (the_worker != NULL)
		brooq_worker_stop(the_worker); // async-signal-safe (brooq.h)
}

static void
handler(brooq_job_ctx *job, void *arg)
{
	bench_shm *shm  = arg;
	int64_t    now  = bench_now_ns();
	int64_t    zero = 0;
	atomic_compare_exchange_strong(&shm->first_ns, &zero, now);
	if (shm->record_latency || shm->seen_cap > 0) {
		size_t      len = 0;
		const char *p   = brooq_job_payload(job, &len);
		char        buf[64];
		if (p != NULL && len > 0) {
			if (len >= sizeof(buf))
				len = sizeof(buf) - 1;
			memcpy(buf, p, len);
			buf[len]      = '\0';
			const char *t = strstr(buf, "\"t\":");
			if (t != NULL && shm->record_latency) {
				uint64_t i = atomic_fetch_add(&shm->lat_n, 1);
				if (i < shm->lat_cap)
					shm->lat_ns[i] = now - strtoll(t + 4, NULL, 10);
			}
			// The soak numbers its jobs: one more handler call for this one.
			const char *s = strstr(buf, "\"s\":");
			if (s != NULL && shm->seen_cap > 0) {
				uint64_t k = strtoull(s + 4, NULL, 10);
				if (k < shm->seen_cap)
					atomic_fetch_add(&bench_shm_seen(shm)[k], 1);
			}
		}
	}
	// Counted last: when the driver sees `handled` reach its total, every sample
	// of those jobs is written.
	atomic_fetch_add(&shm->handled, 1);
	brooq_job_done(job);
}

static const char *
arg_after(int argc, char **argv, const char *name)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *url = arg_after(argc, argv, "--url");
	const char *tok = arg_after(argc, argv, "--token-file");
	const char *top = arg_after(argc, argv, "--topic");
	const char *thr = arg_after(argc, argv, "--threads");
	const char *shp = arg_after(argc, argv, "--shm");
	if (url == NULL || tok == NULL || top == NULL || thr == NULL || shp == NULL) {
		fprintf(stderr,
			"usage: brooq-bench-worker --url URL --token-file FILE --topic TOPIC"
			" --threads N --shm PATH\n");
		return 2;
	}
	int fd = open(shp, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "brooq-bench-worker: %s: %s\n", shp, strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || (size_t) st.st_size < sizeof(bench_shm)) {
		fprintf(stderr, "brooq-bench-worker: %s: bad size\n", shp);
		return 1;
	}
	bench_shm *shm = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED) {
		fprintf(stderr, "brooq-bench-worker: mmap: %s\n", strerror(errno));
		return 1;
	}

	brooq_client     *c  = NULL;
	brooq_client_opts co = {
		.size = sizeof(brooq_client_opts), .url = url, .token_file = tok, .timeout_ms = 30000};
	brooq_err e = brooq_client_open(&co, &c);
	if (e != BROOQ_OK) {
		fprintf(stderr, "brooq-bench-worker: open: %s: %s\n", brooq_strerror(e),
			brooq_last_message());
		return 1;
	}
	brooq_worker_opts wo = {
		.size = sizeof(brooq_worker_opts), .name = "bench", .threads = atoi(thr), .wait_ms = 30000};
	brooq_worker *w = NULL;
	if ((e = brooq_worker_new(c, &wo, &w)) != BROOQ_OK ||
	    (e = brooq_worker_handle(w, top, handler, shm)) != BROOQ_OK) {
		fprintf(stderr, "brooq-bench-worker: worker: %s: %s\n", brooq_strerror(e),
			brooq_last_message());
		return 1;
	}
	the_worker          = w;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	e                     = brooq_worker_run(w);
	brooq_worker_stats ws = BROOQ_WORKER_STATS_INIT;
	brooq_worker_get_stats(w, &ws);
	if (e != BROOQ_OK || ws.errors > 0 || ws.lease_lost > 0)
		fprintf(stderr,
			"brooq-bench-worker: run: %s; claimed=%llu settled=%llu lease_lost=%llu "
			"errors=%llu\n",
			brooq_strerror(e), (unsigned long long) ws.claimed, (unsigned long long) ws.settled,
			(unsigned long long) ws.lease_lost, (unsigned long long) ws.errors);
	the_worker = NULL;
	brooq_worker_free(w);
	brooq_client_close(c);
	munmap(shm, (size_t) st.st_size);
	return e == BROOQ_OK ? 0 : 1;
}
