// SPDX-License-Identifier: MIT
// Log rate limits: the first lines of an event kind per interval, then one summary with the count dropped.
#include "log.h"

#include <stdatomic.h>

#include "brq_clock.h"

// Every limit that has been used, for brq_log_limit_flush(). Limits are static
// objects that live as long as the process, so entries are never removed.
static pthread_mutex_t list_mtx  = PTHREAD_MUTEX_INITIALIZER;
static brq_log_limit  *list_head = NULL;

static void
register_limit(brq_log_limit *lim)
{
	pthread_mutex_lock(&list_mtx);
	if (!atomic_load(&lim->is_registered)) {
		lim->next = list_head;
		list_head = lim;
		atomic_store(&lim->is_registered, true);
	}
	pthread_mutex_unlock(&list_mtx);
}

static void
write_summary(const brq_log_limit *lim, uint64_t suppressed)
{
	brq_log_write(lim->level, "log_suppressed", "event=%s suppressed=%llu interval_ms=%u burst=%u",
		      BRQ_LOG_Q(lim->event), (unsigned long long) suppressed, lim->interval_ms, lim->burst);
}

bool
brq_log_limit_take(brq_log_limit *lim)
{
	uint64_t now    = brq_now_ms();
	uint64_t report = 0;
	bool     is_ok;

	// Registration first, outside lim->mtx: the flush takes the list lock, then each
	// limit's lock, so never the other way round.
	if (!atomic_load(&lim->is_registered)) {
		register_limit(lim);
	}
	pthread_mutex_lock(&lim->mtx);
	if (lim->window_ms == 0 || now - lim->window_ms >= lim->interval_ms) {
		report          = lim->suppressed;
		lim->window_ms  = now != 0 ? now : 1;
		lim->written    = 0;
		lim->suppressed = 0;
	}
	is_ok = lim->written < lim->burst;
	if (is_ok) {
		lim->written++;
	} else {
		lim->suppressed++;
	}
	pthread_mutex_unlock(&lim->mtx);
	// The summary of the last window goes before this window's first line.
	if (report > 0) {
		write_summary(lim, report);
	}
	return is_ok;
}

void
brq_log_limit_flush(bool is_final)
{
	uint64_t now = brq_now_ms();

	pthread_mutex_lock(&list_mtx);
	for (brq_log_limit *lim = list_head; lim != NULL; lim = lim->next) {
		uint64_t report = 0;
		pthread_mutex_lock(&lim->mtx);
		bool has_ended = lim->window_ms != 0 && now - lim->window_ms >= lim->interval_ms;
		if (lim->suppressed > 0 && (has_ended || is_final)) {
			report          = lim->suppressed;
			lim->suppressed = 0;
			// The window is over: the next event opens a new one with a full burst.
			lim->window_ms = 0;
			lim->written   = 0;
		}
		pthread_mutex_unlock(&lim->mtx);
		if (report > 0) {
			write_summary(lim, report);
		}
	}
	pthread_mutex_unlock(&list_mtx);
}
