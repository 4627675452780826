/* SPDX-License-Identifier: MIT */
/* The periodic-job calls (admin): schedule_add, schedule_list, schedule_remove. */
#include "client.h"

#include <stdlib.h>

#include "err.h"

_Static_assert((int) BROOQ_MISFIRE_SKIP == 0 && (int) BROOQ_MISFIRE_CATCH_UP == 1, "misfire values");

/* schedule_add's results into *created and *next_slot_ms (each may be NULL). */
static int
add_out(const brq_call *k, void *created, void *next_slot_ms)
{
	if (created != NULL)
		*(bool *) created = k->rep.schedule_add.created;
	if (next_slot_ms != NULL)
		*(int64_t *) next_slot_ms = k->rep.schedule_add.next_slot_ms;
	return 0;
}

brooq_err
brooq_schedule_add(brooq_client *c, const brooq_schedule *in, bool *created, int64_t *next_slot_ms)
{
	brooq_schedule s;
	brq_call       k;

	brq_msg_clear();
	if (c == NULL || in == NULL)
		return BRQ_ARG_FAIL("schedule_add: client and schedule are required");
	if (brq_opts_copy(&s, sizeof(s), in, BRQ_SCHEDULE_V1, "brooq_schedule") != 0)
		return BROOQ_EINVAL;
	if (s.name == NULL || s.topic == NULL)
		return BRQ_ARG_FAIL("schedule_add: name and topic are required");
	if ((unsigned) s.misfire > (unsigned) BROOQ_MISFIRE_CATCH_UP)
		return BRQ_ARG_FAIL(
			"schedule_add: misfire must be BROOQ_MISFIRE_SKIP or BROOQ_MISFIRE_CATCH_UP");
	brq_call_init(&k, BRQ_OP_SCHEDULE_ADD);
	k.req.schedule_add = (brq_schedule) {
		.name         = brq_str_c(s.name),
		.topic        = brq_str_c(s.topic),
		.payload      = brq_str_c(s.payload),
		.cron         = brq_str_c(s.cron),
		.tz           = brq_str_c(s.tz),
		.every_ms     = s.every_ms,
		.catch_up     = s.misfire == BROOQ_MISFIRE_CATCH_UP,
		.catch_up_max = s.catch_up_max,
		.max_attempts = s.max_attempts,
	};
	return brq_call_run(&c->rpc, &k, 0, 0, add_out, created, next_slot_ms);
}

void
brooq_schedule_list_free(brooq_schedule_info **s, size_t n)
{
	(void) n; /* one allocation: the pointers, the schedules and their strings */
	free(s);
}

/* A copy of s in l's string area, or NULL when !has. */
static char *
str_opt(brq_abi_list *l, bool has, brq_str s)
{
	return has ? brq_abi_list_str(l, s) : NULL;
}

/* The reply's schedules, library-allocated (brq_abi_list; NULL for none), into *out, n of
 * them. */
static int
list_out(const brq_call *k, void *out, void *n)
{
	const brq_schedule *in = k->rep.schedule_list.schedules;
	uint32_t            m  = k->rep.schedule_list.n_schedules;
	brq_abi_list        l;
	size_t              strs = 0;
	for (uint32_t i = 0; i < m; i++)
		strs += (size_t) in[i].name.len + in[i].topic.len + in[i].payload.len + in[i].cron.len +
			in[i].tz.len + in[i].source.len + 6;
	int rv = brq_abi_list_new(&l, m, sizeof(brooq_schedule_info), strs, "schedule_list");
	if (rv != 0)
		return rv;
	for (uint32_t i = 0; i < m; i++) {
		*(brooq_schedule_info *) l.ptrs[i] = (brooq_schedule_info) {
			.name         = str_opt(&l, true, in[i].name),
			.topic        = str_opt(&l, true, in[i].topic),
			.payload      = str_opt(&l, true, in[i].payload),
			.cron         = str_opt(&l, in[i].cron.len > 0, in[i].cron),
			.tz           = str_opt(&l, in[i].cron.len > 0 && in[i].tz.len > 0, in[i].tz),
			.every_ms     = in[i].every_ms,
			.misfire      = in[i].catch_up ? BROOQ_MISFIRE_CATCH_UP : BROOQ_MISFIRE_SKIP,
			.catch_up_max = in[i].catch_up_max,
			.max_attempts = in[i].max_attempts,
			.enabled      = in[i].enabled,
			.next_slot_ms = in[i].next_slot_ms,
			.last_slot_ms = in[i].last_slot_ms,
			.source       = str_opt(&l, true, in[i].source),
		};
	}
	*(brooq_schedule_info ***) out = (brooq_schedule_info **) l.ptrs;
	*(size_t *) n                  = m;
	return 0;
}

brooq_err
brooq_schedule_list(brooq_client *c, brooq_schedule_info ***out, size_t *n)
{
	return brq_call_array(c, BRQ_OP_SCHEDULE_LIST, list_out, out, n);
}

brooq_err
brooq_schedule_remove(brooq_client *c, const char *name)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || name == NULL)
		return BRQ_ARG_FAIL("schedule_remove: client and name are required");
	brq_call_init(&k, BRQ_OP_SCHEDULE_REMOVE);
	k.req.schedule_remove.name = brq_str_c(name);
	return brq_call_run(&c->rpc, &k, 0, 0, NULL, NULL, NULL);
}
