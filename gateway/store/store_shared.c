// SPDX-License-Identifier: MIT
// The store itself (brq_store): what all its connections share, built once: the
// statement texts, the cache of topics with a policy, the leased rows' addresses and
// a refused schema.
#include "store_int.h"

#include <stdlib.h>

int
brq_store_new(const brq_config *cfg, brq_store **out)
{
	brq_store *st = calloc(1, sizeof(*st));
	if (st == NULL)
		return BRQ_ENOMEM;
	st->cfg = cfg;
	int rv  = brq_policy_cache_new(&st->pc);
	if (rv == 0)
		rv = brq_hints_new(&st->hints);
	if (rv == 0)
		rv = brq_schema_box_new(&st->schema);
	if (rv == 0)
		rv = brq_store_sql_build(cfg, st->texts, st->stmts);
	if (rv != 0) {
		brq_schema_box_free(st->schema);
		brq_hints_free(st->hints);
		brq_policy_cache_free(st->pc);
		free(st);
		return rv;
	}
	*out = st;
	return 0;
}

void
brq_store_free(brq_store *st)
{
	if (st == NULL)
		return;
	brq_store_sql_fini(st->texts);
	brq_policy_cache_free(st->pc);
	brq_hints_free(st->hints);
	brq_schema_box_free(st->schema);
	free(st);
}
