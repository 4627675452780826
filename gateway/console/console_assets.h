// SPDX-License-Identifier: MIT
// The web console's static files (console/), embedded at build time by console_embed.cmake.
#ifndef BRQ_GATEWAY_CONSOLE_ASSETS_H
#define BRQ_GATEWAY_CONSOLE_ASSETS_H

#include <stddef.h>

typedef struct brq_console_asset {
	const char          *path; // as served: "/console/app.js"
	const char          *type; // Content-Type
	const unsigned char *data;
	size_t               len;
} brq_console_asset;

// Generated (build tree: console_assets.c). index.html is served at "/console/".
extern const brq_console_asset brq_console_assets[];
extern const size_t            brq_console_n_assets;

#endif
