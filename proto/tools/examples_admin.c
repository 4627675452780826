// SPDX-License-Identifier: MIT
// The examples of the operators' operations: list, retry, delete.
#include <string.h>

#include "examples.h"

static void
list_example(void)
{
	brq_request req;
	brq_reply   rep;
	char        next[BRQ_CURSOR_MAX];
	brq_list_cursor(88, next);
	brq_job_info j = {
		.id              = 88,
		.topic           = brq_str_c("email.send"),
		.payload         = brq_str_c("{\"to\": \"b@example.com\"}"),
		.state           = BRQ_STATE_DEAD,
		.attempts        = 5,
		.max_attempts    = 5,
		.available_at_ms = 1699999990000,
		.has_last_error  = true,
		.last_error      = brq_str_c("smtp timeout"),
		.created_at_ms   = 1699999900000,
		.updated_at_ms   = 1699999990000,
		.has_retry_of    = true,
		.retry_of        = 61,
	};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op             = BRQ_OP_LIST;
	req.list.topic     = brq_str_c("email.send");
	req.list.has_state = true;
	req.list.state     = BRQ_STATE_DEAD;
	req.list.cursor    = brq_str_c("v1.90");
	req.list.limit     = 1;
	rep.op             = BRQ_OP_LIST;
	rep.list.jobs      = &j;
	rep.list.n_jobs    = 1;
	rep.list.has_next  = true;
	rep.list.next      = brq_str_c(next);
	example("list", &req, &rep);
}

void
admin_examples(void)
{
	brq_request req;
	brq_reply   rep;

	list_example();

	uint64_t ids[2] = {120, 121};
	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op            = BRQ_OP_RETRY;
	req.retry.topic   = brq_str_c("email.send");
	req.retry.state   = BRQ_STATE_DEAD;
	req.retry.limit   = 100;
	rep.op            = BRQ_OP_RETRY;
	rep.retry.retried = 2;
	rep.retry.ids     = ids;
	rep.retry.n_ids   = 2;
	example("retry", &req, &rep);

	memset(&req, 0, sizeof req);
	memset(&rep, 0, sizeof rep);
	req.op          = BRQ_OP_DELETE;
	req.del.id      = 88;
	rep.op          = BRQ_OP_DELETE;
	rep.del.id      = 88;
	rep.del.deleted = true;
	example("delete", &req, &rep);
}
