#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tests tests/ctest_guard.sh on throwaway CMake projects: no tests registered
# fails, a passing test passes, a failing test fails, a filter that matches
# nothing fails.
set -euo pipefail
guard="$(cd "$(dirname "$0")" && pwd)/ctest_guard.sh"
work=$(mktemp -d /tmp/brooq-guard.XXXXXX)
trap 'rm -rf "$work"' EXIT

project() { # project NAME CMAKE-LINES...: configures a project with no compiler
  local d="$work/$1"
  shift
  mkdir -p "$d/src"
  { echo 'cmake_minimum_required(VERSION 3.18)'; echo 'project(g LANGUAGES NONE)'
    echo 'enable_testing()'; printf '%s\n' "$@"; } >"$d/src/CMakeLists.txt"
  cmake -S "$d/src" -B "$d/build" >/dev/null
  echo "$d/build"
}
expect() { # expect STATUS WHAT BUILD [ctest options...]
  local want=$1 what=$2 dir=$3 got=0
  shift 3
  "$guard" "$dir" "$@" >"$work/out" 2>&1 || got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, want $want"
    cat "$work/out"
    exit 1
  fi
  echo "ok: $what (exit $got)"
}

expect 1 "no tests registered" "$(project none)"
expect 0 "one passing test" "$(project pass 'add_test(NAME t COMMAND true)')"
expect 8 "one failing test" "$(project fail 'add_test(NAME t COMMAND false)')"
expect 1 "a filter that matches nothing" "$(project filt 'add_test(NAME t COMMAND true)')" -R nomatch
grep -q "registers no tests" <("$guard" "$(project none2)" 2>&1) || { echo "FAIL: no reason given"; exit 1; }
echo "ctest_guard_test: all cases behave"
