// SPDX-License-Identifier: MIT
// Growing a heap buffer by doubling: the one loop the growable text buffers share.
#ifndef BRQ_GROW_H
#define BRQ_GROW_H

#include <stddef.h>
#include <stdlib.h>

#include "brq_base.h"

// Grows the heap block *data of *cap bytes so that it holds at least need bytes, the
// capacity doubling from first (when *cap is 0). 0, or BRQ_ENOMEM with *data and *cap
// unchanged: the block, grown or not, stays the caller's.
BRQ_MUSTCHECK static inline int
brq_grow(char **data, size_t *cap, size_t need, size_t first)
{
	if (need <= *cap) {
		return 0;
	}
	size_t ncap = *cap == 0 ? first : *cap;
	while (ncap < need) {
		ncap *= 2;
	}
	char *d = realloc(*data, ncap);
	if (d == NULL) {
		return BRQ_ENOMEM;
	}
	*data = d;
	*cap  = ncap;
	return 0;
}

#endif
