"""``mcpsniff mcp --http``: Streamable HTTP on loopback, over a real socket."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "mcp", str(RECORDINGS), "--http",
         "--listen", "127.0.0.1:0"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
    assert match is not None, line
    yield int(match.group(1))
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)


def request(
    port: int, method: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    sent.update(headers or {})
    connection.request(method, "/mcp", body=body, headers=sent)
    response = connection.getresponse()
    out = response.status, dict(response.getheaders()), response.read()
    connection.close()
    return out


def test_a_request_gets_json(port: int) -> None:
    status, headers, body = request(port, "POST", PING)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_a_notification_gets_202(port: int) -> None:
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _, body = request(port, "POST", note)
    assert (status, body) == (202, b"")


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Host": "evil.example.com"}, 403),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "http://localhost:3000"}, 200),
        ({"MCP-Protocol-Version": "1999-01-01"}, 400),
        ({"MCP-Protocol-Version": "2025-06-18"}, 200),
    ],
)
def test_host_origin_and_version_checks(port: int, headers: dict[str, Any], expected: int) -> None:
    assert request(port, "POST", PING, headers)[0] == expected


def test_no_stream_no_session(port: int) -> None:
    assert request(port, "GET")[0] == 405
    assert request(port, "DELETE")[0] == 405


def test_not_json_is_400_with_a_parse_error(port: int) -> None:
    status, _, body = request(port, "POST", b"{oops")
    assert status == 400 and json.loads(body)["error"]["code"] == -32700


def test_refuses_a_wildcard_address() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "mcp", str(RECORDINGS), "--http", "--listen",
         "0.0.0.0:0"],
        cwd=ROOT, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and b"loopback addresses only" in proc.stderr
