// SPDX-License-Identifier: MIT
// Writing a statement's text around its result columns (store_stmt.h), for the
// statement builders store_sql.c and store_sql_jobs.c.
#include "store_stmt.h"

void
brq_store_sql_cols(FILE *f, const char *const *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i > 0 ? ", " : "", c[i]);
}

void
brq_store_sql_text(FILE *f, const brq_sql_text *t)
{
	fputs(t->head, f);
	brq_store_sql_cols(f, t->cols, t->ncols);
	if (t->tail != NULL)
		fputs(t->tail, f);
}
