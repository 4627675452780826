// SPDX-License-Identifier: MIT
// Long-poll waiters: claims parked until a job is ready, the wakes that end their wait,
// and claims whose peer went away.
//
// A claim with a wait that finds nothing is parked: its aio sleeps (nng_sleep_aio) in
// the parked list. An enqueue through this gateway wakes the parked claims of its
// topic at once; the monitor's round wakes those of topics that have ready jobs it did
// not announce (SQL inserts, other gateways, jobs that became ready by time). A wake
// cancels the sleep: the callback runs and the claim goes round again.
//
// The wake generation closes the gap between a claim that found nothing and its
// parking: a claim notes the generation before it looks, and parking refuses when a
// wake came in between (the caller claims again instead of sleeping through it).
//
// Every claim is tracked from its arrival until its reply, so that a peer that goes
// away is noticed whether its claim is parked (dropped at once) or running (marked
// orphaned: the leases it gets are given back instead of being sent nowhere).
#ifndef BRQ_GATEWAY_WAITERS_H
#define BRQ_GATEWAY_WAITERS_H

#include "brq_base.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "work.h"

typedef struct brq_waiters {
	pthread_mutex_t mtx;
	brq_list        parked;  // of brq_work, oldest first
	brq_list        tracked; // of brq_work: claims between arrival and reply
	uint64_t        gen;     // wakes so far
} brq_waiters;

void brq_waiters_init(brq_waiters *wt);
// Nothing may be parked or tracked any more.
void brq_waiters_fini(brq_waiters *wt);

// Generation of wakes so far. Any thread.
uint64_t brq_waiters_gen(brq_waiters *wt);

// Parks claim w for at most ms unless a wake came after w->wake_gen (then returns
// false and the caller still owns w: claim again). On true the parked list owns w
// until w's callback runs (woken: NNG_ECANCELED, timer: 0), which must call
// brq_waiters_unpark() first.
BRQ_MUSTCHECK bool brq_waiters_park(brq_waiters *wt, brq_work *w, uint64_t ms);

// In w's callback after a park: takes w out of the parked list if a wake did not.
void brq_waiters_unpark(brq_waiters *wt, brq_work *w);

// Wakes up to n parked claims that claim `topic` (jobs of it are ready now), and
// moves the generation. Any thread.
void brq_waiters_wake(brq_waiters *wt, const char *topic, size_t topic_len, uint32_t n);

// Takes parked claims that can start the ready jobs among jobs[0..n) (an enqueue's):
// for each topic, claims of that topic until their n cover its ready jobs, oldest
// first, at most max. Each taken claim leaves the parked list with its steal state
// BRQ_STEAL_TAKEN and its sleep still armed: the taker owns it and hands it back
// (server.c). Returns how many, in out[].
uint32_t brq_waiters_take(brq_waiters *wt, const brq_job_spec *jobs, uint32_t n, brq_work **out,
			  uint32_t max);

// Wakes every parked claim (the gateway is stopping).
void brq_waiters_wake_all(brq_waiters *wt);

// Tracks claim w from its arrival until its reply (brq_waiters_untrack).
void brq_waiters_track(brq_waiters *wt, brq_work *w);
void brq_waiters_untrack(brq_waiters *wt, brq_work *w);

// A peer's pipe went away: its tracked claims are marked orphaned, and the parked
// ones among them are woken to be dropped. Any thread (NNG's pipe callback).
void brq_waiters_pipe_gone(brq_waiters *wt, uint32_t pipe_id);

#endif
