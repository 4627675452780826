#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The chaos test (issue 11.3): jobs flow through two gateways on one durable PostgreSQL
# while workers are SIGKILLed at random, gateways are SIGKILLed and restarted, and
# PostgreSQL is restarted with `pg_ctl -m immediate`. Then it checks that no job was
# lost, no two runs of one job overlapped in time, and no outcome was written twice
# (check.sql), proves that each of those checks can fail (each is run again on input
# corrupted for it, in a transaction that is rolled back), and prints the figures.
#
#   tests/chaos/run.sh                 short form (about 50 s; what tests/run.sh runs)
#   tests/chaos/run.sh --minutes 10    the long form: 10 minutes of faults
#
# Options:
#   --seconds N | --minutes N  length of the fault phase (default 20 s)
#   --rate R                   jobs enqueued per second meanwhile (default 60)
#   --workers N                worker processes per gateway (default 2), --threads N
#                              handler threads each (default 4)
#   --lease D                  the gateways' lease (default 3s; workers heartbeat every D/3)
#   --seed S                   the random choices (default: random; printed, so a run
#                              can be repeated)
#   --bin-dir DIR              programs built already (brooq-gateway, brooqctl,
#                              brooq-chaos); default: build them in build-chaos/
#   --out-dir DIR              keep every log and the database dump there (default: a
#                              temp dir, removed unless the run fails)
#   --fault KIND               a deliberately broken variant, which must FAIL:
#       pause       SIGSTOP a worker for 2 leases + 1 s, then SIGCONT (overlapping runs)
#       partition   keep one gateway down for 3 leases while its workers run long jobs
#                   (overlapping runs, unless the worker cancels its handlers when its
#                   lease runs out unheard)
#       ignore-cancel   with partition: handlers that never look at their cancel flag
#       requeue-done  a stray writer puts a few done jobs back to pending every second,
#                   with the schema's terminal guard disabled for it (outcomes written
#                   twice, through the real gateway)
# Exit status: 0 when every check passes (and every check was shown able to fail).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

seconds=20 rate=60 workers=2 threads=4 lease=3 seed='' bin_dir='' out_dir='' fault=''
usage() {
  sed -n '/^#   tests/,/^# Exit/p' "$0" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift ;;
    --minutes) seconds=$(($2 * 60)); shift ;;
    --rate) rate=$2; shift ;;
    --workers) workers=$2; shift ;;
    --threads) threads=$2; shift ;;
    --lease) lease=${2%s}; shift ;;
    --seed) seed=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --out-dir) out_dir=$2; shift ;;
    --fault) fault=$2; shift ;;
    *) usage ;;
  esac
  shift
done
case $fault in '' | pause | partition | ignore-cancel | requeue-done) ;; *) usage ;; esac
long_pct=3 long_ms=2000-5000
# A partition needs handlers that outlive the lease by far, and a gateway with threads
# free to take their jobs again once they are reaped.
case $fault in partition | ignore-cancel) long_pct=50 long_ms=6000-9000 rate=2 ;; esac
[ -n "$seed" ] || seed=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
RANDOM=$seed

if [ -z "$bin_dir" ]; then
  "$root/deploy/deps.sh" >/dev/null
  echo "== build in $root/build-chaos"
  cmake -S "$root" -B "$root/build-chaos" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$root/build-chaos" -j "$(nproc)" --target brooq-gateway brooqctl brooq-chaos >/dev/null
  bin_dir="$root/build-chaos/bin"
fi
for p in brooq-gateway brooqctl brooq-chaos; do
  [ -x "$bin_dir/$p" ] || { echo "chaos: $bin_dir/$p not built" >&2; exit 1; }
done

# shellcheck source=tests/pg.sh
. "$root/tests/pg.sh"
work=$(mktemp -d /tmp/brooq-chaos.XXXXXX)
chmod 755 "$work" # the cluster's owner (postgres, when we are root) must reach its dir
wk_extra=()
[ "$fault" = ignore-cancel ] && wk_extra=(--ignore-cancel)
# shellcheck source=tests/chaos/lib.sh
. "$here/lib.sh"
prod_pid=''
cleanup() {
  local rc=$?
  chaos_kill_all ${prod_pid:+"$prod_pid"}
  if [ -n "$out_dir" ]; then
    mkdir -p "$out_dir"
    cp "$work"/*.log "$work"/*.tsv "$out_dir"/ 2>/dev/null || true
    chaos_dump "$work/pg/sock" "$out_dir/db.sql"
  fi
  brq_pg_stop "$work/pg"
  if [ $rc -ne 0 ] && [ -z "$out_dir" ]; then
    echo "chaos: failed; logs kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- PostgreSQL, durable (what production runs), the schema and the recorder ---------
echo "== chaos: seed $seed, ${seconds}s of faults, $rate jobs/s, lease ${lease}s, fault '${fault:-none}'"
brq_pg_start "$work/pg" durable
pghost=$BROOQ_TEST_PGHOST
psql_do() { psql -X -q -At -h "$pghost" -U postgres -d brooq_chaos -v ON_ERROR_STOP=1 "$@"; }
psql -X -q -h "$pghost" -U postgres -d postgres -c 'CREATE DATABASE brooq_chaos' >/dev/null
dsn="host=$pghost user=postgres dbname=brooq_chaos"
BROOQ_DSN=$dsn "$bin_dir/brooqctl" migrate up --dir "$root/migrations" >/dev/null
psql_do -f "$here/shadow.sql" >/dev/null
psql_do -f "$here/check.sql" >/dev/null

# ---- gateways ----------------------------------------------------------------------------
chaos_tokens
for tag in a b; do gw_start $tag; done
for tag in a b; do gw_wait $tag; done

# ---- workers and the producer ----------------------------------------------------------
for tag in a b; do
  for _ in $(seq "$workers"); do wk_start $tag; done
done
jobs=$((seconds * rate))
"$bin_dir/brooq-chaos" produce --url "$(gw_url a),$(gw_url b)" --token-file "$work/worker-token" \
  --ack "$work/acks.log" --jobs "$jobs" --rate "$rate" --batch 10 --seed "$seed" \
  --long-pct "$long_pct" --long-ms "$long_ms" --fail-pct 10 2>>"$work/producer.log" &
prod_pid=$!

# ---- faults ------------------------------------------------------------------------------
: >"$work/faults.tsv"
: >"$work/kills.tsv"
fault_log() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$work/faults.tsv"; }
rand_ms() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
pick_worker() { # a random live worker's pid
  local pids=("${!wk_gw[@]}")
  echo "${pids[RANDOM % ${#pids[@]}]}"
}
kill_worker() {
  local pid t0 t1 tag
  pid=$(pick_worker)
  tag=${wk_gw[$pid]}
  t0=$(now_us)
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  t1=$(now_us)
  unset "wk_gw[$pid]"
  printf '%s\t%s\n' "$pid" "$t1" >>"$work/kills.tsv"
  fault_log worker_kill "$t0" "$t1" "$pid"
  wk_start "$tag"
}
kill_gateway() { # kill_gateway TAG DOWN_MS
  local tag=$1 t0 t1
  t0=$(now_us)
  kill -KILL "${gw_pid[$tag]}"
  wait "${gw_pid[$tag]}" 2>/dev/null || true
  sleep_ms "$2"
  gw_start "$tag"
  gw_wait "$tag"
  t1=$(now_us)
  fault_log gateway_kill "$t0" "$t1" "$tag"
}
restart_pg() {
  local t0 t1
  t0=$(now_us)
  brq_pg_restart "$work/pg" immediate
  t1=$(now_us)
  fault_log pg_restart "$t0" "$t1" "-"
}
requeue_done() { # what a careless "retry these" script does, past the terminal guard
  local t0 t1
  t0=$(now_us)
  psql_do -c "BEGIN" -c "ALTER TABLE job DISABLE TRIGGER job_terminal_guard" \
    -c "UPDATE job SET state = 'pending' WHERE id IN (SELECT id FROM job WHERE state = 'done'
          ORDER BY random() LIMIT 3)" \
    -c "ALTER TABLE job ENABLE TRIGGER job_terminal_guard" -c "COMMIT" >/dev/null
  t1=$(now_us)
  fault_log requeue_done "$t0" "$t1" "-"
}
pause_worker() { # SIGSTOP past two leases and a reaper round, then SIGCONT
  local pid t0 t1
  pid=$(pick_worker)
  t0=$(now_us)
  kill -STOP "$pid"
  sleep $((2 * lease + 1))
  kill -CONT "$pid"
  t1=$(now_us)
  fault_log worker_pause "$t0" "$t1" "$pid"
}

start_s=$SECONDS
# PostgreSQL restarts: at 35 % and 70 % of a short run, every 30 s in a long one.
next_pg=$((seconds * 35 / 100)) pg_every=$((seconds * 35 / 100))
[ $pg_every -lt 8 ] && pg_every=8
[ $pg_every -gt 30 ] && pg_every=30
while kill -0 "$prod_pid" 2>/dev/null && [ $((SECONDS - start_s)) -lt $((seconds + 60)) ]; do
  sleep_ms "$(rand_ms 700 1800)"
  kill -0 "$prod_pid" 2>/dev/null || break
  elapsed=$((SECONDS - start_s))
  case $fault in
    pause) pause_worker; continue ;;
    requeue-done) requeue_done; continue ;;
    partition | ignore-cancel)
      # Long jobs are running on b's workers: b stays away for three leases.
      kill_gateway b $((3 * lease * 1000)); sleep 3; continue ;;
  esac
  if [ "$elapsed" -ge "$next_pg" ]; then
    restart_pg
    next_pg=$((elapsed + pg_every))
    continue
  fi
  # The first four faults are fixed, so that even a short run has every kind.
  n_faults=$((${n_faults:-0} + 1))
  case $n_faults in 1 | 3) r=0 ;; 2) r=70 ;; 4) r=90 ;; *) r=$((RANDOM % 100)) ;; esac
  if [ $r -lt 60 ]; then
    kill_worker
  elif [ $r -lt 80 ]; then
    kill_gateway a "$(rand_ms 200 1500)"
  else
    kill_gateway b "$(rand_ms 200 1500)"
  fi
done
if kill -0 "$prod_pid" 2>/dev/null; then
  echo "chaos: the producer is still enqueueing $((seconds + 60))s after the start: stuck" >&2
  exit 1
fi
wait "$prod_pid" || { echo "chaos: the producer failed" >&2; exit 1; }
prod_pid=''
fault_phase=$((SECONDS - start_s))

# ---- drain, stop -------------------------------------------------------------------------
drain_start=$SECONDS
while [ $((SECONDS - drain_start)) -lt 90 ]; do
  [ "$(psql_do -c "SELECT count(*) FROM job WHERE state NOT IN ('done', 'dead', 'canceled')")" = 0 ] \
    && break
  sleep 0.5
done
drain=$((SECONDS - drain_start))
chaos_stop_all

# ---- load what the processes wrote, and check ------------------------------------------
chaos_load "$pghost"
echo "== checks ($jobs jobs; fault phase ${fault_phase}s, drain ${drain}s)"
chaos_checks "$pghost" "$jobs"

echo "== recovery after each fault (seconds)"
psql -X -q -h "$pghost" -U postgres -d brooq_chaos -P pager=off -c "
  SELECT kind, count(*) AS n, max(down_s) AS down_max,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY next_claim_s) AS next_claim_p50,
         max(next_claim_s) AS next_claim_max, max(next_ack_s) AS next_ack_max,
         max(orphans_rerun_s) AS orphans_rerun_max
    FROM chaos_recovery GROUP BY kind ORDER BY kind"
[ "$seconds" -le 60 ] && psql -X -q -h "$pghost" -U postgres -d brooq_chaos -P pager=off \
  -c "SELECT * FROM chaos_recovery WHERE kind <> 'worker_kill' ORDER BY n"

summary=$(psql_do -F ' ' -c "
  SELECT 'jobs=' || $jobs,
         'acknowledged=' || (SELECT count(DISTINCT seq) FROM chaos_ack),
         'runs=' || (SELECT count(*) FROM chaos_run),
         'reruns=' || (SELECT count(*) - count(DISTINCT id) FROM chaos_run),
         'completed_twice=' || (SELECT count(*) - count(DISTINCT id) FROM chaos_run WHERE outcome = 'done'),
         'worker_kills=' || (SELECT count(*) FROM chaos_fault WHERE kind = 'worker_kill'),
         'gateway_kills=' || (SELECT count(*) FROM chaos_fault WHERE kind = 'gateway_kill'),
         'pg_restarts=' || (SELECT count(*) FROM chaos_fault WHERE kind = 'pg_restart'),
         'worker_pauses=' || (SELECT count(*) FROM chaos_fault WHERE kind = 'worker_pause'),
         'lost=' || (SELECT sum(n) FROM chaos_check($jobs)
                      WHERE name IN ('unacknowledged', 'lost', 'not_done', 'key_acknowledged_as_two_jobs')),
         'overlaps=' || (SELECT n FROM chaos_check($jobs) WHERE name = 'overlapping_runs'),
         'double_outcomes=' || (SELECT sum(n) FROM chaos_check($jobs)
                      WHERE name IN ('lease_ended_twice', 'terminal_written_twice', 'done_without_its_run'))")
echo "chaos: $summary seed=$seed"
if [ -n "$out_dir" ]; then
  mkdir -p "$out_dir"
  echo "$summary seed=$seed" >"$out_dir/summary.txt"
fi
sanitizer=$(chaos_sanitizer_reports)
if [ "$sanitizer" -gt 0 ]; then
  echo "chaos: FAILED: $sanitizer sanitizer report(s) in the logs (above)" >&2
  exit 1
fi
if [ "$chaos_blind" -gt 0 ]; then
  echo "chaos: FAILED: $chaos_blind check(s) did not fail on their own fault" >&2
  exit 1
fi
if [ "$chaos_failed" -gt 0 ]; then
  echo "chaos: FAILED: $chaos_failed check(s) found violations (seed $seed)" >&2
  exit 1
fi
echo "chaos: passed"
