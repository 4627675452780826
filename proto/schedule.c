// SPDX-License-Identifier: MIT
// The schedule operations on the wire: schedule_add's fields, schedule_list's entries, schedule_remove's
// name.
#include "schedule.h"
#include "pack.h"

#include <inttypes.h>
#include <string.h>

// ---- encoding ------------------------------------------------------------------------

// Pairs written by schedule_kvs: the keys whose value is set, plus the list's own.
static uint32_t
schedule_pairs(const brq_schedule *s, bool add)
{
	uint32_t n = 3 + (s->payload.len > 0) + (s->cron.len > 0) + (s->tz.len > 0) + (s->every_ms > 0) +
		(s->catch_up_max > 0) + (s->max_attempts > 0);
	if (!add)
		n += 2 + (s->next_slot_ms != 0) + (s->last_slot_ms != 0);
	return n;
}

// The schedule's key/value pairs (schedule_pairs of them).
static void
schedule_kvs(brq_buf *b, const brq_schedule *s, bool add)
{
	kv_str(b, "name", s->name);
	kv_str(b, "topic", s->topic);
	kv_str_if(b, "payload", s->payload.len > 0, s->payload);
	kv_str_if(b, "cron", s->cron.len > 0, s->cron);
	kv_str_if(b, "tz", s->tz.len > 0, s->tz);
	kv_uint_if(b, "every_ms", s->every_ms > 0, s->every_ms);
	kv_cstr(b, "misfire", s->catch_up ? "catch_up" : "skip");
	kv_uint_if(b, "catch_up_max", s->catch_up_max > 0, s->catch_up_max);
	kv_uint_if(b, "max_attempts", s->max_attempts > 0, s->max_attempts);
	if (add)
		return;
	kv_bool(b, "enabled", s->enabled);
	kv_int_if(b, "next_slot_ms", s->next_slot_ms != 0, s->next_slot_ms);
	kv_int_if(b, "last_slot_ms", s->last_slot_ms != 0, s->last_slot_ms);
	kv_str(b, "source", s->source);
}

int
brq_pack_schedule(brq_buf *b, const brq_schedule *s, bool add)
{
	brq_pack_map(b, schedule_pairs(s, add));
	schedule_kvs(b, s, add);
	return brq_buf_error(b);
}

static uint32_t
request_fields(const brq_request *req)
{
	switch (req->op) {
	case BRQ_OP_SCHEDULE_ADD: return schedule_pairs(&req->schedule_add, true);
	case BRQ_OP_SCHEDULE_REMOVE: return 1;
	default: return 0;
	}
}

static void
request_encode(brq_buf *b, const brq_request *req)
{
	if (req->op == BRQ_OP_SCHEDULE_ADD)
		schedule_kvs(b, &req->schedule_add, true);
	else if (req->op == BRQ_OP_SCHEDULE_REMOVE)
		kv_str(b, "name", req->schedule_remove.name);
}

static int
reply_encode(brq_buf *b, const brq_reply *rep)
{
	switch (rep->op) {
	case BRQ_OP_SCHEDULE_ADD:
		brq_reply_begin(b, rep->rid, 2);
		kv_bool(b, "created", rep->schedule_add.created);
		kv_int(b, "next_slot_ms", rep->schedule_add.next_slot_ms);
		break;
	case BRQ_OP_SCHEDULE_LIST:
		brq_reply_begin(b, rep->rid, 1);
		brq_pack_key(b, "schedules");
		brq_pack_array(b, rep->schedule_list.n_schedules);
		for (uint32_t i = 0; i < rep->schedule_list.n_schedules; i++)
			brq_pack_schedule(b, &rep->schedule_list.schedules[i], false);
		break;
	case BRQ_OP_SCHEDULE_REMOVE: brq_reply_begin(b, rep->rid, 0); break;
	default: return BRQ_EINVAL;
	}
	return brq_buf_error(b);
}

// ---- decoding ------------------------------------------------------------------------

enum {
	S_NAME,
	S_TOPIC,
	S_PAYLOAD,
	S_CRON,
	S_TZ,
	S_EVERY,
	S_MISFIRE,
	S_CATCH_UP_MAX,
	S_MAX_ATTEMPTS,
	S_ENABLED,
	S_NEXT,
	S_LAST,
	S_SOURCE,
	S__COUNT
};

static const char *const names[S__COUNT] = {
	[S_NAME]         = "name",
	[S_TOPIC]        = "topic",
	[S_PAYLOAD]      = "payload",
	[S_CRON]         = "cron",
	[S_TZ]           = "tz",
	[S_EVERY]        = "every_ms",
	[S_MISFIRE]      = "misfire",
	[S_CATCH_UP_MAX] = "catch_up_max",
	[S_MAX_ATTEMPTS] = "max_attempts",
	[S_ENABLED]      = "enabled",
	[S_NEXT]         = "next_slot_ms",
	[S_LAST]         = "last_slot_ms",
	[S_SOURCE]       = "source",
};

// A name or topic: the topic rule.
static brq_status
name_field(brq_dec *d, const brq_field *f, const char *path, brq_str *out)
{
	TRY(brq_dec_str(d, f, path, true, false, 1, BRQ_TOPIC_MAX, BRQ_ST_INVALID_ARGUMENT, out, NULL));
	if (!brq_topic_valid(out->ptr, out->len))
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, f->name,
				     "invalid name (want [a-z0-9][a-z0-9._-]*, 1..%d bytes)", BRQ_TOPIC_MAX);
	return BRQ_ST_OK;
}

// The fields both directions share. Requests check values (the gateway checks the
// cron expression and the zone); replies take what the gateway stored.
static brq_status
schedule_fields(brq_dec *d, brq_field *f, const char *path, bool request, brq_schedule *s)
{
	bool    has;
	brq_str misfire;
	TRY(name_field(d, &f[S_NAME], path, &s->name));
	TRY(name_field(d, &f[S_TOPIC], path, &s->topic));
	TRY(brq_dec_str(d, &f[S_PAYLOAD], path, false, false, 0, request ? d->lim->max_payload : UINT32_MAX,
			BRQ_ST_TOO_LARGE, &s->payload, NULL));
	TRY(brq_dec_str(d, &f[S_CRON], path, false, false, 1, BRQ_SCHEDULE_CRON_MAX, BRQ_ST_INVALID_ARGUMENT,
			&s->cron, NULL));
	TRY(brq_dec_str(d, &f[S_TZ], path, false, false, 1, BRQ_SCHEDULE_TZ_MAX, BRQ_ST_INVALID_ARGUMENT,
			&s->tz, NULL));
	TRY(brq_dec_uint(d, &f[S_EVERY], path, false, BRQ_EVERY_MS_MIN, BRQ_EVERY_MS_MAX, &s->every_ms,
			 NULL));
	TRY(brq_dec_str(d, &f[S_MISFIRE], path, false, false, 0, 16, BRQ_ST_INVALID_ARGUMENT, &misfire,
			&has));
	if (has && !brq_str_eq(misfire, "skip") && !brq_str_eq(misfire, "catch_up"))
		return brq_dec_failf(d, BRQ_ST_INVALID_ARGUMENT, path, "misfire", "must be skip or catch_up");
	s->catch_up = has && brq_str_eq(misfire, "catch_up");
	TRY(brq_dec_u32(d, &f[S_CATCH_UP_MAX], path, false, 1, BRQ_CATCH_UP_MAX, &s->catch_up_max, NULL));
	return brq_dec_u32(d, &f[S_MAX_ATTEMPTS], path, false, 1, BRQ_ATTEMPTS_MAX, &s->max_attempts, NULL);
}

static brq_status
request_decode(brq_dec *d, brq_rd *top, brq_request *req)
{
	brq_field f[S__COUNT];
	for (int i = 0; i < S__COUNT; i++)
		f[i] = (brq_field) {names[i], NULL};
	const char *op = brq_op_name(req->op);
	switch (req->op) {
	case BRQ_OP_SCHEDULE_ADD:
		// Only the request's keys: the list's own (enabled, slots, source) are
		// unknown keys here, and ignored like any other.
		TRY(brq_dec_map(d, top, op, f, S_ENABLED));
		memset(&req->schedule_add, 0, sizeof(req->schedule_add));
		return schedule_fields(d, f, op, true, &req->schedule_add);
	case BRQ_OP_SCHEDULE_REMOVE:
		TRY(brq_dec_map(d, top, op, f, 1));
		return name_field(d, &f[S_NAME], op, &req->schedule_remove.name);
	default: return BRQ_ST_OK; // schedule_list: no fields
	}
}

// One schedule_list entry.
static brq_status
list_entry(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_schedule *s = out;
	brq_field     f[S__COUNT];
	bool          has;
	for (int i = 0; i < S__COUNT; i++)
		f[i] = (brq_field) {names[i], NULL};
	TRY(brq_dec_map(d, r, path, f, S__COUNT));
	TRY(schedule_fields(d, f, path, false, s));
	TRY(brq_dec_bool(d, &f[S_ENABLED], path, true, &s->enabled, NULL));
	TRY(brq_dec_int(d, &f[S_NEXT], path, false, INT64_MIN, INT64_MAX, &s->next_slot_ms, &has));
	TRY(brq_dec_int(d, &f[S_LAST], path, false, INT64_MIN, INT64_MAX, &s->last_slot_ms, &has));
	return brq_dec_str(d, &f[S_SOURCE], path, true, false, 0, 64, BRQ_ST_INVALID_ARGUMENT, &s->source,
			   NULL);
}

static brq_status
reply_decode(brq_dec *d, brq_rd *top, brq_reply *rep)
{
	const char *op = brq_op_name(rep->op);
	switch (rep->op) {
	case BRQ_OP_SCHEDULE_ADD: {
		brq_field f[2] = {{"created", NULL}, {"next_slot_ms", NULL}};
		TRY(brq_dec_map(d, top, "", f, 2));
		TRY(brq_dec_bool(d, &f[0], op, true, &rep->schedule_add.created, NULL));
		return brq_dec_int(d, &f[1], op, true, INT64_MIN, INT64_MAX, &rep->schedule_add.next_slot_ms,
				   NULL);
	}
	case BRQ_OP_SCHEDULE_LIST: {
		brq_field f[1] = {{"schedules", NULL}};
		TRY(brq_dec_map(d, top, "", f, 1));
		return brq_dec_list(d, &f[0], op, true, sizeof(brq_schedule), list_entry,
				    (void **) &rep->schedule_list.schedules, &rep->schedule_list.n_schedules,
				    NULL);
	}
	default: return BRQ_ST_OK; // schedule_remove: no fields
	}
}

const brq_op_codec brq_schedule_codec = {request_fields, request_encode, request_decode, reply_encode,
					 reply_decode};
