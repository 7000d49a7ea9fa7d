"""core/session/parsing.py: frames that are not one already parsed message."""

from __future__ import annotations

from collections import deque

from mcpsniff.core.model import FindingRecord, MessageRecord
from mcpsniff.core.session.parsing import NOT_JSON, fallback_parse
from tests.conftest import Conversation


def test_ids_beyond_64_bits_compare_exactly(convo: Conversation) -> None:
    convo.handshake()
    convo.client(b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}\n')
    convo.server(b'{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}\n')
    assert convo.find("MSG-ID-TYPE") == []
    (finding,) = convo.find("JR-RESP-ID")
    # Not equal (ids compare exactly), and 2**64 + 1 as a double is 2**64: the
    # id lost its last digit on the way, a cause of its own (not "unknown-id").
    assert finding.data["cause"] == "id-precision"


def test_fallback_parse_takes_what_json_allows_and_nothing_else() -> None:
    assert fallback_parse(b'{"id": 18446744073709551617}') == {"id": 2**64 + 1}
    for not_json in (b"NaN", b'{"a": Infinity}', b"\xff\xfe", b"{", b"[" * 100_000):
        assert fallback_parse(not_json) is NOT_JSON, not_json[:10]


def test_blank_stdio_lines_are_frames_but_no_bad_input(convo: Conversation) -> None:
    convo.handshake()
    out = convo.client(b"   \n")
    # A frame and what the stdio rules say of it (STDIO-FRAMING), but no message.
    assert [type(r).__name__ for r in out if not isinstance(r, FindingRecord)] == ["FrameRecord"]
    assert convo.session.state.bad_frames["c2s"] == deque()
    out = convo.client(b"no json\n")
    assert [r.kind for r in out if isinstance(r, MessageRecord)] == ["unparseable"]
    assert list(convo.session.state.bad_frames["c2s"]) == [(out[0].seq, "parse")]


def test_json_that_is_no_object_is_an_invalid_message(convo: Conversation) -> None:
    convo.handshake()
    out = convo.client(b"42\n")
    assert [r.kind for r in out if isinstance(r, MessageRecord)] == ["invalid"]
    assert "JR-TOPLEVEL" in {r.rule for r in out if isinstance(r, FindingRecord)}
    assert list(convo.session.state.bad_frames["c2s"]) == [(out[0].seq, "invalid")]
