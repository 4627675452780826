#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs every Debian 12 package that building, testing and the demo need, then
# builds the NNG brooq links (deploy/nng/build.sh: Debian's nng 1.5.2 source with the
# fix for NNG issue #1518, static, into .deps/nng).
# Does nothing (and needs no network) when they are all present and NNG is built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

packages=(
  # build
  gcc clang clang-format make cmake pkg-config
  libpq-dev libmsgpack-dev libsodium-dev
  # NNG from Debian's source package (deploy/nng/build.sh): apt-get source needs
  # dpkg-dev to unpack; TLS is mbedtls
  dpkg-dev patch libmbedtls-dev
  # man pages (docs/man/*.scd)
  scdoc
  # the Debian packages (deploy/debs.sh) and their checks (man pages: man-db)
  build-essential debhelper lintian man-db
  # python3-brooq's packaging (debian/control: dh-sequence-python3)
  dh-python
  # tests
  # (systemd: systemd-analyze and systemd-sysusers check deploy/systemd, and its
  # environment.d generator is the reference for the env file syntax)
  libcriterion-dev valgrind util-linux procps systemd
  # the client library's ABI check (tests/abi_test.sh: abidw, abidiff)
  abigail-tools
  # tests/run.sh --under-load: a CPU burner on every core while the suite runs
  stress-ng
  # the test scripts' checks (layout_test.sh, observability_test.sh, install_test.sh)
  python3
  # the Python package (client/python: cffi in ABI mode, no compiler at install) and its
  # pytest suite (tests/python); pip/venv/setuptools/wheel install it as docs/python.md says
  python3-cffi python3-pytest python3-pip python3-venv python3-setuptools python3-wheel
  # the benchmark's Python comparison (tests/bench/python): Celery and RQ on Redis
  python3-celery python3-rq python3-redis redis-server
  # the private PostgreSQL for tests, benchmarks and the demo; tzdata: the time zones
  # PostgreSQL reads for schedules' cron slots (and BROOQ_SCHEDULES's check)
  postgresql-15 postgresql-client-15 tzdata
  # promtool and a real Prometheus for the observability tests
  prometheus
  # the charts of the benchmark's soak (tests/bench/run.sh --soak)
  gnuplot-nox
  # the web console's tests: a real browser (tests/console/, driven by puppeteer-core
  # from npm: tests/console/setup.sh), a font for its screenshots, curl for HTTPS
  chromium fonts-dejavu-core curl nodejs
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "deps: done"
fi

"$here/nng/build.sh"
