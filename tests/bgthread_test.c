// SPDX-License-Identifier: MIT
// Tests for gateway/background/bgthread.c without a database: rounds at the times they
// return, the end of the thread, stop's wake, on_slice between waits, a stop that
// releases once.
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "background/bgthread.h"
#include "brq_clock.h"

TestSuite(bgthread, .timeout = 30);

// What the rounds saw; the test reads it after the thread stopped (or via atomics).
struct probe {
	atomic_int       rounds;
	atomic_int       slices;
	int              end_after; // rounds before BRQ_BGTHREAD_END; 0: never
	uint64_t         every_ms;  // the next round this long after the last
	_Atomic uint64_t at[2];     // when the first two rounds ran (monotonic ms)
};

// Waits (up to 10 s, whatever else the machine runs) until *v reaches want.
static void
await_at_least(atomic_int *v, int want)
{
	for (int i = 0; i < 10000 && atomic_load(v) < want; i++)
		usleep(1000);
	cr_assert_geq(atomic_load(v), want, "still %d after 10 s (want %d)", atomic_load(v), want);
}

static uint64_t
round_fn(void *arg)
{
	struct probe *p = arg;
	int           n = atomic_fetch_add(&p->rounds, 1) + 1;
	if (n <= 2)
		atomic_store(&p->at[n - 1], brq_now_ms());
	if (p->end_after != 0 && n >= p->end_after)
		return BRQ_BGTHREAD_END;
	return brq_now_ms() + p->every_ms;
}

static void
slice_fn(void *arg)
{
	struct probe *p = arg;
	atomic_fetch_add(&p->slices, 1);
}

static void
start(brq_bgthread *b, struct probe *p, uint64_t slice_ms)
{
	memset(b, 0, sizeof(*b));
	cr_assert_eq(brq_bgthread_init(b, NULL, NULL), 0);
	cr_assert_not(b->has_conn, "no store: no connection");
	brq_bgthread_loop l = {.round = round_fn, .arg = p};
	if (slice_ms != 0) {
		l.on_slice = slice_fn;
		l.slice_ms = slice_ms;
	}
	cr_assert_eq(brq_bgthread_start(b, &l), 0);
}

Test(bgthread, runs_the_first_round_at_once_and_the_next_at_the_time_it_returned)
{
	struct probe p = {.every_ms = 1000};
	brq_bgthread b;
	uint64_t     t0 = brq_now_ms();
	start(&b, &p, 0);
	await_at_least(&p.rounds, 2);
	brq_bgthread_stop(&b);
	uint64_t first = atomic_load(&p.at[0]), second = atomic_load(&p.at[1]);
	cr_assert_lt(first - t0, p.every_ms, "the first round waited %llu ms",
		     (unsigned long long) (first - t0));
	cr_assert_geq(second - first, p.every_ms, "the second round came %llu ms after the first",
		      (unsigned long long) (second - first));
}

Test(bgthread, a_round_that_returns_end_ends_the_thread)
{
	struct probe p = {.every_ms = 1, .end_after = 3};
	brq_bgthread b;
	start(&b, &p, 0);
	await_at_least(&p.rounds, 3);
	usleep(200 * 1000); // rounds 1 ms apart would have gone on meanwhile; none may
	cr_assert_eq(atomic_load(&p.rounds), 3);
	cr_assert_not(brq_bgthread_is_stopping(&b), "ended by its round, not stopped");
	brq_bgthread_stop(&b); // joins the ended thread
	cr_assert_eq(atomic_load(&p.rounds), 3);
}

Test(bgthread, stop_wakes_a_sleeping_thread_at_once)
{
	struct probe p = {.every_ms = 60000};
	brq_bgthread b;
	start(&b, &p, 0);
	await_at_least(&p.rounds, 1); // now in its minute-long sleep
	uint64_t t0 = brq_now_ms();
	brq_bgthread_stop(&b);
	cr_assert_lt(brq_now_ms() - t0, 1000, "stop waited for the minute-long sleep");
	cr_assert_eq(atomic_load(&p.rounds), 1, "no round after stop");
}

Test(bgthread, on_slice_runs_after_each_wait_of_at_most_slice_ms)
{
	struct probe p = {.every_ms = 60000};
	brq_bgthread b;
	uint64_t     t0 = brq_now_ms();
	start(&b, &p, 20);
	await_at_least(&p.slices, 5); // each slice ends a wait of at most 20 ms
	uint64_t took = brq_now_ms() - t0;
	brq_bgthread_stop(&b);
	cr_assert_eq(atomic_load(&p.rounds), 1, "a slice is not a round");
	cr_assert_geq(took, 4 * 20, "5 slices in %llu ms: waits shorter than 20 ms",
		      (unsigned long long) took);
}

Test(bgthread, stop_releases_once_and_is_a_no_op_after)
{
	brq_bgthread zeroed;
	memset(&zeroed, 0, sizeof(zeroed));
	brq_bgthread_stop(&zeroed); // never prepared: nothing to release

	brq_bgthread b;
	memset(&b, 0, sizeof(b));
	cr_assert_eq(brq_bgthread_init(&b, NULL, NULL), 0);
	brq_bgthread_stop(&b); // prepared, never started: no join
	cr_assert(brq_bgthread_is_stopping(&b));
	brq_bgthread_stop(&b); // released: a second stop does nothing
}
