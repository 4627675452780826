/* SPDX-License-Identifier: MIT */
/*
 * libbrooq-client: the C API for brooq workers and producers.
 *
 * A brooq_client talks to brooq-gateway over NNG request/reply. One client handle
 * is safe to use from many threads at once; each call is one request with an
 * explicit timeout, never silently re-sent (a re-sent claim would leak a lease).
 *
 * Every call returns a brooq_err (BROOQ_OK = 0). brooq_strerror() describes a code;
 * brooq_last_message() gives the gateway's own text for the calling thread's last
 * failed call.
 *
 * Ownership: strings passed in are borrowed for the duration of the call. Results
 * that the library allocates say so, with the function that frees them.
 *
 * ABI (docs/abi.md). A program built against this header keeps working with every later
 * library of the same SONAME (libbrooq-client.so.1): a struct only ever gains fields at
 * its end, and no program ever depends on a struct's size, because of one rule:
 *  - A struct the caller allocates, to fill in or to receive a result in (the options,
 *    brooq_job_spec, brooq_settle_item, brooq_schedule, brooq_enqueue_result,
 *    brooq_settle_result, brooq_topic_policy, brooq_worker_stats, brooq_stats_meta),
 *    starts with `size_t size`, set to sizeof the struct by its _INIT macro (BROOQ_JOB_SPEC_INIT,
 *    ...). The library reads and writes only the bytes that size covers. An array of
 *    them is stepped by that size, so every element carries the same one. Fields this
 *    library does not know (a later header's) must be zero in what it reads, and are
 *    left as they are in what it writes. A size of 0, one smaller than the first
 *    released layout, or unequal sizes in one array: BROOQ_EINVAL.
 *  - A struct the library allocates (brooq_job, brooq_job_info, brooq_topic_stats,
 *    brooq_topic_policy from brooq_topics, brooq_schedule_info, brooq_job_page) is
 *    reached through pointers only: one struct, or an array of pointers to them (T **,
 *    one allocation with the structs and their strings), freed by its brooq_*_free.
 *  - Two value types are frozen and never change: brooq_lease and brooq_log_field.
 *
 * Limits (the gateway's defaults; docs/protocol.md section 7): a topic is
 * [a-z0-9][a-z0-9._-]*, 1..128 bytes; a batch (brooq_enqueue, brooq_settle, chained
 * jobs per settle) holds at most the gateway's max_batch (default 1000; over it:
 * BROOQ_ETOO_LARGE); a payload is JSON of at most max_payload (default 1 MiB); a
 * claim names 1..64 topics; an idempotency key is at most 256 bytes.
 *
 * Payloads come back (brooq_claim, brooq_job_get, a handler's brooq_job_payload) as
 * PostgreSQL's jsonb prints them: the same JSON value, not the same bytes
 * ({"n":7} comes back as {"n": 7}; key order and duplicate keys are normalised).
 */
#ifndef BROOQ_BROOQ_H
#define BROOQ_BROOQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BROOQ_BUILDING)
#define BROOQ_API __attribute__((visibility("default")))
#else
#define BROOQ_API
#endif

/* The library's version; brooq_version() gives the one actually linked. */
#define BROOQ_VERSION_MAJOR 0
#define BROOQ_VERSION_MINOR 2
#define BROOQ_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the linked library (may differ from the macros above when
 * the shared library was upgraded under the program). Static; never NULL. */
BROOQ_API const char *brooq_version(void);

#define BROOQ_LEASE_LEN 16

typedef enum brooq_err {
	BROOQ_OK = 0,
	/* Local failures. */
	BROOQ_EINVAL,    /* a bad argument, caught before sending */
	BROOQ_ENOMEM,    /* out of memory */
	BROOQ_ETIMEDOUT, /* sent, but no reply within the timeout (the request may have run) */
	BROOQ_ECONNECT,  /* gateway not reachable: nothing listens (the request was not
			  * sent), or the connection broke during the call (it may have run;
			  * brooq_last_message() says which) */
	BROOQ_EPROTO,    /* the reply could not be decoded */
	BROOQ_ETOKEN,    /* the token file is missing, unreadable or too short */
	/* Gateway status codes (docs/protocol.md). */
	BROOQ_EINVALID_ARGUMENT,
	BROOQ_EUNAUTHENTICATED,
	BROOQ_EPERMISSION_DENIED,
	BROOQ_ENOT_FOUND,
	BROOQ_EUNAVAILABLE,
	BROOQ_ETOO_LARGE,
	BROOQ_ERESOURCE_EXHAUSTED,
	BROOQ_EINTERNAL,
	BROOQ_ECONFLICT, /* the job's state does not allow it (retry, delete); nothing changed */
} brooq_err;

/* Static description of a code ("timed out", "not found", ...). Never NULL. */
BROOQ_API const char *brooq_strerror(brooq_err err);

/* The gateway's message (or a local explanation) for the calling thread's last
 * failed call; "" after a success. Valid until the thread's next call. */
BROOQ_API const char *brooq_last_message(void);

typedef enum brooq_state {
	BROOQ_PENDING = 0,
	BROOQ_PROCESSING,
	BROOQ_FAILED,
	BROOQ_DONE,
	BROOQ_DEAD,
	BROOQ_CANCELED,
} brooq_state;

/* "pending", "processing", ... Static; never NULL. */
BROOQ_API const char *brooq_state_name(brooq_state st);

typedef enum brooq_outcome {
	BROOQ_OUTCOME_DONE = 0, /* success; may carry chained jobs */
	BROOQ_OUTCOME_FAIL,     /* failure: retry with backoff, or dead on the last attempt */
	BROOQ_OUTCOME_DELAY,    /* retry after delay_ms; the attempt stays spent */
	BROOQ_OUTCOME_PRESERVE, /* failure that does not consume the attempt */
	BROOQ_OUTCOME_CANCEL,   /* no longer relevant: canceled */
} brooq_outcome;

/* ---- logging -------------------------------------------------------------------- */

typedef enum brooq_log_level {
	BROOQ_LOG_DEBUG = 0,
	BROOQ_LOG_INFO,
	BROOQ_LOG_WARN,
	BROOQ_LOG_ERROR,
} brooq_log_level;

/* "debug", "info", "warn", "error". Static; never NULL. */
BROOQ_API const char *brooq_log_level_name(brooq_log_level level);

/* One key=value of a log event ("job" = "42", "topic" = "email.send"). Frozen: the
 * library hands an array of them to the log callback, so this struct never changes. */
typedef struct brooq_log_field {
	const char *key;
	const char *value; /* as is: may hold spaces, quotes or any byte of a gateway message */
} brooq_log_field;

/*
 * Receives the library's log events: a level, a short stable event name (msg, e.g.
 * "lease_lost", "claim_failed") and its fields. Everything is borrowed for the call
 * only. Called from the worker's threads, several at once, sometimes while the
 * library holds its own locks: it must return promptly and must not call any
 * brooq_* function other than brooq_log_stderr and brooq_log_level_name.
 */
typedef void (*brooq_log_fn)(brooq_log_level level, const char *msg, const brooq_log_field *fields,
			     size_t n_fields, void *arg);

/* The default: one line on stderr, "level=warn msg=claim_failed err=\"...\" ...",
 * values quoted (and \", \\, control bytes escaped) when they need it. arg unused. */
BROOQ_API void brooq_log_stderr(brooq_log_level level, const char *msg, const brooq_log_field *fields,
				size_t n_fields, void *arg);

/* ---- client ------------------------------------------------------------------- */

typedef struct brooq_client brooq_client;

typedef struct brooq_client_opts {
	size_t       size;       /* sizeof(brooq_client_opts) */
	const char  *url;        /* NULL: $BROOQ_URL, else ipc:///run/brooq/gateway.sock */
	const char  *token_file; /* NULL: the file named by $BROOQ_TOKEN_FILE */
	int          timeout_ms; /* per call, on top of a claim's wait; 0: 10000 */
	brooq_log_fn log;        /* events of this client and its workers; NULL: brooq_log_stderr */
	void        *log_arg;    /* passed to log */
	/* TLS, for tls+tcp:// URLs only (added in 0.1.0 after the fields above; a NULL
	 * field takes its environment variable, which is read for tls+tcp:// URLs only;
	 * setting one of these fields with another URL is BROOQ_EINVAL): */
	const char *tls_ca_file;     /* PEM CA certificates the gateway's certificate must
				      * chain to; required. NULL: $BROOQ_TLS_CA_FILE */
	const char *tls_cert_file;   /* PEM client certificate, for a gateway that requires
				      * one. NULL: $BROOQ_TLS_CERT_FILE, else none */
	const char *tls_key_file;    /* its private key: PEM, unencrypted, in a file others
				      * cannot access (mode & 0007 == 0). NULL: $BROOQ_TLS_KEY_FILE */
	const char *tls_server_name; /* the name the gateway's certificate must carry.
				      * NULL: $BROOQ_TLS_SERVER_NAME, else the URL's host */
} brooq_client_opts;

#define BROOQ_CLIENT_OPTS_INIT                    \
	{                                         \
		.size = sizeof(brooq_client_opts) \
	}

/* Opens a client (opts may be NULL for all defaults). The token is read once from
 * its file and kept in locked memory; it never appears in argv or logs.
 * Nothing needs to listen yet: the first call connects. A call that finds no gateway
 * fails with BROOQ_ECONNECT without sending anything: at once over ipc:// (nothing
 * listens on the socket), within its timeout over tcp:// and tls+tcp:// (NNG keeps
 * dialling). Over tls+tcp:// the gateway's certificate must chain to the CA file, be
 * valid now and carry the server name (mbedtls matches it against the certificate's
 * DNS names and common name only: to dial an IP address, the certificate lists the
 * address as a DNS name too, or tls_server_name names one it lists); a handshake that
 * fails is a connection that never comes up: BROOQ_ECONNECT, and brooq_last_message()
 * counts the failed handshakes. The TLS files are read here: a missing or unusable
 * one is BROOQ_EINVAL.
 * On success *out belongs to the caller: brooq_client_close() it. */
BROOQ_API brooq_err brooq_client_open(const brooq_client_opts *opts, brooq_client **out);
/* Closes the client. No call may be running on it. NULL is a no-op. */
BROOQ_API void brooq_client_close(brooq_client *c);

/* "brooq-gateway 0.2.0" into server[0..cap). */
BROOQ_API brooq_err brooq_ping(brooq_client *c, char *server, size_t cap);

/* ---- enqueue ------------------------------------------------------------------ */

/* A job to enqueue (or chain). Set size to sizeof(brooq_job_spec) (BROOQ_JOB_SPEC_INIT);
 * in an array every element's size. */
typedef struct brooq_job_spec {
	size_t      size;         /* sizeof(brooq_job_spec) */
	const char *topic;        /* [a-z0-9][a-z0-9._-]*, at most 128 bytes */
	const char *payload;      /* JSON text; NULL means "{}" */
	size_t      payload_len;  /* 0 with a non-NULL payload: strlen(payload) */
	const char *key;          /* idempotency key; NULL or "" = none */
	uint64_t    delay_ms;     /* 0: ready now */
	int64_t     run_at_ms;    /* unix ms; 0: not set (exclusive with delay_ms) */
	uint32_t    max_attempts; /* 0: the gateway's default for the topic */
	/* 1 (runs first; the default, also for 0) .. 9 (runs last): give work that
	 * may wait a higher number. Strict: a ready job of a lower number always goes
	 * first, so a flood of them can starve the rest. */
	uint32_t priority;
} brooq_job_spec;

#define BROOQ_JOB_SPEC_INIT                    \
	{                                      \
		.size = sizeof(brooq_job_spec) \
	}

/* The caller's room for one enqueue result (BROOQ_ENQUEUE_RESULT_INIT). */
typedef struct brooq_enqueue_result {
	size_t   size; /* sizeof(brooq_enqueue_result) */
	uint64_t id;
	bool     created; /* false: the (topic, key) existed; id is that job's */
} brooq_enqueue_result;

#define BROOQ_ENQUEUE_RESULT_INIT                    \
	{                                            \
		.size = sizeof(brooq_enqueue_result) \
	}

/* Enqueues n jobs atomically (all or none); results[0..n) (each element's size set) are
 * filled aligned with jobs. n is at most the gateway's max_batch (default 1000): a larger
 * batch is refused whole with BROOQ_ETOO_LARGE. */
BROOQ_API brooq_err brooq_enqueue(brooq_client *c, const brooq_job_spec *jobs, size_t n,
				  brooq_enqueue_result *results);

/* ---- claim, heartbeat, settle -------------------------------------------------- */

/* A lease: a job's id and the token that proves the claim. Frozen (arrays of it go to
 * brooq_heartbeat; it sits inside brooq_job and brooq_settle_item): never changes. */
typedef struct brooq_lease {
	uint64_t id;
	uint8_t  token[BROOQ_LEASE_LEN];
} brooq_lease;

/* A claimed job. Library-allocated, reached through the claim's array of pointers;
 * free the array with brooq_jobs_free(). */
typedef struct brooq_job {
	brooq_lease lease;   /* id and lease token */
	char       *topic;   /* NUL-terminated */
	char       *payload; /* NUL-terminated JSON text */
	size_t      payload_len;
	uint32_t    attempts; /* including this claim */
	uint32_t    max_attempts;
	int64_t     lease_until_ms; /* unix ms */
	int64_t     created_at_ms;
	/* The topic's timeouts (gateway settings BROOQ_ATTEMPT_TIMEOUT,
	 * BROOQ_MAX_EXECUTION_TIME and their per-topic overrides), counted from this claim;
	 * 0: none (or a gateway without them). The attempt timeout is the handler's
	 * deadline; past the maximum execution time the gateway no longer extends the lease. */
	uint64_t attempt_timeout_ms;
	uint64_t max_execution_ms;
} brooq_job;

/* One settle (named _item: the function brooq_settle() takes the plain name). Set size to
 * sizeof(brooq_settle_item) (BROOQ_SETTLE_ITEM_INIT); in an array every element's size. */
typedef struct brooq_settle_item {
	size_t                size; /* sizeof(brooq_settle_item) */
	brooq_lease           lease;
	brooq_outcome         outcome;
	const char           *error;    /* NULL: none; stored truncated to 4096 bytes */
	uint64_t              delay_ms; /* BROOQ_OUTCOME_DELAY only */
	const brooq_job_spec *chain;    /* BROOQ_OUTCOME_DONE only: enqueued atomically */
	size_t                n_chain;
} brooq_settle_item;

#define BROOQ_SETTLE_ITEM_INIT                    \
	{                                         \
		.size = sizeof(brooq_settle_item) \
	}

/* The caller's room for one settle result (BROOQ_SETTLE_RESULT_INIT). */
typedef struct brooq_settle_result {
	size_t      size; /* sizeof(brooq_settle_result) */
	uint64_t    id;
	bool        applied; /* false: the lease was lost (canceled, reaped); nothing written */
	brooq_state state;   /* new state when applied */
} brooq_settle_result;

#define BROOQ_SETTLE_RESULT_INIT                    \
	{                                           \
		.size = sizeof(brooq_settle_result) \
	}

typedef struct brooq_claim_opts {
	size_t             size;   /* sizeof(brooq_claim_opts) */
	const char        *worker; /* names the holder, for humans; NULL: "host:pid" */
	const char *const *topics;
	size_t             n_topics;
	uint32_t           max_jobs; /* 1..the gateway's max batch */
	uint32_t           lease_ms; /* 0: the gateway's default for the topic */
	uint32_t           wait_ms;  /* long poll: wait this long for a job; 0: don't */
	/* Optional settle in the same round trip, applied before claiming. */
	const brooq_settle_item *settle;
	size_t                   n_settle;
	brooq_settle_result     *settled; /* n_settle results (sizes set), filled when settle != NULL */
	/* Optional, aligned with settle[]: the JSON result of each done item (NULL: none),
	 * as in brooq_settle_results(). NULL: no item has one. */
	const char *const *settle_results;
} brooq_claim_opts;

#define BROOQ_CLAIM_OPTS_INIT                    \
	{                                        \
		.size = sizeof(brooq_claim_opts) \
	}

/* Claims up to o->max_jobs jobs: (*jobs)[0..*n) point at them. On success *jobs (NULL
 * when *n == 0; one allocation with the jobs) belongs to the caller:
 * brooq_jobs_free(*jobs, *n). */
BROOQ_API brooq_err brooq_claim(brooq_client *c, const brooq_claim_opts *o, brooq_job ***jobs, size_t *n);
BROOQ_API void      brooq_jobs_free(brooq_job **jobs, size_t n);

/* Extends n leases; extended[i] false means lease i is lost (a normal answer).
 * lease_ms 0: the topic's default. */
BROOQ_API brooq_err brooq_heartbeat(brooq_client *c, const brooq_lease *leases, size_t n, uint32_t lease_ms,
				    bool *extended);

/* Settles n jobs; results[0..n) (each element's size set) aligned with items. */
BROOQ_API brooq_err brooq_settle(brooq_client *c, const brooq_settle_item *items, size_t n,
				 brooq_settle_result *results);
/* brooq_settle() with a JSON result for done items: item_results[i] (NULL: none) is
 * NUL-terminated JSON text, at most the gateway's max_payload bytes (default 1 MiB),
 * stored in the job's row and returned by brooq_job_get(). A result on an item that is
 * not done is BROOQ_EINVAL; invalid JSON is BROOQ_EINVALID_ARGUMENT and a result over
 * max_payload BROOQ_ETOO_LARGE from the gateway, and then nothing of the call is
 * written. item_results may be NULL (= brooq_settle). */
BROOQ_API brooq_err brooq_settle_results(brooq_client *c, const brooq_settle_item *items,
					 const char *const *item_results, size_t n,
					 brooq_settle_result *results);

/* ---- admin and introspection ------------------------------------------------------ */

/* Cancels a job (admin token). *state is its state afterwards; *canceled says
 * whether this call canceled it (false for a job already terminal). */
BROOQ_API brooq_err brooq_cancel(brooq_client *c, uint64_t id, brooq_state *state, bool *canceled);

/* One attempt's error, of brooq_job_info's errors. */
typedef struct brooq_attempt_error {
	uint32_t attempt; /* the attempt it ended */
	int64_t  at_ms;   /* when the gateway recorded it */
	char    *error;   /* as last_error holds it: at most 4096 bytes */
} brooq_attempt_error;

/* A job's row. Library-allocated; free with brooq_job_info_free(). */
typedef struct brooq_job_info {
	uint64_t    id;
	char       *topic;
	char       *payload;
	brooq_state state;
	uint32_t    attempts;
	uint32_t    max_attempts;
	int64_t     available_at_ms;
	char       *locked_by;       /* NULL when not leased */
	int64_t     locked_until_ms; /* 0 when not leased */
	char       *last_error;      /* NULL when none */
	char       *key;             /* NULL when none */
	int64_t     created_at_ms;
	int64_t     updated_at_ms;
	int64_t     claimed_at_ms; /* the latest claim; 0: never claimed (or an older gateway) */
	/* While processing: the running attempt's deadlines from its topic's timeouts
	 * (claimed_at + attempt timeout, + maximum execution time); 0: none. */
	int64_t  attempt_deadline_ms;
	int64_t  max_execution_deadline_ms;
	uint32_t priority; /* 1..9; 0 from a gateway without priorities */
	char    *result;   /* the handler's JSON result (settled done with one); NULL: none */
	uint64_t retry_of; /* the terminal job this one re-runs (brooq_retry); 0: none */
	/* Leases of this job that ran out without a recorded outcome (its handler killed or
	 * hung its worker); at the topic's max_lost_leases the gateway's reaper writes it
	 * dead (quarantine). 0 from an older gateway. Last, so the struct only grows. */
	uint32_t lost_leases;
	/* The errors of the job's latest attempts (at most 10), oldest first: from
	 * brooq_job_get, has_errors true (n_errors 0: none recorded); in a list's rows and
	 * from an older gateway, has_errors false and errors NULL. Last, so the struct only
	 * grows. */
	bool                  has_errors;
	size_t                n_errors;
	brooq_attempt_error **errors; /* n_errors pointers (library-allocated with the row) */
} brooq_job_info;

BROOQ_API brooq_err brooq_job_get(brooq_client *c, uint64_t id, brooq_job_info **out);
BROOQ_API void      brooq_job_info_free(brooq_job_info *j);

typedef struct brooq_topic_stats {
	char    *topic;
	uint64_t count[6]; /* indexed by brooq_state */
	uint64_t oldest_ready_age_ms;
	/* The topic's policy (false and 0 for a topic without one, or from a gateway
	 * without policies): paused, and limits (0: unlimited). */
	bool     paused;
	uint32_t max_running;
	uint32_t rate_per_s;
} brooq_topic_stats;

/* ---- per-topic policy (admin token) ---------------------------------------------- */

/* A topic's policy. Limits are 0 when unlimited. The caller's room for one
 * (BROOQ_TOPIC_POLICY_INIT) from pause, resume and topic_limits; brooq_topics returns
 * library-allocated ones (size set by the library). */
typedef struct brooq_topic_policy {
	size_t   size; /* sizeof(brooq_topic_policy) */
	char     topic[129];
	bool     paused;
	uint32_t max_running; /* at most this many of its jobs processing at once */
	uint32_t rate_per_s;  /* at most this many of its jobs started per second */
	uint64_t running;     /* its jobs processing now */
} brooq_topic_policy;

#define BROOQ_TOPIC_POLICY_INIT                    \
	{                                          \
		.size = sizeof(brooq_topic_policy) \
	}

/* Pauses a topic: no gateway starts its jobs (within one poll interval for the
 * others); enqueues still work, parked claims stay parked. Resume undoes it.
 * *out (may be NULL; its size set) gets the topic's policy afterwards. */
BROOQ_API brooq_err brooq_pause(brooq_client *c, const char *topic, brooq_topic_policy *out);
BROOQ_API brooq_err brooq_resume(brooq_client *c, const char *topic, brooq_topic_policy *out);

/* A limit argument of brooq_topic_limits() that leaves that limit as it is. */
#define BROOQ_LIMIT_KEEP UINT32_MAX

/* Sets a topic's limits, enforced at claim across all gateways: at most
 * max_running of its jobs processing at once, at most rate_per_s started in each
 * second. 0 removes a limit, BROOQ_LIMIT_KEEP keeps it (not both KEEP). Each at
 * most 1000000. */
BROOQ_API brooq_err brooq_topic_limits(brooq_client *c, const char *topic, uint32_t max_running,
				       uint32_t rate_per_s, brooq_topic_policy *out);

/* Every topic with a policy: (*out)[0..*n) point at them. *out (NULL when *n == 0)
 * belongs to the caller: brooq_topics_free(*out, *n). After a failure *out is NULL and
 * *n 0. */
BROOQ_API brooq_err brooq_topics(brooq_client *c, brooq_topic_policy ***out, size_t *n);
BROOQ_API void      brooq_topics_free(brooq_topic_policy **p, size_t n);

/* Per-topic counts: (*out)[0..*n) point at them. *out (NULL when *n == 0) belongs to the
 * caller: brooq_stats_free(*out, *n). */
BROOQ_API brooq_err brooq_stats(brooq_client *c, brooq_topic_stats ***out, size_t *n);
/* brooq_stats_aged's age when the gateway does not say (a gateway before the monitor). */
#define BROOQ_AGE_UNKNOWN UINT64_MAX
/* brooq_stats(), and how old the counts of the terminal states (done, dead, canceled)
 * are, in ms: the gateway's monitor counts them once a minute (the reply's
 * terminal_age_ms, docs/protocol.md §7.9); 0 when they were counted for this call,
 * BROOQ_AGE_UNKNOWN when the gateway does not say. terminal_age_ms may be NULL; it is
 * written on success only. */
BROOQ_API brooq_err brooq_stats_aged(brooq_client *c, brooq_topic_stats ***out, size_t *n,
				     uint64_t *terminal_age_ms);
/* What the stats reply says about its counts, into the caller's room for it
 * (BROOQ_STATS_META_INIT). */
typedef struct brooq_stats_meta {
	size_t   size;            /* sizeof(brooq_stats_meta) */
	uint64_t terminal_age_ms; /* as brooq_stats_aged's */
	/* The terminal counts (done, dead, canceled) are the monitor's estimate from a
	 * page sample (the table outgrew its counting budget), not exact counts: show them
	 * as an estimate (the reply's terminal_estimated, docs/protocol.md §7.9). */
	bool terminal_estimated;
} brooq_stats_meta;
#define BROOQ_STATS_META_INIT                    \
	{                                        \
		.size = sizeof(brooq_stats_meta) \
	}
/* brooq_stats(), and what the reply says about its counts into *meta (may be NULL;
 * written on success only). */
BROOQ_API brooq_err brooq_stats_ex(brooq_client *c, brooq_topic_stats ***out, size_t *n,
				   brooq_stats_meta *meta);
BROOQ_API void      brooq_stats_free(brooq_topic_stats **s, size_t n);

/* ---- operators: list, retry, delete (admin token) ---------------------------------- */

typedef struct brooq_list_opts {
	size_t      size;              /* sizeof(brooq_list_opts) (BROOQ_LIST_OPTS_INIT) */
	const char *topic;             /* NULL: any topic */
	bool        has_state;         /* false: any state */
	brooq_state state;             /* with has_state */
	int64_t     created_after_ms;  /* created at or after (unix ms); 0: no bound */
	int64_t     created_before_ms; /* created before (unix ms); 0: no bound */
	const char *key;               /* idempotency key; NULL: any (needs topic) */
	const char *cursor;            /* NULL: the first page; else an earlier page's next */
	uint32_t    limit;             /* jobs per page, 1..1000; 0: 50 */
} brooq_list_opts;

#define BROOQ_LIST_OPTS_INIT                    \
	{                                       \
		.size = sizeof(brooq_list_opts) \
	}

/* One page of the job list. Library-allocated; free with brooq_job_page_free(). */
typedef struct brooq_job_page {
	brooq_job_info **jobs; /* n rows, newest first (by id) */
	size_t           n;
	char            *next; /* the next page's cursor; NULL: this was the last page */
} brooq_job_page;

/* Lists jobs matching every filter of o, newest first, a page at a time: pass
 * page->next as o->cursor for the next one. Pages never shift: jobs created meanwhile
 * come before the first page, not into later ones (keyset pagination on the id). A
 * page may hold fewer than limit jobs when their payloads would make the reply too
 * big; next is then set. A cursor that is not one of next's: BROOQ_EINVALID_ARGUMENT. */
BROOQ_API brooq_err brooq_list(brooq_client *c, const brooq_list_opts *o, brooq_job_page **out);
BROOQ_API void      brooq_job_page_free(brooq_job_page *p);

/* Re-runs a dead or canceled job as a new job (same topic, payload, max_attempts and
 * priority, no idempotency key, retry_of = id; the original row is not changed: it stays as the
 * record of what happened). *new_id is the new job's id; *created is false when the
 * job had been retried already (*new_id is then that retry: retrying is idempotent).
 * Another state: BROOQ_ECONFLICT, nothing changed. */
BROOQ_API brooq_err brooq_retry(brooq_client *c, uint64_t id, uint64_t *new_id, bool *created);
/* Retries up to limit (1..1000) jobs of topic in state (BROOQ_DEAD or BROOQ_CANCELED),
 * oldest first, skipping those retried already. *n is how many were created; their ids
 * go to ids[0..min(*n, cap)) (ids may be NULL with cap 0). */
BROOQ_API brooq_err brooq_retry_bulk(brooq_client *c, const char *topic, brooq_state state, uint32_t limit,
				     uint64_t *ids, size_t cap, size_t *n);
/* Deletes a done, dead or canceled job. Another state: BROOQ_ECONFLICT, nothing
 * changed; no such job: BROOQ_ENOT_FOUND. */
BROOQ_API brooq_err brooq_delete(brooq_client *c, uint64_t id);

/* ---- periodic jobs (admin token) ------------------------------------------------------ */

/* What happens to slots that came due while no gateway ran. */
typedef enum brooq_misfire {
	BROOQ_MISFIRE_SKIP = 0, /* the latest missed slot only, and none when one is on time */
	BROOQ_MISFIRE_CATCH_UP, /* the latest catch_up_max missed slots, oldest first */
} brooq_misfire;

/* A schedule to add. Set size to sizeof(brooq_schedule) (BROOQ_SCHEDULE_INIT): fields
 * past the size the caller was built with count as zero. Strings are borrowed. */
typedef struct brooq_schedule {
	size_t      size;
	const char *name;      /* [a-z0-9][a-z0-9._-]*, at most 128 bytes */
	const char *topic;     /* the jobs' topic */
	const char *payload;   /* the jobs' JSON payload; NULL: {} */
	const char *cron;      /* "minute hour day-of-month month day-of-week"; NULL with every_ms */
	const char *tz;        /* IANA zone cron is read in ("Europe/Berlin"); NULL: UTC */
	uint64_t    every_ms;  /* fixed interval (>= 1000), slots at multiples since the epoch; 0 with cron */
	brooq_misfire misfire; /* BROOQ_MISFIRE_SKIP by default */
	uint32_t      catch_up_max; /* 1..1000; 0: 10 with catch_up, 1 with skip */
	uint32_t      max_attempts; /* the jobs' max_attempts; 0: the topic's default */
} brooq_schedule;

#define BROOQ_SCHEDULE_INIT                    \
	{                                      \
		.size = sizeof(brooq_schedule) \
	}

/* Adds schedule s, or replaces the one of the same name (a replacement with the same
 * cron, tz and every_ms keeps the slot it owes). *created (may be NULL) says whether it
 * is new, *next_slot_ms (may be NULL) when its next job is due (unix ms). Bad fields:
 * BROOQ_EINVALID_ARGUMENT (brooq_last_message() names the field), nothing changed. */
BROOQ_API brooq_err brooq_schedule_add(brooq_client *c, const brooq_schedule *s, bool *created,
				       int64_t *next_slot_ms);

/* A schedule as stored. Library-allocated, reached through brooq_schedule_list's array
 * of pointers: brooq_schedule_list_free(). */
typedef struct brooq_schedule_info {
	char         *name;
	char         *topic;
	char         *payload;
	char         *cron; /* NULL for an interval schedule */
	char         *tz;   /* NULL for an interval schedule */
	uint64_t      every_ms;
	brooq_misfire misfire;
	uint32_t      catch_up_max;
	uint32_t      max_attempts; /* 0: the topic's default */
	bool          enabled;      /* false: disabled by the gateway (its cron or zone broke) */
	int64_t       next_slot_ms; /* 0: none */
	int64_t       last_slot_ms; /* 0: never enqueued */
	char         *source;       /* "config" (BROOQ_SCHEDULES) or "admin" */
} brooq_schedule_info;

/* Every schedule, by name: (*out)[0..*n) point at them. *out (NULL when *n == 0) belongs
 * to the caller: brooq_schedule_list_free(*out, *n). */
BROOQ_API brooq_err brooq_schedule_list(brooq_client *c, brooq_schedule_info ***out, size_t *n);
BROOQ_API void      brooq_schedule_list_free(brooq_schedule_info **s, size_t n);

/* Removes schedule name; BROOQ_ENOT_FOUND when there is none. Jobs it enqueued stay. */
BROOQ_API brooq_err brooq_schedule_remove(brooq_client *c, const char *name);

/* ---- worker runtime ------------------------------------------------------------------ */

/* The job a handler is running. Borrowed: valid only inside the handler call. */
typedef struct brooq_job_ctx brooq_job_ctx;

BROOQ_API uint64_t    brooq_job_id(const brooq_job_ctx *j);
BROOQ_API const char *brooq_job_topic(const brooq_job_ctx *j);
BROOQ_API const char *brooq_job_payload(const brooq_job_ctx *j, size_t *len);
BROOQ_API uint32_t    brooq_job_attempts(const brooq_job_ctx *j);
BROOQ_API uint32_t    brooq_job_max_attempts(const brooq_job_ctx *j);
/* True once the handler should stop: the attempt's deadline passed, or the lease is
 * lost (canceled by an operator, reaped, past the maximum execution time), about to run
 * out with no heartbeat heard (the gateway unreachable: a tenth of the lease before its
 * end), or the worker is stopping past its grace. brooq_job_cancel_reason() says which.
 * After a timeout the attempt is settled as a failure whatever the handler decides; in
 * every other case whatever it decides is discarded. Never lowered once raised. */
BROOQ_API bool brooq_job_canceled(const brooq_job_ctx *j);

/* Why the cancel flag is raised. */
typedef enum brooq_cancel_reason {
	BROOQ_CANCEL_NONE = 0,      /* not raised */
	BROOQ_CANCEL_TIMEOUT,       /* the attempt timeout passed (brooq_job_deadline()): the attempt
				     * is settled as a failure, "attempt timed out after N ms"
				     * (backoff; dead only if it was the last attempt) */
	BROOQ_CANCEL_OPERATOR,      /* the job was canceled (brooq_cancel, brooqctl cancel) */
	BROOQ_CANCEL_LEASE_LOST,    /* the lease is gone: reaped, settled elsewhere, or about to run
				     * out with no heartbeat heard */
	BROOQ_CANCEL_MAX_EXECUTION, /* the attempt ran past the topic's maximum execution time: the
				     * gateway no longer extends the lease (counted as hung) */
	BROOQ_CANCEL_STOP,          /* the worker is stopping and its grace is over */
} brooq_cancel_reason;

/* The reason of the cancel flag: BROOQ_CANCEL_NONE while it is down. A timeout may be
 * followed by one of the others (which then discards the result): the reason is the
 * latest; any other is final. Safe from any thread while the handler runs. */
BROOQ_API brooq_cancel_reason brooq_job_cancel_reason(const brooq_job_ctx *j);
/* "none", "timeout", "operator", "lease_lost", "max_execution", "stop"; "unknown" else. */
BROOQ_API const char *brooq_cancel_reason_name(brooq_cancel_reason r);
/* The attempt's deadline in Unix ms: when the worker received the claim, by its own
 * clock, plus the topic's attempt timeout; the cancel flag is raised then (reason
 * BROOQ_CANCEL_TIMEOUT). 0: the topic has no attempt timeout. */
BROOQ_API int64_t brooq_job_deadline(const brooq_job_ctx *j);

/* What a handler decides. If it sets nothing, the outcome is done. The last call
 * wins. Strings and chained specs are copied. Chained specs with a bad size settle the
 * job as a fail that says so (it runs again). */
BROOQ_API void brooq_job_done(brooq_job_ctx *j);
BROOQ_API void brooq_job_done_chain(brooq_job_ctx *j, const brooq_job_spec *chain, size_t n);
/* Done, with a JSON result stored in the job's row (brooq_job_get, `brooqctl job`):
 * json[0..len) (len 0: strlen(json)) is copied. It must be valid JSON of at most the
 * gateway's max_payload bytes: the gateway refuses the settle otherwise, and the job is
 * then settled as a fail with the reason (it runs again; nothing is stored). Keeps the
 * chained jobs of an earlier brooq_job_done_chain() call. */
BROOQ_API void brooq_job_done_result(brooq_job_ctx *j, const char *json, size_t len);
BROOQ_API void brooq_job_fail(brooq_job_ctx *j, const char *error);
BROOQ_API void brooq_job_delay(brooq_job_ctx *j, uint64_t delay_ms);
BROOQ_API void brooq_job_preserve(brooq_job_ctx *j, const char *error);
BROOQ_API void brooq_job_cancel(brooq_job_ctx *j);
/* brooq_job_cancel(), with why stored in the job's last_error (NULL: as brooq_job_cancel). */
BROOQ_API void brooq_job_cancel_error(brooq_job_ctx *j, const char *error);

/* A handler runs on one of the worker's threads, one job at a time. */
typedef void (*brooq_handler)(brooq_job_ctx *job, void *arg);

typedef struct brooq_worker brooq_worker;

typedef struct brooq_worker_opts {
	size_t      size;          /* sizeof(brooq_worker_opts) */
	const char *name;          /* locked_by, 1..128 bytes; NULL: "host:pid" */
	int         threads;       /* handler threads, 0..1000; 0: 4 */
	uint32_t    lease_ms;      /* 0: the gateway's default */
	uint32_t    wait_ms;       /* long-poll length when idle; 0: 30000 */
	uint32_t    stop_grace_ms; /* how long running handlers may finish on stop; 0: 10000 */
	uint32_t    hung_grace_ms; /* after cancellation (or its deadline), when a handler counts
				    * as hung; 0: 5000. Past the maximum execution time it is
				    * counted at once. */
	/* Jobs the worker may claim beyond its threads, queued for the next free thread
	 * (their leases are heartbeated like the running ones). The queue follows the
	 * handlers' pace: about 50 ms of work, so fast handlers get big claims (fewer,
	 * cheaper round trips) and slow ones get no more than free threads. 0: up to
	 * 1000; N > 0: up to N (at most 1000); negative: none (claims never exceed free threads). */
	int prefetch_max;
} brooq_worker_opts;

#define BROOQ_WORKER_OPTS_INIT                    \
	{                                         \
		.size = sizeof(brooq_worker_opts) \
	}

/* Creates a worker on client c (borrowed; must outlive the worker); o may be NULL
 * for all defaults. Its log events go to the client's log callback. */
BROOQ_API brooq_err brooq_worker_new(brooq_client *c, const brooq_worker_opts *o, brooq_worker **out);
/* Registers the handler of a topic (before brooq_worker_run). At most 64 topics per
 * worker (a claim names at most 64); the topic syntax is checked here. */
BROOQ_API brooq_err brooq_worker_handle(brooq_worker *w, const char *topic, brooq_handler fn, void *arg);
/*
 * Runs on the calling thread until brooq_worker_stop(): claims in batches sized to
 * free threads plus the prefetch queue (prefetch_max), long-polls when idle, heartbeats held leases every
 * lease/3, settles results. A gateway that is down or restarting never ends it: every failed call is logged
 * and retried with backoff (100 ms doubling to 5 s, jittered), held leases keep being heartbeated meanwhile.
 * Returns BROOQ_OK after a stop; an error only for misuse (no handler, run twice) or when its threads cannot
 * be started.
 */
BROOQ_API brooq_err brooq_worker_run(brooq_worker *w);
/*
 * Asks a running worker to stop and returns at once; brooq_worker_run returns when
 * the stop is complete: no more claims; handlers still running get stop_grace_ms to
 * finish and their results are settled; after the grace they are abandoned (their
 * cancel flag is raised, their leases expire and the reaper returns the jobs:
 * nothing is lost, nothing is written for them). A long-poll in flight is abandoned
 * at once (the worker's claims have a connection of their own, which the stop closes:
 * the gateway drops the parked claim, or gives back the leases of one it was
 * answering), so with no handler running brooq_worker_run returns within
 * milliseconds of the stop.
 * May be called from any thread, from a handler (the handler's own job is then
 * treated like any running one), and from a signal handler (async-signal-safe:
 * atomic stores and write(2)s), also before brooq_worker_run (which then returns at
 * once).
 */
BROOQ_API void brooq_worker_stop(brooq_worker *w);
/*
 * Pull mode, for bindings and event loops: the worker claims, prefetches, heartbeats,
 * hears cancels, times attempts out and settles exactly as above, but hands each job
 * to the caller instead of running a handler on a thread of its own. The worker
 * starts no handler threads; opts.threads is how many jobs may be handed out at once.
 *
 *   brooq_worker_handle_pull(w, "email.send");     (every topic: a worker pulls all or none)
 *   thread A: brooq_worker_run(w);
 *   threads B: while (brooq_worker_next(w, -1, &job) == BROOQ_OK && job != NULL) {
 *                  ... brooq_job_done_result(job, ...) or _fail, _delay, ...;
 *                  brooq_job_finish(job);
 *              }
 *
 * At stop, jobs queued and not yet handed out are given back at once (settled as
 * `preserve` without an error: the attempt is returned and the job is available again
 * after the topic's first backoff step); jobs handed out have stop_grace_ms to be
 * finished, after which their cancel flag is raised (BROOQ_CANCEL_STOP) and their
 * results are discarded. brooq_worker_free may be called only once every job handed
 * out has been finished.
 */

/* Registers topic as pulled (before brooq_worker_run): its jobs come out of
 * brooq_worker_next. BROOQ_EINVAL for a worker that already has a brooq_worker_handle
 * handler, and for the reasons brooq_worker_handle gives. */
BROOQ_API brooq_err brooq_worker_handle_pull(brooq_worker *w, const char *topic);
/*
 * Hands the caller the next job to run, waiting up to timeout_ms for one (0: do not
 * wait; negative: no limit). Any thread, several at once.
 *   BROOQ_OK with *job set: the job is the caller's until brooq_job_finish(*job); use
 *     the brooq_job_* functions on it meanwhile, from any one thread at a time.
 *   BROOQ_OK with *job NULL: the worker has stopped (brooq_worker_run returned or is
 *     returning, or a stop came before it ran): no job will come any more.
 *   BROOQ_ETIMEDOUT: none within timeout_ms, or threads jobs are out already.
 *   BROOQ_EINVAL: w is not a pull worker.
 * A job whose deadline passed or whose lease was lost while it waited in the queue is
 * never handed out (it is failed or dropped as with handler threads).
 */
BROOQ_API brooq_err brooq_worker_next(brooq_worker *w, int timeout_ms, brooq_job_ctx **job);
/* Hands a job from brooq_worker_next back, its outcome set (nothing set: done): the
 * worker settles it (or discards it, when its lease was lost). job is invalid
 * afterwards. The counterpart of a handler's return. */
BROOQ_API void brooq_job_finish(brooq_job_ctx *job);
/*
 * A descriptor for poll/epoll/asyncio (pull mode; -1 otherwise), owned by the worker:
 * readable when brooq_worker_next may have a job, when the worker has stopped, or when
 * brooq_worker_wait_cancels's count moved. Never read it: brooq_worker_next empties it
 * when it answers BROOQ_ETIMEDOUT, so a loop that calls brooq_worker_next(w, 0, ...)
 * until BROOQ_ETIMEDOUT and then looks at the cancel count misses nothing.
 */
BROOQ_API int brooq_worker_fd(brooq_worker *w);
/*
 * How many times a cancel flag was raised (or its reason changed) on a job handed out
 * by brooq_worker_next, since the worker was made. Waits up to timeout_ms (0: not;
 * negative: no limit) for the count to differ from seen, returning at once when the
 * worker has stopped. A binding keeps the last count it saw and, when it moves,
 * reads brooq_job_cancel_reason() of the jobs it holds.
 */
BROOQ_API uint64_t brooq_worker_wait_cancels(brooq_worker *w, uint64_t seen, int timeout_ms);

/* Counters since start, into the caller's room for them (BROOQ_WORKER_STATS_INIT). */
typedef struct brooq_worker_stats {
	size_t   size; /* sizeof(brooq_worker_stats) */
	uint64_t claimed, settled, lease_lost, hung, errors;
} brooq_worker_stats;

#define BROOQ_WORKER_STATS_INIT                    \
	{                                          \
		.size = sizeof(brooq_worker_stats) \
	}

/* Fills *out (its size set; a size too small: nothing is written). */
BROOQ_API void brooq_worker_get_stats(brooq_worker *w, brooq_worker_stats *out);
BROOQ_API void brooq_worker_free(brooq_worker *w);

#ifdef __cplusplus
}
#endif
#endif
