// SPDX-License-Identifier: MIT
// The store itself (brq_store): what all its connections share, built once: the
// statement texts and the cache of topics with a policy.
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
	if (rv != 0) {
		free(st);
		return rv;
	}
	rv = brq_store_sql_build(cfg, st->texts, st->stmts);
	if (rv != 0) {
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
	free(st);
}
