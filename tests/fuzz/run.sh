#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (clang, -DBROOQ_FUZZ=ON, ASan + UBSan) and runs each for
# a bounded time from its seeds. Fails on any crash, leak, undefined behaviour, failed
# property, hang (one input over 10 s) or a run that did not finish; prints per target
# the executions, exec/s and libFuzzer's coverage (cov: edges, ft: features).
#
# Usage: tests/fuzz/run.sh [--seconds N] [--jobs J] [--build DIR] [--keep-corpus]
#                           [--coverage] [TARGET...]
#   --seconds N    per target (default 20)
#   --jobs J       targets run at the same time (default: the number of CPUs)
#   --build DIR    build directory (default build-fuzz)
#   --keep-corpus  start from (and add to) the corpus a previous run left in
#                  DIR/fuzz-corpus/TARGET instead of from the seeds only
#   --coverage     then replay the final corpus in a source-coverage build (DIR-cov)
#                  and print the line and branch coverage of the code under test
#   TARGET         request, reply, json, config (default: all four)
# A failing input is saved as DIR/fuzz-artifacts/TARGET/crash-* (or leak-*, timeout-*);
# reproduce it with DIR/bin/fuzz_TARGET FILE. docs/fuzzing.md has the details.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

seconds=20
jobs=$(nproc)
build=build-fuzz
keep=0
coverage=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
  --seconds) seconds=$2; shift 2 ;;
  --jobs) jobs=$2; shift 2 ;;
  --build) build=$2; shift 2 ;;
  --keep-corpus) keep=1; shift ;;
  --coverage) coverage=1; shift ;;
  -h | --help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
  *) targets+=("$1"); shift ;;
  esac
done
if ! [[ $seconds =~ ^[1-9][0-9]*$ && $jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: --seconds and --jobs take a positive whole number" >&2
  exit 2
fi
[ ${#targets[@]} -gt 0 ] || targets=(request reply json config)
for t in "${targets[@]}"; do
  case $t in
  request | reply | json | config) ;;
  *) echo "fuzz: unknown target $t (request, reply, json, config)" >&2; exit 2 ;;
  esac
done

echo "== fuzz: build ($build, clang, libFuzzer + ASan + UBSan)"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBROOQ_FUZZ=ON -DBROOQ_TESTS=OFF -DBROOQ_MAN=OFF >/dev/null
cmake --build "$build" --target brooq_fuzz -j "$(nproc)" >/dev/null

# The config target's private files go here; removed whatever happens.
scratch=$(mktemp -d /tmp/brooq-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
export TMPDIR=$scratch
# A report is a failure: libFuzzer saves the input and exits non-zero.
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

seeds_of() { # seeds_of TARGET: the seed directories
  echo "tests/fuzz/corpus/$1"
  if [ -d "$build/tests/fuzz/seeds/$1" ]; then echo "$build/tests/fuzz/seeds/$1"; fi
}

run_one() { # run_one TARGET: writes $scratch/TARGET.log and $scratch/TARGET.rc
  local t=$1 corpus=$build/fuzz-corpus/$1 artifacts=$build/fuzz-artifacts/$1
  local seeds
  mapfile -t seeds < <(seeds_of "$t")
  [ "$keep" = 1 ] || rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  local rc=0
  # New inputs go to the first directory only: the repository's seeds stay as they are.
  "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "${seeds[@]}" >"$scratch/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$scratch/$t.rc"
}

echo "== fuzz: ${targets[*]} for ${seconds} s each, $jobs at a time"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  run_one "$t" &
done
wait

# stat_of LOG NAME: libFuzzer's final "stat::NAME: value"; field_of LINE NAME: "NAME: value" of
# its last status line ("#N DONE cov: 551 ft: 1280 corp: 312/23Kb ...").
stat_of() { sed -n "s/^stat::$2:[[:space:]]*//p" "$1" | tail -n 1; }
field_of() { sed -n "s/.* $2: \([^ ]*\).*/\1/p" <<<"$1"; }

failed=()
printf '%-8s %-6s %12s %8s %6s %6s %16s %6s\n' target result executions exec/s cov ft corpus new
for t in "${targets[@]}"; do
  log=$scratch/$t.log
  rc=$(cat "$scratch/$t.rc")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  execs=$(stat_of "$log" number_of_executed_units)
  result=ok
  if [ "$rc" != 0 ] || [ -z "$done_line" ] || [ -z "$execs" ] || [ "$execs" = 0 ]; then
    result=FAIL
    failed+=("$t")
  fi
  printf '%-8s %-6s %12s %8s %6s %6s %16s %6s\n' "$t" "$result" "${execs:--}" \
    "$(stat_of "$log" average_exec_per_sec)" "$(field_of "$done_line" cov)" "$(field_of "$done_line" ft)" \
    "$(field_of "$done_line" corp)" "$(stat_of "$log" new_units_added)"
done
for t in "${failed[@]}"; do
  echo "== fuzz: $t failed (exit $(cat "$scratch/$t.rc")); the end of its log:"
  tail -n 60 "$scratch/$t.log"
  ls -l "$build/fuzz-artifacts/$t"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "== fuzz: no crash, leak, undefined behaviour or failed property"

if [ "$coverage" = 1 ]; then
  # The replay programs (the normal builds' ctest tests) with clang's source-based
  # coverage, run over the corpus the fuzzers ended with.
  cov=$build-cov
  echo "== fuzz: coverage of the final corpus ($cov)"
  cmake -S . -B "$cov" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DBROOQ_TESTS=ON \
    -DBROOQ_FUZZ=OFF -DBROOQ_SANITIZE=OFF -DBROOQ_MAN=OFF \
    -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
    -DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate >/dev/null
  programs=()
  for t in "${targets[@]}"; do programs+=("fuzz_${t}_replay"); done
  LLVM_PROFILE_FILE=/dev/null cmake --build "$cov" --target "${programs[@]}" -j "$(nproc)" >/dev/null
  objects=()
  for t in "${targets[@]}"; do
    mapfile -t seeds < <(seeds_of "$t")
    LLVM_PROFILE_FILE=$scratch/$t.profraw "$cov/bin/fuzz_${t}_replay" "$build/fuzz-corpus/$t" "${seeds[@]}"
    objects+=(-object "$cov/bin/fuzz_${t}_replay")
  done
  llvm-profdata merge -sparse -o "$scratch/fuzz.profdata" "$scratch"/*.profraw
  # Files whose code the targets are for (others they call are not listed).
  llvm-cov report "${objects[@]:1}" -instr-profile="$scratch/fuzz.profdata" \
    -show-region-summary=false -show-instantiation-summary=false \
    proto/*.c gateway/config/config*.c common/brq_units.c |
    awk 'NF == 10 && $1 != "Filename" {
      printf "%-24s lines %5d of %5d  %7s   branches %4d of %4d  %7s\n", $1, $5 - $6, $5, $7, $8 - $9, $8, $10 }'
fi
