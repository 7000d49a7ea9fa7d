"""Completion, prompts, logging, pagination, task errors and the stateless era's retries.

Registered rules (``registry.rule``); some remember what a listing showed
(``SessionState.rule_state``, bounded) to judge later requests against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import BoundedMap, id_key
from mcpsniff.core.protocol import LOG_LEVELS, PAGINATED, STATELESS
from mcpsniff.core.rules.registry import ERROR, NOTIFICATION, REQUEST, RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "COMPL-CONTEXT",
    "COMPL-REF-KNOWN",
    "PROMPT-REQUIRED-ARGS",
    "LOG-SETLEVEL-INVALID",
    "PAGE-INVALID-CURSOR",
    "TASK-ERRORS",
    "MOD-MRTR-RETRY-ID",
    "MOD-MRTR-STATE-ECHO",
    "MOD-MISSING-CLIENT-CAP",
    "CANCEL-TASK",
)

#: How many prompts (with their required arguments) a session remembers.
PROMPT_WINDOW = 4096
#: How many input_required results a session remembers for their retries.
MRTR_WINDOW = 1024
_MRTR = ("prompts/get", "resources/read", "tools/call")


def _memory(session: Session, name: str, size: int) -> BoundedMap:
    states = session.state.rule_state
    found = states.get(name)
    if found is None:
        found = states[name] = BoundedMap(size)
    return found  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- completion, prompts


@rule("COMPL-CONTEXT", on=REQUEST, methods=("completion/complete",))
def completion_context(session: Session, msg: Msg) -> None:
    """context.arguments, when given, maps argument names to string values."""
    context = (msg.params or {}).get("context")
    if context is None:
        return
    arguments = context.get("arguments") if isinstance(context, dict) else None
    ok = isinstance(context, dict) and (
        "arguments" not in context
        or (isinstance(arguments, dict) and all(isinstance(v, str) for v in arguments.values()))
    )
    if not ok:
        session.report(
            "COMPL-CONTEXT",
            "completion/complete context.arguments must map names to string values",
            [msg.frame],
        )


@rule("COMPL-REF-KNOWN", "PROMPT-REQUIRED-ARGS", on=RESULT, methods=("prompts/list",))
def remember_prompts(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Remember each listed prompt and its required arguments (for the two rules below)."""
    prompts = result.get("prompts")
    if not isinstance(prompts, list):
        return
    known = _memory(session, "prompts", PROMPT_WINDOW)
    for prompt in prompts[:PROMPT_WINDOW]:
        if not isinstance(prompt, dict) or not isinstance(prompt.get("name"), str):
            continue
        arguments = prompt.get("arguments") if isinstance(prompt.get("arguments"), list) else []
        required = [
            a["name"]
            for a in arguments[:100]
            if isinstance(a, dict) and a.get("required") is True and isinstance(a.get("name"), str)
        ]
        known.put(prompt["name"], required)


@rule("COMPL-REF-KNOWN", on=REQUEST, methods=("completion/complete",))
def completion_reference(session: Session, msg: Msg) -> None:
    """A ref/prompt names a listed prompt (heuristic: only once prompts were listed)."""
    ref = (msg.params or {}).get("ref")
    known = session.state.rule_state.get("prompts")
    if known is None or not isinstance(ref, dict) or ref.get("type") != "ref/prompt":
        return
    name = ref.get("name")
    if isinstance(name, str) and name not in known:
        session.report(
            "COMPL-REF-KNOWN",
            f"completion/complete refers to prompt {name[:80]!r}, which prompts/list did not list",
            [msg.frame],
            name=name[:200],
        )


@rule("PROMPT-REQUIRED-ARGS", on=REQUEST, methods=("prompts/get",))
def prompt_arguments(session: Session, msg: Msg) -> None:
    """prompts/get passes every argument prompts/list marked required."""
    params = msg.params or {}
    known = session.state.rule_state.get("prompts")
    name = params.get("name")
    if known is None or not isinstance(name, str) or name not in known:
        return
    given = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
    missing = [a for a in known.get(name) if a not in given]
    if missing:
        session.report(
            "PROMPT-REQUIRED-ARGS",
            f"prompts/get {name[:80]!r} leaves out required argument(s) " + ", ".join(missing[:10]),
            [msg.frame],
            missing=missing[:20],
            severity="info",  # the [C] part of the rule is a heuristic
        )


# --------------------------------------------------------------------------- logging, pagination


@rule("LOG-SETLEVEL-INVALID", on=RESULT, methods=("logging/setLevel",))
def set_level_accepted(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """An invalid level is answered with -32602, not accepted."""
    _set_level_reply(session, msg, None)


@rule("LOG-SETLEVEL-INVALID", on=ERROR, methods=("logging/setLevel",))
def set_level_refused(session: Session, msg: Msg) -> None:
    """An invalid level is refused with -32602 Invalid params."""
    _set_level_reply(session, msg, msg.error_code)


def _set_level_reply(session: Session, msg: Msg, code: Any) -> None:
    request = msg.request
    level = ((request.params if request is not None else None) or {}).get("level")
    if (isinstance(level, str) and level in LOG_LEVELS) or code == -32602:
        return
    answer = "accepted it" if code is None else f"answered {code}"
    session.report(
        "LOG-SETLEVEL-INVALID",
        f"logging/setLevel asked for the invalid level {str(level)[:40]!r} and the server "
        f"{answer}; it should answer -32602",
        [msg.frame],
        code=code,
    )


def _cursor_issued(session: Session, msg: Msg) -> tuple[bool, Any]:
    request = msg.request
    params = (request.params if request is not None else None) or {}
    if "cursor" not in params or request is None:
        return True, None
    cursor = params["cursor"]
    issued = session.state.cursors.get(request.method)
    return (issued is not None and isinstance(cursor, str) and cursor in issued), cursor


@rule("PAGE-INVALID-CURSOR", on=RESULT, methods=tuple(PAGINATED))
def invalid_cursor_accepted(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A cursor the server never issued is answered -32602, not with a page."""
    issued, cursor = _cursor_issued(session, msg)
    if not issued:
        session.report(
            "PAGE-INVALID-CURSOR",
            f"the server answered a page for cursor {str(cursor)[:40]!r}, which it never "
            "issued; an invalid cursor should get -32602",
            [msg.frame],
            severity="warning",
        )


@rule("PAGE-INVALID-CURSOR", on=ERROR, methods=tuple(PAGINATED))
def invalid_cursor_refused(session: Session, msg: Msg) -> None:
    """A refused unknown cursor gets -32602 Invalid params."""
    issued, cursor = _cursor_issued(session, msg)
    if not issued and msg.error_code != -32602:
        session.report(
            "PAGE-INVALID-CURSOR",
            f"the server refused cursor {str(cursor)[:40]!r} with {msg.error_code}; an invalid "
            "cursor should get -32602",
            [msg.frame],
            code=msg.error_code,
        )


# --------------------------------------------------------------------------- tasks


@rule("TASK-ERRORS", on=ERROR, methods=("tasks/get", "tasks/result", "tasks/cancel", "tasks/list"))
def task_errors(session: Session, msg: Msg) -> None:
    """tasks/* errors: -32602 for an unknown task or cursor, -32603 for internal errors."""
    code = msg.error_code
    if code in (-32602, -32603):
        return
    request = msg.request
    if request is not None and request.method == "tasks/result":
        # tasks/result returns the underlying request's own error unchanged (§ Result Retrieval).
        tasks = session.state.tasks
        task_id = (request.params or {}).get("taskId")
        if tasks is not None and (msg.direction, task_id) in tasks:
            return
    session.report(
        "TASK-ERRORS",
        f"{request.method if request else 'a tasks'} request was refused with {code}; task "
        "errors are -32602 (unknown task or cursor) or -32603 (internal)",
        [msg.frame],
        code=code,
    )


# --------------------------------------------------------------------------- stateless retries


@rule("MOD-MRTR-RETRY-ID", "MOD-MRTR-STATE-ECHO", on=RESULT, methods=_MRTR, modern=True)
def remember_input_required(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """An input_required answer: its retry comes later under a new id, echoing requestState."""
    request = msg.request
    if request is None or result.get("resultType") != "input_required":
        return
    target = (request.params or {}).get("name") or (request.params or {}).get("uri")
    _memory(session, "mrtr", MRTR_WINDOW).put(
        (request.method, str(target)), (id_key(request.id), result.get("requestState"))
    )


@rule("MOD-MRTR-RETRY-ID", "MOD-MRTR-STATE-ECHO", on=REQUEST, methods=_MRTR, modern=True)
def retry(session: Session, msg: Msg) -> None:
    """The retry uses a new id and echoes requestState exactly (or sends none if none came)."""
    params = msg.params or {}
    if session.state.era != STATELESS or not ({"inputResponses", "requestState"} & params.keys()):
        return
    pending = session.state.rule_state.get("mrtr")
    target = params.get("name") or params.get("uri")
    # A retry answers its input_required once: the next request of the same
    # method and target that carries inputResponses is another call (on a
    # stateless server, maybe another client's), not this retry again.
    entry = pending.pop((msg.method, str(target)), None) if pending is not None else None
    if entry is None:
        return
    original_id, state = entry
    if id_key(msg.id) == original_id:
        session.report(
            "MOD-MRTR-RETRY-ID",
            f"the client retried {msg.method} with the id of the request that got "
            "input_required; the retry must use a new id",
            [msg.frame],
        )
    sent = params.get("requestState", None)
    if sent != state:
        session.report(
            "MOD-MRTR-STATE-ECHO",
            "the retry's requestState is not the one the server returned"
            + (" (the server returned none)" if state is None else ""),
            [msg.frame],
        )


@rule("MOD-MISSING-CLIENT-CAP", on=ERROR)
def missing_client_capability(session: Session, msg: Msg) -> None:
    """-32021 (missing client capability) names them in data.requiredCapabilities."""
    if session.state.era != STATELESS or msg.error_code != -32021:
        return
    error = msg.obj.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    if not (isinstance(data, dict) and isinstance(data.get("requiredCapabilities"), dict)):
        session.report(
            "MOD-MISSING-CLIENT-CAP",
            "error -32021 (missing client capability) must say which in data.requiredCapabilities",
            [msg.frame],
        )


@rule("CANCEL-TASK", on=NOTIFICATION, methods=("notifications/cancelled",))
def cancel_task(session: Session, msg: Msg) -> None:
    """A task-augmented request is cancelled with tasks/cancel, not notifications/cancelled."""
    params = msg.params or {}
    if "requestId" not in params:
        return
    created = session.state.rule_state.get("task_requests")
    request_id = params["requestId"]
    if created is None or isinstance(request_id, dict | list):
        return
    task_id = created.get((msg.direction, id_key(request_id)))
    if task_id is not None:
        session.report(
            "CANCEL-TASK",
            f"the request {request_id!r} runs as task {str(task_id)[:60]!r}; cancel it with "
            "tasks/cancel (requestId must not be used for cancelling tasks)",
            [msg.frame],
            task_id=task_id,
        )
