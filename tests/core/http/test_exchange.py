"""core/http/exchange.py: one exchange's state machine, transitions in, routed events out."""

from __future__ import annotations

from typing import Any

from mcpsniff.core.http.events import Frame, Routed
from mcpsniff.core.http.exchange import (
    AnalyzedExchange,
    ExchangePhase,
    HttpSettings,
    begin_exchange,
)

SETTINGS = HttpSettings(redact=True, mcp_path="/mcp")
SSE = [("Content-Type", "text/event-stream")]
JSON = [("Content-Type", "application/json")]
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def brief(routed: list[Routed]) -> list[tuple[str, str, dict[str, Any] | bytes]]:
    """(session, event name or frame direction, data or frame bytes) of each routed item."""
    out: list[tuple[str, str, Any]] = []
    for session, item in routed:
        if isinstance(item, Frame):
            out.append((session, f"frame-{item.direction}", item.raw))
        else:
            out.append((session, item.name, item.data()))
    return out


def begin(method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> Any:
    return begin_exchange(SETTINGS, 1, 1.0, method, path, headers, body, client="c:1")


def test_a_post_waits_for_its_response_to_know_its_session() -> None:
    exchange, out = begin("POST", "/mcp", JSON, PING)
    assert exchange.phase is ExchangePhase.REQUEST and out == []
    out = exchange.response(200, [*JSON, ("Mcp-Session-Id", "s1")], 2.0)
    assert exchange.phase is ExchangePhase.BODY
    assert [(s, n) for s, n, _ in brief(out)] == [
        ("s1", "http-request"),
        ("s1", "frame-c2s"),
        ("s1", "http-response"),
    ]
    assert exchange.whole_body(b'{"jsonrpc":"2.0","id":1,"result":{}}', 2.5) == []
    out = brief(exchange.finish("complete", 3.0))
    assert [(s, n) for s, n, _ in out] == [("s1", "frame-s2c"), ("s1", "http-end")]
    assert out[-1][2] == {"exchange": 1, "outcome": "complete", "body_bytes": 36}
    assert exchange.phase is ExchangePhase.DONE
    assert exchange.finish("complete", 4.0) == []  # DONE is final


def test_a_legacy_post_is_recorded_before_it_is_forwarded() -> None:
    exchange, out = begin("POST", "/messages?sessionId=abc", JSON, PING)
    assert exchange.phase is ExchangePhase.REQUEST and exchange.key == "sse-abc"
    assert [(s, n) for s, n, _ in brief(out)] == [
        ("sse-abc", "http-request"),
        ("sse-abc", "frame-c2s"),
    ]
    assert brief(out)[0][2]["transport"] == "legacy-sse"


def test_a_session_less_get_stream_waits_for_its_first_event_past_comments() -> None:
    exchange, out = begin("GET", "/sse", [("Accept", "text/event-stream")])
    assert out == [] and exchange.response(200, SSE, 2.0) == []
    assert exchange.phase is ExchangePhase.FIRST_EVENT
    assert exchange.waiting_for_first_event and exchange.endpoint_editable
    assert exchange.body_chunk(b": padding\n\n", 2.1) == []  # comments decide nothing
    out = brief(exchange.body_chunk(b"event: endpoint\ndata: /messages?sessionId=7\n\n", 2.2))
    assert exchange.phase is ExchangePhase.BODY and exchange.endpoint == "/messages?sessionId=7"
    assert [(s, n) for s, n, _ in out] == [
        ("sse-7", "http-request"),
        ("sse-7", "http-response"),
        ("sse-7", "sse-event"),
        ("sse-7", "sse-event"),
    ]
    assert out[0][2]["transport"] == "legacy-sse"
    assert out[2][2] == {"exchange": 1, "index": 0, "comment_only": True}
    assert out[3][2]["endpoint"] == "/messages?sessionId=7"


def test_a_get_stream_whose_first_event_is_a_message_is_streamable_http() -> None:
    """The near miss of the legacy stream: same head, a message first."""
    exchange, _ = begin("GET", "/mcp", [("Accept", "text/event-stream")])
    exchange.response(200, SSE, 2.0)
    out = brief(exchange.body_chunk(b'data: {"jsonrpc":"2.0","method":"n"}\n\n', 2.2))
    assert exchange.phase is ExchangePhase.BODY and exchange.endpoint is None
    assert [(s, n) for s, n, _ in out] == [
        ("http", "http-request"),
        ("http", "http-response"),
        ("http", "sse-event"),
        ("http", "frame-s2c"),
    ]
    assert out[0][2]["transport"] == "streamable"


def test_no_first_event_in_time_decides_a_streamable_stream() -> None:
    exchange, _ = begin("GET", "/mcp", [])
    exchange.response(200, SSE, 2.0)
    out = brief(exchange.first_event(3.0))
    assert exchange.phase is ExchangePhase.BODY
    assert [n for _, n, _ in out] == ["http-request", "http-response"]
    assert exchange.first_event(3.5) == []  # decided once


def test_a_compressed_undecided_stream_is_not_the_shell_s_to_edit() -> None:
    exchange, _ = begin("GET", "/mcp", [])
    exchange.response(200, [*SSE, ("Content-Encoding", "gzip")], 2.0)
    assert exchange.waiting_for_first_event and not exchange.endpoint_editable


def test_a_plain_get_stream_is_never_undecided() -> None:
    """Off the MCP path, without asking for an event stream: no MCP traffic, nothing waits."""
    exchange, _ = begin("GET", "/sse", [])
    exchange.response(200, SSE, 2.0)
    assert exchange.plain and exchange.phase is ExchangePhase.BODY


def test_an_unreachable_upstream_records_the_request_and_ends_it() -> None:
    exchange, _ = begin("POST", "/mcp", JSON, PING)
    out = brief(exchange.unreachable("http://up/mcp?token=secret", "refused", 2.0))
    assert [n for _, n, _ in out] == [
        "http-request",
        "frame-c2s",
        "upstream-unreachable",
        "http-end",
    ]
    assert "secret" not in out[2][2]["url"]
    assert exchange.phase is ExchangePhase.DONE


def test_after_a_gap_the_body_is_counted_not_analyzed() -> None:
    exchange, _ = begin("POST", "/mcp", JSON, PING)
    exchange.response(200, JSON, 2.0)
    assert exchange.body_chunk(b'{"jsonrpc":', 2.1) == []
    out = brief(exchange.gap(10, 2.2))
    assert out == [("http", "capture-gap", {"exchange": 1, "direction": "s2c", "lost_bytes": 10})]
    exchange.body_chunk(b"}", 2.3)
    out = brief(exchange.finish("complete", 3.0))
    assert out == [("http", "http-end", {"exchange": 1, "outcome": "complete", "body_bytes": 22})]


def test_a_plain_exchange_shows_its_error_and_makes_no_frame() -> None:
    exchange, out = begin("GET", "/.well-known/x", [])
    assert exchange.plain and [n for _, n, _ in brief(out)] == ["http-request"]
    exchange.response(404, [("Content-Type", "text/html")], 2.0)
    exchange.whole_body(b"<h1>Not Found</h1>", 2.5)
    out = brief(exchange.finish("complete", 3.0))
    assert [n for _, n, _ in out] == ["http-error-body", "http-end"]
    assert out[0][2]["excerpt"] == "<h1>Not Found</h1>"


def test_transitions_hand_their_events_back_once() -> None:
    exchange, _ = begin("POST", "/mcp", JSON, PING)
    first = exchange.response(200, JSON, 2.0)
    assert first and exchange.out == []
    assert isinstance(exchange, AnalyzedExchange)
