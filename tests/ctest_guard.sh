#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a build's tests and fails when it ran none: a build configured without its
# tests (BROOQ_TESTS=OFF, e.g. left behind by another script) must never pass.
#   tests/ctest_guard.sh BUILD_DIR [ctest options...]
# Exit: ctest's status, or 1 when BUILD_DIR registers no test or ctest found none.
set -uo pipefail
dir=$1
shift

registered=$(ctest --test-dir "$dir" -N 2>/dev/null | sed -n 's/^Total Tests: \([0-9][0-9]*\)$/\1/p')
if [ -z "$registered" ] || [ "$registered" -eq 0 ]; then
  echo "ctest_guard: $dir registers no tests (configured with -DBROOQ_TESTS=OFF?): failing" >&2
  exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ctest --test-dir "$dir" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if grep -q 'No tests were found' "$log"; then
  echo "ctest_guard: ctest found no tests in $dir: failing" >&2
  exit 1
fi
ran=$(sed -n 's/.* tests passed, [0-9]* tests failed out of \([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)
if [ -z "$ran" ] || [ "$ran" -eq 0 ]; then
  echo "ctest_guard: no test ran in $dir: failing" >&2
  exit 1
fi
echo "ctest_guard: $dir: $ran of $registered registered tests ran"
exit "$status"
