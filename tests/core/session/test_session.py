"""core/session/session.py: the ways in (feed, eof, close) and analysis errors kept as data."""

from __future__ import annotations

import orjson
import pytest

from mcpsniff.core.model import EventRecord, FrameRecord
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
