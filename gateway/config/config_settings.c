// SPDX-License-Identifier: MIT
// The table of the gateway's settings (config_settings.def) as data, and how a reload
// compares the settings spread over several fields.
#include "config_settings.h"
#include "config_parse.h" // the bounds' constants (LEASE_MIN_MS, MS_PER_H, GIB, ...)

#include <stddef.h>
#include <string.h>

static bool
str_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

static bool
list_differs(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb) {
		return true;
	}
	for (size_t i = 0; i < na; i++) {
		if (strcmp(a[i], b[i]) != 0) {
			return true;
		}
	}
	return false;
}

// A TLS file: another path, or the same path with new content (a certificate renewed
// in place; tls.h: no live reload).
static bool
file_differs(const char *pa, const uint8_t *da, const char *pb, const uint8_t *db)
{
	return str_differs(pa, pb) || memcmp(da, db, BRQ_TLS_DIGEST_LEN) != 0;
}

// The settings of one TLS file each: path and content (digest).
#define FILE_DIFFERS(field)                                                                                  \
	static bool differs_##field(const brq_config *a, const brq_config *b)                                \
	{                                                                                                    \
		return file_differs(a->field##_file, a->field##_digest, b->field##_file, b->field##_digest); \
	}
FILE_DIFFERS(tls_cert)
FILE_DIFFERS(tls_key)
FILE_DIFFERS(tls_ca)
FILE_DIFFERS(http_tls_cert)
FILE_DIFFERS(http_tls_key)
#undef FILE_DIFFERS

// The lists as configured, $CREDENTIALS_DIRECTORY's token files included.
static bool
differs_worker_tokens(const brq_config *a, const brq_config *b)
{
	return list_differs(a->worker_token_files, a->n_worker_token_files, b->worker_token_files,
			    b->n_worker_token_files);
}

static bool
differs_admin_tokens(const brq_config *a, const brq_config *b)
{
	return list_differs(a->admin_token_files, a->n_admin_token_files, b->admin_token_files,
			    b->n_admin_token_files);
}

// Overrides are parsed into zeroed structs, so equal settings compare equal.
static bool
differs_topic_overrides(const brq_config *a, const brq_config *b)
{
	return a->n_topic_overrides != b->n_topic_overrides ||
		(b->n_topic_overrides > 0 &&
		 memcmp(a->topic_overrides, b->topic_overrides,
			b->n_topic_overrides * sizeof(*b->topic_overrides)) != 0);
}

static bool
differs_http_listen(const brq_config *a, const brq_config *b)
{
	return a->http_enabled != b->http_enabled || a->http_port != b->http_port ||
		str_differs(a->http_host, b->http_host);
}

#define FIELD_SIZE(m) sizeof(((brq_config *) 0)->m)

// The CMP column: where the field is, or which function compares.
#define BRQ_CMP_VALUE(m)  .cmp = BRQ_SC_VALUE, .offset = offsetof(brq_config, m), .size = FIELD_SIZE(m)
#define BRQ_CMP_STRING(m) .cmp = BRQ_SC_STRING, .offset = offsetof(brq_config, m), .size = FIELD_SIZE(m)
#define BRQ_CMP_CUSTOM(m) .cmp = BRQ_SC_CUSTOM, .differs = differs_##m

// The numeric kinds are written by brq_cfg_get_setting() through the field's offset:
// the field must have the width it assumes.
#define BRQ_WIDTH_U32(m)      _Static_assert(FIELD_SIZE(m) == sizeof(uint32_t), #m " must be a uint32_t");
#define BRQ_WIDTH_DURATION(m) _Static_assert(FIELD_SIZE(m) == sizeof(uint64_t), #m " must be a uint64_t");
#define BRQ_WIDTH_SIZE(m)     _Static_assert(FIELD_SIZE(m) == sizeof(uint64_t), #m " must be a uint64_t");
#define BRQ_WIDTH_BOOL(m)
#define BRQ_WIDTH_WORD(m)
#define BRQ_WIDTH_OCTAL(m)
#define BRQ_WIDTH_TEXT(m)
#define BRQ_WIDTH_PATH(m)
#define BRQ_WIDTH_PATHS(m)
#define BRQ_WIDTH_SPEC(m)

#define BRQ_SETTING(id, kind, cmp, member, ...) BRQ_WIDTH_##kind(member)
#include "config_settings.def"
#undef BRQ_SETTING

const brq_setting brq_settings[BRQ_SETTINGS_COUNT] = {
#define BRQ_SETTING(id, kind_, cmp_, member, min_, max_, reload_, dflt_, bounds_, example_, parser_, doc_) \
	[BRQ_SET_##id] = {.name = "BROOQ_" #id,                                                            \
			  .kind = BRQ_SK_##kind_,                                                          \
			  BRQ_CMP_##cmp_(member),                                                          \
			  .reload  = BRQ_RELOAD_##reload_,                                                 \
			  .min     = (min_),                                                               \
			  .max     = (max_),                                                               \
			  .dflt    = (dflt_),                                                              \
			  .bounds  = (bounds_),                                                            \
			  .example = (example_),                                                           \
			  .parser  = (parser_),                                                            \
			  .doc     = (doc_)},
#include "config_settings.def"
#undef BRQ_SETTING
};

const char *const brq_settings_foreign[] = {
	"BROOQ_URL", "BROOQ_TOKEN_FILE", "BROOQ_MIGRATIONS_DIR", "BROOQ_TLS_SERVER_NAME", "BROOQ_SOURCE_DIR",
	NULL,
};
const char *const brq_settings_foreign_prefixes[] = {"BROOQ_TEST_", "BROOQ_BENCH_", NULL};

const brq_setting *
brq_setting_find(const char *name, size_t len)
{
	for (size_t i = 0; i < BRQ_SETTINGS_COUNT; i++) {
		if (strlen(brq_settings[i].name) == len && memcmp(name, brq_settings[i].name, len) == 0) {
			return &brq_settings[i];
		}
	}
	return NULL;
}

bool
brq_setting_is_foreign(const char *name, size_t len)
{
	for (size_t i = 0; brq_settings_foreign_prefixes[i] != NULL; i++) {
		size_t plen = strlen(brq_settings_foreign_prefixes[i]);
		if (len > plen && strncmp(name, brq_settings_foreign_prefixes[i], plen) == 0) {
			return true;
		}
	}
	for (size_t i = 0; brq_settings_foreign[i] != NULL; i++) {
		if (strlen(brq_settings_foreign[i]) == len &&
		    memcmp(name, brq_settings_foreign[i], len) == 0) {
			return true;
		}
	}
	return false;
}

bool
brq_setting_differs(const brq_setting *s, const brq_config *a, const brq_config *b)
{
	const char *fa = (const char *) a + s->offset, *fb = (const char *) b + s->offset;
	switch (s->cmp) {
	case BRQ_SC_VALUE: return memcmp(fa, fb, s->size) != 0;
	case BRQ_SC_STRING: return str_differs(*(char *const *) fa, *(char *const *) fb);
	case BRQ_SC_CUSTOM: return s->differs(a, b);
	}
	return true; // not reached: every cmp is handled above
}
