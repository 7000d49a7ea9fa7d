"""rules/resilience.py: how a peer coped with an injected fault, fired and near-missed;
and the ledger keeping findings off what mcpsniff did (core/fault_ledger.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Conversation
from tests.core.rules.dsl import (
    Proof,
    Step,
    assert_proof,
    c,
    end,
    err,
    http,
    http_response,
    note,
    play,
    req,
    res,
    s,
)

V5 = "2026-07-28"
CALL = req(5, "tools/call", {"name": "echo", "arguments": {"message": "hi"}})
ANSWER = res(5, {"content": [{"type": "text", "text": "hi"}]})


def fault(action: str, direction: str, kind: str, marks: dict[str, Any], **data: Any) -> Step:
    """The relay's ``fault`` event (faults.engine.fault_record) for message id 5."""
    record = {
        "fault_version": 1,
        "fault": 0,
        "spec": action,
        "action": action,
        "count": 1,
        "dir": direction,
        "kind": kind,
        "delivered": action not in ("drop", "error"),
        "marks": marks,
        "method": "tools/call",
        "id": 5,
        **data,
    }
    return ("event", ("fault", record))


DROP_ANSWER = fault("drop", "s2c", "response", {"s2c": 1})
CANCEL = note("notifications/cancelled", {"requestId": 5, "reason": "timed out"})
BROKEN = b'{"jsonrpc":"2.0","id":6,"method":"tools/li\n'
PARSE_ERROR = err(None, -32700, "Parse error")


def v5(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return req(id_, method, {**(params or {}), "_meta": meta})


V5_CALL = v5(5, "tools/call", {"name": "echo", "arguments": {}})
UNSUPPORTED = err(5, -32022, "injected by mcpsniff")
VERSION_FAULT = fault("error", "c2s", "request", {"c2s": 1, "s2c": 1}, code=-32022)

SID = "a1b2c3"
EXPIRED = fault("status", "c2s", "request", {"c2s": 1}, code=404, transport="http", session_id=True)
CUT = fault("disconnect", "s2c", "response", {"s2c": 1}, transport="http")
POST_HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp_protocol_version": "2025-11-25",
    "mcp_session_id": SID,
}
RESUME = http(
    5,
    "GET",
    accept="text/event-stream",
    mcp_protocol_version="2025-11-25",
    last_event_id="e-1",
)
LIST = req(7, "tools/list")

#: After the injected 404 the client POSTs again with the expired session id.
REUSED = [
    http(3, "POST", **POST_HEADERS),
    EXPIRED,
    c(CALL),
    http_response(3, 404),
    http(4, "POST", **POST_HEADERS),
    c(LIST),
    s(res(7, {"tools": []})),
    end(),
]

PROOFS = [
    Proof(
        "RESIL-DROP-HANG",
        # The answer never reached the client, which waited until the end.
        fire=[c(CALL), DROP_ANSWER, s(ANSWER), end()],
        miss=[c(CALL), DROP_ANSWER, s(ANSWER), c(CANCEL), end()],
    ),
    Proof(
        "RESIL-PARSE-NO-REPLY",
        fire=[
            fault("corrupt", "c2s", "request", {"c2s": 1}, corruption="truncate"),
            c(BROKEN),
            end(),
        ],
        miss=[
            fault("corrupt", "c2s", "request", {"c2s": 1}, corruption="truncate"),
            c(BROKEN),
            s(PARSE_ERROR),
            end(),
        ],
    ),
    Proof(
        "RESIL-VERSION-NO-RETRY",
        # After the -32022 the client goes on with another method, never retrying.
        fire=[VERSION_FAULT, c(V5_CALL), s(UNSUPPORTED), c(v5(6, "tools/list")), end()],
        miss=[
            VERSION_FAULT,
            c(V5_CALL),
            s(UNSUPPORTED),
            c(v5(6, "tools/call", {"name": "echo"})),
            end(),
        ],
        version=None,
    ),
    Proof(
        "RESIL-SESSION-REUSED",
        # After the injected 404 the client POSTs again with the expired session id.
        fire=REUSED,
        # ... or it lets the session go (its DELETE ending it is no use of it).
        miss=[
            http(3, "POST", **POST_HEADERS),
            EXPIRED,
            c(CALL),
            http_response(3, 404),
            http(4, "DELETE", **POST_HEADERS),
            end(),
        ],
    ),
    Proof(
        "RESIL-STREAM-NO-RESUME",
        # The stream carrying the answer was cut; the client never came back for it.
        fire=[c(CALL), CUT, s(ANSWER), end()],
        # It resumed the stream with Last-Event-ID.
        miss=[c(CALL), CUT, s(ANSWER), RESUME, end()],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_proof(p: Proof) -> None:
    assert_proof(p)


def _findings(steps: list[Step], version: str | None = "2025-11-25") -> list[str]:
    proof = Proof("RESIL-DROP-HANG", fire=steps, miss=[], version=version)
    return [f.rule for f in play(proof, steps).findings]


def test_a_dropped_request_is_not_the_servers_unanswered_request() -> None:
    steps = [fault("drop", "c2s", "request", {"c2s": 1}), c(CALL), end()]
    rules = _findings(steps)
    assert "JR-RESP-REQUIRED" not in rules
    # The client never cancelled the request it saw go unanswered.
    assert rules == ["RESIL-DROP-HANG"]
    # Without the fault the server is blamed: the ledger is what spares it.
    assert "JR-RESP-REQUIRED" in _findings([c(CALL), end()])


def test_a_corrupted_frame_is_not_the_clients_parse_error() -> None:
    steps = [fault("corrupt", "c2s", "request", {"c2s": 1}, corruption="truncate"), c(BROKEN)]
    steps += [s(PARSE_ERROR), end()]
    assert _findings(steps) == []
    assert "JR-PARSE" in _findings([c(BROKEN), s(PARSE_ERROR), end()])


def test_an_injected_error_is_not_the_servers() -> None:
    # -32020 does not exist before 2026-07-28; answered by mcpsniff, nobody is blamed.
    wrong = err(5, -32020, "injected")
    steps = [fault("error", "c2s", "request", {"c2s": 1, "s2c": 1}, code=-32020)]
    steps += [c(CALL), s(wrong), end()]
    assert _findings(steps) == []


def test_a_duplicate_is_not_the_servers_second_answer() -> None:
    steps = [c(CALL), s(ANSWER), fault("duplicate", "s2c", "response", {"s2c": 1}), s(ANSWER)]
    assert _findings([*steps, end()]) == []
    assert _findings([c(CALL), s(ANSWER), s(ANSWER), end()]) != []


def test_after_a_kill_the_requests_in_flight_are_excused() -> None:
    kill = fault("kill", "c2s", "request", {"c2s": "rest"})
    steps = [c(CALL), kill, c(req(7, "tools/list")), end()]
    assert _findings(steps) == []


def test_the_ledger_counts_what_it_withheld() -> None:
    convo = Conversation()
    convo.handshake()
    proof = Proof("RESIL-DROP-HANG", fire=[], miss=[])
    convo = play(proof, [fault("drop", "c2s", "request", {"c2s": 1}), c(CALL), end()])
    ledger = convo.session.faults
    assert ledger is not None
    assert ledger.withheld == 1
    assert ledger.withheld_rules[0][0] == "JR-RESP-REQUIRED"
    assert [n.reaction for n in ledger.notes] == ["the client never cancelled"]


def test_a_session_without_faults_has_no_ledger() -> None:
    convo = play(Proof("RESIL-DROP-HANG", fire=[], miss=[]), [c(CALL), s(ANSWER), end()])
    assert convo.session.faults is None


def test_cancelling_a_request_whose_answer_was_dropped_is_no_race() -> None:
    steps = [c(CALL), DROP_ANSWER, s(ANSWER), c(CANCEL), end()]
    assert _findings(steps) == []
    assert "CANCEL-IN-PROGRESS" in _findings([c(CALL), s(ANSWER), c(CANCEL), end()])


def test_cancelling_a_request_the_server_never_read_is_not_the_clients_mistake() -> None:
    broken = fault("corrupt", "c2s", "request", {"c2s": 1}, corruption="truncate", id=6)
    cancel = note("notifications/cancelled", {"requestId": 6})
    steps = [broken, c(BROKEN), c(cancel), s(PARSE_ERROR), end()]
    assert _findings(steps) == []
    assert "CANCEL-SAME-DIRECTION" in _findings([c(BROKEN), c(cancel), s(PARSE_ERROR), end()])


def test_a_cut_stream_whose_answer_comes_again_is_no_second_answer_of_the_servers() -> None:
    # The resumed stream redelivers the answer mcpsniff cut off: the client coped,
    # and the server answering twice is no JR-RESP-ID of its own.
    steps = [c(CALL), CUT, s(ANSWER), RESUME, s(ANSWER), end()]
    assert _findings(steps) == []
    assert "JR-RESP-ID" in _findings([c(CALL), s(ANSWER), s(ANSWER), end()])


def test_a_cut_stream_retried_or_cancelled_is_coped_with() -> None:
    again = req(8, "tools/call", {"name": "echo", "arguments": {"message": "hi"}})
    answer = res(8, {"content": []})
    assert _findings([c(CALL), CUT, s(ANSWER), c(again), s(answer), end()]) == []
    assert _findings([c(CALL), CUT, s(ANSWER), c(CANCEL), end()]) == []


def test_a_dropped_answer_redelivered_is_coped_with() -> None:
    steps = [c(CALL), DROP_ANSWER, s(ANSWER), s(ANSWER), end()]
    convo = play(Proof("RESIL-DROP-HANG", fire=[], miss=[]), steps)
    assert [f.rule for f in convo.findings] == []
    ledger = convo.session.faults
    assert ledger is not None
    assert ledger.notes[0].reaction is not None
    assert ledger.notes[0].reaction.startswith("coped: the answer came again")


def test_an_injected_404_leaves_the_reuse_to_the_resilience_rule() -> None:
    assert _findings(REUSED) == ["RESIL-SESSION-REUSED"]
    # A 404 of the server's own: the transport rule says it.
    real = [s for s in REUSED if s is not EXPIRED]
    assert "HTTP-SESSION-REINIT" in _findings(real)
