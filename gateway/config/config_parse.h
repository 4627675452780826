// SPDX-License-Identifier: MIT
// Internals of the gateway configuration shared by config.c, config_env.c and config_parse.c.
#ifndef BRQ_GATEWAY_CONFIG_PARSE_H
#define BRQ_GATEWAY_CONFIG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "config_settings.h"

#define MS_PER_S 1000ull
#define MS_PER_M (60ull * MS_PER_S)
#define MS_PER_H (60ull * MS_PER_M)
#define MS_PER_D (24ull * MS_PER_H)

// Ranges shared by the global variables and the per-topic overrides.
#define LEASE_MIN_MS        MS_PER_S
#define LEASE_MAX_MS        MS_PER_D
#define BACKOFF_BASE_MIN_MS 1ull
#define BACKOFF_BASE_MAX_MS MS_PER_D
#define BACKOFF_MAX_MIN_MS  1ull
#define BACKOFF_MAX_MAX_MS  (7 * MS_PER_D)
#define MAX_ATTEMPTS_MIN    1
#define MAX_ATTEMPTS_MAX    1000
#define MAX_LOST_LEASES_MAX 1000
// Attempt timeout and maximum execution time: 0 (none) or TIMEOUT_MIN_MS..TIMEOUT_MAX_MS.
#define TIMEOUT_MIN_MS 100ull
#define TIMEOUT_MAX_MS (7 * MS_PER_D)

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

// One KEY=VALUE line of the env file.
struct env_entry {
	char *key;
	char *val; // may be a secret: wiped before free
};

// Where values come from: the lookup first, then the env file (last line wins).
struct source {
	brq_config_getenv_fn lookup;
	void                *lookup_arg;
	struct env_entry    *file;
	size_t               n_file;
};

// One load in progress: the sources and the problems found so far.
struct loader {
	struct source        src;
	brq_config_problems *p;
	bool                 is_oom;
	// The unit's credentials directory (config_creds.c): is_unit_layout when one is
	// read instead of $CREDENTIALS_DIRECTORY, unit_dir its path once it could be
	// opened (NULL before or when it could not); is_unit_default_absent when
	// --check-config's default was looked for and does not exist.
	bool        is_unit_layout;
	const char *unit_dir;
	bool        is_unit_default_absent;
	// A source's tokens_dir (borrowed), when the tokens come from there instead of
	// $CREDENTIALS_DIRECTORY's files; NULL otherwise.
	const char *tokens_dir;
};

// Appends elem to the array arr of n elements (lvalues: arr is realloc'd, n counts it).
// When memory runs out, L->is_oom is set and arr and n stay as they were.
#define BRQ_CFG_APPEND(L, arr, n, elem)                                    \
	do {                                                               \
		void *grown_ = realloc((arr), ((n) + 1) * sizeof(*(arr))); \
		if (grown_ == NULL) {                                      \
			(L)->is_oom = true;                                \
		} else {                                                   \
			(arr)        = grown_;                             \
			(arr)[(n)++] = (elem);                             \
		}                                                          \
	} while (0)

// Result of reading one variable.
enum got { GOT_UNSET = 0, GOT_OK = 1, GOT_BAD = -1 };

// --- config.c ---
// Reads the U32, DURATION or SIZE setting `id` with its row's name and bounds into its
// row's field (config_settings.def); the field is left alone unless GOT_OK. Problems
// go to L->p.
// Sets every numeric setting (U32, DURATION, SIZE) whose documented default is a value
// of its syntax to that value; the others (a default computed from another setting,
// "-") are left as they are. For brq_config_init_defaults.
void brq_cfg_numeric_defaults(brq_config *cfg);

enum got brq_cfg_get_setting(struct loader *L, brq_setting_id id, brq_config *cfg);

// --- config_env.c ---
// Wipes and frees a string that may hold a secret. NULL is fine.
void brq_cfg_free_secret(char *s);
bool brq_cfg_is_blank(char c);
// Reads a whole small file (at most max bytes) into a malloc'd NUL-terminated
// buffer *out of *len bytes (the caller wipes and frees it). Returns 0, BRQ_ENOMEM,
// BRQ_E2BIG when larger than max, or BRQ_EIO with errno saying why.
int brq_cfg_read_small_file(const char *path, size_t max, char **out, size_t *len);
// The same for a file the configuration names: true, or false with L->is_oom set or a
// problem added that names the file by var ("VAR: cannot read PATH: why") or, when var
// is NULL, as the env file ("env file PATH: why").
bool brq_cfg_read_file(struct loader *L, const char *var, const char *path, size_t max, char **out,
		       size_t *len);
void brq_cfg_env_entries_free(struct env_entry *e, size_t n);
// Parses the env file at path into L->src.file; problems go to L->p.
void brq_cfg_load_env_file(struct loader *L, const char *path);
// Adds a problem for each BROOQ_* name in envp (NAME=VALUE strings, NULL-terminated;
// NULL: none) that is neither the gateway's nor one of brooq's other programs'.
void brq_cfg_check_environ(struct loader *L, char *const *envp);
// The value of name (lookup first, then the file); NULL when unset or empty.
const char *brq_cfg_src_get(const struct source *src, const char *name);

// --- config.c ---
// Appends a copy of path[0, len) to the list of *n paths unless already present.
void brq_cfg_list_add(struct loader *L, char ***list, size_t *n, const char *path, size_t len);

// --- config_creds.c ---
// Chooses where credentials come from (src's unit directory, --check-config's default,
// or $CREDENTIALS_DIRECTORY) and checks the unit's required files; problems go to L->p.
// Call once the env file is read (it may set CREDENTIALS_DIRECTORY).
void brq_cfg_creds_open(struct loader *L, const brq_config_sources *src);
// The directory of the credentials with a fixed name (dsn, tls-cert, ...): the unit's
// directory in use, else $CREDENTIALS_DIRECTORY; NULL: none.
const char *brq_cfg_creds_dir(const struct loader *L);
// Adds the token credentials to cfg's lists: the unit directory's worker-tokens/ and
// admin-tokens/ files (of the unit's directory, or of a source's tokens_dir), or
// $CREDENTIALS_DIRECTORY's worker-token* / admin-token* files.
void brq_cfg_creds_scan_tokens(struct loader *L, brq_config *cfg);

// --- config_topics.c ---
// Parses BROOQ_TOPIC_OVERRIDES into cfg->topic_overrides; problems go to L->p.
void brq_cfg_get_topic_overrides(struct loader *L, brq_config *cfg);
// Adds a problem for each topic whose effective backoff_max < backoff_base.
void brq_cfg_check_topic_backoff(struct loader *L, const brq_config *cfg);
// Adds a problem for each topic whose effective attempt_timeout > max_execution_time.
void brq_cfg_check_topic_timeouts(struct loader *L, const brq_config *cfg);
// The shortest lease: the global one or a topic's.
uint64_t brq_cfg_min_lease_ms(const brq_config *cfg);

// --- config_schedule.c ---
// Reads BROOQ_SCHEDULE_TICK and BROOQ_SCHEDULES (after BROOQ_MAX_PAYLOAD) into cfg.
void brq_cfg_get_schedules(struct loader *L, brq_config *cfg);

// --- config_tls.c ---
// Reads the BROOQ_TLS_* settings (after BROOQ_LISTEN) and, when they fit together,
// checks their files (tls.h brq_tls_check); problems go to L->p.
void brq_cfg_get_tls(struct loader *L, brq_config *cfg);

// --- config_console.c ---
// Reads BROOQ_HTTP_TLS_* and BROOQ_CONSOLE* (after BROOQ_HTTP_LISTEN) and checks that they
// fit together: a console beyond loopback only when asked for and over HTTPS.
void brq_cfg_get_console(struct loader *L, brq_config *cfg);

#endif
