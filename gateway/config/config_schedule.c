// SPDX-License-Identifier: MIT
// Gateway configuration: BROOQ_SCHEDULE_TICK and the schedules declared in BROOQ_SCHEDULES.
#define _GNU_SOURCE // memmem
#include "config.h"
#include "brq_units.h"
#include "config_parse.h"
#include "proto.h"
#include "schedule_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char var[] = "BROOQ_SCHEDULES";

// Where PostgreSQL (built with the system's tzdata) finds its zones.
#define ZONEINFO "/usr/share/zoneinfo"

// Trims blanks around the NUL-terminated s in place; returns the new start.
static char *
trim(char *s)
{
	while (brq_cfg_is_blank(*s) || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (brq_cfg_is_blank(s[n - 1]) || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

// Reads a number 1..max into *out; false (problem added) otherwise.
static bool
number(struct loader *L, const char *label, const char *key, const char *v, uint64_t max, uint32_t *out)
{
	uint64_t    n;
	const char *why;
	if (brq_parse_u64(v, &n, &why) != 0 || n < 1 || n > max) {
		brq_config_problem_add(L->p, "%s: %s: %s: must be between 1 and %llu", var, label, key,
				       (unsigned long long) max);
		return false;
	}
	*out = (uint32_t) n;
	return true;
}

// Applies "key=value" to s; false (problem added) when it is not one.
static bool
apply(struct loader *L, const char *label, char *kv, brq_schedule *s)
{
	char *eq = strchr(kv, '=');
	if (eq == NULL) {
		brq_config_problem_add(L->p, "%s: %s: expected key=value", var, label);
		return false;
	}
	*eq           = '\0';
	const char *k = trim(kv), *v = trim(eq + 1), *why;
	uint64_t    ms;
	if (strcmp(k, "topic") == 0) {
		s->topic = brq_str_c(v);
	} else if (strcmp(k, "cron") == 0) {
		s->cron = brq_str_c(v);
	} else if (strcmp(k, "tz") == 0) {
		s->tz = brq_str_c(v);
	} else if (strcmp(k, "payload") == 0) {
		s->payload = brq_str_c(v);
	} else if (strcmp(k, "every") == 0) {
		if (brq_parse_duration_ms(v, &ms, &why) != 0 || ms == 0) {
			brq_config_problem_add(L->p, "%s: %s: every: %s", var, label,
					       ms == 0 ? "must be at least 1s" : why);
			return false;
		}
		s->every_ms = ms;
	} else if (strcmp(k, "misfire") == 0) {
		if (strcmp(v, "skip") != 0 && strcmp(v, "catch_up") != 0) {
			brq_config_problem_add(L->p, "%s: %s: misfire: must be skip or catch_up", var, label);
			return false;
		}
		s->catch_up = strcmp(v, "catch_up") == 0;
	} else if (strcmp(k, "catch_up_max") == 0) {
		return number(L, label, k, v, BRQ_CATCH_UP_MAX, &s->catch_up_max);
	} else if (strcmp(k, "max_attempts") == 0) {
		return number(L, label, k, v, BRQ_ATTEMPTS_MAX, &s->max_attempts);
	} else {
		brq_config_problem_add(L->p,
				       "%s: %s: unknown key (use topic, cron, tz, every, misfire, "
				       "catch_up_max, max_attempts, payload)",
				       var, label);
		return false;
	}
	return true;
}

// True when zone tz (checked syntax: no "..", no leading '/') has a TZif file.
static bool
zone_known(brq_str tz)
{
	char        path[sizeof(ZONEINFO) + BRQ_SCHEDULE_TZ_MAX + 2];
	struct stat st;
	if (brq_str_eq(tz, "UTC"))
		return true;
	if (memmem(tz.ptr, tz.len, "..", 2) != NULL)
		return false;
	snprintf(path, sizeof(path), "%s/%.*s", ZONEINFO, (int) tz.len, tz.ptr);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// Parses one entry (NUL-terminated, modified in place) and appends it to cfg.
static void
parse_entry(struct loader *L, brq_config *cfg, size_t index, char *e)
{
	char label[BRQ_TOPIC_MAX + 32], err[256];
	e = trim(e);
	if (*e == '\0')
		return; // a trailing separator
	char *bar = strchr(e, '|');
	if (bar != NULL)
		*bar = '\0';
	brq_schedule s = {.name = brq_str_c(trim(e))};
	snprintf(label, sizeof(label), "entry %zu", index);
	if (brq_topic_valid(s.name.ptr, s.name.len))
		snprintf(label, sizeof(label), "%.*s", (int) s.name.len, s.name.ptr);
	size_t before = L->p->count;
	while (bar != NULL) {
		char *kv = bar + 1;
		bar      = strchr(kv, '|');
		if (bar != NULL)
			*bar = '\0';
		if (!apply(L, label, kv, &s))
			return;
	}
	for (size_t i = 0; i < cfg->n_schedules; i++)
		if (s.name.len == cfg->schedules[i].name.len &&
		    memcmp(s.name.ptr, cfg->schedules[i].name.ptr, s.name.len) == 0)
			brq_config_problem_add(L->p, "%s: %s: listed twice", var, label);
	if (s.payload.len > cfg->max_payload_bytes)
		brq_config_problem_add(L->p, "%s: %s: payload: larger than BROOQ_MAX_PAYLOAD", var, label);
	else if (brq_sched_check(&s, (uint32_t) cfg->max_payload_bytes, err, sizeof(err)) != 0)
		brq_config_problem_add(L->p, "%s: %s: %s", var, label, err);
	else if (s.cron.len > 0 && !zone_known(s.tz))
		brq_config_problem_add(L->p, "%s: %s: tz: no such zone in " ZONEINFO, var, label);
	if (L->p->count != before)
		return;
	BRQ_CFG_APPEND(L, cfg->schedules, cfg->n_schedules, s);
}

void
brq_cfg_get_schedules(struct loader *L, brq_config *cfg)
{
	uint64_t    tick;
	const char *why, *t = brq_cfg_src_get(&L->src, "BROOQ_SCHEDULE_TICK");
	if (t != NULL) {
		if (brq_parse_duration_ms(t, &tick, &why) != 0)
			brq_config_problem_add(L->p, "BROOQ_SCHEDULE_TICK: %s", why);
		else if (tick != 0 && (tick < 100 || tick > MS_PER_H))
			brq_config_problem_add(L->p, "BROOQ_SCHEDULE_TICK: must be 0 (off) or 100ms..1h");
		else
			cfg->schedule_tick_ms = tick;
	}
	const char *s = brq_cfg_src_get(&L->src, var);
	if (s == NULL)
		return;
	free(cfg->schedules_src);
	cfg->schedules_src = strdup(s);
	if (cfg->schedules_src == NULL) {
		L->is_oom = true;
		return;
	}
	char  *p     = cfg->schedules_src;
	size_t index = 1;
	for (;;) {
		char *end  = p + strcspn(p, ";\n");
		bool  last = *end == '\0';
		*end       = '\0';
		parse_entry(L, cfg, index++, p);
		if (last)
			break;
		p = end + 1;
	}
}
