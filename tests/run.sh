#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite from a clean checkout: installs what is missing, builds
# with gcc and with clang + ASan/UBSan, fuzzes (tests/fuzz/run.sh; seconds per
# target from BROOQ_TEST_FUZZ_SECONDS, default 20), starts a throwaway PostgreSQL,
# runs every test against it in both builds, and always removes the cluster.
#   tests/run.sh --under-load   the same while a CPU burner keeps every core busy
#                               (stress-ng --cpu N, or a busy loop per core without it)
#                               from the fuzzing on: the tests must hold on a busy machine
#   tests/run.sh --systemd      also boots the packages under systemd in a Debian 12
#                               container (systemd_boot_test, BROOQ_TEST_SYSTEMD=1; skipped
#                               otherwise): the tree is built once (network), then ~40 s
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

under_load=0
for arg in "$@"; do
  case $arg in
    --under-load) under_load=1 ;;
    --systemd) export BROOQ_TEST_SYSTEMD=1 ;;
    *) echo "usage: tests/run.sh [--under-load] [--systemd]" >&2; exit 2 ;;
  esac
done

deploy/deps.sh
# The web console's browser tests: npm packages pinned by tests/console/package-lock.json.
tests/console/setup.sh

echo "== format (.clang-format)"
if ! clang-format --dry-run --Werror $(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build*' -not -path './.deps/*'); then
  echo "format: run clang-format -i on the files above"
  exit 1
fi

jobs=$(nproc)
# Every option that decides what is built and tested is set here, whatever an earlier
# configure left in the cache (the demo, for one, builds without tests, in build-demo/).
build() { # build DIR CC [cmake options...]
  local dir=$1 cc=$2
  shift 2
  # BROOQ_TESTS=ON: deploy/demo.sh may have configured a build with the tests off.
  cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBROOQ_TESTS=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
}
echo "== build (gcc)"
build build gcc -DBROOQ_SANITIZE=OFF
echo "== build (clang, AddressSanitizer + UndefinedBehaviorSanitizer)"
build build-asan clang -DBROOQ_SANITIZE=ON

# The burner's processes, killed by PID however the run ends (the trap below, and the
# cleanup that replaces it once PostgreSQL is up).
burners=()
stop_burners() {
  local p
  for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${burners[@]}"; do wait "$p" 2>/dev/null || true; done
  burners=()
}
if [ "$under_load" = 1 ]; then
  trap stop_burners EXIT INT TERM
  if command -v stress-ng >/dev/null; then
    echo "== under load: stress-ng --cpu $jobs for the rest of the run"
    stress-ng --cpu "$jobs" --quiet &
    burners+=($!)
  else
    echo "== under load: a busy loop on each of $jobs cores for the rest of the run"
    for _ in $(seq "$jobs"); do
      (while :; do :; done) &
      burners+=($!)
    done
  fi
fi

status=0
# libFuzzer on the request and reply decoders, the JSON validator and the gateway's
# configuration loader, each for a bounded time from its seeds (build-fuzz/); a crash,
# leak, undefined behaviour or failed property fails the run. Longer: docs/fuzzing.md.
fuzz_seconds=${BROOQ_TEST_FUZZ_SECONDS:-20}
echo "== fuzz (tests/fuzz/run.sh: ${fuzz_seconds} s per target, two at a time)"
tests/fuzz/run.sh --seconds "$fuzz_seconds" --jobs 2 || status=1

# shellcheck source=tests/pg.sh
. tests/pg.sh
pgdir=$(mktemp -d /tmp/brooq-test.XXXXXX)
cleanup() {
  stop_burners
  brq_pg_stop "$pgdir"
  rm -rf "$pgdir"
}
trap cleanup EXIT INT TERM
echo "== PostgreSQL (throwaway cluster in $pgdir)"
brq_pg_start "$pgdir"
brq_pg_template build/bin/brooqctl

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# tests/ctest_guard.sh fails a build that registers or runs no test.
echo "== tests (gcc build)"
tests/ctest_guard.sh build --output-on-failure -j "$jobs" || status=1
echo "== tests (sanitizer build)"
tests/ctest_guard.sh build-asan --output-on-failure -j "$jobs" || status=1
# Criterion runs each test in a child process whose sanitizer report does not
# always turn into a failure: read every test's output for one.
if grep -nE 'ERROR: (Leak|Address)Sanitizer|runtime error:' build-asan/Testing/Temporary/LastTest.log; then
  echo "sanitizer reports found (above): failing the run"
  status=1
fi
exit $status
