#!/usr/bin/env bash
# Install everything the tests need, then run them. `.ci/run` runs exactly this.
#
# Everything is installed by this script into .venv/ (the project and its test
# extras), because a fresh machine has none of it. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${MCPSNIFF_VENV:-.venv}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    "$PYTHON" -m venv "$VENV" || exit 2
fi
echo "== installing mcpsniff and its test dependencies"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[test,otel]" || exit 2

if [ -x scripts/setup-peers.sh ]; then
    echo "== installing the real peers the end-to-end tests talk to"
    bash scripts/setup-peers.sh || exit 2
fi

bash scripts/setup-browser.sh || exit 2  # Debian's chromium for the web UI tests (tests/ui)
echo "== ruff"
"$VENV/bin/ruff" check . || exit 1
"$VENV/bin/ruff" format --check . || exit 1

echo "== pytest"
"$VENV/bin/python" -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
    # pytest's "no tests collected": not a failure of the code under test.
    echo "pytest collected no tests"
    exit 0
fi
exit "$status"
