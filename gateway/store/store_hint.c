// SPDX-License-Identifier: MIT
// The table of leased rows' addresses (store_hint.h).
#include "store_hint.h"

#include <pthread.h>
#include <stdlib.h>

// Consecutive ids take consecutive slots: a drain's leases in flight (a few thousand
// per gateway) never collide; more only make the oldest hints miss.
#define HINT_SLOTS 32768u

struct hint {
	uint64_t id; // 0: empty (ids start at 1)
	brq_tid  tid;
};

struct brq_hints {
	pthread_mutex_t mu; // held for one batch; never while blocking
	struct hint     slot[HINT_SLOTS];
};

int
brq_hints_new(brq_hints **out)
{
	brq_hints *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return BRQ_ENOMEM;
	pthread_mutex_init(&h->mu, NULL);
	*out = h;
	return 0;
}

void
brq_hints_free(brq_hints *h)
{
	if (h == NULL)
		return;
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void
brq_hints_put(brq_hints *h, const uint64_t *ids, const brq_tid *tids, uint32_t n)
{
	pthread_mutex_lock(&h->mu);
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] != 0 && tids[i].offset != 0)
			h->slot[ids[i] % HINT_SLOTS] = (struct hint) {.id = ids[i], .tid = tids[i]};
	pthread_mutex_unlock(&h->mu);
}

uint32_t
brq_hints_take(brq_hints *h, const uint64_t *ids, brq_tid *out, uint32_t n)
{
	uint32_t found = 0;
	pthread_mutex_lock(&h->mu);
	for (uint32_t i = 0; i < n; i++) {
		struct hint *s = &h->slot[ids[i] % HINT_SLOTS];
		out[i]         = (brq_tid) {0};
		if (ids[i] != 0 && s->id == ids[i]) {
			out[i] = s->tid;
			s->id  = 0;
			found++;
		}
	}
	pthread_mutex_unlock(&h->mu);
	return found;
}

// Reads a decimal number of at most `max` from *p, advancing it. False if none. By
// hand, not strtoul: two numbers per leased job made strtoul one of the gateway's
// larger costs in a drain (callgrind).
static bool
number(const char **p, unsigned long max, unsigned long *out)
{
	const char *q = *p;
	uint64_t    v = 0;
	if (*q < '0' || *q > '9')
		return false;
	do {
		v = v * 10 + (uint64_t) (*q++ - '0');
		if (v > max) // max <= UINT32_MAX: v * 10 + 9 never wraps
			return false;
	} while (*q >= '0' && *q <= '9');
	*p   = q;
	*out = (unsigned long) v;
	return true;
}

bool
brq_tid_parse(const char *s, brq_tid *out)
{
	unsigned long block, offset;
	if (*s++ != '(' || !number(&s, UINT32_MAX, &block) || *s++ != ',' ||
	    !number(&s, UINT16_MAX, &offset) || *s++ != ')' || *s != '\0' || offset == 0)
		return false;
	*out = (brq_tid) {.block = (uint32_t) block, .offset = (uint16_t) offset};
	return true;
}
