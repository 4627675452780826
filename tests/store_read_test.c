/* SPDX-License-Identifier: MIT */
/* The store's readers of PostgreSQL's text results (gateway/store/store.c): brq_store_int reads
 * integers by hand on its fast path, so every form PostgreSQL writes, and the edges where
 * it hands over to strtoll, must give strtoll's value. No database: the results are
 * built with libpq's PQsetvalue. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <libpq-fe.h>

#include "store/store_int.h"

Test(store_read, integers_read_as_strtoll_reads_them)
{
	static const char *texts[] = {
		"0", "7", "-7", "42", "-0", "000123", "123456789012345678", "-123456789012345678",
		/* 19 digits and more: handed to strtoll, which clamps what overflows. */
		"1234567890123456789", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"99999999999999999999999",
		/* Forms PostgreSQL does not write for integers, read as strtoll reads them. */
		"12abc", "1.5", "-", "", " 5", "+5", "x"};
	size_t       n   = sizeof(texts) / sizeof(texts[0]);
	PGresult    *r   = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	PGresAttDesc col = {.name = (char *) "v", .typid = 20, .typlen = 8, .atttypmod = -1};
	cr_assert_not_null(r);
	cr_assert(PQsetResultAttrs(r, 1, &col));
	for (size_t i = 0; i < n; i++)
		cr_assert(PQsetvalue(r, (int) i, 0, (char *) texts[i], (int) strlen(texts[i])));
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(brq_store_int(r, (int) i, 0), (int64_t) strtoll(texts[i], NULL, 10), "\"%s\"",
			     texts[i]);
	cr_expect_eq(brq_store_int(r, 9, 0), INT64_MAX);
	cr_expect_eq(brq_store_int(r, 10, 0), INT64_MIN);
	PQclear(r);
}
