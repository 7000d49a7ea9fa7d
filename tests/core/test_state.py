"""``mcpsniff.core.state``: which run of a shared trace a session key belongs to, fingerprints."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpsniff.core.analyzer import Analyzer, replay
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.core.state import INLINE_PRINT, MAX_RUNS, fingerprint, per_run, run_of
from mcpsniff.trace.gaps import GapTally
from tests.conftest import Conversation, notification, request, result
from tests.core.rules.dsl import Proof, end, http_response, play, req
from tests.core.rules.test_http import post


@pytest.mark.parametrize(
    ("key", "run"),
    [
        ("stdio", ""),
        ("http", ""),
        ("0b3a-4c1d", ""),
        ("stdio@4242.1796000000", "@4242.1796000000"),
        ("http@7.1", "@7.1"),
        ("sid-1@7.1", "@7.1"),
        ("user@example.com", ""),  # an "@" that is no run suffix
        ("a@7.1x", ""),
        ("a@7", ""),
    ],
)
def test_run_of(key: str, run: str) -> None:
    assert run_of(key) == run


def test_shared_facts_are_kept_for_at_most_max_runs() -> None:
    """A hostile trace naming endless runs cannot grow the analyzer's shared state."""
    shared: dict = {}
    for number in range(MAX_RUNS + 50):
        runs = per_run(shared, "k", f"@{number}.1")
        if runs is not None:
            runs[f"@{number}.1"] = number
    assert len(shared["k"]) == MAX_RUNS
    assert per_run(shared, "k", "@0.1") is shared["k"]  # a run already kept still is
    assert per_run(shared, "k", "@99999.1") is None


def test_the_fingerprint_is_the_short_frame_or_the_long_frames_hash() -> None:
    def printed(raw: bytes) -> Any:
        frame = FrameRecord(1, 0.0, "k", "c2s", "stdio", raw)
        return fingerprint(MessageRecord(1, "k", "c2s", "request", source=frame))

    short = b"x" * INLINE_PRINT
    long = b"x" * (INLINE_PRINT + 1)
    assert printed(short) is short
    assert printed(long) == hash(long)


# ----------------------------------------------------------------------------
# Capture gaps: verdicts that depend on traffic a gap may hold are not given.
#
# Each case has a fire/near-miss pair: the gap in the direction that matters
# excuses exactly the verdict it could hide; the same gap in the other
# direction, or a request sent after the gap, still fires.


def gap(conv: Conversation, direction: str | None, **data: Any) -> None:
    """Apply a capture-gap event, as a relay records it."""
    conv.t += 0.001
    body: dict[str, Any] = {"lost_bytes": 120, **data}
    if direction is not None:
        body["direction"] = direction
    record = EventRecord(conv.session.counter.next(), conv.t, "test", "capture-gap", body)
    conv.records.extend(conv.session.apply_event(record))


def started() -> Conversation:
    conv = Conversation()
    conv.handshake()
    return conv


def excused(conv: Conversation) -> dict[str, int]:
    gaps = conv.session.state.gaps
    return dict(gaps.excused) if gaps is not None else {}


def test_request_pending_across_an_answer_gap_is_not_judged_unanswered() -> None:
    conv = started()
    conv.client(request(1, "ping"))
    gap(conv, "s2c")
    conv.close()
    assert "JR-RESP-REQUIRED" not in conv.rules()
    assert excused(conv) == {"JR-RESP-REQUIRED": 1}


def test_a_gap_in_the_asking_direction_does_not_excuse() -> None:
    conv = started()
    conv.client(request(1, "ping"))
    gap(conv, "c2s")
    conv.close()
    assert conv.rules().count("JR-RESP-REQUIRED") == 1
    assert excused(conv) == {}


def test_a_request_sent_after_the_gap_still_fires() -> None:
    conv = started()
    conv.client(request(1, "ping"))
    gap(conv, "s2c")
    conv.client(request(2, "ping"))
    conv.close()
    unanswered = [f for f in conv.findings if f.rule == "JR-RESP-REQUIRED"]
    assert [f.data["id"] for f in unanswered] == [2]
    assert excused(conv) == {"JR-RESP-REQUIRED": 1}


def test_a_server_request_pending_across_a_client_gap_is_excused() -> None:
    conv = started()
    conv.server(request(7, "roots/list"))
    gap(conv, "c2s")
    gap(conv, "s2c")  # the server's gap does not excuse its own request twice
    conv.close()
    assert "JR-RESP-REQUIRED" not in conv.rules()
    assert excused(conv) == {"JR-RESP-REQUIRED": 1}


def test_a_gap_without_direction_excuses_nothing() -> None:
    """The stdio relay's dropped observations without direction are stderr pieces."""
    conv = started()
    conv.client(request(1, "ping"))
    gap(conv, None, lost_calls=3)
    conv.close()
    assert conv.rules().count("JR-RESP-REQUIRED") == 1


def test_unknown_id_after_a_gap_in_the_requesting_direction_is_not_judged() -> None:
    conv = started()
    gap(conv, "c2s")
    conv.server(result(41, {}))
    conv.close()
    assert "JR-RESP-ID" not in conv.rules()
    assert excused(conv) == {"JR-RESP-ID": 1}


def test_unknown_id_after_a_gap_in_its_own_direction_still_fires() -> None:
    conv = started()
    gap(conv, "s2c")
    conv.server(result(41, {}))
    conv.close()
    found = [f for f in conv.findings if f.rule == "JR-RESP-ID"]
    assert [f.data["cause"] for f in found] == ["unknown-id"]
    assert excused(conv) == {}


def test_duplicate_response_after_a_gap_still_fires() -> None:
    """Only unknown ids are excused: a second answer to a known request is not."""
    conv = started()
    conv.client(request(1, "ping"))
    conv.server(result(1, {}))
    gap(conv, "c2s")
    conv.server(result(1, {}))
    conv.close()
    found = [f for f in conv.findings if f.rule == "JR-RESP-ID"]
    assert [f.data["cause"] for f in found] == ["duplicate-response"]


def test_no_gap_no_state() -> None:
    """A session without gaps keeps no gap state (and its findings are unchanged)."""
    conv = started()
    conv.client(request(1, "ping"))
    conv.server(result(99, {}))
    conv.close()
    assert conv.session.state.gaps is None
    assert sorted(conv.rules()) == ["JR-RESP-ID", "JR-RESP-REQUIRED"]


def test_malformed_gap_fields_still_count_as_a_gap() -> None:
    conv = started()
    conv.client(request(1, "ping"))
    gap(conv, "s2c", lost_bytes="lots")
    conv.close()
    assert "JR-RESP-REQUIRED" not in conv.rules()
    assert conv.session.state.gaps is not None
    assert conv.session.state.gaps.lost["s2c"] == 1


def _progress(token: Any) -> dict[str, Any]:
    return notification("notifications/progress", {"progressToken": token, "progress": 1})


def test_progress_for_a_token_after_a_gap_in_the_requesting_direction_is_not_judged() -> None:
    conv = started()
    gap(conv, "c2s")  # the tools/call that carried the token may be here
    conv.server(_progress("tok"))
    conv.close()
    assert "PROG-ACTIVE-TOKEN" not in conv.rules()
    assert excused(conv) == {"PROG-ACTIVE-TOKEN": 1}


def test_progress_for_an_unknown_token_after_a_gap_in_its_own_direction_fires() -> None:
    conv = started()
    gap(conv, "s2c")
    conv.server(_progress("tok"))
    conv.close()
    assert conv.rules().count("PROG-ACTIVE-TOKEN") == 1


def test_cancel_of_an_unknown_request_after_the_canceller_s_gap_is_not_judged() -> None:
    conv = started()
    gap(conv, "c2s")  # the client's request 5 may be here
    conv.client(notification("notifications/cancelled", {"requestId": 5}))
    conv.close()
    assert "CANCEL-SAME-DIRECTION" not in conv.rules()
    assert excused(conv) == {"CANCEL-SAME-DIRECTION": 1}


def test_cancel_of_an_unknown_request_after_the_other_side_s_gap_fires() -> None:
    conv = started()
    gap(conv, "s2c")
    conv.client(notification("notifications/cancelled", {"requestId": 5}))
    conv.close()
    assert conv.rules().count("CANCEL-SAME-DIRECTION") == 1


def test_cancel_of_the_other_side_s_request_after_a_gap_still_fires() -> None:
    """The id is known to belong to the server: no gap makes that right."""
    conv = started()
    conv.server(request(5, "roots/list"))
    conv.client(result(5, {"roots": []}))
    gap(conv, "c2s")
    conv.client(notification("notifications/cancelled", {"requestId": 5}))
    conv.close()
    assert conv.rules().count("CANCEL-SAME-DIRECTION") == 1


# --------------------------------------------------------------------------- HTTP

HTTP = Proof("JR-RESP-REQUIRED", fire=[], miss=[], transport="http")


def _unanswered_ids(conv: Conversation) -> list[Any]:
    return [f.data.get("id") for f in conv.findings if f.rule == "JR-RESP-REQUIRED"]


def _two_posts() -> list[Any]:
    return [
        *post(2, req(1, "tools/list")),
        *post(3, req(2, "tools/list")),
        http_response(2, 200, content_type="text/event-stream"),
        http_response(3, 200, content_type="text/event-stream"),
    ]


def _gap_event(**data: Any) -> Any:
    return ("event", ("capture-gap", data))


def test_an_http_body_gap_excuses_only_its_own_exchange_s_request() -> None:
    steps = [*_two_posts(), _gap_event(exchange=2, direction="s2c", lost_bytes=50), end()]
    conv = play(HTTP, steps)
    assert _unanswered_ids(conv) == [2]
    assert excused(conv) == {"JR-RESP-REQUIRED": 1}


def test_a_salvaged_http_gap_excuses_the_requests_of_the_exchanges_it_names() -> None:
    salvaged = _gap_event(lost_exchanges=1, exchanges=[[2, 2]], through_exchange=3, salvaged=True)
    steps = [
        *_two_posts(),
        ("event", ("http-end", {"exchange": 3, "outcome": "complete"})),
        salvaged,
        end(),
    ]
    conv = play(HTTP, steps)
    assert _unanswered_ids(conv) == [2]
    assert excused(conv) == {"JR-RESP-REQUIRED": 1}


def test_a_salvaged_http_gap_naming_other_exchanges_excuses_nothing() -> None:
    salvaged = _gap_event(lost_exchanges=1, exchanges=[[7, 9]], through_exchange=9, salvaged=True)
    conv = play(HTTP, [*_two_posts(), salvaged, end()])
    assert sorted(_unanswered_ids(conv)) == [1, 2]


def test_a_salvaged_http_gap_with_hostile_ranges_excuses_nothing() -> None:
    salvaged = _gap_event(exchanges=[[2], "x", [True, 3], None], through_exchange="9")
    conv = play(HTTP, [*_two_posts(), salvaged, end()])
    assert sorted(_unanswered_ids(conv)) == [1, 2]


def test_gaps_remember_only_requests_still_in_flight() -> None:
    """Many gaps over a long session keep memory bounded by the requests in flight."""
    conv = started()
    for ident in range(1, 51):
        conv.client(request(ident, "ping"))
        gap(conv, "s2c")
        conv.server(result(ident, {}))
    conv.client(request(100, "ping"))
    gap(conv, "s2c")
    gaps = conv.session.state.gaps
    assert gaps is not None and len(gaps.crossed["c2s"]) == 1
    conv.close()
    assert "JR-RESP-REQUIRED" not in conv.rules()
    assert excused(conv) == {"JR-RESP-REQUIRED": 1}


# --------------------------------------------------------------------------- lifecycle

INIT = request(
    0,
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
)
INIT_OK = result(
    0,
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    },
)


def _initialized_lost(direction: str) -> Conversation:
    """initialize answered, then a gap, then requests both ways and no initialized."""
    conv = Conversation()
    conv.client(INIT)
    conv.server(INIT_OK)
    gap(conv, direction)
    conv.client(request(1, "tools/list"))
    conv.server(result(1, {"tools": []}))
    conv.server(request(9, "ping"))
    conv.server(request(10, "roots/list"))
    conv.client(result(9, {}))
    conv.client(result(10, {"roots": []}))
    conv.close()
    return conv


LOST_INITIALIZED = ["LC-INITIALIZED-MISSING", "LC-INITIALIZED-ORDER", "LC-SERVER-PRE-INITIALIZED"]


def test_initialized_lost_in_a_client_gap_is_not_judged_missing_or_late() -> None:
    conv = _initialized_lost("c2s")
    assert not set(LOST_INITIALIZED) & set(conv.rules()), conv.rules()
    assert excused(conv) == {rule: 1 for rule in LOST_INITIALIZED}


def test_a_server_gap_does_not_excuse_a_missing_initialized() -> None:
    conv = _initialized_lost("s2c")
    assert set(LOST_INITIALIZED) <= set(conv.rules()), conv.rules()


def test_a_client_gap_before_initialize_does_not_excuse_a_missing_initialized() -> None:
    conv = Conversation()
    gap(conv, "c2s")  # before initialize: cannot hold initialized
    conv.client(INIT)
    conv.server(INIT_OK)
    conv.close()
    assert "LC-INITIALIZED-MISSING" in conv.rules()


def test_a_first_message_after_a_client_gap_is_not_judged_first() -> None:
    conv = Conversation()
    gap(conv, "c2s")  # the initialize may be here
    conv.client(request(1, "ping"))
    conv.client(request(2, "tools/list"))
    conv.close()
    assert "LC-INIT-FIRST" not in conv.rules()
    assert excused(conv).get("LC-INIT-FIRST") == 1


def test_a_first_message_after_a_server_gap_is_still_judged_first() -> None:
    conv = Conversation()
    gap(conv, "s2c")
    conv.client(request(2, "tools/list"))
    conv.close()
    assert "LC-INIT-FIRST" in conv.rules()


def test_a_request_after_the_initialize_answer_was_lost_is_not_judged_early() -> None:
    conv = Conversation()
    conv.client(INIT)
    gap(conv, "s2c")  # the server's answer may be here
    conv.client(request(1, "tools/list"))
    conv.close()
    assert "LC-CLIENT-PRE-RESPONSE" not in conv.rules()
    assert excused(conv).get("LC-CLIENT-PRE-RESPONSE") == 1


def test_a_request_before_the_initialize_answer_after_a_client_gap_is_still_early() -> None:
    conv = Conversation()
    conv.client(INIT)
    gap(conv, "c2s")
    conv.client(request(1, "tools/list"))
    conv.close()
    assert "LC-CLIENT-PRE-RESPONSE" in conv.rules()


# ------------------------------------------------- capture-wide gaps (the HTTP relay's channel)


class Capture:
    """Frames and events of several sessions in one capture, replayed by one Analyzer."""

    def __init__(self) -> None:
        self.inputs: list[FrameRecord | EventRecord] = []

    def _seq(self) -> int:
        return len(self.inputs) + 1

    def frame(self, key: str, direction: str, message: dict[str, Any], **meta: Any) -> None:
        raw = orjson.dumps(message) + b"\n"
        seq = self._seq()
        self.inputs.append(FrameRecord(seq, 1.0 + seq, key, direction, "http", raw, meta or None))

    def event(self, key: str, name: str, data: dict[str, Any]) -> None:
        seq = self._seq()
        self.inputs.append(EventRecord(seq, 1.0 + seq, key, name, data))

    def handshake(self, key: str) -> None:
        self.frame(key, "c2s", INIT)
        self.frame(key, "s2c", INIT_OK)
        self.frame(key, "c2s", notification("notifications/initialized"))

    def run(self) -> tuple[list[FindingRecord], dict[str, int]]:
        analyzer = Analyzer()
        findings = [r for r in replay(self.inputs, analyzer) if isinstance(r, FindingRecord)]
        tally = GapTally()
        tally.add_unjudged(analyzer.sessions.values())
        return findings, tally.unjudged


CAPTURE_GAP = {"lost_calls": 3, "lost_bytes": 900, "scope": "capture"}


def test_a_capture_wide_gap_excuses_the_requests_in_flight_in_every_session() -> None:
    capture = Capture()
    for key in ("a", "b"):
        capture.handshake(key)
        capture.frame(key, "c2s", request(1, "tools/list"))
    capture.frame("b", "s2c", request(7, "roots/list"))
    capture.event("http", "capture-gap", CAPTURE_GAP)
    capture.frame("a", "c2s", request(2, "tools/list"))  # after the gap: no excuse
    findings, unjudged = capture.run()
    unanswered = [(f.session, f.data["id"]) for f in findings if f.rule == "JR-RESP-REQUIRED"]
    assert unanswered == [("a", 2)]
    assert unjudged == {"JR-RESP-REQUIRED": 3}


def test_an_unknown_id_after_a_capture_wide_gap_is_not_judged_in_any_session() -> None:
    capture = Capture()
    capture.handshake("a")
    capture.frame("a", "s2c", result(40, {}))  # before the gap: judged
    capture.event("http", "capture-gap", CAPTURE_GAP)
    capture.frame("a", "s2c", result(41, {}))
    findings, unjudged = capture.run()
    assert [f.data["id"] for f in findings if f.rule == "JR-RESP-ID"] == [40]
    assert unjudged == {"JR-RESP-ID": 1}


@pytest.mark.parametrize(
    ("key", "data", "wide"),
    [
        ("http", {"lost_calls": 2, "lost_bytes": 10}, True),  # a trace from before "scope"
        ("http@4242.1796000000", {"lost_calls": 2, "lost_bytes": 10}, True),  # appended run
        ("a", {"lost_calls": 2, "lost_bytes": 10, "scope": "capture"}, True),
        ("stdio", {"lost_calls": 2, "lost_bytes": 10}, False),  # stderr pieces
        ("http", {"lost_calls": 2, "lost_bytes": 10, "scope": "bodies"}, False),  # per exchange too
        ("http", {"lost_calls": 2, "exchanges": [[9, 9]]}, False),  # a salvage's list
        ("httpd", {"lost_calls": 2, "lost_bytes": 10}, False),
    ],
)
def test_which_gaps_without_direction_are_capture_wide(
    key: str, data: dict[str, Any], wide: bool
) -> None:
    session = "a" + run_of(key)  # a session of the gap's run
    capture = Capture()
    capture.handshake(session)
    capture.frame(session, "c2s", request(1, "tools/list"))
    capture.event(key, "capture-gap", data)
    findings, unjudged = capture.run()
    unanswered = [f for f in findings if f.rule == "JR-RESP-REQUIRED" and f.session == session]
    assert (unanswered == []) is wide
    assert unjudged == ({"JR-RESP-REQUIRED": 1} if wide else {})


# ------------------------------------------ a salvaged HTTP gap: server requests, GET streams


def _salvaged(*ranges: list[int]) -> dict[str, Any]:
    return {"lost_exchanges": 1, "exchanges": list(ranges), "through_exchange": 9, "salvaged": True}


def _asked(capture: Capture, key: str = "a") -> None:
    """A tool call whose SSE stream (exchange 2) carries the server's sampling request."""
    capture.handshake(key)
    capture.event(key, "http-request", {"exchange": 2, "method": "POST", "path": "/mcp"})
    capture.frame(key, "c2s", request(1, "tools/call", {"name": "t"}), exchange=2)
    capture.frame(key, "s2c", request(0, "sampling/createMessage", {}), exchange=2)


def test_a_server_request_is_not_judged_when_a_later_exchange_was_lost() -> None:
    """The client's answer is a POST begun after every exchange the trace holds."""
    capture = Capture()
    _asked(capture)
    capture.event("http", "capture-gap", _salvaged([2, 3]))
    findings, unjudged = capture.run()
    assert [f.data["id"] for f in findings if f.rule == "JR-RESP-REQUIRED"] == []
    assert unjudged == {"JR-RESP-REQUIRED": 2}


def test_a_server_request_is_judged_when_only_earlier_exchanges_were_lost() -> None:
    capture = Capture()
    _asked(capture)
    capture.event("http", "capture-gap", _salvaged([2, 2]))
    findings, unjudged = capture.run()
    assert [f.data["id"] for f in findings if f.rule == "JR-RESP-REQUIRED"] == [0]
    assert unjudged == {"JR-RESP-REQUIRED": 1}  # the tool call, in exchange 2


def test_a_lost_get_stream_excuses_the_session_s_client_requests() -> None:
    """§14.9: an answer may come on any stream of the session, the GET stream too."""
    capture = Capture()
    capture.handshake("a")
    capture.event("a", "http-request", {"exchange": 2, "method": "GET", "path": "/mcp"})
    capture.event("a", "http-request", {"exchange": 3, "method": "POST", "path": "/mcp"})
    capture.frame("a", "c2s", request(1, "tools/list"), exchange=3)
    capture.event("a", "http-end", {"exchange": 3, "outcome": "complete"})
    capture.handshake("b")
    capture.frame("b", "c2s", request(1, "tools/list"))  # no stream of its own lost
    capture.event("http", "capture-gap", _salvaged([2, 2]))
    findings, unjudged = capture.run()
    unanswered = [f.session for f in findings if f.rule == "JR-RESP-REQUIRED"]
    assert unanswered == ["b"]
    assert unjudged == {"JR-RESP-REQUIRED": 1}


# ------------------------------------------------ runs sharing one trace (appended sessions)


def test_another_run_s_salvaged_gap_excuses_nothing_of_this_run() -> None:
    """Each relay run numbers its exchanges from 1: run @7.1's exchange 2 is not ours."""
    capture = Capture()
    _asked(capture, "a")
    capture.event("http@7.1", "capture-gap", _salvaged([2, 3]))
    findings, unjudged = capture.run()
    assert sorted(f.data["id"] for f in findings if f.rule == "JR-RESP-REQUIRED") == [0, 1]
    assert unjudged == {}


def test_a_salvaged_gap_excuses_its_own_run_s_requests() -> None:
    capture = Capture()
    _asked(capture, "a@7.1")
    capture.event("http@7.1", "capture-gap", _salvaged([2, 3]))
    findings, unjudged = capture.run()
    assert [f for f in findings if f.rule == "JR-RESP-REQUIRED"] == []
    assert unjudged == {"JR-RESP-REQUIRED": 2}


def test_a_capture_wide_gap_concerns_only_its_own_run() -> None:
    capture = Capture()
    for key in ("a", "b@7.1"):
        capture.handshake(key)
        capture.frame(key, "c2s", request(1, "tools/list"))
    capture.event("http@7.1", "capture-gap", CAPTURE_GAP)
    findings, unjudged = capture.run()
    assert [f.session for f in findings if f.rule == "JR-RESP-REQUIRED"] == ["a"]
    assert unjudged == {"JR-RESP-REQUIRED": 1}


@pytest.mark.parametrize(
    ("era", "version", "legacy"),
    [
        (None, None, False),
        ("handshake", None, True),
        ("handshake", "2025-06-18", True),
        ("handshake", "2026-07-28", False),
        ("stateless", "2026-07-28", False),
        ("stateless", "2025-11-25", False),
    ],
)
def test_settle_era_decides_legacy(era: str | None, version: str | None, legacy: bool) -> None:
    from mcpsniff.core.state import SessionState

    state = SessionState()
    state.era, state.version = era, version
    assert state.legacy is False  # not decided until settled
    state.settle_era()
    assert state.legacy is legacy


def test_every_proof_leaves_legacy_as_its_era_and_version_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After every message of every proof, ``legacy`` is what era and version say:
    each place that sets them settles it (the dispatch reads it for every message)."""
    from mcpsniff.core.session import classification
    from tests.core.rules.test_registry import all_proofs

    seen: list[tuple[bool, bool]] = []
    message = classification.message

    def checked(session: Any, *args: Any) -> Any:
        msg = message(session, *args)
        state = session.state
        seen.append((state.legacy, state.era == "handshake" and state.version != "2026-07-28"))
        return msg

    monkeypatch.setattr(classification, "message", checked)
    for proof in all_proofs():
        for steps, near in ((proof.fire, False), (proof.miss, True)):
            play(proof, steps, near=near)
    assert len(seen) > 1000
    assert {kept for kept, _ in seen} == {True, False}
    assert [kept for kept, _ in seen] == [due for _, due in seen]


@pytest.mark.parametrize(("version", "legacy"), [("2025-11-25", True), ("2026-07-28", False)])
def test_the_handshakes_answer_settles_legacy(version: str, legacy: bool) -> None:
    """initialize makes the session legacy until its answer names the version."""
    convo = Conversation()
    convo.client(request(0, "initialize", {"protocolVersion": version, "capabilities": {}}))
    assert convo.session.state.legacy is True  # the handshake era, no version yet
    convo.handshake(version)
    assert convo.session.state.legacy is legacy
