// SPDX-License-Identifier: MIT
// Gateway configuration: BROOQ_TOPIC_OVERRIDES, per-topic max_attempts, backoff, lease,
// timeouts, limits, discard_done and max_lost_leases.
#include "config.h"
#include "brq_units.h"
#include "config_parse.h"
#include "text.h" // proto: brq_topic_valid, the one topic rule

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Trims blanks in place on [*a, *b).
static void
trim_span(const char **a, const char **b)
{
	while (*a < *b && brq_cfg_is_blank(**a)) {
		(*a)++;
	}
	while (*b > *a && brq_cfg_is_blank((*b)[-1])) {
		(*b)--;
	}
}

// Trims the span [*a, *b) and returns the place of its first sep, or NULL when the span is
// empty (*is_empty) or has none.
static const char *
trim_find(const char **a, const char **b, char sep, bool *is_empty)
{
	trim_span(a, b);
	*is_empty = *a == *b;
	return memchr(*a, sep, (size_t) (*b - *a));
}

static const char var[] = "BROOQ_TOPIC_OVERRIDES";

// The has_ flag of the override key [ka, kb) and its name, or NULL for an unknown key.
static bool *
override_key(brq_topic_override *o, const char *ka, const char *kb, const char **key)
{
	static const char *const names[] = {"max_attempts",    "backoff_base",       "backoff_max", "lease",
					    "attempt_timeout", "max_execution_time", "concurrency", "rate",
					    "discard_done",    "max_lost_leases"};
	bool *const              has[]   = {
			       &o->has_max_attempts,    &o->has_backoff_base,   &o->has_backoff_max, &o->has_lease,
			       &o->has_attempt_timeout, &o->has_max_execution,  &o->has_concurrency, &o->has_rate,
			       &o->has_discard_done,    &o->has_max_lost_leases};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((size_t) (kb - ka) == strlen(names[i]) && memcmp(ka, names[i], (size_t) (kb - ka)) == 0) {
			*key = names[i];
			return has[i];
		}
	}
	return NULL;
}

// Parses the value of one override key (`has` names which) into o.
static void
parse_override_value(struct loader *L, const char *label, const char *key, const char *val, bool *has,
		     brq_topic_override *o)
{
	char        lo[32], hi[32];
	const char *why;
	uint64_t    v, min, max, *out;

	if (has == &o->has_discard_done) {
		if (brq_config_parse_bool(val, &o->discard_done, &why) != 0)
			brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
		else
			*has = true;
		return;
	}
	if (has == &o->has_concurrency || has == &o->has_rate) {
		if (brq_parse_u64(val, &v, &why) != 0) {
			brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
		} else if (v > 1000000) {
			brq_config_problem_add(L->p, "%s: %s: %s: must be between 0 (no limit) and 1000000",
					       var, label, key);
		} else {
			*(has == &o->has_concurrency ? &o->concurrency : &o->rate) = (uint32_t) v;
			*has                                                       = true;
		}
		return;
	}
	if (has == &o->has_max_lost_leases) {
		if (brq_parse_u64(val, &v, &why) != 0) {
			brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
		} else if (v > MAX_LOST_LEASES_MAX) {
			brq_config_problem_add(L->p, "%s: %s: %s: must be between 0 (never) and %d", var,
					       label, key, MAX_LOST_LEASES_MAX);
		} else {
			o->max_lost_leases = (uint32_t) v;
			*has               = true;
		}
		return;
	}
	if (has == &o->has_max_attempts) {
		if (brq_parse_u64(val, &v, &why) != 0) {
			brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
		} else if (v < MAX_ATTEMPTS_MIN || v > MAX_ATTEMPTS_MAX) {
			brq_config_problem_add(L->p, "%s: %s: %s: must be between %d and %d", var, label, key,
					       MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX);
		} else {
			o->max_attempts = (uint32_t) v;
			*has            = true;
		}
		return;
	}
	if (has == &o->has_backoff_base) {
		min = BACKOFF_BASE_MIN_MS, max = BACKOFF_BASE_MAX_MS, out = &o->backoff_base_ms;
	} else if (has == &o->has_backoff_max) {
		min = BACKOFF_MAX_MIN_MS, max = BACKOFF_MAX_MAX_MS, out = &o->backoff_max_ms;
	} else if (has == &o->has_attempt_timeout || has == &o->has_max_execution) {
		// 0 turns the global timeout off for this topic.
		min = 0, max = TIMEOUT_MAX_MS;
		out = has == &o->has_attempt_timeout ? &o->attempt_timeout_ms : &o->max_execution_ms;
	} else {
		min = LEASE_MIN_MS, max = LEASE_MAX_MS, out = &o->lease_ms;
	}
	if (brq_parse_duration_ms(val, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s: %s: %s", var, label, key, why);
	} else if (min == 0 && v != 0 && v < TIMEOUT_MIN_MS) {
		brq_config_problem_add(L->p, "%s: %s: %s: must be 0 (none) or 100ms..7d", var, label, key);
	} else if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: %s: %s: must be between %s and %s", var, label, key,
				       brq_fmt_duration(lo, sizeof(lo), min),
				       brq_fmt_duration(hi, sizeof(hi), max));
	} else {
		*out = v;
		*has = true;
	}
}

// Parses one "key=value" of a topic entry into o. `label` names the entry in problems.
static void
parse_override_kv(struct loader *L, const char *label, const char *a, const char *b, brq_topic_override *o)
{
	char        val[64];
	const char *key = NULL;

	bool        is_empty;
	const char *eq = trim_find(&a, &b, '=', &is_empty);
	if (eq == NULL) {
		brq_config_problem_add(
			L->p, is_empty ? "%s: %s: empty setting" : "%s: %s: expected key=value", var, label);
		return;
	}
	const char *ka = a, *kb = eq, *va = eq + 1, *vb = b;
	trim_span(&ka, &kb);
	trim_span(&va, &vb);
	if ((size_t) (vb - va) >= sizeof(val)) {
		brq_config_problem_add(L->p, "%s: %s: value too long", var, label);
		return;
	}
	memcpy(val, va, (size_t) (vb - va));
	val[vb - va] = '\0';

	bool *has = override_key(o, ka, kb, &key);
	if (has == NULL) {
		brq_config_problem_add(
			L->p,
			"%s: %s: unknown key (use max_attempts, backoff_base, backoff_max, lease, "
			"attempt_timeout, max_execution_time, concurrency, rate, discard_done, "
			"max_lost_leases)",
			var, label);
	} else if (*has) {
		brq_config_problem_add(L->p, "%s: %s: %s given twice", var, label, key);
	} else if (val[0] == '\0') {
		brq_config_problem_add(L->p, "%s: %s: %s: empty value", var, label, key);
	} else {
		parse_override_value(L, label, key, val, has, o);
	}
}

// Parses one "topic:k=v,k=v" entry [a, b) into a new array element.
static void
parse_override_entry(struct loader *L, brq_config *cfg, size_t index, const char *a, const char *b)
{
	char label[BRQ_CONFIG_TOPIC_MAX + 32];

	bool        is_empty;
	const char *colon = trim_find(&a, &b, ':', &is_empty);
	if (colon == NULL) {
		brq_config_problem_add(L->p,
				       is_empty ? "%s: entry %zu is empty"
						: "%s: entry %zu: expected topic:key=value,...",
				       var, index);
		return;
	}
	const char *ta = a, *tb = colon;
	trim_span(&ta, &tb);
	if (!brq_topic_valid(ta, (size_t) (tb - ta))) {
		brq_config_problem_add(
			L->p, "%s: entry %zu: topic must match [a-z0-9][a-z0-9._-]* and be at most %d bytes",
			var, index, BRQ_CONFIG_TOPIC_MAX);
		return;
	}
	brq_topic_override o;
	memset(&o, 0, sizeof(o));
	memcpy(o.topic, ta, (size_t) (tb - ta));
	snprintf(label, sizeof(label), "%s", o.topic);
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		if (strcmp(cfg->topic_overrides[i].topic, o.topic) == 0) {
			brq_config_problem_add(L->p, "%s: %s: topic listed twice", var, label);
			return;
		}
	}
	const char *s  = colon + 1;
	const char *sa = s, *sb = b;
	trim_span(&sa, &sb);
	if (sa == sb) {
		brq_config_problem_add(L->p, "%s: %s: no settings", var, label);
		return;
	}
	size_t before = L->p->count;
	for (;;) {
		const char *comma = memchr(s, ',', (size_t) (b - s));
		const char *end   = comma != NULL ? comma : b;
		parse_override_kv(L, label, s, end, &o);
		if (comma == NULL) {
			break;
		}
		s = comma + 1;
	}
	if (L->p->count != before) {
		return;
	}
	if (cfg->n_topic_overrides == BRQ_CONFIG_MAX_TOPIC_OVERRIDES) {
		brq_config_problem_add(L->p, "%s: more than %d topics", var, BRQ_CONFIG_MAX_TOPIC_OVERRIDES);
		return;
	}
	BRQ_CFG_APPEND(L, cfg->topic_overrides, cfg->n_topic_overrides, o);
}

void
brq_cfg_get_topic_overrides(struct loader *L, brq_config *cfg)
{
	const char *s = brq_cfg_src_get(&L->src, "BROOQ_TOPIC_OVERRIDES");
	if (s == NULL) {
		return;
	}
	size_t index = 1;
	for (;;) {
		const char *semi = strchr(s, ';');
		const char *end  = semi != NULL ? semi : s + strlen(s);
		parse_override_entry(L, cfg, index++, s, end);
		if (semi == NULL) {
			break;
		}
		s = semi + 1;
	}
}

void
brq_cfg_check_topic_backoff(struct loader *L, const brq_config *cfg)
{
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		const brq_topic_override *o = &cfg->topic_overrides[i];
		uint64_t eb                 = o->has_backoff_base ? o->backoff_base_ms : cfg->backoff_base_ms;
		uint64_t em                 = o->has_backoff_max ? o->backoff_max_ms : cfg->backoff_max_ms;
		if (em < eb) {
			brq_config_problem_add(L->p,
					       "%s: %s: backoff_max must be at least backoff_base "
					       "(inherited values included)",
					       var, o->topic);
		}
	}
}

void
brq_cfg_check_topic_timeouts(struct loader *L, const brq_config *cfg)
{
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		const brq_topic_override *o = &cfg->topic_overrides[i];
		if (!o->has_attempt_timeout && !o->has_max_execution) {
			continue; // the globals, checked once
		}
		uint64_t at = o->has_attempt_timeout ? o->attempt_timeout_ms : cfg->attempt_timeout_ms;
		uint64_t mx = o->has_max_execution ? o->max_execution_ms : cfg->max_execution_ms;
		if (mx != 0 && at > mx) {
			brq_config_problem_add(L->p,
					       "%s: %s: attempt_timeout must not exceed max_execution_time "
					       "(inherited values included)",
					       var, o->topic);
		}
	}
}

uint64_t
brq_cfg_min_lease_ms(const brq_config *cfg)
{
	uint64_t min_lease = cfg->lease_ms;
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		if (cfg->topic_overrides[i].has_lease && cfg->topic_overrides[i].lease_ms < min_lease) {
			min_lease = cfg->topic_overrides[i].lease_ms;
		}
	}
	return min_lease;
}

bool
brq_config_discards_done(const brq_config *cfg)
{
	for (size_t i = 0; i < cfg->n_topic_overrides; i++) {
		if (cfg->topic_overrides[i].discard_done) {
			return true;
		}
	}
	return false;
}
