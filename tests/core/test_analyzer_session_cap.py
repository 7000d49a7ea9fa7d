"""The analyzer keeps at most ``max_sessions`` sessions' state (core/analyzer.py).

Past the cap the least recently active session's state is dropped, the drop
is recorded as a ``session-state-dropped`` event, and the dropped session's
later frames are judged as after a capture gap in both directions: no false
unknown-id or lifecycle findings (rules catalogue §14).
"""

from __future__ import annotations

from mcpsniff.core.analyzer import (
    MAX_SESSIONS,
    STATE_DROPPED,
    Analyzer,
    replay,
    replay_notable,
)
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, Record

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
