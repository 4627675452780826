// SPDX-License-Identifier: MIT
// Gateway configuration: read from the environment and an optional env file, validated
// all at once.
//
// Variables: config_settings.def declares every one once (its syntax, default, bounds,
// what a SIGHUP does with it, one line of doc); deploy/brooq-gateway.env.example and
// docs/man/brooq-gateway.8.scd describe the same rows for operators. An EMPTY value
// counts as unset everywhere; the process environment overrides the env file.
//
// Also read: CREDENTIALS_DIRECTORY (set by systemd LoadCredential=).
//
// Credentials (config_creds.c): the unit loads the secrets of a packaged install from
// BRQ_UNIT_CREDENTIALS_DIR, laid out as brq_unit_credentials says (dsn, worker-tokens/NAME,
// admin-tokens/NAME; tls-cert, tls-key, tls-ca, http-tls-cert, http-tls-key when their
// commented-out lines are enabled), and systemd copies them into $CREDENTIALS_DIRECTORY
// at start as dsn, worker-token_NAME, admin-token_NAME, ... Where this file says
// $CREDENTIALS_DIRECTORY, a source's unit_credentials_dir (--credentials-dir) is read
// instead, as the unit lays it out, and so is BRQ_UNIT_CREDENTIALS_DIR under
// --check-config (is_unit_default) when CREDENTIALS_DIRECTORY is unset and that
// directory exists: a check then reads what systemd will. Reading such a directory also
// checks what would stop systemd at its CREDENTIALS step (dsn, worker-tokens/ or
// admin-tokens/ missing) and what it would skip (a token that is a symbolic link), a
// problem each; only its top-level token files count.
// A source's tokens_dir (a reload under the unit, reload_creds.h) replaces only
// $CREDENTIALS_DIRECTORY's token files: its worker-tokens/ and admin-tokens/ are read
// as the unit's directory's are.
//
// DSN: exactly one source is used, in this order: BROOQ_DSN, BROOQ_DSN_FILE, the file
// $CREDENTIALS_DIRECTORY/dsn if it exists. Setting both BROOQ_DSN and BROOQ_DSN_FILE is
// an error. A DSN file is trimmed of surrounding whitespace. The DSN is checked with
// PQconninfoParse() and is NEVER printed: problems say "BROOQ_DSN: ..." without it.
//
// TLS (a tls+tcp:// BROOQ_LISTEN; config_tls.c): each file comes from its variable, else
// the file $CREDENTIALS_DIRECTORY/tls-cert, tls-key, tls-ca if it exists. A tls+tcp://
// listener needs the certificate and the key; a TLS file or BROOQ_TLS_CLIENT_AUTH=required
// with another listener is a problem (a listener the operator believes encrypted must not
// serve plain text; "none", the default, is fine anywhere), and so
// is a CA with BROOQ_TLS_CLIENT_AUTH=none (client certificates would not be checked).
// "optional" is refused: mbedtls then completes the handshake with a certificate that
// fails verification, so it would authenticate nothing. The files are read and checked
// at load (gateway/tls.c: PEM parses, the key matches the certificate, the key file is
// no more open than a token file: mode & 0007 refused); the key never appears in a
// problem or a log line.
//
// Tokens: the paths in BROOQ_WORKER_TOKEN_FILES / BROOQ_ADMIN_TOKEN_FILES (several per
// role, for rotation; blanks around commas are ignored; an empty element is an error),
// plus every regular file in $CREDENTIALS_DIRECTORY whose name starts with
// "worker-token" / "admin-token" (in name order). At least one token file overall is
// required. The files themselves are read by auth.c, where a listed file that does not
// exist revokes its tokens (at start as on reload) as long as some token remains.
//
// Durations REQUIRE a unit: <digits><unit>, unit one of ms, s, m, h, d (one component:
// "90s", not "1m30s"). The bare value "0" is accepted and means zero. No sign, spaces
// or fractions. "120" is rejected: "BROOQ_LEASE: duration needs a unit (e.g. 120s)".
//
// Sizes REQUIRE a unit as well: <digits><unit>, unit one of B, KiB, MiB, GiB (exact
// case; 1 KiB = 1024 B). The bare value "0" is accepted (and then range-checked).
//
// Integers: decimal digits only, no sign, no spaces.
//
// HTTP: BROOQ_HTTP_LISTEN=off disables the HTTP endpoint (an empty value is unset, so
// it means the default). A host other than localhost, 127.0.0.0/8 or ::1 needs
// BROOQ_HTTP_ALLOW_NONLOOPBACK=true.
//
// Topic overrides: "topic:key=value,key=value;topic:key=value". Keys: max_attempts,
// backoff_base, backoff_max, lease, attempt_timeout, max_execution_time, max_lost_leases,
// concurrency, rate, discard_done (each optional,
// same syntax and ranges as the global variable; "0" turns a timeout off for the topic). Topics follow
// [a-z0-9][a-z0-9._-]*, at most 128 bytes. Blanks around the separators are ignored. Rejected: empty entry,
// missing ':', bad topic, topic listed twice, no keys, unknown key, key listed twice, missing '=', bad value,
// effective backoff_max < backoff_base, effective attempt_timeout > max_execution_time (both set). At most
// BRQ_CONFIG_MAX_TOPIC_OVERRIDES entries.
//
// Timeouts (docs/operations.md "Timeouts"): the attempt timeout is how long one attempt
// may run, from its claim: the claim tells the worker (which raises the handler's cancel
// flag then and settles the attempt as a failure); the maximum execution time bounds an
// attempt's run across heartbeats: a heartbeat later than claimed_at + it is refused
// (answered lost), so the lease runs out and the reaper returns the job. 0 = none.
//
// Schedules: "name|key=value|key=value;name|...", entries separated by ';' or a newline,
// fields by '|', blanks around them ignored. Keys: topic (required), cron (5 fields)
// with optional tz, or every (a duration, 1s..366d); misfire (skip|catch_up),
// catch_up_max, max_attempts, payload (JSON without '|' or ';'). Checked as
// schedule_add checks them (schedule_check.h), plus tz against /usr/share/zoneinfo. Upserted
// into table schedule by the scheduler when the database first answers.
//
// Env file syntax: that of systemd's EnvironmentFile= (systemd.exec(5)), so that one
// file serves both `EnvironmentFile=` (read by PID 1) and `--env-file` (read here):
//   * KEY=VALUE assignments; blanks around KEY and before VALUE are ignored.
//   * Lines whose first non-blank character is '#' or ';' are comments.
//   * Unquoted VALUE: trailing blanks are dropped; a backslash keeps the next
//     character ("\\" is one backslash); a backslash at the end of a line joins the
//     next line (the newline is dropped); '#' and quotes inside are literal.
//   * 'single quotes': everything up to the next ' verbatim, newlines included.
//   * "double quotes": \" \\ \` \$ unescape to the character, backslash-newline
//     joins lines, any other backslash stays as it is; newlines included.
//   * Pieces concatenate: after a closing quote, blanks are skipped and what follows
//     continues the value (KEY="a b"c is "a bc").
//   * CR is a line end too (CRLF files work).
// Stricter than systemd where systemd silently drops a line (a typo must not pass
// unnoticed): a line without '=', an invalid name (including "export KEY=..."), a
// value that is not UTF-8, an unterminated quote, and a comment ending in a backslash
// (systemd before 254 continued such a comment onto the next line, later versions do
// not) are problems. Unknown BROOQ_* keys are problems; other keys are ignored. A
// problem names the line (where its assignment starts), never its content (it may
// hold the DSN).
//
// The environment is checked the same way: a BROOQ_* variable that is not in the
// settings table is a problem, except the variables of brooq's other programs that a
// shell running them may have set (BROOQ_URL, BROOQ_TOKEN_FILE, BROOQ_MIGRATIONS_DIR,
// BROOQ_TLS_SERVER_NAME) and of its test and benchmark harness (BROOQ_TEST_*,
// BROOQ_BENCH_*, BROOQ_SOURCE_DIR; config_settings.c lists them). The client library reads BROOQ_TLS_CA_FILE,
// BROOQ_TLS_CERT_FILE and BROOQ_TLS_KEY_FILE too, with the same meaning seen from its
// side (the CA it trusts for the peer, its own certificate and key).
#ifndef BRQ_GATEWAY_CONFIG_H
#define BRQ_GATEWAY_CONFIG_H

#include "brq_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log.h"

#define BRQ_CONFIG_TOPIC_MAX           128
#define BRQ_CONFIG_MAX_TOPIC_OVERRIDES 1024

typedef struct brq_topic_override brq_topic_override;

// Per-topic settings; a field applies only when its has_ flag is set, otherwise the
// global value is inherited.
struct brq_topic_override {
	char     topic[BRQ_CONFIG_TOPIC_MAX + 1]; // NUL-terminated, validated topic name
	bool     has_max_attempts;
	bool     has_backoff_base;
	bool     has_backoff_max;
	bool     has_lease;
	bool     has_attempt_timeout;
	bool     has_max_execution;
	uint32_t max_attempts;       // 1..1000
	uint64_t backoff_base_ms;    // 1ms..24h
	uint64_t backoff_max_ms;     // >= effective backoff_base_ms
	uint64_t lease_ms;           // 1s..24h
	uint64_t attempt_timeout_ms; // 0 (none) or 100ms..7d
	uint64_t max_execution_ms;   // 0 (none) or 100ms..7d
	// Per-topic limits (docs/operations.md §12): written into topic_policy when the
	// gateway starts; 0 = unlimited.
	bool     has_concurrency;
	bool     has_rate;
	uint32_t concurrency; // 0..1000000: at most this many processing at once
	uint32_t rate;        // 0..1000000: at most this many started per second
	// Opt-in, and named for what it gives up (SPEC invariant 17): a job of this topic
	// settled `done` is deleted by the settle's statement, so its outcome is not kept
	// (invariant 4) and its idempotency key is free again (docs/operations.md §12).
	bool has_discard_done;
	bool discard_done;
	// SPEC invariant 18 for this topic: 0 (never quarantined) or 1..1000.
	bool     has_max_lost_leases;
	uint32_t max_lost_leases;
};

// Client certificates on a tls+tcp:// listener.
typedef enum brq_tls_client_auth {
	BRQ_TLS_CLIENT_AUTH_NONE = 0, // not asked for; the bearer token authenticates
	BRQ_TLS_CLIENT_AUTH_REQUIRED, // a certificate that chains to tls_ca_file, or no handshake
} brq_tls_client_auth;

// BLAKE2b-256 of a TLS file's content, to tell a reload that a file changed.
#define BRQ_TLS_DIGEST_LEN 32

typedef struct brq_config brq_config;

// A validated configuration. Every pointer is owned by the struct and released by
// brq_config_fini(). Strings are NUL-terminated.
struct brq_config {
	char    *dsn;       // secret: never log; wiped by brq_config_fini()
	char    *dsn_file;  // BROOQ_DSN_FILE as set (NULL: unset), so a reload can name it
	char    *listen;    // NNG URL: ipc://..., tcp://..., tls+tcp://...
	uint32_t ipc_mode;  // permission bits for the ipc socket, <= 0777
	uint32_t pool_size; // libpq connections, 1..256

	// TLS of a tls+tcp:// listener; all NULL / zero for other listeners.
	char               *tls_cert_file;   // PEM certificate (chain)
	char               *tls_key_file;    // PEM private key: mode & 0007 == 0
	char               *tls_ca_file;     // PEM CA certificates; set iff client auth required
	brq_tls_client_auth tls_client_auth; // default none
	// Digests of the three files' contents as loaded (zero when unset), so that a reload
	// can say that a certificate changed on disk and needs a restart.
	uint8_t tls_cert_digest[BRQ_TLS_DIGEST_LEN];
	uint8_t tls_key_digest[BRQ_TLS_DIGEST_LEN];
	uint8_t tls_ca_digest[BRQ_TLS_DIGEST_LEN];

	uint64_t lease_ms;        // default lease, 1s..24h
	uint64_t backoff_base_ms; // 1ms..24h
	uint64_t backoff_max_ms;  // >= backoff_base_ms
	uint32_t max_attempts;    // 1..1000
	// Leases of one job that may run out without a recorded outcome; the reaper writes
	// `dead` when it takes back the last (SPEC invariant 18). 0 = never, else 1..1000.
	uint32_t max_lost_leases;
	// Per attempt, from its claim; 0 = none. attempt <= max_execution when both set.
	uint64_t attempt_timeout_ms; // the handler's deadline, told to the worker
	uint64_t max_execution_ms;   // heartbeats are refused past it

	char **worker_token_files; // n_worker_token_files paths, no duplicates
	size_t n_worker_token_files;
	char **admin_token_files;   // n_admin_token_files paths, no duplicates
	size_t n_admin_token_files; // n_worker + n_admin >= 1

	uint32_t max_batch;         // jobs per enqueue/claim/settle batch, 1..10000
	uint64_t max_payload_bytes; // one job's payload, <= max_request_bytes
	uint64_t max_request_bytes; // one request message
	// Bytes of request messages held at once, from the transport reading their length
	// to the end of their handling (NNG's rx budget, deploy/nng); >= the transport
	// ceiling of one max_request message. Requests over 64 KiB get at most
	// max_inflight_bytes - brq_config_rx_reserve().
	uint64_t max_inflight_bytes;
	// Connection timeouts (NNG's, deploy/nng/rx-timeouts.patch): the handshake from
	// accept, 100ms..10m; a request from its first byte, 0 (none) or 100ms..1h; a
	// connection waiting for its next request with nothing sent or received, 0
	// (none) or >= max_wait_ms + 10s (a long-poll is answered within max_wait).
	uint64_t handshake_timeout_ms;
	uint64_t recv_timeout_ms;
	uint64_t idle_timeout_ms;
	uint64_t max_wait_ms; // longest long-poll accepted, 0..1h
	uint32_t max_waiters; // concurrent long-polls, 0..100000 (0: no long-poll)
	uint32_t max_watches; // concurrent watches (op watch), 0..100000 (0: none)
	// Each peer's share of the gateway (rpc/quota.h, docs/security.md): requests of one
	// connection at once (after a valid token, and while it has shown none), of one
	// token (0: all the non-long-poll work items but an eighth), and how long
	// a reply may wait behind its connection's blocked send before the connection closes.
	uint32_t conn_max_requests;
	uint32_t conn_max_requests_anon;
	uint32_t token_max_requests;
	uint64_t send_timeout_ms;
	uint64_t poll_interval_ms; // monitor round: depth metrics, health, wakes for ready topics

	uint64_t reaper_interval_ms;    // period of the lease reaper
	uint64_t retention_ttl_ms;      // 0 = retention disabled (never "delete all")
	uint64_t retention_interval_ms; // period of the retention tick
	uint32_t retention_batch;       // rows deleted per transaction
	uint32_t retention_max_batches; // batches per tick before a warning

	bool     http_enabled;           // false when BROOQ_HTTP_LISTEN=off
	char    *http_host;              // NULL when disabled; IPv6 without brackets
	uint16_t http_port;              // 1..65535 when enabled
	bool     http_allow_nonloopback; // as configured
	uint64_t selfprobe_interval_ms;  // /healthz's ping of our own listener; 0 = off
	// The HTTP endpoint's connection limits (http.h; docs/security.md).
	uint64_t http_header_timeout_ms; // accept -> request headers complete
	uint64_t http_idle_timeout_ms;   // a reply -> the next request's headers complete
	uint32_t http_max_connections;   // open connections at once

	brq_log_level log_level;
	uint64_t      shutdown_grace_ms; // 0..1h

	brq_topic_override *topic_overrides; // n_topic_overrides entries
	size_t              n_topic_overrides;

	// Periodic jobs (config_schedule.c; docs/operations.md "Periodic jobs").
	uint64_t             schedule_tick_ms; // scheduler period; 0: no scheduler on this gateway
	struct brq_schedule *schedules;        // BROOQ_SCHEDULES, checked (schedule_check.h brq_sched_check)
	size_t               n_schedules;
	char                *schedules_src; // owned copy of BROOQ_SCHEDULES the strings point into

	// The web console and HTTPS (config_console.c; docs/console.md).
	char    *http_tls_cert_file; // HTTPS for the whole HTTP endpoint; NULL: plain HTTP
	char    *http_tls_key_file;  // set iff http_tls_cert_file is
	uint8_t  http_tls_cert_digest[BRQ_TLS_DIGEST_LEN];
	uint8_t  http_tls_key_digest[BRQ_TLS_DIGEST_LEN];
	bool     console_enabled;        // serve /console/ on the HTTP endpoint
	uint64_t console_session_ttl_ms; // a console session's lifetime from sign-in
};

// Where the unit (deploy/systemd/brooq-gateway.service) loads credentials from.
#define BRQ_UNIT_CREDENTIALS_DIR "/etc/brooq/credentials"

typedef struct brq_unit_credential brq_unit_credential;

// One LoadCredential= line of the unit: source under BRQ_UNIT_CREDENTIALS_DIR.
struct brq_unit_credential {
	const char *id;     // the credential's name (ID of LoadCredential=ID:PATH)
	const char *source; // its file or directory, relative to the credentials directory
	bool        is_dir; // the directory form: each file NAME is the credential ID_NAME
	const char *doc;    // what it holds, for --help
};

// The unit's credentials, in the order of its lines (tests compare them with the unit).
extern const brq_unit_credential brq_unit_credentials[];
extern const size_t              brq_unit_credentials_count;

typedef struct brq_config_problems brq_config_problems;

// Problems found while loading: one line per problem, each naming the variable (or the
// file) and why, never a secret value.
struct brq_config_problems {
	char **lines; // count NUL-terminated lines, owned
	size_t count;
	size_t cap;
	bool   is_oom; // a line could not be stored (memory); count may be short
};

// getenv-like lookup seam: returns the value of `name` or NULL. The result must stay
// valid until the next call. Tests pass a table lookup instead of mutating environ.
typedef const char *(*brq_config_getenv_fn)(const char *name, void *arg);

void brq_config_problems_init(brq_config_problems *p);

// Frees all lines. Accepts a zeroed or already released struct.
void brq_config_problems_fini(brq_config_problems *p);

// Appends one formatted line (copied). On allocation failure sets is_oom instead.
void brq_config_problem_add(brq_config_problems *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

typedef struct brq_config_sources brq_config_sources;

// Where brq_config_load_from() reads from, and a later stage's check.
struct brq_config_sources {
	const char          *env_file;   // NULL: none
	brq_config_getenv_fn lookup;     // NULL: getenv()
	void                *lookup_arg; // passed to lookup
	// NAME=VALUE strings whose BROOQ_* names are checked for unknown variables; NULL
	// means the process environment when lookup is NULL, and no check otherwise.
	char *const *envp;
	// Called with the configuration as far as it could be read (the token file lists
	// are complete whenever their own variables parsed), before the verdict, so that
	// its problems (the token files' own) are reported in the same round as the
	// others. Adds its problems and returns 0, BRQ_EINVAL or BRQ_ENOMEM. May be NULL.
	int (*check)(const brq_config *cfg, void *arg, brq_config_problems *problems);
	void *check_arg;
	// A directory laid out as the unit's credentials (--credentials-dir), read instead of
	// $CREDENTIALS_DIRECTORY; NULL: none.
	const char *unit_credentials_dir;
	// --check-config: without unit_credentials_dir and CREDENTIALS_DIRECTORY, read
	// BRQ_UNIT_CREDENTIALS_DIR as the unit lays it out, if it exists.
	bool is_unit_default;
	// A copy of the unit's token directories (worker-tokens/NAME, admin-tokens/NAME) whose
	// files are the tokens instead of $CREDENTIALS_DIRECTORY's worker-token* /
	// admin-token* files; everything else still comes from $CREDENTIALS_DIRECTORY. A
	// reload under the unit, after `--reload-credentials` (reload_creds.h). NULL: none;
	// ignored with unit_credentials_dir.
	const char *tokens_dir;
};

// Fills *cfg with defaults (no DSN, no tokens). Caller owns cfg's storage; the
// defaults hold heap strings, so brq_config_fini() must follow.
BRQ_MUSTCHECK int brq_config_init_defaults(brq_config *cfg);

// Loads and validates the configuration.
//   src:      where from (a missing env file is a problem), and the optional check.
//   cfg:      overwritten (any previous content is NOT freed).
//   problems: initialised by this call (any previous content is NOT freed); the caller
//             must call brq_config_problems_fini() whatever the result.
// Returns 0 when there are no problems: *cfg then owns its contents (release with
// brq_config_fini()). Returns BRQ_EINVAL when there are problems (listed in *problems,
// all of them, not only the first) or BRQ_ENOMEM; *cfg is then zeroed and holds nothing.
BRQ_MUSTCHECK int brq_config_load_from(brq_config *cfg, const brq_config_sources *src,
				       brq_config_problems *problems);

// brq_config_load_from() with an env file and a lookup, no check.
BRQ_MUSTCHECK int brq_config_load(brq_config *cfg, const char *env_file, brq_config_getenv_fn lookup,
				  void *lookup_arg, brq_config_problems *problems);

// Releases everything *cfg owns (wiping the DSN first) and zeroes it. Accepts a zeroed
// or already released struct.
void brq_config_fini(brq_config *cfg);

// Effective settings for `topic` (NULL or unknown topic: the globals). Outputs may be
// NULL. Topic lookup is a linear scan (overrides are few).
void brq_config_topic_settings(const brq_config *cfg, const char *topic, uint32_t *max_attempts,
			       uint64_t *backoff_base_ms, uint64_t *backoff_max_ms, uint64_t *lease_ms);

// Effective timeouts of `topic` (NULL or unknown topic: the globals); 0 = none.
// Outputs may be NULL.
void brq_config_topic_timeouts(const brq_config *cfg, const char *topic, uint64_t *attempt_timeout_ms,
			       uint64_t *max_execution_ms);

// True when some topic discards its done jobs (BROOQ_TOPIC_OVERRIDES discard_done=true):
// the settle statement then deletes those rows (store_sql.c).
bool brq_config_discards_done(const brq_config *cfg);

// Parses a boolean (true/false, 1/0, yes/no), exposed for tests. Returns 0 and writes
// *out, or BRQ_EINVAL and writes a short reason (static string, no value quoted) to *why.
// Durations, sizes and integers use common/brq_units.h, the syntax brooqctl shares.
BRQ_MUSTCHECK int brq_config_parse_bool(const char *s, bool *out, const char **why);

// The transport's hard ceiling for one request message body: above max_request so
// that requests in between get a `too_large` answer, not a dropped connection
// (NNG-NOTES §2.3.7). Counted on the body, as docs/protocol.md §1 states it: the socket's
// NNG_OPT_RECVMAXSZ is this plus BRQ_SP_HEADER_BYTES (server.c).
uint64_t brq_config_recv_ceiling(const brq_config *cfg);

// The part of the rx budget (max_inflight_bytes) that requests over 64 KiB may not
// take, kept for the small ones (claims, settles, heartbeats) while big ones, flooding
// or stalled, hold the rest: a quarter of it, less when that would leave no room for
// one request of the transport ceiling.
uint64_t brq_config_rx_reserve(const brq_config *cfg);
// The SP header a req0 peer puts before each request body (its 4-byte request id), which
// NNG_OPT_RECVMAXSZ counts with the body. A request that crossed an SP device carries 4
// more bytes per hop: the ceiling is exact for a direct connection, which is how the
// gateway is reached.
#define BRQ_SP_HEADER_BYTES 4

// True if `host` is localhost, in 127.0.0.0/8, ::1 or an IPv4-mapped 127.x address.
bool brq_config_host_is_loopback(const char *host);

// The table of settings (name, syntax, bounds, default, SIGHUP behaviour, doc), which
// reload and the tests read: part of what config/ offers the rest of the gateway.
#include "config_settings.h"

#endif // BRQ_GATEWAY_CONFIG_H
