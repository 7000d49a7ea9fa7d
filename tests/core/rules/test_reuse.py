"""rules/reuse.py: ids used twice, told apart as identical retries or conflicting reuses."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.rules import reuse
from mcpsniff.core.state import INLINE_PRINT
from tests.core.rules.dsl import Proof, assert_proof, c, end, note, play, req, res, s

V5 = "2026-07-28"


def v5(id_: int, method: str) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return req(id_, method, {"_meta": meta})


CALL = req(3, "tools/call", {"name": "a", "arguments": {"x": 1}})
OTHER_CALL = req(3, "tools/call", {"name": "a", "arguments": {"x": 2}})

PROOFS = [
    Proof(
        "MSG-ID-REUSE",
        fire=[c(req(1, "ping")), s(res(1, {})), c(req(1, "ping"))],
        miss=[c(req(1, "ping")), s(res(1, {})), c(req(2, "ping"))],
    ),
    Proof(
        "MSG-ID-INFLIGHT",
        fire=[c(v5(1, "tools/list")), c(v5(1, "prompts/list"))],
        # after completion, an id may be used again in the stateless era
        miss=[
            c(v5(1, "tools/list")),
            s(res(1, {"tools": [], "resultType": "complete"})),
            c(v5(1, "prompts/list")),
        ],
        version=None,
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_every_reuse_rule_is_proven() -> None:
    assert sorted(p.rule for p in PROOFS) == sorted(reuse.RULES)


def _reuse(steps: list) -> dict[str, Any]:
    (finding,) = play(Proof("-", [], []), steps).find("MSG-ID-REUSE")
    return {"message": finding.message, **finding.data}


def test_an_identical_retry_after_the_answer_says_so_and_that_it_was_answered() -> None:
    data = _reuse([c(CALL), s(res(3, {"content": []})), c(CALL)])
    assert data["reuse"] == reuse.IDENTICAL and data["in_flight"] is False
    assert data["previous_seq"] == 4 and data["answered_seq"] == 5
    assert "identical retry" in data["message"] and "answered at seq 5" in data["message"]


def test_a_different_request_under_an_answered_id_is_a_conflict() -> None:
    data = _reuse([c(CALL), s(res(3, {"content": []})), c(OTHER_CALL)])
    assert data["reuse"] == reuse.CONFLICTING


def test_an_identical_retry_in_flight_gets_both_answers_paired() -> None:
    convo = play(
        Proof("-", [], []),
        [c(CALL), c(CALL), s(res(3, {"content": []})), s(res(3, {"content": []})), end()],
    )
    (finding,) = convo.find("MSG-ID-REUSE")
    assert finding.data["reuse"] == reuse.IDENTICAL and finding.data["in_flight"] is True
    # The server answered twice: both answers pair, neither is a "duplicate response".
    assert convo.find("JR-RESP-ID") == [] and convo.find("JR-RESP-REQUIRED") == []
    assert sorted(m.answers for m in convo.messages if m.kind == "response" and m.id == 3) == [4, 5]


def test_a_retry_answered_once_leaves_one_request_unanswered() -> None:
    convo = play(Proof("-", [], []), [c(CALL), c(CALL), s(res(3, {"content": []})), end()])
    (unanswered,) = convo.find("JR-RESP-REQUIRED")
    assert unanswered.data["id"] == 3


def test_a_reused_id_of_a_cancelled_request() -> None:
    cancel = note("notifications/cancelled", {"requestId": 3})
    data = _reuse([c(CALL), c(cancel), c(OTHER_CALL)])
    assert data["reuse"] == reuse.CONFLICTING and "cancelled before its answer" in data["message"]


def _call(size: int, last: str) -> dict[str, Any]:
    """A tools/call whose frame is about ``size`` bytes, ending its argument with ``last``."""
    return req(3, "tools/call", {"name": "a", "arguments": {"x": "y" * (size - 1) + last}})


@pytest.mark.parametrize("size", [INLINE_PRINT - 200, INLINE_PRINT + 200])
def test_short_and_long_frames_are_told_apart_alike(size: int) -> None:
    # Frames up to INLINE_PRINT bytes are their own fingerprint, longer ones are
    # hashed: on both sides of the limit, a byte-identical retry is identical and
    # one byte of difference is a conflict, after the answer and in flight.
    first, same, other = _call(size, "a"), _call(size, "a"), _call(size, "b")
    answered = [c(first), s(res(3, {"content": []}))]
    assert _reuse([*answered, c(same)])["reuse"] == reuse.IDENTICAL
    assert _reuse([*answered, c(other)])["reuse"] == reuse.CONFLICTING
    assert _reuse([c(first), c(same)])["reuse"] == reuse.IDENTICAL
    assert _reuse([c(first), c(other)])["reuse"] == reuse.CONFLICTING
