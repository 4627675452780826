#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs one of the web console's browser test files with node's test runner (ctest calls
# this; tests/run.sh has started the PostgreSQL cluster they use).
#   tests/console/run.sh browser.test.mjs      the console
#   tests/console/run.sh pending.test.mjs      pause and resume
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup.sh"
command -v chromium >/dev/null || { echo "console tests: chromium not installed (deploy/deps.sh)" >&2; exit 1; }
exec node --test --test-reporter=spec --test-timeout=240000 "$here/$1"
