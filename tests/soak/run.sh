#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The isolation soak (issue 25 deliverable 7), long form: every attack at once against a
# real gateway for N seconds while a producer and a worker run; prints the figures that
# docs/security.md ("Measured") records. ctest's soak_test is the 10-second version.
#
#   tests/soak/run.sh                  60 s of attacks
#   tests/soak/run.sh --seconds 300
#
# Options:
#   --seconds N     length of the attacks (default 60)
#   --build-dir D   a gcc RelWithDebInfo build with BROOQ_TESTS=ON (default: build/,
#                   built if tests/soak_test is missing)
# It starts a throwaway PostgreSQL of its own (tests/pg.sh) and stops it. Exit status:
# soak_test's (0: no legitimate call failed and RSS stayed under the bound).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=60 build="$root/build"
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift ;;
    --build-dir) build=$2; shift ;;
    *) sed -n '/^#   tests/,/^# soak_test/p' "$0" >&2; exit 2 ;;
  esac
  shift
done
if [ ! -x "$build/tests/soak_test" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBROOQ_TESTS=ON -DBROOQ_SANITIZE=OFF >/dev/null
  cmake --build "$build" -j 2 --target soak_test brooq-gateway brooqctl >/dev/null
fi
. "$root/tests/pg.sh"
pgdir=$(mktemp -d /tmp/brooq-soak-pg.XXXXXX)
trap 'brq_pg_stop "$pgdir"; rm -rf "$pgdir"' EXIT
brq_pg_start "$pgdir"
brq_pg_template "$build/bin/brooqctl"
BROOQ_TEST_BIN_DIR="$build/bin" BROOQ_SOURCE_DIR="$root" BROOQ_SOAK_SECONDS="$seconds" \
  "$build/tests/soak_test"
