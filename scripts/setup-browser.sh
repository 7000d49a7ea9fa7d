#!/usr/bin/env bash
# Install the real browser the UI tests drive: Debian's chromium.
#
# Playwright's own browser download is not reachable from here, so the tests
# drive the system Chromium through Playwright's Python package with
# executable_path=/usr/bin/chromium. Idempotent: nothing happens when the
# browser is already there. Needs root (or sudo) for apt-get.
set -uo pipefail

CHROMIUM="${MCPSNIFF_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "setup-browser: $CHROMIUM is missing and apt-get needs root; the browser tests will be skipped" >&2
        exit 0
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-browser: no apt-get here; install chromium yourself (the browser tests will be skipped)" >&2
    exit 0
fi

echo "== installing chromium for the UI tests"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || exit 2
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null || exit 2
[ -x "$CHROMIUM" ] || { echo "setup-browser: chromium installed but $CHROMIUM is missing" >&2; exit 2; }
