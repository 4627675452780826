/* SPDX-License-Identifier: MIT */
/* The operators' calls: the job list, retry and delete (admin token). */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

/* ---- list --------------------------------------------------------------------------- */

void
brooq_job_page_free(brooq_job_page *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; p->jobs != NULL && i < p->n; i++)
		brooq_job_info_free(p->jobs[i]);
	free(p->jobs);
	free(p->next);
	free(p);
}

/* Checks the caller's options (o: the caller's copy) and fills the request q. */
static int
list_fill(const brooq_list_opts *o, brq_list_req *q)
{
	if (o->has_state && (unsigned) o->state > (unsigned) BROOQ_CANCELED)
		return brq_fail(BRQ_EINVAL, "list.state: unknown state %d", (int) o->state);
	if (o->limit > BRQ_LIST_MAX)
		return brq_fail(BRQ_EINVAL, "list.limit: must be 1..%d (0: %d)", BRQ_LIST_MAX,
				BRQ_LIST_DEFAULT);
	if (o->created_after_ms < 0 || o->created_before_ms < 0)
		return brq_fail(BRQ_EINVAL, "list: created_after_ms and created_before_ms must be >= 0");
	memset(q, 0, sizeof(*q));
	q->topic                 = brq_str_c(o->topic);
	q->has_state             = o->has_state;
	q->state                 = (brq_state) o->state;
	q->has_created_after_ms  = o->created_after_ms > 0;
	q->created_after_ms      = o->created_after_ms;
	q->has_created_before_ms = o->created_before_ms > 0;
	q->created_before_ms     = o->created_before_ms;
	q->key                   = brq_str_c(o->key);
	q->cursor                = brq_str_c(o->cursor);
	q->limit                 = o->limit > 0 ? o->limit : BRQ_LIST_DEFAULT;
	return 0;
}

/* A library-allocated page of the reply's rows into *out. */
static int
page_out(const brq_call *k, void *out, void *unused)
{
	const brq_list_rep *in = &k->rep.list;
	brooq_job_page     *p  = calloc(1, sizeof(*p));
	(void) unused;
	if (p == NULL)
		return brq_fail(BRQ_ENOMEM, "list: out of memory");
	p->jobs = calloc(in->n_jobs > 0 ? in->n_jobs : 1, sizeof(*p->jobs));
	if (p->jobs == NULL)
		goto oom;
	for (uint32_t i = 0; i < in->n_jobs; i++) {
		if ((p->jobs[i] = brq_job_info_out(&in->jobs[i])) == NULL)
			goto oom;
		p->n = i + 1;
	}
	if (in->has_next && (p->next = brq_strdup(in->next)) == NULL)
		goto oom;
	*(brooq_job_page **) out = p;
	return 0;
oom:
	brooq_job_page_free(p);
	return brq_fail(BRQ_ENOMEM, "list: out of memory");
}

brooq_err
brooq_list(brooq_client *c, const brooq_list_opts *opts, brooq_job_page **out)
{
	brooq_list_opts o;
	brq_call        k;
	int             rv;

	brq_msg_clear();
	if (c == NULL || out == NULL)
		return BRQ_ARG_FAIL("list: client and out are required");
	if ((rv = brq_opts_copy(&o, sizeof(o), opts, BRQ_LIST_OPTS_V1, "brooq_list_opts")) != 0)
		return brq_err_public(rv);
	brq_call_init(&k, BRQ_OP_LIST);
	rv = list_fill(&o, &k.req.list);
	return brq_call_run(&c->rpc, &k, rv, 0, page_out, out, NULL);
}

/* ---- retry, delete ------------------------------------------------------------------------ */

/* The retry of one job: its new (or existing) id into *new_id, whether it is new. */
static int
retry_out(const brq_call *k, void *new_id, void *created)
{
	if (k->rep.retry.n_ids != 1)
		return brq_fail(BRQ_EINTERNAL, "retry: reply has %u ids for one job",
				(unsigned) k->rep.retry.n_ids);
	*(uint64_t *) new_id = k->rep.retry.ids[0];
	*(bool *) created    = k->rep.retry.retried == 1;
	return 0;
}

/* Where a bulk retry puts the new jobs' ids. */
typedef struct id_buf {
	uint64_t *ids;
	size_t    cap;
} id_buf;

/* A bulk retry: the first ids into the id_buf at out, how many it created into *n. */
static int
retry_bulk_out(const brq_call *k, void *out, void *n)
{
	const id_buf *b = out;
	*(size_t *) n   = k->rep.retry.retried;
	for (size_t i = 0; i < b->cap && i < k->rep.retry.n_ids; i++)
		b->ids[i] = k->rep.retry.ids[i];
	return 0;
}

brooq_err
brooq_retry(brooq_client *c, uint64_t id, uint64_t *new_id, bool *created)
{
	brq_msg_clear();
	if (c == NULL || new_id == NULL || created == NULL)
		return BRQ_ARG_FAIL("retry: client, new_id and created are required");
	return brq_call_id(c, BRQ_OP_RETRY, id, retry_out, new_id, created);
}

brooq_err
brooq_retry_bulk(brooq_client *c, const char *topic, brooq_state state, uint32_t limit, uint64_t *ids,
		 size_t cap, size_t *n)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || topic == NULL || n == NULL || (ids == NULL && cap > 0))
		return BRQ_ARG_FAIL("retry: client, topic and n are required (ids with cap)");
	if (state != BROOQ_DEAD && state != BROOQ_CANCELED)
		return BRQ_ARG_FAIL("retry.state: must be BROOQ_DEAD or BROOQ_CANCELED");
	if (limit == 0 || limit > BRQ_RETRY_MAX)
		return BRQ_ARG_FAIL("retry.limit: must be 1..%d", BRQ_RETRY_MAX);
	brq_call_init(&k, BRQ_OP_RETRY);
	k.req.retry.topic = brq_str_c(topic);
	k.req.retry.state = (brq_state) state;
	k.req.retry.limit = limit;
	return brq_call_run(&c->rpc, &k, 0, 0, retry_bulk_out, &(id_buf) {ids, cap}, n);
}

brooq_err
brooq_delete(brooq_client *c, uint64_t id)
{
	brq_msg_clear();
	if (c == NULL)
		return BRQ_ARG_FAIL("delete: client is required");
	return brq_call_id(c, BRQ_OP_DELETE, id, NULL, NULL, NULL);
}
