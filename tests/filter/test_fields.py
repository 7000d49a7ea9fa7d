"""The filter's ``trace.id`` and ``trace.problem`` fields (W3C traceparent in params._meta)."""

from __future__ import annotations

import pytest

from mcpsniff.filter import MessageView, build_views, compile_filter
from tests.conftest import Conversation, notification, request, result

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
OTHER = "0af7651916cd43dd8448eb211c80319c"
PARENT = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def views() -> list[MessageView]:
    c = Conversation()
    c.handshake()
    meta = {"traceparent": f"00-{TRACE}-{PARENT}-01"}
    c.client(request(1, "tools/call", {"name": "a", "arguments": {}, "_meta": meta}))
    c.server(result(1, {"content": []}))
    c.client(request(2, "tools/list", {"_meta": {"traceparent": f"00-{OTHER}-{PARENT}-01"}}))
    c.server(result(2, {"tools": []}))
    c.client(request(3, "prompts/list", {"_meta": {"traceparent": "garbage"}}))
    c.server(result(3, {"prompts": []}))
    # The key spelt with a JSON escape is still the key.
    c.client(
        b'{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{"_meta":'
        b'{"trace\\u0070arent":"00-' + TRACE.encode() + b"-" + PARENT.encode() + b'-00"}}}\n'
    )
    c.server(result(4, {"resources": []}))
    c.client(notification("notifications/roots/list_changed", {"_meta": meta}))
    c.client(request(5, "ping"))
    c.server(result(5, {}))
    c.close()
    return list(build_views(c.records))


def selected(views: list[MessageView], expression: str) -> list[tuple[str, object]]:
    flt = compile_filter(expression)
    return [(v.kind, v.id if v.has_id else v.method) for v in views if flt.matches(v)]


def test_trace_id_selects_requests_their_responses_and_notifications(
    views: list[MessageView],
) -> None:
    assert selected(views, f'trace.id == "{TRACE}"') == [
        ("request", 1),
        ("response", 1),
        ("request", 4),
        ("response", 4),
        ("notification", "notifications/roots/list_changed"),
    ]
    assert selected(views, f"traceid == {OTHER}") == [("request", 2), ("response", 2)]
    assert selected(views, "trace_id ~ ^0af7") == [("request", 2), ("response", 2)]


def test_trace_problem_selects_invalid_traceparents(views: list[MessageView]) -> None:
    assert selected(views, "trace.problem and kind == request") == [("request", 3)]
    both = [("request", 3), ("response", 3)]
    assert selected(views, "trace.problem ~ 'version is not'") == both
    assert selected(views, "not trace.id and not trace.problem and kind == request") == [
        ("request", 0),
        ("request", 5),
    ]
