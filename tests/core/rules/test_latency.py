"""rules/latency.py: a ping answered late."""

from __future__ import annotations

import pytest

from tests.core.rules.dsl import Proof, assert_proof, c, play, req, res, s, wait


def ping(after: float, by_client: bool = False) -> list:
    """A ping answered ``after`` seconds later (sent by the server when ``by_client``)."""
    if by_client:
        return [s(req(9, "ping")), wait(after), c(res(9, {}))]
    return [c(req(9, "ping")), wait(after), s(res(9, {}))]


PROOFS = [Proof("PING-PROMPT", fire=ping(12.0), miss=ping(0.3))]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_the_late_answer_is_a_notice_naming_the_answerer_and_the_delay() -> None:
    (finding,) = play(Proof("-", [], []), ping(17.5, by_client=True)).find("PING-PROMPT")
    assert (
        finding.severity == "info" and "the client answered ping 9 after 17.5 s" in finding.message
    )


def test_ping_does_not_exist_in_2026() -> None:
    assert not play(Proof("-", [], [], version="2026-07-28"), ping(12.0)).find("PING-PROMPT")
