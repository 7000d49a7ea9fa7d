"""2026-07-28 Streamable HTTP through ``mcpsniff http``: real encodings stay clean, lax servers not.

* The official SDK 2.x client and server (``peers/sdk2_header_peers.py``)
  exchange tools whose names need the ``=?base64?...?=`` form in ``Mcp-Name``
  and whose parameters are mirrored as ``Mcp-Param-*`` headers: correct
  traffic, so nothing at warning or above, live or in ``mcpsniff check``, but
  the SHOULD on tool names (TOOL-NAME-FORMAT), which those two names break.
* A scripted server (``peers/lax_modern_server.py``) that answers every error
  with HTTP 200, accepts a call whose ``Mcp-Param-Region`` header is missing and
  answers DELETE with 200, driven by a scripted client: each fault is reported
  once, by the live relay and by ``check`` alike.
"""

from __future__ import annotations

import base64
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import EventRecord, FindingRecord
from tests.e2e.test_http_peers import (
    PEER_SCRIPTS,
    REPO,
    SDK2_PYTHON,
    Relay,
    Server,
    check_json,
    run_command,
)

MODERN = "2026-07-28"
HEADER_PEERS = PEER_SCRIPTS / "sdk2_header_peers.py"
LAX_SERVER = PEER_SCRIPTS / "lax_modern_server.py"


def _headers(event: EventRecord) -> dict[str, str]:
    return {name.lower(): value for name, value in event.data["headers"]}


@pytest.mark.skipif(not SDK2_PYTHON.exists(), reason="SDK 2.x peer not built (.peers/sdk2)")
def test_sdk2_header_encodings_stay_clean(tmp_path: Path) -> None:
    server = Server(
        [str(SDK2_PYTHON), str(HEADER_PEERS), "server", "{port}"], {}, tmp_path / "server.log"
    )
    try:
        relay = Relay(server.url("/mcp"), tmp_path / "trace.jsonl")
        try:
            out = run_command([str(SDK2_PYTHON), str(HEADER_PEERS), "client", relay.url], "client")
        finally:
            records = relay.stop()
    finally:
        server.stop()
    results = json.loads(out)
    assert results[0] == ["execute_sql", "get weather", "天気"]
    assert all(not failed for _, _, failed in results[1:])
    requests = [
        _headers(r) for r in records if isinstance(r, EventRecord) and r.event == "http-request"
    ]
    names = {h.get("mcp-name") for h in requests}
    encoded = "=?base64?" + base64.b64encode("天気".encode()).decode() + "?="
    assert {"get weather", encoded} <= names  # the encodings this test is about were used
    regions = {h.get("mcp-param-region") for h in requests} - {None}
    assert "us-west1" in regions and any(r.startswith("=?base64?") for r in regions)
    loud = sorted(
        (f.rule, f.data.get("tool"))
        for f in records
        if isinstance(f, FindingRecord) and f.severity in ("error", "warning")
    )
    assert loud == [("TOOL-NAME-FORMAT", "get weather"), ("TOOL-NAME-FORMAT", "天気")]
    _, found = check_json(tmp_path / "trace.jsonl")
    checked = sorted(
        (f["rule"], f["data"].get("tool"))
        for f in found
        if f.get("severity") in ("error", "warning")
    )
    assert checked == loud


def _post(url: str, payload: dict[str, Any], **headers: str) -> int:
    head = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": payload["method"],
        **headers,
    }
    data = json.dumps(payload).encode()
    request = urllib.request.Request(url, data, head, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _call(
    ident: int, method: str, params: dict[str, Any] | None = None, version: str = MODERN
) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "1"},
    }
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def test_a_lax_modern_server_is_caught(tmp_path: Path) -> None:
    server = Server([sys.executable, str(LAX_SERVER), "{port}"], {}, tmp_path / "server.log")
    trace = tmp_path / "trace.jsonl"
    try:
        relay = Relay(server.url("/mcp"), trace)
        try:
            assert _post(relay.url, _call(1, "tools/list")) == 200
            call = _call(
                2,
                "tools/call",
                {"name": "execute_sql", "arguments": {"region": "eu", "query": "q"}},
            )
            assert _post(relay.url, call, **{"Mcp-Name": "execute_sql"}) == 200
            old = _call(3, "tools/list", version="1900-01-01")
            assert _post(relay.url, old, **{"MCP-Protocol-Version": "1900-01-01"}) == 200
            assert _post(relay.url, _call(4, "tools/frobnicate")) == 200
            delete = urllib.request.Request(
                relay.url, method="DELETE", headers={"MCP-Protocol-Version": MODERN}
            )
            with urllib.request.urlopen(delete, timeout=20) as response:
                assert response.status == 200
        finally:
            records = relay.stop()
    finally:
        server.stop()
    live = sorted((f.rule, f.message) for f in records if isinstance(f, FindingRecord))
    rules = [rule for rule, _ in live]
    assert rules == sorted(
        [
            "MOD-HTTP-404-METHOD",  # -32601 under 200
            "MOD-HTTP-PARAM-HEADERS",  # the client left Mcp-Param-Region out
            "MOD-HTTP-PARAM-HEADERS",  # and the server accepted the call
            "MOD-HTTP-POST-ONLY",  # DELETE answered 200
            "MOD-UNSUPPORTED-VERSION",  # -32602 for 1900-01-01
            "MSG-METHOD-UNKNOWN",  # the client's tools/frobnicate (info)
        ]
    ), live
    # No header mismatch for the version the client sent consistently in both places.
    assert "MOD-HTTP-PROTO-HEADER" not in rules
    _, found = check_json(trace)
    assert sorted(f["rule"] for f in found) == rules
    assert REPO.exists()
