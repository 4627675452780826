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
ar t "$build/client/libbrooq-client.a" | grep -q '^ipc.c.o$' || fail "libbrooq-client.a does not carry NNG's objects"

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
