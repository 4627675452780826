// SPDX-License-Identifier: MIT
// The order the store's batch statements lock rows in (store_int.h, brq_row_ref).
#include "store_int.h"

#include <stdlib.h>

static int
row_ref_cmp(const void *a, const void *b)
{
	const brq_row_ref *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

void
brq_store_in_id_order(brq_row_ref *refs, uint32_t m, uint32_t *at)
{
	qsort(refs, m, sizeof(*refs), row_ref_cmp);
	for (uint32_t k = 0; k < m; k++)
		at[k] = refs[k].at;
}

uint32_t *
brq_store_leases_in_id_order(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n)
{
	brq_row_ref *refs = brq_arena_alloc(&c->arena, n > 0 ? n : 1, sizeof(*refs));
	uint32_t    *at   = brq_arena_alloc(&c->arena, n > 0 ? n : 1, sizeof(*at));
	if (refs == NULL || at == NULL)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		refs[i] = (brq_row_ref) {leases[i].id, i};
	brq_store_in_id_order(refs, n, at);
	return at;
}
