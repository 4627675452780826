/* SPDX-License-Identifier: MIT */
/* The table of leased rows' addresses (gateway/store/store_hint.h): PostgreSQL's ctid text
 * parsed strictly, and each recorded address given out once. The settle that uses them
 * is in settle_address_test and schema_test. */
#include <stdint.h>

#include <criterion/criterion.h>

#include "store/store_hint.h"

Test(store_hint, parses_ctids_and_refuses_anything_else)
{
	brq_tid t;
	cr_assert(brq_tid_parse("(0,1)", &t));
	cr_assert_eq(t.block, 0);
	cr_assert_eq(t.offset, 1);
	cr_assert(brq_tid_parse("(4294967295,65535)", &t));
	cr_assert_eq(t.block, UINT32_MAX);
	cr_assert_eq(t.offset, UINT16_MAX);
	static const char *bad[] = {"",
				    "()",
				    "(1,0)",
				    "(4294967296,1)",
				    "(1,65536)",
				    "1,1",
				    "(1,1) ",
				    "(-1,1)",
				    "(1, 1)",
				    "(+1,1)",
				    "(1,1",
				    "(1;1)",
				    "(1,1)x",
				    "(,1)",
				    "(1,)",
				    "(0x1,1)",
				    "(99999999999999999999999,1)",
				    "(1,99999999999)"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(brq_tid_parse(bad[i], &t), "accepted \"%s\"", bad[i]);
}

Test(store_hint, gives_each_address_once_and_a_newer_lease_replaces_an_older_one)
{
	brq_hints *h;
	cr_assert_eq(brq_hints_new(&h), 0);
	/* 7 and 7 + 32768 share a slot (the table is direct-mapped): the later one wins. */
	uint64_t ids[3]  = {7, 8, 7 + 32768};
	brq_tid  tids[3] = {{.block = 1, .offset = 2}, {.block = 3, .offset = 4}, {.block = 5, .offset = 6}};
	brq_hints_put(h, ids, tids, 3);
	uint64_t ask[4] = {7, 8, 7 + 32768, 9};
	brq_tid  got[4];
	cr_assert_eq(brq_hints_take(h, ask, got, 4), 2);
	cr_assert_eq(got[0].offset, 0, "an overwritten address was given out");
	cr_assert_eq(got[1].block, 3);
	cr_assert_eq(got[1].offset, 4);
	cr_assert_eq(got[2].block, 5);
	cr_assert_eq(got[2].offset, 6);
	cr_assert_eq(got[3].offset, 0);
	/* Taken: a second settle of the same leases goes by id. */
	cr_assert_eq(brq_hints_take(h, ask, got, 4), 0);
	/* An address with offset 0 (unparsable) is not recorded. */
	brq_tid none = {0};
	brq_hints_put(h, ids, &none, 1);
	cr_assert_eq(brq_hints_take(h, ids, got, 1), 0);
	brq_hints_free(h);
}
