"""Filters judged against views built from a real analyzer session's records."""

from __future__ import annotations

import pytest

from mcpsniff.filter import (
    MessageView,
    build_views,
    cancelled_request_id,
    compile_filter,
    index_findings,
    progress_values,
)
from tests.conftest import Conversation, error, notification, request, result


@pytest.fixture(scope="module")
def views() -> list[MessageView]:
    c = Conversation()
    c.handshake()
    c.client(request(1, "tools/call", {"name": "fs_read", "arguments": {"path": "/etc"}}))
    c.t += 0.25  # 250 ms
    c.server(result(1, {"content": [{"type": "text", "text": "denied"}], "isError": True}))
    c.client(
        request(2, "tools/call", {"name": "echo", "arguments": {}, "_meta": {"progressToken": "p"}})
    )
    c.server(
        notification("notifications/progress", {"progressToken": "p", "progress": 3, "total": 10})
    )
    c.server(result(2, {"content": []}))
    c.client(request(3, "resources/read", {"uri": "file:///x"}))
    c.server(error(3, -32602, "bad uri"))
    c.client(request(4, "tools/call", {"name": "slow", "arguments": {}}))
    c.t += 5.0
    c.client(notification("notifications/cancelled", {"requestId": 4, "reason": "user"}))
    c.client(request(5, "ping"))
    c.server(result("5", {}))  # wrong id type: a JR-RESP-ID finding
    c.client(request(6, "tools/list"))  # never answered: a finding at session end
    c.close()
    return list(build_views(c.records, index_findings(c.records)))


def selected(views: list[MessageView], expression: str) -> list[tuple[str, object]]:
    flt = compile_filter(expression)
    return [(v.kind, v.id if v.has_id else v.method) for v in views if flt.matches(v)]


def test_responses_carry_their_request_method_tool_and_latency(views: list[MessageView]) -> None:
    assert selected(views, "gen_ai.tool.name == fs_read") == [("request", 1), ("response", 1)]
    assert selected(views, "mcp.method.name == tools/call and kind == response") == [
        ("response", 1),
        ("response", 2),
    ]
    assert selected(views, "latency > 200ms") == [("response", 1)]
    assert selected(views, "latency >= 0.25s and latency < 252") == [("response", 1)]


def test_tool_errors_and_jsonrpc_errors(views: list[MessageView]) -> None:
    assert selected(views, "error.type == tool_error") == [("response", 1)]
    assert selected(views, "error.code == -32602") == [("error", 3)]
    assert selected(views, "error.code < -32000 and uri ~ ^file:") == [("error", 3)]
    assert selected(views, "kind == error or error.type == tool_error") == [
        ("response", 1),
        ("error", 3),
    ]


def test_ids_compare_with_their_json_type(views: list[MessageView]) -> None:
    assert selected(views, "jsonrpc.request.id == 5") == [("request", 5)]
    assert selected(views, 'jsonrpc.request.id == "5"') == [("response", "5")]


def test_findings_rules_and_severities(views: list[MessageView]) -> None:
    # The wrong-typed echo concerns the request and its response.
    assert selected(views, "rule == JR-RESP-ID") == [("request", 5), ("response", "5")]
    # Reported at session end, but the index gives it to the request it concerns.
    assert ("request", 6) in selected(views, "rule == JR-RESP-REQUIRED")
    assert selected(views, "severity >= error and kind == request") == [
        ("request", 5),
        ("request", 6),
    ]
    assert selected(views, "rule and not severity == error") == []
    assert len(selected(views, "rule != JR-RESP-ID")) == len(views) - 2


def test_free_text_searches_bytes_and_names(views: list[MessageView]) -> None:
    assert selected(views, "denied") == [("response", 1)]
    assert selected(views, '"BAD URI"') == [("error", 3)]
    assert selected(views, "direction == c2s and fs_read") == [("request", 1)]


def test_cancellation_knows_its_request_and_how_long_it_waited(views: list[MessageView]) -> None:
    (cancel,) = [v for v in views if v.method == "notifications/cancelled"]
    assert cancelled_request_id(cancel) == (True, 4)
    assert cancel.cancellation is not None
    assert cancel.cancellation.method == "tools/call"
    assert cancel.cancellation.tool == "slow"
    assert cancel.cancellation.after_s == pytest.approx(5.001, abs=0.002)
    assert not cancel.cancellation.answered
    assert selected(views, "tool == slow") == [
        ("request", 4),
        ("notification", "notifications/cancelled"),
    ]


def test_progress_values(views: list[MessageView]) -> None:
    (progress,) = [v for v in views if v.method == "notifications/progress"]
    assert progress_values(progress) == {"progressToken": "p", "progress": 3, "total": 10}


def test_events_are_views_too(views: list[MessageView]) -> None:
    assert selected(views, "kind == event and event == session-end") == [("event", None)]


def test_without_an_index_late_findings_become_their_own_views() -> None:
    c = Conversation()
    c.handshake()
    c.client(request(9, "tools/list"))
    c.close()
    late = [v for v in build_views(c.records) if v.kind == "finding"]
    assert [f.rule for v in late for f in v.findings] == ["JR-RESP-REQUIRED"]
    assert compile_filter("rule == JR-RESP-REQUIRED").matches(late[0])


def test_load_views_reads_a_gallery_trace_with_all_its_findings() -> None:
    from pathlib import Path

    from mcpsniff.filter import load_views

    trace = Path(__file__).resolve().parents[2] / "recordings" / "unanswered-request.jsonl"
    views = list(load_views(trace))
    flt = compile_filter("rule == JR-RESP-REQUIRED and kind == request")
    assert [(v.method, v.id) for v in views if flt.matches(v)] == [("tools/call", 3)]


def test_a_filter_pickles_as_its_expression_compiled_again() -> None:
    import pickle

    flt = compile_filter("method == tools/call and latency > 5ms")
    copy = pickle.loads(pickle.dumps(flt))
    assert copy.expression == flt.expression and copy.tree == flt.tree
    assert copy is not flt
