/* SPDX-License-Identifier: MIT */
/* The operators' calls: the job list, retry and delete (admin token). */
#include "client.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

#define ARG_FAIL(...) brq_err_public(brq_fail(BRQ_EINVAL, __VA_ARGS__))

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

/* A library-allocated page of the reply's rows. */
static int
page_out(const brq_list_rep *in, brooq_job_page **out)
{
	brooq_job_page *p = calloc(1, sizeof(*p));
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
	if (in->has_next) {
		if ((p->next = malloc(in->next.len + 1)) == NULL)
			goto oom;
		memcpy(p->next, in->next.ptr, in->next.len);
		p->next[in->next.len] = '\0';
	}
	*out = p;
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
		return ARG_FAIL("list: client and out are required");
	if ((rv = brq_opts_copy(&o, sizeof(o), opts, BRQ_LIST_OPTS_V1, "brooq_list_opts")) != 0)
		return brq_err_public(rv);
	brq_call_init(&k, BRQ_OP_LIST);
	rv = list_fill(&o, &k.req.list);
	if (rv == 0)
		rv = brq_rpc_call(&c->rpc, &k, 0);
	brooq_err err = brq_call_result(&k, rv);
	if (err == BROOQ_OK)
		err = brq_err_public(page_out(&k.rep.list, out));
	brq_call_fini(&k);
	return err;
}

/* ---- retry, delete ------------------------------------------------------------------------ */

brooq_err
brooq_retry(brooq_client *c, uint64_t id, uint64_t *new_id, bool *created)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || new_id == NULL || created == NULL)
		return ARG_FAIL("retry: client, new_id and created are required");
	if (id == 0 || id > BRQ_ID_MAX)
		return ARG_FAIL("retry.id: must be 1..%llu", (unsigned long long) BRQ_ID_MAX);
	brq_call_init(&k, BRQ_OP_RETRY);
	k.req.retry.id = id;
	brooq_err err  = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
	if (err == BROOQ_OK && k.rep.retry.n_ids != 1)
		err = brq_err_public(brq_fail(BRQ_EINTERNAL, "retry: reply has %u ids for one job",
					      (unsigned) k.rep.retry.n_ids));
	if (err == BROOQ_OK) {
		*new_id  = k.rep.retry.ids[0];
		*created = k.rep.retry.retried == 1;
	}
	brq_call_fini(&k);
	return err;
}

brooq_err
brooq_retry_bulk(brooq_client *c, const char *topic, brooq_state state, uint32_t limit, uint64_t *ids,
		 size_t cap, size_t *n)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL || topic == NULL || n == NULL || (ids == NULL && cap > 0))
		return ARG_FAIL("retry: client, topic and n are required (ids with cap)");
	if (state != BROOQ_DEAD && state != BROOQ_CANCELED)
		return ARG_FAIL("retry.state: must be BROOQ_DEAD or BROOQ_CANCELED");
	if (limit == 0 || limit > BRQ_RETRY_MAX)
		return ARG_FAIL("retry.limit: must be 1..%d", BRQ_RETRY_MAX);
	brq_call_init(&k, BRQ_OP_RETRY);
	k.req.retry.topic = brq_str_c(topic);
	k.req.retry.state = (brq_state) state;
	k.req.retry.limit = limit;
	brooq_err err     = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
	if (err == BROOQ_OK) {
		*n = k.rep.retry.retried;
		for (size_t i = 0; i < cap && i < k.rep.retry.n_ids; i++)
			ids[i] = k.rep.retry.ids[i];
	}
	brq_call_fini(&k);
	return err;
}

brooq_err
brooq_delete(brooq_client *c, uint64_t id)
{
	brq_call k;

	brq_msg_clear();
	if (c == NULL)
		return ARG_FAIL("delete: client is required");
	if (id == 0 || id > BRQ_ID_MAX)
		return ARG_FAIL("delete.id: must be 1..%llu", (unsigned long long) BRQ_ID_MAX);
	brq_call_init(&k, BRQ_OP_DELETE);
	k.req.del.id  = id;
	brooq_err err = brq_call_result(&k, brq_rpc_call(&c->rpc, &k, 0));
	brq_call_fini(&k);
	return err;
}
