"""Hostile HTTP events and bodies through the transport rules (docs/architecture.md, invariant 6).

A trace is hostile: an event's ``exchange`` may be a list, its headers a
string, a status a float, an SSE endpoint a dict. Hypothesis mixes such events
with JSON-RPC bodies (2025-11-25 and 2026-07-28, subscriptions included) on the
exchanges they name; no rule may raise (an ``analyzer-error`` record) and every
finding's message stays bounded.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpsniff.core.model import EventRecord, FindingRecord
from mcpsniff.core.session import Session

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 600),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.lists(st.integers(-5, 5), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2),
)
NUMBERS = st.one_of(st.integers(0, 4), ODD)
HEADER_NAMES = st.sampled_from(
    [
        "host",
        "origin",
        "accept",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        "mcp-method",
        "authorization",
    ]
)
HEADER_VALUES = st.one_of(
    st.sampled_from(
        [
            "127.0.0.1:3001",
            "localhost",
            "[::1",
            "http://evil.example",
            "null",
            "application/json",
            "text/event-stream",
            "2026-07-28",
            "2025-11-25",
            "s1",
        ]
    ),
    st.text(max_size=40),
)
HEADERS = st.one_of(st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES).map(list), max_size=6), ODD)
PATHS = st.one_of(st.sampled_from(["/mcp", "/sse", "/message?sessionId=a", "/m?x"]), ODD)

EVENTS = st.one_of(
    st.fixed_dictionaries(
        {
            "exchange": NUMBERS,
            "method": st.one_of(st.sampled_from(["POST", "GET", "DELETE"]), ODD),
            "path": PATHS,
            "headers": HEADERS,
            "transport": st.one_of(st.sampled_from(["streamable", "legacy-sse"]), ODD),
            "client": st.one_of(st.sampled_from(["127.0.0.1:1", "127.0.0.1:2"]), ODD),
        }
    ).map(lambda d: ("http-request", d)),
    st.fixed_dictionaries(
        {
            "exchange": NUMBERS,
            "status": st.one_of(st.sampled_from([200, 202, 403, 404]), ODD),
            "headers": HEADERS,
        }
    ).map(lambda d: ("http-response", d)),
    st.fixed_dictionaries(
        {
            "exchange": NUMBERS,
            "event": st.one_of(st.sampled_from(["endpoint", "message"]), ODD),
            "id": ODD,
            "endpoint": st.one_of(PATHS, st.text(max_size=3000)),
        }
    ).map(lambda d: ("sse-event", d)),
    st.fixed_dictionaries({"exchange": NUMBERS, "outcome": ODD}).map(lambda d: ("http-end", d)),
)
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/subscriptionId": 1,
}
BODIES = st.one_of(
    st.sampled_from(
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
            },
            {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": [], "_meta": META},
            },
            {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": META},
            },
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {
                    "uri": ["x"],
                    "_meta": {"io.modelcontextprotocol/subscriptionId": {"a": 1}},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}},
            {"jsonrpc": "2.0", "id": 1, "result": {"resultType": 5, "_meta": []}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            [
                {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                {"jsonrpc": "2.0", "id": 3, "result": {}},
            ],
        ]
    ),
    st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result"]), ODD, max_size=4
    ),
)
STEPS = st.one_of(
    EVENTS.map(lambda e: ("event", e)),
    st.tuples(
        st.sampled_from(["c2s", "s2c"]), BODIES, NUMBERS, st.sampled_from(["http", "sse"])
    ).map(lambda f: ("frame", f)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEPS, max_size=25))
def test_hostile_http_traffic_never_breaks_a_rule(steps: list[tuple[str, Any]]) -> None:
    session = Session("fuzz", "http")
    out: list[Any] = []
    t = 0.0
    for kind, step in steps:
        t += 0.001
        if kind == "event":
            name, data = step
            out.extend(session.event(name, t, data))
        else:
            direction, payload, exchange, transport = step
            raw = orjson.dumps(payload)
            out.extend(session.feed_frame(direction, transport, raw, t, {"exchange": exchange}))
    out.extend(session.close(t + 1))
    errors = [r for r in out if isinstance(r, EventRecord) and r.event == "analyzer-error"]
    assert errors == [], errors[0].data["traceback"] if errors else ""
    for finding in (r for r in out if isinstance(r, FindingRecord)):
        assert len(finding.message) < 2000, finding.message[:200]


def test_a_stateless_frame_naming_a_list_as_its_exchange() -> None:
    """Found by the test above: pairing per client read the exchange with a list key."""
    session = Session("fuzz", "http")
    out = list(session.event("http-request", 0.1, {"exchange": 1, "method": "POST"}))
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    out += session.feed_frame("c2s", "http", orjson.dumps(request), 0.2, {"exchange": [1]})
    out += session.feed_frame(
        "s2c", "http", b'{"jsonrpc":"2.0","id":1,"result":{}}', 0.3, {"exchange": [1]}
    )
    assert [r for r in out if isinstance(r, EventRecord) and r.event == "analyzer-error"] == []
    replies = [r for r in out if getattr(r, "kind", None) == "response"]
    assert replies and replies[0].answers is not None
