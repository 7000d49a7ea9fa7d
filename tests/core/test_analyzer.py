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
from mcpsniff.core.analyzer import (
    MAX_SESSIONS,
    STATE_DROPPED,
    Analyzer,
    replay,
    replay_batches,
    replay_notable,
)
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


def test_a_none_input_ends_the_run_as_another_sessions_input_would() -> None:
    inputs = _inputs()
    alone = list(analyzer.replay_batches(_fresh(inputs)))
    # Session a's share, b's inputs standing as None (check/split.py's workers).
    own = [r if r.session == "a" else None for r in _fresh(inputs)]
    shared = Analyzer()
    batches = analyzer.replay_inputs(own, shared)
    mine: list[list[Record]] = []
    while True:
        try:
            mine.append(next(batches))
        except StopIteration as stop:
            last_t, last_seq = stop.value
            break
    # The same runs of a's frames, cut where one of b's inputs came between
    # (and the end replay_batches makes up for a, which replay_inputs leaves out).
    of_a = [b for b in alone if b[0].session == "a"]
    assert of_a[-1][0].data["synthetic"] is True  # type: ignore[union-attr]
    assert [_shown(b) for b in mine] == [_shown(b) for b in of_a[:-1]]
    assert last_seq == max(r.seq for r in inputs if r.session == "a")
    assert last_t == max(r.t for r in inputs if r.session == "a")
    assert not shared.sessions["a"].state.ended
    end = analyzer.end_unended(shared.sessions["a"], 999, 9.5)
    assert (end[0].seq, end[0].t, end[0].event) == (999, 9.5, "session-end")
    assert end[0].data == {"synthetic": True, "reason": "trace ended without session-end"}
    assert shared.sessions["a"].state.ended


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


# ----------------------------------------------------------------------------
# The analyzer keeps at most `max_sessions` sessions' state (core/analyzer.py).
#
# Past the cap the least recently active session's state is dropped, the drop
# is recorded as a `session-state-dropped` event, and the dropped session's
# later frames are judged as after a capture gap in both directions: no false
# unknown-id or lifecycle findings (rules catalogue §14).


INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
)
INIT_OK = (
    b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":'
    b'{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}'
CALL_OK = b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}'
LIST = b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
LIST_OK = b'{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}'


class _Frames:
    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, key: str, direction: str, raw: bytes) -> FrameRecord:
        self.seq += 1
        return FrameRecord(self.seq, float(self.seq), key, direction, "stdio", raw)


def _handshake(frame: _Frames, key: str) -> list[FrameRecord]:
    return [frame(key, "c2s", INIT), frame(key, "s2c", INIT_OK), frame(key, "c2s", INITIALIZED)]


def _findings(records: list[Record], key: str) -> list[str]:
    return [r.rule for r in records if isinstance(r, FindingRecord) and r.session == key]


def _drops(records: list[Record]) -> list[str]:
    return [r.session for r in records if isinstance(r, EventRecord) and r.event == STATE_DROPPED]


def _capped_trace(frame: _Frames) -> list[FrameRecord]:
    # "a" calls a tool, then two other sessions push it out of a 2-session cap
    # while its call is in flight; then its reply comes, and another request.
    return [
        *_handshake(frame, "a"),
        frame("a", "c2s", CALL),
        *_handshake(frame, "b"),
        *_handshake(frame, "c"),
        frame("a", "s2c", CALL_OK),
        frame("a", "c2s", LIST),
        frame("a", "s2c", LIST_OK),
    ]


def test_the_default_cap_is_documented_and_large() -> None:
    assert MAX_SESSIONS == 10_000
    assert Analyzer().max_sessions == MAX_SESSIONS


def test_a_session_past_the_cap_is_dropped_and_the_trace_says_so() -> None:
    analyzer = Analyzer(max_sessions=2)
    records = list(replay(_capped_trace(_Frames()), analyzer))
    # "a" was the least recently active when "c" came; then "a" came back and pushed out "b".
    assert _drops(records) == ["a", "b"]
    assert len(analyzer.sessions) == 2
    assert set(analyzer.sessions) == {"c", "a"}
    event = next(r for r in records if isinstance(r, EventRecord) and r.event == STATE_DROPPED)
    assert event.data == {"max_sessions": 2}


def test_a_dropped_session_coming_back_raises_no_false_findings() -> None:
    records = list(replay(_capped_trace(_Frames()), Analyzer(max_sessions=2)))
    # The reply to the forgotten call is not an unknown id, and the request after
    # the forgotten handshake is not one before initialize.
    assert _findings(records, "a") == []


def test_without_the_cap_the_same_trace_is_clean_too() -> None:
    records = list(replay(_capped_trace(_Frames()), Analyzer()))
    assert _findings(records, "a") == []
    assert _drops(records) == []


def test_the_excuse_is_counted_like_a_capture_gaps() -> None:
    analyzer = Analyzer(max_sessions=2)
    list(replay(_capped_trace(_Frames()), analyzer))
    excused = analyzer.sessions["a"].state.gaps.excused
    assert excused, "the withheld verdicts must be counted for check's note"


def test_a_returning_session_that_handshakes_again_is_judged_in_full() -> None:
    frame = _Frames()
    trace = [*_handshake(frame, "a"), *_handshake(frame, "b"), *_handshake(frame, "c")]
    # "a" comes back after its drop and sends a tool call before a new initialize
    # is answered: the gap is before its init, so that is judged.
    trace += [frame("a", "c2s", INIT), frame("a", "c2s", CALL)]
    records = list(replay(trace, Analyzer(max_sessions=2)))
    assert "LC-CLIENT-PRE-RESPONSE" in _findings(records, "a")


def test_a_recorded_drop_is_honoured_by_the_replay() -> None:
    # The live relay dropped "a" (its cap); check, with room to spare, drops it too,
    # so it judges a's later frames as the live relay did.
    frame = _Frames()
    trace: list[FrameRecord | EventRecord] = [*_handshake(frame, "a"), frame("a", "c2s", CALL)]
    frame.seq += 1
    trace.append(EventRecord(frame.seq, 9.0, "a", STATE_DROPPED, {"max_sessions": 1}))
    trace.append(frame("a", "s2c", CALL_OK))
    analyzer = Analyzer()
    records = list(replay(trace, analyzer))
    assert _drops(records) == ["a"]  # the trace's own record, once
    assert _findings(records, "a") == []
    assert analyzer.sessions["a"].state.gaps is not None


def test_a_recorded_drop_of_an_unknown_session_creates_nothing() -> None:
    drop = EventRecord(1, 1.0, "ghost", STATE_DROPPED, {"max_sessions": 1})
    analyzer = Analyzer()
    assert list(replay([drop], analyzer)) == [drop]
    assert analyzer.sessions == {}


def test_the_remembered_dropped_keys_are_bounded(monkeypatch) -> None:
    monkeypatch.setattr("mcpsniff.core.analyzer.MAX_DROPPED_KEYS", 5)
    frame = _Frames()
    analyzer = Analyzer(max_sessions=1)
    list(replay([frame(f"s{i}", "c2s", LIST) for i in range(50)], analyzer))
    assert len(analyzer.sessions) == 1
    assert len(analyzer.dropped) == 5
    assert list(analyzer.dropped) == [f"s{i}" for i in range(44, 49)]


def test_the_excuses_of_a_session_dropped_again_are_kept() -> None:
    frame = _Frames()
    trace = _capped_trace(frame)
    trace += [*_handshake(frame, "d"), *_handshake(frame, "e")]  # "a" dropped again
    analyzer = Analyzer(max_sessions=2)
    records = list(replay(trace, analyzer))
    assert "a" not in analyzer.sessions
    assert _drops(records).count("a") == 2
    assert analyzer.dropped_excused.get("JR-RESP-ID") == 1


def test_an_ended_session_is_dropped_before_one_still_in_flight() -> None:
    frame = _Frames()
    trace: list[FrameRecord | EventRecord] = [
        frame("live", "c2s", CALL),
        frame("done", "c2s", LIST),
    ]
    frame.seq += 1
    trace.append(EventRecord(frame.seq, 5.0, "done", "session-end", {}))
    trace.append(frame("new", "c2s", LIST))
    analyzer = Analyzer(max_sessions=2)
    records = list(replay(trace, analyzer))
    # "live" is the least recently active, but its call is in flight; "done" ended.
    assert _drops(records) == ["done"]
    assert set(analyzer.sessions) == {"live", "new"}


def test_a_long_dropped_key_is_remembered_by_a_digest() -> None:
    frame = _Frames()
    long_key = "k" * 100_000
    trace = [frame(long_key, "c2s", CALL), frame("b", "c2s", LIST), frame(long_key, "s2c", CALL_OK)]
    analyzer = Analyzer(max_sessions=1)
    records = list(replay(trace, analyzer))
    # Remembered in 16 bytes, and still known when it comes back: its reply is excused.
    assert all(len(k) <= 128 for k in analyzer.dropped)
    assert _findings(records, long_key) == ["LC-INIT-FIRST"]  # its first frame's, not the reply's


def test_check_s_notable_replay_walks_the_drops_too() -> None:
    """``replay_notable`` (check's loop) gives replay's findings and events under the cap.

    A drop's batch belongs to a session no longer kept: it must be walked, not
    looked up among the kept sessions (which raised KeyError).
    """
    frame = _Frames()
    trace = [*_capped_trace(frame), frame("a", "c2s", CALL)]  # a's call never answered
    full = [
        r
        for r in replay(trace, Analyzer(max_sessions=2))
        if isinstance(r, (FindingRecord, EventRecord))
    ]
    notable = list(replay_notable(trace, Analyzer(max_sessions=2)))
    assert notable == full
    assert _drops(notable) == ["a", "b"]
    assert "JR-RESP-REQUIRED" in _findings(notable, "a")


def test_a_recorded_drop_is_walked_by_check_s_notable_replay() -> None:
    frame = _Frames()
    trace: list[FrameRecord | EventRecord] = [*_handshake(frame, "a"), frame("a", "c2s", CALL)]
    frame.seq += 1
    trace.append(EventRecord(frame.seq, 9.0, "a", STATE_DROPPED, {"max_sessions": 1}))
    trace.append(frame("a", "s2c", CALL_OK))
    notable = list(replay_notable(trace, Analyzer()))
    assert _drops(notable) == ["a"]
    assert _findings(notable, "a") == []
