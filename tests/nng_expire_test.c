/* SPDX-License-Identifier: MIT */
/* The NNG brooq links (deploy/nng/expire-race.patch): the aio expire thread must not
 * cancel an operation begun after the one it expired.
 *
 * What the gateway does with a parked long-poll, made to race on purpose: an aio sleeps
 * (the park), its sleep expires together with others in one batch of the expire thread,
 * another thread cancels it meanwhile (a wake), and its callback begins a receive on a
 * REP context on the same aio (the gateway's next request). The expire thread is held
 * inside the batch by an operation ahead of the sleeps whose cancel function is slow
 * (nng_aio_defer), which stands for the thread being preempted there. Unpatched 1.5.2
 * then cancels those receives with the sleep's result 0: a receive that "succeeds"
 * with no message, on which the gateway crashed. Patched, the receives stay pending. */
#include <stdatomic.h>
#include <stdio.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/util/platform.h>

#define N_SLEEPERS 32
#define SLOW_MS    150

typedef struct sleeper {
	nng_aio   *aio;
	nng_ctx    ctx;
	atomic_int stage; /* 0 sleeping, 1 receive begun, 2 receive finished */
	int        recv_rv;
	bool       recv_had_msg;
} sleeper;

static sleeper    sl[N_SLEEPERS];
static atomic_int in_window; /* the slow cancel function is running */

static void
sleeper_cb(void *arg)
{
	sleeper *s = arg;
	if (atomic_load(&s->stage) == 0) {
		atomic_store(&s->stage, 1);
		nng_ctx_recv(s->ctx, s->aio); /* a new operation on the same aio */
		return;
	}
	s->recv_rv      = nng_aio_result(s->aio);
	nng_msg *m      = nng_aio_get_msg(s->aio);
	s->recv_had_msg = m != NULL;
	nng_msg_free(m);
	atomic_store(&s->stage, 2);
}

/* Runs on the expire thread with its lock dropped: the window. */
static void
slow_cancel(nng_aio *aio, void *arg, int rv)
{
	(void) arg;
	atomic_store(&in_window, 1);
	nng_msleep(SLOW_MS);
	nng_aio_finish(aio, rv);
}

static void
noop_cb(void *arg)
{
	(void) arg;
}

/* One round; returns how many sleeps were canceled inside the window, and counts in
 * *bogus the receives that then finished with 0 and no message, in *ended those that
 * finished at all (nothing sends to the socket: a finished receive is the bug). */
static int
round_once(nng_aio *slow, int *bogus, int *ended)
{
	atomic_store(&in_window, 0);
	for (int i = 0; i < N_SLEEPERS; i++)
		atomic_store(&sl[i].stage, 0);
	/* First into the expire queues: an operation with a slow cancel function. */
	nng_aio_begin(slow);
	nng_aio_set_timeout(slow, 20);
	nng_aio_defer(slow, slow_cancel, NULL);
	/* Then the sleeps, expiring at about the same time. */
	for (int i = 0; i < N_SLEEPERS; i++) {
		nng_aio_set_timeout(sl[i].aio, NNG_DURATION_DEFAULT);
		nng_sleep_aio(20, sl[i].aio);
	}
	for (int waited = 0; !atomic_load(&in_window); waited++) {
		cr_assert_lt(waited, 5000, "the slow operation never expired");
		nng_msleep(1);
	}
	nng_msleep(30); /* sleeps on another expire queue (one per CPU) finish meanwhile */
	int woken = 0;
	for (int i = 0; i < N_SLEEPERS; i++)
		if (atomic_load(&sl[i].stage) == 0) { /* expired, held in the slow batch */
			nng_aio_cancel(sl[i].aio);
			woken++;
		}
	nng_aio_wait(slow);
	nng_msleep(50);
	for (int i = 0; i < N_SLEEPERS; i++) {
		for (int k = 0; atomic_load(&sl[i].stage) == 0 && k < 1000; k++)
			nng_msleep(1);
		if (atomic_load(&sl[i].stage) == 2) {
			(*ended)++;
			*bogus += sl[i].recv_rv == 0 && !sl[i].recv_had_msg;
			continue;
		}
		cr_assert_eq(atomic_load(&sl[i].stage), 1, "sleeper %d never woke", i);
		nng_aio_cancel(sl[i].aio); /* end the pending receive before the next round */
		nng_aio_wait(sl[i].aio);
	}
	return woken;
}

Test(nng_expire, a_sleep_canceled_inside_an_expiry_batch_leaves_the_next_operation_alone, .timeout = 60)
{
	nng_socket s;
	nng_aio   *slow;
	cr_assert_eq(nng_rep0_open(&s), 0);
	cr_assert_eq(nng_aio_alloc(&slow, noop_cb, NULL), 0);
	for (int i = 0; i < N_SLEEPERS; i++) {
		cr_assert_eq(nng_aio_alloc(&sl[i].aio, sleeper_cb, &sl[i]), 0);
		cr_assert_eq(nng_ctx_open(&sl[i].ctx, s), 0);
	}
	int woken = 0, bogus = 0, ended = 0;
	for (int r = 0; r < 3; r++)
		woken += round_once(slow, &bogus, &ended);
	/* The race was run: some sleeps were canceled while the expire thread held them. */
	cr_assert_gt(woken, 0, "no sleep was canceled inside the window: the test proves nothing");
	cr_assert_eq(bogus, 0, "%d of %d receives begun in the window finished with 0 and no message", bogus,
		     woken);
	cr_assert_eq(ended, 0, "%d receives finished with nothing sent", ended);
	for (int i = 0; i < N_SLEEPERS; i++) {
		nng_ctx_close(sl[i].ctx);
		nng_aio_free(sl[i].aio);
	}
	nng_aio_free(slow);
	nng_close(s);
}
