// SPDX-License-Identifier: MIT
// The store's operator statements on jobs: the list, retry and delete.
#include "store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

// The states a list asks for, as text[] parameter a: the one asked, or all six.
static void
list_states(brq_pgarr *a, const brq_list_req *q)
{
	brq_pgarr_begin(a, BRQ_OID_TEXT);
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		if (q->has_state && (brq_state) s != q->state)
			continue;
		const char *name = brq_state_name((brq_state) s);
		brq_pgarr_text(a, name, strlen(name));
	}
}

// Which statement serves q (store_sql.c list_sql says what each reads).
static brq_stmt
list_stmt(const brq_list_req *q)
{
	if (q->key.len > 0)
		return BRQ_STMT_LIST_KEY;
	if (q->topic.len > 0)
		return BRQ_STMT_LIST_TOPIC;
	return q->has_state ? BRQ_STMT_LIST_STATE : BRQ_STMT_LIST_ALL;
}

int
brq_store_list(brq_store_conn *c, const brq_list_req *q, brq_job_info **jobs, uint32_t *n, bool *more)
{
	char topic[BRQ_TOPIC_MAX + 1], key[BRQ_KEY_MAX + 1], after[24], before[24], max_id[24], rows[16];
	const char *v[7] = {NULL, NULL, NULL, NULL, NULL, max_id, rows};
	int       l[7] = {0}, f[7] = {BRQ_TEXT, BRQ_BINARY, BRQ_TEXT, BRQ_TEXT, BRQ_TEXT, BRQ_TEXT, BRQ_TEXT};
	PGresult *r;

	// Text parameters are NUL-terminated copies (topic and key were checked: no NUL).
	if (q->topic.len > 0) {
		snprintf(topic, sizeof(topic), "%.*s", (int) q->topic.len, q->topic.ptr);
		v[0] = topic;
	}
	list_states(&c->arr[0], q);
	if (brq_store_param(&c->arr[0], v, l, 1) != 0)
		return brq_store_fail(c, BRQ_ENOMEM, "list: out of memory");
	if (q->has_created_after_ms) {
		snprintf(after, sizeof(after), "%" PRId64, q->created_after_ms);
		v[2] = after;
	}
	if (q->has_created_before_ms) {
		snprintf(before, sizeof(before), "%" PRId64, q->created_before_ms);
		v[3] = before;
	}
	if (q->key.len > 0) {
		snprintf(key, sizeof(key), "%.*s", (int) q->key.len, q->key.ptr);
		v[4] = key;
	}
	// The cursor is the last id of the previous page: this page holds smaller ids.
	snprintf(max_id, sizeof(max_id), "%" PRIu64, q->before_id > 0 ? q->before_id - 1 : BRQ_ID_MAX);
	// One row more than the page: whether another page follows.
	snprintf(rows, sizeof(rows), "%" PRIu32, q->limit + 1);
	int rv = brq_store_run(c, list_stmt(q), v, l, f, JOB__N, &r);
	if (rv != 0)
		return rv;
	int count = PQntuples(r);
	*more     = count > (int) q->limit;
	*n        = *more ? q->limit : (uint32_t) count;
	*jobs     = brq_arena_alloc(&c->arena, *n > 0 ? *n : 1, sizeof(**jobs));
	if (*jobs == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "list: out of memory");
	for (uint32_t i = 0; i < *n; i++)
		brq_store_job_row(c->st->cfg, r, (int) i, &(*jobs)[i]);
	return 0;
}

static int
retry_one(brq_store_conn *c, uint64_t id, brq_store_retried *out)
{
	PGresult *r;
	int       rv = brq_store_run_by_id(c, BRQ_STMT_RETRY_ONE, id, RETRY__N, &r);
	if (rv != 0)
		return rv;
	out->state = brq_store_state(r, 0, RETRY_STATE);
	out->topic = brq_store_str(r, 0, RETRY_TOPIC);
	if (out->state != BRQ_STATE_DEAD && out->state != BRQ_STATE_CANCELED)
		return 0;
	bool is_new = !brq_store_is_null(r, 0, RETRY_NEW_ID);
	if (!is_new && brq_store_is_null(r, 0, RETRY_EXISTING_ID))
		return brq_store_fail(c, BRQ_ECONFLICT, "job %" PRIu64 " was being retried by another call",
				      id);
	out->ids = brq_arena_alloc(&c->arena, 1, sizeof(*out->ids));
	if (out->ids == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "retry: out of memory");
	out->ids[0]  = (uint64_t) brq_store_int(r, 0, is_new ? RETRY_NEW_ID : RETRY_EXISTING_ID);
	out->n_ids   = 1;
	out->retried = is_new ? 1 : 0;
	return 0;
}

static void
read_retried(const PGresult *r, int row, void *id)
{
	*(uint64_t *) id = (uint64_t) brq_store_int(r, row, RETRIED_ID);
}

int
brq_store_retry(brq_store_conn *c, const brq_retry_req *q, brq_store_retried *out)
{
	*out = (brq_store_retried) {.state = q->state, .topic = q->topic};
	if (q->id > 0)
		return retry_one(c, q->id, out);
	char        topic[BRQ_TOPIC_MAX + 1], lim[16];
	const char *v[3] = {topic, brq_state_name(q->state), lim};
	PGresult   *r;
	snprintf(topic, sizeof(topic), "%.*s", (int) q->topic.len, q->topic.ptr);
	snprintf(lim, sizeof(lim), "%" PRIu32, q->limit);
	int rv = brq_store_run(c, BRQ_STMT_RETRY_BULK, v, NULL, NULL, RETRIED__N, &r);
	if (rv != 0)
		return rv;
	out->ids = brq_store_read_all(c, r, sizeof(*out->ids), read_retried, &out->n_ids);
	if (out->ids == NULL)
		return brq_store_fail(c, BRQ_ENOMEM, "retry: out of memory");
	out->retried = out->n_ids;
	return 0;
}

int
brq_store_delete(brq_store_conn *c, uint64_t id, bool *deleted, brq_state *state, brq_str *topic)
{
	PGresult *r;
	int       rv = brq_store_run_by_id(c, BRQ_STMT_DELETE, id, DELETE__N, &r);
	if (rv != 0)
		return rv;
	*deleted = brq_store_bool(r, 0, DELETE_DELETED);
	*topic   = brq_store_str(r, 0, DELETE_TOPIC);
	if (!*deleted)
		*state = brq_store_state(r, 0, DELETE_STATE);
	return 0;
}
