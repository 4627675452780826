/* SPDX-License-Identifier: MIT */
/* brooqctl's operator commands over libbrooq-client: jobs (the list), retry, delete. */
#include "cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brq_units.h"
#include "fmt.h"

/* Unix ms now (the --since/--until bounds are relative to it). */
static int64_t
wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- jobs ------------------------------------------------------------------------------ */

static void
print_page_json(const brooq_job_page *p)
{
	fputs("{\"jobs\":[", stdout);
	for (size_t i = 0; i < p->n; i++) {
		if (i > 0)
			fputc(',', stdout);
		brq_ctl_print_job_json(p->jobs[i]);
	}
	fputs("],\"next\":", stdout);
	brq_ctl_json_cstr(stdout, p->next);
	fputs("}\n", stdout);
}

/* One line per job: id, state, attempts, topic, created, last error (cut). */
static void
print_page_table(const brq_ctl *ctl, const brooq_job_page *p)
{
	printf("%-10s %-10s %-8s %-24s %-24s %s\n", "ID", "STATE", "ATTEMPTS", "TOPIC", "CREATED",
	       "LAST_ERROR");
	for (size_t i = 0; i < p->n; i++) {
		const brooq_job_info *j = p->jobs[i];
		char                  t[BRQ_TIME_TEXT_MAX], att[24], err[61] = "";
		brq_fmt_time_ms(t, sizeof(t), j->created_at_ms);
		snprintf(att, sizeof(att), "%" PRIu32 "/%" PRIu32, j->attempts, j->max_attempts);
		if (j->last_error != NULL)
			snprintf(err, sizeof(err), "%s", j->last_error);
		printf("%-10" PRIu64 " %-10s %-8s ", j->id, brooq_state_name(j->state), att);
		brq_ctl_print_safe(stdout, j->topic);
		printf("%*s %-24s ", (int) (strlen(j->topic) < 24 ? 24 - strlen(j->topic) : 0), "", t);
		brq_ctl_print_safe(stdout, j->last_error != NULL ? err : NULL);
		fputc('\n', stdout);
	}
	if (p->n == 0)
		puts("(no jobs)");
	/* The next page: the same command with --cursor (stderr keeps stdout a table). */
	if (p->next != NULL)
		fprintf(stderr, "brooqctl: %s: more jobs: add --cursor %s\n", ctl->cmd, p->next);
}

int
brq_ctl_jobs(const brq_ctl *ctl, int argc, char **argv)
{
	brooq_client   *c;
	brooq_job_page *p = NULL;
	int             rc;

	(void) argv;
	if (argc != 0)
		return brq_ctl_usage(ctl, "takes no arguments (filters are options: --topic, --state, ...)");
	brooq_list_opts o   = BROOQ_LIST_OPTS_INIT;
	int64_t         now = wall_ms();
	o.topic             = ctl->topic;
	o.has_state         = ctl->state >= 0;
	o.state             = ctl->state >= 0 ? (brooq_state) ctl->state : BROOQ_PENDING;
	o.key               = ctl->key;
	o.cursor            = ctl->cursor;
	o.limit             = ctl->limit;
	if (ctl->since_ms > 0)
		o.created_after_ms = ctl->since_ms < (uint64_t) now ? now - (int64_t) ctl->since_ms : 1;
	if (ctl->until_ms > 0)
		o.created_before_ms = ctl->until_ms < (uint64_t) now ? now - (int64_t) ctl->until_ms : 1;
	if ((rc = brq_ctl_open_client(ctl, &c)) != BRQ_EXIT_OK)
		return rc;
	brooq_err err = brooq_list(c, &o, &p);
	if (err != BROOQ_OK)
		rc = brq_ctl_report(ctl, err);
	else if (ctl->json)
		print_page_json(p);
	else
		print_page_table(ctl, p);
	brooq_job_page_free(p);
	brooq_client_close(c);
	return rc;
}

/* ---- retry ------------------------------------------------------------------------------- */

static int
retry_one(const brq_ctl *ctl, brooq_client *c, uint64_t id)
{
	uint64_t  new_id;
	bool      created;
	brooq_err err = brooq_retry(c, id, &new_id, &created);
	if (err != BROOQ_OK)
		return brq_ctl_report(ctl, err);
	if (ctl->json)
		printf("{\"id\":%" PRIu64 ",\"retried\":%d,\"ids\":[%" PRIu64 "]}\n", id, created ? 1 : 0,
		       new_id);
	else if (created)
		printf("job %" PRIu64 " retried as job %" PRIu64 "\n", id, new_id);
	else
		printf("job %" PRIu64 " was retried already, as job %" PRIu64 "; nothing changed\n", id,
		       new_id);
	return BRQ_EXIT_OK;
}

static int
retry_bulk(const brq_ctl *ctl, brooq_client *c)
{
	uint32_t  limit = ctl->limit > 0 ? ctl->limit : 100;
	uint64_t *ids   = calloc(limit, sizeof(*ids));
	size_t    n     = 0;
	if (ids == NULL)
		return brq_ctl_fail(ctl, BRQ_EXIT_FAIL, "out_of_memory", NULL, "out of memory");
	brooq_err err = brooq_retry_bulk(c, ctl->topic, (brooq_state) ctl->state, limit, ids, limit, &n);
	int       rc  = BRQ_EXIT_OK;
	if (err != BROOQ_OK) {
		rc = brq_ctl_report(ctl, err);
	} else {
		if (ctl->json)
			printf("{\"retried\":%zu,\"ids\":[", n);
		else
			printf("retried %zu job%s%s", n, n == 1 ? "" : "s", n > 0 ? ":" : "");
		for (size_t i = 0; i < n && i < limit; i++)
			printf("%s%" PRIu64, ctl->json && i > 0 ? "," : ctl->json ? "" : " ", ids[i]);
		puts(ctl->json ? "]}" : "");
	}
	free(ids);
	return rc;
}

int
brq_ctl_retry(const brq_ctl *ctl, int argc, char **argv)
{
	brooq_client *c;
	uint64_t      id = 0;
	int           rc;

	if (argc > 0 && ctl->topic != NULL)
		return brq_ctl_usage(ctl, "give a job ID, or --topic with --state (not both)");
	if (argc > 0 && (rc = brq_ctl_parse_id(ctl, argc, argv, &id)) != BRQ_EXIT_OK)
		return rc;
	if (argc == 0 && ctl->topic == NULL)
		return brq_ctl_usage(ctl, "give a job ID, or --topic T --state dead|canceled [--limit N]");
	if (argc == 0 && ctl->state != BROOQ_DEAD && ctl->state != BROOQ_CANCELED)
		return brq_ctl_usage(ctl, "retry --topic needs --state dead or --state canceled");
	if ((rc = brq_ctl_open_client(ctl, &c)) != BRQ_EXIT_OK)
		return rc;
	rc = id > 0 ? retry_one(ctl, c, id) : retry_bulk(ctl, c);
	brooq_client_close(c);
	return rc;
}

/* ---- delete ------------------------------------------------------------------------------- */

static int
delete_one(const brq_ctl *ctl, brooq_client *c, uint64_t id)
{
	brooq_err err = brooq_delete(c, id);
	if (err != BROOQ_OK)
		return brq_ctl_report(ctl, err);
	if (ctl->json)
		printf("{\"id\":%" PRIu64 ",\"deleted\":true}\n", id);
	else
		printf("job %" PRIu64 " deleted\n", id);
	return BRQ_EXIT_OK;
}

int
brq_ctl_delete(const brq_ctl *ctl, int argc, char **argv)
{
	return brq_ctl_run_for_id(ctl, argc, argv, delete_one);
}
