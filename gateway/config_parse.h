// SPDX-License-Identifier: MIT
// Internals of the gateway configuration shared by config.c, config_env.c and config_parse.c.
#ifndef BRQ_GATEWAY_CONFIG_PARSE_H
#define BRQ_GATEWAY_CONFIG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define MS_PER_S 1000ull
#define MS_PER_M (60ull * MS_PER_S)
#define MS_PER_H (60ull * MS_PER_M)
#define MS_PER_D (24ull * MS_PER_H)

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
	struct source               src;
	struct brq_config_problems *p;
	bool                        is_oom;
};

// Result of reading one variable.
enum got { GOT_UNSET = 0, GOT_OK = 1, GOT_BAD = -1 };

// --- config_env.c ---
// Wipes and frees a string that may hold a secret. NULL is fine.
void brq_cfg_free_secret(char *s);
bool brq_cfg_is_blank(char c);
// Reads a whole small file (at most max bytes) into a malloc'd NUL-terminated
// buffer *out of *len bytes. Returns 0 or a negative errno.
int  brq_cfg_read_small_file(const char *path, size_t max, char **out, size_t *len);
void brq_cfg_env_entries_free(struct env_entry *e, size_t n);
// Parses the env file at path into L->src.file; problems go to L->p.
void brq_cfg_load_env_file(struct loader *L, const char *path);
// The value of name (lookup first, then the file); NULL when unset or empty.
const char *brq_cfg_src_get(const struct source *src, const char *name);

#endif
