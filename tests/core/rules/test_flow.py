"""rules/flow.py: unanswered requests, cancellation and progress, each fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.model import MessageRecord
from tests.conftest import Conversation, notification, request, result
from tests.core.rules.dsl import Proof, assert_cause, assert_proof, c, end, note, req, res, s

V5 = "2026-07-28"
PING = req(1, "ping")
PONG = res(1, {})


def cancel(request_id: Any, **extra: Any) -> dict[str, Any]:
    return note("notifications/cancelled", {"requestId": request_id, **extra})


def call(token: Any = "p1", id_: int = 1) -> dict[str, Any]:
    return req(id_, "tools/call", {"name": "a", "arguments": {}, "_meta": {"progressToken": token}})


def progress(value: Any, token: Any = "p1", **extra: Any) -> dict[str, Any]:
    return note("notifications/progress", {"progressToken": token, "progress": value, **extra})


def v5(id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return req(
        id_, method, {**(params or {}), "_meta": {**meta, **(params or {}).get("_meta", {})}}
    )


DONE = res(1, {"content": []})

PROOFS = [
    Proof("JR-RESP-REQUIRED", fire=[c(PING), end()], miss=[c(PING), s(PONG), end()]),
    Proof("CANCEL-SHAPE", fire=[c(PING), c(cancel(True))], miss=[c(PING), c(cancel(1))]),
    Proof("CANCEL-SAME-DIRECTION", fire=[c(PING), s(cancel(1))], miss=[c(PING), c(cancel(1))]),
    Proof(
        "CANCEL-IN-PROGRESS",
        fire=[c(PING), s(PONG), c(cancel(1))],
        miss=[c(PING), c(cancel(1)), s(PONG)],
    ),
    Proof(
        "CANCEL-INITIALIZE",
        fire=[c(cancel(0))],  # id 0 is the handshake's initialize
        miss=[c(PING), c(cancel(1))],
    ),
    Proof("PROG-TOKEN-TYPE", fire=[c(call(token=1.5))], miss=[c(call(token=2))]),
    Proof(
        "PROG-TOKEN-UNIQUE",
        fire=[c(call()), c(call(id_=2))],
        miss=[c(call()), s(DONE), c(call(id_=2))],
    ),
    Proof(
        "PROG-ACTIVE-TOKEN",
        fire=[c(call()), s(progress(1, token="other"))],
        miss=[c(call()), s(progress(1))],
    ),
    Proof(
        "PROG-MONOTONIC",
        fire=[c(call()), s(progress(2)), s(progress(1))],
        miss=[c(call()), s(progress(1)), s(progress(2))],
    ),
    Proof(
        "PROG-STOP",
        fire=[c(call()), s(DONE), s(progress(1))],
        miss=[c(call()), s(progress(1)), s(DONE)],
    ),
    Proof(
        "PROG-PARAMS",
        fire=[c(call()), s(progress("half"))],
        miss=[c(call()), s(progress(0.5, message="half"))],
    ),
    Proof(
        "PROG-TOTAL",
        fire=[c(call()), s(progress(5, total=3))],
        miss=[c(call()), s(progress(3, total=3))],
    ),
    Proof(
        "PROG-DIRECTION-V5",
        fire=[c(v5(1, "tools/call", {"name": "a", "arguments": {}})), c(progress(1, token="x"))],
        miss=[
            c(v5(1, "tools/call", {"name": "a", "arguments": {}, "_meta": {"progressToken": "x"}})),
            s(progress(1, token="x")),
        ],
        version=None,
    ),
]


def test_unanswered_request_reported_at_end(convo: Conversation) -> None:
    convo.handshake()
    sent = convo.client(request(3, "tools/call", {"name": "x"}))
    convo.close()
    (finding,) = convo.find("JR-RESP-REQUIRED")
    assert finding.seq == [sent[0].seq]
    assert finding.data["method"] == "tools/call"


def test_cancelled_request_is_not_unanswered_and_late_result_is_noted(
    convo: Conversation,
) -> None:
    convo.handshake()
    sent = convo.client(request(3, "tools/call", {"name": "x"}))
    convo.client(notification("notifications/cancelled", {"requestId": 3, "reason": "t/o"}))
    convo.server(result(3, {"content": []}))
    convo.close()
    assert convo.find("JR-RESP-REQUIRED") == []
    assert convo.find("JR-RESP-ID") == []
    late = _response_for(convo, sent[0].seq)
    assert late.note == "late-after-cancel"


def test_cancel_of_unknown_or_foreign_request(convo: Conversation) -> None:
    convo.handshake()
    convo.server(request(8, "ping"))
    convo.client(notification("notifications/cancelled", {"requestId": 8}))
    convo.client(notification("notifications/cancelled", {"requestId": 77}))
    found = convo.find("CANCEL-SAME-DIRECTION")
    assert len(found) == 2
    assert "belongs to a request the server sent" in found[0].message


def _response_for(convo: Conversation, frame_seq: int) -> MessageRecord:
    (msg,) = [m for m in convo.messages if m.answers == frame_seq]
    return msg


def test_progress_rules(convo: Conversation) -> None:
    convo.handshake()
    convo.client(request(1, "tools/call", {"name": "x", "_meta": {"progressToken": "p"}}))
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 1}))
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 1}))
    convo.server(notification("notifications/progress", {"progressToken": "zz", "progress": 1}))
    convo.server(result(1, {"content": []}))
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 5}))
    assert len(convo.find("PROG-MONOTONIC")) == 1
    assert convo.find("PROG-ACTIVE-TOKEN")[0].data["token"] == "zz"
    assert len(convo.find("PROG-STOP")) == 1


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        Proof(
            "CANCEL-SHAPE",
            fire=[c(PING), c(cancel(1, reason=5))],
            miss=[c(PING), c(cancel(1, reason="user stopped it"))],
        ),
        "reason that is not a string",
    ),
    (
        Proof(
            "PROG-PARAMS",
            fire=[c(call()), s(note("notifications/progress", {"progress": 0.5}))],
            miss=[c(call()), s(progress(0.5))],
        ),
        "without a token",
    ),
    (
        Proof(
            "PROG-PARAMS",
            fire=[c(call()), s(progress(0.5, total="ten"))],
            miss=[c(call()), s(progress(0.5, total=10))],
        ),
        "total (number)",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)


@pytest.mark.parametrize("token", [7, 7.0, "7"])
def test_progress_keys_integer_and_string_tokens_alike(convo: Conversation, token: Any) -> None:
    """An integer token is its own key (7.0 is the same JSON number); "7" is another."""
    convo.handshake()
    convo.client(request(1, "tools/call", {"name": "x", "_meta": {"progressToken": 7}}))
    convo.server(notification("notifications/progress", {"progressToken": token, "progress": 2}))
    convo.server(notification("notifications/progress", {"progressToken": token, "progress": 1}))
    convo.server(notification("notifications/progress", {"progressToken": token, "progress": True}))
    same = token != "7"
    assert len(convo.find("PROG-MONOTONIC")) == (1 if same else 0)
    assert len(convo.find("PROG-ACTIVE-TOKEN")) == (0 if same else 3)
    # A boolean progress is no number: reported, and never compared.
    assert len(convo.find("PROG-PARAMS")) == 1


def test_finished_tokens_keep_the_latest_answer_and_forget_the_oldest(
    convo: Conversation,
) -> None:
    """A token answered again moves to the newest end; past the window the oldest goes."""
    from mcpsniff.core.state import RECENT_WINDOW

    convo.handshake()
    ident = 0

    def answered(token: Any) -> int:
        nonlocal ident
        ident += 1
        convo.client(request(ident, "tools/call", {"name": "x", "_meta": {"progressToken": token}}))
        out = convo.server(result(ident, {"content": []}))
        return next(r.frame for r in out if isinstance(r, MessageRecord))

    answered("p")
    answered("q")
    second = answered("p")
    for n in range(RECENT_WINDOW - 1):
        answered(n)
    convo.server(notification("notifications/progress", {"progressToken": "p", "progress": 1}))
    convo.server(notification("notifications/progress", {"progressToken": "q", "progress": 1}))
    (stop,) = convo.find("PROG-STOP")
    assert stop.data["token"] == "p" and f"(seq {second})" in stop.message
    assert [f.data["token"] for f in convo.find("PROG-ACTIVE-TOKEN")] == ["q"]


def test_a_registered_token_has_every_field_the_constructor_gives(convo: Conversation) -> None:
    """``on_request`` builds ProgressState slot by slot: the record ``ProgressState(...)`` gives."""
    import dataclasses

    from mcpsniff.core.state import ProgressState

    convo.handshake()
    convo.client(request(9, "tools/call", {"name": "x", "_meta": {"progressToken": 4}}))
    (seq,) = [m.frame for m in convo.messages if m.method == "tools/call"]
    entry = convo.session.state.progress["c2s"][4]
    fields = [f.name for f in dataclasses.fields(ProgressState)]
    assert {f: getattr(entry, f) for f in fields} == dataclasses.asdict(ProgressState(9, seq))


@pytest.mark.parametrize(
    ("token", "key", "bad_type"),
    [
        (3, 3, 0),
        (3.0, 3, 0),
        (1.5, ("n", 1.5), 1),
        ("3", ("s", "3"), 0),
        (True, None, 0),
        ([3], None, 0),
    ],
)
def test_a_request_registers_its_token_under_its_key(
    convo: Conversation, token: Any, key: Any, bad_type: int
) -> None:
    """Integers first, then floats (1.5 reported, still tracked), strings; no bool, no array."""
    convo.handshake()
    convo.client(request(9, "tools/call", {"name": "x", "_meta": {"progressToken": token}}))
    active = convo.session.state.progress["c2s"]
    assert list(active) == ([] if key is None else [key])
    assert len(convo.find("PROG-TOKEN-TYPE")) == bad_type
