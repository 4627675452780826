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

// ---- Elements -----------------------------------------------------------------------
// The gateway writes these maps, so their tables give whole ranges; optional keys are
// those an older gateway does not send (and nil where a value may be missing).

#define ER(m) offsetof(brq_enqueue_result, m)
static const brq_fdesc enqueue_result_fields[] = {
	{"id", BRQ_K_U64, BRQ_REQ, .off = ER(id)},
	{"created", BRQ_K_BOOL, BRQ_REQ, .off = ER(created)},
};

static brq_status
enqueue_result(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return brq_dec_fields(d, r, path, enqueue_result_fields, BRQ_NELEM(enqueue_result_fields), out);
}

// Not applied: "state" is nil (tolerated absent); nothing else is meaningful.
static brq_status
settle_state(brq_dec *d, const brq_field *f, const char *path, void *obj)
{
	brq_settle_result *x = obj;

	if (x->applied) {
		return brq_dec_state(d, f, path, &x->state);
	}
	if (f->at != NULL && !brq_dec_is_nil(f)) {
		return brq_dec_failf(d, BAD, path, "state", "must be nil when not applied");
	}
	return BRQ_ST_OK;
}

#define SR(m) offsetof(brq_settle_result, m)
static const brq_fdesc settle_result_fields[] = {
	{"id", BRQ_K_U64, BRQ_REQ, .off = SR(id)},
	{"applied", BRQ_K_BOOL, BRQ_REQ, .off = SR(applied)},
	{"state", BRQ_K_FN, 0, .fn = settle_state},
};

static brq_status
settle_result(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return brq_dec_fields(d, r, path, settle_result_fields, BRQ_NELEM(settle_result_fields), out);
}

#define CJ(m) offsetof(brq_claimed_job, m)
static const brq_fdesc claimed_job_fields[] = {
	{"id", BRQ_K_U64, BRQ_REQ, .off = CJ(id)},
	{"topic", BRQ_K_STR, BRQ_REQ, .off = CJ(topic)},
	{"payload", BRQ_K_STR, BRQ_REQ, .off = CJ(payload)},
	{"attempts", BRQ_K_U32, BRQ_REQ, .off = CJ(attempts)},
	{"max_attempts", BRQ_K_U32, BRQ_REQ, .off = CJ(max_attempts)},
	{"lease", BRQ_K_LEASE, BRQ_REQ, .off = CJ(lease)},
	{"lease_until_ms", BRQ_K_I64, BRQ_REQ, .off = CJ(lease_until_ms)},
	{"created_at_ms", BRQ_K_I64, BRQ_REQ, .off = CJ(created_at_ms)},
	{"attempt_timeout_ms", BRQ_K_U64, 0, .off = CJ(attempt_timeout_ms)},
	{"max_execution_ms", BRQ_K_U64, 0, .off = CJ(max_execution_ms)},
};

static brq_status
claimed_job(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return brq_dec_fields(d, r, path, claimed_job_fields, BRQ_NELEM(claimed_job_fields), out);
}

#define AE(m) offsetof(brq_attempt_error, m)
static const brq_fdesc attempt_error_fields[] = {
	{"attempt", BRQ_K_U32, BRQ_REQ, .off = AE(attempt)},
	{"at_ms", BRQ_K_I64, BRQ_REQ, .off = AE(at_ms)},
	{"error", BRQ_K_STR, BRQ_REQ, .off = AE(error)},
};

static brq_status
attempt_error(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return brq_dec_fields(d, r, path, attempt_error_fields, BRQ_NELEM(attempt_error_fields), out);
}

// The job's optional "errors" (the job reply's; a list's rows have none).
static brq_status
job_errors(brq_dec *d, const brq_field *f, const char *path, void *obj)
{
	brq_job_info *j = obj;
	return brq_dec_list(d, f, path, false, sizeof(brq_attempt_error), attempt_error, (void **) &j->errors,
			    &j->n_errors, &j->has_errors);
}

#define JI(m) offsetof(brq_job_info, m)
static const brq_fdesc job_info_fields[] = {
	{"id", BRQ_K_U64, BRQ_REQ, .off = JI(id)},
	{"topic", BRQ_K_STR, BRQ_REQ, .off = JI(topic)},
	{"payload", BRQ_K_STR, BRQ_REQ, .off = JI(payload)},
	{"state", BRQ_K_STATE, BRQ_REQ, .off = JI(state)},
	{"attempts", BRQ_K_U32, BRQ_REQ, .off = JI(attempts)},
	{"max_attempts", BRQ_K_U32, BRQ_REQ, .off = JI(max_attempts)},
	{"available_at_ms", BRQ_K_I64, BRQ_REQ, .off = JI(available_at_ms)},
	{"locked_by", BRQ_K_STR, BRQ_NIL, .off = JI(locked_by), .has = JI(has_locked_by)},
	{"locked_until_ms", BRQ_K_I64, BRQ_NIL, .off = JI(locked_until_ms), .has = JI(has_locked_until_ms)},
	{"last_error", BRQ_K_STR, BRQ_NIL, .off = JI(last_error), .has = JI(has_last_error)},
	{"key", BRQ_K_STR, BRQ_NIL, .off = JI(key), .has = JI(has_key)},
	{"created_at_ms", BRQ_K_I64, BRQ_REQ, .off = JI(created_at_ms)},
	{"updated_at_ms", BRQ_K_I64, BRQ_REQ, .off = JI(updated_at_ms)},
	{"priority", BRQ_K_U32, 0, .off = JI(priority)},
	{"result", BRQ_K_STR, BRQ_NIL, .off = JI(result), .has = JI(has_result)},
	{"retry_of", BRQ_K_U64, BRQ_NIL, .off = JI(retry_of), .has = JI(has_retry_of)},
	{"claimed_at_ms", BRQ_K_I64, 0, .off = JI(claimed_at_ms), .has = JI(has_claimed_at_ms)},
	{"attempt_deadline_ms", BRQ_K_I64, 0, .off = JI(attempt_deadline_ms)},
	{"max_execution_deadline_ms", BRQ_K_I64, 0, .off = JI(max_execution_deadline_ms)},
	{"lost_leases", BRQ_K_U32, 0, .off = JI(lost_leases)},
	{"errors", BRQ_K_FN, 0, .fn = job_errors},
};

brq_status
brq_dec_job_info(brq_dec *d, brq_rd *r, const char *path, void *out)
{
	return brq_dec_fields(d, r, path, job_info_fields, BRQ_NELEM(job_info_fields), out);
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
	case BRQ_OP_STATS:
		f[0].name = "topics";
		f[1].name = "terminal_age_ms";
		f[2].name = "terminal_estimated";
		break;
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
		TRY(brq_dec_state(d, &f[0], op, &rep->cancel.state));
		return brq_dec_bool(d, &f[1], op, true, &rep->cancel.canceled, NULL);
	case BRQ_OP_JOB:
		if (f[0].at == NULL) {
			return brq_dec_failf(d, BAD, op, "job", "required map");
		}
		r = brq_dec_at(d, &f[0]);
		return brq_dec_job_info(d, &r, "job.job", &rep->job.job);
	case BRQ_OP_STATS:
		TRY(brq_dec_uint(d, &f[1], op, false, 0, UINT64_MAX, &rep->stats.terminal_age_ms,
				 &rep->stats.has_terminal_age));
		TRY(brq_dec_bool(d, &f[2], op, false, &rep->stats.terminal_estimated, NULL));
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
