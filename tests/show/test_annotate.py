"""``show`` prints the W3C trace context of ``params._meta``: short, full with -v, in JSON."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.writer import TraceWriter
from tests.conftest import Conversation, notification, request, result

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
GOOD = f"00-{TRACE}-{PARENT}-01"


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = Conversation()
    c.handshake()
    meta = {"traceparent": GOOD, "tracestate": "rojo=00f067aa0ba902b7"}
    c.client(request(1, "tools/call", {"name": "echo", "arguments": {}, "_meta": meta}))
    c.server(result(1, {"content": []}))
    bad = f"00-{'0' * 32}-{PARENT}-01"
    params = {"name": "echo", "arguments": {}, "_meta": {"traceparent": bad}}
    c.client(request(2, "tools/call", params))
    c.server(result(2, {"content": []}))
    hostile = {"traceparent": "\x1b]52;c;AAAA\x07\u202e", "tracestate": "x"}
    c.client(request(3, "tools/list", {"_meta": hostile}))
    c.server(result(3, {"tools": []}))
    c.server(
        notification(
            "notifications/message",
            {"level": "info", "data": "x", "_meta": {"traceparent": GOOD, "tracestate": "Bad"}},
        )
    )
    c.close()
    path = tmp_path_factory.mktemp("trace-context") / "t.jsonl"
    writer = TraceWriter.create(path, meta={})
    writer.write_all(c.records)
    writer.close()
    return path


def show(*args: str) -> list[str]:
    outcome = CliRunner().invoke(main, ["show", *args])
    assert outcome.exit_code == 0, outcome.output
    return outcome.output.splitlines()


def _index(lines: list[str], kind: str, id_: int) -> int:
    return next(n for n, line in enumerate(lines) if f"{kind}" in line and f"id={id_} " in line)


def test_timeline_shows_the_short_trace_id_on_the_request_line(trace: Path) -> None:
    lines = show(str(trace))
    i = _index(lines, "request", 1)
    assert lines[i].endswith("tools/call echo trace=4bf92f35")
    assert "trace=" not in lines[i + 1]  # the response line: the id is the request's
    assert TRACE not in "\n".join(lines)  # the full id only with -v


def test_verbose_shows_the_whole_context(trace: Path) -> None:
    lines = show(str(trace), "-v", "--filter", "id == 1")
    i = _index(lines, "request", 1)
    assert lines[i + 1].strip() == (
        f'trace {TRACE} parent {PARENT} flags 01 (sampled) tracestate "rojo=00f067aa0ba902b7"'
    )


def test_invalid_traceparent_is_an_annotation_not_a_finding(trace: Path) -> None:
    lines = show(str(trace))
    i = _index(lines, "request", 2)
    assert "trace=" not in lines[i]
    assert lines[i + 1].strip() == (
        "⚠ traceparent is not W3C Trace Context: trace-id is all zeros, which W3C Trace "
        f'Context forbids: "00-{"0" * 32}-{PARENT}-01"'
    )
    outcome = CliRunner().invoke(main, ["check", str(trace), "--format", "json"])
    assert "traceparent" not in outcome.output


def test_hostile_traceparent_is_escaped(trace: Path) -> None:
    lines = show(str(trace), "-v")
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    i = _index(lines, "request", 3)
    assert "version is not 2 lowercase hex digits" in lines[i + 1]
    assert "\\x1b]52;c;AAAA\\x07\\u202e" in lines[i + 1]


def test_tracestate_problem_is_named(trace: Path) -> None:
    lines = show(str(trace))
    i = next(n for n, line in enumerate(lines) if "notifications/message" in line)
    assert lines[i].endswith("trace=4bf92f35")
    assert lines[i + 1].strip().startswith("⚠ tracestate: a list-member is not key=value")


def test_json_carries_the_context_and_responses_the_trace_id(trace: Path) -> None:
    objs = [orjson.loads(line) for line in show(str(trace), "--format", "json")]
    request = next(o for o in objs if o.get("id") == 1 and o["kind"] == "request")
    assert request["trace"] == {
        "traceparent": GOOD,
        "valid": True,
        "version": "00",
        "trace_id": TRACE,
        "parent_id": PARENT,
        "flags": "01",
        "sampled": True,
        "tracestate": "rojo=00f067aa0ba902b7",
    }
    response = next(o for o in objs if o.get("id") == 1 and o["kind"] == "response")
    assert response["trace_id"] == TRACE and "trace" not in response
    bad = next(o for o in objs if o.get("id") == 2 and o["kind"] == "request")
    assert bad["trace"]["valid"] is False and "all zeros" in bad["trace"]["problem"]
    assert "trace_id" not in next(o for o in objs if o.get("id") == 2 and o["kind"] == "response")


def test_filter_by_trace_id(trace: Path) -> None:
    lines = show(str(trace), "--filter", f"trace.id == {TRACE}")
    assert len([line for line in lines if line[:1].isdigit()]) == 3  # request, response, log
