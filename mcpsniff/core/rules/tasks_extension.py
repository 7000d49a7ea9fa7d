"""The tasks extension of 2026-07-28 (``io.modelcontextprotocol/tasks``, EXT-TASKS-*).

2026-07-28 moved tasks out of the core protocol ("Move experimental tasks out
of the core protocol and into an official extension", ``S/2026-07-28/changelog.mdx
§ Major changes`` 6). The extension (ext-tasks ``specification/draft/tasks.md``)
is server-directed: a client declares ``io.modelcontextprotocol/tasks`` under
``extensions`` in a request's clientCapabilities, and the server may then
answer that ``tools/call`` with a ``CreateTaskResult`` (``resultType: "task"``,
the Task's members inline) instead of the ``CallToolResult``. The client polls
``tasks/get``, answers input requests with ``tasks/update``, may
``tasks/cancel``, and may listen to ``notifications/tasks`` through
``subscriptions/listen`` (``notifications.taskIds``).

Its state machine, as the 2025-11-25 tasks are modelled in ``rules/tasks.py``:
creation (the CreateTaskResult), status (``tasks/get`` answers and
notifications), terminal states ("completed, failed, and cancelled are
terminal — once reached, the task's state does not change"), and the result a
completed task carries, judged as the original request's result.

``Session`` hands a stateless result whose ``resultType`` is ``"task"`` to the
TASK_CREATED rules (never to the method's own result rules: a CreateTaskResult
is not a CallToolResult).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from mcpsniff.core.extensions import TASKS, client_caps_for, declares
from mcpsniff.core.ids import BoundedMap, id_key
from mcpsniff.core.model import C2S, ERROR, S2C
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.registry import ERROR as ERROR_EVENT
from mcpsniff.core.rules.registry import (
    NOTIFICATION,
    REQUEST,
    RESULT,
    TASK_CREATED,
    rule,
)
from mcpsniff.core.rules.tasks import _ISO8601 as ISO8601
from mcpsniff.core.rules.tasks import STATUSES, TERMINAL  # the extension keeps these statuses

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg, Pending

RULES = (
    "EXT-TASKS-NEGOTIATED",
    "EXT-TASKS-RESULTTYPE",
    "EXT-TASKS-FIELDS",
    "EXT-TASKS-TRANSITION",
    "EXT-TASKS-UNKNOWN",
    "EXT-TASKS-ACK",
    "EXT-TASKS-CANCEL",
    "EXT-TASKS-INPUT-KEYS",
)

#: The extension's methods (§ Reservations: "The tasks/ method prefix ... reserved").
METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
NOTIFICATION_METHOD = "notifications/tasks"
#: "The following methods currently support task-augmented execution: tools/call".
SUPPORTED = frozenset({"tools/call"})
#: What a status needs besides the Task members (§ Task Polling > Response 2, 3, 5).
STATUS_PAYLOAD = {"input_required": "inputRequests", "completed": "result", "failed": "error"}
#: Codes a tasks/* request may be refused with besides -32602 (unknown task):
#: internal error, missing capability, and the transport's and version's own.
OTHER_REFUSALS = frozenset({-32603, -32021, -32020, -32022, -32600, -32700})
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
TASK_WINDOW = 4096
#: inputRequests keys remembered per task.
KEY_WINDOW = 256
_STATE = "ext_tasks"


@dataclass(slots=True)
class ExtTask:
    """One task a server created: its origin and last known status."""

    task_id: str
    #: The request the CreateTaskResult answered (its Pending).
    origin: Pending
    created_seq: int
    status: str
    status_seq: int
    result_checked: bool = False
    #: inputRequests key -> a fingerprint of the request it named (None: none seen).
    inputs: dict[str, int] | None = None


@dataclass(slots=True)
class Memory:
    """What the rules remember across messages of one session."""

    tasks: BoundedMap
    #: (listen request id key) -> task ids asked for, then those acknowledged.
    listens: BoundedMap
    #: id key of a stdio request answered with a task -> its task id.
    task_requests: BoundedMap


def _memory(session: Session) -> Memory:
    found = session.state.rule_state.get(_STATE)
    if found is None:
        found = session.state.rule_state[_STATE] = Memory(
            BoundedMap(TASK_WINDOW), BoundedMap(1024), BoundedMap(TASK_WINDOW)
        )
    return found


def _short(value: Any) -> str:
    return repr(str(value)[:60])


# --------------------------------------------------------------------------- creation


@rule(
    "EXT-TASKS-FIELDS",
    "EXT-TASKS-NEGOTIATED",
    "EXT-TASKS-RESULTTYPE",
    on=TASK_CREATED,
)
def created(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A CreateTaskResult: only for a declaring client, only for tools/call; a new task."""
    request = msg.request
    if request is None or session.state.era != STATELESS:
        return
    method = request.method
    if declares(client_caps_for(session, request.params), TASKS) is False:
        # "A server MUST NOT return CreateTaskResult to a client that did not
        # include the extension capability on its request, regardless of prior
        # declarations."
        session.report(
            "EXT-TASKS-NEGOTIATED",
            f'the server answered {method} with a task (resultType "task"), but the request\'s '
            f"clientCapabilities do not declare the {TASKS} extension",
            [request.seq, msg.frame],
            method=method,
        )
    elif declares(session.state.server_caps, TASKS) is False:
        # "The server advertises the same extension in its own server/discover
        # capabilities" (docs/extensions/tasks/overview.mdx § How Tasks work 1).
        session.report(
            "EXT-TASKS-NEGOTIATED",
            f"the server answered {method} with a task, but its server/discover capabilities "
            f"do not advertise the {TASKS} extension",
            [request.seq, msg.frame],
            method=method,
            side="server",
        )
    if method not in SUPPORTED:
        # "Servers MUST NOT set resultType to "task" on result types other than
        # CreateTaskResult"; only tools/call may be answered with one.
        session.report(
            "EXT-TASKS-RESULTTYPE",
            f'the server answered {method} with resultType "task"; only tools/call may be '
            "answered with a task"
            + (' (its own result carries resultType "complete")' if method in METHODS else ""),
            [request.seq, msg.frame],
            method=method,
        )
        return
    task_id = _fields(session, msg, result, "CreateTaskResult")
    if task_id is None:
        return
    memory = _memory(session)
    status = result.get("status")
    status = status if status in STATUSES else "working"
    memory.tasks.put(task_id, ExtTask(task_id, request, msg.frame, status, msg.frame))
    if session.transport == "stdio":
        memory.task_requests.put(id_key(request.id), task_id)


def _fields(session: Session, msg: Msg, task: dict[str, Any], where: str) -> str | None:
    """EXT-TASKS-FIELDS on one task object; its taskId, None when it has no usable one."""
    task_id = task.get("taskId")
    problems = []
    if not isinstance(task_id, str) or not task_id:
        problems.append("taskId is not a non-empty string")
    status = task.get("status")
    if status not in STATUSES:
        problems.append(f"status {str(status)[:40]!r} is not one of " + ", ".join(sorted(STATUSES)))
    for name in ("createdAt", "lastUpdatedAt"):
        if not _is_datetime(task.get(name)):
            problems.append(f"{name} is not an ISO 8601 date-time")
    if "ttlMs" not in task:
        problems.append("ttlMs is missing (an integer, or null for unlimited)")
    elif task["ttlMs"] is not None and not _is_integer(task["ttlMs"]):
        problems.append("ttlMs is not an integer or null")
    if "pollIntervalMs" in task and not _is_integer(task["pollIntervalMs"]):
        problems.append("pollIntervalMs is not an integer")
    payload = STATUS_PAYLOAD.get(status) if where != "CreateTaskResult" else None
    if payload is not None and type(task.get(payload)) is not dict:
        problems.append(f"a {status} task carries no {payload} object")
    if problems:
        shown = _short(task_id) if isinstance(task_id, str) else "without a taskId"
        session.report(
            "EXT-TASKS-FIELDS",
            f"task {shown} in a {where}: " + "; ".join(problems),
            [msg.frame],
            problems=problems,
        )
    return task_id if isinstance(task_id, str) and task_id else None


def _is_integer(value: Any) -> bool:
    return type(value) is int or (type(value) is float and value.is_integer())


def _is_datetime(value: Any) -> bool:
    # The same ISO 8601 profile as the 2025-11-25 Task's (rules/tasks.py).
    return isinstance(value, str) and ISO8601.match(value) is not None


# --------------------------------------------------------------------------- requests


@rule(
    "EXT-TASKS-INPUT-KEYS",
    "EXT-TASKS-NEGOTIATED",
    on=REQUEST,
    methods=(*METHODS, "subscriptions/listen"),
)
def task_request(session: Session, msg: Msg) -> None:
    """tasks/* and task subscriptions come only from a client that declares the extension."""
    if session.state.era != STATELESS or msg.direction != C2S:
        return
    params = msg.params or {}
    declared = declares(client_caps_for(session, params), TASKS)
    if msg.method == "subscriptions/listen":
        wanted = params.get("notifications")
        task_ids = wanted.get("taskIds") if type(wanted) is dict else None
        if not isinstance(task_ids, list):
            return
        _memory(session).listens.put(
            session.scoped(id_key(msg.id), msg), frozenset(t for t in task_ids if type(t) is str)
        )
        what = "asked subscriptions/listen for task notifications (taskIds)"
    else:
        what = f"sent {msg.method}"
        if msg.method == "tasks/update":
            _answered_keys(session, msg, params)
    if declared is False:
        # "Servers MUST return this error [-32021] for non-declaring clients
        # issuing tasks/get, tasks/update, and tasks/cancel requests" (and
        # "requesting task notifications on subscriptions/listen").
        session.report(
            "EXT-TASKS-NEGOTIATED",
            f"the client {what}, but the request's clientCapabilities do not declare the "
            f"{TASKS} extension; the server must refuse it with -32021",
            [msg.frame],
            method=msg.method,
        )


# --------------------------------------------------------------------------- results


@rule(
    "EXT-TASKS-ACK",
    "EXT-TASKS-FIELDS",
    "EXT-TASKS-INPUT-KEYS",
    "EXT-TASKS-RESULTTYPE",
    "EXT-TASKS-TRANSITION",
    "EXT-TASKS-UNKNOWN",
    on=RESULT,
    methods=METHODS,
)
def task_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """The answers to tasks/get (a task's state), tasks/update and tasks/cancel (acks)."""
    request = msg.request
    if request is None or session.state.era != STATELESS or msg.direction != S2C:
        return
    method = request.method
    result_type = result.get("resultType")
    if result_type != "complete":
        session.report(
            "EXT-TASKS-RESULTTYPE",
            f'the {method} result has resultType {str(result_type)[:40]!r}; it must be "complete"',
            [msg.frame],
            method=method,
            result_type=result_type if isinstance(result_type, str) else None,
        )
    if method != "tasks/get":
        extra = sorted(set(result) - {"resultType", "_meta"})
        if extra:
            session.report(
                "EXT-TASKS-ACK",
                f"a successful {method} must be acknowledged with an empty result, but it has "
                + ", ".join(extra[:5]),
                [msg.frame],
                method=method,
                keys=extra[:10],
            )
        return
    asked = (request.params or {}).get("taskId")
    task_id = _fields(session, msg, result, "tasks/get result")
    if task_id is None:
        return
    if isinstance(asked, str) and task_id != asked:
        session.report(
            "EXT-TASKS-UNKNOWN",
            f"tasks/get asked for task {_short(asked)}, but the answer describes task "
            f"{_short(task_id)}",
            [request.seq, msg.frame],
            task_id=asked,
        )
        return
    task = _memory(session).tasks.get(task_id)
    if task is not None:
        _observe(session, msg, task, result.get("status"), request.seq, "tasks/get result")
        _input_keys(session, msg, task, result)
        _completed_result(session, msg, task, result)


def _observe(
    session: Session, msg: Msg, task: ExtTask, status: Any, asked_seq: int, where: str
) -> None:
    """A status report of ``task``: a terminal status never changes."""
    if status not in STATUSES or status == task.status:
        return
    if task.status in TERMINAL:
        if task.status_seq > asked_seq:
            # The terminal status was seen after this answer was asked for: the
            # two crossed (an eventually consistent server), which is no change.
            return
        session.report(
            "EXT-TASKS-TRANSITION",
            f"task {_short(task.task_id)} went from {task.status} (seq {task.status_seq}) to "
            f"{status} in a {where}; a terminal status never changes",
            [task.status_seq, msg.frame],
            task_id=task.task_id,
            previous=task.status,
            status=status,
        )
        return
    task.status = status
    task.status_seq = msg.frame


def _completed_result(session: Session, msg: Msg, task: ExtTask, found: dict[str, Any]) -> None:
    """A completed task's ``result`` "matches the result type of the original request"."""
    result = found.get("result")
    if task.result_checked or found.get("status") != "completed" or type(result) is not dict:
        return
    task.result_checked = True
    from mcpsniff.core.rules import methods  # local: methods imports nothing from here

    methods.check_result(session, msg, result, task.origin)


def _input_keys(session: Session, msg: Msg, task: ExtTask, found: dict[str, Any]) -> None:
    """An inputRequests key names one request over the task's lifetime.

    "Each request key in inputRequests MUST be unique over the lifetime of a
    single task. A server ... MUST NOT use the same key to refer to two
    distinct requests over a task's lifetime" (§ Task Update Requests). The
    same request under the same key on later polls is expected ("the server
    includes the same request again").
    """
    requests = found.get("inputRequests")
    if found.get("status") != "input_required" or type(requests) is not dict:
        return
    if task.inputs is None:
        task.inputs = {}
    for key, entry in list(requests.items())[:100]:
        try:
            fingerprint = hash(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
        except TypeError:
            continue
        seen = task.inputs.get(key)
        if seen is None:
            if len(task.inputs) < KEY_WINDOW:
                task.inputs[key] = fingerprint
        elif seen != fingerprint:
            task.inputs[key] = fingerprint
            session.report(
                "EXT-TASKS-INPUT-KEYS",
                f"task {_short(task.task_id)} reuses the inputRequests key {str(key)[:40]!r} for "
                "a different request; a key names one request over the task's lifetime",
                [msg.frame],
                task_id=task.task_id,
                key=str(key)[:200],
            )


def _answered_keys(session: Session, msg: Msg, params: dict[str, Any]) -> None:
    """tasks/update answers only keys the task's inputRequests named.

    "Each key MUST correspond to a currently-outstanding inputRequest key"
    (UpdateTaskRequest.inputResponses). Judged only once the task's input
    requests have been seen.
    """
    task_id = params.get("taskId")
    responses = params.get("inputResponses")
    memory = session.state.rule_state.get(_STATE)
    task = memory.tasks.get(task_id) if memory is not None and isinstance(task_id, str) else None
    if task is None or task.inputs is None or type(responses) is not dict:
        return
    unknown = [str(k)[:40] for k in responses if k not in task.inputs]
    if unknown:
        session.report(
            "EXT-TASKS-INPUT-KEYS",
            f"the client's tasks/update for task {_short(task_id)} answers "
            + ", ".join(repr(k) for k in unknown[:5])
            + ", which the task's inputRequests never asked",
            [msg.frame],
            task_id=task_id,
            keys=unknown[:20],
        )


@rule("EXT-TASKS-UNKNOWN", on=ERROR_EVENT, methods=METHODS)
def task_refused(session: Session, msg: Msg) -> None:
    """An unknown or expired taskId is refused with -32602 (Invalid params)."""
    request = msg.request
    code = msg.error_code
    if (
        request is None
        or session.state.era != STATELESS
        or msg.kind != ERROR
        or code == -32602
        or code in OTHER_REFUSALS
    ):
        return
    method = request.method
    session.report(
        "EXT-TASKS-UNKNOWN",
        f"{method} was refused with code {code!r}; an unknown or expired task is refused "
        "with -32602 (Invalid params), an internal failure with -32603",
        [request.seq, msg.frame],
        method=method,
        code=code if isinstance(code, int) else None,
        # MUST for tasks/get, SHOULD for tasks/update and tasks/cancel.
        severity=None if method == "tasks/get" else "warning",
    )


# --------------------------------------------------------------------------- notifications


@rule(
    "EXT-TASKS-FIELDS",
    "EXT-TASKS-INPUT-KEYS",
    "EXT-TASKS-TRANSITION",
    "EXT-TASKS-UNKNOWN",
    "MOD-SUBS-FILTER",
    "MOD-SUBS-ID",
    on=NOTIFICATION,
    methods=(NOTIFICATION_METHOD, "notifications/subscriptions/acknowledged"),
)
def task_notification(session: Session, msg: Msg) -> None:
    """notifications/tasks: a full task state, for a task the subscription agreed to."""
    if session.state.era != STATELESS or msg.direction != S2C:
        return
    params = msg.params or {}
    meta = params.get("_meta")
    subscription = meta.get(SUBSCRIPTION_ID) if type(meta) is dict else None
    memory = _memory(session)
    listen_key = (
        session.scoped(id_key(subscription), msg)
        if isinstance(subscription, str | int) and not isinstance(subscription, bool)
        else None
    )
    if msg.method != NOTIFICATION_METHOD:
        # The acknowledgement: "the server includes the list of task IDs it has
        # agreed to send task status notifications for, if any".
        agreed = params.get("notifications")
        task_ids = agreed.get("taskIds") if type(agreed) is dict else None
        asked = memory.listens.get(listen_key) if listen_key is not None else None
        if asked is not None:
            ids = task_ids if isinstance(task_ids, list) else []
            acknowledged = frozenset(t for t in ids if type(t) is str)
            memory.listens.put(listen_key, acknowledged)
            extra = sorted(acknowledged - asked)
            if extra:
                # It "includes the list of task IDs it has agreed to send task
                # status notifications for": a subset of those asked for.
                session.report(
                    "MOD-SUBS-FILTER",
                    f"the server acknowledged subscription {str(subscription)[:40]} for tasks "
                    f"{', '.join(_short(t) for t in extra[:3])}, which the client did not ask for",
                    [msg.frame],
                    extra=extra[:20],
                )
        return
    if subscription is None:
        # Task notifications travel only on a listen stream, and "every
        # notification on a listen stream carries subscriptionId".
        session.report(
            "MOD-SUBS-ID",
            f'the server sent notifications/tasks without _meta["{SUBSCRIPTION_ID}"]; task '
            "notifications belong to the subscriptions/listen stream that asked for them",
            [msg.frame],
            method=NOTIFICATION_METHOD,
        )
    task_id = _fields(session, msg, params, NOTIFICATION_METHOD)
    if task_id is None:
        return
    agreed_ids = memory.listens.get(listen_key) if listen_key is not None else None
    if agreed_ids is not None and task_id not in agreed_ids:
        session.report(
            "EXT-TASKS-UNKNOWN",
            f"the server sent notifications/tasks for task {_short(task_id)} on subscription "
            f"{str(subscription)[:40]}, which did not agree to notify about that task",
            [msg.frame],
            task_id=task_id,
        )
    task = memory.tasks.get(task_id)
    if task is not None:
        _observe(session, msg, task, params.get("status"), msg.frame, NOTIFICATION_METHOD)
        _input_keys(session, msg, task, params)


@rule("EXT-TASKS-CANCEL", on=NOTIFICATION, methods=("notifications/cancelled",))
def cancelled_task(session: Session, msg: Msg) -> None:
    """A task is cancelled with tasks/cancel, never with notifications/cancelled."""
    if session.state.era != STATELESS or msg.direction != C2S:
        return
    request_id = (msg.params or {}).get("requestId")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return
    memory = session.state.rule_state.get(_STATE)
    task_id = memory.task_requests.get(id_key(request_id)) if memory is not None else None
    if task_id is not None:
        session.report(
            "EXT-TASKS-CANCEL",
            f"the client sent notifications/cancelled for request {request_id!r}, which was "
            f"answered with task {_short(task_id)}; a task is cancelled with tasks/cancel",
            [msg.frame],
            task_id=task_id,
        )
