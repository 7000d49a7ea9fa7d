"""rules/removed.py: removed features in every direction and position, deprecated ones noticed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    assert_proof,
    body,
    c,
    http,
    note,
    play,
    req,
    res,
    s,
)

V5 = "2026-07-28"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
LOG_LEVEL = "io.modelcontextprotocol/logLevel"


def v5(id_: int, method: str, params: dict[str, Any] | None = None, **meta: Any) -> Any:
    caps = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
    return req(
        id_,
        method,
        {
            **(params or {}),
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": V5,
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                **meta,
            },
        },
    )


CALL = v5(1, "tools/call", {"name": "book", "arguments": {}})


def input_required(id_: int, **inputs: Any) -> Any:
    return res(
        id_,
        {"resultType": "input_required", "_meta": SERVER_META, "inputRequests": inputs},
    )


def elicit_url(**extra: Any) -> dict[str, Any]:
    params = {"mode": "url", "message": "Sign in", "url": "https://example.com/a", **extra}
    return {"method": "elicitation/create", "params": params}


def sampling(**extra: Any) -> dict[str, Any]:
    params = {"messages": [], "maxTokens": 10, **extra}
    return {"method": "sampling/createMessage", "params": params}


def rules_of(steps: list) -> list[tuple[str, str]]:
    convo = play(Proof("MOD-REMOVED", [], [], version=None), steps)
    return [(f.rule, f.severity) for f in convo.findings]


PROOFS = [
    Proof(
        "MOD-DEPRECATED",
        # The server asks for roots in its inputRequests.
        fire=[c(CALL), s(input_required(1, where={"method": "roots/list"}))],
        miss=[
            c(CALL),
            s(input_required(1, ok={"method": "elicitation/create", "params": {"message": "?"}})),
        ],
        version=None,
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=lambda p: p.id)
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


@pytest.mark.parametrize(
    ("direction", "method"),
    [
        (c, "notifications/roots/list_changed"),
        (s, "notifications/elicitation/complete"),
        (s, "notifications/tasks/status"),
        (c, "notifications/tasks/status"),
    ],
)
def test_a_removed_notification_from_either_side(direction: Any, method: str) -> None:
    """Regression: these were silent (only client requests were judged)."""
    steps = [c(v5(1, "tools/list")), direction(note(method, {"elicitationId": "e"}))]
    assert rules_of(steps) == [("MOD-REMOVED", "warning")]


def test_a_removed_notification_names_its_sender() -> None:
    steps = [c(v5(1, "tools/list")), s(note("notifications/elicitation/complete"))]
    (finding,) = play(Proof("MOD-REMOVED", [], [], version=None), steps).findings
    assert finding.message == (
        'the server sent "notifications/elicitation/complete", which 2026-07-28 removed'
    )


def test_the_notifications_2026_07_28_keeps_are_not_removed() -> None:
    steps = [
        c(v5(1, "tools/call", {"name": "t", "arguments": {}}, **{LOG_LEVEL: "info"})),
        s(note("notifications/progress", {"progressToken": "p", "progress": 1})),
        c(note("notifications/cancelled", {"requestId": 1})),
    ]
    assert [rule for rule, _ in rules_of(steps) if rule == "MOD-REMOVED"] == []


def test_a_server_ping_is_removed_as_well_as_a_server_request() -> None:
    found = rules_of([c(v5(1, "tools/list")), s(req(9, "ping"))])
    assert ("MOD-REMOVED", "warning") in found
    assert ("MOD-NO-SERVER-REQUESTS", "error") in found


def test_a_server_sampling_request_is_not_called_removed() -> None:
    """sampling/createMessage moved into inputRequests: MOD-NO-SERVER-REQUESTS, not removed."""
    found = rules_of([c(v5(1, "tools/list")), s(req(9, "sampling/createMessage", {}))])
    assert "MOD-NO-SERVER-REQUESTS" in [rule for rule, _ in found]
    assert "MOD-REMOVED" not in [rule for rule, _ in found]


def test_elicitation_id_inside_input_requests() -> None:
    fired = rules_of([c(CALL), s(input_required(1, login=elicit_url(elicitationId="e1")))])
    assert fired == [("MOD-REMOVED", "warning")]
    assert rules_of([c(CALL), s(input_required(1, login=elicit_url()))]) == []


def test_the_2025_11_25_task_augmentation_is_removed() -> None:
    augmented = v5(1, "tools/call", {"name": "t", "arguments": {}, "task": {"ttl": 1000}})
    assert rules_of([c(augmented)]) == [("MOD-REMOVED", "warning")]
    assert rules_of([c(CALL)]) == []


def test_deprecated_features_are_info_once_per_session() -> None:
    steps = [
        c(CALL),
        s(input_required(1, a=sampling(includeContext="thisServer"), b={"method": "roots/list"})),
        c(v5(2, "tools/call", {"name": "book", "arguments": {}})),
        s(input_required(2, a=sampling(), b={"method": "roots/list"})),
    ]
    convo = play(Proof("MOD-DEPRECATED", [], [], version=None), steps)
    found = [(f.rule, f.severity, f.data["feature"]) for f in convo.findings]
    assert found == [
        ("MOD-DEPRECATED", "info", "Sampling"),
        ("MOD-DEPRECATED", "info", 'includeContext "thisServer"/"allServers"'),
        ("MOD-DEPRECATED", "info", "Roots"),
    ]


def test_logging_is_deprecated_when_used_not_when_declared() -> None:
    asked = v5(1, "tools/call", {"name": "t", "arguments": {}}, **{LOG_LEVEL: "info"})
    found = rules_of([c(asked), s(note("notifications/message", {"level": "info", "data": "x"}))])
    assert found == [("MOD-DEPRECATED", "info")]
    # Capabilities that name deprecated features are not a use of them.
    assert rules_of([c(CALL)]) == []


def test_the_legacy_http_sse_transport_in_a_2026_07_28_session() -> None:
    def post(number: int, transport: str) -> list:
        return [
            http(number, "POST", "/messages", transport=transport, accept=ACCEPT_BOTH),
            body(number, v5(number, "tools/list")),
        ]

    legacy = play(
        Proof("MOD-DEPRECATED", [], [], version=None, transport="http"), post(1, "legacy-sse")
    )
    assert [f.data.get("feature") for f in legacy.find("MOD-DEPRECATED")] == [
        "the HTTP+SSE transport"
    ]
    modern = play(
        Proof("MOD-DEPRECATED", [], [], version=None, transport="http"), post(1, "streamable")
    )
    assert modern.find("MOD-DEPRECATED") == []


def test_handshake_sessions_are_not_judged() -> None:
    steps = [c(note("notifications/roots/list_changed")), s(req(9, "ping"))]
    convo = play(
        Proof(
            "MOD-REMOVED",
            [],
            [],
            version="2025-11-25",
            client_caps={"roots": {"listChanged": True}},
        ),
        steps,
    )
    assert [f.rule for f in convo.findings if f.rule.startswith("MOD-")] == []


def test_last_event_id_on_a_2026_07_28_post() -> None:
    def post(**headers: str) -> list:
        return [
            http(1, "POST", accept=ACCEPT_BOTH, mcp_protocol_version=V5, **headers),
            body(1, v5(1, "tools/list")),
        ]

    proof = Proof("MOD-REMOVED", [], [], version=None, transport="http")
    fired = play(proof, post(mcp_method="tools/list", last_event_id="7")).find("MOD-REMOVED")
    assert [f.data.get("header") for f in fired] == ["Last-Event-ID"]
    assert play(proof, post(mcp_method="tools/list")).find("MOD-REMOVED") == []
