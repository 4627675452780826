#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shared by tests/chaos/run.sh and tests/chaos/failover.sh: gateways, workers, loading
# what they wrote into the test's database, and the checks (check.sql). Source it after
# setting: here (tests/chaos), bin_dir, work (the run's temp dir), dsn (the gateways'
# DSN), lease (seconds), wk_extra (extra `brooq-chaos work` options, an array, may be
# empty); it declares gw_pid (tag -> pid) and wk_gw (pid -> tag).
# shellcheck disable=SC2154 # the variables above are the caller's
# shellcheck disable=SC2034 # chaos_failed and chaos_blind are the caller's to read

declare -A gw_pid=() wk_gw=()

now_us() { date +%s%6N; }

# The worker and admin tokens (0600), fresh.
chaos_tokens() {
  local role
  for role in worker admin; do
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$work/$role-token")
  done
}

gw_url() { echo "ipc://$work/gw-$1.sock"; }

# gw_start TAG: a gateway on $(gw_url TAG), its log in $work/gateway-TAG.log. The
# environment is emptied first: the gateway refuses BROOQ_* variables it does not know
# (the test harness sets some).
gw_start() {
  local tag=$1
  env -i PATH="$PATH" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
    LSAN_OPTIONS="${LSAN_OPTIONS:-}" \
    BROOQ_DSN="$dsn" BROOQ_LISTEN="$(gw_url "$tag")" BROOQ_HTTP_LISTEN=off \
    BROOQ_WORKER_TOKEN_FILES="$work/worker-token" BROOQ_ADMIN_TOKEN_FILES="$work/admin-token" \
    BROOQ_LEASE="${lease}s" BROOQ_REAPER_INTERVAL=500ms BROOQ_BACKOFF_BASE=200ms \
    BROOQ_BACKOFF_MAX=2s BROOQ_POLL_INTERVAL=200ms BROOQ_POOL_SIZE=4 BROOQ_SHUTDOWN_GRACE=5s \
    "$bin_dir/brooq-gateway" >>"$work/gateway-$tag.log" 2>&1 &
  gw_pid[$tag]=$!
}

# gw_wait TAG: until the gateway answers a ping (at most 30 s).
gw_wait() {
  for _ in $(seq 300); do
    "$bin_dir/brooqctl" --url "$(gw_url "$1")" --token-file "$work/worker-token" --timeout 1s ping \
      >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "chaos: gateway $1 does not answer; its log:" >&2
  tail -n 20 "$work/gateway-$1.log" >&2
  return 1
}

# wk_start TAG: a worker process of gateway TAG, logging its runs to $work/runs.log.
wk_start() {
  "$bin_dir/brooq-chaos" work --url "$(gw_url "$1")" --token-file "$work/worker-token" \
    --log "$work/runs.log" --threads "${threads:-4}" --tag "$1" "${wk_extra[@]}" \
    2>>"$work/worker-$1.log" &
  wk_gw[$!]=$1
}

# Stops the workers (SIGTERM: they finish and settle what runs), then the gateways.
chaos_stop_all() {
  local pid tag
  for pid in "${!wk_gw[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${!wk_gw[@]}"; do wait "$pid" 2>/dev/null || true; done
  wk_gw=()
  for tag in "${!gw_pid[@]}"; do
    kill -TERM "${gw_pid[$tag]}" 2>/dev/null || true
    wait "${gw_pid[$tag]}" 2>/dev/null || true
  done
  gw_pid=()
}

# For a trap: every process we started, at once (a stopped one is continued first).
chaos_kill_all() {
  local p
  for p in "$@" "${!wk_gw[@]}" "${gw_pid[@]}"; do
    kill -CONT "$p" 2>/dev/null || true
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}

# chaos_dump HOST FILE: the job table and the checker's tables, for a post-mortem (a
# server that is down gives nothing; never fails).
chaos_dump() {
  pg_dump -h "$1" -U postgres -d brooq_chaos -t job -t 'chaos_*' -f "$2" 2>/dev/null || true
}

# chaos_load HOST: the runs (S and E lines paired), the acknowledgements, the kills and
# the faults into the tables of check.sql in database brooq_chaos on HOST.
chaos_load() {
  awk -v OFS='\t' '
    $1 == "S" { k = $2 " " $3 " " $4 " " $5; s[k] = $6 }
    $1 == "E" { k = $2 " " $3 " " $4 " " $6; e[k] = $5; o[k] = $8 }
    END { for (k in s) { split(k, a, " ")
            print a[1], a[2], a[3], (k in e ? e[k] : "\\N"), a[4], s[k], (k in o ? o[k] : "\\N") } }
  ' "$work/runs.log" >"$work/runs.tsv"
  awk -v OFS='\t' '$1 == "A" { print $2, $3, $4, $5, $6 }' "$work/acks.log" >"$work/acks.tsv"
  touch "$work/kills.tsv" "$work/faults.tsv"
  psql -X -q -At -h "$1" -U postgres -d brooq_chaos -v ON_ERROR_STOP=1 <<SQL
\\copy chaos_run FROM '$work/runs.tsv'
\\copy chaos_ack FROM '$work/acks.tsv'
\\copy chaos_kill FROM '$work/kills.tsv'
\\copy chaos_fault (kind, t0_us, t1_us, detail) FROM '$work/faults.tsv'
ANALYZE;
SQL
}

# chaos_checks HOST JOBS: prints every check of check.sql, then runs each again on input
# corrupted for it (rolled back) to show it can fail. Sets chaos_failed (checks with
# violations) and chaos_blind (checks that did not fail on their own fault).
chaos_checks() {
  local host=$1 jobs=$2 check n
  local q=(psql -X -q -At -h "$host" -U postgres -d brooq_chaos -v ON_ERROR_STOP=1)
  psql -X -q -h "$host" -U postgres -d brooq_chaos -P pager=off \
    -c "SELECT name AS check, n AS violations, left(examples, 160) AS examples FROM chaos_check($jobs)"
  chaos_failed=$("${q[@]}" -c "SELECT count(*) FROM chaos_check($jobs) WHERE n > 0")
  echo "== each check can fail: its input corrupted for it (rolled back)"
  chaos_blind=0
  for check in $("${q[@]}" -c "SELECT name FROM chaos_check($jobs)"); do
    n=$("${q[@]}" -c "BEGIN" -c "SELECT chaos_inject('$check')" \
      -c "SELECT n FROM chaos_check($jobs) WHERE name = '$check'" -c "ROLLBACK" | tail -n 1)
    if [ "${n:-0}" -gt 0 ]; then
      printf '  %-30s fails on its fault (%s)\n' "$check" "$n"
    else
      printf '  %-30s DID NOT FAIL on its fault\n' "$check"
      chaos_blind=$((chaos_blind + 1))
    fi
  done
}

# chaos_sanitizer_reports: how many AddressSanitizer/LeakSanitizer/UBSan reports the
# gateways and workers wrote to their logs (a sanitizer build; 0 otherwise). Prints them.
chaos_sanitizer_reports() {
  local n
  n=$(cat "$work"/gateway-*.log "$work"/worker-*.log "$work"/producer.log 2>/dev/null \
    | grep -cE 'ERROR: (Leak|Address)Sanitizer|runtime error:' || true)
  if [ "$n" -gt 0 ]; then
    grep -nE -A 12 'ERROR: (Leak|Address)Sanitizer|runtime error:' "$work"/*.log >&2 || true
  fi
  echo "$n"
}
