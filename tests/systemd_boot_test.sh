#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packages as an administrator installs and runs them, under a real systemd: a
# Debian 12 container whose PID 1 is systemd (tests/support/nspawn.sh: a debootstrap
# tree, cached, booted with systemd-nspawn --boot), with PostgreSQL from Debian.
#   1. README's install and setup steps, word for word (the blocks README marks with
#      `<!-- test: NAME -->`, read by tests/support/readme_steps.sh): the packages
#      install, PostgreSQL gets the role and database, `systemctl enable --now
#      brooq-gateway` starts the unit, and it is active with the status it sent over
#      sd_notify (READY=1, Type=notify);
#   2. README's worker block builds the example worker against the -dev package (with
#      pkg-config); it runs as a user in the brooq group with a copy of the worker
#      token (README's words), and does a job enqueued with brooqctl in README's
#      operator environment; brooqctl stats; README's Python quick start from the
#      packages (python-deb: python3-brooq), its producer and its worker run by Debian's
#      python3 as that user: the worker does the producer's job and drains on stop;
#   3. `systemctl reload` rotates the admin token as docs/operations.md says: a token
#      file added is accepted after a reload, the old file removed and reloaded is
#      refused; the copy the reload makes in /run/brooq is the service's user's alone
#      (a worker of group brooq cannot read it);
#   4. `systemctl stop` drains: exit 0, nothing abandoned, within the grace; the
#      worker carries on once the gateway is back;
#   5. an upgrade to packages of a higher version that bring a migration, with README's
#      install step: the running gateway is left running and the install says what
#      finishes the upgrade; README's upgrade step (migrate up, restart) finishes it
#      (make_upgrade_debs, check_upgrade);
#   6. purge: the service stopped, the packages' files gone (python3-brooq's too).
# Skipped (exit 77) unless BROOQ_TEST_SYSTEMD=1 (tests/run.sh --systemd): it needs root,
# builds a tree of about 600 MB once (minutes, network to the Debian mirror) and takes
# about a minute warm.
# Usage: systemd_boot_test.sh BUILD_DIR   (packages: BUILD_DIR/debs, ctest fixture "debs")
set -euo pipefail
build=$(cd "${1:?usage: systemd_boot_test.sh BUILD_DIR}" && pwd)
src=${BROOQ_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [ "${BROOQ_TEST_SYSTEMD:-}" != 1 ]; then
  echo "skipped: set BROOQ_TEST_SYSTEMD=1 (tests/run.sh --systemd) to boot the packages under systemd"
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "systemd_boot_test: needs root (debootstrap, systemd-nspawn)"
  exit 1
fi
tmp=$(mktemp -d /tmp/brooq-systemd-test.XXXXXX)
chmod 0755 "$tmp" # the container's apt reads the packages as _apt
# shellcheck source=tests/support/check.sh
. "$src/tests/support/check.sh"
# shellcheck source=tests/support/readme_steps.sh
. "$src/tests/support/readme_steps.sh"
# shellcheck source=tests/support/nspawn.sh
. "$src/tests/support/nspawn.sh"
cleanup() {
  brq_halt
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

version=$(sed -n 's/^#define BROOQ_VERSION *"\(.*\)"/\1/p' "$build/common/brq_version.h")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
pkgs=(brooq-gateway brooqctl libbrooq-client1 libbrooq-client-dev)
# BROOQ_TEST_README: another README to follow (a candidate, before it is committed).
readme=${BROOQ_TEST_README:-$src/README.md}
t0=$SECONDS
tree_start=$t0
boot_start=$t0
phase() { echo "== $1 (at $((SECONDS - t0)) s)"; }
# finish: the container powered off, the timing, the count; exits.
finish() {
  brq_halt
  echo "timing: tree $((boot_start - tree_start)) s, boot to end $((SECONDS - boot_start)) s, whole run $((SECONDS - t0)) s"
  check_done && exit 0
  exit 1
}

# ---- the container's files: /srv/brooq, a read-only view of $tmp/srv ------------------------
srv=$tmp/srv
mkdir -p "$srv/v1/dist" "$srv/v2/dist" "$srv/steps"
for p in "${pkgs[@]}"; do
  cp "$build/debs/${p}_${version}_${arch}.deb" "$srv/v1/dist/"
done
# Pure Python (Architecture all); the upgrade below leaves it as it is.
cp "$build/debs/python3-brooq_${version}_all.deb" "$srv/v1/dist/"

# ---- README's marked blocks ------------------------------------------------------------------
# From the setup block, the files it writes the tokens to (the first of each role);
# from the operator block, the operator's environment (its export lines).
token_path() {
  readme_steps "$readme" setup | grep -o ">[[:space:]]*/[^[:space:]);]*$1-token[^[:space:]);]*" |
    head -n 1 | sed 's/^>[[:space:]]*//'
}
readme_blocks() {
  local n
  for n in install setup worker operator upgrade python-deb python-producer python-worker; do
    readme_steps "$readme" "$n" >/dev/null || return 1
  done
  worker_token=$(token_path worker)
  admin_token=$(token_path admin)
  echo "worker token: '$worker_token', admin token: '$admin_token'"
  readme_steps "$readme" operator | grep '^export ' >"$srv/operator.env"
  echo "operator environment: $(tr '\n' ' ' <"$srv/operator.env")"
  [ -n "$worker_token" ] && [ -n "$admin_token" ]
}
worker_token=
admin_token=
touch "$srv/operator.env"
check "README marks its install, setup, worker, operator, upgrade and Python blocks; the setup writes both tokens" readme_blocks
[ "$fail" -eq 0 ] || finish
sed 's/^/     /' "$tmp/check.out"
ctl() { brq_in bash -c '. /srv/brooq/operator.env; brooqctl "$@"' _ "$@"; }

# ---- the tree: systemd, PostgreSQL, a compiler for the worker, every dependency -------------
# Everything the packages depend on is in the tree, so that apt installs them with no
# network (the container has none). python3-cffi-backend-api-min/max (dh_python3's
# translation of cffi) are virtual: python3-cffi brings their provider.
deb_depends() { # the first alternative of every dependency of the packages, not ours
  local d
  for d in "$srv"/v1/dist/*.deb; do dpkg-deb -f "$d" Depends; done |
    tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' | grep -v '^$' |
    grep -vE '^(libbrooq|brooq|python3-brooq$|python3-cffi-backend-api-)'
}
mapfile -t tree_pkgs < <(deb_depends)
tree_pkgs+=(sudo postgresql gcc libc6-dev pkg-config procps)
phase "tree"
tree_start=$SECONDS
if ! tree=$(brq_tree "${tree_pkgs[@]}"); then
  echo "FAIL the tree is built"
  exit 1
fi
echo "   $tree ($(sed -n 's/^built //p' "$tree/.brooq-tree"); ready in $((SECONDS - tree_start)) s)"

phase "boot"
boot_start=$SECONDS
if ! brq_boot "$tree" "$tmp/console.log" --bind-ro="$srv:/srv/brooq"; then
  echo "FAIL the container boots"
  exit 1
fi
echo "   booted in $((SECONDS - boot_start)) s (systemd $(brq_in systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'))"

# ---- README's steps ------------------------------------------------------------------------
# run_readme NAME DIR: README's NAME block(s) as one root shell script in DIR of the
# container, each step echoed, stopping at the first that fails. The setup block's
# optional `editor` step leaves the settings as packaged.
run_readme() {
  local name=$1 dir=$2 f=$srv/steps/$1.sh
  {
    echo "set -ex"
    echo "editor() { :; }"
    echo "cd $dir"
  } >"$f"
  readme_steps "$readme" "$name" >>"$f" || return 1
  brq_in bash "/srv/brooq/steps/$name.sh"
}
dump_gateway() { # what an administrator would look at
  brq_in systemctl status --no-pager -l brooq-gateway || true
  brq_in journalctl -u brooq-gateway --no-pager -n 30 -o cat || true
}

phase "install and set up, as README says"
check "README's install block: apt installs the packages" run_readme install /srv/brooq/v1
check "the unit is installed disabled and stopped" brq_in bash -c '
  [ "$(systemctl is-enabled brooq-gateway)" = disabled ] && ! systemctl is-active brooq-gateway'
check "README's setup block runs to its end (database, credentials, enable --now, status, journal)" \
  run_readme setup /root
ready() {
  local out
  out=$(brq_in systemctl show -p ActiveState -p SubState -p Type -p StatusText -p NRestarts brooq-gateway)
  echo "$out"
  # Type=notify: active only after READY=1; the status text came over sd_notify too.
  grep -qx ActiveState=active <<<"$out" && grep -qx Type=notify <<<"$out" &&
    grep -qx StatusText=Serving <<<"$out" && grep -qx NRestarts=0 <<<"$out"
}
check "systemctl: active, Type=notify, READY=1 with STATUS=Serving, no restart" ready
if [ "$fail" -gt 0 ]; then
  dump_gateway
  echo "   (the gateway does not run as README sets it up: the steps below cannot run)"
  finish
fi

# ---- the example worker and a job --------------------------------------------------------------
phase "worker"
# README's worker block, in a directory with the packages beside it (as README's
# install block has them), writable for the program it builds.
build_worker() {
  brq_in bash -ec 'mkdir -p /opt/brooq-worker && cp -r /srv/brooq/v1/dist /opt/brooq-worker/' &&
    run_readme worker /opt/brooq-worker && brq_in test -x /opt/brooq-worker/example-worker
}
check "README's worker block: the library packages install, the example worker builds" build_worker
# README's words: a worker's user "joins that group (usermod -aG brooq USER) and gets a
# copy of a worker token"; it runs as a service, so that it outlives this step.
# shellcheck disable=SC2016
check "a worker user in group brooq with a copy of the worker token runs example-worker" brq_in bash -ec '
  useradd -m worker
  usermod -aG brooq worker
  install -o worker -g worker -m 0600 "$1" /home/worker/worker-token
  . /srv/brooq/operator.env
  systemd-run --unit=example-worker -p User=worker \
    -p Environment="BROOQ_URL=${BROOQ_URL:-ipc:///run/brooq/gateway.sock}" \
    -p Environment=BROOQ_TOKEN_FILE=/home/worker/worker-token /opt/brooq-worker/example-worker
  systemctl is-active example-worker' _ "$worker_token"
# job_done PAYLOAD: enqueues demo.hello with brooqctl and waits (20 s) for its state
# done and the worker's line about it.
job_done() {
  local out id
  out=$(ctl --json enqueue demo.hello "$1") || { echo "$out"; return 1; }
  id=$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' <<<"$out")
  echo "enqueued: $out"
  for _ in $(seq 200); do
    out=$(ctl --json job "$id" || true)
    grep -q '"state":"done"' <<<"$out" && break
    sleep 0.1
  done
  echo "job: $out"
  if ! grep -q '"state":"done"' <<<"$out" ||
    ! brq_in journalctl -u example-worker -o cat --no-pager | grep -F "job=$id topic=demo.hello"; then
    brq_in journalctl -u example-worker -o cat --no-pager -n 20
    return 1
  fi
}
check "a job enqueued with brooqctl is done by the worker" job_done '{"n":1}'
# stats counts the active states at once (the terminal ones from the gateway's last
# count): a job delayed for an hour is one pending.
stats() {
  local out
  ctl enqueue demo.hello '{"n":0}' --delay 1h || return 1
  out=$(ctl stats) || { echo "$out"; return 1; }
  echo "$out"
  grep -qE '^demo\.hello +1 ' <<<"$out"
}
check "brooqctl stats: the topic, with one job pending" stats

# ---- README's Python quick start, from the packages ---------------------------------------------
phase "python"
# The python-deb block beside the worker block's dist/; the producer and the worker
# blocks saved as files, run by Debian's python3 as the worker user (the worker as a
# service, as example-worker), in README's operator environment for the URL.
py_env='. /srv/brooq/operator.env; export BROOQ_URL=${BROOQ_URL:-ipc:///run/brooq/gateway.sock}'
python_install() {
  # apt asks before installing fewer packages than it was named (the worker block has
  # installed libbrooq-client1): the answer is the administrator's, as README leaves it.
  printf 'Y\n' | run_readme python-deb /opt/brooq-worker || return 1
  readme_steps "$readme" python-producer >"$srv/steps/producer.py" || return 1
  readme_steps "$readme" python-worker >"$srv/steps/worker.py" || return 1
  brq_in python3 -c 'import brooq; print(brooq.__file__, "on libbrooq-client", brooq.library_version())'
}
check "README's python-deb block: python3-brooq installs; Debian's python3 imports brooq" python_install
# shellcheck disable=SC2016
check "README's Python worker runs as the worker user" brq_in bash -ec "$py_env"'
  systemd-run --unit=python-worker -p User=worker -p Environment=PYTHONUNBUFFERED=1 \
    -p Environment="BROOQ_URL=$BROOQ_URL" -p Environment=BROOQ_TOKEN_FILE=/home/worker/worker-token \
    python3 /srv/brooq/steps/worker.py
  systemctl is-active python-worker'
python_job() {
  local out id
  # shellcheck disable=SC2016
  out=$(brq_in bash -ec "$py_env"'
    cd /tmp && runuser -u worker -- env BROOQ_URL="$BROOQ_URL" BROOQ_TOKEN_FILE=/home/worker/worker-token \
      python3 /srv/brooq/steps/producer.py') || { echo "$out"; return 1; }
  echo "producer: $out"
  id=$(sed -n 's/^enqueued \([0-9]*\) new$/\1/p' <<<"$out")
  [ -n "$id" ] || return 1
  for _ in $(seq 200); do
    out=$(ctl --json job "$id" || true)
    grep -q '"state":"done"' <<<"$out" && break
    sleep 0.1
  done
  echo "job: $out"
  if ! grep -q '"state":"done"' <<<"$out" ||
    ! brq_in journalctl -u python-worker -o cat --no-pager | grep -Fx "sending to a@example.org attempt 1"; then
    brq_in journalctl -u python-worker -o cat --no-pager -n 20
    return 1
  fi
}
check "README's Python producer enqueues; its worker does the job" python_job
python_stop() {
  local log
  brq_in systemctl stop python-worker || return 1
  log=$(brq_in journalctl -u python-worker -o cat --no-pager)
  grep -E 'worker_stopped|Deactivated|Failed' <<<"$log"
  grep -q 'msg=worker_stopped' <<<"$log" && grep -q 'python-worker.service: Deactivated successfully' <<<"$log"
}
check "systemctl stop: the Python worker drains (worker_stopped) and ends cleanly" python_stop

# ---- systemctl reload rotates a token ----------------------------------------------------------
# As docs/operations.md ("Token rotation") says: a new file beside the old one and a
# reload (both valid), then the old file removed and a reload (the old one refused).
# brooqctl run by root uses the oldest file of admin-tokens/: the old one, then the new.
phase "reload"
pid_before_reload=$(brq_in systemctl show -p MainPID --value brooq-gateway)
new_admin_token=$(dirname "$admin_token")/rotated
# stats_ok [TOKEN_FILE]: brooqctl stats (with that token file, else as root's default)
# succeeds within 10 s: a reload ends with a signal, which the gateway applies just after.
stats_ok() {
  local rc
  for _ in $(seq 50); do
    rc=0
    # shellcheck disable=SC2016
    brq_in bash -c '. /srv/brooq/operator.env; if [ -n "$1" ]; then export BROOQ_TOKEN_FILE=$1; fi
      brooqctl stats' _ "${1:-}" >/dev/null 2>&1 || rc=$?
    [ $rc -eq 0 ] && break
    sleep 0.2
  done
  echo "brooqctl stats (${1:-the default token}): exit $rc"
  [ $rc -eq 0 ]
}
reload_log() {
  brq_in journalctl -u brooq-gateway -o cat --no-pager | grep -E 'reload-credentials|msg=(reload|token)' | tail -n "$1"
}
add_token_and_reload() {
  # shellcheck disable=SC2016
  brq_in bash -ec 'cp "$1" /root/old-admin-token; (umask 077; head -c 32 /dev/urandom | base64 >"$2")' _ \
    "$admin_token" "$new_admin_token" || return 1
  brq_in systemctl reload brooq-gateway || { reload_log 10; return 1; }
  stats_ok "$new_admin_token" && stats_ok || { reload_log 10; return 1; }
  reload_log 6
}
remove_token_and_reload() {
  brq_in rm "$admin_token" || return 1
  brq_in systemctl reload brooq-gateway || { reload_log 10; return 1; }
  stats_ok || { reload_log 10; return 1; }
  reload_log 6
}
old_token_refused() {
  local rc=0
  brq_in bash -c '. /srv/brooq/operator.env; BROOQ_TOKEN_FILE=/root/old-admin-token brooqctl stats' || rc=$?
  echo "exit $rc"
  [ $rc -eq 4 ] # authentication (docs/brooqctl.md)
}
# The copy in /run/brooq (0750, group brooq: the workers reach the socket there) is the
# gateway's dynamic user's alone.
copy_is_private() {
  # shellcheck disable=SC2016
  brq_in bash -ec '
    uid=$(awk "/^Uid:/ { print \$3 }" /proc/$(systemctl show -p MainPID --value brooq-gateway)/status)
    stat -c "%a %u %n" /run/brooq /run/brooq/credentials /run/brooq/credentials/*-tokens /run/brooq/credentials/*-tokens/*
    [ "$(stat -c "%a %u" /run/brooq/credentials /run/brooq/credentials/*-tokens | sort -u)" = "700 $uid" ]
    [ "$(stat -c "%a %u" /run/brooq/credentials/*-tokens/* | sort -u)" = "400 $uid" ]
    [ "$(ls /run/brooq/credentials/admin-tokens)" = rotated ]
    runuser -u worker -- test -S /run/brooq/gateway.sock
    ! runuser -u worker -- ls /run/brooq/credentials'
}
check "systemctl reload: a token file added is accepted, the old one still is" add_token_and_reload
check "systemctl reload: the old file removed, the new token is brooqctl's default" remove_token_and_reload
check "systemctl reload: the old admin token is refused" old_token_refused
check "the reload's copy in /run/brooq: 0700/0400, the gateway's user's; a worker cannot read it" copy_is_private
same_gateway() {
  local out
  out=$(brq_in systemctl show -p MainPID -p NRestarts -p ActiveState brooq-gateway)
  echo "$out (MainPID before: $pid_before_reload)"
  grep -qx "MainPID=$pid_before_reload" <<<"$out" && grep -qx NRestarts=0 <<<"$out" &&
    grep -qx ActiveState=active <<<"$out"
}
check "the reload kept the gateway (same PID, no restart)" same_gateway
if ! ctl stats >/dev/null 2>&1; then
  # So that the steps below still run: a restart loads the new token (the unit's way).
  echo "   (restarting the gateway so that the steps below run with the new token)"
  brq_in systemctl restart brooq-gateway || true
fi

# ---- systemctl stop drains ---------------------------------------------------------------------
phase "stop"
inv=$(brq_in systemctl show -p InvocationID --value brooq-gateway)
stop_drains() {
  local start=$SECONDS out log
  brq_in systemctl stop brooq-gateway || return 1
  echo "stopped in $((SECONDS - start)) s"
  out=$(brq_in systemctl show -p Result -p ExecMainStatus -p ActiveState brooq-gateway)
  echo "$out"
  log=$(brq_in journalctl -u brooq-gateway "_SYSTEMD_INVOCATION_ID=$inv" -o cat --no-pager)
  grep -E 'msg=(stopping|stopped|shutdown_forced)' <<<"$log"
  grep -qx Result=success <<<"$out" && grep -qx ExecMainStatus=0 <<<"$out" &&
    grep -qx ActiveState=inactive <<<"$out" &&
    grep -q 'msg=stopping signal=SIGTERM' <<<"$log" && grep -q 'msg=stopped inflight_abandoned=0' <<<"$log" &&
    ! grep -q shutdown_forced <<<"$log"
}
check "systemctl stop: STOPPING, a clean exit 0, no request abandoned" stop_drains
check "the worker waits for the gateway (still active)" brq_in systemctl is-active example-worker
check "systemctl start: active again" brq_in systemctl start brooq-gateway
check "the worker reconnects and does a job" job_done '{"n":2}'

# ---- upgrade ------------------------------------------------------------------------------------
# The upgrade is its own step, kept small: the packages' upgrade behaviour (postinst,
# migrations) is expected to change, and with it make_upgrade_debs and check_upgrade.
phase "upgrade"
new_version=$version+upgradetest1
upgrade_migration=90000_systemd_boot_test.sql
upgrade_sql='-- +goose Up
CREATE TABLE systemd_boot_test (id integer);

-- +goose Down
DROP TABLE systemd_boot_test;'
# make_upgrade_debs: the same packages at $new_version, brooqctl with one more migration
# (a table of its own, applied by `brooqctl migrate up`). Repacked with dpkg-deb rather
# than rebuilt with dpkg-buildpackage: dpkg and the maintainer scripts see an upgrade
# all the same, in seconds instead of two minutes.
make_upgrade_debs() {
  local p d
  mkdir -p "$tmp/repack" || return 1
  for p in "${pkgs[@]}"; do
    d=$tmp/repack/$p
    dpkg-deb -R "$srv/v1/dist/${p}_${version}_${arch}.deb" "$d" || return 1
    # The version, and the -dev package's exact dependency on its library.
    sed -i "s/^Version: .*/Version: $new_version/; s/(= $version)/(= $new_version)/g" "$d/DEBIAN/control"
    if [ "$p" = brooqctl ]; then
      echo "$upgrade_sql" >"$d/usr/share/brooq/migrations/$upgrade_migration"
      (cd "$d" && md5sum "usr/share/brooq/migrations/$upgrade_migration") >>"$d/DEBIAN/md5sums"
    fi
    dpkg-deb --root-owner-group -Zxz -b "$d" "$srv/v2/dist/${p}_${new_version}_${arch}.deb" >/dev/null || return 1
  done
}
# BROOQ_TEST_UPGRADE_REBUILD=1: rebuilt instead, by deploy/debs.sh from a copy of the
# source with the migration in migrations/ and a changelog entry at $new_version (about
# two minutes more): for an upgrade whose programs must differ, e.g. a gateway that
# needs the new migration.
rebuild_upgrade_debs() {
  local s=$tmp/src-v2 p
  mkdir -p "$s/.deps" "$tmp/debs-v2" || return 1
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -C "$s" -xf - || return 1
  cp -a "$src/.deps/nng" "$s/.deps/nng" || return 1
  echo "$upgrade_sql" >"$s/migrations/$upgrade_migration"
  { printf 'brooq (%s) unstable; urgency=medium\n\n  * An upgrade with migration %s (systemd_boot_test).\n\n -- %s  %s\n\n' \
      "$new_version" "$upgrade_migration" "$(dpkg-parsechangelog -l "$s/debian/changelog" -S Maintainer)" \
      "$(date -R)"
    cat "$s/debian/changelog"; } >"$s/changelog.new" && mv "$s/changelog.new" "$s/debian/changelog" || return 1
  BROOQ_DEBS_NO_DEPS=1 "$s/deploy/debs.sh" "$tmp/debs-v2" || return 1
  for p in "${pkgs[@]}"; do
    cp "$tmp/debs-v2/${p}_${new_version}_${arch}.deb" "$srv/v2/dist/" || return 1
  done
}
if [ "${BROOQ_TEST_UPGRADE_REBUILD:-}" = 1 ]; then
  check "packages rebuilt at $new_version, with migration $upgrade_migration" rebuild_upgrade_debs
else
  check "packages repacked at $new_version, brooqctl with migration $upgrade_migration" make_upgrade_debs
fi
old_pid=$(brq_in systemctl show -p MainPID --value brooq-gateway)
# README: "If the release brings migrations, the running gateway is left running (the
# previous version ...) and the install prints the two commands that finish the upgrade".
upgrade_install() {
  local out pid
  # dpkg writes through apt's pty: its lines end in CR LF.
  out=$(run_readme install /srv/brooq/v2 2>&1 | tr -d '\r') || { echo "$out"; return 1; }
  grep -A4 '^brooq-gateway: not restarted' <<<"$out"
  pid=$(brq_in systemctl show -p MainPID --value brooq-gateway)
  echo "gateway pid $old_pid before, $pid after; $(brq_in systemctl is-active brooq-gateway)"
  grep -q "^brooq-gateway: not restarted: the database lacks migrations this version needs: $upgrade_migration" <<<"$out" &&
    grep -q 'brooqctl migrate up$' <<<"$out" && grep -q 'systemctl restart brooq-gateway$' <<<"$out" &&
    [ "$pid" = "$old_pid" ] && brq_in systemctl is-active brooq-gateway
}
check "README's install block, new packages: upgraded, the gateway left running, the rest said" upgrade_install
check "README's upgrade block (migrate up, restart) runs" run_readme upgrade /root
# check_upgrade: the gateway runs the new packages, on the migrated schema.
check_upgrade() {
  local v pid
  v=$(brq_in dpkg-query -W -f='${Package} ${Version}\n' brooq-gateway brooqctl)
  echo "$v"
  [ "$(grep -c " $new_version\$" <<<"$v")" -eq 2 ] || return 1
  pid=$(brq_in systemctl show -p MainPID --value brooq-gateway)
  echo "gateway pid $old_pid before, $pid after; $(brq_in systemctl is-active brooq-gateway)"
  [ "$pid" != "$old_pid" ] && [ "$pid" != 0 ] && brq_in systemctl is-active brooq-gateway || return 1
  brq_in runuser -u postgres -- psql -X -At -d brooq \
    -c "SELECT max(version_id) FROM goose_db_version" -c "SELECT to_regclass('systemd_boot_test')" |
    tee /dev/stderr | tr '\n' ' ' | grep -qx "90000 systemd_boot_test "
}
check "the gateway was restarted on the new packages; the schema migrated" check_upgrade
check "after the upgrade the worker does a job" job_done '{"n":3}'

# ---- purge --------------------------------------------------------------------------------------
phase "purge"
check "apt-get purge of the five packages" brq_in bash -ec '
  systemctl stop example-worker
  apt-get purge -y -q brooq-gateway brooqctl libbrooq-client-dev libbrooq-client1 python3-brooq'
purged() {
  local left
  brq_in systemctl is-active brooq-gateway && return 1
  brq_in pgrep -x brooq-gateway && return 1
  left=$(brq_in dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'brooq*' 'libbrooq*' python3-brooq 2>/dev/null |
    grep -v '^un' || true)
  [ -z "$left" ] || { echo "still known to dpkg: $left"; return 1; }
  brq_in bash -c 'for f in /usr/bin/brooq-gateway /usr/bin/brooqctl /lib/systemd/system/brooq-gateway.service \
      /etc/brooq/brooq-gateway.env /usr/share/brooq/migrations /usr/lib/python3/dist-packages/brooq; do [ ! -e "$f" ] || { echo "left: $f"; exit 1; }; done'
}
check "purged: no gateway running, no package, none of their files" purged

phase "done"
finish
