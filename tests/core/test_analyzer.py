"""core/analyzer.py: replaying recorded inputs through fresh sessions."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from mcpsniff.core import analyzer
from mcpsniff.core.model import (
    C2S,
    S2C,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)


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
    from mcpsniff.core.session import Session, classification

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
