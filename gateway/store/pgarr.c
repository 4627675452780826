// SPDX-License-Identifier: MIT
// One-dimensional PostgreSQL arrays in binary wire format, built for batch statements.
#include "pgarr.h"

#include <stdlib.h>
#include <string.h>

// Binary array header: ndim, has-null flag, element oid, then per dimension its
// length and lower bound (array_recv in src/backend/utils/adt/arrayfuncs.c).
#define HEADER_LEN 20

static void
put32(char *p, uint32_t v)
{
	p[0] = (char) (v >> 24);
	p[1] = (char) (v >> 16);
	p[2] = (char) (v >> 8);
	p[3] = (char) v;
}

static char *
reserve(brq_pgarr *a, size_t n)
{
	if (a->oom)
		return NULL;
	if (a->len + n > a->cap) {
		size_t cap = a->cap ? a->cap : 256;
		while (cap < a->len + n)
			cap *= 2;
		char *d = realloc(a->data, cap);
		if (d == NULL) {
			a->oom = true;
			return NULL;
		}
		a->data = d;
		a->cap  = cap;
	}
	char *p = a->data + a->len;
	a->len += n;
	return p;
}

void
brq_pgarr_init(brq_pgarr *a)
{
	memset(a, 0, sizeof(*a));
}

void
brq_pgarr_fini(brq_pgarr *a)
{
	free(a->data);
	memset(a, 0, sizeof(*a));
}

void
brq_pgarr_trim(brq_pgarr *a, size_t keep)
{
	if (a->cap > keep)
		brq_pgarr_fini(a);
}

void
brq_pgarr_begin(brq_pgarr *a, uint32_t oid)
{
	a->len      = 0;
	a->n        = 0;
	a->oid      = oid;
	a->has_null = false;
	a->oom      = false;
	(void) reserve(a, HEADER_LEN);
}

static void
element(brq_pgarr *a, const void *p, size_t len)
{
	char *d = reserve(a, 4 + len);
	if (d == NULL)
		return;
	put32(d, (uint32_t) len);
	if (len > 0)
		memcpy(d + 4, p, len);
	a->n++;
}

void
brq_pgarr_int8(brq_pgarr *a, int64_t v)
{
	char     b[8];
	uint64_t u = (uint64_t) v;
	put32(b, (uint32_t) (u >> 32));
	put32(b + 4, (uint32_t) u);
	element(a, b, 8);
}

void
brq_pgarr_int4(brq_pgarr *a, int32_t v)
{
	char b[4];
	put32(b, (uint32_t) v);
	element(a, b, 4);
}

void
brq_pgarr_tid(brq_pgarr *a, uint32_t block, uint16_t offset)
{
	// tidrecv: the block number (4 bytes) and the line pointer (2), big-endian.
	char b[6];
	put32(b, block);
	b[4] = (char) (offset >> 8);
	b[5] = (char) (offset & 0xff);
	element(a, b, 6);
}

void
brq_pgarr_text(brq_pgarr *a, const char *p, size_t len)
{
	if (a->oid != BRQ_OID_JSONB) {
		element(a, p, len);
		return;
	}
	// jsonb_recv: a version byte (1) followed by the JSON text.
	char *d = reserve(a, 4 + 1 + len);
	if (d == NULL)
		return;
	put32(d, (uint32_t) (len + 1));
	d[4] = 1;
	if (len > 0)
		memcpy(d + 5, p, len);
	a->n++;
}

void
brq_pgarr_uuid(brq_pgarr *a, const uint8_t uuid[16])
{
	element(a, uuid, 16);
}

void
brq_pgarr_null(brq_pgarr *a)
{
	char *d = reserve(a, 4);
	if (d == NULL)
		return;
	put32(d, UINT32_MAX); // length -1 marks NULL
	a->has_null = true;
	a->n++;
}

int
brq_pgarr_end(brq_pgarr *a)
{
	if (a->oom || a->data == NULL)
		return BRQ_ENOMEM;
	put32(a->data, 1);
	put32(a->data + 4, a->has_null ? 1 : 0);
	put32(a->data + 8, a->oid);
	put32(a->data + 12, a->n);
	put32(a->data + 16, 1);
	return 0;
}
