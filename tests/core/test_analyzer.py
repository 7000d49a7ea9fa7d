"""core/analyzer.py: replaying recorded inputs through fresh sessions."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core import analyzer
from mcpsniff.core.analyzer import Analyzer, replay, replay_batches
from mcpsniff.core.model import (
    C2S,
    S2C,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.session import Session
from mcpsniff.trace.reader import TraceReader


def _inputs() -> list[FrameRecord | EventRecord]:
    """Two interleaved stdio sessions, events between frames, and a run longer than MAX_RUN."""
    inputs: list[FrameRecord | EventRecord] = []
    seq = 0

    def frame(session: str, direction: str, message: object) -> None:
        nonlocal seq
        seq += 1
        raw = message if isinstance(message, bytes) else orjson.dumps(message) + b"\n"
        inputs.append(FrameRecord(seq, seq / 1000, session, direction, "stdio", raw))

    def event(session: str, name: str) -> None:
        nonlocal seq
        seq += 1
        inputs.append(EventRecord(seq, seq / 1000, session, name, {}))

    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    for session in ("a", "b"):
        event(session, "session-start")
        frame(session, C2S, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    for session in ("a", "b"):
        frame(
            session,
            S2C,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        )
        frame(session, C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(2, 2 + analyzer.MAX_RUN * 2):
        frame("a", C2S, {"jsonrpc": "2.0", "id": i, "method": "ping"})
        if i % 7 == 0:
            event("a", "stderr")
        if i % 11 == 0:
            frame("b", C2S, {"jsonrpc": "2.0", "id": i, "method": "ping"})
    frame("a", S2C, {"jsonrpc": "2.0", "id": 3, "result": {}})
    frame("a", S2C, {"jsonrpc": "2.0", "id": 3, "result": {}})  # a duplicate: JR-RESP-ID
    frame("b", S2C, b"not json\n")  # JR-PARSE
    event("b", "session-end")
    return inputs


def _fresh(inputs: list[FrameRecord | EventRecord]) -> list[FrameRecord | EventRecord]:
    return [dataclasses.replace(r) for r in inputs]


def _shown(records: list[Record]) -> list[str]:
    return [repr(r) for r in records]


@pytest.mark.parametrize("limit", [1, 3, analyzer.MAX_RUN])
def test_runs_of_frames_give_the_records_of_one_frame_at_a_time(
    monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    inputs = _inputs()
    monkeypatch.setattr(analyzer, "MAX_RUN", 1)
    one_by_one = list(analyzer.replay(_fresh(inputs)))
    monkeypatch.setattr(analyzer, "MAX_RUN", limit)
    in_runs = list(analyzer.replay(_fresh(inputs)))
    assert _shown(in_runs) == _shown(one_by_one)
    rules = [r.rule for r in in_runs if hasattr(r, "rule")]
    assert "JR-PARSE" in rules and "JR-RESP-ID" in rules
    # Every input comes back first among the records it produced, in input order.
    echoed = [
        r.seq for r in in_runs if isinstance(r, FrameRecord | EventRecord) and r.seq <= len(inputs)
    ]
    assert echoed[: len(inputs)] == [r.seq for r in inputs]


def test_replay_batches_hold_the_records_of_replay_in_order_one_session_each() -> None:
    inputs = _inputs()
    flat = list(analyzer.replay(_fresh(inputs)))
    batches = list(analyzer.replay_batches(_fresh(inputs)))
    assert _shown([r for batch in batches for r in batch]) == _shown(flat)
    # One analyzer call each: a run of frames (at most MAX_RUN) or one event,
    # all of one session, so a caller can walk them without a hop per record.
    assert len(batches) < len(flat)
    for batch in batches:
        assert len({r.session for r in batch}) == 1
        assert sum(type(r) is FrameRecord for r in batch) <= analyzer.MAX_RUN


def _notable(records: list[Record]) -> list[str]:
    return _shown([r for r in records if type(r) in (FindingRecord, EventRecord)])


@pytest.mark.parametrize("limit", [1, 3, analyzer.MAX_RUN])
def test_replay_notable_gives_the_findings_and_events_of_replay_in_order(
    monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    inputs = _inputs()
    monkeypatch.setattr(analyzer, "MAX_RUN", limit)
    flat = list(analyzer.replay(_fresh(inputs)))
    used = analyzer.Analyzer()
    notable = list(analyzer.replay_notable(_fresh(inputs), used))
    assert _shown(notable) == _notable(flat)
    rules = [r.rule for r in notable if type(r) is FindingRecord]
    assert "JR-PARSE" in rules and "JR-RESP-ID" in rules
    # The input events and the synthetic end of session "a" are all there.
    assert [r.event for r in notable if type(r) is EventRecord].count("stderr") == 18
    assert list(used.sessions) == ["a", "b"]


def test_replay_notable_keeps_analyzer_errors_and_skips_only_quiet_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpsniff.core.session import classification

    inputs = _inputs()
    real = classification.message

    def failing(session: Session, obj: object, frame: FrameRecord, index: int | None) -> object:
        if frame.seq == 40:
            raise RuntimeError("boom")
        return real(session, obj, frame, index)

    monkeypatch.setattr(classification, "message", failing)
    flat = list(analyzer.replay(_fresh(inputs)))
    notable = list(analyzer.replay_notable(_fresh(inputs)))
    assert _shown(notable) == _notable(flat)
    assert [r.seq for r in notable if getattr(r, "event", None) == "analyzer-error"] == [40]


def test_a_record_emitted_by_a_rule_that_is_not_a_message_counts_as_notable() -> None:
    from mcpsniff.core.session import Session

    session = Session("s")
    session.output = []
    session.emit(EventRecord(1, 0.0, "s", "something", {}))
    assert session.notable == 1
    session.emit(MessageRecord(2, "s", C2S, "request"))
    assert session.notable == 1


# ------------------------------------------------------------ hostile field types

# ``mcpsniff check`` on handcrafted traces whose fields have hostile types.
#
# Found by mutating every field of real server-everything traces (Streamable
# HTTP and HTTP+SSE, recorded through ``mcpsniff http``) and of the gallery
# recordings into null, numbers, strings, lists, objects and lone surrogates,
# and replaying each through the analyzer: ``check`` never raised, but an
# sse-event whose exchange was a list made rules/sse_legacy raise (fixed on main
# by d77964c meanwhile; kept as a regression test), and a rule that raises is
# caught by ``Session`` as an ``analyzer-error`` record that ``check`` does not
# mention at all.


HEADER = {
    "type": "header",
    "format": "mcpsniff-trace",
    "version": 2,
    "meta": {"source": "mcpsniff http", "upstream": "http://127.0.0.1:3001/sse"},
}

SESSION = "sse-1"


def _event(seq: int, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "event",
        "seq": seq,
        "t": 1.0 + seq,
        "session": SESSION,
        "event": name,
        "data": data,
    }


def _legacy_stream(exchange: Any) -> list[dict[str, Any]]:
    """A legacy GET /sse stream whose endpoint event names ``exchange``."""
    return [
        HEADER,
        _event(
            1,
            "http-request",
            {
                "exchange": 1,
                "method": "GET",
                "path": "/sse",
                "headers": [["Host", "127.0.0.1:3001"], ["Accept", "text/event-stream"]],
                "transport": "legacy-sse",
            },
        ),
        _event(
            2,
            "http-response",
            {"exchange": 1, "status": 200, "headers": [["Content-Type", "text/event-stream"]]},
        ),
        _event(
            3,
            "sse-event",
            {
                "exchange": exchange,
                "index": 0,
                "event": "endpoint",
                "endpoint": "/message?sessionId=1",
            },
        ),
    ]


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _analyzer_errors(path: Path) -> list[str]:
    with TraceReader(path) as reader:
        return [
            record.data["error"]
            for record in replay(reader.inputs())
            if isinstance(record, EventRecord) and record.event == "analyzer-error"
        ]


def test_an_endpoint_event_of_a_known_exchange_raises_nothing(tmp_path: Path) -> None:
    """The near-miss: the same stream with an integer exchange number."""
    assert _analyzer_errors(_write(tmp_path, _legacy_stream(1))) == []


@pytest.mark.parametrize("exchange", [[], {}, [1]], ids=["list", "object", "list-of-one"])
def test_an_endpoint_event_with_an_unhashable_exchange_is_no_analyzer_error(
    tmp_path: Path, exchange: Any
) -> None:
    assert _analyzer_errors(_write(tmp_path, _legacy_stream(exchange))) == []


def test_check_says_when_the_analyzer_failed_on_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user must not read "nothing at or above error" when part of the trace was not
    analyzed (the rules after the failing one never ran on that record). The rule bug
    that showed it (an sse-event with a list as exchange) is fixed; any rule that raises
    shows it again, here every report."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a rule bug")

    monkeypatch.setattr(Session, "report", broken)
    path = Path(__file__).resolve().parents[2] / "recordings" / "trailing-comma.jsonl"
    assert _analyzer_errors(path)  # the premise: the analyzer did fail here
    result = CliRunner().invoke(main, ["check", str(path)])
    assert "analyzer" in (result.output + (result.stderr or "")).lower(), result.output


# ------------------------------------------------------------ state per session

# The analyzer keeps every session it has seen, about 7.6 KB each, forever.
#
# ``Analyzer.sessions`` is a plain dict, and a session leaves it never (the state
# of an ended one stays too). Each distinct session key costs ~7.6 KB of state
# (measured with tracemalloc: 2,000 and 8,000 one-request sessions, 7,658 and
# 7,666 B each). A 30 MB hostile trace of 200,000 one-frame sessions costs
# ``check`` 84 s and 1.8 GB (stats: 3.6 s, 30 MB); live, every Mcp-Session-Id a
# client opens and never DELETEs stays in ``mcpsniff http``'s analysis process:
# one new session a second is 4.6 GB after a week. docs/performance.md: check's memory is
# "flat: state depends on requests in flight"; it depends on sessions seen.


REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}\n'


def _frames(start: int, count: int) -> Iterator[FrameRecord]:
    for i in range(start, start + count):
        yield FrameRecord(i + 1, 1.0 + i * 1e-3, f"s{i}", "c2s", "stdio", REQUEST)


def test_analyzer_state_does_not_grow_with_the_sessions_seen() -> None:
    # The cap (core/analyzer.py MAX_SESSIONS, 10,000) lowered so that 4,000 and
    # 8,000 sessions both pass it: past the cap, memory is flat but for the
    # dropped keys remembered (~100 B each, MAX_DROPPED_KEYS).
    analyzer = Analyzer(max_sessions=1_000)
    tracemalloc.start()
    try:
        for _ in replay_batches(_frames(0, 4_000), analyzer):
            pass
        after_4k = tracemalloc.get_traced_memory()[0]
        for _ in replay_batches(_frames(4_000, 4_000), analyzer):
            pass
        after_8k_sessions = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Twice the sessions, each with its one request still in flight: flat, as
    # check's memory is for twice the messages (benchmarks/bench_memory.py).
    assert after_8k_sessions < 1.25 * after_4k, (after_4k >> 20, after_8k_sessions >> 20)
