"""Every rule of rules/tasks.py fires on its violation and not on the nearest correct traffic."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.rules import tasks
from tests.core.rules.dsl import (
    Proof,
    assert_cause,
    assert_proof,
    c,
    end,
    note,
    play,
    req,
    res,
    s,
    wait,
)

RELATED = "io.modelcontextprotocol/related-task"
SERVER_CAPS: dict[str, Any] = {
    "tools": {},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}
CLIENT_CAPS: dict[str, Any] = {
    "sampling": {},
    "elicitation": {},
    "tasks": {"requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
}
TOOLS = res(
    1,
    {
        "tools": [
            {
                "name": "slow",
                "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"},
            },
            {
                "name": "must",
                "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "required"},
            },
            {"name": "plain", "inputSchema": {"type": "object"}},
        ]
    },
)
LISTED = [c(req(1, "tools/list")), s(TOOLS)]


def task(task_id: str = "t1", status: str = "working", **extra: Any) -> dict[str, Any]:
    """A Task object as the schema has it."""
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:01.5Z",
        "ttl": 60000,
        **extra,
    }


def call(id_: int, name: str = "slow", augmented: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if augmented:
        params["task"] = {"ttl": 60000}
    return req(id_, "tools/call", params)


CREATED = [*LISTED, c(call(2)), s(res(2, {"task": task()}))]


def status(task_id: str, value: str) -> dict[str, Any]:
    return note("notifications/tasks/status", task(task_id, value))


def payload(id_: int, task_id: str = "t1", **result: Any) -> dict[str, Any]:
    body = {"content": [{"type": "text", "text": "done"}], **result}
    body["_meta"] = {RELATED: {"taskId": task_id}}
    return res(id_, body)


def proof(rule: str, fire: list, miss: list, **kw: Any) -> Proof:
    kw.setdefault("server_caps", SERVER_CAPS)
    kw.setdefault("client_caps", CLIENT_CAPS)
    return Proof(rule, fire, miss, **kw)


TOKEN_CALL = req(
    2, "tools/call", {"name": "slow", "arguments": {}, "task": {}, "_meta": {"progressToken": "p"}}
)
TOKEN_PROGRESS = note("notifications/progress", {"progressToken": "p", "progress": 1})

PROOFS = [
    proof(
        "PROG-TASK-TOKEN",
        fire=[
            *LISTED,
            c(TOKEN_CALL),
            s(res(2, {"task": task()})),
            s(status("t1", "completed")),
            s(TOKEN_PROGRESS),
        ],
        miss=[
            *LISTED,
            c(TOKEN_CALL),
            s(res(2, {"task": task()})),
            s(TOKEN_PROGRESS),
            s(status("t1", "completed")),
        ],
    ),
    proof(
        "TASK-CAP-REQUESTOR",
        fire=[s(req(1, "sampling/createMessage", {"messages": [], "maxTokens": 5, "task": {}}))],
        miss=[s(req(1, "sampling/createMessage", {"messages": [], "maxTokens": 5, "task": {}}))],
        client_caps={"sampling": {}},
        miss_client_caps=CLIENT_CAPS,
    ),
    proof(
        "TASK-LIST-CANCEL-CAP",
        fire=[c(req(5, "tasks/list"))],
        miss=[c(req(5, "tasks/list"))],
        server_caps={"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
        miss_server_caps=SERVER_CAPS,
    ),
    proof(
        "TASK-TOOL-NO-CAP",
        fire=[*LISTED, c(call(2))],
        miss=[*LISTED, c(call(2))],
        server_caps={"tools": {}, "tasks": {"list": {}}},
        miss_server_caps=SERVER_CAPS,
    ),
    proof(
        "TASK-TOOL-FORBIDDEN",
        fire=[*LISTED, c(call(2, "plain"))],
        miss=[*LISTED, c(call(2, "slow"))],
    ),
    proof(
        "TASK-TOOL-REQUIRED",
        fire=[*LISTED, c(call(2, "must", augmented=False))],
        miss=[*LISTED, c(call(2, "must"))],
    ),
    proof(
        "TASK-UNDECLARED-RECEIVER",
        fire=[
            s(req(1, "elicitation/create", {"message": "m", "requestedSchema": {}, "task": {}})),
            c(res(1, {"task": task("c1")})),
        ],
        miss=[
            s(req(1, "elicitation/create", {"message": "m", "requestedSchema": {}, "task": {}})),
            c(res(1, {"task": task("c1")})),
        ],
        client_caps={"elicitation": {}, "tasks": {"list": {}}},
        miss_client_caps=CLIENT_CAPS,
    ),
    proof(
        "TASK-CREATE-RESULT",
        fire=[*LISTED, c(call(2)), s(res(2, {"task": task(status="completed")}))],
        miss=CREATED,
    ),
    proof(
        "TASK-ID",
        fire=[*LISTED, c(call(2)), s(res(2, {"task": {**task(), "taskId": 7}}))],
        miss=CREATED,
    ),
    proof(
        "TASK-FIELDS",
        fire=[
            *CREATED,
            c(req(3, "tasks/get", {"taskId": "t1"})),
            s(res(3, {**task(), "createdAt": "yesterday"})),
        ],
        miss=[*CREATED, c(req(3, "tasks/get", {"taskId": "t1"})), s(res(3, task()))],
    ),
    proof(
        "TASK-STATUS-TRANSITION",
        fire=[*CREATED, s(status("t1", "completed")), s(status("t1", "working"))],
        miss=[
            *CREATED,
            s(status("t1", "input_required")),
            s(status("t1", "working")),
            s(status("t1", "completed")),
        ],
    ),
    proof(
        "TASK-RESULT-META",
        fire=[
            *CREATED,
            c(req(3, "tasks/result", {"taskId": "t1"})),
            s(res(3, {"content": [{"type": "text", "text": "done"}]})),
        ],
        miss=[*CREATED, c(req(3, "tasks/result", {"taskId": "t1"})), s(payload(3))],
    ),
    proof(
        "TASK-RELATED-META",
        fire=[
            *CREATED,
            c(req(3, "tasks/get", {"taskId": "t1", "_meta": {RELATED: {"taskId": "t1"}}})),
        ],
        miss=[*CREATED, c(req(3, "tasks/get", {"taskId": "t1"}))],
    ),
    proof(
        "TASK-CANCEL-TERMINAL",
        fire=[
            *CREATED,
            s(status("t1", "completed")),
            c(req(3, "tasks/cancel", {"taskId": "t1"})),
            s(res(3, task(status="cancelled"))),
        ],
        miss=[
            *CREATED,
            s(status("t1", "completed")),
            c(req(3, "tasks/cancel", {"taskId": "t1"})),
            s({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "terminal"}}),
        ],
    ),
    proof(
        "TASK-CANCEL-RESULT",
        fire=[
            *CREATED,
            c(req(3, "tasks/cancel", {"taskId": "t1"})),
            s(res(3, task(status="working"))),
        ],
        miss=[
            *CREATED,
            c(req(3, "tasks/cancel", {"taskId": "t1"})),
            s(res(3, task(status="cancelled"))),
        ],
    ),
    proof(
        "TASK-POLL-INTERVAL",
        fire=[
            *LISTED,
            c(call(2)),
            s(res(2, {"task": task(pollInterval=1000)})),
            c(req(3, "tasks/get", {"taskId": "t1"})),
            wait(0.1),
            c(req(4, "tasks/get", {"taskId": "t1"})),
        ],
        miss=[
            *LISTED,
            c(call(2)),
            s(res(2, {"task": task(pollInterval=1000)})),
            c(req(3, "tasks/get", {"taskId": "t1"})),
            wait(1.0),
            c(req(4, "tasks/get", {"taskId": "t1"})),
        ],
    ),
    proof(
        "TASK-FAILED-ISERROR",
        fire=[
            *CREATED,
            s(status("t1", "completed")),
            c(req(3, "tasks/result", {"taskId": "t1"})),
            s(payload(3, isError=True)),
        ],
        miss=[
            *CREATED,
            s(status("t1", "failed")),
            c(req(3, "tasks/result", {"taskId": "t1"})),
            s(payload(3, isError=True)),
        ],
    ),
    proof(
        "TASK-RESULT-BLOCKS",
        fire=[
            *CREATED,
            c(req(3, "tasks/result", {"taskId": "t1"})),
            s(payload(3)),
            c(req(4, "tasks/get", {"taskId": "t1"})),
            s(res(4, task("t1", "working"))),
        ],
        miss=[
            *CREATED,
            c(req(3, "tasks/result", {"taskId": "t1"})),
            s(payload(3)),
            c(req(4, "tasks/get", {"taskId": "t1"})),
            s(res(4, task("t1", "completed"))),
        ],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=[p.rule for p in PROOFS])
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def test_every_task_rule_is_proven() -> None:
    assert sorted(p.rule for p in PROOFS) == sorted(tasks.RULES)


def test_create_task_result_skips_the_method_result_checks() -> None:
    p = proof("TOOL-RESULT-SHAPE", fire=[], miss=[])
    convo = play(p, CREATED)
    assert convo.findings == []


def test_task_result_payload_is_judged_as_the_original_method() -> None:
    p = proof("TOOL-RESULT-SHAPE", fire=[], miss=[])
    convo = play(
        p,
        [
            *CREATED,
            c(req(3, "tasks/result", {"taskId": "t1"})),
            s(res(3, {"_meta": {RELATED: {"taskId": "t1"}}})),
        ],
    )
    (finding,) = convo.find("TOOL-RESULT-SHAPE")
    assert "content must be an array" in finding.message


def test_progress_token_lives_until_the_task_ends() -> None:
    p = proof("PROG-STOP", fire=[], miss=[])
    with_token = {"name": "slow", "arguments": {}, "task": {}, "_meta": {"progressToken": "p"}}
    progress = note("notifications/progress", {"progressToken": "p", "progress": 1})
    later = note("notifications/progress", {"progressToken": "p", "progress": 2})
    convo = play(
        p,
        [
            *LISTED,
            c(req(2, "tools/call", with_token)),
            s(res(2, {"task": task()})),
            s(progress),
            s(status("t1", "completed")),
            s(later),
            end(),
        ],
    )
    assert [f.rule for f in convo.findings] == ["PROG-TASK-TOKEN"]
    assert convo.findings[0].seq[-1] == convo.messages[-1].frame


@pytest.mark.parametrize(("final", "fired"), [("completed", True), ("failed", False)])
def test_failed_iserror_judged_when_the_status_comes_after_the_result(
    final: str, fired: bool
) -> None:
    """The tool's isError result first, the task's terminal status after it."""
    steps = [
        *CREATED,
        c(req(3, "tasks/result", {"taskId": "t1"})),
        s(payload(3, isError=True)),
        s(status("t1", final)),
    ]
    found = play(proof("TASK-FAILED-ISERROR", [], []), steps).find("TASK-FAILED-ISERROR")
    assert len(found) == (1 if fired else 0)
    if fired:
        assert found[0].seq[0] < found[0].seq[1]
        assert "ended 'completed' but its result has isError: true" in found[0].message


def test_failed_iserror_not_judged_for_a_result_without_iserror() -> None:
    steps = [
        *CREATED,
        c(req(3, "tasks/result", {"taskId": "t1"})),
        s(payload(3, isError=False)),
        s(status("t1", "completed")),
    ]
    assert not play(proof("TASK-FAILED-ISERROR", [], []), steps).find("TASK-FAILED-ISERROR")


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "TASK-FIELDS",
            fire=[*CREATED, c(req(3, "tasks/get", {"taskId": "t1"})), s(res(3, task(ttl="1h")))],
            miss=[*CREATED, c(req(3, "tasks/get", {"taskId": "t1"})), s(res(3, task(ttl=None)))],
        ),
        "ttl must be a number or null",
    ),
    (
        proof(
            "TASK-FIELDS",
            fire=[
                *CREATED,
                c(req(3, "tasks/get", {"taskId": "t1"})),
                s(res(3, task(pollInterval="soon"))),
            ],
            miss=[
                *CREATED,
                c(req(3, "tasks/get", {"taskId": "t1"})),
                s(res(3, task(pollInterval=500))),
            ],
        ),
        "pollInterval must be a number",
    ),
    (
        proof(
            "TASK-FIELDS",
            fire=[
                *CREATED,
                c(req(3, "tasks/get", {"taskId": "t1"})),
                s(res(3, task(status="done"))),
            ],
            miss=[*CREATED, c(req(3, "tasks/get", {"taskId": "t1"})), s(res(3, task()))],
        ),
        "status 'done' is not one of",
    ),
    (
        proof(
            "TASK-CREATE-RESULT",
            fire=[*LISTED, c(call(2)), s(res(2, {"task": "t1"}))],
            miss=CREATED,
        ),
        "has a task that is not an object",
    ),
    (
        proof(
            "TASK-ID",
            fire=[*CREATED, c(call(3)), s(res(3, {"task": task()}))],
            miss=[*CREATED, c(call(3)), s(res(3, {"task": task("t2")}))],
        ),
        "a second time",
    ),
    (
        proof(
            "TASK-CANCEL-TERMINAL",
            fire=[
                *CREATED,
                s(status("t1", "completed")),
                c(req(3, "tasks/cancel", {"taskId": "t1"})),
                s({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "ended"}}),
            ],
            miss=[
                *CREATED,
                s(status("t1", "completed")),
                c(req(3, "tasks/cancel", {"taskId": "t1"})),
                s({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "ended"}}),
            ],
        ),
        "was refused with code -32603",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
