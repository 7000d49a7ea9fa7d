"""rules/declined.py: the error a receiver gives for what it does not support or cannot do."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Conversation
from tests.core.rules.dsl import Proof, Step, assert_proof, c, err, play, req, res, s

TOOLS = res(1, {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]})
LISTED = [c(req(1, "tools/list")), s(TOOLS)]
NO_PROMPTS = {"tools": {}, "resources": {}}
SAMPLE_TOOLS = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    "maxTokens": 10,
    "tools": [{"name": "t", "inputSchema": {"type": "object"}}],
}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
URL_ELICIT = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://example.com/login",
    "elicitationId": "e1",
}


def listings(uris: list[str], templates: list[str]) -> list[Step]:
    resources = [{"uri": u, "name": u} for u in uris]
    described = [{"uriTemplate": t, "name": t} for t in templates]
    return [
        c(req(1, "resources/list")),
        s(res(1, {"resources": resources})),
        c(req(2, "resources/templates/list")),
        s(res(2, {"resourceTemplates": described})),
    ]


def read(uri: str, answer: dict[str, Any]) -> list[Step]:
    return [
        *listings(["file:///a"], ["db://{table}/rows"]),
        c(req(3, "resources/read", {"uri": uri})),
        s(answer),
    ]


PROOFS = [
    Proof(
        "CAP-NOT-SUPPORTED-CODE",
        fire=[c(req(1, "prompts/list")), s(err(1, -32603, "no prompts"))],
        miss=[c(req(1, "prompts/list")), s(err(1, -32601, "Method not found"))],
        server_caps=NO_PROMPTS,
    ),
    Proof(
        "ROOTS-UNSUPPORTED",
        fire=[s(req(1, "roots/list")), c(res(1, {"roots": []}))],
        miss=[s(req(1, "roots/list")), c(err(1, -32601, "Method not found"))],
    ),
    Proof(
        "SAMP-TOOLS-NO-CAP-ERROR",
        fire=[s(req(1, "sampling/createMessage", SAMPLE_TOOLS)), c(res(1, SAMPLED))],
        miss=[s(req(1, "sampling/createMessage", SAMPLE_TOOLS)), c(err(1, -32602, "no tools"))],
        client_caps={"sampling": {}},
    ),
    Proof(
        "ELIC-UNSUPPORTED-MODE-ERR",
        fire=[s(req(1, "elicitation/create", URL_ELICIT)), c(err(1, -32603, "oops"))],
        miss=[s(req(1, "elicitation/create", URL_ELICIT)), c(err(1, -32602, "no url mode"))],
        client_caps={"elicitation": {"form": {}}},
    ),
    Proof(
        "COMPL-ERRORS",
        fire=[c(req(1, "completion/complete", {})), s(err(1, 404, "unknown prompt"))],
        miss=[c(req(1, "completion/complete", {})), s(err(1, -32602, "unknown prompt"))],
    ),
    Proof(
        "TOOL-ARGS-ERROR-KIND",
        fire=[
            *LISTED,
            c(req(2, "tools/call", {"name": "add", "arguments": {"a": "x"}})),
            s(err(2, -32602, "a must be a number")),
        ],
        miss=[
            *LISTED,
            c(req(2, "tools/call", {"name": "nope", "arguments": {}})),
            s(err(2, -32602, "Unknown tool: nope")),
        ],
    ),
    Proof(
        "RES-NOT-FOUND",
        fire=read("file:///gone", err(3, -32603, "no such file")),
        miss=read("file:///gone", err(3, -32002, "Resource not found")),
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def rules(steps: list[Step], **kw: Any) -> list[str]:
    convo: Conversation = play(Proof("-", [], [], **kw), steps)
    return [f.rule for f in convo.findings]


def test_a_declared_capability_may_fail_with_any_code() -> None:
    steps = [c(req(1, "prompts/list")), s(err(1, -32603, "database down"))]
    assert "CAP-NOT-SUPPORTED-CODE" not in rules(steps)


def test_a_client_without_elicitation_refusing_it_with_another_code() -> None:
    steps = [s(req(1, "elicitation/create", URL_ELICIT)), c(err(1, -32602, "no"))]
    found = rules(steps, client_caps={})
    assert "CAP-NOT-SUPPORTED-CODE" in found and "ELIC-UNSUPPORTED-MODE-ERR" not in found


def test_an_elicitation_mode_answered_with_content() -> None:
    steps = [s(req(1, "elicitation/create", URL_ELICIT)), c(res(1, {"action": "accept"}))]
    assert "ELIC-UNSUPPORTED-MODE-ERR" in rules(steps, client_caps={"elicitation": {}})


def test_a_declared_url_mode_may_be_refused_any_way() -> None:
    steps = [s(req(1, "elicitation/create", URL_ELICIT)), c(err(1, -1, "user declined"))]
    assert "ELIC-UNSUPPORTED-MODE-ERR" not in rules(steps, client_caps={"elicitation": {"url": {}}})


def test_a_client_with_roots_answering_with_a_list_is_right() -> None:
    steps = [s(req(1, "roots/list")), c(res(1, {"roots": []}))]
    assert "ROOTS-UNSUPPORTED" not in rules(steps, client_caps={"roots": {}})


def test_sampling_without_tools_answered_is_right() -> None:
    plain = {k: v for k, v in SAMPLE_TOOLS.items() if k != "tools"}
    steps = [s(req(1, "sampling/createMessage", plain)), c(res(1, SAMPLED))]
    assert "SAMP-TOOLS-NO-CAP-ERROR" not in rules(steps, client_caps={"sampling": {}})


@pytest.mark.parametrize("code", [-32601, -32602, -32603, -32600])
def test_completion_errors_with_json_rpc_codes(code: int) -> None:
    steps = [c(req(1, "completion/complete", {})), s(err(1, code, "no"))]
    assert "COMPL-ERRORS" not in rules(steps)


def test_an_argument_error_as_a_tool_result_is_right() -> None:
    answer = res(2, {"content": [{"type": "text", "text": "a must be a number"}], "isError": True})
    steps = [*LISTED, c(req(2, "tools/call", {"name": "add", "arguments": {"a": "x"}})), s(answer)]
    assert "TOOL-ARGS-ERROR-KIND" not in rules(steps)


def test_a_malformed_call_refused_with_invalid_params_is_right() -> None:
    steps = [
        *LISTED,
        c(req(2, "tools/call", {"name": "add", "arguments": [1]})),
        s(err(2, -32602, "x")),
    ]
    assert "TOOL-ARGS-ERROR-KIND" not in rules(steps)


def test_empty_contents_for_a_missing_resource_before_2026() -> None:
    found = rules(read("file:///gone", res(3, {"contents": []})))
    assert found.count("RES-NOT-FOUND") == 1


@pytest.mark.parametrize("uri", ["file:///a", "db://users/rows"])
def test_a_listed_or_templated_resource_may_fail_any_way(uri: str) -> None:
    assert "RES-NOT-FOUND" not in rules(read(uri, err(3, -32603, "disk error")))


def test_no_verdict_without_the_complete_listings() -> None:
    steps = [c(req(3, "resources/read", {"uri": "file:///gone"})), s(err(3, -32603, "x"))]
    assert "RES-NOT-FOUND" not in rules(steps)
