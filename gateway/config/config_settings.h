// SPDX-License-Identifier: MIT
// The table of the gateway's settings (config_settings.def): every BROOQ_* variable once,
// with its syntax, bounds, default, documentation and what a SIGHUP does with it.
//
// Read by: the loader (config_env.c: which BROOQ_* names are known; config.c
// brq_cfg_get_setting(): the numeric settings' names, bounds and fields), reload.c
// (applied or needs a restart, and whether a setting changed), and
// tests/settings_test.c (every row against reload, the sources, the env example and
// the man page).
#ifndef BRQ_GATEWAY_CONFIG_SETTINGS_H
#define BRQ_GATEWAY_CONFIG_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct brq_config brq_config; // config.h, which includes this header

// One per row, in table order: BRQ_SET_POOL_SIZE names BROOQ_POOL_SIZE.
typedef enum brq_setting_id {
#define BRQ_SETTING(id, ...) BRQ_SET_##id,
#include "config_settings.def"
#undef BRQ_SETTING
	BRQ_SETTINGS_COUNT
} brq_setting_id;

// The syntax of a value (the .def file's KIND column).
typedef enum brq_setting_kind {
	BRQ_SK_U32,      // decimal, MIN..MAX
	BRQ_SK_DURATION, // brq_units.h duration, milliseconds MIN..MAX
	BRQ_SK_SIZE,     // brq_units.h size, bytes MIN..MAX
	BRQ_SK_BOOL,
	BRQ_SK_WORD, // one of a few words
	BRQ_SK_OCTAL,
	BRQ_SK_TEXT,
	BRQ_SK_PATH,
	BRQ_SK_PATHS, // comma-separated paths
	BRQ_SK_SPEC,  // a syntax of its own, described in config.h
} brq_setting_kind;

// How a reload tells that a setting changed (the CMP column).
typedef enum brq_setting_cmp {
	BRQ_SC_VALUE,  // the bytes of one field
	BRQ_SC_STRING, // one NUL-terminated string field (NULL = unset)
	BRQ_SC_CUSTOM, // a function (config_settings.c)
} brq_setting_cmp;

// What a SIGHUP does with a changed setting (the RELOAD column).
typedef enum brq_setting_reload {
	BRQ_RELOAD_APPLIED, // put in force by brq_reload_run()
	BRQ_RELOAD_RESTART, // named in reload_needs_restart; the running value stays
} brq_setting_reload;

typedef struct brq_setting brq_setting;

// One row. All strings are static.
struct brq_setting {
	const char        *name; // "BROOQ_..."
	brq_setting_kind   kind;
	brq_setting_cmp    cmp;
	brq_setting_reload reload;
	size_t             offset; // of the field in brq_config (VALUE, STRING)
	size_t             size;   // of that field (VALUE)
	// CUSTOM: whether the setting differs between a and b.
	bool (*differs)(const brq_config *a, const brq_config *b);
	uint64_t    min, max; // U32, DURATION, SIZE
	const char *dflt;     // as documented; "-" = none
	const char *bounds;   // as documented
	const char *example;  // a valid value other than the default
	const char *parser;   // NULL: brq_cfg_get_setting(); else "file function"
	const char *doc;      // one line
};

extern const brq_setting brq_settings[BRQ_SETTINGS_COUNT];

// The row named name[0, len) (not NUL-terminated), or NULL when there is none.
const brq_setting *brq_setting_find(const char *name, size_t len);

// True when the setting of row s differs between a and b (both loaded configurations).
bool brq_setting_differs(const brq_setting *s, const brq_config *a, const brq_config *b);

// BROOQ_* names that are not the gateway's but brooq's other programs' or its test
// harness's (NULL-terminated lists): a shell running them may have them set, so the
// gateway does not call them unknown. A prefix matches longer names only.
extern const char *const brq_settings_foreign[];
extern const char *const brq_settings_foreign_prefixes[];

// True when name[0, len) is in brq_settings_foreign or has one of the prefixes.
bool brq_setting_is_foreign(const char *name, size_t len);

#endif // BRQ_GATEWAY_CONFIG_SETTINGS_H
