#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# NNG is linked statically (deploy/nng: Debian's 1.5.2 with the fix for NNG issue
# #1518), so no program or library of ours needs libnng.so, libbrooq-client.so does not
# export NNG's symbols, and the installed static library is usable from its pkg-config
# file and from its CMake package (NNG's objects inside, mbedtls named as a dependency).
#   static_nng_test.sh BUILD_DIR C_COMPILER
set -euo pipefail
build=$1 cc=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/brooq-static-nng.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

no_libnng() { # no_libnng FILE: FILE's dynamic section names no libnng
  [ -f "$1" ] || fail "$1 missing"
  if readelf -d "$1" | grep -E 'NEEDED.*libnng' >&2; then fail "$1 needs libnng.so"; fi
  echo "ok: $(basename "$1") needs no libnng.so"
}
for f in "$build/bin/brooq-gateway" "$build/bin/brooqctl" "$build/bin/example-worker" \
  "$build/client/libbrooq-client.so"; do
  no_libnng "$f"
done
if nm -D --defined-only "$build/client/libbrooq-client.so" | grep -w -E 'nng_[a-z0-9_]+' | head -3 >&2; then
  fail "libbrooq-client.so exports NNG symbols"
fi
echo "ok: libbrooq-client.so exports no nng_* symbol"
# The static library is one relocatable object with NNG's and proto/'s objects inside and
# only brooq_* global (client/lib/static_one.cmake): an application's own NNG cannot clash.
lib="$build/client/libbrooq-client.a"
nm --defined-only "$lib" >"$tmp/nm.txt"
grep -q ' [tT] nng_close$' "$tmp/nm.txt" || fail "libbrooq-client.a does not carry NNG's objects"
others=$(nm -g --defined-only "$lib" | awk 'NF == 3 {print $3}' | grep -v '^brooq_' || true)
[ -z "$others" ] || fail "libbrooq-client.a exports more than brooq_*: $(echo "$others" | head -5 | tr '\n' ' ')"
echo "ok: libbrooq-client.a exports brooq_* only ($(nm -g --defined-only "$lib" | awk 'NF == 3' | wc -l) symbols)"

# Install, then build a consumer of the static library both ways and run it.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cat >"$tmp/app.c" <<'EOF'
#include <brooq/brooq.h>
#include <stdio.h>
int
main(void)
{
	brooq_client *c = NULL;
	/* No BROOQ_URL/BROOQ_TOKEN_FILE here: a clean error, not a crash. */
	brooq_err rc = brooq_client_open(NULL, &c);
	printf("open: %s\n", brooq_strerror(rc));
	brooq_client_close(c);
	return 0;
}
EOF
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
libs=$(pkg-config --static --libs brooq-client)
"$cc" -o "$tmp/app_pc" "$tmp/app.c" $(pkg-config --cflags brooq-client) \
  "$tmp/prefix/lib/libbrooq-client.a" ${libs//-lbrooq-client/} || fail "static link from brooq-client.pc"
no_libnng "$tmp/app_pc"
readelf -d "$tmp/app_pc" | grep -q 'NEEDED.*libbrooq-client' && fail "app_pc is not static in brooq-client"
"$tmp/app_pc" >/dev/null || fail "app_pc does not run"
echo "ok: static link from brooq-client.pc ($libs)"

# An application with an NNG of its own (here: its own nng_close, and a brq_str_c, both
# aborting) links with the static library, and the library keeps calling its own.
cat >"$tmp/own.c" <<'EOF'
#include <brooq/brooq.h>
#include <stdio.h>
#include <stdlib.h>
int nng_close(unsigned s) { (void) s; fputs("the application's nng_close ran\n", stderr); abort(); }
void *brq_str_c(const char *s) { (void) s; abort(); }
int
main(int argc, char **argv)
{
	brooq_client_opts o = BROOQ_CLIENT_OPTS_INIT;
	o.url = "ipc:///nonexistent/brooq.sock";
	o.token_file = argc > 1 ? argv[1] : NULL;
	brooq_client *c = NULL;
	brooq_err rc = brooq_client_open(&o, &c);
	if (rc != BROOQ_OK) {
		printf("open: %s: %s\n", brooq_strerror(rc), brooq_last_message());
		return 1;
	}
	char server[64];
	rc = brooq_ping(c, server, sizeof(server)); /* nothing listens: a clean BROOQ_ECONNECT */
	brooq_client_close(c);
	printf("ping: %s\n", brooq_strerror(rc));
	return rc == BROOQ_ECONNECT ? 0 : 1;
}
EOF
head -c 48 /dev/urandom | base64 | tr -d '\n' >"$tmp/token"
"$cc" -o "$tmp/own" "$tmp/own.c" $(pkg-config --cflags brooq-client) \
  "$tmp/prefix/lib/libbrooq-client.a" ${libs//-lbrooq-client/} || fail "an application with its own nng_close does not link"
"$tmp/own" "$tmp/token" || fail "an application with its own nng_close does not run"
echo "ok: an application defining its own nng_close and brq_str_c links the static library and runs"

mkdir "$tmp/cm"
cat >"$tmp/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(brooq-client CONFIG REQUIRED)
add_executable(app_static ../app.c)
target_link_libraries(app_static PRIVATE brooq::client_static)
add_executable(app_shared ../app.c)
target_link_libraries(app_shared PRIVATE brooq::client)
EOF
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cm.log" 2>&1 \
  && cmake --build "$tmp/cm/b" >>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log" >&2; fail "CMake consumer"; }
no_libnng "$tmp/cm/b/app_static"
no_libnng "$tmp/cm/b/app_shared"
"$tmp/cm/b/app_static" >/dev/null || fail "app_static does not run"
echo "ok: CMake package (brooq::client_static, brooq::client)"
