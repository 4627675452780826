#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The brooq demo, from a fresh Debian 12 machine to processed jobs in one command:
#   deploy/demo.sh          installs what is missing, builds, starts a private
#                           PostgreSQL in .brooq/, migrates, starts the gateway and
#                           the example worker, enqueues jobs, shows their fate
#   deploy/demo.sh down     stops everything it started (the data stays in .brooq/);
#                           PostgreSQL with a fast shutdown, so the next start needs no
#                           crash recovery
#   deploy/demo.sh clean    stops everything and removes .brooq/
# A second `up` reuses the PostgreSQL, gateway and worker that are running (rebuilt
# programs take effect after `down`) and enqueues a fresh round of jobs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
state="$root/.brooq"
# Its own build directory: tests/run.sh's build/ keeps its tests.
bin="$root/build-demo/bin"
# shellcheck source=tests/pg.sh
. tests/pg.sh

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pid() { # stop_pid PIDFILE NAME
  if alive "$1"; then
    kill -TERM "$(cat "$1")"
    for _ in $(seq 50); do alive "$1" || break; sleep 0.2; done
    alive "$1" && kill -KILL "$(cat "$1")"
    echo "stopped $2"
  fi
  rm -f "$1"
}

down() {
  stop_pid "$state/worker.pid" "example worker"
  stop_pid "$state/gateway.pid" "gateway"
  if [ -f "$state/pg/data/postmaster.pid" ]; then
    brq_pg_stop "$state/pg" fast
    echo "stopped PostgreSQL"
  fi
}

case "${1:-up}" in
  down) down; exit 0 ;;
  clean) down; rm -rf "$state"; echo "removed $state"; exit 0 ;;
  up) ;;
  *) echo "usage: deploy/demo.sh [up|down|clean]" >&2; exit 2 ;;
esac

echo "== packages"
deploy/deps.sh
echo "== build"
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBROOQ_TESTS=OFF >/dev/null
cmake --build build-demo -j "$(nproc)" >/dev/null
mkdir -p "$state"
chmod 0755 "$state" # the postgres user needs to reach its socket directory below

echo "== PostgreSQL (private cluster in $state/pg)"
if [ -f "$state/pg/data/postmaster.pid" ] && pg_isready -q -h "$state/pg/sock"; then
  echo "already running"
else
  if [ -d "$state/pg/data" ]; then
    # A stopped cluster from an earlier run: start it again, data kept.
    brq_pg_as_owner "$(brq_pg_bindir)/pg_ctl" -D "$state/pg/data" -l "$state/pg/server.log" -w start \
      -o "-c listen_addresses='' -c unix_socket_directories='$state/pg/sock'" >/dev/null
  else
    brq_pg_start "$state/pg" durable
  fi
fi
pghost="$state/pg/sock"
psql -X -q -h "$pghost" -U postgres -d postgres -tc "SELECT 1 FROM pg_database WHERE datname = 'brooq'" \
  | grep -q 1 || psql -X -q -h "$pghost" -U postgres -d postgres -c "CREATE DATABASE brooq"
umask 077
echo "host=$pghost user=postgres dbname=brooq" >"$state/dsn"
echo "== migrations"
BROOQ_DSN_FILE="$state/dsn" "$bin/brooqctl" migrate up --dir "$root/migrations"

echo "== tokens (files in $state, mode 0600; never on a command line)"
for role in worker admin; do
  [ -s "$state/$role-token" ] || od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$state/$role-token"
done

cat >"$state/gateway.env" <<ENV
BROOQ_DSN_FILE=$state/dsn
BROOQ_LISTEN=ipc://$state/gateway.sock
BROOQ_WORKER_TOKEN_FILES=$state/worker-token
BROOQ_ADMIN_TOKEN_FILES=$state/admin-token
BROOQ_HTTP_LISTEN=127.0.0.1:8090
BROOQ_LEASE=6s
# Short backoff for demo.flaky, so its retries show within seconds.
BROOQ_TOPIC_OVERRIDES=demo.flaky:backoff_base=300ms,backoff_max=2s
ENV

export BROOQ_URL="ipc://$state/gateway.sock"
echo "== gateway"
if alive "$state/gateway.pid" && BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" ping >/dev/null 2>&1; then
  echo "already running (pid $(cat "$state/gateway.pid")): reused"
else
  stop_pid "$state/gateway.pid" "a gateway that did not answer"
  nohup "$bin/brooq-gateway" --env-file "$state/gateway.env" >>"$state/gateway.log" 2>&1 &
  echo $! >"$state/gateway.pid"
  for _ in $(seq 100); do
    BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" ping >/dev/null 2>&1 && break
    alive "$state/gateway.pid" || { tail "$state/gateway.log"; exit 1; }
    sleep 0.1
  done
fi
BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" ping
echo "metrics: curl -s http://127.0.0.1:8090/metrics   health: curl -s http://127.0.0.1:8090/healthz"

echo "== example worker"
if alive "$state/worker.pid"; then
  echo "already running (pid $(cat "$state/worker.pid")): reused"
else
  BROOQ_TOKEN_FILE="$state/worker-token" nohup "$bin/example-worker" --threads 4 >>"$state/worker.log" 2>&1 &
  echo $! >"$state/worker.pid"
fi

echo "== enqueue"
enqueue() { # enqueue TOPIC JSON -> prints the id
  BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" --json enqueue "$1" "$2" \
    | sed -n 's/.*"id":\([0-9]*\).*/\1/p'
}
ids=()
ids+=("$(enqueue demo.hello '{"greeting":"hello, brooq"}')")
ids+=("$(enqueue demo.flaky '{"note":"fails twice, then succeeds"}')")
chain=$(enqueue demo.chain '{"note":"enqueues a demo.hello when done"}')
ids+=("$chain")
slow=$(enqueue demo.slow '{"note":"runs long; canceled by the operator"}')
ids+=("$slow")
echo "enqueued jobs ${ids[*]}"

# Cancel the slow one once it runs: its handler sees the cancel within lease/3.
for _ in $(seq 50); do
  BROOQ_TOKEN_FILE="$state/admin-token" "$bin/brooqctl" --json job "$slow" | grep -q '"state":"processing"' && break
  sleep 0.1
done
BROOQ_TOKEN_FILE="$state/admin-token" "$bin/brooqctl" cancel "$slow"

echo "== waiting for every job to finish"
terminal() { BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" --json job "$1" | grep -qE '"state":"(done|dead|canceled)"'; }
for _ in $(seq 150); do
  all=1
  for id in "${ids[@]}"; do terminal "$id" || all=0; done
  [ $all = 1 ] && break
  sleep 0.2
done

# The job demo.chain enqueued when it was done, in the same transaction: found by
# its payload, which names the parent (the schema is a public contract).
child=$(psql -X -q -A -t -h "$pghost" -U postgres -d brooq \
  -c "SELECT id FROM job WHERE topic = 'demo.hello' AND payload->>'parent' = '$chain' ORDER BY id LIMIT 1")
if [ -n "$child" ]; then
  ids+=("$child")
  for _ in $(seq 50); do terminal "$child" && break; sleep 0.1; done
fi

echo "== outcome"
for id in "${ids[@]}"; do
  case $id in
    "$chain") echo "--- job $id (demo.chain: done, and enqueued job ${child:-?} in the same transaction)" ;;
    "$child") echo "--- job $id (chained by job $chain)" ;;
    "$slow") echo "--- job $id (demo.slow: canceled by the operator while it ran)" ;;
    *) echo "--- job $id" ;;
  esac
  BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" job "$id"
done
echo "--- all topics"
BROOQ_TOKEN_FILE="$state/worker-token" "$bin/brooqctl" stats
echo
echo "Try it yourself (the admin token may also cancel):"
echo "  export BROOQ_URL=$BROOQ_URL BROOQ_TOKEN_FILE=$state/admin-token"
echo "  $bin/brooqctl stats"
echo "  $bin/brooqctl enqueue demo.hello '{\"greeting\":\"hi\"}'"
echo "worker log: $state/worker.log   gateway log: $state/gateway.log"
echo "stop everything: deploy/demo.sh down    (remove the data too: deploy/demo.sh clean)"
