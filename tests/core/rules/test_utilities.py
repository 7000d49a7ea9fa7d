"""rules/utilities.py and later additions to replies, http and methods, each fired and missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import (
    ACCEPT_BOTH,
    Proof,
    assert_cause,
    assert_proof,
    body,
    c,
    http,
    http_response,
    in_other_session,
    note,
    play,
    req,
    res,
    s,
)

V2, V4, V5 = "2025-03-26", "2025-11-25", "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V5,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}


def failure(id_: Any, code: int, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": "x"}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def v5(id_: int, method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return req(id_, method, {**(params or {}), "_meta": {**META, **meta}})


def v5_result(id_: int, body_: dict[str, Any]) -> dict[str, Any]:
    return res(id_, {"resultType": "complete", "_meta": SERVER_META, **body_})


PROMPTS = [
    c(req(1, "prompts/list")),
    s(res(1, {"prompts": [{"name": "p", "arguments": [{"name": "city", "required": True}]}]})),
]
COMPLETE = {"argument": {"name": "city", "value": "Ch"}}
TASK = {
    "taskId": "t1",
    "status": "working",
    "createdAt": "2025-11-25T10:00:00Z",
    "lastUpdatedAt": "2025-11-25T10:00:00Z",
    "ttl": None,
}
TASK_CAPS = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
AS_TASK = [
    c(req(2, "tools/call", {"name": "t", "arguments": {}, "task": {}})),
    s(res(2, {"task": TASK})),
]
CALL_PARAMS = {"name": "book", "arguments": {}}
INPUT_REQUIRED = res(
    1,
    {
        "resultType": "input_required",
        "_meta": SERVER_META,
        "inputRequests": {},
        "requestState": "s1",
    },
)
JSON = "application/json"


def post(number: int, payload: Any, path: str = "/mcp", **headers: str) -> list:
    headers.setdefault("accept", ACCEPT_BOTH)
    headers.setdefault("mcp_protocol_version", V4)
    return [http(number, "POST", path, **headers), body(number, payload)]


PROOFS = [
    Proof(
        "COMPL-CONTEXT",
        fire=[
            c(
                req(
                    3,
                    "completion/complete",
                    {
                        "ref": {"type": "ref/prompt", "name": "p"},
                        **COMPLETE,
                        "context": {"arguments": {"n": 1}},
                    },
                )
            )
        ],
        miss=[
            c(
                req(
                    3,
                    "completion/complete",
                    {
                        "ref": {"type": "ref/prompt", "name": "p"},
                        **COMPLETE,
                        "context": {"arguments": {"n": "1"}},
                    },
                )
            )
        ],
    ),
    Proof(
        "COMPL-REF-KNOWN",
        fire=[
            *PROMPTS,
            c(
                req(
                    3,
                    "completion/complete",
                    {"ref": {"type": "ref/prompt", "name": "q"}, **COMPLETE},
                )
            ),
        ],
        miss=[
            *PROMPTS,
            c(
                req(
                    3,
                    "completion/complete",
                    {"ref": {"type": "ref/prompt", "name": "p"}, **COMPLETE},
                )
            ),
        ],
    ),
    Proof(
        "PROMPT-REQUIRED-ARGS",
        fire=[*PROMPTS, c(req(3, "prompts/get", {"name": "p", "arguments": {}}))],
        miss=[*PROMPTS, c(req(3, "prompts/get", {"name": "p", "arguments": {"city": "Chicago"}}))],
    ),
    Proof(
        "LOG-SETLEVEL-INVALID",
        fire=[c(req(3, "logging/setLevel", {"level": "verbose"})), s(res(3, {}))],
        miss=[c(req(3, "logging/setLevel", {"level": "verbose"})), s(failure(3, -32602))],
    ),
    Proof(
        "PAGE-INVALID-CURSOR",
        fire=[c(req(3, "tools/list", {"cursor": "zzz"})), s(failure(3, -32603))],
        miss=[c(req(3, "tools/list", {"cursor": "zzz"})), s(failure(3, -32602))],
    ),
    Proof(
        "PAGE-CURSOR-SESSION",
        fire=[
            in_other_session(c(req(1, "tools/list")), s(res(1, {"tools": [], "nextCursor": "k2"}))),
            c(req(3, "tools/list", {"cursor": "k2"})),
        ],
        miss=[
            c(req(1, "tools/list")),
            s(res(1, {"tools": [], "nextCursor": "k2"})),
            c(req(3, "tools/list", {"cursor": "k2"})),
        ],
    ),
    Proof(
        "TASK-ERRORS",
        fire=[*AS_TASK, c(req(3, "tasks/get", {"taskId": "nope"})), s(failure(3, -32001))],
        miss=[*AS_TASK, c(req(3, "tasks/get", {"taskId": "nope"})), s(failure(3, -32602))],
        server_caps=TASK_CAPS,
    ),
    Proof(
        "CANCEL-TASK",
        fire=[*AS_TASK, c(note("notifications/cancelled", {"requestId": 2}))],
        miss=[*AS_TASK, c(req(3, "tasks/cancel", {"taskId": "t1"}))],
        server_caps={**TASK_CAPS, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}},
    ),
    Proof(
        "MOD-MRTR-RETRY-ID",
        fire=[
            c(v5(1, "tools/call", CALL_PARAMS)),
            s(INPUT_REQUIRED),
            c(v5(1, "tools/call", {**CALL_PARAMS, "inputResponses": {}, "requestState": "s1"})),
        ],
        miss=[
            c(v5(1, "tools/call", CALL_PARAMS)),
            s(INPUT_REQUIRED),
            c(v5(2, "tools/call", {**CALL_PARAMS, "inputResponses": {}, "requestState": "s1"})),
        ],
        version=None,
    ),
    Proof(
        "MOD-MRTR-STATE-ECHO",
        fire=[
            c(v5(1, "tools/call", CALL_PARAMS)),
            s(INPUT_REQUIRED),
            c(v5(2, "tools/call", {**CALL_PARAMS, "inputResponses": {}, "requestState": "s2"})),
        ],
        miss=[
            c(v5(1, "tools/call", CALL_PARAMS)),
            s(INPUT_REQUIRED),
            c(v5(2, "tools/call", {**CALL_PARAMS, "inputResponses": {}, "requestState": "s1"})),
        ],
        version=None,
    ),
    Proof(
        "MOD-MISSING-CLIENT-CAP",
        fire=[c(v5(1, "tools/call", CALL_PARAMS)), s(failure(1, -32021))],
        miss=[
            c(v5(1, "tools/call", CALL_PARAMS)),
            s(failure(1, -32021, {"requiredCapabilities": {"sampling": {}}})),
        ],
        version=None,
    ),
    Proof(
        "JR-BATCH-BAD-JSON",
        fire=[c(b'[{"jsonrpc": "2.0", "method": "ping", "id": 1},\n'), s([failure(None, -32700)])],
        miss=[c(b'[{"jsonrpc": "2.0", "method": "ping", "id": 1},\n'), s(failure(None, -32700))],
        version=V2,
    ),
    Proof(
        "JR-BATCH-ELEMENT",
        fire=[c([req(1, "ping"), 1]), s([res(1, {})])],
        miss=[c([req(1, "ping"), 1]), s([res(1, {}), failure(None, -32600)])],
        version=V2,
    ),
    Proof(
        "HTTP-SESSION-REINIT",
        fire=[
            *post(1, req(1, "ping"), mcp_session_id="s1"),
            http_response(1, 404),
            *post(2, req(2, "ping"), mcp_session_id="s1"),
        ],
        miss=[
            *post(1, req(1, "ping"), mcp_session_id="s1"),
            http_response(1, 404),
            *post(2, req(2, "ping"), mcp_session_id="s2"),
        ],
        transport="http",
    ),
    Proof(
        "HTTP-PROTO-HEADER-400",
        fire=[
            *post(1, req(1, "ping"), mcp_protocol_version="2099-99"),
            http_response(1, 200, content_type=JSON),
        ],
        miss=[*post(1, req(1, "ping"), mcp_protocol_version="2099-99"), http_response(1, 400)],
        transport="http",
    ),
    Proof(
        "AUTH-NO-QUERY-TOKEN",
        fire=post(1, req(1, "ping"), path="/mcp?access_token=abc"),
        miss=post(1, req(1, "ping"), path="/mcp?tenant=abc", authorization="Bearer x"),
        transport="http",
    ),
    Proof(
        "AUTH-BEARER-EVERY",
        fire=[*post(1, req(1, "ping"), authorization="Bearer x"), *post(2, req(2, "ping"))],
        miss=[
            *post(1, req(1, "ping"), authorization="Bearer x"),
            *post(2, req(2, "ping"), authorization="Bearer x"),
        ],
        transport="http",
    ),
    Proof(
        "AUTH-401-WWW-AUTH",
        fire=[*post(1, req(1, "ping")), http_response(1, 401)],
        miss=[
            *post(1, req(1, "ping")),
            http_response(
                1, 401, www_authenticate='Bearer resource_metadata="https://x/.well-known"'
            ),
        ],
        transport="http",
        version="2025-06-18",  # 2025-11-25 also accepts a well-known metadata URI
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_a_retry_answers_its_input_required_once() -> None:
    """After the retry (id 2), a later call under id 1 with inputResponses is no retry of it.

    On a stateless server the later call may come from another client that numbers its
    requests from 1 too (the conformance runner does, one process a scenario).
    """
    steps = [
        c(v5(1, "tools/call", CALL_PARAMS)),
        s(INPUT_REQUIRED),
        c(v5(2, "tools/call", {**CALL_PARAMS, "inputResponses": {}, "requestState": "s1"})),
        s(v5_result(2, {"content": []})),
        c(v5(1, "tools/call", {**CALL_PARAMS, "inputResponses": {}})),
    ]
    convo = play(Proof("-", steps, [], version=None), steps)
    assert [f.rule for f in convo.findings if f.rule.startswith("MOD-MRTR")] == []


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        Proof(
            "PAGE-INVALID-CURSOR",
            # A page answering a cursor the server never issued.
            fire=[c(req(3, "tools/list", {"cursor": "zzz"})), s(res(3, {"tools": []}))],
            miss=[
                c(req(1, "tools/list")),
                s(res(1, {"tools": [], "nextCursor": "zzz"})),
                c(req(3, "tools/list", {"cursor": "zzz"})),
                s(res(3, {"tools": []})),
            ],
        ),
        "answered a page for cursor 'zzz'",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
