"""``mcpsniff export har``: a real HTTP session, checked against HAR 1.2's structure."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

from .har_schema import HAR_1_2
from .http_session import record_http_session
from .support import RECORDINGS, write_stdio_trace


def export_har(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["export", "har", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def http_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace, _ = record_http_session(tmp_path_factory.mktemp("har"))
    return trace


@pytest.fixture(scope="module")
def har(http_trace: Path) -> dict[str, Any]:
    out = http_trace.with_suffix(".har")
    code, output = export_har(str(http_trace), "-o", str(out))
    assert code == 0, output
    document = json.loads(out.read_text(encoding="utf-8"))
    assert f"wrote {len(document['log']['entries'])} entries" in output
    return document


def test_har_is_valid_har_1_2(har: dict[str, Any]) -> None:
    jsonschema.Draft7Validator(HAR_1_2).validate(har)
    assert har["log"]["creator"]["name"] == "mcpsniff"


def test_one_entry_per_recorded_exchange(har: dict[str, Any], http_trace: Path) -> None:
    with TraceReader(http_trace) as reader:
        requests = [
            r for r in reader.records() if isinstance(r, EventRecord) and r.event == "http-request"
        ]
    entries = har["log"]["entries"]
    assert len(entries) == len(requests)
    assert sorted(e["request"]["method"] for e in entries) == sorted(
        r.data["method"] for r in requests
    )
    for entry in entries:
        # The real upstream's URL, not the proxy's.
        assert entry["request"]["url"].startswith("http://127.0.0.1:")
        assert entry["request"]["url"].endswith("/mcp")
        timings = entry["timings"]
        assert entry["time"] == pytest.approx(
            timings["send"] + timings["wait"] + timings["receive"]
        )
        started = datetime.datetime.fromisoformat(entry["startedDateTime"].replace("Z", "+00:00"))
        assert started.year >= 2024


def test_tool_call_entry_carries_request_and_event_stream_bodies(har: dict[str, Any]) -> None:
    calls = [
        e
        for e in har["log"]["entries"]
        if '"method":"tools/call"' in e["request"].get("postData", {}).get("text", "")
        and '"name":"echo"' in e["request"]["postData"]["text"]
    ]
    assert len(calls) == 1
    entry = calls[0]
    assert entry["request"]["postData"]["mimeType"] == "application/json"
    content = entry["response"]["content"]
    assert entry["response"]["status"] == 200
    if content["mimeType"] == "text/event-stream":
        assert "event: message\n" in content["text"]
        data = [
            json.loads(line[len("data: ") :])
            for line in content["text"].splitlines()
            if line.startswith("data: {")
        ]
    else:
        data = [json.loads(content["text"])]
    [message] = [d for d in data if "result" in d]
    assert message["result"]["content"][0]["text"] == "Echo: hello from mcpsniff e2e"
    assert entry["timings"]["wait"] > 0


def test_stdio_trace_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    out = tmp_path / "x.har"
    code, output = export_har(str(RECORDINGS / "clean-2025-11-25.jsonl"), "-o", str(out))
    assert code == 2
    assert "stdio session" in output and "HAR describes HTTP" in output
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_hostile_headers_stay_valid_json(tmp_path: Path) -> None:
    """An exchange built from hostile metadata: still one valid HAR entry."""
    trace = write_stdio_trace(tmp_path / "t.jsonl", [])
    lines = trace.read_text(encoding="utf-8").splitlines()
    evil = {
        "type": "event",
        "seq": 10,
        "t": 1767225601.0,
        "session": "h",
        "event": "http-request",
        "data": {
            "exchange": 1,
            "method": "POST",
            "path": "/mcp?x=\u202e&y",
            "headers": [["X-Evil", "\x1b]0;t\x07"]],
        },
    }
    end = {
        "type": "event",
        "seq": 11,
        "t": 1767225600.5,  # earlier than the request: timings must stay >= 0
        "session": "h",
        "event": "http-end",
        "data": {"exchange": 1, "outcome": "client-closed", "body_bytes": "x"},
    }
    lines[2:2] = [json.dumps(evil), json.dumps(end)]
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "t.har"
    code, output = export_har(str(trace), "-o", str(out))
    assert code == 0, output
    assert "left out 1 stdio session" in output
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(HAR_1_2).validate(document)
    [entry] = document["log"]["entries"]
    assert entry["request"]["headers"] == [{"name": "X-Evil", "value": "\x1b]0;t\x07"}]
    assert entry["request"]["queryString"] == [
        {"name": "x", "value": "\u202e"},
        {"name": "y", "value": ""},
    ]
    assert entry["response"]["status"] == 0
    assert "outcome: client-closed" in entry["comment"]


def test_open_exchanges_hold_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bodies of exchanges still open are bounded together: the oldest is written early."""
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.export import har as har_module

    monkeypatch.setattr(har_module, "MAX_HELD", 1000)
    builder = har_module.HarBuilder("http://upstream:8080/mcp")
    for number in (1, 2):
        data = {"exchange": number, "method": "POST", "path": "/mcp", "headers": []}
        builder.feed(EventRecord(number * 10, 1.0, "s", "http-request", data))
        body = b"x" * 600
        builder.feed(
            FrameRecord(number * 10 + 1, 1.0, "s", "c2s", "http", body, {"exchange": number})
        )
    early = builder.take()
    assert len(early) == 1
    assert early[0]["request"]["url"] == "http://upstream:8080/mcp"
    assert early[0]["request"]["bodySize"] == 600
    assert "exchange 1" in early[0]["comment"]
    rest = builder.finish()
    assert [e["comment"].split(", ")[1] for e in rest] == ["exchange 2"]


def test_mitmproxy_reads_the_har_back(har: dict[str, Any], http_trace: Path) -> None:
    """A real HAR consumer: mitmproxy's HAR importer turns every entry back into a flow."""
    from mitmproxy import io as mitmio

    flows = mitmio.read_flows_from_paths([str(http_trace.with_suffix(".har"))])
    entries = har["log"]["entries"]
    assert len(flows) == len(entries)
    calls = [f for f in flows if f.request.content and b'"name":"echo"' in f.request.content]
    assert len(calls) == 1
    flow = calls[0]
    assert flow.request.method == "POST"
    assert flow.request.pretty_url.endswith("/mcp")
    assert flow.response is not None and flow.response.status_code == 200
    assert b"Echo: hello from mcpsniff e2e" in (flow.response.content or b"")


# ----------------------------------------------------------------------------
# `export har` redacts credentials by default, even from a trace recorded with --no-redact.


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
