#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian 12 package that building, testing and the demo need.
# Does nothing (and needs no network) when they are all present.
set -euo pipefail

packages=(
  # build
  gcc clang clang-format make cmake pkg-config
  libpq-dev libnng-dev libmsgpack-dev libsodium-dev
  # tests (systemd: systemd-analyze and systemd-sysusers check deploy/systemd, and its
  # environment.d generator is the reference for the env file syntax)
  libcriterion-dev valgrind util-linux procps systemd
  # the private PostgreSQL for tests, benchmarks and the demo
  postgresql-15 postgresql-client-15
  # promtool and a real Prometheus for the observability tests
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
