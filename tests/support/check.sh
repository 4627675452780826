# SPDX-License-Identifier: MIT
# Shell test helpers. Source this file, then:
#   check NAME COMMAND...   runs COMMAND; "ok NAME", or "FAIL NAME" and its output
#   check_done              prints "N passed, N failed"; returns 1 if any failed
# Needs $tmp (a scratch folder the test removes).
pass=0
fail=0

check() {
  local name=$1
  shift
  if "$@" >"$tmp/check.out" 2>&1; then
    pass=$((pass + 1))
    echo "ok   $name"
  else
    fail=$((fail + 1))
    echo "FAIL $name"
    sed 's/^/     /' "$tmp/check.out"
  fi
}

check_done() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

# same_lines EXPECTED_FILE ACTUAL_FILE: equal, or the difference.
same_lines() {
  diff -u "$1" "$2"
}
