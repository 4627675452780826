#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The isolation soak (issue 25 deliverable 7), long form: issue 25's attacks against a
# real gateway for N seconds while a producer and a worker run; prints the figures that
# docs/security.md ("Measured") records. ctest's soak_test is the 10-second version.
#
#   tests/soak/run.sh                  60 s of every attack at once
#   tests/soak/run.sh --seconds 300
#   tests/soak/run.sh --attacks 1a,4   only those attacks (ids: 1a 1b 2 3 4 5 6a 6b 6c 6d)
#   tests/soak/run.sh --each           each attack alone (N s each), then all at once;
#                                      ends with one line per run: the producer's figures
#
# Options:
#   --seconds N     length of the attacks (default 60)
#   --attacks LIST  comma-separated attack ids (default: all)
#   --each          one run per attack, then one with all of them
#   --build-dir D   a gcc RelWithDebInfo build with BROOQ_TESTS=ON (default: build/,
#                   built if tests/soak_test is missing)
# It starts a throwaway PostgreSQL of its own (tests/pg.sh) and stops it. Exit status:
# soak_test's (0: RSS stayed under the bound, descriptors came back, both ports serve);
# with --each, the first failing run's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=60 build="$root/build" attacks=all each=0
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift ;;
    --attacks) attacks=$2; shift ;;
    --each) each=1 ;;
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
out=$(mktemp /tmp/brooq-soak-out.XXXXXX)
trap 'brq_pg_stop "$pgdir"; rm -rf "$pgdir" "$out"' EXIT
brq_pg_start "$pgdir"
brq_pg_template "$build/bin/brooqctl"

# One soak_test run with the attacks in $1; its output goes to the terminal and $out.
soak() {
  BROOQ_TEST_BIN_DIR="$build/bin" BROOQ_SOURCE_DIR="$root" BROOQ_SOAK_SECONDS="$seconds" \
    BROOQ_SOAK_ATTACKS="$1" "$build/tests/soak_test" 2>&1 | tee "$out"
  return "${PIPESTATUS[0]}"
}

if [ "$each" = 0 ]; then
  soak "$attacks"
  exit
fi
rc=0 summary=""
for a in 1a 1b 2 3 4 5 6a 6b 6c 6d all; do
  soak "$a" || { [ "$rc" != 0 ] || rc=$?; }
  ping=$(sed -n 's/^soak: producer ping *//p' "$out")
  enq=$(sed -n 's/^soak: producer enqueue *//p' "$out")
  fail=$(sed -n 's/^soak: producer failures \([0-9]* of [0-9]*\) calls.*/\1/p' "$out")
  summary+=$(printf '%-4s ping %s | enqueue %s | failed %s' "$a" "$ping" "$enq" "$fail")$'\n'
done
printf '\nsoak: each attack alone for %s s, then all of them (the producer: p50, p99, max)\n%s' \
  "$seconds" "$summary"
exit "$rc"
