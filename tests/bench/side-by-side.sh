#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# brooq's drain beside graphile-worker's, in one window (issue 30.5): rounds alternate
# the two (graphile.sh --runs 1, then run.sh --only drain-gw --runs 1, the order
# swapped every other round), each in a fresh durable cluster, so both see the same
# machine. With --contend, another process keeps one core half busy the whole time
# (tests/bench/burn.py), as a shared machine's other work would. With --warm, each
# queue's cluster drains once untimed before its timed drains (run.sh --warm,
# graphile.sh --warm): a cluster's first drain is dearer than the next ones, and a
# queue in service runs on a cluster that has drained before.
#
#   tests/bench/side-by-side.sh [--rounds N] [--jobs N] [--contend] [--warm] [--bin-dir DIR] [--out-dir DIR]
#
# Defaults: 3 rounds of 100,000 jobs, concurrency 32 and 8. Printed, per concurrency:
# each round's jobs/s of both and their ratio, the median ratio, the CPU other
# processes took (% of a core: the burner shows as ~50), and the wake-ups (voluntary
# context switches) per job of each process kind and the preemptions per job of all
# of them: what a job costs in hand-offs, the thing contention makes expensive.
# DIR/side-by-side.md holds the table; DIR/round-N/ each round's raw results.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=3 jobs=100000 contend=0 warm='' bin_dir='' out_dir=''
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --contend) contend=1 ;;
    --warm) warm=--warm ;;
    --bin-dir) bin_dir=$2; shift ;;
    --out-dir) out_dir=$2; shift ;;
    *) echo "usage: $0 [--rounds N] [--jobs N] [--contend] [--warm] [--bin-dir DIR] [--out-dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out_dir" ] || out_dir=/tmp/brooq-side-by-side-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out_dir"
if [ -z "$bin_dir" ]; then
  # Built once here, so that no round pays (or disturbs another with) a build.
  "$root/deploy/deps.sh"
  cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build-bench" -j "$(nproc)" --target brooq-gateway brooqctl brooq-bench brooq-bench-worker >/dev/null
  bin_dir="$root/build-bench/bin"
fi

burn_pid=''
stop_burn() {
  if [ -n "$burn_pid" ]; then
    kill "$burn_pid" 2>/dev/null || true # our own burner, by its pid
    wait "$burn_pid" 2>/dev/null || true
    burn_pid=''
  fi
}
trap stop_burn EXIT
trap 'exit 130' INT TERM
if [ "$contend" = 1 ]; then
  python3 "$root/tests/bench/burn.py" --duty 0.5 &
  burn_pid=$!
  echo "== contention: burn.py (pid $burn_pid) keeps core $(($(nproc) - 1)) half busy"
fi

graphile() { "$root/tests/bench/graphile.sh" --runs 1 --jobs "$jobs" ${warm:+"$warm"} --out-dir "$out_dir/round-$1" | sed 's/^/   /'; }
brooq() {
  "$root/tests/bench/run.sh" --only drain-gw --runs 1 ${warm:+"$warm"} --bin-dir "$bin_dir" --out-dir "$out_dir/round-$1/brooq" |
    grep -E '^==' | sed 's/^/   /'
}
for r in $(seq "$rounds"); do
  echo "== round $r/$rounds"
  if [ $((r % 2)) -eq 1 ]; then graphile "$r"; brooq "$r"; else brooq "$r"; graphile "$r"; fi
done
stop_burn

python3 - "$out_dir" "$rounds" "$contend" "$warm" <<'EOF' | tee "$out_dir/side-by-side.md"
import json, statistics, sys
out, rounds, contend, warm = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "--warm"
def med(v): return statistics.median(v) if v else float("nan")
rows = {32: [], 8: []}
for r in range(1, rounds + 1):
    g = {}
    for line in open(f"{out}/round-{r}/graphile.jsonl"):
        j = json.loads(line); g[j["concurrency"]] = j
    b = {}
    for line in open(f"{out}/round-{r}/brooq/results.jsonl"):
        j = json.loads(line)
        if j["variant"] == "gateway": b.setdefault(j["scenario"], {})[j["metric"]] = j["value"]
    for c in (32, 8):
        gb, bb = g[c], b[f"drain_c{c}"]
        rows[c].append((r, gb, bb, bb["rate"] / gb["jobs_per_s"]))
print(f"{'With one core kept half busy (burn.py). ' if contend else ''}"
      f"{'Warm: each cluster drained once, untimed, before. ' if warm else 'Cold: each cluster fresh. '}{rounds} rounds of {json.dumps(rows[32][0][1]['jobs'])} jobs; brooq ÷ graphile-worker per round\n")
print("| concurrency | graphile-worker jobs/s, median (min–max) | brooq jobs/s | ratio per round | median ratio |")
print("|---|---:|---:|---|---:|")
for c in (32, 8):
    g = [x[1]["jobs_per_s"] for x in rows[c]]; b = [x[2]["rate"] for x in rows[c]]; q = [x[3] for x in rows[c]]
    print(f"| {c} | {med(g):,.0f} ({min(g):,.0f}–{max(g):,.0f}) | {med(b):,.0f} ({min(b):,.0f}–{max(b):,.0f}) | "
          + ", ".join(f"{x:.2f}" for x in q) + f" | {med(q):.2f} |")
print("\nPer job, medians over the rounds (wake-ups: voluntary context switches; preemptions: involuntary, of every process listed)\n")
print("| concurrency | queue | PostgreSQL CPU µs | queue's own CPU µs | wake-ups PostgreSQL | wake-ups queue (gateway + workers / Node) | preemptions | others, % of a core |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for c in (32, 8):
    gr = [x[1] for x in rows[c]]; br = [x[2] for x in rows[c]]
    n = lambda j: j["jobs"]
    print(f"| {c} | graphile-worker | {med([j['cpu_pg_s'] * 1e6 / n(j) for j in gr]):.1f} "
          f"| {med([(j['cpu_node_user_s'] + j['cpu_node_sys_s']) * 1e6 / n(j) for j in gr]):.1f} "
          f"| {med([j.get('wakeups_pg', float('nan')) for j in gr]):.3f} | {med([j.get('wakeups_node', float('nan')) for j in gr]):.3f} "
          f"| {med([j.get('preemptions', float('nan')) for j in gr]):.3f} | {med([j['cpu_other_pct'] for j in gr]):.0f} |")
    print(f"| {c} | brooq | {med([j['cpu_postgres'] for j in br]):.1f} | {med([j['cpu_gateway_clients'] for j in br]):.1f} "
          f"| {med([j['wakeups_postgres'] for j in br]):.3f} "
          f"| {med([j['wakeups_gateway'] for j in br]):.3f} + {med([j['wakeups_clients'] for j in br]):.3f} "
          f"| {med([j['preemptions'] for j in br]):.3f} | {med([j['cpu_other_processes'] for j in br]):.0f} |")
print(f"\nRaw results: {out}/round-*/")
EOF
