// SPDX-License-Identifier: MIT
// Reply decoding (client side): envelope and status, then the typed fields of each operation.
#include "proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dec.h"
#include "opcodecs.h"
#include "policy_int.h"

#define BAD BRQ_ST_INVALID_ARGUMENT

static brq_status
get_u32(brq_dec *d, const brq_field *f, const char *path, uint32_t *out)
{
	return brq_dec_u32(d, f, path, true, 0, UINT32_MAX, out, NULL);
}

static brq_status
get_u64(brq_dec *d, const brq_field *f, const char *path, uint64_t *out)
{
	return brq_dec_uint(d, f, path, true, 0, UINT64_MAX, out, NULL);
}

static brq_status
get_i64(brq_dec *d, const brq_field *f, const char *path, int64_t *out)
{
	return brq_dec_int(d, f, path, true, INT64_MIN, INT64_MAX, out, NULL);
}

static brq_status
get_str(brq_dec *d, const brq_field *f, const char *path, brq_str *out)
{
	return brq_dec_str(d, f, path, true, false, 0, UINT32_MAX, BAD, out, NULL);
}

// str or nil (has = false).
static brq_status
get_opt_str(brq_dec *d, const brq_field *f, const char *path, bool *has, brq_str *out)
{
	if (f->at == NULL || brq_dec_is_nil(f)) {
		*has = false;
		return BRQ_ST_OK;
	}
	*has = true;
	return get_str(d, f, path, out);
}

static brq_status
get_state(brq_dec *d, const brq_field *f, const char *path, brq_state *out)
{
	brq_str s;
	int     k;

	TRY(get_str(d, f, path, &s));
	k = brq_state_lookup(s.ptr, s.len);
	if (k < 0) {
		return brq_dec_failf(d, BAD, path, f->name, "unknown job state");
	}
	*out = (brq_state) k;
	return BRQ_ST_OK;
}

static brq_status
get_lease(brq_dec *d, const brq_field *f, const char *path, uint8_t out[BRQ_LEASE_LEN])
{
	return brq_dec_lease(d, f, path, out);
}

// ---- Elements -----------------------------------------------------------------------

static brq_status
enqueue_result(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_enqueue_result *x    = out;
	brq_field           f[2] = {{"id", NULL}, {"created", NULL}};

	TRY(brq_dec_map(d, r, path, f, 2));
	TRY(get_u64(d, &f[0], path, &x->id));
	return brq_dec_bool(d, &f[1], path, true, &x->created, NULL);
}

static brq_status
settle_result(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_settle_result *x    = out;
	brq_field          f[3] = {{"id", NULL}, {"applied", NULL}, {"state", NULL}};

	TRY(brq_dec_map(d, r, path, f, 3));
	TRY(get_u64(d, &f[0], path, &x->id));
	TRY(brq_dec_bool(d, &f[1], path, true, &x->applied, NULL));
	if (!x->applied) {
		// Not applied: "state" is nil (tolerated absent); nothing else is meaningful.
		if (f[2].at != NULL && !brq_dec_is_nil(&f[2])) {
			return brq_dec_failf(d, BAD, path, "state", "must be nil when not applied");
		}
		return BRQ_ST_OK;
	}
	return get_state(d, &f[2], path, &x->state);
}

enum {
	CJ_ID,
	CJ_TOPIC,
	CJ_PAYLOAD,
	CJ_ATT,
	CJ_MAXATT,
	CJ_LEASE,
	CJ_UNTIL,
	CJ_CREATED,
	CJ_TIMEOUT,
	CJ_MAXEXEC,
	CJ__N
};

static brq_status
claimed_job(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_claimed_job *j        = out;
	brq_field        f[CJ__N] = {
		       [CJ_ID]      = {"id", NULL},
		       [CJ_TOPIC]   = {"topic", NULL},
		       [CJ_PAYLOAD] = {"payload", NULL},
		       [CJ_ATT]     = {"attempts", NULL},
		       [CJ_MAXATT]  = {"max_attempts", NULL},
		       [CJ_LEASE]   = {"lease", NULL},
		       [CJ_UNTIL]   = {"lease_until_ms", NULL},
		       [CJ_CREATED] = {"created_at_ms", NULL},
		       [CJ_TIMEOUT] = {"attempt_timeout_ms", NULL},
		       [CJ_MAXEXEC] = {"max_execution_ms", NULL},
        };

	TRY(brq_dec_map(d, r, path, f, CJ__N));
	TRY(get_u64(d, &f[CJ_ID], path, &j->id));
	TRY(get_str(d, &f[CJ_TOPIC], path, &j->topic));
	TRY(get_str(d, &f[CJ_PAYLOAD], path, &j->payload));
	TRY(get_u32(d, &f[CJ_ATT], path, &j->attempts));
	TRY(get_u32(d, &f[CJ_MAXATT], path, &j->max_attempts));
	TRY(get_lease(d, &f[CJ_LEASE], path, j->lease));
	TRY(get_i64(d, &f[CJ_UNTIL], path, &j->lease_until_ms));
	TRY(get_i64(d, &f[CJ_CREATED], path, &j->created_at_ms));
	// Optional (absent: none, and from gateways before timeouts existed).
	TRY(brq_dec_uint(d, &f[CJ_TIMEOUT], path, false, 0, UINT64_MAX, &j->attempt_timeout_ms, NULL));
	return brq_dec_uint(d, &f[CJ_MAXEXEC], path, false, 0, UINT64_MAX, &j->max_execution_ms, NULL);
}

enum {
	JI_ID,
	JI_TOPIC,
	JI_PAYLOAD,
	JI_STATE,
	JI_ATT,
	JI_MAXATT,
	JI_AVAIL,
	JI_LOCKED_BY,
	JI_LOCKED_UNTIL,
	JI_LAST_ERROR,
	JI_KEY,
	JI_CREATED,
	JI_UPDATED,
	JI_PRIORITY,
	JI_RESULT,
	JI_RETRY_OF,
	JI_CLAIMED,
	JI_ATT_DEADLINE,
	JI_MAX_DEADLINE,
	JI__N
};

static brq_status
job_info(brq_dec *d, brq_rd *r, const char *path, brq_job_info *j)
{
	brq_field f[JI__N] = {
		[JI_ID]           = {"id", NULL},
		[JI_TOPIC]        = {"topic", NULL},
		[JI_PAYLOAD]      = {"payload", NULL},
		[JI_STATE]        = {"state", NULL},
		[JI_ATT]          = {"attempts", NULL},
		[JI_MAXATT]       = {"max_attempts", NULL},
		[JI_AVAIL]        = {"available_at_ms", NULL},
		[JI_LOCKED_BY]    = {"locked_by", NULL},
		[JI_LOCKED_UNTIL] = {"locked_until_ms", NULL},
		[JI_LAST_ERROR]   = {"last_error", NULL},
		[JI_KEY]          = {"key", NULL},
		[JI_CREATED]      = {"created_at_ms", NULL},
		[JI_UPDATED]      = {"updated_at_ms", NULL},
		[JI_PRIORITY]     = {"priority", NULL},
		[JI_RESULT]       = {"result", NULL},
		[JI_RETRY_OF]     = {"retry_of", NULL},
		[JI_CLAIMED]      = {"claimed_at_ms", NULL},
		[JI_ATT_DEADLINE] = {"attempt_deadline_ms", NULL},
		[JI_MAX_DEADLINE] = {"max_execution_deadline_ms", NULL},
	};

	TRY(brq_dec_map(d, r, path, f, JI__N));
	TRY(get_u64(d, &f[JI_ID], path, &j->id));
	TRY(get_str(d, &f[JI_TOPIC], path, &j->topic));
	TRY(get_str(d, &f[JI_PAYLOAD], path, &j->payload));
	TRY(get_state(d, &f[JI_STATE], path, &j->state));
	TRY(get_u32(d, &f[JI_ATT], path, &j->attempts));
	TRY(get_u32(d, &f[JI_MAXATT], path, &j->max_attempts));
	TRY(get_i64(d, &f[JI_AVAIL], path, &j->available_at_ms));
	TRY(get_opt_str(d, &f[JI_LOCKED_BY], path, &j->has_locked_by, &j->locked_by));
	j->has_locked_until_ms = false;
	if (f[JI_LOCKED_UNTIL].at != NULL && !brq_dec_is_nil(&f[JI_LOCKED_UNTIL])) {
		TRY(get_i64(d, &f[JI_LOCKED_UNTIL], path, &j->locked_until_ms));
		j->has_locked_until_ms = true;
	}
	TRY(get_opt_str(d, &f[JI_LAST_ERROR], path, &j->has_last_error, &j->last_error));
	TRY(get_opt_str(d, &f[JI_KEY], path, &j->has_key, &j->key));
	TRY(get_i64(d, &f[JI_CREATED], path, &j->created_at_ms));
	TRY(get_i64(d, &f[JI_UPDATED], path, &j->updated_at_ms));
	// Optional (gateways before priorities do not send it): 0 when absent.
	j->priority = 0;
	if (f[JI_PRIORITY].at != NULL) {
		TRY(get_u32(d, &f[JI_PRIORITY], path, &j->priority));
	}
	// Optional (absent from an older gateway's replies; nil when not set).
	TRY(get_opt_str(d, &f[JI_RESULT], path, &j->has_result, &j->result));
	j->has_retry_of = false;
	if (f[JI_RETRY_OF].at != NULL && !brq_dec_is_nil(&f[JI_RETRY_OF])) {
		TRY(get_u64(d, &f[JI_RETRY_OF], path, &j->retry_of));
		j->has_retry_of = true;
	}
	// Optional (absent from gateways before timeouts): 0 then.
	TRY(brq_dec_int(d, &f[JI_CLAIMED], path, false, INT64_MIN, INT64_MAX, &j->claimed_at_ms,
			&j->has_claimed_at_ms));
	TRY(brq_dec_int(d, &f[JI_ATT_DEADLINE], path, false, INT64_MIN, INT64_MAX, &j->attempt_deadline_ms,
			NULL));
	return brq_dec_int(d, &f[JI_MAX_DEADLINE], path, false, INT64_MIN, INT64_MAX,
			   &j->max_execution_deadline_ms, NULL);
}

brq_status
brq_dec_job_info(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return job_info(d, r, path, out);
}

static brq_status
topic_stats(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_topic_stats *t = out;
	enum { N = 2 + BRQ_STATE__COUNT + 3 };
	brq_field f[N];

	f[0].name = "topic";
	f[1].name = "oldest_ready_age_ms";
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		f[2 + s].name = brq_state_name((brq_state) s);
	}
	// Optional: a topic's policy, from gateways that have them.
	f[N - 3].name = "paused";
	f[N - 2].name = "max_running";
	f[N - 1].name = "rate_per_s";
	TRY(brq_dec_map(d, r, path, f, N));
	TRY(get_str(d, &f[0], path, &t->topic));
	for (int s = 0; s < BRQ_STATE__COUNT; s++) {
		TRY(get_u64(d, &f[2 + s], path, &t->count[s]));
	}
	TRY(brq_policy_stats_decode(d, &f[N - 3], path, t));
	return get_u64(d, &f[1], path, &t->oldest_ready_age_ms);
}

// One word of "lost_reasons"; a word this build does not know reads as "gone".
static brq_status
lost_reason_elem(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	brq_lost_reason *x = out;
	brq_str          s;

	TRY(brq_dec_str_elem(d, r, path, &s));
	*x = BRQ_LOST_GONE;
	for (int k = BRQ_LOST_NONE; k <= BRQ_LOST_MAX_EXECUTION; k++) {
		if (brq_str_eq(s, brq_lost_reason_name((brq_lost_reason) k))) {
			*x = (brq_lost_reason) k;
		}
	}
	return BRQ_ST_OK;
}

// The heartbeat reply's optional "lost_reasons" (field f), one per lease when present.
static brq_status
heartbeat_reasons(brq_dec *d, const brq_field *f, brq_heartbeat_rep *hb)
{
	uint32_t n = 0;
	bool     present;
	TRY(brq_dec_list(d, f, "heartbeat", false, sizeof(brq_lost_reason), lost_reason_elem,
			 (void **) &hb->lost_reasons, &n, &present));
	if (present && n != hb->n_extended) {
		return brq_dec_failf(d, BAD, "heartbeat", "lost_reasons", "must have one entry per lease");
	}
	return BRQ_ST_OK;
}

// ---- Operations ---------------------------------------------------------------------

static brq_status
decode_fields(brq_dec *d, brq_rd *top, brq_reply *rep)
{
	const brq_op_codec *family = brq_op_codec_of(rep->op);
	brq_field           f[3]   = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
	brq_rd              r;

	if (family != NULL) {
		return family->reply_decode(d, top, rep);
	}
	// The op fields each reply carries; found in one pass over the top map.
	switch (rep->op) {
	case BRQ_OP_PING: f[0].name = "server"; break;
	case BRQ_OP_ENQUEUE: f[0].name = "results"; break;
	case BRQ_OP_CLAIM:
		f[0].name = "jobs";
		f[1].name = "settled";
		break;
	case BRQ_OP_HEARTBEAT:
		f[0].name = "extended";
		f[1].name = "lease_until_ms";
		f[2].name = "lost_reasons";
		break;
	case BRQ_OP_SETTLE: f[0].name = "results"; break;
	case BRQ_OP_CANCEL:
		f[0].name = "state";
		f[1].name = "canceled";
		break;
	case BRQ_OP_JOB: f[0].name = "job"; break;
	case BRQ_OP_STATS: f[0].name = "topics"; break;
	default: return brq_dec_fail(d, BRQ_ST_INTERNAL, "reply decode: no operation given");
	}
	TRY(brq_dec_map(d, top, "", f, f[2].name != NULL ? 3 : f[1].name != NULL ? 2 : 1));

	const char *op = brq_op_name(rep->op);
	switch (rep->op) {
	case BRQ_OP_PING: return get_str(d, &f[0], op, &rep->ping.server);
	case BRQ_OP_ENQUEUE:
		return brq_dec_list(d, &f[0], op, true, sizeof(brq_enqueue_result), enqueue_result,
				    (void **) &rep->enqueue.results, &rep->enqueue.n_results, NULL);
	case BRQ_OP_CLAIM:
		TRY(brq_dec_list(d, &f[0], op, true, sizeof(brq_claimed_job), claimed_job,
				 (void **) &rep->claim.jobs, &rep->claim.n_jobs, NULL));
		return brq_dec_list(d, &f[1], op, false, sizeof(brq_settle_result), settle_result,
				    (void **) &rep->claim.settled, &rep->claim.n_settled,
				    &rep->claim.has_settled);
	case BRQ_OP_HEARTBEAT:
		TRY(brq_dec_list(d, &f[0], op, true, sizeof(bool), brq_dec_bool_elem,
				 (void **) &rep->heartbeat.extended, &rep->heartbeat.n_extended, NULL));
		TRY(get_i64(d, &f[1], op, &rep->heartbeat.lease_until_ms));
		return heartbeat_reasons(d, &f[2], &rep->heartbeat);
	case BRQ_OP_SETTLE:
		return brq_dec_list(d, &f[0], op, true, sizeof(brq_settle_result), settle_result,
				    (void **) &rep->settle.results, &rep->settle.n_results, NULL);
	case BRQ_OP_CANCEL:
		TRY(get_state(d, &f[0], op, &rep->cancel.state));
		return brq_dec_bool(d, &f[1], op, true, &rep->cancel.canceled, NULL);
	case BRQ_OP_JOB:
		if (f[0].at == NULL) {
			return brq_dec_failf(d, BAD, op, "job", "required map");
		}
		r = brq_dec_at(d, &f[0]);
		return job_info(d, &r, "job.job", &rep->job.job);
	case BRQ_OP_STATS:
		return brq_dec_list(d, &f[0], op, true, sizeof(brq_topic_stats), topic_stats,
				    (void **) &rep->stats.topics, &rep->stats.n_topics, NULL);
	default: return BRQ_ST_INTERNAL;
	}
}

enum { R_V, R_RID, R_CODE, R_MSG, R__COUNT };

brq_status
brq_reply_decode(brq_reply *rep, brq_op op, const void *buf, size_t len, const brq_limits *lim,
		 brq_arena *arena, char *err, size_t errlen)
{
	brq_dec   d           = {lim, arena, err, errlen, (const uint8_t *) buf + len, 0};
	brq_rd    r           = {buf, (const uint8_t *) buf + len};
	brq_field f[R__COUNT] = {
		[R_V]    = {"v", NULL},
		[R_RID]  = {"rid", NULL},
		[R_CODE] = {"code", NULL},
		[R_MSG]  = {"msg", NULL},
	};
	uint64_t    v;
	size_t      off;
	const char *why;
	int         k;

	memset(rep, 0, sizeof *rep);
	rep->op   = op;
	rep->code = BRQ_ST_INTERNAL;
	if (err != NULL && errlen > 0) {
		err[0] = '\0';
	}
	if (!brq_mp_check(buf, len, lim->max_depth, &off, &why)) {
		return brq_dec_fail(&d, BAD, "reply: %s at byte %zu", why, off);
	}
	TRY(brq_dec_map(&d, &r, "", f, R__COUNT));
	TRY(brq_dec_uint(&d, &f[R_V], "", true, 0, UINT64_MAX, &v, NULL));
	if (v != BRQ_PROTO_VERSION) {
		return brq_dec_fail(&d, BAD, "v: unsupported protocol version %" PRIu64, v);
	}
	TRY(brq_dec_uint(&d, &f[R_RID], "", false, 0, UINT64_MAX, &rep->rid, NULL));
	TRY(get_str(&d, &f[R_CODE], "", &rep->code_name));
	k = brq_status_lookup(rep->code_name.ptr, rep->code_name.len);
	// A code from a newer gateway is still an error the caller must see.
	rep->code = k < 0 ? BRQ_ST_INTERNAL : (brq_status) k;
	TRY(brq_dec_str(&d, &f[R_MSG], "", false, false, 0, UINT32_MAX, BAD, &rep->msg, NULL));
	if (rep->code != BRQ_ST_OK) {
		return BRQ_ST_OK;
	}
	r.p = buf;
	return decode_fields(&d, &r, rep);
}
