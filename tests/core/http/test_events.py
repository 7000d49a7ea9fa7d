"""core/http/events.py: each typed event makes the trace record it always made."""

from __future__ import annotations

from mcpsniff.core.http.events import (
    BodyNotAnalyzed,
    EndpointRewritten,
    ExchangeGap,
    HttpEnd,
    HttpErrorBody,
    HttpRefused,
    HttpRequest,
    HttpResponse,
    RequestCut,
    SseEventSeen,
    Unreachable,
    record_data,
)


def test_an_http_request_says_host_client_and_plainness_only_when_it_has_them() -> None:
    full = HttpRequest(1, 1.0, "GET", "/sse", [["A", "b"]], "legacy-sse", "h:1", "c:2", False)
    assert record_data(full) == (
        "http-request",
        {
            "exchange": 1,
            "method": "GET",
            "path": "/sse",
            "headers": [["A", "b"]],
            "transport": "legacy-sse",
            "host": "h:1",
            "client": "c:2",
            "mcp": False,
        },
    )
    bare = HttpRequest(2, 1.0, "POST", "/mcp", [], "streamable", None, None, True)
    assert list(bare.data()) == ["exchange", "method", "path", "headers", "transport"]


def test_an_sse_event_record_keeps_only_the_fields_the_block_had() -> None:
    bare = SseEventSeen(3, 1.0, 0, None, None, None, False, False, None)
    assert record_data(bare) == ("sse-event", {"exchange": 3, "index": 0})
    full = SseEventSeen(3, 1.0, 1, "7", "endpoint", 10, True, True, "/m?sessionId=1")
    assert full.data() == {
        "exchange": 3,
        "index": 1,
        "id": "7",
        "event": "endpoint",
        "retry": 10,
        "incomplete": True,
        "comment_only": True,
        "endpoint": "/m?sessionId=1",
    }
    # Only None and False mean "not there": an empty id and a retry of 0 were sent.
    sent = SseEventSeen(3, 1.0, 2, "", None, 0, False, False, None)
    assert list(sent.data().items()) == [("exchange", 3), ("index", 2), ("id", ""), ("retry", 0)]


def test_the_other_events_names_and_fields() -> None:
    assert record_data(HttpResponse(1, 1.0, 200, [])) == (
        "http-response",
        {"exchange": 1, "status": 200, "headers": []},
    )
    assert record_data(HttpEnd(1, 1.0, "complete", 12)) == (
        "http-end",
        {"exchange": 1, "outcome": "complete", "body_bytes": 12},
    )
    assert HttpEnd(1, 1.0, "upstream-unreachable", None).data() == {
        "exchange": 1,
        "outcome": "upstream-unreachable",
    }
    # The shell's observation is the event too: its reason is the record's "error".
    assert record_data(Unreachable(1, 1.0, "http://u", "refused")) == (
        "upstream-unreachable",
        {"exchange": 1, "url": "http://u", "error": "refused"},
    )
    assert HttpErrorBody(1, 1.0, "Not Found").data() == {"exchange": 1, "excerpt": "Not Found"}
    assert record_data(BodyNotAnalyzed(1, 1.0, "c2s", "zstd")) == (
        "http-body-not-analyzed",
        {"exchange": 1, "dir": "c2s", "reason": "zstd"},
    )
    assert ExchangeGap(1, 1.0, "s2c", 5).data() == {
        "exchange": 1,
        "direction": "s2c",
        "lost_bytes": 5,
    }
    assert list(ExchangeGap(1, 1.0, "c2s", 5, "over the limit").data())[-1] == "reason"
    assert record_data(EndpointRewritten(1, 1.0, "a", "b")) == (
        "endpoint-rewrite",
        {"exchange": 1, "from": "a", "to": "b"},
    )
    assert record_data(RequestCut(1, 1.0, 9)) == (
        "http-request-cut",
        {"exchange": 1, "body_bytes": 9},
    )


def test_a_refusal_names_its_client_only_when_known() -> None:
    assert record_data(HttpRefused(1.0, "bad-request", "bare LF", "127.0.0.1:5")) == (
        "http-refused",
        {"kind": "bad-request", "reason": "bare LF", "client": "127.0.0.1:5"},
    )
    assert HttpRefused(1.0, "head-timeout", "slow", None).data() == {
        "kind": "head-timeout",
        "reason": "slow",
    }
