// SPDX-License-Identifier: MIT
// brooq wire protocol v1: message types and the one codec shared by gateway and client.
//
// Overview (docs/protocol.md is the byte-level contract):
//   client  brq_request_encode()  ──▶  gateway brq_request_decode_envelope()
//                                              (authenticate: token, op)
//                                              brq_request_decode_body()
//   client  brq_reply_decode()    ◀──  gateway brq_reply_encode() / brq_reply_begin()+brq_pack_*()
//
// Memory: decoded strings (brq_str) point into the caller's message buffer and are valid
// while that buffer lives and is unchanged; they are NOT NUL-terminated. Decoded arrays
// live in a caller-owned brq_arena and are valid until brq_arena_reset()/_fini(). Encoders
// write into a caller-owned brq_buf. Nothing here keeps global state; every function is
// safe to call from any thread on distinct objects.
#ifndef BRQ_PROTO_H
#define BRQ_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "json.h"
#include "status.h"
#include "text.h"

#define BRQ_PROTO_VERSION 1

// Fixed limits of protocol v1 (not configurable: a client may rely on them).
#define BRQ_LEASE_LEN        16                            // lease token bytes
#define BRQ_TOKEN_MAX        1024                          // bearer token bytes (min 1)
#define BRQ_KEY_MAX          256                           // idempotency key bytes
#define BRQ_WORKER_MAX       128                           // claim.worker bytes (min 1)
#define BRQ_TOPICS_MAX       64                            // claim.topics entries (min 1)
#define BRQ_ERROR_WIRE_MAX   65536                         // settle error bytes accepted
#define BRQ_ERROR_STORED_MAX 4096                          // last_error bytes stored (UTF-8 safe cut)
#define BRQ_ATTEMPTS_MAX     1000                          // max_attempts upper bound (min 1)
#define BRQ_JOB_ERRORS_MAX   10                            // job.errors: the latest attempts' errors kept
#define BRQ_PRIORITY_MIN     1                             // priority that runs first
#define BRQ_PRIORITY_MAX     9                             // priority that runs last
#define BRQ_PRIORITY_DEFAULT 1                             // priority of a job that says none
#define BRQ_LEASE_MS_MIN     1000                          // lease_ms lower bound
#define BRQ_LEASE_MS_MAX     86400000                      // lease_ms upper bound (24 h)
#define BRQ_DELAY_MS_MAX     UINT64_C(315360000000)        // 10 * 365 days in ms
#define BRQ_RUN_AT_MS_MAX    INT64_C(253402300799999)      // 9999-12-31T23:59:59.999Z
#define BRQ_ID_MAX           UINT64_C(9223372036854775807) // ids are PostgreSQL bigint >= 1
#define BRQ_MSG_MAX          1024                          // reply "msg" bytes we emit at most
#define BRQ_ERRTEXT_MAX      256                           // suggested size of decode error buffers
#define BRQ_LIST_MAX         1000                          // list.limit upper bound (min 1)
#define BRQ_LIST_DEFAULT     50                            // list.limit when absent
#define BRQ_RETRY_MAX        1000                          // retry.limit upper bound (min 1)
#define BRQ_RETRY_DEFAULT    100                           // retry.limit when absent
#define BRQ_CURSOR_MAX       64                            // list.cursor / next bytes
#define BRQ_WATCH_IDS_MAX    1000                          // watch reply: canceled ids at most

// Bytes borrowed from elsewhere (usually the message buffer). Not NUL-terminated.
typedef struct brq_str {
	const char *ptr;
	uint32_t    len;
} brq_str;

// Borrows a NUL-terminated C string (NULL gives the empty string). Lengths over
// UINT32_MAX are cut; callers never have such strings.
brq_str brq_str_c(const char *s);
// True iff a holds exactly the NUL-terminated string lit.
bool brq_str_eq(brq_str a, const char *lit);

// Limits of one gateway (or client) instance. Configurable; see brq_limits_default().
typedef struct brq_limits {
	uint32_t max_batch;      // entries in jobs/leases/items/settle arrays, claim.n; default 1000
	uint32_t max_payload;    // bytes of one payload; default 1 MiB
	uint32_t max_wait_ms;    // claim.wait_ms upper bound; default 300000
	uint32_t max_request;    // bytes of one request message; default 4 MiB (BROOQ_MAX_REQUEST's)
	uint32_t max_depth;      // msgpack container nesting, top-level map = 1; default 8
				 // (clamped to 32; below 5 a settle with chain cannot pass)
	uint32_t max_json_depth; // payload JSON nesting; default 256 (clamped to 4096)
} brq_limits;

// Fills *lim with the defaults above.
void brq_limits_default(brq_limits *lim);

// ---- Arena: per-message storage for decoded arrays ---------------------------------

typedef struct brq_arena_chunk brq_arena_chunk;

// Chunked bump allocator. Reset keeps the chunks (up to 64 KiB in total) so a work item
// that decodes one request after another stops calling malloc after warm-up.
typedef struct brq_arena {
	brq_arena_chunk *head; // all chunks, in allocation order
	brq_arena_chunk *cur;  // chunk being filled; chunks after it are free for reuse
} brq_arena;

// Prepares an empty arena in the caller's storage. Allocates nothing.
void brq_arena_init(brq_arena *a);
// Makes every earlier allocation invalid and the space reusable; frees chunks beyond the
// 64 KiB it keeps. The arena stays usable.
void brq_arena_reset(brq_arena *a);
// Frees all chunks. Accepts an arena that was only initialised; the storage itself stays
// the caller's. brq_arena_init() makes it usable again.
void brq_arena_fini(brq_arena *a);
// Zeroed storage for n elements of size bytes, aligned for any type, valid until the
// next reset/fini; owned by the arena. NULL on overflow of n * size or out of memory.
void *brq_arena_alloc(brq_arena *a, size_t n, size_t size);
// Exchanges the chunks of two arenas, both reset first: storage can move to where the
// work is (a few warm arenas shared by many mostly idle owners) without copying.
void brq_arena_swap(brq_arena *a, brq_arena *b);

// ---- Request types ------------------------------------------------------------------

// One job to enqueue (enqueue.jobs[i], settle chain[i]).
typedef struct brq_job_spec {
	brq_str  topic;   // valid topic
	brq_str  payload; // JSON text
	brq_str  key;     // idempotency key; len 0 = no key (the empty key is "no key")
	bool     has_delay_ms;
	uint64_t delay_ms;      // 0..BRQ_DELAY_MS_MAX
	bool     has_run_at_ms; // never together with has_delay_ms
	int64_t  run_at_ms;     // unix ms, 0..BRQ_RUN_AT_MS_MAX (the past means "now")
	bool     has_max_attempts;
	uint32_t max_attempts; // 1..BRQ_ATTEMPTS_MAX
	bool     has_priority;
	uint32_t priority; // BRQ_PRIORITY_MIN..MAX; lower runs first
} brq_job_spec;

// (id, lease token) of a held job.
typedef struct brq_lease_ref {
	uint64_t id;
	uint8_t  lease[BRQ_LEASE_LEN];
} brq_lease_ref;

typedef struct brq_settle_item {
	uint64_t      id;
	uint8_t       lease[BRQ_LEASE_LEN];
	brq_outcome   outcome;
	bool          has_error;
	brq_str       error;    // UTF-8, <= BRQ_ERROR_WIRE_MAX bytes
	uint64_t      delay_ms; // set iff outcome == DELAY; 0..BRQ_DELAY_MS_MAX
	brq_job_spec *chain;    // only with outcome == DONE
	uint32_t      n_chain;
	bool          has_chain;  // "chain" key present (possibly empty)
	bool          has_result; // "result" key present: only with outcome == DONE
	brq_str       result;     // JSON text, <= max_payload bytes (stored in job.result)
} brq_settle_item;

typedef struct brq_enqueue_req {
	brq_job_spec *jobs;
	uint32_t      n_jobs;
} brq_enqueue_req;

typedef struct brq_claim_req {
	brq_str          worker;
	brq_str         *topics;
	uint32_t         n_topics;
	uint32_t         n;
	bool             has_lease_ms;
	uint32_t         lease_ms;
	bool             has_wait_ms;
	uint32_t         wait_ms;
	bool             has_settle; // "settle" key present: reply then carries "settled"
	brq_settle_item *settle;
	uint32_t         n_settle;
} brq_claim_req;

typedef struct brq_heartbeat_req {
	brq_lease_ref *leases;
	uint32_t       n_leases;
	bool           has_lease_ms;
	uint32_t       lease_ms;
} brq_heartbeat_req;

typedef struct brq_settle_req {
	brq_settle_item *items;
	uint32_t         n_items;
} brq_settle_req;

typedef struct brq_id_req {
	uint64_t id;
} brq_id_req;

// pause, resume: one topic.
typedef struct brq_topic_req {
	brq_str topic;
} brq_topic_req;

// Per-topic limits: 0 = unlimited. An absent key leaves that limit as it is.
#define BRQ_TOPIC_LIMIT_MAX 1000000 // max_running and rate_per_s upper bound

typedef struct brq_topic_limits_req {
	brq_str  topic;
	bool     has_max_running; // key present (nil or 0: unlimited)
	uint32_t max_running;     // 0..BRQ_TOPIC_LIMIT_MAX
	bool     has_rate_per_s;
	uint32_t rate_per_s; // 0..BRQ_TOPIC_LIMIT_MAX
} brq_topic_limits_req;

// list: filters (each optional), a keyset cursor, a page size. Newest first (id DESC).
typedef struct brq_list_req {
	brq_str   topic; // len 0: any topic
	bool      has_state;
	brq_state state;
	bool      has_created_after_ms; // created_at >= after
	int64_t   created_after_ms;
	bool      has_created_before_ms; // created_at < before
	int64_t   created_before_ms;
	brq_str   key;       // len 0: any; without topic, in every topic
	brq_str   cursor;    // len 0: the first page; else a "next" of an earlier page
	uint64_t  before_id; // decoded from cursor: rows with id < before_id; 0: no cursor
	uint32_t  limit;     // 1..BRQ_LIST_MAX
} brq_list_req;

// retry: one job (id > 0), or up to limit jobs of topic in state (dead or canceled).
typedef struct brq_retry_req {
	uint64_t  id;
	brq_str   topic;
	brq_state state;
	uint32_t  limit;
} brq_retry_req;

// Bounds of a schedule's fields (schedule_add).
#define BRQ_EVERY_MS_MIN      UINT64_C(1000)        // every_ms lower bound (1 s)
#define BRQ_EVERY_MS_MAX      UINT64_C(31622400000) // every_ms upper bound (366 days)
#define BRQ_CATCH_UP_MAX      1000                  // catch_up_max upper bound (min 1)
#define BRQ_SCHEDULE_TZ_MAX   64                    // tz bytes (an IANA zone name)
#define BRQ_SCHEDULE_CRON_MAX 256                   // cron bytes

// A periodic job: schedule_add's fields, and one entry of schedule_list's reply.
typedef struct brq_schedule {
	brq_str  name;         // topic rules ([a-z0-9][a-z0-9._-]*, <= 128 bytes)
	brq_str  topic;        // the jobs' topic
	brq_str  payload;      // JSON; len 0 on add: {}
	brq_str  cron;         // 5-field expression; len 0: none (then every_ms is set)
	brq_str  tz;           // IANA zone of cron; len 0 on add: "UTC"
	uint64_t every_ms;     // 0: none (then cron is set); BRQ_EVERY_MS_MIN..BRQ_EVERY_MS_MAX
	bool     catch_up;     // misfire policy: false "skip", true "catch_up"
	uint32_t catch_up_max; // 1..BRQ_CATCH_UP_MAX; 0 on add: 10 with catch_up, else 1
	uint32_t max_attempts; // 0: the topic's default
	// schedule_list only:
	bool    enabled;
	int64_t next_slot_ms; // unix ms of the next slot owed; 0: none
	int64_t last_slot_ms; // unix ms of the last slot enqueued; 0: never
	brq_str source;       // "config" or "admin"
} brq_schedule;

typedef struct brq_name_req {
	brq_str name;
} brq_name_req;

// watch: the cancels of running jobs of `topics` after `cursor`, waiting up to wait_ms for one.
typedef struct brq_watch_req {
	brq_str *topics;
	uint32_t n_topics; // 1..BRQ_TOPICS_MAX
	brq_str  cursor;   // len 0: none (the first watch); else a reply's "next", 1..BRQ_CURSOR_MAX bytes
	bool     has_wait_ms;
	uint32_t wait_ms; // 0..max_wait_ms
} brq_watch_req;

// One request. Envelope first, then the fields of `op` in the matching union member.
typedef struct brq_request {
	uint64_t rid; // request id, echoed in the reply; 0 when absent
	brq_op   op;
	brq_str  token; // bearer token bytes (msgpack str or bin); len 0 = absent
	// How long after sending the caller waits for the reply, in ms; 0 = not said.
	// The gateway neither starts nor keeps the fruits of work the caller gave up on.
	uint32_t timeout_ms;
	union {
		brq_enqueue_req      enqueue;
		brq_claim_req        claim;
		brq_heartbeat_req    heartbeat;
		brq_settle_req       settle;
		brq_id_req           cancel;
		brq_id_req           job;
		brq_topic_req        pause;
		brq_topic_req        resume;
		brq_topic_limits_req topic_limits;
		brq_list_req         list;
		brq_retry_req        retry;
		brq_id_req           del; // op "delete"
		brq_schedule         schedule_add;
		brq_name_req         schedule_remove;
		brq_watch_req        watch;
	};
	// Private to the decoder: the message that stage 1 checked (stage 2 reads it again).
	const uint8_t *body_;
	const uint8_t *end_;
} brq_request;

// ---- Reply types --------------------------------------------------------------------

typedef struct brq_enqueue_result {
	uint64_t id;
	bool     created; // false: the (topic, key) already existed and id is that job
} brq_enqueue_result;

typedef struct brq_claimed_job {
	uint64_t id;
	brq_str  topic;
	brq_str  payload;
	uint32_t attempts; // including this claim
	uint32_t max_attempts;
	uint8_t  lease[BRQ_LEASE_LEN];
	int64_t  lease_until_ms;
	int64_t  created_at_ms;
	// The topic's timeouts, counted from this claim; 0 = none (the key is absent).
	uint64_t attempt_timeout_ms; // the handler's deadline
	uint64_t max_execution_ms;   // heartbeats are refused past it
} brq_claimed_job;

typedef struct brq_settle_result {
	uint64_t  id;
	bool      applied; // false: lease lost, nothing written
	brq_state state;   // new state; meaningful only when applied (nil on the wire otherwise)
} brq_settle_result;

// One attempt's error (the job reply's "errors", migration 00013).
typedef struct brq_attempt_error {
	uint32_t attempt; // the attempt it ended (attempts when it was recorded)
	int64_t  at_ms;   // when it was recorded
	brq_str  error;   // as last_error holds it (<= BRQ_ERROR_STORED_MAX bytes)
} brq_attempt_error;

typedef struct brq_job_info {
	uint64_t  id;
	brq_str   topic;
	brq_str   payload;
	brq_state state;
	uint32_t  attempts;
	uint32_t  max_attempts;
	int64_t   available_at_ms;
	bool      has_locked_by;
	brq_str   locked_by;
	bool      has_locked_until_ms;
	int64_t   locked_until_ms;
	bool      has_last_error;
	brq_str   last_error;
	bool      has_key;
	brq_str   key;
	int64_t   created_at_ms;
	int64_t   updated_at_ms;
	uint32_t  priority; // 0 from a gateway that does not send it
	// Optional keys (an older gateway sends neither: both read as absent).
	bool     has_result;
	brq_str  result; // JSON text a handler attached when it settled done
	bool     has_retry_of;
	uint64_t retry_of; // the terminal job this one re-runs (op "retry")
	// Optional keys (absent from older gateways): the latest claim, and while the job
	// is processing the deadlines its topic's timeouts set for this attempt (0: none).
	bool    has_claimed_at_ms;
	int64_t claimed_at_ms;
	int64_t attempt_deadline_ms;
	int64_t max_execution_deadline_ms;
	// Optional key (absent from older gateways, and when 0): the job's leases that ran
	// out without a recorded outcome (SPEC invariant 18's quarantine counts them).
	uint32_t lost_leases;
	// Optional key of the job reply (not of a list's rows, nor from older gateways): the
	// errors of the latest attempts, oldest first, at most BRQ_JOB_ERRORS_MAX.
	// has_errors: the key was there (then n_errors may be 0: none recorded).
	bool               has_errors;
	uint32_t           n_errors;
	brq_attempt_error *errors;
} brq_job_info;

typedef struct brq_topic_stats {
	brq_str  topic;
	uint64_t count[BRQ_STATE__COUNT]; // indexed by brq_state
	uint64_t oldest_ready_age_ms;     // 0 when nothing is ready
	// Optional keys, sent only for a topic with a policy (pause or limits).
	bool     has_policy;
	bool     paused;
	uint32_t max_running; // 0: unlimited
	uint32_t rate_per_s;  // 0: unlimited
} brq_topic_stats;

// A topic's policy (pause, resume, topic_limits, topics): 0 limits are unlimited.
typedef struct brq_topic_policy {
	brq_str  topic;
	bool     paused;
	uint32_t max_running;
	uint32_t rate_per_s;
	uint64_t running; // jobs of the topic processing now
} brq_topic_policy;

typedef struct brq_topics_rep {
	brq_topic_policy *topics;
	uint32_t          n_topics;
} brq_topics_rep;

typedef struct brq_enqueue_rep {
	brq_enqueue_result *results;
	uint32_t            n_results;
} brq_enqueue_rep;

typedef struct brq_claim_rep {
	brq_claimed_job   *jobs;
	uint32_t           n_jobs;
	bool               has_settled;
	brq_settle_result *settled;
	uint32_t           n_settled;
} brq_claim_rep;

// Why a heartbeat found a lease lost (heartbeat reply key `lost_reasons`).
typedef enum brq_lost_reason {
	BRQ_LOST_NONE = 0,      // "": extended
	BRQ_LOST_GONE,          // "gone": reaped, settled, deleted, another lease (and unknown words)
	BRQ_LOST_CANCELED,      // "canceled": the job was canceled
	BRQ_LOST_MAX_EXECUTION, // "max_execution": the attempt ran past its maximum execution time
} brq_lost_reason;

// Wire word of a reason ("" for BRQ_LOST_NONE).
const char *brq_lost_reason_name(brq_lost_reason r);

typedef struct brq_heartbeat_rep {
	bool    *extended;
	uint32_t n_extended;
	int64_t  lease_until_ms;
	// Present iff some lease was lost; then n_extended entries (absent: all GONE).
	brq_lost_reason *lost_reasons;
} brq_heartbeat_rep;

typedef struct brq_settle_rep {
	brq_settle_result *results;
	uint32_t           n_results;
} brq_settle_rep;

typedef struct brq_cancel_rep {
	brq_state state;    // state after the call
	bool      canceled; // true iff this call canceled the job
} brq_cancel_rep;

typedef struct brq_stats_rep {
	brq_topic_stats *topics;
	uint32_t         n_topics;
	bool             has_terminal_age; // the optional terminal_age_ms was sent
	uint64_t         terminal_age_ms;  // age of the terminal counts; 0: counted for this reply
	bool terminal_estimated;           // the terminal counts are a page sample's estimate (absent: false)
} brq_stats_rep;

typedef struct brq_list_rep {
	brq_job_info *jobs;
	uint32_t      n_jobs;
	bool          has_next;
	brq_str       next; // the cursor of the next page (nil on the wire: this was the last)
} brq_list_rep;

typedef struct brq_retry_rep {
	uint32_t  retried; // new jobs this call created
	uint64_t *ids;     // the retries' ids: new ones, or one that existed (single id)
	uint32_t  n_ids;
} brq_retry_rep;

typedef struct brq_delete_rep {
	uint64_t id;
	bool     deleted;
} brq_delete_rep;

typedef struct brq_watch_rep {
	uint64_t *canceled; // ids, oldest cancel first; at most BRQ_WATCH_IDS_MAX
	uint32_t  n_canceled;
	brq_str   next; // the cursor of the next watch (opaque, 1..BRQ_CURSOR_MAX bytes)
	// The gateway cannot tell every cancel since the request's cursor (none given, another
	// gateway's, too old, or its listener was away): the client checks its leases itself.
	bool resync;
} brq_watch_rep;

// One reply. `op` is not on the wire: it selects the union member (the client knows what
// it asked). Op fields are meaningful only when code == BRQ_ST_OK.
typedef struct brq_reply {
	brq_op     op;
	uint64_t   rid;
	brq_status code;
	brq_str    code_name; // decoded wire string (also for codes this build does not know)
	brq_str    msg;       // human text; len 0 when code == OK
	union {
		struct {
			brq_str server;
		} ping;
		brq_enqueue_rep   enqueue;
		brq_claim_rep     claim;
		brq_heartbeat_rep heartbeat;
		brq_settle_rep    settle;
		brq_cancel_rep    cancel;
		struct {
			brq_job_info job;
		} job;
		brq_stats_rep  stats;
		brq_list_rep   list;
		brq_retry_rep  retry;
		brq_delete_rep del;
		struct {
			brq_topic_policy policy;
		} policy; // pause, resume, topic_limits
		brq_topics_rep topics;
		struct {
			bool    created;      // false: an existing schedule of that name was replaced
			int64_t next_slot_ms; // the first slot it owes (unix ms)
		} schedule_add;
		struct {
			brq_schedule *schedules; // by name
			uint32_t      n_schedules;
		} schedule_list;
		brq_watch_rep watch;
	};
} brq_reply;

// ---- Decoding -----------------------------------------------------------------------
//
// All decoders: never read outside buf[0..len), never abort on input, allocate only from
// the arena and only after a count was checked against the limits and the bytes left.
// They return BRQ_ST_OK or the status to reply with, and on failure write a one-line
// message naming the field ("claim.n: must be 1..1000") into err[0..errlen) (always
// NUL-terminated when errlen > 0; err may be NULL). On failure the arena may hold partial
// results: reset it as usual.

// Stage 1 (before authentication). Checks, in order:
//   1. len <= lim->max_request, else BRQ_ST_TOO_LARGE;
//   2. buf is exactly one well-formed msgpack value, nested <= lim->max_depth, no
//      trailing bytes, no container count above the bytes left; then that it is a map
//      whose keys are all strings, no key twice -- else BRQ_ST_INVALID_ARGUMENT;
//   3. "rid" (optional uint), "v" (required, == 1), "op" (required, known),
//      "token" (optional str/bin, 1..BRQ_TOKEN_MAX bytes), in that order.
// Which outputs are valid on return, whatever the status:
//   req->rid   the request id if steps 1-2 passed and "rid" was a valid uint, else 0;
//   req->op    the operation if "v" and "op" were valid, else BRQ_OP_NONE;
//   req->token set (len > 0) only on BRQ_ST_OK, and then only if the request had one.
// Nothing else in *req is meaningful. An absent token is not an error here: the gateway
// answers BRQ_ST_UNAUTHENTICATED for it when it authenticates.
// req borrows buf (keep it alive and unchanged until stage 2 and the use of the fields).
brq_status brq_request_decode_envelope(brq_request *req, const void *buf, size_t len, const brq_limits *lim,
				       char *err, size_t errlen) BRQ_MUSTCHECK;

// Stage 2 (after authentication): decodes and validates the fields of req->op into the
// matching union member; arrays come from `arena`. Requires that stage 1 returned
// BRQ_ST_OK for req. Returns BRQ_ST_INVALID_ARGUMENT or BRQ_ST_TOO_LARGE (payload over
// max_payload, arrays over max_batch) with the field named, BRQ_ST_INTERNAL if the arena
// runs out of memory. Unknown keys are ignored.
brq_status brq_request_decode_body(brq_request *req, const brq_limits *lim, brq_arena *arena, char *err,
				   size_t errlen) BRQ_MUSTCHECK;

// Both stages in one call, for callers that do not authenticate in between (tests,
// tools). On failure, the outputs valid are those documented for the failing stage.
brq_status brq_request_decode(brq_request *req, const void *buf, size_t len, const brq_limits *lim,
			      brq_arena *arena, char *err, size_t errlen) BRQ_MUSTCHECK;

// Client side: decodes a reply to a request of operation `op`. Checks structure (as in
// stage 1, with lim->max_depth; max_request is not applied, the transport bounds reply
// size), "v" == 1, "code" (an unknown code string becomes BRQ_ST_INTERNAL; code_name
// keeps the text), "rid", "msg"; when code is ok, the op's fields with their types.
// Payloads in replies are not JSON-validated (the gateway only returns what it stored).
// Returns BRQ_ST_OK when the reply was decoded (whatever rep->code says), else
// BRQ_ST_INVALID_ARGUMENT (malformed reply) or BRQ_ST_INTERNAL (out of memory).
// rep borrows buf; arrays come from `arena`.
brq_status brq_reply_decode(brq_reply *rep, brq_op op, const void *buf, size_t len, const brq_limits *lim,
			    brq_arena *arena, char *err, size_t errlen) BRQ_MUSTCHECK;

// ---- Encoding -----------------------------------------------------------------------

// The list cursor that continues after the row with id `last_id` ("next"): NUL-terminated
// into buf[0..BRQ_CURSOR_MAX). Opaque to clients; brq_request_decode_body reads it back.
void brq_list_cursor(uint64_t last_id, char buf[BRQ_CURSOR_MAX]);

// Growable output buffer with a msgpack-c packer writing into it. Errors are sticky: the
// first failure (BRQ_ENOMEM, or BRQ_E2BIG when len would pass `limit`) is kept in `err`,
// later writes are dropped, and every pack call returns it; so a long run of brq_pack_*
// calls can be checked once with brq_buf_error() at the end.
// The packer points at the buf: do not copy or move an initialised brq_buf.
typedef struct brq_buf {
	char          *data; // owned; len bytes valid
	size_t         len;
	size_t         cap;
	size_t         limit; // maximum len; SIZE_MAX when unlimited
	int            err;   // 0 or a sticky BRQ_E* code
	msgpack_packer pk;
} brq_buf;

// Prepares an empty buffer; limit 0 means unlimited. Allocates nothing.
void brq_buf_init(brq_buf *b, size_t limit);
// Empties the buffer and clears the sticky error; keeps up to 64 KiB of capacity (a big
// request or reply gives its memory back: RSS follows the work, not its peak).
void brq_buf_reset(brq_buf *b);
// Frees the storage (NULL-safe for data). The caller's storage stays the caller's.
void brq_buf_fini(brq_buf *b);
// Exchanges the storage (data, capacity) of two buffers, both reset first; each keeps
// its own limit and packer. Like brq_arena_swap: warm storage moves to the work.
void brq_buf_swap(brq_buf *a, brq_buf *b);
// 0, or the sticky error of an earlier write.
int brq_buf_error(const brq_buf *b) BRQ_MUSTCHECK;
// The packer, for values brq_pack_* does not cover (writes through the same sticky path).
msgpack_packer *brq_buf_packer(brq_buf *b);

// Appending primitives (all return 0 or the sticky BRQ_E* error).
int brq_pack_map(brq_buf *b, uint32_t pairs);
int brq_pack_array(brq_buf *b, uint32_t n);
int brq_pack_key(brq_buf *b, const char *key); // a NUL-terminated str, used for map keys
int brq_pack_str(brq_buf *b, brq_str s);
int brq_pack_cstr(brq_buf *b, const char *s);
int brq_pack_bin(brq_buf *b, const void *p, uint32_t len);
int brq_pack_uint(brq_buf *b, uint64_t v);
int brq_pack_int(brq_buf *b, int64_t v);
int brq_pack_bool(brq_buf *b, bool v);
int brq_pack_nil(brq_buf *b);

// Appending element encoders: one map each, exactly as docs/protocol.md shows.
int brq_pack_job_spec(brq_buf *b, const brq_job_spec *j);
int brq_pack_settle_item(brq_buf *b, const brq_settle_item *it);
int brq_pack_enqueue_result(brq_buf *b, const brq_enqueue_result *r);
int brq_pack_claimed_job(brq_buf *b, const brq_claimed_job *j);
// The heartbeat reply's "lost_reasons" key and its n words.
int brq_pack_lost_reasons(brq_buf *b, const brq_lost_reason *r, uint32_t n);
int brq_pack_settle_result(brq_buf *b, const brq_settle_result *r);
int brq_pack_job_info(brq_buf *b, const brq_job_info *j);
int brq_pack_topic_stats(brq_buf *b, const brq_topic_stats *t);
int brq_pack_topic_policy(brq_buf *b, const brq_topic_policy *p);
// A schedule: schedule_add's request fields (add = true: the keys a client sends) or one
// entry of schedule_list's reply (add = false: with enabled, slots and source).
int brq_pack_schedule(brq_buf *b, const brq_schedule *s, bool add);

// Whole-message encoders: each first empties b (brq_buf_reset), then writes one message.
// The encoders do not validate: the gateway does; they emit the optional keys whose
// has_* flag is set (a key only if its len > 0, "rid" always).

// Client: a request for req->op with req->rid, req->token (omitted when len 0; sent as
// str when it is valid UTF-8, else as bin) and the op's fields. BRQ_EINVAL for BRQ_OP_NONE or an out-of-range
// enum.
int brq_request_encode(brq_buf *b, const brq_request *req) BRQ_MUSTCHECK;

// Gateway: rep->code == OK gives the op's fields for rep->op; any other code gives an
// error reply with rep->msg (any bytes: each one that starts no UTF-8 character goes as
// U+FFFD, and the msg is cut to BRQ_MSG_MAX bytes at a character boundary).
int brq_reply_encode(brq_buf *b, const brq_reply *rep) BRQ_MUSTCHECK;

// Gateway: an error reply {v, rid, code, msg} with msg formatted from fmt (made UTF-8
// and cut as brq_reply_encode does). code must not be BRQ_ST_OK.
int brq_reply_encode_error(brq_buf *b, uint64_t rid, brq_status code, const char *fmt, ...) BRQ_MUSTCHECK
	__attribute__((format(printf, 4, 5)));

// Gateway, streaming: starts an ok reply as a map of 3 + n_fields pairs and writes
// "v", "rid", "code":"ok"; the caller then writes exactly n_fields key/value pairs with
// brq_pack_key() and the brq_pack_* calls, and checks brq_buf_error() at the end.
// Example (claim, straight from database rows):
//   brq_reply_begin(b, rid, 1); brq_pack_key(b, "jobs"); brq_pack_array(b, n);
//   for (...) brq_pack_claimed_job(b, &job);  if (brq_buf_error(b)) ...
int brq_reply_begin(brq_buf *b, uint64_t rid, uint32_t n_fields);

#endif
