/* SPDX-License-Identifier: MIT */
/* brooqctl schedule list|add|remove: periodic jobs over libbrooq-client (admin token). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "brq_units.h"
#include "cmd.h"
#include "fmt.h"

/* "cron 'EXPR' ZONE" or "every D" of a schedule, into buf. */
static void
when(const brooq_schedule_info *s, char *buf, size_t cap)
{
	char d[32];
	if (s->cron != NULL)
		snprintf(buf, cap, "cron '%s' %s", s->cron, s->tz != NULL ? s->tz : "UTC");
	else
		snprintf(buf, cap, "every %s", brq_fmt_duration(d, sizeof(d), s->every_ms));
}

/* A schedule of schedule_list (docs/protocol.md §7.15) in its JSON form: every key, null
 * where the reply has none; the payload embedded as JSON, as a job's. */
static void
print_json_entry(const brooq_schedule_info *s)
{
	fputs("{\"name\":", stdout);
	brq_ctl_json_cstr(stdout, s->name);
	fputs(",\"topic\":", stdout);
	brq_ctl_json_cstr(stdout, s->topic);
	printf(",\"payload\":%s", s->payload != NULL && s->payload[0] != '\0' ? s->payload : "null");
	fputs(",\"cron\":", stdout);
	brq_ctl_json_cstr(stdout, s->cron);
	fputs(",\"tz\":", stdout);
	brq_ctl_json_cstr(stdout, s->tz);
	brq_ctl_json_opt_u64(stdout, "every_ms", s->every_ms, s->every_ms > 0);
	printf(",\"misfire\":\"%s\",\"catch_up_max\":%" PRIu32,
	       s->misfire == BROOQ_MISFIRE_CATCH_UP ? "catch_up" : "skip", s->catch_up_max);
	brq_ctl_json_opt_u64(stdout, "max_attempts", s->max_attempts, s->max_attempts > 0);
	printf(",\"enabled\":%s", s->enabled ? "true" : "false");
	brq_ctl_json_instant(stdout, "next_slot", s->next_slot_ms, s->next_slot_ms != 0);
	brq_ctl_json_instant(stdout, "last_slot", s->last_slot_ms, s->last_slot_ms != 0);
	fputs(",\"source\":", stdout);
	brq_ctl_json_cstr(stdout, s->source);
	fputs("}", stdout);
}

static void
print_table(brooq_schedule_info *const *s, size_t n)
{
	if (n == 0) {
		printf("no schedules\n");
		return;
	}
	printf("%-20s %-20s %-36s %-14s %-24s %-24s %s\n", "NAME", "TOPIC", "WHEN", "MISFIRE", "NEXT", "LAST",
	       "SOURCE");
	for (size_t i = 0; i < n; i++) {
		char w[320], next[BRQ_TIME_TEXT_MAX] = "-", last[BRQ_TIME_TEXT_MAX] = "-", mis[24];
		when(s[i], w, sizeof(w));
		if (s[i]->next_slot_ms != 0 && s[i]->enabled)
			brq_fmt_time_ms(next, sizeof(next), s[i]->next_slot_ms);
		else if (!s[i]->enabled)
			snprintf(next, sizeof(next), "disabled");
		if (s[i]->last_slot_ms != 0)
			brq_fmt_time_ms(last, sizeof(last), s[i]->last_slot_ms);
		if (s[i]->misfire == BROOQ_MISFIRE_CATCH_UP)
			snprintf(mis, sizeof(mis), "catch_up(%" PRIu32 ")", s[i]->catch_up_max);
		else
			snprintf(mis, sizeof(mis), "skip");
		brq_ctl_print_safe(stdout, s[i]->name);
		printf("%*s ", 20 - (int) strlen(s[i]->name) > 0 ? 20 - (int) strlen(s[i]->name) : 0, "");
		brq_ctl_print_safe(stdout, s[i]->topic);
		printf("%*s ", 20 - (int) strlen(s[i]->topic) > 0 ? 20 - (int) strlen(s[i]->topic) : 0, "");
		brq_ctl_print_safe(stdout, w);
		printf("%*s %-14s %-24s %-24s %s\n", 36 - (int) strlen(w) > 0 ? 36 - (int) strlen(w) : 0, "",
		       mis, next, last, s[i]->source);
	}
}

static int
cmd_list(const brq_ctl *ctl, brooq_client *c)
{
	brooq_schedule_info **s;
	size_t                n;
	brooq_err             err = brooq_schedule_list(c, &s, &n);
	if (err != BROOQ_OK)
		return brq_ctl_report(ctl, err);
	if (ctl->json) {
		fputs("{\"schedules\":[", stdout);
		for (size_t i = 0; i < n; i++) {
			fputs(i > 0 ? "," : "", stdout);
			print_json_entry(s[i]);
		}
		fputs("]}\n", stdout);
	} else {
		print_table(s, n);
	}
	brooq_schedule_list_free(s, n);
	return BRQ_EXIT_OK;
}

static int
cmd_add(const brq_ctl *ctl, brooq_client *c, const char *name, const char *topic)
{
	brooq_schedule s = BROOQ_SCHEDULE_INIT;
	s.name           = name;
	s.topic          = topic;
	s.payload        = ctl->payload;
	s.cron           = ctl->cron;
	s.tz             = ctl->tz;
	s.every_ms       = ctl->every_ms;
	s.catch_up_max   = ctl->catch_up_max;
	s.max_attempts   = ctl->max_attempts;
	if (ctl->misfire != NULL && strcmp(ctl->misfire, "catch_up") == 0)
		s.misfire = BROOQ_MISFIRE_CATCH_UP;
	else if (ctl->misfire != NULL && strcmp(ctl->misfire, "skip") != 0)
		return brq_ctl_usage(ctl, "--misfire '%s': must be skip or catch_up", ctl->misfire);
	if ((ctl->cron != NULL) == (ctl->every_ms > 0))
		return brq_ctl_usage(ctl, "schedule add needs exactly one of --cron and --every");
	bool      created;
	int64_t   next;
	char      iso[BRQ_TIME_TEXT_MAX];
	brooq_err err = brooq_schedule_add(c, &s, &created, &next);
	if (err != BROOQ_OK)
		return brq_ctl_report(ctl, err);
	brq_fmt_time_ms(iso, sizeof(iso), next);
	if (ctl->json) {
		fputs("{\"name\":", stdout);
		brq_ctl_json_cstr(stdout, name);
		printf(",\"created\":%s", created ? "true" : "false");
		brq_ctl_json_instant(stdout, "next_slot", next, true);
		fputs("}\n", stdout);
	} else {
		printf("schedule ");
		brq_ctl_print_safe(stdout, name);
		printf(" %s; next slot %s\n", created ? "added" : "replaced", iso);
	}
	return BRQ_EXIT_OK;
}

static int
cmd_remove(const brq_ctl *ctl, brooq_client *c, const char *name)
{
	brooq_err err = brooq_schedule_remove(c, name);
	if (err != BROOQ_OK)
		return brq_ctl_report(ctl, err);
	if (ctl->json) {
		fputs("{\"name\":", stdout);
		brq_ctl_json_cstr(stdout, name);
		fputs(",\"removed\":true}\n", stdout);
	} else {
		printf("schedule ");
		brq_ctl_print_safe(stdout, name);
		printf(" removed\n");
	}
	return BRQ_EXIT_OK;
}

int
brq_ctl_schedule(const brq_ctl *ctl, int argc, char **argv)
{
	const char *sub  = argc > 0 ? argv[0] : "";
	int         want = strcmp(sub, "list") == 0  ? 1
			: strcmp(sub, "add") == 0    ? 3
			: strcmp(sub, "remove") == 0 ? 2
						     : -1;
	if (want < 0)
		return brq_ctl_usage(ctl, "schedule needs list, add or remove");
	if (argc != want)
		return brq_ctl_usage(ctl, "schedule %s takes %s", sub,
				     want == 1           ? "no arguments"
					     : want == 2 ? "NAME"
							 : "NAME TOPIC");
	if (want != 3 &&
	    (ctl->cron || ctl->tz || ctl->payload || ctl->misfire || ctl->every_ms || ctl->catch_up_max ||
	     ctl->max_attempts))
		return brq_ctl_usage(ctl, "schedule %s takes no schedule options", sub);
	brooq_client *c;
	int           rc = brq_ctl_open_client(ctl, &c);
	if (rc != BRQ_EXIT_OK)
		return rc;
	if (want == 1)
		rc = cmd_list(ctl, c);
	else if (want == 2)
		rc = cmd_remove(ctl, c, argv[1]);
	else
		rc = cmd_add(ctl, c, argv[1], argv[2]);
	brooq_client_close(c);
	return rc;
}
