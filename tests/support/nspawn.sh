# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# A Debian 12 container whose PID 1 is systemd, for the tests that install the
# packages and run the unit as an administrator would (tests/systemd_boot_test.sh).
# Source this file (as root), then:
#   brq_tree PACKAGE...        prints the path of a bookworm tree (debootstrap, minbase,
#                              systemd, and PACKAGE...), built once and then reused:
#                              BROOQ_TEST_TREE_CACHE (default /var/cache/brooq-test)/
#                              bookworm-HASH, HASH of the recipe and the package list
#   brq_boot TREE LOG [OPT...] boots it: systemd-nspawn --boot, no network but its own
#                              loopback, every write on a tmpfs overlay (the tree stays
#                              as built), console to LOG; OPT... more nspawn options.
#                              Waits until the boot is done; sets brq_nspawn_pid
#   brq_in COMMAND...          runs COMMAND in the container as root, clean environment
#   brq_halt                   powers the container off (SIGTERM to nspawn, SIGKILL
#                              after 30 s) and waits for it; safe to call twice
# Every process is ended by its PID (never by name); machined is not used (no
# machinectl: the host's PID 1 is not systemd here), hence --register=no --keep-unit.
# The tree is built with the Debian mirror only (network); a booted container has none.

# Bump when the steps of the tree change (the package list is hashed by itself).
BRQ_TREE_RECIPE=1
brq_nspawn_pid=
brq_leader=

brq_tools() { # debootstrap and systemd-nspawn, installed if missing
  command -v debootstrap >/dev/null && command -v systemd-nspawn >/dev/null && return 0
  echo "nspawn: installing debootstrap systemd-container" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    debootstrap systemd-container >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends debootstrap systemd-container >/dev/null; }
}

brq_tree() {
  local cache=${BROOQ_TEST_TREE_CACHE:-/var/cache/brooq-test}
  local mirror=${BROOQ_TEST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  local pkgs key dir
  pkgs=$(printf '%s\n' "$@" | LC_ALL=C sort -u | tr '\n' ' ')
  key=$(printf 'recipe %s\nmirror %s\npackages %s\n' "$BRQ_TREE_RECIPE" "$mirror" "$pkgs" |
    sha256sum | cut -c1-16)
  dir=$cache/bookworm-$key
  mkdir -p "$cache"
  # One build at a time; a run that waited finds the tree its neighbour built. (A
  # subshell under ||: set -e does not hold in it, hence the explicit exits.)
  (
    flock 9
    [ -e "$dir/.brooq-tree" ] && exit 0
    brq_tools || exit 1
    local start=$SECONDS tmp=$cache/partial-$key
    echo "nspawn: building $dir (cold: debootstrap and apt-get, a few minutes)" >&2
    rm -rf "$tmp" || exit 1
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$tmp" \
      "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
    # Packages are configured, never started, while the tree is built (exit 101:
    # policy-rc.d's "not allowed"); PostgreSQL's cluster is created stopped.
    { printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d" &&
      chmod 0755 "$tmp/usr/sbin/policy-rc.d"; } || exit 1
    # shellcheck disable=SC2086
    systemd-nspawn -q -D "$tmp" --register=no --keep-unit --pipe \
      -E DEBIAN_FRONTEND=noninteractive -E LANG=C.UTF-8 sh -ec "
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $pkgs
        apt-get clean" </dev/null >"$cache/apt.log" 2>&1 ||
      { tail -n 20 "$cache/apt.log" >&2; exit 1; }
    rm "$tmp/usr/sbin/policy-rc.d" &&
      echo brooq-test >"$tmp/etc/hostname" &&
      printf '127.0.0.1\tlocalhost\n127.0.1.1\tbrooq-test\n::1\tlocalhost ip6-localhost\n' >"$tmp/etc/hosts" &&
      printf 'recipe %s\nmirror %s\npackages %s\nbuilt %s in %d s\n' "$BRQ_TREE_RECIPE" "$mirror" \
        "$pkgs" "$(date -u +%FT%TZ)" $((SECONDS - start)) >"$tmp/.brooq-tree" || exit 1
    # Trees of other package lists are stale: one tree at a time.
    find "$cache" -maxdepth 1 -name 'bookworm-*' ! -name "bookworm-$key" -exec rm -rf {} +
    mv "$tmp" "$dir" || exit 1
    echo "nspawn: built in $((SECONDS - start)) s" >&2
  ) 9>"$cache/.lock" || return 1
  echo "$dir"
}

# A run killed before its brq_halt (SIGKILL) leaves its container running: the next
# run powers it off. Each container is named after its test's PID and listed in
# $BROOQ_TEST_TREE_CACHE/running/NSPAWN_PID while it runs.
brq_sweep() {
  local dir=${BROOQ_TEST_TREE_CACHE:-/var/cache/brooq-test}/running f pid owner
  [ -d "$dir" ] || return 0
  for f in "$dir"/*; do
    [ -e "$f" ] || continue
    pid=${f##*/}
    owner=$(cat "$f" 2>/dev/null || true)
    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then continue; fi
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--machine=brooq-test-$owner "; then
      echo "nspawn: powering off container brooq-test-$owner (nspawn $pid) left by a killed run" >&2
      brq_nspawn_pid=$pid brq_halt
    fi
    rm -f "$f"
  done
}

brq_boot() {
  local tree=$1 log=$2 state=
  shift 2
  brq_sweep
  systemd-nspawn -D "$tree" --boot --register=no --keep-unit --volatile=overlay \
    --private-network --console=read-only --machine="brooq-test-$$" "$@" \
    </dev/null >"$log" 2>&1 &
  brq_nspawn_pid=$!
  mkdir -p "${BROOQ_TEST_TREE_CACHE:-/var/cache/brooq-test}/running"
  echo $$ >"${BROOQ_TEST_TREE_CACHE:-/var/cache/brooq-test}/running/$brq_nspawn_pid"
  # The container's PID 1 is nspawn's child.
  for _ in $(seq 100); do
    brq_leader=$(pgrep -P "$brq_nspawn_pid" -x systemd || true)
    [ -n "$brq_leader" ] && break
    kill -0 "$brq_nspawn_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$brq_leader" ]; then
    echo "nspawn: no systemd in the container (log: $log)" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
  # Until systemd listens on its private socket, systemctl fails: poll.
  for _ in $(seq 120); do
    state=$(brq_in timeout 60 systemctl is-system-running --wait 2>/dev/null || true)
    case $state in running | degraded) break ;; esac
    sleep 0.5
  done
  case $state in
    running) return 0 ;;
    degraded)
      echo "nspawn: booted degraded:" >&2
      brq_in systemctl --failed --no-pager --no-legend >&2
      return 0
      ;;
  esac
  echo "nspawn: boot did not finish (state '$state'; log: $log)" >&2
  tail -n 20 "$log" >&2
  return 1
}

brq_in() {
  nsenter -t "$brq_leader" -a -r -w env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
}

brq_halt() {
  local pid=$brq_nspawn_pid leader
  [ -n "$pid" ] || return 0
  brq_nspawn_pid=
  leader=$(pgrep -P "$pid" -x systemd || true)
  # nspawn turns SIGTERM into a clean power-off of the container.
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    # Still there: SIGKILL to the container's PID 1, which ends every process of its
    # PID namespace, and to nspawn.
    if kill -0 "$pid" 2>/dev/null; then
      [ -z "$leader" ] || kill -9 "$leader" 2>/dev/null || true
      kill -9 "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  fi
  rm -f "${BROOQ_TEST_TREE_CACHE:-/var/cache/brooq-test}/running/$pid"
}
