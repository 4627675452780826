#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks deploy/systemd as systemd itself reads it:
#   1. `systemd-analyze verify` on the unit (ExecStart and ExecReload pointed at the
#      built binary, the one thing that differs from an installed unit), with no
#      complaint at all;
#   2. `systemd-analyze security --offline=true`: overall exposure at most 1.6, "OK";
#   3. the unit is Type=notify with a watchdog, reloads with the gateway's own
#      `--reload-credentials $MAINPID` run as root ('+': systemd copies credentials
#      only at start, so the mode copies the tokens into the RuntimeDirectory= and sends
#      SIGHUP; gateway/reload_creds.h), reads its settings
#      with EnvironmentFile= (not the gateway's --env-file), and loads tokens with the
#      directory form of LoadCredential=, from the directory and with the names the
#      gateway's --help, README, the man pages, console.md and the env files give
#      (credentials_layout_test.sh); a gateway that refuses the schema (exit 78,
#      gateway/main.c) is not restarted;
#   4. `systemd-sysusers` on brooq.sysusers creates the brooq group.
# Usage: systemd_deploy_test.sh PATH/TO/brooq-gateway
set -euo pipefail
root=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
gateway=${1:?usage: systemd_deploy_test.sh PATH/TO/brooq-gateway}
unit=$root/deploy/systemd/brooq-gateway.service
sysusers=$root/deploy/systemd/brooq.sysusers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
check() { # check NAME COMMAND...
  local name=$1
  shift
  if "$@" >"$tmp/out" 2>&1; then
    pass=$((pass + 1))
    echo "ok   $name"
  else
    fail=$((fail + 1))
    echo "FAIL $name"
    sed 's/^/     /' "$tmp/out"
  fi
}

command -v systemd-analyze >/dev/null || { echo "systemd-analyze not found (deploy/deps.sh installs systemd)"; exit 1; }

sed "s|^ExecStart=[^ ]*|ExecStart=$gateway|; s|^ExecReload=+[^ ]*|ExecReload=+$gateway|" "$unit" \
  >"$tmp/brooq-gateway.service"
check "the test copy differs only in ExecStart and ExecReload" \
  bash -c '[ "$(diff "$1" "$2" | grep -c "^[<>]")" -eq 4 ]' _ "$unit" "$tmp/brooq-gateway.service"
check "systemd-analyze verify: no complaint" \
  bash -c 'out=$(systemd-analyze verify "$1" 2>&1); rc=$?; echo "$out"; [ $rc -eq 0 ] && [ -z "$out" ]' _ \
  "$tmp/brooq-gateway.service"

# "→ Overall exposure level for brooq-gateway.service: 1.6 OK 🙂"
exposure() {
  systemd-analyze security --offline=true "$1" | tee "$tmp/security.txt" | grep 'Overall exposure level'
}
check "systemd-analyze security --offline=true: exposure <= 1.6, OK" \
  bash -c "$(declare -f exposure); tmp=$tmp"'; line=$(exposure "$1"); echo "$line";
    [[ $line =~ :\ ([0-9]+\.[0-9])\ OK ]] && awk -v s="${BASH_REMATCH[1]}" "BEGIN { exit !(s <= 1.6) }"' _ \
  "$tmp/brooq-gateway.service"

has() { grep -qxF -- "$2" "$1" || { echo "missing line: $2"; return 1; }; }
lacks() { ! grep -qE -- "$2" "$1" || { echo "unexpected: $(grep -E -- "$2" "$1")"; return 1; }; }
check "Type=notify, watchdog" \
  bash -c "$(declare -f has); has \"\$1\" Type=notify && has \"\$1\" NotifyAccess=main &&
    grep -qE '^WatchdogSec=[0-9]+s$' \"\$1\"" _ "$unit"
check "reload: the gateway's --reload-credentials as root, into its RuntimeDirectory=" \
  bash -c "$(declare -f has); has \"\$1\" 'ExecStart=/usr/local/bin/brooq-gateway' &&
    has \"\$1\" 'ExecReload=+/usr/local/bin/brooq-gateway --reload-credentials \$MAINPID' &&
    has \"\$1\" RuntimeDirectory=brooq && has \"\$1\" RuntimeDirectoryMode=0750 &&
    ! grep -q '^RuntimeDirectoryPreserve=' \"\$1\" &&
    \"\$2\" --help | grep -qF -- '--reload-credentials PID'" _ "$unit" "$gateway"
check "settings through EnvironmentFile=, not the gateway's --env-file" \
  bash -c "$(declare -f has lacks); has \"\$1\" EnvironmentFile=-/etc/brooq/brooq-gateway.env &&
    lacks \"\$1\" '^ExecStart=.*--env-file'" _ "$unit"
check "tokens through the directory form of LoadCredential=" \
  bash -c "$(declare -f has); has \"\$1\" LoadCredential=worker-token:/etc/brooq/credentials/worker-tokens &&
    has \"\$1\" LoadCredential=admin-token:/etc/brooq/credentials/admin-tokens &&
    has \"\$1\" LoadCredential=dsn:/etc/brooq/credentials/dsn" _ "$unit"

check "a refused schema (exit 78) is not restarted; other failures are" \
  bash -c "$(declare -f has); has \"\$1\" Restart=on-failure && has \"\$1\" RestartPreventExitStatus=78 &&
    grep -q '^#define EXIT_SCHEMA 78\$' \"\$2\"" _ "$unit" "$root/gateway/main.c"
check "the documents and the programs name the credentials the unit loads" \
  "$root/tests/credentials_layout_test.sh" "$(dirname "$gateway")/.."

mkdir -p "$tmp/root/etc"
check "systemd-sysusers creates the brooq group" \
  bash -c 'systemd-sysusers --root="$1" "$2" && grep -E "^brooq:x:[0-9]+:" "$1/etc/group"' _ "$tmp/root" "$sysusers"
check "a second systemd-sysusers run changes nothing" \
  bash -c 'before=$(cat "$1/etc/group"); systemd-sysusers --root="$1" "$2" && [ "$(cat "$1/etc/group")" = "$before" ]' _ \
  "$tmp/root" "$sysusers"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
