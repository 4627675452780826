#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The brooq benchmark (issue 6), one command: builds what it needs (Release), starts
# a private durable PostgreSQL 15 and a gateway, runs every scenario against the
# gateway and the raw-SQL baseline of the same statements, and prints the table.
#
#   tests/bench/run.sh            every scenario, 3 runs each (about 6 min on 2 cores)
#   tests/bench/run.sh --smoke    every scenario once, tiny sizes (~10 s of measuring; CI)
#   tests/bench/run.sh --growth   how cost grows: terminal rows, ready rows, held-back vacuum
#   tests/bench/run.sh --levers   optimisations tried on the raw loop; gateway pool sizes
#   tests/bench/run.sh --soak MINUTES   steady load: a fixed enqueue rate, retention on,
#                                 a row of figures a minute (CSV + PNG chart), no job lost
#   tests/bench/run.sh --gateways the drain through one gateway, then two sharing the database
#   tests/bench/run.sh --standby  the drain and enqueue->start without and with a synchronous
#                                 standby (issue 30.4's capacity model)
#
# Growth knobs: --growth-rows N (terminal rows of the big-table runs, default 10,000,000;
# N/10 pending rows held back), --only GROUPS (terminal, ready, longpoll, xmin, big).
# Soak knobs: --soak-rate R (jobs/s, default 10000), --soak-batch B (jobs per enqueue,
# default 10), --soak-interval S (seconds per row, default 60), --soak-ttl D (retention,
# default 5m). PostgreSQL settings for a run: BRQ_PG_OPTS="-c autovacuum_naptime=10s".
#   tests/bench/run.sh --console  every console read at 10M rows (--console-rows N for less;
#                                 issue 28): p50/p99/max per read, table in DIR/console.md
#
# Options: --runs N, --bin-dir DIR (use programs built already), --out-dir DIR,
# --only GROUPS (comma-separated: enqueue, drain, drain-gw, latency, ping, console, memory, and
# soak in smoke mode; full and smoke modes; for iterating on one lever, not for the
# published table), --warm (drain-gw: one untimed c32 drain first, so that the timed
# drains all meet a cluster that has drained before, as a service's does; a cluster's
# first drain costs PostgreSQL ~25 % more: docs/benchmarks.md).
# Environment: BROOQ_BENCH_POOL_SIZE (gateway connections; default 4, the gateway's own).
# Results: DIR/results.jsonl (every figure of every run), DIR/summary.json and
# DIR/table.md; DIR is printed at the end. docs/benchmarks.md explains the scenarios.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mode=full runs=3 runs_given=0 bin_dir='' out_dir='' only='' warm=0 console_rows=10000000 console_n=100
growth_rows=10000000 soak_minutes=30 soak_rate=10000 soak_batch=10 soak_interval=60 soak_ttl=5m
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) mode=smoke; runs=1 ;;
    --growth) mode=growth ;;
    --levers) mode=levers ;;
    --soak) mode=soak soak_minutes=$2 runs=1; shift ;;
    --gateways) mode=gateways ;;
    --standby) mode=standby ;;
    --console) mode=console ;;
    --growth-rows) growth_rows=$2; shift ;;
    --soak-rate) soak_rate=$2; shift ;;
    --soak-batch) soak_batch=$2; shift ;;
    --soak-interval) soak_interval=$2; shift ;;
    --soak-ttl) soak_ttl=$2; shift ;;
    --console-rows) console_rows=$2; shift ;;
    --console-n) console_n=$2; shift ;;
    --runs) runs=$2 runs_given=1; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --out-dir) out_dir=$2; shift ;;
    --only) only=$2; shift ;;
    --warm) warm=1 ;;
    *) echo "usage: $0 [--smoke|--growth|--levers|--soak MINUTES|--gateways|--standby|--console] [--runs N] [--bin-dir DIR]" \
         "[--out-dir DIR] [--only GROUPS] [--warm] [--console-rows N] [--console-n N]" >&2; exit 2 ;;
  esac
  shift
done

# The console scenario fills its table anew for every run: one unless asked.
[ "$mode" = console ] && [ "$runs_given" -eq 0 ] && runs=1
if [ -z "$bin_dir" ]; then
  "$root/deploy/deps.sh"
  build="$root/build-bench"
  echo "== build (Release) in $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target brooq-gateway brooqctl brooq-bench brooq-bench-worker >/dev/null
  bin_dir="$build/bin"
fi
bench="$bin_dir/brooq-bench"
for p in brooq-gateway brooqctl brooq-bench brooq-bench-worker; do
  [ -x "$bin_dir/$p" ] || { echo "run.sh: $bin_dir/$p not built" >&2; exit 1; }
done
[ -n "$out_dir" ] || out_dir=/tmp/brooq-bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out_dir"
results="$out_dir/results.jsonl"
: >"$results"
: >"$out_dir/bench.log"

# shellcheck source=tests/pg.sh
. "$root/tests/pg.sh"
work=$(mktemp -d /tmp/brooq-bench-run.XXXXXX)
gw_pid=
gw_stop() {
  if [ -n "$gw_pid" ]; then
    kill "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
    gw_pid=
  fi
}
# A second gateway (--gateways), and its stop.
gw2_pid=
gw2_stop() {
  if [ -n "$gw2_pid" ]; then
    kill "$gw2_pid" 2>/dev/null || true
    wait "$gw2_pid" 2>/dev/null || true
    gw2_pid=
  fi
}
cleanup() {
  gw_stop
  gw2_stop
  [ -d "$work/standby/data" ] && brq_pg_stop "$work/standby"
  brq_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== PostgreSQL (durable: fsync, synchronous_commit, full_page_writes on) in $work"
brq_pg_start "$work" durable
psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -c 'CREATE DATABASE brooq_bench' >/dev/null
export BROOQ_BENCH_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=brooq_bench"
BROOQ_DSN=$BROOQ_BENCH_DSN "$bin_dir/brooqctl" migrate up --dir "$root/migrations" >/dev/null
export BROOQ_BENCH_PG_PID # our postmaster, for the CPU accounting
BROOQ_BENCH_PG_PID=$(head -n 1 "$work/data/postmaster.pid")

mkdir -p "$work/gw"
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$work/gw/worker.token"
chmod 600 "$work/gw/worker.token"
export BROOQ_BENCH_URL="ipc://$work/gw/gateway.sock"
export BROOQ_BENCH_TOKEN_FILE="$work/gw/worker.token"
export BROOQ_BENCH_WORKER="$bin_dir/brooq-bench-worker"
export BROOQ_BENCH_GW_PID

# gw_start POOL [OVERRIDES]: a gateway with defaults but for the pool size, long-polls
# up to 1,000 (the default) and metrics on a free loopback port (the driver reads the
# RPC counters: how full the workers' claims were); OVERRIDES: BROOQ_TOPIC_OVERRIDES.
# The port is drawn below the kernel's ephemeral range (32768-60999 here), where no
# outgoing connection can hold it; a port that is free when probed can still be taken
# before the gateway binds it (tests run in parallel), so a gateway that exits with
# "Address in use" is started again on another port.
export BROOQ_BENCH_METRICS
gw_start() {
  local try mark
  : >>"$out_dir/gateway.log"
  for try in 1 2 3 4 5; do
    mark=$(($(wc -c <"$out_dir/gateway.log") + 1))
    gw_try_start "$@" && return 0
    tail -c "+$mark" "$out_dir/gateway.log" | grep -q 'http_start_failed.*Address in use' || break
    echo "run.sh: metrics port $BROOQ_BENCH_METRICS was taken (try $try); another" >&2
  done
  cat "$out_dir/gateway.log" >&2
  exit 1
}
# gw_try_start POOL [OVERRIDES]: 0 once the gateway answers, 1 if it exited.
gw_try_start() {
  gw_stop
  local port
  for _ in $(seq 20); do
    port=$((10000 + RANDOM % 22000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  BROOQ_BENCH_METRICS=127.0.0.1:$port
  BROOQ_DSN=$BROOQ_BENCH_DSN BROOQ_LISTEN=$BROOQ_BENCH_URL BROOQ_WORKER_TOKEN_FILES=$BROOQ_BENCH_TOKEN_FILE \
    BROOQ_POOL_SIZE=$1 BROOQ_HTTP_LISTEN=$BROOQ_BENCH_METRICS BROOQ_MAX_WAITERS=1000 BROOQ_LOG_LEVEL=warn \
    env ${2:+"BROOQ_TOPIC_OVERRIDES=$2"} "$bin_dir/brooq-gateway" 2>>"$out_dir/gateway.log" &
  gw_pid=$!
  BROOQ_BENCH_GW_PID=$gw_pid
  for _ in $(seq 100); do
    "$bench" ping --producers 1 --seconds 0.05 >/dev/null 2>&1 && return 0
    if ! kill -0 "$gw_pid" 2>/dev/null; then
      wait "$gw_pid" 2>/dev/null || true
      gw_pid=
      return 1
    fi
    sleep 0.1
  done
  echo "run.sh: the gateway does not answer" >&2
  exit 1
}
pool=${BROOQ_BENCH_POOL_SIZE:-4}
echo "== gateway (pool $pool) on $BROOQ_BENCH_URL"
gw_start "$pool"

pg() { psql -X -qAt -h "$BROOQ_TEST_PGHOST" -U postgres -d brooq_bench -c "$1"; }
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# b CMD ARGS...: one measurement; its log goes to bench.log, shown if it fails.
b() {
  if ! "$bench" "$@" --out "$results" >>"$out_dir/bench.log" 2>&1; then
    echo "run.sh: brooq-bench $* failed:" >&2
    tail -n 20 "$out_dir/bench.log" >&2
    exit 1
  fi
}
# pair RUN CMD ARGS...: the gateway scenario and its raw twin, alternating which goes first.
pair() {
  local run=$1 cmd=$2
  shift 2
  if [ $((run % 2)) -eq 1 ]; then
    b "$cmd" --run "$run" "$@"; b "raw-$cmd" --run "$run" "$@"
  else
    b "raw-$cmd" --run "$run" "$@"; b "$cmd" --run "$run" "$@"
  fi
}

# Shapes. Concurrency = worker processes x handler threads: 2 x 4 and 2 x 16. A worker
# claims up to one job per free thread and carries its finished results in the same
# request; the raw baseline runs one libpq connection per worker process, claiming
# the same batch (threads) and settling it in the claim's transaction.
c8="--procs 2 --threads 4"
c32="--procs 2 --threads 16"
if [ "$mode" = smoke ]; then
  sec=0.5 jobs=5000 lat_sec=1 ping_sec=0.3 polls=100 console_jobs=10000
else
  sec=5 jobs=100000 lat_sec=10 ping_sec=3 polls=1000 console_jobs=1000000
fi

# console_overview RUN N (issue 16): the web console's overview
# (GET /console/api/overview) with N jobs in the table, mostly history (90 % done,
# 1 % dead) and a 10 % backlog (on 4 of the 8 topics: n/40 each), as in production. Signed in with the
# worker token (a read-only session); 200 requests on one connection once the
# monitor shows the backlog; p50/p99/max in ms. The table is emptied afterwards.
console_overview() {
  local run=$1 n=$2 base="http://$BROOQ_BENCH_METRICS" jar="$work/console.cookies" want
  pg "TRUNCATE job; INSERT INTO job (topic, payload, state, attempts, updated_at)
      SELECT 'topic.' || (g % 8), '{\"n\":1}',
        CASE WHEN g % 10 = 0 THEN 'pending' WHEN g % 97 = 0 THEN 'dead' ELSE 'done' END,
        CASE WHEN g % 10 = 0 THEN 0 ELSE 1 END, now()
      FROM generate_series(1, $n) g; ANALYZE job"
  # The token goes in the body, read from its file: never in argv.
  { printf 'token='; cat "$BROOQ_BENCH_TOKEN_FILE"; } |
    curl -sf -c "$jar" --data-binary @- "$base/console/api/login" >/dev/null ||
    { echo "run.sh: console sign-in failed" >&2; exit 1; }
  want="\"pending\":$((n / 40)),"
  for _ in $(seq 600); do
    curl -sf -b "$jar" "$base/console/api/overview" | grep -q "$want" && break
    sleep 0.1
  done
  if ! curl -sf -b "$jar" "$base/console/api/overview" | grep -q "$want"; then
    echo "run.sh: the console overview never showed the backlog ($want):" >&2
    curl -s -b "$jar" "$base/console/api/overview" | head -c 600 >&2
    exit 1
  fi
  local urls=() i
  for i in $(seq 200); do urls+=(-o /dev/null "$base/console/api/overview"); done
  curl -sf -b "$jar" -w '%{time_total}\n' "${urls[@]}" | sort -g | awk -v run="$run" '
    { t[NR] = $1 * 1000 }
    END {
      printf "{\"run\":%d,\"scenario\":\"console_overview\",\"variant\":\"gateway\",\"metric\":\"p50\",\"unit\":\"ms\",\"value\":%.3f}\n", run, t[int(NR / 2)]
      printf "{\"run\":%d,\"scenario\":\"console_overview\",\"variant\":\"gateway\",\"metric\":\"p99\",\"unit\":\"ms\",\"value\":%.3f}\n", run, t[int(NR * 99 / 100)]
      printf "{\"run\":%d,\"scenario\":\"console_overview\",\"variant\":\"gateway\",\"metric\":\"max\",\"unit\":\"ms\",\"value\":%.3f}\n", run, t[NR]
    }' >>"$results"
  pg "TRUNCATE job"
}

# ---- issue 30: cost as the work grows ------------------------------------------------

# targets: the issue's targets beside the figures of the big-table runs (medians), also
# into targets.md.
targets() {
  python3 - "$results" <<'PY' | tee -a "$out_dir/targets.md"
import json, statistics, sys
v = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    v.setdefault((r["scenario"], r["metric"]), []).append(r["value"])
med = lambda s, m: statistics.median(v[(s, m)]) if (s, m) in v else None
base = med("drain_c32_empty", "rate")
print("| table | drain jobs/s | x empty (target >= 0.9) | start p99 ms (target <= 1.5) "
      "| PostgreSQL us/job | others % of a core (kernel threads, interrupts) | disk MiB read / written "
      "| autovacuum runs (busy) |")
print("|---|---|---|---|---|---|---|---|")
f = lambda tag, m, fmt="%.1f": (fmt % med("drain_c32_" + tag, m)) if med("drain_c32_" + tag, m) is not None else "-"
for tag in ("empty", "terminal", "held_later", "held_paused"):
    d, p = med("drain_c32_" + tag, "rate"), med("latency_" + tag, "start_p99")
    if d is None:
        continue
    ratio = "%.2f %s" % (d / base, "ok" if d / base >= 0.9 else "MISSED") if base else "-"
    p99 = "%.2f %s" % (p / 1000, "ok" if p / 1000 <= 1.5 else "MISSED") if p is not None else "-"
    print("| %s | %.0f | %s | %s | %s | %s (%s, %s) | %s / %s | %s (%s) |" % (
        tag, d, ratio, p99, f(tag, "cpu_postgres"), f(tag, "cpu_other_processes", "%.0f"),
        f(tag, "cpu_kernel_threads", "%.0f"), f(tag, "cpu_interrupts", "%.0f"), f(tag, "disk_read", "%.0f"),
        f(tag, "disk_written", "%.0f"), f(tag, "autovacuum_runs", "%.0f"), f(tag, "autovacuum_busy", "%.0f")))
PY
}

# settle_io: a checkpoint, the kernel's dirty pages written (sync), then a wait (300 s at
# most) until under 64 MiB are dirty or under writeback: a fill's gigabytes of writes must
# not be flushed during the drain after it (issue 30.1: the first 10M-row runs did not
# separate the two).
settle_io() {
  pg "CHECKPOINT"
  sync
  for _ in $(seq 300); do
    [ "$(awk '/^(Dirty|Writeback):/ { s += $2 } END { print s + 0 }' /proc/meminfo)" -lt 65536 ] && return 0
    sleep 1
  done
}

# growth_big RUNS: issue 30.1. The drain (c32) and enqueue->start (200/s, c8) on an
# empty table, then with $growth_rows terminal rows over 100 topics, then with those and
# $growth_rows/10 pending rows not due for a day, then as many in paused topics instead;
# the EXPLAIN (ANALYZE, BUFFERS) of the claim at each size goes to explain_claim_*.txt.
growth_big() {
  local n=$growth_rows held=$((growth_rows / 10)) run tag
  echo "== growth: drain and enqueue->start, empty table"
  for run in $(seq "$1"); do
    # shellcheck disable=SC2086
    BROOQ_BENCH_EMPTY_TABLE=1 b drain --run "$run" --jobs "$jobs" $c32 --label drain_c32_empty
    # shellcheck disable=SC2086
    BROOQ_BENCH_EMPTY_TABLE=1 b latency --run "$run" --rate 200 --seconds "$lat_sec" $c8 --label latency_empty
  done
  echo "== growth: $n terminal rows over 100 topics (INSERT ... generate_series)"
  pg "TRUNCATE job"
  pg "DELETE FROM topic_policy WHERE topic LIKE 'bench.held%'"
  pg "INSERT INTO job (topic, payload, state, attempts, created_at, updated_at, available_at)
      SELECT 'bench.old.' || (g % 100), jsonb_build_object('i', g),
        CASE WHEN g % 50 = 0 THEN 'dead' ELSE 'done' END, 1,
        now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
      FROM generate_series(1, $n) g"
  pg "VACUUM ANALYZE job"; settle_io
  for tag in terminal held_later held_paused; do
    case $tag in
    held_later)
      echo "== growth: + $held pending rows due in a day"
      pg "INSERT INTO job (topic, payload, available_at)
          SELECT 'bench.held.later.' || (g % 10), jsonb_build_object('i', g), now() + interval '1 day'
          FROM generate_series(1, $held) g"
      pg "VACUUM ANALYZE job"; settle_io ;;
    held_paused)
      echo "== growth: the $held pending rows in paused topics instead"
      pg "DELETE FROM job WHERE topic LIKE 'bench.held%'"
      pg "INSERT INTO topic_policy (topic, paused) SELECT 'bench.held.paused.' || g, true FROM generate_series(0, 9) g"
      pg "INSERT INTO job (topic, payload) SELECT 'bench.held.paused.' || (g % 10), jsonb_build_object('i', g)
          FROM generate_series(1, $held) g"
      pg "VACUUM ANALYZE job"; settle_io ;;
    esac
    for run in $(seq "$1"); do
      # shellcheck disable=SC2086
      b drain --run "$run" --jobs "$jobs" $c32 --terminal "$n" --label "drain_c32_$tag"
      # shellcheck disable=SC2086
      b latency --run "$run" --rate 200 --seconds "$lat_sec" $c8 --terminal "$n" --label "latency_$tag"
    done
    # The claim of a batch of 32 among 100k ready jobs of its topic, at this size.
    pg "INSERT INTO job (topic, payload) SELECT 'bench.drain', jsonb_build_object('i', g) FROM generate_series(1, 100000) g"
    pg "ANALYZE job"
    "$bench" explain-claim --batch 32 >"$out_dir/explain_claim_$tag.txt"
    pg "DELETE FROM job WHERE topic = 'bench.drain'"
  done
  pg "DELETE FROM topic_policy WHERE topic LIKE 'bench.held%'"
  pg "TRUNCATE job"
  echo "== growth: targets (issue 30.1)"
  targets
}

# soak_run: issue 30.2. A gateway with retention after $soak_ttl, producers at
# $soak_rate jobs/s and 2 x 16 workers for $soak_minutes minutes; soak.csv (a row every
# $soak_interval s), its chart soak.png, and the autovacuum settings it ran with.
soak_run() {
  BROOQ_RETENTION_TTL=$soak_ttl gw_start "$pool"
  echo "== soak: $soak_rate jobs/s for $soak_minutes min, retention $soak_ttl, a row every $soak_interval s"
  b soak --seconds "$((soak_minutes * 60))" --rate "$soak_rate" --producers 4 --batch "$soak_batch" \
    --procs 2 --threads 16 --interval "$soak_interval" --csv "$out_dir/soak.csv"
  {
    pg "SELECT name || '=' || setting FROM pg_settings WHERE name LIKE 'autovacuum%' ORDER BY 1"
    pg "SELECT 'job: ' || array_to_string(reloptions, ' ') FROM pg_class WHERE relname = 'job'"
  } >"$out_dir/soak_autovacuum_settings.txt"
  soak_chart "$out_dir/soak.csv" "$out_dir/soak.png"
  gw_start "$pool"
}

# soak_chart CSV PNG: four panels over the minutes: rates, enqueue->start, sizes, vacuum.
soak_chart() {
  command -v gnuplot >/dev/null || { echo "run.sh: no gnuplot (deploy/deps.sh installs gnuplot-nox): no chart" >&2; return 0; }
  local cols
  cols=$(head -n 1 "$1" | tr ',' '\n' | wc -l)
  gnuplot <<GNUPLOT
set terminal pngcairo size 1200,900 font ",10"
set output "$2"
set datafile separator ","
set key left top noenhanced
set xlabel "minute"
set grid
set multiplot layout 2,2 title "brooq soak: $soak_rate jobs/s, retention $soak_ttl" noenhanced
set title "rates (jobs/s)"
plot "$1" using 1:2 with lines lw 2 title "enqueued", "" using 1:3 with lines lw 2 title "drained"
set title "enqueue -> start (ms)"
plot "$1" using 1:4 with lines lw 2 title "p50", "" using 1:5 with lines lw 2 title "p99"
set title "sizes (MiB)"
plot for [c=6:7] "$1" using 1:(column(c)/1048576) with lines lw 2 title columnhead(c), \
     for [c=13:$cols] "$1" using 1:(column(c)/1048576) with lines title columnhead(c)
set title "vacuum"
set y2tics
plot "$1" using 1:9 with lines lw 2 title "dead tuples", \
     "" using 1:10 axes x1y2 with steps title "autovacuum runs (right)", \
     "" using 1:12 axes x1y2 with lines title "oldest transaction, s (right)"
unset multiplot
GNUPLOT
}

# gw2_start: a second gateway on the same database, its own socket, no HTTP; its pid in
# BROOQ_BENCH_GW2_PID (the CPU accounting) and its URL in BROOQ_BENCH_URL2 (every other
# worker process uses it).
gw2_start() {
  gw2_stop
  export BROOQ_BENCH_URL2="ipc://$work/gw/gateway2.sock" BROOQ_BENCH_GW2_PID
  BROOQ_DSN=$BROOQ_BENCH_DSN BROOQ_LISTEN=$BROOQ_BENCH_URL2 BROOQ_WORKER_TOKEN_FILES=$BROOQ_BENCH_TOKEN_FILE \
    BROOQ_POOL_SIZE=$pool BROOQ_HTTP_LISTEN=off BROOQ_MAX_WAITERS=1000 BROOQ_LOG_LEVEL=warn \
    "$bin_dir/brooq-gateway" 2>>"$out_dir/gateway2.log" &
  gw2_pid=$!
  BROOQ_BENCH_GW2_PID=$gw2_pid
  for _ in $(seq 100); do
    BROOQ_BENCH_URL=$BROOQ_BENCH_URL2 "$bench" ping --producers 1 --seconds 0.05 >/dev/null 2>&1 && return 0
    kill -0 "$gw2_pid" 2>/dev/null || { cat "$out_dir/gateway2.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "run.sh: the second gateway does not answer" >&2
  exit 1
}

# gateways_run RUNS: issue 30.4. The drain at c32 (2 worker processes x 16) through one
# gateway, then through two sharing the database (one worker process each), alternating
# which goes first; PostgreSQL's and each gateway's CPU per job (cpu_postgres,
# cpu_gateway, cpu_gateway2).
gateways_run() {
  local run
  for run in $(seq "$1"); do
    if [ $((run % 2)) -eq 1 ]; then
      # shellcheck disable=SC2086
      b drain --run "$run" --jobs "$jobs" $c32 --label drain_c32_1gw
    fi
    gw2_start
    # shellcheck disable=SC2086
    b drain --run "$run" --jobs "$jobs" $c32 --label drain_c32_2gw
    gw2_stop
    unset BROOQ_BENCH_URL2 BROOQ_BENCH_GW2_PID
    if [ $((run % 2)) -eq 0 ]; then
      # shellcheck disable=SC2086
      b drain --run "$run" --jobs "$jobs" $c32 --label drain_c32_1gw
    fi
  done
}

# standby_run RUNS: issue 30.4's standby. A streaming standby of the benchmark's cluster
# (tests/pg.sh brq_pg_standby, as the failover test makes it), then the drain (c32) and
# enqueue->start (200/s, c8) with the primary's synchronous_standby_names empty (the
# standby streams, nothing waits for it: drain_c32_async) and '*' (every commit waits
# for the standby's flush of its WAL: drain_c32_sync), alternating which goes first.
# The standby's own CPU is another process's here (cpu_other_processes).
standby_run() {
  local run order names
  BRQ_PG_OPTS="${BRQ_PG_OPTS:-}" brq_pg_standby "$work" "$work/standby"
  export BROOQ_TEST_PGHOST="$work/sock" # brq_pg_standby pointed it at the standby
  for run in $(seq "$1"); do
    order="async sync"
    [ $((run % 2)) -eq 0 ] && order="sync async"
    for names in $order; do
      if [ "$names" = sync ]; then
        pg "ALTER SYSTEM SET synchronous_standby_names = '*'"
      else
        pg "ALTER SYSTEM SET synchronous_standby_names = ''"
      fi
      pg "SELECT pg_reload_conf()" >/dev/null
      # shellcheck disable=SC2086
      b drain --run "$run" --jobs "$jobs" $c32 --label "drain_c32_$names"
      # shellcheck disable=SC2086
      b latency --run "$run" --rate 200 --seconds "$lat_sec" $c8 --label "latency_$names"
    done
  done
  pg "ALTER SYSTEM SET synchronous_standby_names = ''"
  pg "SELECT pg_reload_conf()" >/dev/null
}

# console_login JAR: a read-only console session (the worker token, sent in the body read
# from its file: never in argv) in the cookie jar JAR.
console_login() {
  { printf 'token='; cat "$BROOQ_BENCH_TOKEN_FILE"; } |
    curl -sf -c "$1" --data-binary @- "http://$BROOQ_BENCH_METRICS/console/api/login" >/dev/null ||
    { echo "run.sh: console sign-in failed" >&2; exit 1; }
}

# console_time RUN NAME N PATH: N GETs of the console's PATH on one connection, each
# answered 200, as console_read_NAME p50/p99/max (ms) in the results.
console_time() {
  local run=$1 name=$2 n=$3 path=$4 urls=() i out
  for i in $(seq "$n"); do urls+=(-o /dev/null "http://$BROOQ_BENCH_METRICS$path"); done
  out=$(curl -s -b "$work/console.cookies" -w '%{http_code} %{time_total}\n' "${urls[@]}")
  if grep -qv '^200 ' <<<"$out"; then
    echo "run.sh: console read $name ($path) did not answer 200:" >&2
    grep -v '^200 ' <<<"$out" | head -n 3 >&2
    curl -s -b "$work/console.cookies" "http://$BROOQ_BENCH_METRICS$path" | head -c 400 >&2
    exit 1
  fi
  cut -d' ' -f2 <<<"$out" | console_pcts "$run" "$name" gateway
}
# console_pcts RUN NAME VARIANT: seconds on stdin, one a line -> p50/p99/max JSON lines.
console_pcts() {
  sort -g | awk -v run="$1" -v name="console_read_$2" -v variant="$3" '
    { t[NR] = $1 * 1000 }
    END {
      i99 = int(NR * 99 / 100 + 0.999); if (i99 < 1) i99 = 1
      printf "{\"run\":%d,\"scenario\":\"%s\",\"variant\":\"%s\",\"metric\":\"p50\",\"unit\":\"ms\",\"value\":%.3f}\n", run, name, variant, t[int((NR + 1) / 2)]
      printf "{\"run\":%d,\"scenario\":\"%s\",\"variant\":\"%s\",\"metric\":\"p99\",\"unit\":\"ms\",\"value\":%.3f}\n", run, name, variant, t[i99]
      printf "{\"run\":%d,\"scenario\":\"%s\",\"variant\":\"%s\",\"metric\":\"max\",\"unit\":\"ms\",\"value\":%.3f}\n", run, name, variant, t[NR]
    }' >>"$results"
}

# console_reads RUN ROWS N (issue 28): every read the console makes, N times each, over
# HTTP as the console makes it, on a table of ROWS jobs made in SQL
# (tests/bench/console_fill.sql: 100 topics, ROWS/10 done in one topic, ROWS/10 pending
# (some due tomorrow, some in paused topics), topics with only old rows, a topic of 100
# rows spread over the history, discard_done topics, a new topic). The gateway is
# restarted with the discard_done topics configured. Results: console_read_<read> in
# results.jsonl, and the table console.md.
console_reads() {
  local run=$1 rows=$2 n=$3 now day key key_path
  echo "   filling the table with $rows jobs (SQL)"
  local t0=$SECONDS
  psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d brooq_bench -v rows="$rows" \
    -f "$root/tests/bench/console_fill.sql" >/dev/null
  echo "   filled in $((SECONDS - t0)) s"
  gw_start "$pool" "discard.0:discard_done=true;discard.1:discard_done=true;discard.2:discard_done=true"
  # The gateway's janitor maps the new ids to their topics' spans (migration 00015) before
  # the topic links are timed: in service they trail the inserts by under a second.
  t0=$SECONDS
  for _ in $(seq 1200); do
    [ "$(psql -X -Atq -h "$BROOQ_TEST_PGHOST" -U postgres -d brooq_bench \
          -c 'SELECT mapped FROM job_topic_span_mark')" -ge "$rows" ] && break
    sleep 0.5
  done
  echo "   spans mapped in $((SECONDS - t0)) s"
  console_login "$work/console.cookies"
  for _ in $(seq 600); do
    curl -sf -b "$work/console.cookies" "http://$BROOQ_BENCH_METRICS/console/api/overview" | grep -q '"fresh"' && break
    sleep 0.1
  done
  now=$(($(date +%s) * 1000)) day=86400000
  console_time "$run" overview "$n" /console/api/overview
  console_time "$run" job_by_id "$n" "/console/api/job?id=$((rows / 2 + 1))"
  console_time "$run" topic_big "$n" "/console/api/jobs?topic=big"
  console_time "$run" topic_small "$n" "/console/api/jobs?topic=small"
  console_time "$run" topic_old_only "$n" "/console/api/jobs?topic=old.0"
  console_time "$run" topic_discard_done "$n" "/console/api/jobs?topic=discard.0"
  console_time "$run" topic_new "$n" "/console/api/jobs?topic=fresh"
  console_time "$run" topic_backlog "$n" "/console/api/jobs?topic=backlog"
  console_time "$run" topic_paused "$n" "/console/api/jobs?topic=paused.0"
  console_time "$run" topic_small_done "$n" "/console/api/jobs?topic=small&state=done"
  console_time "$run" topic_backlog_pending "$n" "/console/api/jobs?topic=backlog&state=pending"
  console_time "$run" topic_dead "$n" "/console/api/jobs?topic=topic.3&state=dead"
  console_time "$run" topic_page_2 "$n" "/console/api/jobs?topic=big&cursor=v1.$((rows / 2))"
  console_time "$run" state_pending "$n" "/console/api/jobs?state=pending"
  console_time "$run" state_failed "$n" "/console/api/jobs?state=failed"
  console_time "$run" state_dead "$n" "/console/api/jobs?state=dead"
  console_time "$run" state_processing "$n" "/console/api/jobs?state=processing"
  console_time "$run" state_done "$n" "/console/api/jobs?state=done"
  console_time "$run" all_states "$n" "/console/api/jobs"
  console_time "$run" created_last_hour "$n" "/console/api/jobs?created_after_ms=$((now - day / 24))"
  console_time "$run" created_old_day "$n" \
    "/console/api/jobs?created_after_ms=$((now - 28 * day))&created_before_ms=$((now - 27 * day))"
  console_time "$run" created_old_day_topic "$n" \
    "/console/api/jobs?topic=topic.3&created_after_ms=$((now - 28 * day))&created_before_ms=$((now - 27 * day))"
  # A keyed row (g % 10 = 5) of topic.(g % 76) in the middle of the history.
  key=$((rows / 2 + 5 - rows / 2 % 10))
  console_time "$run" key_with_topic "$n" "/console/api/jobs?topic=topic.$((key % 76))&key=k$key"
  # Key search without a topic: measured through the API once it takes one; until
  # then (400: "key: needs topic") the statement the store runs for it, through psql.
  key_path="/console/api/jobs?key=k$key"
  if [ "$(curl -s -o /dev/null -w '%{http_code}' -b "$work/console.cookies" \
          "http://$BROOQ_BENCH_METRICS$key_path")" = 200 ]; then
    console_time "$run" key_without_topic "$n" "$key_path"
  else
    console_key_sql "$run" "$n" "k$key"
  fi
  console_table >"$out_dir/console.md"
  gw_start "$pool"
}

# console_key_sql RUN N KEY: the store's list statement for a key without a topic
# (brq_list_key with $1 NULL), N times through psql, as console_read_key_without_topic
# (variant sql: the database's part only).
console_key_sql() {
  local run=$1 n=$2 key=$3 i
  {
    echo "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET jit = off;"
    echo "PREPARE k(text, text[], int8, int8, text, int8, int4) AS $(console_key_stmt);"
    echo '\timing on'
    for i in $(seq "$n"); do
      echo "EXECUTE k(NULL, '{pending,processing,failed,done,dead,canceled}', NULL, NULL, '$key', 9223372036854775807, 51);"
    done
  } | psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d brooq_bench -o /dev/null 2>&1 |
    sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | awk '{ print $1 / 1000 }' | console_pcts "$run" key_without_topic sql
}
# The text of brq_list_key (gateway/store/store_sql_jobs.c), columns trimmed to id.
console_key_stmt() {
  cat <<'EOF'
SELECT id FROM (WITH RECURSIVE t(topic) AS (
  (SELECT topic::text FROM job WHERE idempotency_key IS NOT NULL AND topic >= coalesce($1::text, '')
   ORDER BY topic LIMIT 1)
  UNION ALL SELECT (SELECT j.topic::text FROM job j WHERE j.idempotency_key IS NOT NULL
   AND j.topic > t.topic AND $1::text IS NULL ORDER BY j.topic LIMIT 1) FROM t WHERE t.topic IS NOT NULL)
 SELECT j.* FROM t CROSS JOIN LATERAL (SELECT * FROM job WHERE topic = t.topic AND idempotency_key = $5::text
  AND state = ANY($2::text[]) AND id <= $6::int8) j
 WHERE t.topic IS NOT NULL AND ($1::text IS NULL OR t.topic = $1::text)) x ORDER BY id DESC LIMIT $7
EOF
}

# console_table: the console reads of results.jsonl as a markdown table (median over runs).
console_table() {
  echo "Console reads, $console_rows rows (tests/bench/run.sh --console), $console_n requests each;"
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; ms."
  echo
  echo "| read | p50 | p99 | max | p99 <= 50 ms |"
  echo "|---|---:|---:|---:|---|"
  grep '"scenario":"console_read_' "$results" | sed 's/.*"scenario":"console_read_\([^"]*\)","variant":"\([^"]*\)","metric":"\([^"]*\)".*"value":\([0-9.]*\).*/\1 \2 \3 \4/' |
    awk '{ k = $1 ($2 == "sql" ? " (SQL only)" : ""); if (!(k in seen)) { seen[k] = 1; order[++n] = k }
           v[k, $3] = $4 }
         END { for (i = 1; i <= n; i++) { k = order[i]
                 printf "| %s | %.1f | %.1f | %.1f | %s |\n", k, v[k, "p50"], v[k, "p99"], v[k, "max"],
                   (v[k, "p99"] <= 50 ? "yes" : "**no**") } }'
}

# want GROUP: whether --only (if given) lists GROUP.
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

case $mode in
full | smoke)
  for run in $(seq "$runs"); do
    if want enqueue; then
    echo "== run $run/$runs: enqueue"
    pair "$run" enqueue --producers 1 --batch 1 --seconds "$sec"
    pair "$run" enqueue --producers 16 --batch 1 --seconds "$sec"
    pair "$run" enqueue --producers 1 --batch 100 --seconds "$sec"
    pair "$run" enqueue --producers 8 --batch 100 --seconds "$sec"
    fi
    if want drain; then
    echo "== run $run/$runs: drain"
    # The minimal-SQL comparator (issue 14), in the same window as the drains.
    b min-drain --run "$run" --jobs "$jobs" --procs 8 --threads 32
    # shellcheck disable=SC2086
    pair "$run" drain --jobs "$jobs" $c8
    # shellcheck disable=SC2086
    pair "$run" drain --jobs "$jobs" $c32
    # The opt-in mode that deletes done jobs (discard_done, SPEC invariant 17), on a
    # gateway configured for it, benchmarked apart: it is not the default.
    gw_start "$pool" bench.discard:discard_done=true
    # shellcheck disable=SC2086
    pair "$run" drain --jobs "$jobs" $c32 --discard
    gw_start "$pool"
    fi
    if want drain-gw; then
    # The gateway's two drains alone (tests/bench/side-by-side.sh: beside graphile-worker).
    echo "== run $run/$runs: drain (gateway only)"
    # shellcheck disable=SC2086
    [ "$warm" = 0 ] || b drain --run "$run" --jobs "$jobs" $c32 --label drain_warmup
    # shellcheck disable=SC2086
    b drain --run "$run" --jobs "$jobs" $c32
    # shellcheck disable=SC2086
    b drain --run "$run" --jobs "$jobs" $c8
    fi
    if want latency; then
    echo "== run $run/$runs: latency"
    # shellcheck disable=SC2086
    b latency --run "$run" --rate 200 --seconds "$lat_sec" $c8
    fi
    if want ping; then
    echo "== run $run/$runs: ping"
    pair "$run" ping --producers 1 --seconds "$ping_sec"
    pair "$run" ping --producers 16 --seconds "$ping_sec"
    b socket-ping --run "$run" --producers 1 --seconds "$ping_sec"
    b socket-ping --run "$run" --producers 16 --seconds "$ping_sec"
    fi
    if want console; then
    echo "== run $run/$runs: console overview with $console_jobs jobs"
    console_overview "$run" "$console_jobs"
    if [ "$mode" = smoke ]; then
      echo "== run $run/$runs: console reads with 20000 jobs"
      console_reads "$run" 20000 3
      pg "TRUNCATE job; DELETE FROM topic_policy"
    fi
    fi
    if [ "$mode" = smoke ] && want soak; then
    # The soak's client (issue 30.2) for 3 s, so that --soak cannot rot unseen: it fails
    # on any refused enqueue and on a job lost or doubled.
    echo "== run $run/$runs: soak, 3 s at 300 jobs/s"
    b soak --seconds 3 --rate 300 --producers 2 --batch 5 --procs 1 --threads 4 --interval 1 \
      --csv "$out_dir/soak_smoke.csv"
    fi
    if want memory; then
    # Memory: what the gateway holds after the scenarios above, then 1,000 parked
    # long-polls on a fresh gateway.
    echo "== run $run/$runs: memory, long-polls"
    b rss --run "$run" --gw-pid "$gw_pid"
    gw_start "$pool"
    b longpoll --run "$run" --polls "$polls" --gw-pid "$gw_pid"
    fi
  done
  ;;
growth)
  if want terminal; then
  echo "== growth: drain 100k at concurrency 32 with 0, 1M, 5M terminal rows"
  for m in 0 1000000 5000000; do
    [ "$m" -gt 0 ] && "$bench" terminal --terminal "$m" >>"$out_dir/bench.log" 2>&1
    for run in $(seq "$runs"); do
      # 0: really none (the other scenarios start from 10,000 terminal rows).
      # shellcheck disable=SC2086
      BROOQ_BENCH_EMPTY_TABLE=$([ "$m" -eq 0 ] && echo 1) \
        pair "$run" drain --jobs 100000 $c32 --terminal "$m" --label "drain_c32_terminal_$m"
    done
  done
  fi
  if want ready; then
  echo "== growth: claim latency with 10k and 1M ready jobs (ours, or another topic's)"
  for run in $(seq "$runs"); do
    b claim-ready --run "$run" --ready 10000
    b claim-ready --run "$run" --ready 1000000
    b claim-ready --run "$run" --ready 100000 --cross
    b claim-ready --run "$run" --ready 1000000 --cross
  done
  fi
  if want longpoll; then
  echo "== growth: 1,000 parked long-polls while another topic has 100k ready jobs"
  b longpoll --run 1 --polls 1000 --ready 100000 --gw-pid "$gw_pid"
  fi
  if want xmin; then
  echo "== growth: a transaction holding back vacuum during a 20k drain"
  for run in $(seq "$runs"); do
    # shellcheck disable=SC2086
    pair "$run" drain --jobs 20000 $c32 --label drain_c32_20k
    # shellcheck disable=SC2086
    pair "$run" drain --jobs 20000 $c32 --hold-xmin --label drain_c32_20k_xmin_held
  done
  fi
  if want big; then growth_big "$runs"; fi
  ;;
soak)
  soak_run
  ;;
gateways)
  echo "== gateways: drain c32 through one gateway, then two sharing the database"
  gateways_run "$runs"
  ;;
standby)
  echo "== standby: drain c32 and enqueue->start, without and with a synchronous standby"
  standby_run "$runs"
  ;;
console)
  for run in $(seq "$runs"); do
    echo "== run $run/$runs: console reads with $console_rows jobs, $console_n requests each"
    console_reads "$run" "$console_rows" "$console_n"
  done
  cat "$out_dir/console.md"
  ;;
levers)
  echo "== levers: the raw claim loop sent differently (c32, 100k jobs)"
  for run in $(seq "$runs"); do
    # shellcheck disable=SC2086
    pair "$run" drain --jobs 100000 $c32
    for lever in literal generic pipeline pipeline+generic; do
      # shellcheck disable=SC2086
      b raw-drain --run "$run" --jobs 100000 $c32 --lever "$lever" --label "drain_c32_lever_$lever"
    done
  done
  echo "== levers: gateway pool size (enqueue 1 job/RPC x 16, drain c32)"
  for p in 2 4 8 16; do
    gw_start "$p"
    for run in $(seq "$runs"); do
      b enqueue --run "$run" --producers 16 --seconds 5 --label "enqueue_b1_p16_pool$p"
      # shellcheck disable=SC2086
      b drain --run "$run" --jobs 100000 $c32 --label "drain_c32_pool$p"
    done
  done
  gw_start "$pool"
  echo "== levers: enqueue on an empty table (plans made while it is small), and without the join to job"
  for run in $(seq "$runs"); do
    BROOQ_BENCH_EMPTY_TABLE=1 pair "$run" enqueue --producers 16 --seconds 5 --label enqueue_b1_p16_empty_table
    BROOQ_BENCH_EMPTY_TABLE=1 b raw-enqueue --run "$run" --producers 16 --seconds 5 --lever enqueue-nojoin \
      --label enqueue_b1_p16_empty_table_nojoin
    b raw-enqueue --run "$run" --producers 16 --seconds 5 --lever enqueue-nojoin --label enqueue_b1_p16_nojoin
  done
  ;;
esac
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# The machine and settings, for the summary.
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/"//g')
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
pgv=$(pg 'SHOW server_version')
settings=$(pg "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ' ' ORDER BY name) FROM pg_settings
  WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'shared_buffers',
                 'max_wal_size', 'commit_delay', 'max_connections')")
BROOQ_BENCH_META=$(printf '{"mode":"%s","runs":%d,"nproc":%d,"cpu":"%s","memory":"%s","kernel":"%s","postgresql":"%s","settings":"%s","gateway_pool_size":%d,"load_start":"%s","load_end":"%s","date":"%s"}' \
  "$mode" "$runs" "$(nproc)" "$cpu" "$mem" "$(uname -r)" "$pgv" "$settings" "$pool" "$load_start" "$load_end" "$(date -u +%FT%TZ)")
export BROOQ_BENCH_META

{
  echo "brooq benchmark ($mode, $runs run(s), median (min–max)); $(nproc) cores ($cpu), $mem;"
  echo "PostgreSQL $pgv: $settings; gateway pool $pool; load average $load_start at start, $load_end at end."
  echo
  "$bench" report "$results" --json "$out_dir/summary.json"
} >"$out_dir/table.md"
cat "$out_dir/table.md"
echo
echo "results: $out_dir (results.jsonl, summary.json, table.md, gateway.log, bench.log)"
