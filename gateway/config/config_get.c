// SPDX-License-Identifier: MIT
// One numeric setting of the table (config_settings.def: U32, DURATION, SIZE) read from
// the sources and checked against its row's bounds, for config.c and the subsystems'
// config_*.c files.
#include "config.h"

#include <stdlib.h>

#include "brq_units.h"
#include "config_parse.h"

// A quantity with a unit: how it is parsed and how its bounds are written.
typedef struct unit_syntax {
	int (*parse)(const char *s, uint64_t *out, const char **why);
	const char *(*fmt)(char *buf, size_t cap, uint64_t v);
	bool zero_plain; // a bound of 0 is written "0" (a duration of 0 has no unit)
} unit_syntax;

static const unit_syntax DURATION = {brq_parse_duration_ms, brq_fmt_duration, true};
static const unit_syntax SIZE     = {brq_parse_size, brq_fmt_size, false};

static enum got
get_quantity(struct loader *L, const unit_syntax *u, const char *name, uint64_t min, uint64_t max,
	     uint64_t *out)
{
	const char *s = brq_cfg_src_get(&L->src, name);
	const char *why;
	uint64_t    v;
	char        a[32], b[32];
	if (s == NULL) {
		return GOT_UNSET;
	}
	if (u->parse(s, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s", name, why);
		return GOT_BAD;
	}
	if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: must be between %s and %s", name,
				       min == 0 && u->zero_plain ? "0" : u->fmt(a, sizeof(a), min),
				       u->fmt(b, sizeof(b), max));
		return GOT_BAD;
	}
	*out = v;
	return GOT_OK;
}

static enum got
get_u32(struct loader *L, const char *name, uint32_t min, uint32_t max, uint32_t *out)
{
	const char *s = brq_cfg_src_get(&L->src, name);
	const char *why;
	uint64_t    v;
	if (s == NULL) {
		return GOT_UNSET;
	}
	if (brq_parse_u64(s, &v, &why) != 0) {
		brq_config_problem_add(L->p, "%s: %s", name, why);
		return GOT_BAD;
	}
	if (v < min || v > max) {
		brq_config_problem_add(L->p, "%s: must be between %u and %u", name, min, max);
		return GOT_BAD;
	}
	*out = (uint32_t) v;
	return GOT_OK;
}

enum got
brq_cfg_get_setting(struct loader *L, brq_setting_id id, brq_config *cfg)
{
	const brq_setting *s     = &brq_settings[id];
	void              *field = (char *) cfg + s->offset;
	switch (s->kind) {
	case BRQ_SK_U32: return get_u32(L, s->name, (uint32_t) s->min, (uint32_t) s->max, field);
	case BRQ_SK_DURATION: return get_quantity(L, &DURATION, s->name, s->min, s->max, field);
	case BRQ_SK_SIZE: return get_quantity(L, &SIZE, s->name, s->min, s->max, field);
	default: break;
	}
	// A bespoke setting has its own parser (its row's PARSER column): a call here is a
	// mistake in the code, not in the input.
	abort();
}

void
brq_cfg_numeric_defaults(brq_config *cfg)
{
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		const brq_setting *s     = &brq_settings[i];
		void              *field = (char *) cfg + s->offset;
		const char        *why;
		uint64_t           v;
		switch (s->kind) {
		case BRQ_SK_U32:
			if (brq_parse_u64(s->dflt, &v, &why) == 0)
				*(uint32_t *) field = (uint32_t) v;
			break;
		case BRQ_SK_DURATION:
			if (brq_parse_duration_ms(s->dflt, &v, &why) == 0)
				*(uint64_t *) field = v;
			break;
		case BRQ_SK_SIZE:
			if (brq_parse_size(s->dflt, &v, &why) == 0)
				*(uint64_t *) field = v;
			break;
		default: break; // not a number: the loader or config.c sets it
		}
	}
}
