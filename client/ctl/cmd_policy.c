/* SPDX-License-Identifier: MIT */
/* brooqctl's per-topic policy commands: pause, resume, limits, topics (admin token). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "fmt.h"

/* A limit for people: "-" when unlimited. */
static const char *
limit_text(uint32_t v, char *buf, size_t cap)
{
	if (v == 0)
		return "-";
	snprintf(buf, cap, "%" PRIu32, v);
	return buf;
}

/* A policy map of docs/protocol.md §7.10 in its JSON form: a limit of 0 is none, null. */
static void
print_policy_json(const brooq_topic_policy *p)
{
	fputs("{\"topic\":", stdout);
	brq_ctl_json_cstr(stdout, p->topic);
	printf(",\"paused\":%s", p->paused ? "true" : "false");
	brq_ctl_json_opt_u64(stdout, "max_running", p->max_running, p->max_running > 0);
	brq_ctl_json_opt_u64(stdout, "rate_per_s", p->rate_per_s, p->rate_per_s > 0);
	printf(",\"running\":%" PRIu64 "}", p->running);
}

static void
print_policy_line(const char *what, const brooq_topic_policy *p)
{
	char a[16], b[16];
	printf("topic ");
	brq_ctl_print_safe(stdout, p->topic);
	printf(" %s: paused=%s max_running=%s rate_per_s=%s running=%" PRIu64 "\n", what,
	       p->paused ? "yes" : "no", limit_text(p->max_running, a, sizeof(a)),
	       limit_text(p->rate_per_s, b, sizeof(b)), p->running);
}

/* Runs one change of TOPIC (argv[0]) and prints the policy after it. */
static int
change(const brq_ctl *ctl, int argc, char **argv, const char *what)
{
	brooq_client      *c;
	brooq_topic_policy p = BROOQ_TOPIC_POLICY_INIT;
	int                rc;
	brooq_err          err;

	if (argc != 1)
		return brq_ctl_usage(ctl, "expected exactly one TOPIC");
	if (strcmp(what, "limits") == 0 && ctl->concurrency == BROOQ_LIMIT_KEEP &&
	    ctl->rate == BROOQ_LIMIT_KEEP)
		return brq_ctl_usage(ctl, "limits needs --concurrency N or --rate R (0: unlimited)");
	if ((rc = brq_ctl_open_client(ctl, &c)) != BRQ_EXIT_OK)
		return rc;
	if (strcmp(what, "paused") == 0)
		err = brooq_pause(c, argv[0], &p);
	else if (strcmp(what, "resumed") == 0)
		err = brooq_resume(c, argv[0], &p);
	else
		err = brooq_topic_limits(c, argv[0], ctl->concurrency, ctl->rate, &p);
	if (err != BROOQ_OK) {
		rc = brq_ctl_report(ctl, err);
	} else if (ctl->json) {
		/* The reply's form: the policy under "policy". */
		fputs("{\"policy\":", stdout);
		print_policy_json(&p);
		fputs("}\n", stdout);
	} else {
		print_policy_line(what, &p);
	}
	brooq_client_close(c);
	return rc;
}

int
brq_ctl_pause(const brq_ctl *ctl, int argc, char **argv)
{
	return change(ctl, argc, argv, "paused");
}

int
brq_ctl_resume(const brq_ctl *ctl, int argc, char **argv)
{
	return change(ctl, argc, argv, "resumed");
}

int
brq_ctl_limits(const brq_ctl *ctl, int argc, char **argv)
{
	return change(ctl, argc, argv, "limits");
}

int
brq_ctl_topics(const brq_ctl *ctl, int argc, char **argv)
{
	brooq_client        *c;
	brooq_topic_policy **all;
	size_t               n;
	int                  rc;
	(void) argv;

	if (argc != 0)
		return brq_ctl_usage(ctl, "takes no arguments");
	if ((rc = brq_ctl_open_client(ctl, &c)) != BRQ_EXIT_OK)
		return rc;
	brooq_err err = brooq_topics(c, &all, &n);
	if (err != BROOQ_OK) {
		rc = brq_ctl_report(ctl, err);
	} else if (ctl->json) {
		fputs("{\"topics\":[", stdout);
		for (size_t i = 0; i < n; i++) {
			fputs(i > 0 ? "," : "", stdout);
			print_policy_json(all[i]);
		}
		fputs("]}\n", stdout);
	} else if (n == 0) {
		printf("no topic is paused or limited\n");
	} else {
		printf("%-24s %-6s %11s %10s %8s\n", "TOPIC", "PAUSED", "MAX_RUNNING", "RATE_PER_S",
		       "RUNNING");
		for (size_t i = 0; i < n; i++) {
			char a[16], b[16];
			brq_ctl_print_safe(stdout, all[i]->topic);
			int len = (int) strlen(all[i]->topic);
			printf("%*s %-6s %11s %10s %8" PRIu64 "\n", len < 24 ? 24 - len : 0, "",
			       all[i]->paused ? "yes" : "no", limit_text(all[i]->max_running, a, sizeof(a)),
			       limit_text(all[i]->rate_per_s, b, sizeof(b)), all[i]->running);
		}
	}
	brooq_topics_free(all, n);
	brooq_client_close(c);
	return rc;
}
