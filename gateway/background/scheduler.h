// SPDX-License-Identifier: MIT
// Periodic jobs: the scheduler thread that enqueues each due slot of every schedule exactly once.
//
// Schedules live in table `schedule` (migration 00008). Every gateway runs this thread
// on a connection of its own; each tick it takes due schedules one at a time with
// `FOR UPDATE SKIP LOCKED`, enqueues the slot's job with the idempotency key
// "schedule:<name>@<slot, UTC ISO 8601>" and advances next_slot in the same
// transaction. So however many gateways run, a slot yields one job (invariant 16): a
// second gateway either skips the locked row or finds next_slot already moved, and a
// crash between enqueue and advance rolls both back; the key covers the rest (a
// next_slot set back by hand).
//
// Slots: a cron schedule's slots are the minutes its expression matches on the wall
// clock of its zone; PostgreSQL maps wall-clock times to instants (store_schedule.c). A
// wall-clock time the zone skips (spring forward) has no slot; one the zone repeats
// (fall back) has one, at the instant PostgreSQL gives it. An interval schedule's
// slots are the whole multiples of every_ms since the Unix epoch.
//
// Slots less than the grace (brq_sched_grace_ms) late are on time and always enqueued.
// Missed slots (no gateway ran when they came due): "skip" enqueues the latest one
// only when none is on time; "catch_up" the latest catch_up_max, oldest first. The
// others are counted (brooq_schedule_slots_total{outcome="skipped"}) and logged.
#ifndef BRQ_GATEWAY_SCHEDULER_H
#define BRQ_GATEWAY_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "bgthread.h"
#include "config/config.h"
#include "schedule_check.h"
#include "store/store.h"

// Called after a commit that enqueued jobs of topic (not NUL-terminated), so parked
// claims of this gateway wake at once (server.h brq_server_wake_topic).
typedef void (*brq_sched_wake_fn)(void *arg, const char *topic, size_t topic_len);

typedef struct brq_sched {
	const brq_config *cfg;  // borrowed
	brq_sched_wake_fn wake; // optional
	void             *wake_arg;
	brq_bgthread      bg;         // the thread; bg.abort is the connection's stop flag
	bool              configured; // the configured schedules are in the table
} brq_sched;

// Starts the thread with a connection of store st. Borrows cfg and st. wake may be
// NULL. Returns 0 or BRQ_EUNAVAIL (no thread).
BRQ_MUSTCHECK int brq_sched_start(brq_sched *s, const brq_config *cfg, const brq_store *st,
				  brq_sched_wake_fn wake, void *wake_arg);
// Wakes the thread and joins it; a transaction in progress rolls back.
void brq_sched_stop(brq_sched *s);

// One tick: enqueues the due slots of due schedules (at most 100 schedules). Returns
// the jobs created (>= 0) or a BRQ_E* code. Exposed for tests.
int64_t brq_sched_tick(brq_sched *s);

// The slots of s from its slot `from_ms` (local seconds local_from on its zone's
// clock) up to now_ms (local_now): the latest `k` due ones in due[0..*n_due), oldest
// first; *n_skipped the due ones left out; *next_ms the first after now_ms (-1: none
// within the cron horizon). from_ms > now_ms asks for the first slot after now_ms.
// Runs statements on c for cron schedules (zone conversions). Exposed for tests.
BRQ_MUSTCHECK int brq_sched_slots(brq_store_conn *c, const brq_schedule *s, int64_t from_ms,
				  int64_t local_from, int64_t now_ms, int64_t local_now, uint32_t k,
				  int64_t *due, uint32_t *n_due, uint64_t *n_skipped, int64_t *next_ms);

// How late a slot may be enqueued and still count as on time, not missed: a minute,
// or two ticks of a slower scheduler. Only missed slots are subject to the misfire
// policy: a tick that comes late (a stall, two slots of a 1 s schedule in one tick)
// loses nothing.
int64_t brq_sched_grace_ms(const brq_config *cfg);

// Capacity of the due array brq_sched_slots needs for s with grace_ms: every slot on
// time plus the missed ones the policy may keep.
uint32_t brq_sched_due_cap(const brq_schedule *s, int64_t grace_ms);

// The misfire policy on due[0..n) (the latest due slots, oldest first; `dropped` older
// ones not in it): on-time slots (after now_ms - grace_ms) are all kept; of the missed
// ones, `catch_up` keeps the latest catch_up_max, `skip` the latest one only when no
// slot is on time. Enqueue due[*first .. *first + *keep); *skipped counts the rest.
void brq_sched_misfire(const brq_schedule *s, int64_t now_ms, int64_t grace_ms, const int64_t *due,
		       uint32_t n, uint64_t dropped, uint32_t *first, uint32_t *keep, uint64_t *skipped);

// Upserts schedule s (checked) on c with its first slot after the database's now
// (a replacement with the same timing keeps its own). *created says whether it is
// new, *owed (may be NULL) the slot it owes now. BRQ_EINVAL (errmsg names the zone)
// for an unknown time zone.
BRQ_MUSTCHECK int brq_sched_upsert(brq_store_conn *c, const brq_schedule *s, bool from_config, bool *created,
				   int64_t *owed);

#endif
