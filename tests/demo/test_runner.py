"""``run_demo``: a real client and a real server, relayed and recorded by mcpsniff."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.demo.runner import DemoResult, run_demo
from mcpsniff.demo.server import ServerOptions
from mcpsniff.trace.reader import TraceReader
from tests.demo.loopback import loopback_session

#: initialize, tools/list, add, slow_count, resources/list, resources/read,
#: prompts/list, prompts/get, logging/setLevel, echo, ping.
REQUESTS = 11


def _run(tmp_path: Path, **kwargs: object) -> tuple[DemoResult, list[Record]]:
    result = run_demo(tmp_path / "demo.jsonl", **kwargs)  # type: ignore[arg-type]
    with TraceReader(result.trace_path) as reader:
        records = list(reader.records())
        assert reader.torn is None
    return result, records


def _frames(records: list[Record], direction: str) -> list[FrameRecord]:
    return [r for r in records if isinstance(r, FrameRecord) and r.direction == direction]


def _messages(records: list[Record], kind: str, direction: str) -> list[MessageRecord]:
    return [
        r
        for r in records
        if isinstance(r, MessageRecord) and r.kind == kind and r.direction == direction
    ]


def _findings(records: list[Record]) -> list[FindingRecord]:
    return [r for r in records if isinstance(r, FindingRecord)]


def _events(records: list[Record], name: str) -> list[EventRecord]:
    return [r for r in records if isinstance(r, EventRecord) and r.event == name]


def test_clean_session(tmp_path: Path) -> None:
    result, records = _run(tmp_path)
    assert result.client_exit == 0, result.client_log
    assert result.server_exit == 0
    assert result.ok
    assert result.frames == sum(isinstance(r, FrameRecord) for r in records)
    assert result.client_log.endswith(
        f"demo client: {REQUESTS} requests answered, 4 notifications (3 progress, 1 log), "
        "protocol 2025-11-25\n"
    )

    # Every request got exactly one response, pointing back at the request's frame.
    requests = _messages(records, "request", "c2s")
    responses = _messages(records, "response", "s2c")
    assert len(requests) == REQUESTS
    assert sorted(r.answers for r in responses) == [r.frame for r in requests]
    assert all(r.note is None and r.latency_ms is not None for r in responses)
    assert [r.method for r in requests][:3] == ["initialize", "tools/list", "tools/call"]
    assert _messages(records, "request", "s2c") == []

    # No error-severity finding at all: both peers are conforming.
    assert [f for f in _findings(records) if f.severity == "error"] == []
    assert [f.rule for f in result.findings] == [f.rule for f in _findings(records)]

    notifications = _messages(records, "notification", "s2c")
    assert [n.method for n in notifications].count("notifications/progress") == 3
    assert [n.method for n in notifications].count("notifications/message") == 1
    assert [n.method for n in _messages(records, "notification", "c2s")] == [
        "notifications/initialized"
    ]

    # The relay is byte for byte: the recorded streams are exactly what the
    # two (deterministic) peers exchange when wired to each other directly.
    reference = loopback_session()
    assert b"".join(f.raw for f in _frames(records, "c2s")) == reference.c2s
    assert b"".join(f.raw for f in _frames(records, "s2c")) == reference.s2c
    assert len(_frames(records, "c2s")) == REQUESTS + 1  # + notifications/initialized


def test_trace_events(tmp_path: Path) -> None:
    _, records = _run(tmp_path)
    with TraceReader(tmp_path / "demo.jsonl") as reader:
        assert reader.header["meta"]["source"] == "mcpsniff demo"
    assert isinstance(records[0], EventRecord)
    assert records[0].event == "session-start"
    assert records[0].data["transport"] == "stdio"
    assert records[0].data["command"][-2:] == ["-m", "mcpsniff.demo.server"]
    stderr = [e.data["line"] for e in _events(records, "stderr")]
    assert stderr[0].startswith("demo server: started")
    assert "demo server: stdin closed; exiting" in stderr
    assert [e.data for e in _events(records, "exit")] == [{"client": 0, "server": 0}]
    assert isinstance(records[-1], EventRecord)
    assert records[-1].event == "session-end"
    seqs = [r.seq for r in records if isinstance(r, FrameRecord | EventRecord)]
    assert seqs == sorted(seqs)


def test_replay_reproduces_the_live_findings(tmp_path: Path) -> None:
    _, records = _run(tmp_path, server_args=["--banner", "--string-ids"])
    with TraceReader(tmp_path / "demo.jsonl") as reader:
        replayed = list(replay(reader.inputs()))
    assert _findings(replayed) == _findings(records)
    # `size` is not stored in the trace (it is the frame's length), so leave it out.
    assert [replace(r, size=None) for r in replayed if isinstance(r, MessageRecord)] == [
        r for r in records if isinstance(r, MessageRecord)
    ]


def test_banner_on_stdout(tmp_path: Path) -> None:
    result, records = _run(tmp_path, server_args=["--banner"])
    assert (result.client_exit, result.server_exit) == (0, 0), result.client_log
    assert "demo client: skipping a line that is not JSON: 'Loading model...'" in result.client_log
    first = _frames(records, "s2c")[0]
    assert first.raw == b"Loading model...\n"
    findings = _findings(records)
    parse = [f for f in findings if f.rule == "JR-PARSE"]
    assert len(parse) == 1
    assert parse[0].data["cause"] == "log-line"
    assert parse[0].seq == [first.seq]
    clean = [f for f in findings if f.rule == "STDIO-STDOUT-CLEAN"]
    assert [f.seq for f in clean] == [[first.seq]]
    assert {f.rule for f in findings} == {"JR-PARSE", "STDIO-STDOUT-CLEAN"}
    # The session itself is still fully correlated.
    assert len(_messages(records, "response", "s2c")) == REQUESTS


def test_missing_initialized_notification(tmp_path: Path) -> None:
    result, records = _run(tmp_path, client_args=["--skip-initialized"])
    assert (result.client_exit, result.server_exit) == (0, 0), result.client_log
    findings = _findings(records)
    missing = [f for f in findings if f.rule == "LC-INITIALIZED-MISSING"]
    assert len(missing) == 1
    init = _messages(records, "request", "c2s")[0]
    assert init.method == "initialize"
    assert missing[0].seq[0] == init.frame
    assert _messages(records, "notification", "c2s") == []
    stderr = [e.data["line"] for e in _events(records, "stderr")]
    assert "demo server: tools/list arrived before notifications/initialized" in stderr


def test_string_ids(tmp_path: Path) -> None:
    result, records = _run(tmp_path, server_args=["--string-ids"])
    assert (result.client_exit, result.server_exit) == (0, 0), result.client_log
    assert "demo client: the server echoed id 1 as '1'; matching it anyway" in result.client_log
    id_type = [f for f in _findings(records) if f.rule == "JR-RESP-ID"]
    assert len(id_type) == REQUESTS
    assert {f.data["cause"] for f in id_type} == {"id-type"}
    assert id_type[0].data["request_id"] == 1
    assert id_type[0].data["response_id"] == "1"
    # Still paired with their requests, and marked as mismatched.
    responses = _messages(records, "response", "s2c")
    assert {r.note for r in responses} == {"id-type-mismatch"}
    assert sorted(r.answers for r in responses) == [
        r.frame for r in _messages(records, "request", "c2s")
    ]


def test_timeout_kills_both_and_still_finishes_the_trace(tmp_path: Path) -> None:
    result, records = _run(tmp_path, timeout=0.01)
    assert result.timed_out
    assert not result.ok
    assert result.client_exit is not None and result.client_exit < 0
    assert result.server_exit is not None and result.server_exit < 0
    exits = _events(records, "exit")
    assert len(exits) == 1
    assert exits[0].data["timed_out"] is True
    assert isinstance(records[-1], EventRecord | FindingRecord)
    assert _events(records, "session-end")


def test_existing_trace_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    path.write_text("precious\n")
    with pytest.raises(FileExistsError):
        run_demo(path)
    assert path.read_text() == "precious\n"


def test_loopback_reference_matches_with_banner() -> None:
    # Sanity check of the reference itself: the banner comes first on s2c only.
    plain = loopback_session()
    banner = loopback_session(ServerOptions(banner=True))
    assert banner.c2s == plain.c2s
    assert banner.s2c == b"Loading model...\n" + plain.s2c


def test_server_that_dies_at_once(tmp_path: Path) -> None:
    # argparse rejects the option: the server exits 2 before reading anything,
    # so the relay's writes to its stdin fail and the client sees EOF.
    result, records = _run(tmp_path, server_args=["--no-such-option"])
    assert result.server_exit == 2
    assert result.client_exit == 1
    assert "the server closed the connection before answering initialize" in result.client_log
    assert any("unrecognized arguments" in e.data["line"] for e in _events(records, "stderr"))
    assert [m.method for m in _messages(records, "request", "c2s")] == ["initialize"]
    unanswered = [f for f in _findings(records) if f.rule == "JR-RESP-REQUIRED"]
    assert [f.data["method"] for f in unanswered] == ["initialize"]


def test_spawn_failure_still_finishes_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    path = tmp_path / "demo.jsonl"
    with pytest.raises(FileNotFoundError):
        run_demo(path)
    with TraceReader(path) as reader:
        records = list(reader.records())
    assert [e.data for e in _events(records, "exit")] == [{"client": None, "server": None}]
    assert _events(records, "session-end")
