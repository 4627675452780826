#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A throwaway PostgreSQL 15 cluster on a Unix socket in a temp dir, for tests,
# benchmarks and the demo. Source this file, then:
#   brq_pg_start DIR [durable]   initdb + start; sets BROOQ_TEST_PGHOST=DIR/sock
#   brq_pg_template BROOQCTL     creates database brooq_template, migrated
#   brq_pg_stop DIR [MODE]       stops the server (the caller removes DIR); MODE is
#                                pg_ctl's: immediate (default, a throwaway cluster)
#                                or fast (a cluster that is kept: no crash recovery)
#   brq_pg_restart DIR [MODE]    stops (immediate by default: what a crash leaves) and
#                                starts again with the same settings
#   brq_pg_standby PRIMARY DIR   a streaming standby of the cluster in PRIMARY
#                                (pg_basebackup -R) in DIR, started; sets
#                                BROOQ_TEST_PGHOST=DIR/sock
#   brq_pg_promote DIR           promotes the standby in DIR (waits until it writes)
# BRQ_PG_OPTS, when set, adds server settings ("-c name=value ...") to brq_pg_start and
# brq_pg_standby (e.g. synchronous replication).
# initdb refuses to run as root, so as root the cluster belongs to the
# `postgres` user (created by the server package).

brq_pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] || { echo "pg.sh: no PostgreSQL server installed (run deploy/deps.sh)" >&2; return 1; }
  echo "$d"
}

# Runs a command as the cluster's owner.
brq_pg_as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

brq_pg_start() {
  local dir=$1 mode=${2:-fast} bin
  bin=$(brq_pg_bindir) || return 1
  mkdir -p "$dir/sock"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
  brq_pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  local durability
  if [ "$mode" = durable ]; then
    # What production runs: every commit reaches the disk.
    durability="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
  else
    # Tests need correctness, not crash safety of the test cluster itself.
    durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  brq_pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c max_connections=300 \
        -c shared_buffers=256MB -c log_min_messages=warning $durability ${BRQ_PG_OPTS:-}" >/dev/null \
    || { cat "$dir/server.log" >&2; return 1; }
  export BROOQ_TEST_PGHOST="$dir/sock"
}

brq_pg_restart() {
  local dir=$1 mode=${2:-immediate} bin
  bin=$(brq_pg_bindir) || return 1
  # Without -o, pg_ctl restart starts with the options of the last start (postmaster.opts).
  brq_pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m "$mode" -w -t 60 restart \
    >/dev/null 2>&1 || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

# The standby is durable (it is what survives the primary) and hot (read-only queries).
brq_pg_standby() {
  local primary=$1 dir=$2 bin
  bin=$(brq_pg_bindir) || return 1
  mkdir -p "$dir/sock"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
  brq_pg_as_owner "$bin/pg_basebackup" -h "$primary/sock" -U postgres -D "$dir/data" -R \
    -X stream -c fast >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; return 1; }
  brq_pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir/sock' -c max_connections=300 \
        -c shared_buffers=256MB -c log_min_messages=warning -c hot_standby=on \
        -c fsync=on -c synchronous_commit=on -c full_page_writes=on ${BRQ_PG_OPTS:-}" >/dev/null \
    || { cat "$dir/server.log" >&2; return 1; }
  export BROOQ_TEST_PGHOST="$dir/sock"
}

brq_pg_promote() {
  local dir=$1 bin
  bin=$(brq_pg_bindir) || return 1
  brq_pg_as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null \
    || { tail -n 20 "$dir/server.log" >&2; return 1; }
}

brq_pg_template() {
  local brooqctl=$1 root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c 'CREATE DATABASE brooq_template' >/dev/null || return 1
  BROOQ_DSN="host=$BROOQ_TEST_PGHOST user=postgres dbname=brooq_template" \
    "$brooqctl" migrate up --dir "$root/migrations" >/dev/null
}

brq_pg_stop() {
  local dir=$1 mode=${2:-immediate} bin
  bin=$(brq_pg_bindir) || return 1
  [ -f "$dir/data/postmaster.pid" ] || return 0
  brq_pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m "$mode" -w stop >/dev/null 2>&1 || true
}
