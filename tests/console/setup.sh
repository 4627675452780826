#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the browser tests' npm packages (puppeteer-core, axe-core) exactly as
# package-lock.json pins them, into tests/console/node_modules (git-ignored), without
# running their install scripts (no browser is downloaded: the tests drive Debian's
# chromium, installed by deploy/deps.sh). Does nothing, and needs no network, when that
# install matches the lock file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stamp="$here/node_modules/.brooq-lock"
want=$(cat "$here/package-lock.json" "$here/package.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
exec 9>"$here/.npm-install.lock"
flock 9
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "tests/console/setup.sh: npm not found (deploy/deps.sh installs nodejs)" >&2; exit 1; }
echo "console tests: installing npm packages from package-lock.json"
(cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
echo "$want" >"$stamp"
