#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python rows of the benchmark (issue 29): brooq's Python worker, Celery 5 + Redis and
# RQ + Redis, no-op drain and enqueue->start latency at concurrency 8 and 32 (and the C
# worker's drain on the same gateway, in the same window), on a private
# PostgreSQL + gateway (Release build in build-bench/, as tests/bench/run.sh) and a private
# redis-server on a Unix socket.
#   tests/bench/python/run_python.sh [--smoke]      (--smoke: 300 jobs, 20 probes, c8 only)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/bench/python
jobs=20000 lat=200 concs="8 32"
[ "${1:-}" = --smoke ] && { jobs=300 lat=20 concs=8; }
bin=${BROOQ_BENCH_BIN:-$root/build-bench/bin}
lib=${BROOQ_LIB:-$(ls "$bin"/../client/libbrooq-client.so.1 2>/dev/null || true)}
py=/usr/bin/python3
work=$(mktemp -d /tmp/brooq-pybench.XXXXXX)
chmod 755 "$work" # PostgreSQL runs as its own user and keeps its cluster under it
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  [ -n "${pg_started:-}" ] && brq_pg_stop "$work/pg"; cat "$work/gw.log" 2>/dev/null | tail -5; rm -rf "$work"; }
trap cleanup EXIT
. "$root/tests/pg.sh"
if [ -z "${BROOQ_TEST_PGHOST:-}" ]; then mkdir "$work/pg"; brq_pg_start "$work/pg" >/dev/null; pg_started=1
  brq_pg_template "$bin/brooqctl" >/dev/null; fi
redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)
for k in $(seq 100); do [ -S "$work/redis.sock" ] && break; sleep 0.05; done
redis="unix://$work/redis.sock"
run_gw() { # a fresh database and gateway for one brooq run
  db=pyb_$RANDOM$RANDOM
  psql -h "$BROOQ_TEST_PGHOST" -U postgres -qc "CREATE DATABASE $db TEMPLATE brooq_template" >/dev/null
  for t in token admin-token; do
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/$t"; chmod 600 "$work/$t"
  done
  BROOQ_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" BROOQ_LISTEN="ipc://$work/gw.sock" \
    BROOQ_WORKER_TOKEN_FILES="$work/token" BROOQ_ADMIN_TOKEN_FILES="$work/admin-token" BROOQ_HTTP_LISTEN=off \
    BROOQ_LOG_LEVEL=warn "$bin/brooq-gateway" 2>>"$work/gw.log" &
  gw=$!
  BROOQ_LIB=$lib PYTHONPATH=$root/client/python $py -c '
import brooq, sys, time
for _ in range(400):
    try:
        brooq.Client(sys.argv[1], sys.argv[2], timeout=1).ping(); break
    except brooq.Error:
        time.sleep(0.05)
else:
    sys.exit("the gateway does not answer")' "ipc://$work/gw.sock" "$work/token"
}
for c in $concs; do
  run_gw
  BROOQ_LIB=$lib PYTHONPATH=$root/client/python $py "$here/drain.py" brooq --url "ipc://$work/gw.sock" \
    --token-file "$work/token" --jobs "$jobs" --concurrency "$c" --latency "$lat"
  # The C worker in the same window, on the same gateway and database: one process of c
  # handler threads, as the Python worker (brooq-bench's drain scenario, its own jobs).
  BROOQ_BENCH_URL="ipc://$work/gw.sock" BROOQ_BENCH_TOKEN_FILE="$work/token" \
    BROOQ_BENCH_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" BROOQ_BENCH_WORKER="$bin/brooq-bench-worker" \
    "$bin/brooq-bench" drain --jobs "$jobs" --procs 1 --threads "$c" --out "$work/c.jsonl" >/dev/null
  $py -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("metric") == "rate":
        print(json.dumps({"system": "brooq-c", "scenario": "drain", "jobs": int(sys.argv[2]),
                          "concurrency": int(sys.argv[3]), "jobs_per_s": round(r["value"], 1)}))' \
    "$work/c.jsonl" "$jobs" "$c"
  rm -f "$work/c.jsonl"
  kill "$gw"; wait "$gw" || true; rm -f "$work/gw.sock"
  $py "$here/drain.py" celery --redis "$redis" --jobs "$jobs" --concurrency "$c" --latency "$lat"
  $py "$here/drain.py" rq --redis "$redis" --jobs "$jobs" --concurrency "$c" --latency "$lat"
done
