"""``export har`` redacts credentials by default, even from a trace recorded with --no-redact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLXNlY3JldC12YWx1ZQ"
QUERY_KEY = "q5Ecr3t-Query-Key"
COOKIE = "sid=C00kie-S3ssion-Value"
ARG_PASSWORD = "hunter2-Arg-Passw0rd"


def _unredacted_http_trace(path: Path) -> Path:
    writer = TraceWriter.create(path, meta={"source": "tests", "redacted": False})
    t = 1767225600.0
    request = {
        "exchange": 1,
        "method": "POST",
        "path": f"/mcp?api_key={QUERY_KEY}",
        "headers": [["Authorization", BEARER], ["Cookie", COOKIE], ["Accept", "*/*"]],
    }
    writer.write(EventRecord(1, t, "h", "http-request", request))
    body: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "login", "arguments": {"user": "ann", "password": ARG_PASSWORD}},
    }
    raw = json.dumps(body).encode()
    writer.write(FrameRecord(2, t + 0.01, "h", "c2s", "http", raw, {"exchange": 1}))
    response = {"exchange": 1, "status": 200, "headers": [["Set-Cookie", COOKIE]]}
    writer.write(EventRecord(3, t + 0.02, "h", "http-response", response))
    writer.write(EventRecord(4, t + 0.03, "h", "http-end", {"exchange": 1}))
    writer.close()
    return path


def _har(trace: Path, *extra: str) -> str:
    result = CliRunner().invoke(main, ["export", "har", str(trace), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_credentials_are_redacted_by_default(tmp_path: Path) -> None:
    har = _har(_unredacted_http_trace(tmp_path / "t.jsonl"))
    for secret in (BEARER.split()[1], QUERY_KEY, "C00kie-S3ssion-Value", ARG_PASSWORD):
        assert secret not in har, secret
    [entry] = json.loads(har)["log"]["entries"]
    headers = {h["name"]: h["value"] for h in entry["request"]["headers"]}
    assert headers["Accept"] == "*/*"
    assert "[REDACTED]" in headers["Authorization"]
    assert '"user": "ann"' in entry["request"]["postData"]["text"]


def test_no_redact_keeps_the_trace_as_it_is(tmp_path: Path) -> None:
    har = _har(_unredacted_http_trace(tmp_path / "t.jsonl"), "--no-redact")
    for secret in (BEARER, QUERY_KEY, COOKIE, ARG_PASSWORD):
        assert secret in har, secret
