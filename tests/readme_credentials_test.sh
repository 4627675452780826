#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README's "Running the gateway" steps, run verbatim (read from README.md, so they
# cannot drift) as root in a private mount namespace (unshare: a tmpfs over /etc and
# /run, the machine's own files linked back in), with systemd's part played by hand:
#   1. the credential lines write /etc/brooq/credentials as the admin would (the DSN
#      replaced by the test database's; the lines that install PostgreSQL and make its
#      role and database are the harness's part), `brooqctl migrate up` migrates;
#   2. `brooq-gateway --env-file ... --check-config`, with neither --credentials-dir nor
#      $CREDENTIALS_DIRECTORY, reads that directory as the unit loads it: ok;
#   3. `systemctl enable --now` becomes the gateway started as the unit would start it
#      (the env file, the credentials the unit names: --credentials-dir), on the default
#      socket /run/brooq/gateway.sock;
#   4. `brooqctl stats` with no option and no BROOQ_* variable works, and so does an
#      admin-only command: brooqctl found the admin token by itself; a token added
#      later (not yet loaded by a reload) is not the one it picks;
#   5. a token directory removed: --check-config says so (exit 2), as systemd would
#      refuse to start.
# Exit 77 (skipped) where no mount namespace can be made (a user namespace too, unless root).
# Usage: readme_credentials_test.sh BUILD_DIR   (the harness PostgreSQL: $BROOQ_TEST_PGHOST)
set -euo pipefail
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}

if [ "${1:-}" = --inside ]; then
  # ---- inside the namespace: root, private /etc and /run ------------------------------------
  build=$2 tmp=$3 dsn=$4 hostetc=$5
  # shellcheck source=tests/support/check.sh
  . "$src/tests/support/check.sh"
  mount --bind /etc "$hostetc"
  mount -t tmpfs -o mode=0755 tmpfs /etc
  for e in "$hostetc"/* "$hostetc"/.[!.]*; do
    if [ -e "$e" ] || [ -L "$e" ]; then ln -s "$e" /etc/; fi
  done
  rm -f /etc/brooq
  mount -t tmpfs -o mode=0755 tmpfs /run
  export PATH=$build/bin:/usr/bin:/bin
  unset BROOQ_URL BROOQ_TOKEN_FILE BROOQ_DSN BROOQ_DSN_FILE CREDENTIALS_DIRECTORY
  # What the package installs, and the unit's RuntimeDirectory=: the settings file
  # (the HTTP endpoint off: other tests may hold its port) and /run/brooq.
  install -d -m 0755 /etc/brooq
  echo BROOQ_HTTP_LISTEN=off >/etc/brooq/brooq-gateway.env
  install -d -m 0750 /run/brooq

  started=
  start_gateway() { # as the unit: EnvironmentFile= and LoadCredential= of /etc/brooq/credentials
    brooq-gateway --env-file /etc/brooq/brooq-gateway.env --credentials-dir /etc/brooq/credentials \
      >"$tmp/gateway.log" 2>&1 &
    started=$!
    echo "$started" >"$tmp/gateway.pid"
    for _ in $(seq 100); do
      [ -S /run/brooq/gateway.sock ] && return 0
      kill -0 "$started" 2>/dev/null || break
      sleep 0.1
    done
    cat "$tmp/gateway.log"
    return 1
  }
  sed -n '/^### Running the gateway/,/^```$/p' "$src/README.md" | sed -n '/^```sh$/,/^```$/p' |
    sed '1d;$d' >"$tmp/steps"
  [ "$(wc -l <"$tmp/steps")" -ge 8 ] || { echo "README's steps not found"; exit 1; }
  check "README has the credential steps" grep -q '^head .*>/etc/brooq/credentials/admin-tokens/' "$tmp/steps"
  check "README writes the DSN of the password it made" \
    grep -qF 'echo "postgresql://brooq:$pw@localhost:5432/brooq" >/etc/brooq/credentials/dsn' "$tmp/steps"
  while IFS= read -r line; do
    case $line in
      'systemctl enable --now brooq-gateway') check "README: $line (the gateway, as the unit starts it)" start_gateway ;;
      systemctl\ * | journalctl\ * | editor\ *) echo "skip $line" ;;
      'apt install postgresql' | pw=* | *'sudo -u postgres '*) echo "skip $line (the harness's database)" ;;
      *) check "README: $line" bash -c "$(echo "$line" | sed "s|postgresql://brooq:[$]pw@localhost:5432/brooq|$dsn|")" ;;
    esac
  done <"$tmp/steps"

  check "the layout is root's: directories 0700, files 0600" bash -c '
    [ "$(stat -c %a /etc/brooq/credentials /etc/brooq/credentials/worker-tokens /etc/brooq/credentials/admin-tokens | sort -u)" = 700 ] &&
    [ "$(stat -c %a /etc/brooq/credentials/dsn /etc/brooq/credentials/*-tokens/* | sort -u)" = 600 ]'
  check "--check-config without options reads /etc/brooq/credentials (2 tokens)" bash -c '
    out=$(brooq-gateway --env-file /etc/brooq/brooq-gateway.env --check-config 2>&1); echo "$out"
    echo "$out" | grep -q "msg=tokens_loaded worker=1 admin=1" && [ "$(echo "$out" | tail -n 1)" = "configuration ok" ]'
  check "brooqctl with no token option: an admin-only command (topics)" brooqctl topics
  newer() {
    sleep 1
    (umask 077 && head -c 32 /dev/urandom | base64 >/etc/brooq/credentials/admin-tokens/2)
    brooqctl topics # the new token is not loaded (no reload): the old one must be used
  }
  check "a token added for rotation is not used before a reload (the oldest is)" newer
  check "the gateway refused no request (brooqctl's token was a loaded one)" bash -c '
    ! grep -q "msg=auth_failed" "$1" && grep -q "msg=tokens_loaded worker=1 admin=1" "$1"' _ "$tmp/gateway.log"
  missing_dir() {
    rm -r /etc/brooq/credentials/worker-tokens
    local rc=0 out
    out=$(brooq-gateway --env-file /etc/brooq/brooq-gateway.env --check-config 2>&1) || rc=$?
    echo "$out"
    [ $rc -eq 2 ] && echo "$out" | grep -q "credentials: /etc/brooq/credentials/worker-tokens: No such file or directory"
  }
  check "without worker-tokens/ --check-config fails, as systemd would" missing_dir
  [ -z "$started" ] || { kill "$started" && wait "$started" || true; }
  check_done
  exit
fi

# ---- outside: the database, the namespace, cleaning up ------------------------------------------
build=$(cd "${1:?usage: readme_credentials_test.sh BUILD_DIR}" && pwd)
[ -n "${BROOQ_TEST_PGHOST:-}" ] || { echo "BROOQ_TEST_PGHOST is not set (run through tests/run.sh)"; exit 1; }
# Root gets a mount namespace alone: in a user namespace its rights would not reach the
# harness cluster's socket (owned by a user the namespace does not map).
ns=(unshare -rm)
[ "$(id -u)" -ne 0 ] || ns=(unshare -m)
if ! "${ns[@]}" true 2>/dev/null; then
  echo "skipped: no mount namespace here (${ns[*]})"
  exit 77
fi
tmp=$(mktemp -d /tmp/brooq-readme-creds.XXXXXX)
# The bind mount of the machine's /etc exists only inside the namespace; this is an
# empty directory outside it, removed with rmdir, never rm -r.
hostetc=$(mktemp -d /tmp/brooq-readme-etc.XXXXXX)
db=brooq_readme_creds_$$
cleanup() {
  [ ! -s "$tmp/gateway.pid" ] || kill "$(cat "$tmp/gateway.pid")" 2>/dev/null || true
  psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rmdir "$hostetc"
  rm -rf "$tmp"
}
trap cleanup EXIT
psql -X -q -h "$BROOQ_TEST_PGHOST" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
chmod 0755 "$tmp"
"${ns[@]}" --propagation private "$0" --inside "$build" "$tmp" \
  "host=$BROOQ_TEST_PGHOST user=postgres dbname=$db" "$hostetc"
