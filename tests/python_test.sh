#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python package (client/python) from the source tree, against the library just built
# (BROOQ_LIB) and a real gateway (tests/python/conftest.py), with Debian's python3 and its
# python3-cffi and python3-pytest (deploy/deps.sh installs them). Missing ones fail the test:
# nothing is skipped.
# Usage: python_test.sh LIBBROOQ_CLIENT_SO
set -euo pipefail
lib=$1
shift
src=${BROOQ_SOURCE_DIR:?}
py=${BROOQ_PYTHON:-/usr/bin/python3}
export BROOQ_LIB=$lib
export PYTHONPATH=$src/client/python
export PYTHONDONTWRITEBYTECODE=1
cd "$src/tests/python"
exec "$py" -m pytest -p no:cacheprovider -q -ra "$@"
