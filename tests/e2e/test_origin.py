"""HTTP-ORIGIN on real servers: a browser page elsewhere talking to a local MCP server.

A request with ``Origin: http://evil.example`` (a DNS-rebinding page) and one from
another local port (``http://localhost:6274``, where the MCP Inspector's page
lives) go through ``mcpsniff http`` to each server:

* the official SDK 2.x server validates Origin and answers the foreign page 403
  Forbidden (2025-11-25: "If the Origin header is present and invalid, servers
  MUST respond with HTTP 403 Forbidden"): no finding;
* server-everything (Streamable HTTP) answers both with 200. KNOWN PEER BUG: it
  does not validate Origin, and mcpsniff reports exactly one HTTP-ORIGIN
  warning, for the foreign page only.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord, FindingRecord
from tests.e2e.test_http_peers import (
    EVERYTHING,
    EVERYTHING_JS,
    SDK2_HTTP_SERVER,
    SDK2_PYTHON,
    Relay,
    Server,
)

FOREIGN = "http://evil.example"
INSPECTOR = "http://localhost:6274"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "origin-test", "version": "1"},
    },
}


def _post(url: str, origin: str) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        method="POST",
        headers={
            "Origin": origin,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code


def _run(command: list[str], env: dict[str, str], tmp: Path) -> tuple[dict[str, int], list]:
    """Both origins through mcpsniff to the server: statuses, and the trace's records."""
    server = Server(command, env, tmp / "server.log")
    try:
        relay = Relay(server.url("/mcp"), tmp / "trace.jsonl")
        statuses = {origin: _post(relay.url, origin) for origin in (FOREIGN, INSPECTOR)}
        records = relay.stop()
    finally:
        server.stop()
    return statuses, records


def _origin_findings(records: list) -> list[FindingRecord]:
    return [r for r in records if isinstance(r, FindingRecord) and r.rule == "HTTP-ORIGIN"]


@pytest.mark.skipif(not SDK2_PYTHON.exists(), reason=".peers/sdk2 is missing")
def test_sdk2_server_refuses_a_foreign_origin_and_nothing_is_reported(tmp_path: Path) -> None:
    statuses, records = _run([str(SDK2_PYTHON), str(SDK2_HTTP_SERVER), "{port}"], {}, tmp_path)
    assert statuses == {FOREIGN: 403, INSPECTOR: 200}
    assert _origin_findings(records) == []


@pytest.mark.skipif(not EVERYTHING_JS.exists(), reason="server-everything is missing")
def test_server_everything_accepts_a_foreign_origin_and_it_is_reported(tmp_path: Path) -> None:
    statuses, records = _run([*EVERYTHING, "streamableHttp"], {"PORT": "{port}"}, tmp_path)
    # KNOWN PEER BUG: no Origin validation (both pages get 200).
    assert statuses == {FOREIGN: 200, INSPECTOR: 200}
    (finding,) = _origin_findings(records)
    assert finding.severity == "warning"
    assert finding.data["origin"] == FOREIGN and finding.data["status"] == 200
    requests = [r for r in records if isinstance(r, EventRecord) and r.event == "http-request"]
    foreign = next(r for r in requests if ["Origin", FOREIGN] in r.data["headers"])
    assert foreign.seq in finding.seq
