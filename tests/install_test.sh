#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` into a temporary prefix, checked as an operator and a library
# user would meet it:
#   1. exactly the expected files (programs, library, header, .pc, CMake package,
#      unit, sysusers.d, man pages, docs, LICENSE, migrations under share/brooq);
#   2. the unit starts the installed program and its Documentation= exists;
#      the sysusers.d file creates the brooq group (in a scratch root);
#   3. the man pages render without warnings and are complete: every function of
#      brooq.h with its return type in brooq(3), every error code, every setting of
#      the env example in brooq-gateway(8), every command and option of
#      `brooqctl --help` in brooqctl(1);
#   4. brooqctl's migrations: the installed copy reads share/brooq/migrations (and
#      migrates a fresh database without --dir), the build tree's the source's,
#      and no installed binary carries the checkout's path outside debug info;
#   5. a program builds and runs against the installed library, through
#      pkg-config (shared) and the CMake package (static);
#   6. LICENSE is MIT, as every source file's SPDX line says;
#   7. nothing an operator reads once installed (the man pages, the programs' --help,
#      the env example, the packaged settings file) names a path of the source tree
#      (deploy/..., gateway/config/config.h): they name installed files or man pages.
# Usage: install_test.sh BUILD_DIR   (the harness PostgreSQL: $BROOQ_TEST_PGHOST)
set -euo pipefail
build=$(cd "${1:?usage: install_test.sh BUILD_DIR}" && pwd)
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/brooq-install-test.XXXXXX)
db=
cleanup() {
  [ -z "$db" ] || psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres \
    -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=tests/support/check.sh
. "$src/tests/support/check.sh"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
cfg_prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
libdir=${libdir:-lib}
version=$(sed -n 's/^#define BROOQ_VERSION *"\(.*\)"/\1/p' "$build/common/brq_version.h")
p=$tmp/prefix

# ---- 1. the file list ----------------------------------------------------------------
check "cmake --install into a temporary prefix" cmake --install "$build" --prefix "$p"
(cd "$src/migrations" && ls) | sed 's|^|share/brooq/migrations/|' >"$tmp/migrations.list"
{
  cat <<LIST
bin/brooq-gateway
bin/brooqctl
include/brooq/brooq.h
$libdir/cmake/brooq-client/brooq-clientConfig.cmake
$libdir/cmake/brooq-client/brooq-clientConfigVersion.cmake
$libdir/cmake/brooq-client/brooq-clientTargets.cmake
$libdir/libbrooq-client.a
$libdir/libbrooq-client.so
$libdir/libbrooq-client.so.1
$libdir/libbrooq-client.so.$version
$libdir/pkgconfig/brooq-client.pc
lib/systemd/system/brooq-gateway.service
lib/sysusers.d/brooq.conf
share/doc/brooq/LICENSE
share/doc/brooq/README.md
share/doc/brooq/brooq-gateway.env.example
share/doc/brooq/brooqctl.md
share/doc/brooq/console.md
share/doc/brooq/examples/brooq-dashboard.json
share/doc/brooq/examples/brooq-rules.yml
share/doc/brooq/examples/worker.c
share/doc/brooq/operations.md
share/doc/brooq/protocol.md
share/doc/brooq/security.md
share/man/man1/brooqctl.1
share/man/man3/brooq.3
share/man/man8/brooq-gateway.8
LIST
  cat "$tmp/migrations.list"
} | LC_ALL=C sort >"$tmp/expected.list"
# The CMake package's per-configuration file is named after the build type.
(cd "$p" && find . \( -type f -o -type l \) | sed 's|^\./||' |
  sed 's|\(cmake/brooq-client/brooq-clientTargets\)-[a-z]*\.cmake$|\1-CONFIG.cmake|' |
  grep -v 'brooq-clientTargets-CONFIG.cmake$' | LC_ALL=C sort) >"$tmp/actual.list"
check "installed files are exactly the expected ones" same_lines "$tmp/expected.list" "$tmp/actual.list"
check "the CMake package has its per-configuration targets file" \
  bash -c 'ls "$1"/cmake/brooq-client/brooq-clientTargets-*.cmake' _ "$p/$libdir"

# ---- 2. unit and sysusers.d ------------------------------------------------------------
unit=$p/lib/systemd/system/brooq-gateway.service
# Paths in the unit are the configured prefix's; the test installed elsewhere.
inprefix() { case $1 in "$cfg_prefix"/*) echo "$p${1#"$cfg_prefix"}" ;; *) echo "$1" ;; esac; }
unit_program() {
  local exe
  exe=$(sed -n 's/^ExecStart=[-@+!:]*\([^ ]*\).*/\1/p' "$unit")
  [ "$exe" = "$cfg_prefix/bin/brooq-gateway" ] || { echo "ExecStart runs $exe"; return 1; }
  [ -x "$(inprefix "$exe")" ]
}
check "the unit's ExecStart is the installed brooq-gateway" unit_program
unit_docs() {
  local n=0 d f
  for d in $(sed -n 's/^Documentation=//p' "$unit"); do
    n=$((n + 1))
    case $d in
      file://*) f=$(inprefix "${d#file://}") ;;
      man:*) f=$(echo "${d#man:}" | sed 's|^\(.*\)(\([0-9]\))$|'"$p"'/share/man/man\2/\1.\2|') ;;
      *) continue ;;
    esac
    [ -f "$f" ] || { echo "Documentation=$d: $f is not installed"; return 1; }
    echo "Documentation=$d -> $f"
  done
  [ "$n" -gt 0 ] || { echo "no Documentation="; return 1; }
}
check "the unit's Documentation= points at installed files" unit_docs
check "the unit names no /usr/local path of another prefix" \
  bash -c '[ "$2" = /usr/local ] || ! grep -n /usr/local/ "$1"' _ "$unit" "$cfg_prefix"
sysusers_group() {
  mkdir -p "$tmp/sysroot/etc"
  systemd-sysusers --root="$tmp/sysroot" "$p/lib/sysusers.d/brooq.conf"
  grep '^brooq:' "$tmp/sysroot/etc/group"
}
check "sysusers.d/brooq.conf creates the brooq group" sysusers_group

# ---- 3. man pages ------------------------------------------------------------------------
man_clean() { # renders without a groff or man warning
  local out
  out=$(MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null)
  [ -z "$out" ] || { echo "$out"; return 1; }
}
for page in man1/brooqctl.1 man3/brooq.3 man8/brooq-gateway.8; do
  check "$page renders without warnings" man_clean "$p/share/man/$page"
  MANWIDTH=200 man -l "$p/share/man/$page" 2>/dev/null | col -b >"$tmp/$(basename $page).txt"
done
cat >"$tmp/api.py" <<'PY'
import re, sys
header, page = open(sys.argv[1]).read(), open(sys.argv[2]).read()
decls = re.findall(r"BROOQ_API\s+([^;(]*?)\b(brooq_\w+)\s*\(", header)
codes = re.findall(r"\b(BROOQ_E\w+)\s*[,=]", header)
terms = {re.sub(r"\s+", " ", l.strip()) for l in page.splitlines() if re.match(r" {7}\S", l)}
missing = []
for ret, name in decls:
    ret = re.sub(r"\s+", " ", ret.strip())
    want = re.compile(re.escape(ret) + r" ?\**" + name + r"\(")
    if not any(want.match(t) for t in terms):
        missing.append(f"{ret} {name}(...)")
missing += [c for c in codes if c not in page]
for m in missing:
    print("not documented in brooq(3):", m)
print(f"{len(decls)} functions, {len(codes)} error codes")
sys.exit(1 if missing or not decls else 0)
PY
check "brooq(3) documents every function of brooq.h (with its return type) and error code" \
  python3 "$tmp/api.py" "$p/include/brooq/brooq.h" "$tmp/brooq.3.txt"
gateway_settings() {
  local k missing=0
  for k in $(grep -o '^#\?BROOQ_[A-Z_]*=' "$src/deploy/brooq-gateway.env.example" | tr -d '#=' | sort -u); do
    grep -q "$k" "$tmp/brooq-gateway.8.txt" || { echo "$k is not in brooq-gateway(8)"; missing=1; }
  done
  return $missing
}
check "brooq-gateway(8) documents every setting of the env example" gateway_settings
ctl_options() {
  local w missing=0
  "$p/bin/brooqctl" --help >"$tmp/ctl-help.txt"
  for w in $(grep -o -- '--[a-z][a-z-]*' "$tmp/ctl-help.txt" | sort -u) \
    ping enqueue job cancel stats migrate up-to down-to status version; do
    grep -q -- "$w" "$tmp/brooqctl.1.txt" || { echo "$w is not in brooqctl(1)"; missing=1; }
  done
  return $missing
}
check "brooqctl(1) documents every command and option of brooqctl --help" ctl_options

# ---- 4. brooqctl's migrations, and no checkout path -----------------------------------------
check "installed brooqctl --version" bash -c '[ "$("$1" --version)" = "brooqctl $2" ]' _ "$p/bin/brooqctl" "$version"
check "installed brooqctl reads the installed migrations" \
  grep -qF "else $p/share/brooq/migrations" <("$p/bin/brooqctl" --help)
check "build-tree brooqctl reads the source's migrations" \
  grep -qF "else $(cd "$src/migrations" && pwd -P)" <("$build/bin/brooqctl" --help)
no_checkout_path() {
  local f bad=0
  strings -a "$p/bin/brooqctl" | grep migrations | grep -F "$src" && bad=1
  for f in bin/brooqctl bin/brooq-gateway "$libdir/libbrooq-client.so.$version"; do
    objcopy --strip-debug "$p/$f" "$tmp/stripped"
    if strings -a "$tmp/stripped" | grep -F "$src"; then
      echo "$f names the checkout outside its debug info"
      bad=1
    fi
  done
  return $bad
}
check "no installed binary names the checkout (outside debug info)" no_checkout_path
migrate_fresh() {
  [ -n "${BROOQ_TEST_PGHOST:-}" ] || { echo "BROOQ_TEST_PGHOST is not set (run through tests/run.sh)"; return 1; }
  db=brooq_install_test_$$
  psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
  env -u BROOQ_MIGRATIONS_DIR BROOQ_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" \
    "$p/bin/brooqctl" migrate up >"$tmp/migrate.out"
  cat "$tmp/migrate.out"
  diff <(sed 's|^share/brooq/migrations/|OK    |' "$tmp/migrations.list") "$tmp/migrate.out"
}
check "installed brooqctl migrates a fresh database without --dir" migrate_fresh

# ---- 5. building against the installed library ---------------------------------------------
cat >"$tmp/app.c" <<'C'
#include <brooq/brooq.h>
#include <stdio.h>
#include <string.h>
int
main(void)
{
	brooq_client           *c;
	const brooq_client_opts o = {
		.size = sizeof(brooq_client_opts), .url = "ipc:///nonexistent", .token_file = "/nonexistent"};
	if (strcmp(brooq_strerror(BROOQ_ENOT_FOUND), "not found") != 0)
		return 1;
	if (brooq_client_open(&o, &c) != BROOQ_ETOKEN)
		return 2;
	printf("%s\n", brooq_last_message());
	return 0;
}
C
pc_shared() {
  local pc=$p/$libdir/pkgconfig
  # shellcheck disable=SC2046
  cc -Wall -Werror -o "$tmp/app-shared" "$tmp/app.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs brooq-client)
  LD_LIBRARY_PATH=$p/$libdir "$tmp/app-shared" || return 1
  LD_LIBRARY_PATH=$p/$libdir ldd "$tmp/app-shared" | grep -F "$p/$libdir/libbrooq-client.so.1"
}
check "a program builds with pkg-config and runs on the installed shared library" pc_shared
cmake_static() {
  mkdir -p "$tmp/cm"
  cp "$tmp/app.c" "$tmp/cm/app.c"
  cat >"$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(brooq-client CONFIG REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE brooq::client_static)
CM
  cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$p" >/dev/null
  cmake --build "$tmp/cm/build" >/dev/null
  "$tmp/cm/build/app"
  ! ldd "$tmp/cm/build/app" | grep libbrooq-client
}
check "a program builds with the CMake package and runs on the static library" cmake_static

# ---- 6. licence ----------------------------------------------------------------------------
licence() {
  head -n 1 "$p/share/doc/brooq/LICENSE" | grep -qx 'MIT License'
  grep -q 'Copyright (c) [0-9]* the brooq authors' "$p/share/doc/brooq/LICENSE"
  local f bad=0
  for f in $(cd "$src" && git ls-files '*.c' '*.h' 'CMakeLists.txt' '*.sh' 2>/dev/null); do
    grep -q 'SPDX-License-Identifier' "$src/$f" || continue
    grep -q 'SPDX-License-Identifier: MIT' "$src/$f" || { echo "$f: not MIT"; bad=1; }
  done
  return $bad
}
check "LICENSE is MIT, like every SPDX line" licence

# ---- 7. no source-tree path in what is installed ---------------------------------------------
# A folder of the checkout followed by a file or folder, not inside another path
# (share/doc/brooq/examples/..., /console/ are fine).
tree_path='(^|[^A-Za-z0-9_/.~-])(deploy|gateway|client|docs|tests|proto|common|migrations|console|debian)/[A-Za-z0-9_.-]'
no_tree_paths() {
  local bad=0 f
  for f in "$tmp"/*.[0-9].txt; do
    grep -nHE "$tree_path" "$f" && bad=1
  done
  for f in "$p/share/doc/brooq/brooq-gateway.env.example" "$src/deploy/brooq-gateway.env"; do
    grep -nHE "$tree_path" "$f" && bad=1
  done
  "$p/bin/brooq-gateway" --help >"$tmp/gw-help.txt"
  "$p/bin/brooqctl" --help >"$tmp/ctl-help-all.txt"
  "$p/bin/brooqctl" migrate --help >>"$tmp/ctl-help-all.txt"
  for cmd in ping enqueue job cancel stats jobs retry schedule; do
    "$p/bin/brooqctl" "$cmd" --help >>"$tmp/ctl-help-all.txt"
  done
  grep -nHE "$tree_path" "$tmp/gw-help.txt" "$tmp/ctl-help-all.txt" && bad=1
  [ $(wc -l <"$tmp/ctl-help-all.txt") -gt 50 ] || { echo "brooqctl's help texts are missing"; bad=1; }
  return $bad
}
check "no man page, --help text or env file names a source-tree path" no_tree_paths

check_done
