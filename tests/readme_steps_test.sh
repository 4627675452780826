#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/support/readme_steps.sh, which gives systemd_boot_test README's steps word for
# word: a marked block whole, several in order, and a failure for a missing marker, a
# marker above no block, an unclosed block. And README itself marks the blocks that
# test runs (checked here too, since that test is skipped by default).
set -euo pipefail
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/brooq-readme-steps-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/support/check.sh
. "$src/tests/support/check.sh"
# shellcheck source=tests/support/readme_steps.sh
. "$src/tests/support/readme_steps.sh"

cat >"$tmp/doc.md" <<'MD'
Text.

<!-- test: a -->
```sh
echo one   # a comment stays
cd "$HOME" && ls | wc -l
```

```sh
echo unmarked
```

<!-- test: a -->
```
echo two
```
<!-- test: nofence -->
Some words.
```sh
echo never
```
MD
steps_a() {
  diff <(readme_steps "$tmp/doc.md" a) - <<'OUT'
echo one   # a comment stays
cd "$HOME" && ls | wc -l
echo two
OUT
}
check "the marked blocks, whole and in order; an unmarked block is left out" steps_a
fails() { # fails NAME FILE MESSAGE: readme_steps fails and says MESSAGE
  local out
  if out=$(readme_steps "$2" "$1" 2>&1); then echo "succeeded: $out"; return 1; fi
  echo "$out"
  grep -qF "$3" <<<"$out"
}
check "a missing marker fails" fails nosuch "$tmp/doc.md" 'no marker "<!-- test: nosuch -->"'
check "a marker above no block fails" fails nofence "$tmp/doc.md" 'is not right above a fenced block'
printf '<!-- test: open -->\n```sh\necho open\n' >"$tmp/open.md"
check "an unclosed block fails" fails open "$tmp/open.md" 'is not closed'
printf 'text\n<!-- test: end -->\n' >"$tmp/end.md"
check "a marker on the last line fails" fails end "$tmp/end.md" 'has no block under it'

marked() { # marked NAME: README has a non-empty NAME block
  local out
  out=$(readme_steps "$src/README.md" "$1") && echo "$out" && [ -n "$out" ]
}
# (python-*: the Python quick start, run by python_test from a clone, python-deb and the
# producer and worker by systemd_boot_test from the packages.)
for n in install setup worker operator upgrade python-install python-deb python-producer python-worker; do
  check "README marks its '$n' block" marked "$n"
done
check_done
