#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# graphile-worker's drain rate on this machine, to put beside brooq's drain_c8 and
# drain_c32 (tests/bench/run.sh): the same shape (N ready no-op jobs, vacuumed,
# analyzed and checkpointed, then drained at concurrency 32 and 8) on the same kind of
# private durable PostgreSQL 15, over its Unix socket.
#
#   tests/bench/graphile.sh [--jobs N] [--runs N] [--warm] [--out-dir DIR]
#
# Defaults: 100,000 jobs, 3 runs. Each drain gets a fresh cluster (no bloat or cache
# carried from the previous one); with --warm, the cluster first drains the same jobs
# once untimed, so that the timed drain meets a cluster that has drained before (as
# run.sh --warm does for brooq). Every line goes to DIR/graphile.jsonl (appended);
# the table (median, min–max) is printed. graphile-worker, pinned in
# tests/bench/graphile/package.json, is installed into .deps/graphile (git-ignored), so
# the work tree stays clean; drain.js says what it measures.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=100000 runs=3 warm=0 out_dir=''
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift ;;
    --runs) runs=$2; shift ;;
    --warm) warm=1 ;;
    --out-dir) out_dir=$2; shift ;;
    *) echo "usage: $0 [--jobs N] [--runs N] [--warm] [--out-dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out_dir" ] || out_dir=/tmp/brooq-graphile-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out_dir"
results="$out_dir/graphile.jsonl"

# Node.js and PostgreSQL from Debian only when missing (the machine image has both).
pkgs=()
command -v node >/dev/null || pkgs+=(nodejs)
command -v npm >/dev/null || pkgs+=(npm)
command -v psql >/dev/null || pkgs+=(postgresql-client-15)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || pkgs+=(postgresql-15)
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "== installing ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

# graphile-worker into .deps/graphile; skipped when the pinned version is there.
# (0.18.0 declares node >=22.18 for TypeScript task files; this script's JavaScript
# task runs on the machine's Node 20, so npm's EBADENGINE warning is expected.)
deps="$root/.deps/graphile"
pkg="$root/tests/bench/graphile/package.json"
want=$(node -p 'require(process.argv[1]).dependencies["graphile-worker"]' "$pkg")
have=$(node -p 'require(process.argv[1]).version' "$deps/node_modules/graphile-worker/package.json" 2>/dev/null || true)
if [ "$have" != "$want" ] || ! cmp -s "$pkg" "$deps/package.json"; then
  echo "== npm install graphile-worker@$want into $deps"
  mkdir -p "$deps"
  cp "$pkg" "$deps/package.json"
  (cd "$deps" && npm install --no-audit --no-fund --loglevel=error)
fi

# shellcheck source=tests/pg.sh
. "$root/tests/pg.sh"
work='' # the current run's cluster dir; lines: this invocation's results
lines=$(mktemp /tmp/brooq-graphile-lines.XXXXXX)
cleanup() {
  if [ -n "$work" ]; then
    brq_pg_stop "$work" # pg_ctl stop on our own data dir: only the server we started
    rm -rf "$work"
  fi
  rm -f "$lines"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_drain C: drain.js's one drain at concurrency C in the current cluster; its JSON line.
run_drain() {
  PGUSER=postgres DATABASE_URL="postgres:///graphile_bench?host=$BROOQ_TEST_PGHOST" \
    PG_PID=$(head -n 1 "$work/data/postmaster.pid") CLK_TCK=$(getconf CLK_TCK) GRAPHILE_DEPS="$deps" \
    node "$root/tests/bench/graphile/drain.js" --jobs "$jobs" --concurrency "$1"
}

# drain C RUN: one drain at concurrency C in a fresh durable cluster.
drain() {
  local c=$1 run=$2 line pgv
  work=$(mktemp -d /tmp/brooq-graphile.XXXXXX)
  brq_pg_start "$work" durable
  psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -c 'CREATE DATABASE graphile_bench' >/dev/null
  pgv=$(psql -X -qAt -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -c 'SHOW server_version')
  # PG_PID: drain.js reads the cluster's CPU itself, around the timed window only
  # (a before/after here would also count migrating and enqueueing).
  # The untimed drain of --warm leaves the table empty (graphile-worker deletes what ran).
  [ "$warm" = 0 ] || run_drain "$c" >/dev/null
  line=$(run_drain "$c")
  brq_pg_stop "$work"
  rm -rf "$work"
  work=''
  line="${line%\}},\"run\":$run,\"postgresql\":\"$pgv\",\"nproc\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\"}"
  echo "$line" | tee -a "$results" >>"$lines"
  echo "   c$c run $run: $(echo "$line" | grep -o '"jobs_per_s":[0-9]*' | cut -d: -f2) jobs/s"
}

for run in $(seq "$runs"); do
  for c in 32 8; do
    echo "== run $run/$runs: graphile-worker drain $jobs jobs, concurrency $c"
    drain "$c" "$run"
  done
done

# The table: per concurrency, median (min–max) of jobs/s, and the medians of
# PostgreSQL's and Node's CPU µs per job, and of others' CPU (% of a core) meanwhile.
echo
echo "graphile-worker $want, $jobs jobs, $runs run(s), $(nproc) cores; median (min–max)"
awk '
  function get(k,   m) { return match($0, "\"" k "\":[-0-9.]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : 0 }
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    c = get("concurrency"); n = ++cnt[c]; j = get("jobs")
    rate[c, n] = get("jobs_per_s")
    pg[c, n] = get("cpu_pg_s") * 1e6 / j
    nd[c, n] = (get("cpu_node_user_s") + get("cpu_node_sys_s")) * 1e6 / j
    ot[c, n] = get("cpu_other_pct")
  }
  END {
    printf "| concurrency | jobs/s | PostgreSQL CPU µs/job | node CPU µs/job | others, %% of a core |\n|---|---|---|---|---|\n"
    for (k = 32; k >= 8; k -= 24) {
      n = cnt[k]; if (!n) continue
      lo = hi = rate[k, 1]
      for (i = 1; i <= n; i++) {
        r[i] = rate[k, i]; p[i] = pg[k, i]; d[i] = nd[k, i]; o[i] = ot[k, i]
        if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i]
      }
      printf "| %d | %d (%d–%d) | %.1f | %.1f | %d |\n", k, median(r, n), lo, hi, median(p, n), median(d, n), median(o, n)
    }
  }' "$lines"
echo
echo "results: $results"
