/* SPDX-License-Identifier: MIT */
/* The caller's size-versioned structs: reading them in, writing results out (abi.h). */
#include "abi.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "brq_version.h"
#include "err.h"

static size_t
size_at(const void *base, size_t stride, size_t i)
{
	size_t size;
	memcpy(&size, (const unsigned char *) base + i * stride, sizeof(size));
	return size;
}

/* The hint names the header's initializer, which is the struct's name in capitals:
 * brooq_worker_opts -> BROOQ_WORKER_OPTS_INIT (client_test checks every one against the
 * header). */
static int
size_fail(const char *what, size_t i, size_t size)
{
	char   macro[64];
	size_t n = 0;
	for (; what[n] != '\0' && n + 1 < sizeof(macro); n++)
		macro[n] = (char) toupper((unsigned char) what[n]);
	macro[n] = '\0';
	if (i == SIZE_MAX)
		return brq_fail(BRQ_EINVAL, "%s.size: %zu; set it to sizeof(%s) (%s_INIT)", what, size, what,
				macro);
	return brq_fail(BRQ_EINVAL, "%s[%zu].size: %zu; set every element's to sizeof(%s) (%s_INIT)", what, i,
			size, what, macro);
}

/* Element 0's size: the stride of the array. SIZE_MAX as i names a lone struct. */
static int
stride_of(const void *base, size_t v1_size, const char *what, size_t i, size_t *stride)
{
	*stride = size_at(base, 0, 0);
	if (*stride < v1_size)
		return size_fail(what, i == 0 ? SIZE_MAX : 0, *stride);
	if (i > 0 && size_at(base, *stride, i) != *stride)
		return size_fail(what, i, size_at(base, *stride, i));
	return 0;
}

int
brq_abi_in(void *dst, size_t dst_size, const void *base, size_t i, size_t v1_size, const char *what)
{
	size_t stride;
	int    rv;

	memset(dst, 0, dst_size);
	if ((rv = stride_of(base, v1_size, what, i, &stride)) != 0)
		return rv;
	const unsigned char *src = (const unsigned char *) base + i * stride;
	/* A later header's struct: the fields it added must be unset (zero) here. */
	for (size_t b = dst_size; b < stride; b++)
		if (src[b] != 0)
			return brq_fail(BRQ_EINVAL,
					"%s: sets a field this library (libbrooq-client %s) does not know",
					what, BROOQ_VERSION);
	memcpy(dst, src, stride < dst_size ? stride : dst_size);
	return 0;
}

int
brq_opts_copy(void *dst, size_t dst_size, const void *src, size_t v1_size, const char *what)
{
	if (src == NULL) {
		memset(dst, 0, dst_size);
		return 0;
	}
	return brq_abi_in(dst, dst_size, src, 0, v1_size, what);
}

int
brq_abi_out_check(const void *base, size_t n, size_t v1_size, const char *what)
{
	size_t stride;
	int    rv = 0;
	for (size_t i = 0; rv == 0 && i < n; i++)
		rv = stride_of(base, v1_size, what, n == 1 ? 0 : i, &stride);
	return rv;
}

void
brq_abi_out(void *base, size_t i, const void *src, size_t src_size)
{
	size_t         stride = size_at(base, 0, 0);
	unsigned char *dst    = (unsigned char *) base + i * stride;
	size_t         len    = stride < src_size ? stride : src_size;
	memcpy(dst + sizeof(size_t), (const unsigned char *) src + sizeof(size_t), len - sizeof(size_t));
}

int
brq_abi_list_new(brq_abi_list *l, size_t n, size_t elem_size, size_t str_bytes, const char *what)
{
	l->ptrs = NULL;
	l->strs = NULL;
	if (n == 0)
		return 0;
	/* Pointers first, then the elements: n pointers keep the elements aligned. */
	size_t         head = n * sizeof(void *);
	unsigned char *p    = calloc(1, head + n * elem_size + str_bytes);
	if (p == NULL)
		return brq_fail(BRQ_ENOMEM, "%s: out of memory", what);
	l->ptrs = (void **) p;
	for (size_t i = 0; i < n; i++)
		l->ptrs[i] = p + head + i * elem_size;
	l->strs = (char *) (p + head + n * elem_size);
	return 0;
}

char *
brq_abi_list_str(brq_abi_list *l, brq_str s)
{
	char *d = l->strs;
	if (s.len > 0)
		memcpy(d, s.ptr, s.len);
	d[s.len] = '\0';
	l->strs += (size_t) s.len + 1;
	return d;
}
