"""core/session/session.py: the ways in (feed, eof, close) and analysis errors kept as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.core.session import Session
from tests.conftest import Conversation, notification, request
from tests.core import session_reference

# --------------------------------------------------------------------------- framing


def test_chunking_does_not_change_records() -> None:
    lines = [
        orjson.dumps(
            request(
                0,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            )
        ),
        orjson.dumps(notification("notifications/initialized")),
        b"garbage line",
        orjson.dumps(request(1, "ping")),
    ]
    stream = b"\r\n".join(lines) + b"\n"
    whole = Conversation()
    whole.client(stream)
    whole.close()
    bytewise = Conversation()
    for i in range(len(stream)):
        bytewise.client(stream[i : i + 1])
    bytewise.close()

    def strip(records: list) -> list:
        return [
            (
                type(r).__name__,
                getattr(r, "raw", None),
                getattr(r, "rule", None),
                getattr(r, "kind", None),
            )
            for r in records
        ]

    assert strip(whole.records) == strip(bytewise.records)


def test_missing_final_newline_is_flushed_as_truncated(convo: Conversation) -> None:
    convo.handshake()
    convo.server(b'{"jsonrpc":"2.0","id":1,"res')
    convo.close()
    (parse,) = convo.find("JR-PARSE")
    assert parse.data["cause"] == "truncated"
    frames = [r.raw for r in convo.records if hasattr(r, "raw")]
    assert frames[-1] == b'{"jsonrpc":"2.0","id":1,"res'


def test_analyzer_errors_are_recorded_not_raised(convo: Conversation, monkeypatch) -> None:
    from mcpsniff.core.rules import registry

    def boom(session, msg):
        raise RuntimeError("bug")

    # A registered rule that raises: the session's dispatch table for ping.
    monkeypatch.setitem(registry.TABLES[registry.REQUEST], "ping", (boom,))
    out = convo.client(request(1, "ping"))
    assert [r.event for r in out if isinstance(r, EventRecord)] == ["analyzer-error"]
    assert "RuntimeError" in out[-1].data["error"]
    assert isinstance(out[0].raw, bytes)


def test_an_analyzer_error_in_one_line_of_a_read_spares_the_others(
    convo: Conversation, monkeypatch
) -> None:
    from mcpsniff.core.rules import registry

    def boom(session, msg):
        raise RuntimeError("bug")

    # One read, three lines: the middle one's analysis fails, the others are whole.
    convo.handshake()
    before = convo.session.counter.value
    # (Both tables: after the handshake the session reads the legacy one.)
    monkeypatch.setitem(registry.TABLES[registry.REQUEST], "ping", (boom,))
    monkeypatch.setitem(registry.LEGACY_TABLES[registry.REQUEST], "ping", (boom,))
    lines = [request(1, "tools/list"), request(2, "ping"), request(3, "tools/list")]
    out = convo.client(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    kinds = [type(r).__name__ for r in out]
    assert kinds == [
        "FrameRecord",
        "MessageRecord",
        "FrameRecord",
        "MessageRecord",
        "EventRecord",
        "FrameRecord",
        "MessageRecord",
    ]
    assert out[4].event == "analyzer-error" and out[4].seq == out[2].seq
    frames = [before + 1, before + 2, before + 3]
    assert [r.seq for r in out if isinstance(r, FrameRecord)] == frames
    assert convo.session.counter.value == before + 3


@pytest.mark.parametrize("kind", sorted(session_reference.GENERATORS))
def test_fast_paths_find_what_the_general_path_found(kind: str) -> None:
    """The plain-envelope and inline-pairing shortcuts find exactly what was recorded (see
    ``session_reference``) on ids of every JSON type, duplicates, batches, out-of-order and
    unknown replies, cancellations and hostile envelopes."""
    expected = session_reference.expected()[kind]
    generate = session_reference.GENERATORS[kind]
    differing = [
        seed
        for seed in session_reference.SEEDS
        if session_reference.digest(generate(seed)) != expected[seed]
    ]
    assert differing == [], (
        f"{kind} seeds whose findings differ from the recorded digests: {differing[:20]}"
    )


# ----------------------------------------------------------------------------
# The JSON-RPC 2.0 specification's §7 examples, classified and paired exactly.
#
# The vectors are a copy of shared/reference/jsonrpc-examples.json (the spec's
# own examples), so the suite runs on a fresh clone.


VECTORS = json.loads((Path(__file__).parents[2] / "data" / "jsonrpc-examples.json").read_text())

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


@pytest.mark.parametrize("redact", [False, True])
def test_fed_lines_are_whole_frame_records(redact: bool) -> None:
    """``feed`` builds its frames slot by slot: every field set, as the dataclass would."""
    import dataclasses

    from mcpsniff.core.model import UNPARSED
    from mcpsniff.core.redact import redact_frame

    session = Session("s", "stdio", redactor=redact_frame if redact else None)
    lines = [b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', b'{"password":"hunter2"}\n']
    frames = [
        r for r in session.feed("c2s", "stdio", b"".join(lines), 2.5) if type(r) is FrameRecord
    ]
    expected = [
        FrameRecord(1, 2.5, "s", "c2s", "stdio", lines[0]),
        FrameRecord(2, 2.5, "s", "c2s", "stdio", lines[1]),
    ]
    if redact:
        expected[1].raw, count = redact_frame(lines[1])
        expected[1].meta = {"redacted": count}
    assert frames == expected
    for frame in frames:
        assert [getattr(frame, f.name) for f in dataclasses.fields(frame)]  # no slot left unset
        assert frame.value is not UNPARSED  # parsed by the analysis


def test_a_frames_only_session_numbers_and_redacts_and_judges_nothing() -> None:
    from mcpsniff.core.model import UNPARSED, EventRecord, FrameRecord
    from mcpsniff.core.redact import redact_frame
    from mcpsniff.core.session import FramesOnlySession, Session

    data = (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"api_key":"sk-live-abcdefabcdef0123456789"}}\n'
        b"not json\n"
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}\n'
        b'[{"jsonrpc":"2.0","id":2,"method":"ping"}]\n'
    )
    full, only = Session(redactor=redact_frame), FramesOnlySession(redactor=redact_frame)
    out_full = full.feed("c2s", "stdio", data, 1.0) + full.close(2.0)
    out_only = only.feed("c2s", "stdio", data, 1.0) + only.close(2.0)
    inputs = [r for r in out_full if isinstance(r, FrameRecord | EventRecord)]
    assert [(r.seq, getattr(r, "raw", None)) for r in out_only] == [
        (r.seq, getattr(r, "raw", None)) for r in inputs
    ]
    assert all(isinstance(r, FrameRecord | EventRecord) for r in out_only)
    # Parsed or not as the full session left it (the writer embeds the parsed ones).
    assert [getattr(r, "value", 0) is UNPARSED for r in out_only] == [
        getattr(r, "value", 0) is UNPARSED for r in inputs
    ]
    assert [getattr(r, "value", 0) is UNPARSED for r in out_only[:4]] == [False, True, False, False]
    assert b"sk-live" not in out_only[0].raw
    assert only.state.ended and only.close(3.0) == []
