"""A listing sent again byte for byte: the rules that skip it say what they said before."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.rules import repeats
from tests.core.rules.dsl import Proof, c, play, req, res, s
from tests.core.rules.test_registry import all_proofs

GOOD = {"uri": "file:///a.txt", "name": "a.txt"}
NO_NAME = {"uri": "file:///b.txt"}
BAD_URI = {"uri": "not a uri", "name": "b"}
ICON = {"name": "t", "inputSchema": {"type": "object"}, "icons": [{"src": "https://x/i.png"}]}
BAD_ICON = {"name": "t", "inputSchema": {"type": "object"}, "icons": [{"src": "ftp://x/i.png"}]}
BAD_HINT = {**ICON, "annotations": {"readOnlyHint": "yes"}}
PROOF = Proof("RES-LIST-SHAPE", fire=[], miss=[])


def _lists(method: str, *results: dict[str, Any], start: int = 1) -> list[Any]:
    steps: list[Any] = []
    for number, result in enumerate(results, start=start):
        steps += [c(req(number, method)), s(res(number, result))]
    return steps


def _seen(steps: list[Any]) -> list[tuple[str, str, list[int]]]:
    convo = play(PROOF, steps)
    return [(f.rule, f.message, f.seq) for f in convo.findings]


def _without_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repeats, "clean_before", lambda *_: False)


@pytest.mark.parametrize(
    ("method", "clean", "bad", "rule"),
    [
        ("resources/list", {"resources": [GOOD]}, {"resources": [NO_NAME]}, "RES-LIST-SHAPE"),
        ("resources/list", {"resources": [GOOD]}, {"resources": [BAD_URI]}, "RES-URI"),
        ("tools/list", {"tools": [ICON]}, {"tools": [BAD_ICON]}, "ICON-SAFE-SCHEME"),
        ("tools/list", {"tools": [ICON]}, {"tools": [BAD_HINT]}, "TOOL-ANNOTATIONS-SHAPE"),
    ],
)
def test_a_repeat_says_what_the_first_said(
    method: str, clean: dict[str, Any], bad: dict[str, Any], rule: str
) -> None:
    """Clean, clean again (skipped), bad, bad again, clean again: a finding for each bad one."""
    steps = _lists(method, clean, clean, bad, bad, clean, bad)
    convo = play(PROOF, steps)
    found = [f.seq[-1] for f in convo.find(rule)]
    replies = [m.frame for m in convo.messages if m.request and m.request.method == method]
    assert found == [replies[2], replies[3], replies[5]]
    key = convo.session.state.rule_state["clean_results"]
    assert any(name in (rule, "RES-LIST-SHAPE", "ICON-SHAPE") for name, _ in key)
    assert ("TOOL-ANNOTATIONS-SHAPE", "tools/list") in key or method != "tools/list"


def test_the_skip_changes_no_verdict_on_repeated_listings(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _lists("resources/list", {"resources": [GOOD]}, {"resources": [GOOD]})
    steps += _lists("resources/list", {"resources": [BAD_URI, NO_NAME]}, start=3)
    icons = ({"tools": [ICON]}, {"tools": [ICON]}, {"tools": [BAD_ICON]})
    steps += _lists("tools/list", *icons, start=4)
    skipping = _seen(steps)
    _without_skipping(monkeypatch)
    assert _seen(steps) == skipping
    assert len(skipping) >= 3


def test_a_repeated_listing_still_knows_its_resources() -> None:
    """RES-NOT-FOUND reads the uris the listings recorded: a skipped repeat loses none."""
    steps = _lists("resources/list", {"resources": [GOOD]}, {"resources": [GOOD]})
    convo = play(PROOF, steps)
    known = convo.session.state.rule_state["resource_listing"]
    assert known.uris == {"file:///a.txt"} and known.listed and not known.overflow


def test_a_page_then_the_last_page_is_recorded_as_listed() -> None:
    """The same bytes with another cursor answer are other bytes: judged afresh."""
    page = {"resources": [GOOD], "nextCursor": "2"}
    convo = play(PROOF, _lists("resources/list", page, page, {"resources": [GOOD]}))
    known = convo.session.state.rule_state["resource_listing"]
    assert known.listed


def test_a_full_uri_set_is_not_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the limit, a repeat would mark the set overflowed: it is judged, not skipped."""
    from mcpsniff.core.rules import utilities_2026

    monkeypatch.setattr(utilities_2026, "URI_LIMIT", 1)
    convo = play(PROOF, _lists("resources/list", {"resources": [GOOD]}, {"resources": [GOOD]}))
    assert convo.session.state.rule_state["resource_listing"].overflow


def test_clean_before_needs_the_same_method_and_bytes() -> None:
    steps = _lists("resources/list", {"resources": [GOOD]})
    convo = play(PROOF, steps)
    clean = convo.session.state.rule_state["clean_results"]
    key = clean[("RES-LIST-SHAPE", "resources/list")]
    assert key == (b'{"resources":[{"uri":"file:///a.txt","name":"a.txt"}]}}\n',)


@pytest.mark.parametrize("near", [False, True])
def test_every_proof_played_twice_gives_the_same_verdicts(
    monkeypatch: pytest.MonkeyPatch, near: bool
) -> None:
    """Each proof's steps twice in one session (the second time the listings repeat):
    the findings with the skip are those without it, message for message."""
    proofs = all_proofs()

    def verdicts() -> list[list[tuple[str, str, list[int]]]]:
        found = []
        for proof in proofs:
            steps = list(proof.miss if near else proof.fire)
            convo = play(proof, steps + steps, near=near)
            found.append([(f.rule, f.message, f.seq) for f in convo.findings])
        return found

    skipping = verdicts()
    _without_skipping(monkeypatch)
    assert verdicts() == skipping
