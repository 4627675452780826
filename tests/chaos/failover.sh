#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PostgreSQL failover (issue 11.4): a primary and a streaming standby on this machine
# (initdb, then pg_basebackup -R; Unix sockets only), synchronous_commit=remote_apply with
# the standby in synchronous_standby_names. One gateway whose DSN lists both hosts with
# target_session_attrs=read-write; a producer enqueues through it all along, recording
# every acknowledged id, and workers claim and settle. During the drain the standby's
# WAL receiver is stalled for a second (replication falls behind, as over a slow link),
# the primary is stopped with `pg_ctl -m immediate` and the standby promoted
# (`pg_ctl promote`). The gateway must find the new primary by itself, and every
# acknowledged job must be on it and end done; check.sql's other checks (overlapping
# runs, outcomes written twice) run too, each shown able to fail.
#
#   tests/chaos/failover.sh            the test (about 40 s; tests/run.sh runs it)
#   tests/chaos/failover.sh --async    the same with asynchronous replication: a
#                                      deliberately broken variant that must FAIL
#                                      (jobs acknowledged during the stall are lost)
# Options: --seconds N (drain length, default 12), --rate R (jobs/s, default 100),
#   --detect-ms MS (from the primary's death to the promote, default 1000),
#   --no-stall (replication is not held back before the primary dies),
#   --freeze (the primary is frozen with SIGSTOP instead of stopped: it still accepts
#   connections at the socket but never answers, like a hung host),
#   --bin-dir DIR (programs built already; default: build them in build-chaos/),
#   --out-dir DIR (keep the logs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

seconds=12 rate=100 detect_ms=1000 stall=true async=false freeze=false bin_dir='' out_dir=''
usage() {
  sed -n '/^#   tests/,/^set -e/p' "$0" | sed '$d' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift ;;
    --rate) rate=$2; shift ;;
    --detect-ms) detect_ms=$2; shift ;;
    --no-stall) stall=false ;;
    --async) async=true ;;
    --freeze) freeze=true ;;
    --bin-dir) bin_dir=$2; shift ;;
    --out-dir) out_dir=$2; shift ;;
    *) usage ;;
  esac
  shift
done
if [ -z "$bin_dir" ]; then
  "$root/deploy/deps.sh" >/dev/null
  cmake -S "$root" -B "$root/build-chaos" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$root/build-chaos" -j "$(nproc)" --target brooq-gateway brooqctl brooq-chaos >/dev/null
  bin_dir="$root/build-chaos/bin"
fi

# shellcheck source=tests/pg.sh
. "$root/tests/pg.sh"
work=$(mktemp -d /tmp/brooq-failover.XXXXXX)
chmod 755 "$work"
lease=5 wk_extra=()
# shellcheck source=tests/chaos/lib.sh
. "$here/lib.sh"
p1=$work/p1 p2=$work/p2 prod_pid='' walrcv='' frozen=()
cleanup() {
  local rc=$? p
  [ -n "$walrcv" ] && kill -CONT "$walrcv" 2>/dev/null
  chaos_kill_all ${prod_pid:+"$prod_pid"}
  for p in "${frozen[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [ -n "$out_dir" ]; then
    mkdir -p "$out_dir"
    cp "$work"/*.log "$work"/*.tsv "$p1/server.log" "$out_dir"/ 2>/dev/null || true
    cp "$p2/server.log" "$out_dir/standby-server.log" 2>/dev/null || true
    chaos_dump "$p2/sock" "$out_dir/db.sql"
  fi
  brq_pg_stop "$p1"
  brq_pg_stop "$p2"
  if [ $rc -ne 0 ] && [ -z "$out_dir" ]; then
    echo "failover: failed; logs kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
q() { # q HOST SQL...: one value
  local h=$1
  shift
  psql -X -q -At -h "$h/sock" -U postgres -d brooq_chaos -v ON_ERROR_STOP=1 "$@"
}

# ---- the primary, the schema and the recorder, then the standby ------------------------
mode=$([ "$async" = true ] && echo asynchronous || echo "synchronous (remote_apply)")
echo "== failover: $mode replication, ${seconds}s drain at $rate jobs/s, stall $stall"
BRQ_PG_OPTS="-c synchronous_commit=remote_apply" brq_pg_start "$p1" durable
psql -X -q -h "$p1/sock" -U postgres -d postgres -c 'CREATE DATABASE brooq_chaos' >/dev/null
BROOQ_DSN="host=$p1/sock user=postgres dbname=brooq_chaos" \
  "$bin_dir/brooqctl" migrate up --dir "$root/migrations" >/dev/null
q "$p1" -f "$here/shadow.sql" >/dev/null
q "$p1" -f "$here/check.sql" >/dev/null
# The standby keeps synchronous_standby_names empty: once promoted it has no standby
# of its own and must not wait for one (what Patroni does without synchronous_mode_strict).
BRQ_PG_OPTS="-c synchronous_commit=remote_apply" brq_pg_standby "$p1" "$p2"
if [ "$async" = false ]; then
  # Only now: with no standby connected, every commit on the primary would wait.
  q "$p1" -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
fi
want=$([ "$async" = true ] && echo async || echo sync)
# Up to 30 s: a standby on a busy machine takes a while to connect.
for _ in $(seq 300); do
  [ "$(q "$p1" -c 'SELECT sync_state FROM pg_stat_replication')" = "$want" ] && break
  sleep 0.1
done
state=$(q "$p1" -c 'SELECT sync_state FROM pg_stat_replication')
[ "$state" = "$want" ] || { echo "failover: the standby is '$state', not $want" >&2; exit 1; }
echo "   primary $p1/sock, standby $p2/sock ($state)"

# ---- one gateway on both hosts, workers, the producer ---------------------------------
# The standby first: before the failover every connection must skip it (read-only),
# after it the old primary is the one that fails.
dsn="host=$p2/sock,$p1/sock user=postgres dbname=brooq_chaos target_session_attrs=read-write"
chaos_tokens
gw_start a
gw_wait a
wk_start a
wk_start a
jobs=$((seconds * rate))
"$bin_dir/brooq-chaos" produce --url "$(gw_url a)" --token-file "$work/worker-token" \
  --ack "$work/acks.log" --jobs "$jobs" --rate "$rate" --batch 10 --seed 1 --fail-pct 10 \
  2>>"$work/producer.log" &
prod_pid=$!

# ---- the failover ------------------------------------------------------------------------
sleep $((seconds / 3))
if [ "$stall" = true ]; then
  walrcv=$(psql -X -At -h "$p2/sock" -U postgres -d postgres -c 'SELECT pid FROM pg_stat_wal_receiver')
  kill -STOP "$walrcv"
  sleep 1
fi
t_kill=$(now_us)
if [ "$freeze" = true ]; then
  # The postmaster and every backend: nothing of the old primary answers again (the
  # trap kills them; continuing them would make two primaries).
  pm=$(head -n 1 "$p1/data/postmaster.pid")
  mapfile -t frozen < <(echo "$pm"; ps -o pid= --ppid "$pm" | tr -d ' ')
  kill -STOP "${frozen[@]}"
else
  brq_pg_stop "$p1" immediate
fi
t_down=$(now_us)
if [ -n "$walrcv" ]; then
  kill -CONT "$walrcv"
  walrcv=''
fi
sleep "$(printf '%d.%03d' $((detect_ms / 1000)) $((detect_ms % 1000)))"
t_promote=$(now_us)
brq_pg_promote "$p2"
t_promoted=$(now_us)
printf 'primary_stop\t%s\t%s\t-\npromote\t%s\t%s\t-\n' "$t_kill" "$t_down" "$t_promote" "$t_promoted" \
  >"$work/faults.tsv"

# The producer ends once every job is acknowledged: only if the gateway reached the new
# primary. A minute after it should have ended, the gateway is taken as stuck.
for _ in $(seq $(((seconds + 60) * 10))); do
  kill -0 "$prod_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$prod_pid" 2>/dev/null; then
  last=$(awk '$1 == "A" { t = $4 } END { print t }' "$work/acks.log")
  echo "failover: FAILED: no acknowledged enqueue for $((($(now_us) - last) / 1000000)) s:" \
    "the gateway did not reach the new primary; its threads are stuck:" >&2
  grep -v 'level=info' "$work/gateway-a.log" | tail -n 5 >&2
  exit 1
fi
wait "$prod_pid" || { echo "failover: the producer failed" >&2; exit 1; }
prod_pid=''
drain_start=$SECONDS
while [ $((SECONDS - drain_start)) -lt 60 ]; do
  [ "$(q "$p2" -c "SELECT count(*) FROM job WHERE state NOT IN ('done', 'dead', 'canceled')")" = 0 ] \
    && break
  sleep 0.5
done
chaos_stop_all

# ---- checks on the new primary -----------------------------------------------------------
chaos_load "$p2/sock"
echo "== checks on the new primary ($jobs jobs)"
chaos_checks "$p2/sock" "$jobs"
# Before: up to the moment the old primary was gone (t_down; a commit it finished while
# stopping is a success before); after: from then on.
figures=$(q "$p2" -F ' ' -c "
  WITH a AS (SELECT DISTINCT ON (seq) seq, id, t_us FROM chaos_ack ORDER BY seq, t_us)
  SELECT 'acknowledged_before_stop=' || (SELECT count(*) FROM a WHERE t_us < $t_down),
         'acknowledged_lost=' || (SELECT count(*) FROM a LEFT JOIN job j ON j.id = a.id
                                   WHERE j.id IS NULL OR j.idempotency_key <> 'k' || a.seq),
         'not_done=' || (SELECT count(*) FROM job WHERE state <> 'done'),
         'enqueue_gap_s=' || round(((SELECT min(t_us) FROM chaos_ack WHERE t_us > $t_down)
                                   - (SELECT max(t_us) FROM chaos_ack WHERE t_us < $t_down)) / 1e6, 2),
         'first_ack_after_promote_s=' || round(((SELECT min(t_us) FROM chaos_ack WHERE t_us > $t_down)
                                   - $t_promoted) / 1e6, 2),
         'claim_gap_s=' || round(((SELECT min(start_us) FROM chaos_run WHERE start_us > $t_down)
                                   - (SELECT max(start_us) FROM chaos_run WHERE start_us < $t_down)) / 1e6, 2),
         'first_claim_after_promote_s=' || round(((SELECT min(start_us) FROM chaos_run
                                   WHERE start_us > $t_down) - $t_promoted) / 1e6, 2),
         'reruns=' || (SELECT count(*) - count(DISTINCT id) FROM chaos_run),
         'completed_twice=' || (SELECT count(*) - count(DISTINCT id) FROM chaos_run WHERE outcome = 'done')")
stall_s=$([ "$stall" = true ] && echo 1 || echo 0)
echo "   primary stopped $(((t_down - t_kill) / 1000)) ms, promote took $(((t_promoted - t_promote) / 1000)) ms" \
  "after ${detect_ms} ms; replication stalled ${stall_s} s before"
echo "   gateway: $(grep -c 'msg=db_connect_failed' "$work/gateway-a.log" || true) failed connection attempts," \
  "$(grep -c 'msg=db_connected' "$work/gateway-a.log") connections made"
echo "failover: $mode jobs=$jobs $figures"
if [ -n "$out_dir" ]; then
  mkdir -p "$out_dir"
  echo "$mode jobs=$jobs $figures" >"$out_dir/summary.txt"
fi
sanitizer=$(chaos_sanitizer_reports)
if [ "$sanitizer" -gt 0 ]; then
  echo "failover: FAILED: $sanitizer sanitizer report(s) in the logs (above)" >&2
  exit 1
fi
if [ "$chaos_blind" -gt 0 ]; then
  echo "failover: FAILED: $chaos_blind check(s) did not fail on their own fault" >&2
  exit 1
fi
if [ "$chaos_failed" -gt 0 ]; then
  echo "failover: FAILED: $chaos_failed check(s) found violations" >&2
  exit 1
fi
echo "failover: passed"
