// SPDX-License-Identifier: MIT
// The web console's operations: what each JSON endpoint does on a pool thread, one
// function per endpoint, all with one signature. This header is the seam between the
// console's HTTP side (console.c, console_api.c: sessions, CSRF, routing, the pool) and
// the queue's operations.
//
// Wired now (console_ops.c), through the RPC's own operations (ops.h brq_ops_run): the
// request is built as the RPC's decoded request and validated by the RPC's own decoder
// (proto.h), run on the same pool with the same store calls, wakes, metrics and log
// lines, and its reply decoded back; so the console can do nothing the RPC cannot:
//   brq_console_op_job      GET  /console/api/job?id=N
//   brq_console_op_cancel   POST /console/api/cancel       id=N
//   brq_console_op_enqueue  POST /console/api/enqueue      topic, payload, key, delay_ms, max_attempts
//   brq_console_op_jobs     GET  /console/api/jobs         topic, state, created_after_ms,
//                                                          created_before_ms, key, cursor, limit
//   brq_console_op_retry    POST /console/api/retry        id=N | topic, state, limit
//   brq_console_op_delete   POST /console/api/delete       id=N
//
// The bulk actions (console_ops_bulk.c), each job through the RPC's one-job operation:
//   brq_console_op_jobs_count  GET  /console/api/jobs_count  the jobs filter's parameters
//   brq_console_op_bulk        POST /console/api/bulk        action, ids | all=1 + filter, cursor, limit
//
// The policy and schedule operations (console_ops_policy.c, console_ops_schedule.c), the same way:
//   brq_console_op_topics     GET  /console/api/topics     (paused flag and limits per topic)
//   brq_console_op_pause      POST /console/api/pause      topic
//   brq_console_op_resume     POST /console/api/resume     topic
//   brq_console_op_schedules  GET  /console/api/schedules  (the schedule table)
#ifndef BRQ_GATEWAY_CONSOLE_OPS_H
#define BRQ_GATEWAY_CONSOLE_OPS_H

#include <stdint.h>

#include "console_json.h"
#include "rpc/rpc.h"
#include "store/store.h"

// Largest error message of a console reply.
#define BRQ_CONSOLE_ERR_MAX 512

// One call of an operation, on a pool thread. Everything is borrowed for the call.
typedef struct brq_console_call {
	const brq_ops    *ops; // the RPC's operations (ops.h), with the gateway's waiters
	const brq_limits *lim; // the RPC's request limits (payload size, ...)
	brq_store_conn   *c;   // the pool thread's connection; borrowed outputs until return
	brq_work         *w;   // scratch for brq_ops_run: req, arena and out are free to use
	const brq_form   *in;  // the request's parameters (query string or form body)
	brq_jw           *out; // the 200 reply's JSON object, opened and closed by the caller
	// Who asks, for the log line of an action: "role=admin token_fp=1a2b3c4d session=9f8e7d6c"
	const char *actor;
	char        err[BRQ_CONSOLE_ERR_MAX]; // the message of any other status
	// The protocol's status code of a refusal the RPC gave (brq_status_name: static), for
	// the error reply's "code"; NULL: the one the HTTP status stands for.
	const char *code;
} brq_console_call;

// An operation: returns the HTTP status. 200: the op wrote the members of the reply's
// object into out, in the JSON form of docs/protocol.md §11 (the protocol's keys, each
// instant as NAME_ms and NAME). Any other: err holds a one-line message (the HTTP side
// wraps it as {"code": code, "msg": err}) and out is discarded.
typedef int (*brq_console_op_fn)(brq_console_call *call);

// ---- wired (console_ops.c) ----------------------------------------------------------------
int brq_console_op_job(brq_console_call *call);
int brq_console_op_cancel(brq_console_call *call);
int brq_console_op_enqueue(brq_console_call *call);
int brq_console_op_jobs(brq_console_call *call);
int brq_console_op_retry(brq_console_call *call);
int brq_console_op_delete(brq_console_call *call);

// ---- bulk actions (console_ops_bulk.c) ------------------------------------------------------
int brq_console_op_jobs_count(brq_console_call *call);
int brq_console_op_bulk(brq_console_call *call);

// ---- policy and schedules (console_ops_policy.c, console_ops_schedule.c) -------------------
int brq_console_op_topics(brq_console_call *call);
int brq_console_op_pause(brq_console_call *call);
int brq_console_op_resume(brq_console_call *call);
int brq_console_op_schedules(brq_console_call *call);

// ---- history and workers (console_ops_history.c): reads the RPC has no operation for,
// straight from the store on the call's connection ------------------------------------------
//   brq_console_op_history      GET /console/api/history      topic, window (1h, 24h)
//   brq_console_op_workers      GET /console/api/workers
//   brq_console_op_worker_jobs  GET /console/api/worker_jobs  worker
int brq_console_op_history(brq_console_call *call);
int brq_console_op_workers(brq_console_call *call);
int brq_console_op_worker_jobs(brq_console_call *call);

// ---- helpers for operations ----------------------------------------------------------------

// Sets call->err from fmt and returns status.
int brq_console_fail(brq_console_call *call, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

// Runs req through the RPC's validation and operation (brq_ops_run) on the call's
// connection, its reply decoded into *rep (borrowing call->w). Returns 200, or the
// status of a refusal with call->err set.
int brq_console_rpc(brq_console_call *call, brq_request *req, brq_reply *rep);

// A job in its JSON form (docs/protocol.md §11, the job map of §7.8): the list's rows
// and the job page use it alike.
void brq_console_json_job(brq_jw *out, const brq_job_info *j);
// "key": JSON text as the database printed it (jsonb: a payload, a result), embedded as
// it is. Checked all the same, so that nothing can break the reply's own syntax; text
// that is not JSON goes as a string.
void brq_console_json_text(brq_jw *out, const char *key, brq_str s);

// Parameter checks shared by the operations; each returns 0 or 400 with call->err set
// naming the field. Optional fields leave *out untouched when absent.
int brq_console_param_id(brq_console_call *call, const char *name, uint64_t *id); // required
int brq_console_param_topic(brq_console_call *call, const char *name, bool required, brq_str *out);
int brq_console_param_state(brq_console_call *call, const char *name, int *state); // -1 if absent
int brq_console_param_u64(brq_console_call *call, const char *name, uint64_t min, uint64_t max,
			  uint64_t *out);
// The job list's filter, cursor and limit (1..200, 50) into q (strings borrowed from the
// form), as GET jobs takes them. 0 or a 400.
int brq_console_jobs_params(brq_console_call *call, brq_list_req *q);

#endif
