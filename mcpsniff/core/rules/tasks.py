"""Tasks (2025-11-25, experimental): task-augmented requests and the tasks/* methods.

``S/2025-11-25/basic/utilities/tasks.mdx``. A request whose ``params.task`` is
an object asks its receiver to run it as a task. An accepted one is answered
with a ``CreateTaskResult`` (``{task: Task}``), not with the method's usual
result ("the receiver **MUST** return a CreateTaskResult", § Result Retrieval);
the real result comes later from ``tasks/result``, and must be "exactly" what
the original request would have returned. So a ``CreateTaskResult`` skips the
method's result checks (no false TOOL-RESULT-SHAPE, SAMP-RESULT-SHAPE or
ELIC-RESULT-ACTION), and the ``tasks/result`` answer is judged as the
original method's result.

Tasks belong to their receiver: a client's task ids and a server's are two
namespaces, so a task is keyed by the direction its owner sends in and its id.

2026-07-28 moved tasks into the ``io.modelcontextprotocol/tasks`` extension,
with other methods and shapes: ``rules/tasks_extension.py`` judges those, and
these rules keep to the handshake era.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import BoundedMap, id_key
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import C2S, ERROR, OPPOSITE, SENDER
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules.registry import NOTIFICATION, REPLY, REQUEST, TASK_CREATED, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg, Pending

RULES = (
    "TASK-CAP-REQUESTOR",
    "TASK-LIST-CANCEL-CAP",
    "TASK-TOOL-NO-CAP",
    "TASK-TOOL-FORBIDDEN",
    "TASK-TOOL-REQUIRED",
    "TASK-UNDECLARED-RECEIVER",
    "TASK-CREATE-RESULT",
    "TASK-ID",
    "TASK-FIELDS",
    "TASK-STATUS-TRANSITION",
    "TASK-RESULT-META",
    "TASK-RELATED-META",
    "TASK-CANCEL-TERMINAL",
    "TASK-CANCEL-RESULT",
    "TASK-POLL-INTERVAL",
    "TASK-FAILED-ISERROR",
    "TASK-RESULT-BLOCKS",
    "PROG-TASK-TOKEN",
)

STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})
NON_TERMINAL = STATUSES - TERMINAL
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Methods that manage tasks and must not carry the related-task _meta (§ Task Notifications 3).
TASK_METHODS = frozenset({"tasks/get", "tasks/list", "tasks/cancel", "notifications/tasks/status"})
#: The tasks/* requests this rule judges without params.task. Another tasks/*
#: method gets past the gate below only to leave at ``augmented``: a set
#: lookup, not ``method[:6]``, which builds a string for every request.
_TASK_REQUESTS = frozenset(m for m in TASK_METHODS if m.startswith("tasks/"))
#: How many tasks per session are remembered (the oldest are forgotten first).
TASK_WINDOW = 4096
#: A poll counts as too early below this share of ``pollInterval``: the times are
#: the relay's, not the sender's, so scheduling jitter must not make a finding.
POLL_TOLERANCE = 0.75
#: ``capabilities.tasks.requests`` path per task-augmentable method (§ Capabilities).
CAPABILITY_PATH = {
    "tools/call": ("tools", "call"),
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}
#: ISO 8601 date-time as the schema's Task.createdAt requires (RFC 3339 profile, lenient).
_ISO8601 = lazy(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?$"
)


@dataclass(slots=True)
class TaskInfo:
    """What is known of one task: where it came from and its last status."""

    task_id: str
    #: The direction the task's owner (the request's receiver) sends in.
    owner: str
    method: str
    #: The request that created it (its Pending, whose params name the tool).
    origin: Pending
    created_seq: int
    status: str
    status_seq: int
    poll_interval: float | None = None
    last_poll_t: float | None = None
    #: The original request's progress token, active until the task ends.
    progress_token: Any = None
    #: The tasks/result answer with ``isError: true`` that came before the task
    #: was terminal: the status that ends it is judged then (TASK-FAILED-ISERROR).
    error_result_seq: int | None = None
    #: The tasks/result answer that came while the task was not terminal: a
    #: later non-terminal status shows it did not block (TASK-RESULT-BLOCKS).
    early_result_seq: int | None = None


def is_augmented(params: dict[str, Any] | None) -> bool:
    """Whether a request's params ask for task execution (``params.task`` is an object)."""
    return params is not None and type(params.get("task")) is dict


def _tasks(session: Session) -> BoundedMap:
    state = session.state
    tasks = state.tasks
    if tasks is None:
        tasks = state.tasks = BoundedMap(TASK_WINDOW)
    return tasks


def _receiver_caps(session: Session, request_direction: str) -> dict[str, Any] | None:
    state = session.state
    return state.server_caps if request_direction == C2S else state.client_caps


def _declares(caps: dict[str, Any] | None, *path: str) -> bool | None:
    """Whether ``caps`` has ``tasks.<path>``; None when the capabilities are unknown."""
    if caps is None:
        return None
    node: Any = caps.get("tasks")
    for part in path:
        if type(node) is not dict:
            return False
        node = node.get(part)
    return type(node) is dict


# --------------------------------------------------------------------------- requests


@rule(
    "TASK-CAP-REQUESTOR",
    "TASK-LIST-CANCEL-CAP",
    "TASK-POLL-INTERVAL",
    "TASK-RELATED-META",
    "TASK-TOOL-FORBIDDEN",
    "TASK-TOOL-NO-CAP",
    "TASK-TOOL-REQUIRED",
    on=REQUEST,
)
def on_request(session: Session, msg: Msg) -> None:
    """Task augmentation and the tasks/* requests, checked against capabilities."""
    method = msg.method or ""
    params = msg.params
    # Tasks matter only for task-augmented requests, tasks/* and calls of tools
    # that declare task support: this runs for every request, so it leaves early.
    if not (
        (params is not None and "task" in params)
        or method in _TASK_REQUESTS
        or (method == "tools/call" and session.state.task_tools)
    ):
        return
    if session.state.era == STATELESS:
        return
    if method in TASK_METHODS:
        _no_related_meta(session, msg)
        if method == "tasks/get":
            _poll(session, msg)
        elif method in ("tasks/list", "tasks/cancel"):
            verb = method.split("/", 1)[1]
            caps = _receiver_caps(session, msg.direction)
            if _declares(caps, verb) is False:
                session.report(
                    "TASK-LIST-CANCEL-CAP",
                    f"{SENDER[msg.direction]} sent {method}, but the "
                    f"{SENDER[OPPOSITE[msg.direction]]} did not declare capabilities.tasks."
                    f"{verb}",
                    [msg.frame],
                    method=method,
                )
        return
    augmented = is_augmented(params)
    if method == "tools/call":
        _tool_task_support(session, msg, augmented)
    if not augmented:
        return
    caps = _receiver_caps(session, msg.direction)
    path = CAPABILITY_PATH.get(method)
    declared = None if path is None else _declares(caps, "requests", *path)
    if path is None or declared is False:
        what = "tasks.requests." + ".".join(path) if path else "task support for " + method
        rule = "TASK-TOOL-NO-CAP" if method == "tools/call" else "TASK-CAP-REQUESTOR"
        session.report(
            rule,
            f"{SENDER[msg.direction]} sent a task-augmented {method}, but the "
            f"{SENDER[OPPOSITE[msg.direction]]} did not declare capabilities.{what}",
            [msg.frame],
            method=method,
        )


def _tool_task_support(session: Session, msg: Msg, augmented: bool) -> None:
    """Tool-level negotiation (§ Tool-Level Negotiation): execution.taskSupport."""
    tools = session.state.tools
    name = (msg.params or {}).get("name")
    if tools is None or not isinstance(name, str) or name not in tools:
        return
    support = tools[name].task_support
    if augmented and support in (None, "forbidden"):
        session.report(
            "TASK-TOOL-FORBIDDEN",
            f"the client called tool {name!r} as a task, but the tool's execution.taskSupport "
            f"is {support or 'absent'} (it cannot run as a task)",
            [msg.frame],
            tool=name,
            task_support=support,
        )
    elif not augmented and support == "required":
        session.report(
            "TASK-TOOL-REQUIRED",
            f"the client called tool {name!r} without params.task, but the tool's "
            'execution.taskSupport is "required"',
            [msg.frame],
            tool=name,
        )


def _poll(session: Session, msg: Msg) -> None:
    task_id = (msg.params or {}).get("taskId")
    if not isinstance(task_id, str):
        return
    task = _tasks(session).get((OPPOSITE[msg.direction], task_id))
    if task is None:
        return
    last, interval = task.last_poll_t, task.poll_interval
    if (
        last is not None
        and interval is not None
        and task.status not in TERMINAL
        and (msg.sent_at - last) * 1000.0 < interval * POLL_TOLERANCE
    ):
        session.report(
            "TASK-POLL-INTERVAL",
            f"{SENDER[msg.direction]} polled task {task_id[:60]!r} "
            f"{(msg.sent_at - last) * 1000.0:.0f} ms after the previous poll; its "
            f"pollInterval is {interval:g} ms",
            [msg.frame],
            task_id=task_id,
            poll_interval=interval,
        )
    task.last_poll_t = msg.sent_at


def _no_related_meta(session: Session, msg: Msg) -> None:
    meta = (msg.params or {}).get("_meta")
    if type(meta) is dict and RELATED_TASK in meta:
        session.report(
            "TASK-RELATED-META",
            f"{msg.method} carries _meta[{RELATED_TASK!r}]; the task is named by its "
            "taskId parameter, and this metadata should not be added",
            [msg.frame],
            severity="warning",
        )


# --------------------------------------------------------------------------- notifications


@rule(
    "TASK-FIELDS",
    "TASK-ID",
    "TASK-RELATED-META",
    "TASK-STATUS-TRANSITION",
    on=NOTIFICATION,
    methods=("notifications/tasks/status",),
)
def on_notification(session: Session, msg: Msg) -> None:
    """``notifications/tasks/status``: a status change of the sender's task."""
    _no_related_meta(session, msg)
    params = msg.params
    if params is not None:
        _observe(session, msg, params, "notifications/tasks/status")


# --------------------------------------------------------------------------- results


@rule(
    "TASK-CANCEL-RESULT",
    "TASK-CANCEL-TERMINAL",
    "TASK-FAILED-ISERROR",
    "TASK-FIELDS",
    "TASK-ID",
    "TASK-RESULT-BLOCKS",
    "TASK-RESULT-META",
    "TASK-STATUS-TRANSITION",
    on=REPLY,
    methods=("tasks/get", "tasks/list", "tasks/cancel", "tasks/result"),
)
def on_response(session: Session, msg: Msg) -> None:
    """The replies to tasks/*: the task states they show, and tasks/result's payload."""
    request = msg.request
    if request is None or session.state.era == STATELESS:
        return
    method = request.method
    if msg.kind == ERROR:
        if method == "tasks/cancel":
            _cancel_error(session, msg, request)
        return
    result = msg.obj.get("result")
    if type(result) is not dict:
        return
    if method == "tasks/get":
        _observe(session, msg, result, method, needs_ttl=True)
    elif method == "tasks/cancel":
        task_id = (request.params or {}).get("taskId")
        known = _tasks(session).get((msg.direction, task_id)) if isinstance(task_id, str) else None
        if known is not None and known.status in TERMINAL:
            session.report(
                "TASK-CANCEL-TERMINAL",
                f"tasks/cancel of task {known.task_id[:60]!r} succeeded, but the task was "
                f"already {known.status} (seq {known.status_seq}); it must fail with -32602",
                [known.status_seq, request.seq, msg.frame],
                task_id=known.task_id,
            )
            return
        task = _observe(session, msg, result, method)
        if task is not None and result.get("status") != "cancelled":
            session.report(
                "TASK-CANCEL-RESULT",
                f"a successful tasks/cancel of task {task.task_id[:60]!r} shows status "
                f"{result.get('status')!r}, not 'cancelled'",
                [request.seq, msg.frame],
                task_id=task.task_id,
            )
    elif method == "tasks/list":
        items = result.get("tasks")
        if isinstance(items, list):
            for item in items[:1000]:
                if type(item) is dict:
                    _observe(session, msg, item, method)
    elif method == "tasks/result":
        _payload(session, msg, request, result)


@rule(
    "TASK-CREATE-RESULT",
    "TASK-FIELDS",
    "TASK-ID",
    "TASK-UNDECLARED-RECEIVER",
    on=TASK_CREATED,
)
def created(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """An accepted task-augmented request: its answer is a CreateTaskResult."""
    request = msg.request
    if request is None or session.state.era == STATELESS:
        return  # the tasks extension's (rules/tasks_extension.py)
    receiver = msg.direction
    caps = _receiver_caps(session, OPPOSITE[receiver])
    path = CAPABILITY_PATH.get(request.method)
    if path is not None and _declares(caps, "requests", *path) is False:
        session.report(
            "TASK-UNDECLARED-RECEIVER",
            f"{SENDER[receiver]} answered {request.method} with a CreateTaskResult, but it "
            f"did not declare capabilities.tasks.requests.{'.'.join(path)}; it must process "
            "the request normally",
            [request.seq, msg.frame],
            method=request.method,
        )
    task = result.get("task")
    if type(task) is not dict:
        session.report(
            "TASK-CREATE-RESULT",
            f"the CreateTaskResult for {request.method} (seq {request.seq}) has a task that "
            "is not an object",
            [request.seq, msg.frame],
        )
        return
    status = task.get("status")
    if status != "working":
        session.report(
            "TASK-CREATE-RESULT",
            f"a new task must start in status 'working', but the CreateTaskResult for "
            f"{request.method} says {status!r}",
            [request.seq, msg.frame],
            status=status,
        )
    task_id = task.get("taskId")
    if not _fields_ok(session, msg, task, "CreateTaskResult"):
        return
    tasks = _tasks(session)
    key = (receiver, task_id)
    if key in tasks:
        session.report(
            "TASK-ID",
            f"{SENDER[receiver]} created task {task_id[:60]!r} a second time (first at seq "
            f"{tasks.get(key).created_seq}); task ids must be unique",
            [tasks.get(key).created_seq, msg.frame],
            task_id=task_id,
        )
    info = TaskInfo(
        task_id,
        receiver,
        request.method,
        request,
        msg.frame,
        status if status in STATUSES else "working",
        msg.frame,
        _interval(task),
    )
    # The original progress token stays valid until the task ends (progress.mdx
    # § Behavior Requirements 3): hand it from the request to the task.
    info.progress_token = request.progress_token
    tasks.put(key, info)
    # For CANCEL-TASK (rules/utilities.py): this request is now a task.
    created = session.state.rule_state.get("task_requests")
    if created is None:
        created = session.state.rule_state["task_requests"] = BoundedMap(TASK_WINDOW)
    created.put((OPPOSITE[receiver], id_key(request.id)), task_id)


def _interval(task: dict[str, Any]) -> float | None:
    value = task.get("pollInterval")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _fields_ok(
    session: Session, msg: Msg, task: dict[str, Any], where: str, *, needs_ttl: bool = False
) -> bool:
    """TASK-ID and TASK-FIELDS on one Task object; False when it has no usable taskId."""
    task_id = task.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        session.report(
            "TASK-ID",
            f"{SENDER[msg.direction]} sent a task (in a {where}) whose taskId is "
            f"{'missing' if task_id is None else 'not a non-empty string'}",
            [msg.frame],
        )
        return False
    problems = [
        f"{name} is not an ISO 8601 date-time"
        for name in ("createdAt", "lastUpdatedAt")
        if not isinstance(task.get(name), str) or not _ISO8601.match(task[name])
    ]
    status = task.get("status")
    if status not in STATUSES:
        problems.append(f"status {str(status)[:40]!r} is not one of " + ", ".join(sorted(STATUSES)))
    ttl = task.get("ttl", ...)
    if (needs_ttl and ttl is ...) or (ttl is not ... and ttl is not None and not _is_number(ttl)):
        problems.append("ttl must be a number or null")
    if "pollInterval" in task and not _is_number(task["pollInterval"]):
        problems.append("pollInterval must be a number")
    if problems:
        session.report(
            "TASK-FIELDS",
            f"task {task_id[:60]!r} in a {where}: " + "; ".join(problems),
            [msg.frame],
            task_id=task_id,
            problems=problems,
        )
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _observe(
    session: Session, msg: Msg, task: dict[str, Any], where: str, *, needs_ttl: bool = False
) -> TaskInfo | None:
    """A status report of one task: its fields, and the edge from its last status."""
    if not _fields_ok(session, msg, task, where, needs_ttl=needs_ttl):
        return None
    info = _tasks(session).get((msg.direction, task["taskId"]))
    if info is None:
        return None
    status = task.get("status")
    interval = _interval(task)
    if interval is not None:
        info.poll_interval = interval
    early = info.early_result_seq
    if (
        status in NON_TERMINAL
        and early is not None
        and (msg.request is None or msg.request.seq > early)
    ):
        # A poll sent after the answer (its reply cannot predate it, whatever
        # stream each travelled on), or a notification that came after it.
        _did_not_block(session, info, status, msg.frame)
    if status not in STATUSES or status == info.status:
        return info
    if info.status in TERMINAL:
        session.report(
            "TASK-STATUS-TRANSITION",
            f"task {info.task_id[:60]!r} went from {info.status} (seq {info.status_seq}) to "
            f"{status} in a {where}; a terminal status never changes",
            [info.status_seq, msg.frame],
            task_id=info.task_id,
            previous=info.status,
            status=status,
        )
        return info
    info.status = status
    info.status_seq = msg.frame
    if status in TERMINAL:
        info.early_result_seq = None
        _end_progress(session, info, msg.frame)
        if status == "completed" and info.error_result_seq is not None:
            _completed_with_error(session, info, info.error_result_seq, msg.frame)
    return info


def _did_not_block(session: Session, info: TaskInfo, status: str, seq: int) -> None:
    """tasks/result answered, and the task was still running after it.

    "When a receiver receives a tasks/result request for a task in any other
    non-terminal status (working or input_required), it **MUST** block the
    response until the task reaches a terminal status" (§ Result Retrieval 3).
    """
    first = info.early_result_seq
    info.early_result_seq = None
    session.report(
        "TASK-RESULT-BLOCKS",
        f"tasks/result for task {info.task_id[:60]!r} was answered at seq {first}, but the task "
        f"was still {status} after it; tasks/result waits until the task is terminal",
        [first, seq],
        task_id=info.task_id,
    )


def _completed_with_error(session: Session, info: TaskInfo, first: int, last: int) -> None:
    """A tool task whose result has ``isError: true`` ended 'completed'.

    "For tasks that wrap tool call requests, when the tool result has isError
    set to true, the task should reach failed status" (§ Task Execution Errors).
    """
    session.report(
        "TASK-FAILED-ISERROR",
        f"tool task {info.task_id[:60]!r} ended 'completed' but its result has isError: true; "
        "a failed tool call should end the task 'failed'",
        sorted((first, last)),
        task_id=info.task_id,
    )


def _end_progress(session: Session, info: TaskInfo, seq: int) -> None:
    """A terminal task ends the progress token its request carried."""
    token = info.progress_token
    if token is None:
        return
    info.progress_token = None
    direction = OPPOSITE[info.owner]
    active = session.state.progress[direction]
    if token in active:
        del active[token]
        session.state.finished_tokens[direction].put(token, seq)
        # Progress after this is PROG-TASK-TOKEN's, not PROG-STOP's (rules/flow.py).
        ended = session.state.rule_state.get("task_tokens")
        if ended is None:
            ended = session.state.rule_state["task_tokens"] = BoundedMap(TASK_WINDOW)
        ended.put(token, info.task_id)


def _cancel_error(session: Session, msg: Msg, request: Pending) -> None:
    """tasks/cancel of a terminal task must fail with -32602 (§ Task Cancellation 1)."""
    task_id = (request.params or {}).get("taskId")
    info = _tasks(session).get((msg.direction, task_id)) if isinstance(task_id, str) else None
    if info is not None and info.status in TERMINAL and msg.error_code != -32602:
        session.report(
            "TASK-CANCEL-TERMINAL",
            f"tasks/cancel of task {task_id[:60]!r}, already {info.status}, was refused with "
            f"code {msg.error_code!r}; it must be -32602 (Invalid params)",
            [request.seq, msg.frame],
            task_id=task_id,
            code=msg.error_code,
        )


def _payload(session: Session, msg: Msg, request: Pending, result: dict[str, Any]) -> None:
    """``tasks/result``: related-task metadata, then judged as the original method's result."""
    task_id = (request.params or {}).get("taskId")
    meta = result.get("_meta")
    related = meta.get(RELATED_TASK) if type(meta) is dict else None
    if type(related) is not dict or related.get("taskId") != task_id:
        session.report(
            "TASK-RESULT-META",
            f"the tasks/result response for task {str(task_id)[:60]!r} lacks "
            f'_meta["{RELATED_TASK}"].taskId naming that task',
            [request.seq, msg.frame],
            task_id=task_id,
        )
    if not isinstance(task_id, str):
        return
    info = _tasks(session).get((msg.direction, task_id))
    if info is None:
        return
    if info.status not in TERMINAL:
        info.early_result_seq = msg.frame
    if info.method == "tools/call" and result.get("isError") is True:
        if info.status == "completed":
            _completed_with_error(session, info, info.status_seq, msg.frame)
        elif info.status not in TERMINAL:
            # The status that ends the task may come after its result (a
            # notification or a poll answered later): judge it then.
            info.error_result_seq = msg.frame
    # The payload is "exactly" what the original request would have returned.
    from mcpsniff.core.rules import methods  # local: methods imports nothing from here

    methods.check_result(session, msg, result, info.origin)
