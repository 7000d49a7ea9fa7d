"""rules/tasks_extension.py: the 2026-07-28 tasks extension, each rule fired and near-missed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.core.rules.dsl import (
    Proof,
    assert_cause,
    assert_proof,
    c,
    err,
    note,
    play,
    req,
    res,
    s,
)

V5 = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
SUB = "io.modelcontextprotocol/subscriptionId"


def meta(declared: bool = True) -> dict[str, Any]:
    caps: dict[str, Any] = {"elicitation": {}}
    if declared:
        caps["extensions"] = {EXT: {}}
    return {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    }


def v5(id_: int, method: str, declared: bool = True, **params: Any) -> dict[str, Any]:
    return req(id_, method, {**params, "_meta": meta(declared)})


def answer(id_: int, result_type: str = "complete", **body: Any) -> dict[str, Any]:
    return res(id_, {"resultType": result_type, "_meta": SERVER_META, **body})


def task(status: str = "working", task_id: str = "t1", **extra: Any) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:01Z",
        "ttlMs": 60000,
        "pollIntervalMs": 1000,
        **extra,
    }


TOOL_RESULT = {"content": [{"type": "text", "text": "hi"}], "isError": False}
CALL = v5(2, "tools/call", name="slow", arguments={})
CREATED = [c(CALL), s(answer(2, "task", **task()))]
INPUT = {
    "name": {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }
}


def get(id_: int, task_id: str = "t1", declared: bool = True) -> Any:
    return c(v5(id_, "tasks/get", declared, taskId=task_id))


def listen(id_: int, *task_ids: str, declared: bool = True) -> Any:
    return c(v5(id_, "subscriptions/listen", declared, notifications={"taskIds": list(task_ids)}))


def ack(id_: int, *task_ids: str) -> Any:
    params = {"notifications": {"taskIds": list(task_ids)}, "_meta": {SUB: id_}}
    return s(note("notifications/subscriptions/acknowledged", params))


def pushed(sub: int, **state: Any) -> Any:
    return s(note("notifications/tasks", {**task(**state), "_meta": {SUB: sub}}))


def proof(rule: str, fire: list, miss: list) -> Proof:
    return Proof(rule, fire, miss, version=None)


PROOFS = [
    proof(
        "EXT-TASKS-NEGOTIATED",
        # The server answers with a task a request that did not declare the extension.
        fire=[
            c(v5(2, "tools/call", declared=False, name="slow", arguments={})),
            s(answer(2, "task", **task())),
        ],
        miss=CREATED,
    ),
    proof(
        "EXT-TASKS-RESULTTYPE",
        # tasks/get is answered with resultType "task" instead of "complete".
        fire=[*CREATED, get(3), s(answer(3, "task", **task()))],
        miss=[*CREATED, get(3), s(answer(3, **task()))],
    ),
    proof(
        "EXT-TASKS-FIELDS",
        # A completed task without its result.
        fire=[*CREATED, get(3), s(answer(3, **task("completed")))],
        miss=[*CREATED, get(3), s(answer(3, **task("completed", result=TOOL_RESULT)))],
    ),
    proof(
        "EXT-TASKS-TRANSITION",
        # A cancelled task is later reported working again.
        fire=[
            *CREATED,
            get(3),
            s(answer(3, **task("cancelled"))),
            get(4),
            s(answer(4, **task("working"))),
        ],
        miss=[
            *CREATED,
            get(3),
            s(answer(3, **task("input_required", inputRequests=INPUT))),
            get(4),
            s(answer(4, **task("working"))),
            get(5),
            s(answer(5, **task("cancelled"))),
        ],
    ),
    proof(
        "EXT-TASKS-UNKNOWN",
        # The answer to tasks/get describes another task.
        fire=[*CREATED, get(3), s(answer(3, **task(task_id="t2")))],
        miss=[*CREATED, get(3), s(answer(3, **task()))],
    ),
    proof(
        "EXT-TASKS-ACK",
        # tasks/cancel acknowledged with the task instead of an empty result.
        fire=[*CREATED, c(v5(3, "tasks/cancel", taskId="t1")), s(answer(3, **task("cancelled")))],
        miss=[*CREATED, c(v5(3, "tasks/cancel", taskId="t1")), s(answer(3))],
    ),
    proof(
        "EXT-TASKS-INPUT-KEYS",
        # The key "name" names another request on a later poll.
        fire=[
            *CREATED,
            get(3),
            s(answer(3, **task("input_required", inputRequests=INPUT))),
            get(4),
            s(
                answer(
                    4, **task("input_required", inputRequests={"name": {"method": "roots/list"}})
                )
            ),
        ],
        miss=[
            *CREATED,
            get(3),
            s(answer(3, **task("input_required", inputRequests=INPUT))),
            get(4),
            s(answer(4, **task("input_required", inputRequests=INPUT))),
        ],
    ),
    proof(
        "EXT-TASKS-CANCEL",
        # The client cancels the task's request with notifications/cancelled.
        fire=[*CREATED, c(note("notifications/cancelled", {"requestId": 2}))],
        miss=[*CREATED, c(v5(3, "tasks/cancel", taskId="t1")), s(answer(3))],
    ),
]


@pytest.mark.parametrize("p", PROOFS, ids=lambda p: p.id)
def test_rule_fires_and_near_miss_does_not(p: Proof) -> None:
    assert_proof(p)


def rules_of(steps: list) -> list[str]:
    return [f.rule for f in play(proof("EXT-TASKS-FIELDS", [], []), steps).findings]


def test_a_whole_negotiated_task_session_is_clean() -> None:
    """Regression: creation, polling, input, update, listen, completion, cancel: no finding.

    Before the extension was modelled this gave MOD-RESULTTYPE, TOOL-RESULT-SHAPE,
    MOD-REMOVED (tasks/get, tasks/cancel) and MSG-METHOD-UNKNOWN (tasks/update).
    """
    failed_error = {"code": -32603, "message": "rate limited"}
    steps = [
        c(v5(1, "server/discover")),
        s(
            answer(
                1,
                supportedVersions=[V5],
                capabilities={"tools": {}, "extensions": {EXT: {}}},
                ttlMs=0,
                cacheScope="private",
            )
        ),
        *CREATED,
        get(3),
        s(answer(3, **task("input_required", inputRequests=INPUT))),
        c(
            v5(
                4,
                "tasks/update",
                taskId="t1",
                inputResponses={"name": {"action": "accept", "content": {"name": "Luca"}}},
            )
        ),
        s(answer(4)),
        listen(5, "t1"),
        ack(5, "t1"),
        pushed(5, status="working"),
        # A tool error still completes the task (§ Task Execution Errors).
        pushed(5, status="completed", result={**TOOL_RESULT, "isError": True}),
        get(6),
        s(answer(6, **task("completed", result={**TOOL_RESULT, "isError": True}))),
        c(v5(7, "tools/call", name="other", arguments={})),
        s(answer(7, "task", **task(task_id="t2"))),
        get(8, "t2"),
        s(answer(8, **task("failed", task_id="t2", error=failed_error))),
        c(v5(9, "tasks/cancel", taskId="t2")),
        s(answer(9)),
        get(10, "gone"),
        s(err(10, -32602, "Task not found")),
    ]
    assert rules_of(steps) == []


def test_tasks_methods_without_the_extension_are_flagged_not_removed() -> None:
    refusal = err(3, -32021, "missing capability")
    refusal["error"]["data"] = {"requiredCapabilities": {"extensions": {EXT: {}}}}
    found = rules_of([get(3, declared=False), s(refusal)])
    assert found == ["EXT-TASKS-NEGOTIATED"]


def test_a_listen_for_tasks_without_the_extension_is_flagged() -> None:
    found = rules_of([listen(5, "t1", declared=False)])
    assert found == ["EXT-TASKS-NEGOTIATED"]


def test_a_task_for_a_request_other_than_tools_call() -> None:
    steps = [c(v5(2, "prompts/get", name="p")), s(answer(2, "task", **task()))]
    assert "EXT-TASKS-RESULTTYPE" in rules_of(steps)


def test_a_notification_for_a_task_the_subscription_did_not_agree_to() -> None:
    steps = [*CREATED, listen(5, "t1"), ack(5), pushed(5, status="working")]
    assert rules_of(steps) == ["EXT-TASKS-UNKNOWN"]


def test_a_terminal_status_seen_after_the_poll_was_sent_is_a_race_not_a_change() -> None:
    """An eventually consistent server may answer a poll sent before the task ended."""
    steps = [
        *CREATED,
        listen(5, "t1"),
        ack(5, "t1"),
        get(3),
        pushed(5, status="completed", result=TOOL_RESULT),
        s(answer(3, **task("working"))),
    ]
    assert rules_of(steps) == []


def test_a_completed_result_is_judged_as_the_tool_calls_result() -> None:
    steps = [*CREATED, get(3), s(answer(3, **task("completed", result={"content": "x"})))]
    assert rules_of(steps) == ["TOOL-RESULT-SHAPE"]


def test_an_unknown_task_refused_with_the_wrong_code() -> None:
    fired = play(proof("EXT-TASKS-UNKNOWN", [], []), [get(3, "gone"), s(err(3, -32000, "no"))])
    assert [(f.rule, f.severity) for f in fired.findings] == [("EXT-TASKS-UNKNOWN", "error")]
    steps = [c(v5(3, "tasks/update", taskId="gone", inputResponses={})), s(err(3, -32000, "no"))]
    fired = play(proof("EXT-TASKS-UNKNOWN", [], []), steps)
    assert [(f.rule, f.severity) for f in fired.findings] == [("EXT-TASKS-UNKNOWN", "warning")]


def test_fields_name_every_problem() -> None:
    bad = {"taskId": "t1", "status": "done", "createdAt": "yesterday", "ttlMs": "1"}
    fired = play(proof("EXT-TASKS-FIELDS", [], []), [c(CALL), s(answer(2, "task", **bad))])
    (finding,) = fired.findings
    assert finding.rule == "EXT-TASKS-FIELDS"
    assert finding.data["problems"] == [
        "status 'done' is not one of cancelled, completed, failed, input_required, working",
        "createdAt is not an ISO 8601 date-time",
        "lastUpdatedAt is not an ISO 8601 date-time",
        "ttlMs is not an integer or null",
    ]


def test_2025_11_25_tasks_are_still_removed_in_2026_07_28() -> None:
    found = rules_of([c(v5(3, "tasks/list")), c(v5(4, "tasks/result", taskId="t1"))])
    assert found == ["MOD-REMOVED", "MOD-REMOVED"]


def test_a_task_from_a_server_that_did_not_advertise_the_extension() -> None:
    def discover(capabilities: dict[str, Any]) -> list:
        body = {"supportedVersions": [V5], "capabilities": capabilities}
        return [c(v5(1, "server/discover")), s(answer(1, **body, ttlMs=0, cacheScope="private"))]

    unadvertised = [*discover({"tools": {}}), *CREATED]
    assert rules_of(unadvertised) == ["EXT-TASKS-NEGOTIATED"]
    advertised = [*discover({"tools": {}, "extensions": {EXT: {}}}), *CREATED]
    assert rules_of(advertised) == []


def test_a_tasks_update_answering_a_key_never_asked() -> None:
    def update(id_: int, key: str) -> Any:
        return c(v5(id_, "tasks/update", taskId="t1", inputResponses={key: {"action": "accept"}}))

    asked = [*CREATED, get(3), s(answer(3, **task("input_required", inputRequests=INPUT)))]
    assert rules_of([*asked, update(4, "age"), s(answer(4))]) == ["EXT-TASKS-INPUT-KEYS"]
    assert rules_of([*asked, update(4, "name"), s(answer(4))]) == []
    # Before any inputRequests was seen there is nothing to judge by.
    assert rules_of([*CREATED, update(4, "age"), s(answer(4))]) == []


def test_task_notifications_carry_their_subscription_id() -> None:
    bare = s(note("notifications/tasks", task()))
    assert rules_of([*CREATED, listen(5, "t1"), ack(5, "t1"), bare]) == ["MOD-SUBS-ID"]


def test_an_acknowledgement_agrees_to_a_subset_of_the_tasks_asked() -> None:
    assert rules_of([*CREATED, listen(5, "t1"), ack(5, "t1", "t9")]) == ["MOD-SUBS-FILTER"]
    assert rules_of([*CREATED, listen(5, "t1", "t2"), ack(5, "t1")]) == []


#: Causes the descriptions name beyond the one each proof fires: (proof, message fragment).
CAUSES = [
    (
        proof(
            "EXT-TASKS-RESULTTYPE",
            # tasks/get answered with resultType "input_required" instead of "complete".
            fire=[*CREATED, get(3), s(answer(3, "input_required", **task()))],
            miss=[*CREATED, get(3), s(answer(3, **task()))],
        ),
        "resultType 'input_required'; it must be \"complete\"",
    ),
]


@pytest.mark.parametrize(("p", "fragment"), CAUSES, ids=[f for _, f in CAUSES])
def test_each_cause_the_description_names_fires(p: Proof, fragment: str) -> None:
    assert_cause(p, fragment)
