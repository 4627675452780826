/* SPDX-License-Identifier: MIT */
/* The NNG brooq links (deploy/nng/ctx-close-race.patch): a REQ context closed on one
 * thread while its socket closes on another.
 *
 * What a worker's stop does: brooq_worker_stop closes the client's socket
 * (brq_rpc_abort) while the dispatch thread closes the context of a claim that just
 * ended (slot_free). Unpatched 1.5.2 took the context off the socket's list before
 * finalizing it, so the closing thread could free the protocol's socket first and
 * req0_ctx_fini then locked a freed mutex ("panic: pthread_mutex_unlock: Invalid
 * argument", or a use-after-free under AddressSanitizer). The window is a few
 * instructions wide: unpatched, 20,000 rounds crashed two runs in three here. */
#include <pthread.h>

#include <criterion/criterion.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#define ROUNDS 50000

static nng_socket        sock;
static pthread_barrier_t start;

static void *
closer(void *arg)
{
	(void) arg;
	pthread_barrier_wait(&start);
	nng_close(sock);
	return NULL;
}

Test(nng_ctx_close, a_context_closed_as_its_socket_closes_is_finalized_before_the_socket, .timeout = 120)
{
	for (int i = 0; i < ROUNDS; i++) {
		nng_ctx   ctx;
		pthread_t t;
		cr_assert_eq(nng_req0_open(&sock), 0);
		cr_assert_eq(nng_ctx_open(&ctx, sock), 0);
		cr_assert_eq(pthread_barrier_init(&start, NULL, 2), 0);
		cr_assert_eq(pthread_create(&t, NULL, closer, NULL), 0);
		pthread_barrier_wait(&start);
		int rv = nng_ctx_close(ctx);
		/* Either close may come first: the context's own, or the socket's (which
		 * closes its contexts, after which the context's id is gone). */
		cr_assert(rv == 0 || rv == NNG_ECLOSED, "round %d: nng_ctx_close: %s", i, nng_strerror(rv));
		pthread_join(t, NULL);
		pthread_barrier_destroy(&start);
	}
}
