# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The shell steps README.md gives an administrator, for the tests that follow them word
# for word (tests/systemd_boot_test.sh). Source this file, then:
#   readme_steps README NAME   prints the body of every fenced block that a line
#                              `<!-- test: NAME -->` stands right above, in order;
#                              fails if there is none, or a marker has no block under it
# A block is taken whole and unchanged: the markers say which blocks a test runs, so
# editing a marked block edits the test, and moving or dropping one fails it.
readme_steps() {
  local readme=$1 name=$2
  awk -v want="<!-- test: $name -->" '
    function fail(msg) { print FILENAME ":" FNR ": " msg > "/dev/stderr"; bad = 1; exit 1 }
    state == 0 && $0 == want { state = 1; marker = FNR; found++; next }
    state == 1 {
      if ($0 ~ /^```/) { state = 2; next }
      fail("marker \"" want "\" of line " marker " is not right above a fenced block")
    }
    state == 2 && /^```[ \t]*$/ { state = 0; next }
    state == 2 { print; next }
    END {
      if (bad) exit 1
      if (state == 1) fail("marker \"" want "\" of line " marker " has no block under it")
      if (state == 2) fail("the block under marker \"" want "\" of line " marker " is not closed")
      if (!found) { print FILENAME ": no marker \"" want "\"" > "/dev/stderr"; exit 1 }
    }' "$readme"
}
