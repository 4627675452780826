// SPDX-License-Identifier: MIT
// The report: medians (min-max) of a results file, gateway/raw ratios and the targets.
//
// Input: the JSON lines written by bench_result(). Output: a markdown table on stdout
// and, with --json, a JSON summary. BROOQ_BENCH_META, if set, must be a JSON object
// (machine, settings); it is copied into the summary as "meta".
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 256
#define MAX_RUNS   16

typedef struct group {
	char   scenario[64], variant[16], metric[48], unit[16];
	double v[MAX_RUNS];
	int    n;
} group;

typedef struct summary {
	double median, min, max;
	int    n;
} summary;

// What a row is measured against (issue 14).
typedef enum { T_NONE, T_GE, T_LE } target_kind;

typedef struct row_spec {
	const char *scenario, *metric, *title;
	target_kind abs; // value against abs_value
	double      abs_value;
	double      min_ratio;   // gateway/raw at least this (0: none)
	double      min_minimal; // gateway / the minimal-SQL comparator's rate at least this (0: none)
} row_spec;

// The minimal-SQL comparator (minimal.c): its own scenario, variant "minimal".
#define MINIMAL_SCENARIO "drain_minimal_sql"

static const row_spec specs[] = {
	{"enqueue_b1_p1", "rate", "enqueue, 1 job/RPC, 1 producer", T_NONE, 0, 0.80, 0},
	{"enqueue_b1_p16", "rate", "enqueue, 1 job/RPC, 16 producers", T_NONE, 0, 0.80, 0},
	{"enqueue_b100_p1", "rate", "enqueue, 100 jobs/RPC, 1 producer", T_NONE, 0, 0.90, 0},
	{"enqueue_b100_p8", "rate", "enqueue, 100 jobs/RPC, 8 producers", T_NONE, 0, 0, 0},
	{MINIMAL_SCENARIO, "rate", "minimal SQL loop: 8 conns, claim 32 SKIP LOCKED, settle by id array",
	 T_NONE, 0, 0, 0},
	{"drain_c8", "rate", "drain 100k no-op jobs, concurrency 8", T_NONE, 0, 0, 1.5},
	{"drain_c32", "rate", "drain 100k no-op jobs, concurrency 32", T_NONE, 0, 1.0, 1.6},
	{"drain_c32", "cpu_postgres", "PostgreSQL CPU per drained job, c32", T_LE, 25, 0, 0},
	{"drain_c32", "cpu_gateway_clients", "gateway + worker-process CPU per no-op job, c32", T_LE, 12, 0,
	 0},
	{"drain_c32_discard", "rate", "drain 100k, c32, opt-in discard_done (done rows deleted)", T_NONE, 0,
	 0, 0},
	{"drain_c32_discard", "cpu_postgres", "PostgreSQL CPU per drained job, c32, discard_done", T_NONE, 0,
	 0, 0},
	{"latency", "start_p50", "enqueue -> handler start, 200/s, p50", T_LE, 800, 0, 0},
	{"latency", "start_p99", "enqueue -> handler start, 200/s, p99", T_LE, 1500, 0, 0},
	{"latency", "start_max", "enqueue -> handler start, 200/s, max", T_NONE, 0, 0, 0},
	{"ping_c1", "rtt_p50", "ping over ipc, 1 client, p50", T_NONE, 0, 0, 0},
	{"ping_c1", "rtt_p99", "ping over ipc, 1 client, p99", T_NONE, 0, 0, 0},
	{"ping_c16", "rtt_p50", "ping over ipc, 16 clients, p50", T_NONE, 0, 0, 0},
	{"ping_c16", "rtt_p99", "ping over ipc, 16 clients, p99", T_NONE, 0, 0, 0},
	{"socket_ping_c1", "rtt_p50", "bare Unix-socket round trip (no NNG), 1 client, p50", T_NONE, 0, 0, 0},
	{"socket_ping_c1", "rtt_p99", "bare Unix-socket round trip (no NNG), 1 client, p99", T_NONE, 0, 0, 0},
	{"socket_ping_c16", "rtt_p50", "bare Unix-socket round trip (no NNG), 16 clients, p50", T_NONE, 0, 0,
	 0},
	{"console_overview", "p50", "console overview, 1M jobs in the table, p50", T_NONE, 0, 0, 0},
	{"console_overview", "p99", "console overview, 1M jobs in the table, p99", T_LE, 100, 0, 0},
	{"console_overview", "max", "console overview, 1M jobs in the table, max", T_NONE, 0, 0, 0},
	{"longpoll_1000", "rss", "gateway RSS, 1,000 parked long-polls (fresh gateway)", T_LE, 32, 0, 0},
	{"gateway_after_load", "rss", "gateway RSS after the throughput scenarios", T_LE, 24, 0, 0},
	{"longpoll_1000", "db_busy", "DB connections busy, 1,000 parked long-polls", T_LE, 0, 0, 0},
};

static group groups[MAX_GROUPS];
static int   n_groups;

static group *
find(const char *scenario, const char *variant, const char *metric)
{
	for (int i = 0; i < n_groups; i++)
		if (strcmp(groups[i].scenario, scenario) == 0 && strcmp(groups[i].variant, variant) == 0 &&
		    strcmp(groups[i].metric, metric) == 0)
			return &groups[i];
	return NULL;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

static summary
summarize(const group *g)
{
	summary s = {0};
	if (g == NULL || g->n == 0)
		return s;
	double v[MAX_RUNS];
	memcpy(v, g->v, sizeof(double) * (size_t) g->n);
	qsort(v, (size_t) g->n, sizeof(double), cmp_d);
	s.n      = g->n;
	s.min    = v[0];
	s.max    = v[g->n - 1];
	s.median = g->n % 2 ? v[g->n / 2] : (v[g->n / 2 - 1] + v[g->n / 2]) / 2;
	return s;
}

// 12345.6 -> "12,346"; small values keep one decimal.
static void
fmt_num(char *buf, size_t cap, double x)
{
	if (fabs(x) < 1000) {
		snprintf(buf, cap, "%.1f", x);
		return;
	}
	char digits[32];
	snprintf(digits, sizeof(digits), "%.0f", x);
	size_t len = strlen(digits), o = 0;
	for (size_t i = 0; i < len && o + 2 < cap; i++) {
		if (i > 0 && (len - i) % 3 == 0 && digits[i - 1] != '-')
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

static void
fmt_summary(char *buf, size_t cap, summary s)
{
	char m[24], lo[24], hi[24];
	if (s.n == 0) {
		snprintf(buf, cap, "-");
		return;
	}
	fmt_num(m, sizeof(m), s.median);
	if (s.n == 1) {
		snprintf(buf, cap, "%s", m);
		return;
	}
	fmt_num(lo, sizeof(lo), s.min);
	fmt_num(hi, sizeof(hi), s.max);
	snprintf(buf, cap, "%s (%s–%s)", m, lo, hi);
}

static bool
load(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "brooq-bench: %s: %s\n", path, strerror(errno));
		return false;
	}
	char line[1024];
	while (fgets(line, sizeof(line), f) != NULL) {
		group  in;
		int    run;
		double value;
		if (sscanf(line,
			   "{\"run\":%d,\"scenario\":\"%63[^\"]\",\"variant\":\"%15[^\"]\",\"metric\":\"%47[^"
			   "\"]\","
			   "\"unit\":\"%15[^\"]\",\"value\":%lf}",
			   &run, in.scenario, in.variant, in.metric, in.unit, &value) != 6)
			continue;
		group *g = find(in.scenario, in.variant, in.metric);
		if (g == NULL) {
			if (n_groups == MAX_GROUPS)
				continue;
			g = &groups[n_groups++];
			memcpy(g, &in, sizeof(*g));
			g->n = 0;
		}
		if (g->n < MAX_RUNS)
			g->v[g->n++] = value;
	}
	fclose(f);
	return true;
}

// One table row (and JSON element) for scenario/metric; `title` NULL: generic.
static void
emit(FILE *json, bool *first, const char *scenario, const char *metric, const char *title,
     const row_spec *spec)
{
	group *gw  = find(scenario, "gateway", metric);
	group *raw = find(scenario, "raw", metric);
	if (gw == NULL && raw == NULL)
		raw = find(scenario, "minimal", metric); // the comparator's own row
	summary     sg = summarize(gw), sr = summarize(raw);
	const char *unit = gw ? gw->unit : raw ? raw->unit : "";
	char        a[128], b[128], ratio[32] = "", target[192] = "", status[32] = "";
	fmt_summary(a, sizeof(a), sg);
	fmt_summary(b, sizeof(b), sr);
	double r = (sg.n && sr.n && sr.median != 0) ? sg.median / sr.median : NAN;
	if (!isnan(r))
		snprintf(ratio, sizeof(ratio), "%.2f", r);
	bool has_target = false, met = true;
	if (spec != NULL && sg.n > 0) {
		char tv[32];
		fmt_num(tv, sizeof(tv), spec->abs_value);
		if (spec->abs != T_NONE) {
			has_target = true;
			snprintf(target, sizeof(target), "%s %s %s", spec->abs == T_GE ? "≥" : "≤",
				 spec->abs_value == 0 ? "0" : tv, unit);
			met = spec->abs == T_GE ? sg.median >= spec->abs_value : sg.median <= spec->abs_value;
		}
		if (spec->min_ratio > 0) {
			size_t len = strlen(target);
			snprintf(target + len, sizeof(target) - len, "%s≥ %.2f × raw", len ? ", " : "",
				 spec->min_ratio);
			has_target = true;
			met        = met && !isnan(r) && r >= spec->min_ratio;
		}
		if (spec->min_minimal > 0) {
			// The comparator's speed moves by a third from run to run (docs/benchmarks.md):
			// the ratio is given against its median (the rule) and against its
			// fastest run, and counts as met only when both reach the target, so that a
			// slow comparator cannot make a target look met.
			summary sm   = summarize(find(MINIMAL_SCENARIO, "minimal", metric));
			double  rm   = sm.n && sm.median != 0 ? sg.median / sm.median : NAN;
			double  rmax = sm.n && sm.max != 0 ? sg.median / sm.max : NAN;
			size_t  len  = strlen(target);
			snprintf(target + len, sizeof(target) - len,
				 "%s≥ %.2f × minimal SQL (now %.2f; %.2f against its fastest run)",
				 len ? ", " : "", spec->min_minimal, rm, rmax);
			has_target = true;
			met = met && !isnan(rm) && rm >= spec->min_minimal && rmax >= spec->min_minimal;
		}
		if (has_target)
			snprintf(status, sizeof(status), "%s", met ? "met" : "**missed**");
	}
	char what[96];
	snprintf(what, sizeof(what), "%s%s%s", title ? "" : metric, title ? "" : ", ", unit);
	printf("| %s | %s | %s | %s | %s | %s | %s |\n", title ? title : scenario, what, a, b, ratio, target,
	       status);
	if (json == NULL)
		return;
	fprintf(json, "%s\n  {\"scenario\":\"%s\",\"metric\":\"%s\",\"unit\":\"%s\",\"title\":\"%s\"",
		*first ? "" : ",", scenario, metric, unit, title ? title : scenario);
	*first             = false;
	const group *vs[2] = {gw, raw};
	const char  *vn[2] = {"gateway", "raw"};
	for (int k = 0; k < 2; k++) {
		summary s = summarize(vs[k]);
		if (s.n == 0)
			continue;
		fprintf(json, ",\"%s\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"runs\":[", vn[k],
			s.median, s.min, s.max);
		for (int i = 0; i < vs[k]->n; i++)
			fprintf(json, "%s%.3f", i ? "," : "", vs[k]->v[i]);
		fputs("]}", json);
	}
	if (!isnan(r))
		fprintf(json, ",\"ratio_gateway_raw\":%.4f", r);
	if (has_target)
		fprintf(json, ",\"target\":\"%s\",\"met\":%s", target, met ? "true" : "false");
	fputs("}", json);
}

int
bench_report(const bench_opts *o, const char *in)
{
	if (!load(in))
		return 1;
	FILE *json = NULL;
	if (o->json_out != NULL && (json = fopen(o->json_out, "w")) == NULL)
		bench_die("%s: %s", o->json_out, strerror(errno));
	if (json != NULL) {
		const char *meta = getenv("BROOQ_BENCH_META");
		fprintf(json, "{\"meta\":%s,\"results\":[", meta && *meta ? meta : "{}");
	}
	bool first            = true;
	bool used[MAX_GROUPS] = {false};
	printf("| Scenario | Unit | brooq gateway: median (min–max) | baseline: raw SQL, same statements"
	       " (ping: bare NNG echo; socket: no NNG; minimal: its own loop) | gateway/baseline | Target "
	       "(issue 14) | "
	       "Status |\n");
	printf("|---|---|---:|---:|---:|---|---|\n");
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const row_spec *s = &specs[i];
		if (find(s->scenario, "gateway", s->metric) == NULL &&
		    find(s->scenario, "raw", s->metric) == NULL)
			continue;
		emit(json, &first, s->scenario, s->metric, s->title, s);
		for (int g = 0; g < n_groups; g++)
			if (strcmp(groups[g].scenario, s->scenario) == 0 &&
			    strcmp(groups[g].metric, s->metric) == 0)
				used[g] = true;
	}
	// Everything else (secondary figures, growth runs), in file order.
	for (int g = 0; g < n_groups; g++) {
		if (used[g])
			continue;
		emit(json, &first, groups[g].scenario, groups[g].metric, NULL, NULL);
		for (int k = g; k < n_groups; k++)
			if (strcmp(groups[k].scenario, groups[g].scenario) == 0 &&
			    strcmp(groups[k].metric, groups[g].metric) == 0)
				used[k] = true;
	}
	if (json != NULL) {
		fputs("\n]}\n", json);
		fclose(json);
	}
	return 0;
}
