"""The JSON-RPC 2.0 specification's §7 examples, classified and paired exactly.

The vectors are a copy of shared/reference/jsonrpc-examples.json (the spec's
own examples), so the suite runs on a fresh clone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import FindingRecord, FrameRecord, MessageRecord
from mcpsniff.core.session import Session

VECTORS = json.loads((Path(__file__).parent.parent / "data" / "jsonrpc-examples.json").read_text())

# title -> per exchange: list of (kind, batch index) for its message records,
# and for responses the exchange number of the request they answer.
EXPECTED: dict[str, list[dict[str, Any]]] = {
    "rpc call with positional parameters": [
        {"kinds": [("request", None)]},
        {"kinds": [("response", None)], "answers": [0]},
        {"kinds": [("request", None)]},
        {"kinds": [("response", None)], "answers": [2]},
    ],
    "rpc call with named parameters": [
        {"kinds": [("request", None)]},
        {"kinds": [("response", None)], "answers": [0]},
        {"kinds": [("request", None)]},
        {"kinds": [("response", None)], "answers": [2]},
    ],
    "a Notification": [
        {"kinds": [("notification", None)]},
        {"kinds": [("notification", None)]},
    ],
    "rpc call of non-existent method": [
        {"kinds": [("request", None)]},
        {"kinds": [("error", None)], "answers": [0]},
    ],
    "rpc call with invalid JSON": [
        {"kinds": [("unparseable", None)], "rules": ["JR-PARSE"]},
        {"kinds": [("error", None)], "answers": [0], "note": "parse-error-reply"},
    ],
    "rpc call with invalid Request object": [
        {"kinds": [("invalid", None)], "rules": ["JR-METHOD-TYPE"]},
        {"kinds": [("error", None)], "answers": [0], "note": "invalid-request-reply"},
    ],
    "rpc call Batch, invalid JSON": [
        {"kinds": [("unparseable", None)], "rules": ["JR-PARSE"]},
        {"kinds": [("error", None)], "answers": [0], "note": "parse-error-reply"},
    ],
    "rpc call with an empty Array": [
        # `[]` is an invalid request; JR-BATCH-EMPTY judges the reply, which here is right.
        {"kinds": [("batch", None)], "rules": ["JR-TOPLEVEL"]},
        {"kinds": [("error", None)], "answers": [0], "note": "invalid-request-reply"},
    ],
    "rpc call with an invalid Batch (but not empty)": [
        {"kinds": [("batch", None), ("invalid", 0)], "rules": ["JR-TOPLEVEL"]},
        {"kinds": [("batch", None), ("error", 0)], "answers": [None, 0]},
    ],
    "rpc call with invalid Batch": [
        {"kinds": [("batch", None), ("invalid", 0), ("invalid", 1), ("invalid", 2)]},
        {
            "kinds": [("batch", None), ("error", 0), ("error", 1), ("error", 2)],
            "answers": [None, 0, 0, 0],
        },
    ],
    "rpc call Batch": [
        {
            "kinds": [
                ("batch", None),
                ("request", 0),
                ("notification", 1),
                ("request", 2),
                ("invalid", 3),
                ("request", 4),
                ("request", 5),
            ]
        },
        {
            "kinds": [
                ("batch", None),
                ("response", 0),
                ("response", 1),
                ("error", 2),
                ("error", 3),
                ("response", 4),
            ],
            "answers": [None, 0, 0, 0, 0, 0],
            "request_index": [None, 0, 2, None, 4, 5],
        },
    ],
    "rpc call Batch (all notifications)": [
        {"kinds": [("batch", None), ("notification", 0), ("notification", 1)]},
    ],
}


def test_every_vector_group_has_an_expectation() -> None:
    assert sorted(g["title"] for g in VECTORS) == sorted(EXPECTED)


@pytest.mark.parametrize("group", VECTORS, ids=[g["title"] for g in VECTORS])
def test_vector_classification_and_pairing(group: dict[str, Any]) -> None:
    session = Session("vectors", "http")
    expected = EXPECTED[group["title"]]
    frame_seq_of_exchange: list[int] = []
    # An exchange with raw null is the spec's "Nothing is returned" remark.
    exchanges = [e for e in group["exchanges"] if e["raw"] is not None]
    for number, (exchange, want) in enumerate(zip(exchanges, expected, strict=True)):
        direction = "c2s" if exchange["dir"] == "-->" else "s2c"
        records = session.feed_frame(direction, "http", exchange["raw"].encode(), 10.0 + number)
        frame = records[0]
        assert isinstance(frame, FrameRecord)
        assert frame.raw == exchange["raw"].encode()
        frame_seq_of_exchange.append(frame.seq)
        messages = [r for r in records if isinstance(r, MessageRecord)]
        assert [(m.kind, m.index) for m in messages] == want["kinds"]
        assert all(m.frame == frame.seq for m in messages)
        if "answers" in want:
            answers = [None if a is None else frame_seq_of_exchange[a] for a in want["answers"]]
            assert [m.answers for m in messages] == answers
        if "request_index" in want:
            assert [m.request_index for m in messages] == want["request_index"]
        if "note" in want:
            assert messages[0].note == want["note"]
        rules = {r.rule for r in records if isinstance(r, FindingRecord)}
        for rule in want.get("rules", []):
            assert rule in rules
        # No reply in the spec's examples is miscounted or unpaired.
        assert "JR-BATCH-RESP-COUNT" not in rules
        assert "JR-RESP-ID" not in rules
        assert not any(r.event == "analyzer-error" for r in records if hasattr(r, "event"))


def test_null_id_request_is_a_request_not_a_notification() -> None:
    session = Session()
    records = session.feed_frame("c2s", "http", b'{"jsonrpc":"2.0","method":"x","id":null}', 1.0)
    (message,) = [r for r in records if isinstance(r, MessageRecord)]
    assert message.kind == "request"
    assert message.has_id is True and message.id is None
    assert "MSG-ID-NOT-NULL" in {r.rule for r in records if isinstance(r, FindingRecord)}


def test_unknown_members_are_kept_in_the_raw_frame() -> None:
    session = Session()
    raw = b'{"jsonrpc":"2.0","method":"x","x-extra":{"a":1}}'
    records = session.feed_frame("c2s", "http", raw, 1.0)
    assert records[0].raw == raw
    assert [r.kind for r in records if isinstance(r, MessageRecord)] == ["notification"]
