"""Per-method rules: tools, resources, prompts, logging, completion, pagination,
ping, roots, sampling and elicitation.

Requests are checked when they are sent; results are checked against the
method of the request they answer, so the check knows what shape to expect
(catalogue §12, "Result types").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.jsontypes import is_base64, json_type
from mcpsniff.core.model import SENDER
from mcpsniff.core.protocol import (
    LOG_LEVEL_ORDER,
    LOG_LEVELS,
    PAGINATED,
    STATELESS,
    V3,
    V4,
    version_at_least,
)
from mcpsniff.core.redact import redaction_explains
from mcpsniff.core.rules import registry, repeats
from mcpsniff.core.rules.registry import NOTIFICATION, REQUEST, RESULT, rule
from mcpsniff.core.schemas import CompiledSchema, compile_schema
from mcpsniff.core.state import ToolInfo

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

#: A result rule: (session, msg, result).
ResultCheck = Callable[["Session", "Msg", dict[str, Any]], None]

RULES = (
    "TOOL-LIST-SHAPE",
    "TOOL-NAME-UNIQUE",
    "TOOL-NAME-FORMAT",
    "TOOL-INPUTSCHEMA-VALID",
    "TOOL-CALL-KNOWN",
    "TOOL-CALL-ARGS-OBJECT",
    "TOOL-ARGS-SCHEMA",
    "TOOL-RESULT-SHAPE",
    "TOOL-OUTPUT-CONFORMS",
    "TOOL-STRUCTURED-TYPE",
    "RES-LIST-SHAPE",
    "RES-READ-SHAPE",
    "RES-BLOB-BASE64",
    "RES-TEMPLATE-SHAPE",
    "RES-SUB-RESULT",
    "PROMPT-LIST-SHAPE",
    "PROMPT-GET-ARGS",
    "PROMPT-MESSAGES",
    "LOG-LEVEL-ENUM",
    "LOG-MESSAGE-PARAMS",
    "LOG-SETLEVEL-RESULT",
    "LOG-FILTER",
    "COMPL-MAX-100",
    "COMPL-RESULT-SHAPE",
    "COMPL-REF",
    "PAGE-SHAPE",
    "PAGE-CURSOR-OPAQUE",
    "PAGE-CURSOR-SESSION",
    "PING-EMPTY-RESULT",
    "PING-NO-PARAMS",
    "ROOTS-FILE-URI",
    "ROOTS-RESULT-SHAPE",
    "SAMP-REQ-SHAPE",
    "SAMP-RESULT-SHAPE",
    "ELIC-RESULT-ACTION",
)

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
#: Content block types per version (schema ContentBlock; catalogue TOOL-RESULT-SHAPE).
_BLOCK_TYPES = {
    None: {"text", "image", "audio", "resource", "resource_link"},
    "2024-11-05": {"text", "image", "resource"},
    "2025-03-26": {"text", "image", "audio", "resource"},
}
_DEFAULT_BLOCKS = {"text", "image", "audio", "resource", "resource_link"}
#: How many issued cursors are remembered per list method.
CURSOR_WINDOW = 4096


# --------------------------------------------------------------------------- requests


def _result_rule(*ids: str, methods: tuple[str, ...]) -> Callable[[ResultCheck], ResultCheck]:
    """Register a result check that an ``input_required`` result skips.

    In 2026-07-28 a result with ``resultType: "input_required"`` asks the
    client for input instead of answering (MRTR): it is not the method's
    result yet, so the method's shape rules do not apply to it.
    """

    def register(fn: ResultCheck) -> ResultCheck:
        @functools.wraps(fn)
        def check(session: Session, msg: Msg, result: dict[str, Any]) -> None:
            if session.state.era == STATELESS and result.get("resultType") == "input_required":
                return
            fn(session, msg, result)

        # A legacy session (handshake era) never has the stateless era's
        # input_required results: its tables hold ``fn`` itself.
        rule(*ids, on=RESULT, methods=methods, legacy_fn=fn)(check)
        return fn

    return register


@rule(
    "TOOL-ARGS-SCHEMA",
    "TOOL-CALL-ARGS-OBJECT",
    "TOOL-CALL-KNOWN",
    on=REQUEST,
    methods=("tools/call",),
)
def _tools_call(session: Session, msg: Msg) -> None:
    params = msg.params
    if params is None:
        return
    name = params.get("name")
    arguments = params.get("arguments")
    if "arguments" in params and not isinstance(arguments, dict):
        session.report(
            "TOOL-CALL-ARGS-OBJECT",
            f"the client called tool {name!r} with arguments that are not an object",
            [msg.frame],
            tool=name,
        )
        return
    tools = session.state.tools
    if tools is None or not isinstance(name, str):
        return
    tool = tools.get(name)
    if tool is None:
        session.report(
            "TOOL-CALL-KNOWN",
            f"the client called tool {name!r}, which is not in the latest tools/list result",
            [msg.frame],
            tool=name,
            known=sorted(tools)[:20],
        )
        return
    compiled = tool.input_compiled
    if compiled is None:
        compiled = _compiled(tool, "input")
    instance = arguments if arguments is not None else {}
    simple = compiled.simple
    if simple is not None and compiled.reference is not None and simple(instance):
        return  # ``first_error``'s first verdict, asked directly: the usual call
    error = compiled.error_beyond_simple(instance)
    if error is not None and not redaction_explains(msg.source, arguments):
        session.report(
            "TOOL-ARGS-SCHEMA",
            f"the arguments of tool {name!r} do not match its inputSchema: {error}",
            [msg.frame],
            tool=name,
            error=error,
        )


@rule("PROMPT-GET-ARGS", on=REQUEST, methods=("prompts/get",))
def _prompts_get(session: Session, msg: Msg) -> None:
    arguments = (msg.params or {}).get("arguments")
    if isinstance(arguments, dict):
        bad = [k for k, v in arguments.items() if not isinstance(v, str)]
        if bad:
            session.report(
                "PROMPT-GET-ARGS",
                "prompts/get argument values must be strings; not: " + ", ".join(bad[:5]),
                [msg.frame],
                arguments=bad,
            )


@rule("LOG-LEVEL-ENUM", on=REQUEST, methods=("logging/setLevel",))
def _set_level(session: Session, msg: Msg) -> None:
    level = (msg.params or {}).get("level")
    if not isinstance(level, str) or level not in LOG_LEVELS:
        session.report(
            "LOG-LEVEL-ENUM",
            f"logging/setLevel asks for level {level!r}, which is not a syslog level name",
            [msg.frame],
            level=level,
        )
    else:
        session.state.log_level = level


@rule("COMPL-REF", on=REQUEST, methods=("completion/complete",))
def _complete(session: Session, msg: Msg) -> None:
    params = msg.params or {}
    ref = params.get("ref")
    argument = params.get("argument")
    ok = isinstance(ref, dict) and (
        (ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str))
        or (ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str))
    )
    ok = ok and isinstance(argument, dict)
    ok = ok and isinstance(argument.get("name"), str) and isinstance(argument.get("value"), str)
    if not ok:
        session.report(
            "COMPL-REF",
            "completion/complete needs ref {type: ref/prompt + name | ref/resource + uri} and "
            "argument {name, value} strings",
            [msg.frame],
        )


@rule("PING-NO-PARAMS", on=REQUEST, methods=("ping",))
def _ping(session: Session, msg: Msg) -> None:
    params = msg.params
    if params and set(params) - {"_meta"}:
        session.report(
            "PING-NO-PARAMS",
            f"{SENDER[msg.direction]} sent ping with parameters; ping has none",
            [msg.frame],
        )


@rule("SAMP-REQ-SHAPE", on=REQUEST, methods=("sampling/createMessage",))
def _create_message(session: Session, msg: Msg) -> None:
    params = msg.params or {}
    messages = params.get("messages")
    max_tokens = params.get("maxTokens")
    ok = isinstance(messages, list) and all(
        isinstance(m, dict) and m.get("role") in ("user", "assistant") and "content" in m
        for m in messages
    )
    if not ok or isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        session.report(
            "SAMP-REQ-SHAPE",
            "sampling/createMessage needs messages [{role: user|assistant, content}] and an "
            "integer maxTokens",
            [msg.frame],
        )


@rule("PAGE-SHAPE", "PAGE-CURSOR-OPAQUE", "PAGE-CURSOR-SESSION", on=REQUEST, methods=PAGINATED)
def _cursor_sent(session: Session, msg: Msg) -> None:
    if msg.params is None or "cursor" not in msg.params:
        return
    method = msg.method or ""
    cursor = msg.params.get("cursor")
    if not isinstance(cursor, str):
        session.report(
            "PAGE-SHAPE", f"{method} sent a cursor that is not a string", [msg.frame], method=method
        )
        return
    issued = session.state.cursors.get(method)
    if issued is None or cursor not in issued:
        elsewhere = session.shared.get("cursors")
        owner = elsewhere.get((method, cursor)) if elsewhere is not None else None
        if owner is not None and owner != session.key:
            # pagination.mdx: "Don't persist cursors across sessions".
            session.report(
                "PAGE-CURSOR-SESSION",
                f"the client sent a {method} cursor that the server issued in another session "
                f"({str(owner)[:40]}); cursors are valid only in the session that issued them",
                [msg.frame],
                method=method,
            )
            return
        session.report(
            "PAGE-CURSOR-OPAQUE",
            f"the client sent {method} cursor {cursor[:40]!r}, which the server never returned "
            "as nextCursor for that method; cursors are opaque and must be passed back as is",
            [msg.frame],
            method=method,
        )


# --------------------------------------------------------------------------- notifications


@rule(
    "LOG-LEVEL-ENUM",
    "LOG-FILTER",
    "LOG-MESSAGE-PARAMS",
    on=NOTIFICATION,
    methods=("notifications/message",),
)
def _log_message(session: Session, msg: Msg) -> None:
    """A log message: its level, the level the client asked for, its params."""
    params = msg.params or {}
    level = params.get("level")
    if not isinstance(level, str) or level not in LOG_LEVELS:
        session.report(
            "LOG-LEVEL-ENUM",
            f"a log message has level {level!r}, which is not a syslog level name",
            [msg.frame],
            level=level,
        )
    elif session.state.log_level is not None and (
        LOG_LEVEL_ORDER[level] < LOG_LEVEL_ORDER[session.state.log_level]
    ):
        session.report(
            "LOG-FILTER",
            f"the server sent a {level} log message after the client asked for "
            f"{session.state.log_level} and above",
            [msg.frame],
            level=level,
        )
    if "data" not in params or ("logger" in params and not isinstance(params["logger"], str)):
        session.report(
            "LOG-MESSAGE-PARAMS",
            "notifications/message needs params.level and params.data (logger, if given, "
            "is a string)",
            [msg.frame],
        )


# --------------------------------------------------------------------------- results


@_result_rule("PAGE-SHAPE", methods=tuple(sorted(PAGINATED)))
def _next_cursor(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """A list result's nextCursor: a string, remembered to judge the cursors sent back."""
    request = msg.request
    if request is not None and "nextCursor" in result:
        cursor = result["nextCursor"]
        if not isinstance(cursor, str):
            session.report(
                "PAGE-SHAPE",
                f"the {request.method} result has a nextCursor that is not a string",
                [msg.frame],
            )
        else:
            session.state.cursors.setdefault(request.method, BoundedMap(CURSOR_WINDOW)).put(
                cursor, msg.frame
            )
            # Which session issued it, capture-wide (PAGE-CURSOR-SESSION).
            shared = session.shared.get("cursors")
            if shared is None:
                shared = session.shared["cursors"] = BoundedMap(CURSOR_WINDOW)
            shared.put((request.method, cursor), session.key)


def check_result(session: Session, msg: Msg, result: dict[str, Any], origin: Any) -> None:
    """Judge ``result`` as the answer to ``origin`` (a ``Pending``), not to ``msg.request``.

    ``tasks/result`` returns "exactly" what the task's original request would
    have returned (tasks.mdx § Result Retrieval), so it gets that method's checks.
    """
    answered = msg.request
    msg.request = origin
    try:
        for handler in registry.handlers(registry.RESULT, origin.method):
            handler(session, msg, result)
    finally:
        msg.request = answered


def _empty_result(rule: str, method: str) -> Callable[[Session, Msg, dict[str, Any]], None]:
    def check(session: Session, msg: Msg, result: dict[str, Any]) -> None:
        extra = set(result) - {"_meta", "resultType"}
        if extra:
            session.report(
                rule,
                f"the {method} result must be empty, but has " + ", ".join(sorted(extra)[:5]),
                [msg.frame],
                keys=sorted(extra)[:10],
            )

    return check


@_result_rule(
    "TOOL-INPUTSCHEMA-VALID",
    "TOOL-LIST-SHAPE",
    "TOOL-NAME-FORMAT",
    "TOOL-NAME-UNIQUE",
    methods=("tools/list",),
)
def _tools_list(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    state = session.state
    tools = result.get("tools")
    if not isinstance(tools, list):
        session.report("TOOL-LIST-SHAPE", "the tools/list result has no tools array", [msg.frame])
        return
    params = msg.request.params if msg.request is not None else None
    first_page = not (params and "cursor" in params)
    collected = [] if first_page or state.tools_partial is None else state.tools_partial
    collected.extend(tools)
    if isinstance(result.get("nextCursor"), str):
        state.tools_partial = collected
        return
    state.tools_partial = None
    version = state.version
    # Servers send the same tool list again and again. When this one is byte
    # for byte the previous one (under the same version) and that raised no
    # finding, nothing below can come out differently: keep the tools as they
    # are, with their compiled schemas. Bytes tell true, 1 and 1.0 apart,
    # which == would not (and which JSON Schema's const and enum do). A whole
    # list in one result is known by the result's key (rules/repeats.py: the
    # reply's own bytes, nothing serialized), pages by orjson's bytes of them
    # all: an array's, never equal to a result's key (an object's, or a tuple).
    key = repeats.listing_key(session, msg, result) if first_page else None
    if key is not None:
        fingerprint: tuple[str | None, bytes | tuple[bytes]] | None = (version, key)
    else:
        try:
            fingerprint = (version, orjson.dumps(collected))
        except (TypeError, orjson.JSONEncodeError):  # integers beyond 64 bits
            fingerprint = None
    if fingerprint is not None and state.tools is not None and fingerprint == state.tools_seen:
        return
    reported = session.emitted
    known: dict[str, ToolInfo] = {}
    for i, tool in enumerate(collected):
        name = tool.get("name") if isinstance(tool, dict) else None
        schema = tool.get("inputSchema") if isinstance(tool, dict) else None
        if (
            not isinstance(name, str)
            or not isinstance(schema, dict)
            or (schema.get("type") != "object")
        ):
            session.report(
                "TOOL-LIST-SHAPE",
                f"tool #{i} ({name!r}) needs a string name and an inputSchema object with "
                '"type": "object"',
                [msg.frame],
                tool=name,
            )
            if not isinstance(name, str):
                continue
        if name in known:
            session.report(
                "TOOL-NAME-UNIQUE",
                f"tool name {name!r} appears more than once in tools/list",
                [msg.frame],
                tool=name,
            )
        elif version_at_least(version, V4) and not _TOOL_NAME.match(name):
            session.report(
                "TOOL-NAME-FORMAT",
                f"tool name {name!r} should be 1-128 characters of A-Z a-z 0-9 _ . -",
                [msg.frame],
                tool=name,
            )
        output = tool.get("outputSchema") if isinstance(tool, dict) else None
        info = ToolInfo(name, schema, output, task_support=_task_support(tool))
        known[name] = info
        if version_at_least(version, V4) and isinstance(schema, dict):
            compiled = _compiled(info, "input")
            if compiled.error is not None:
                session.report(
                    "TOOL-INPUTSCHEMA-VALID",
                    f"the inputSchema of tool {name!r} is not a valid JSON Schema: "
                    f"{compiled.error}",
                    [msg.frame],
                    tool=name,
                )
    state.tools = known
    state.task_tools = any(info.task_support is not None for info in known.values())
    state.tools_seen = fingerprint if session.emitted == reported else None


@rule(
    "TOOL-OUTPUT-CONFORMS",
    "TOOL-RESULT-SHAPE",
    "TOOL-STRUCTURED-TYPE",
    on=RESULT,
    methods=("tools/call",),
)
def _tools_call_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    state = session.state
    # ``_result_rule``'s test, inlined for the busiest result: an input_required
    # answer (2026-07-28 MRTR) is not the tool's result yet.
    if state.era == STATELESS and result.get("resultType") == "input_required":
        return
    version = state.version
    content = result.get("content")
    allowed = _BLOCK_TYPES.get(version, _DEFAULT_BLOCKS)
    problems = []
    blocks_ok = False
    if type(content) is list:
        # Every block an object of an allowed type (the usual result): nothing to
        # report; only a result that fails this pays for the list of bad types.
        for block in content:
            if type(block) is not dict:
                break
            kind = block.get("type")
            if type(kind) is not str or kind not in allowed:
                break
        else:
            blocks_ok = True
    if blocks_ok:
        pass
    elif not isinstance(content, list):
        problems.append("content must be an array")
    else:
        bad = sorted(
            {
                str(block.get("type")) if isinstance(block, dict) else json_type(block)
                for block in content
                if not isinstance(block, dict)
                or not isinstance(block.get("type"), str)
                or block.get("type") not in allowed
            }
        )
        if bad:
            problems.append("unknown content block type(s) " + ", ".join(bad))
    if "isError" in result and not isinstance(result["isError"], bool):
        problems.append("isError must be a boolean")
    request = msg.request
    name = (request.params or {}).get("name") if request is not None else None
    if problems:
        session.report(
            "TOOL-RESULT-SHAPE",
            f"the result of tool {name!r}: " + "; ".join(problems),
            [msg.frame],
            tool=name,
        )
    has_structured = "structuredContent" in result
    if (
        has_structured
        # version_at_least(version, V3), without the call (every structured result).
        and version is not None
        and version >= V3
        and version != "2026-07-28"
        and not isinstance(result["structuredContent"], dict)
    ):
        session.report(
            "TOOL-STRUCTURED-TYPE",
            f"tool {name!r} returned structuredContent that is not an object",
            [msg.frame],
            tool=name,
        )
    tools = state.tools
    # Trap 2: outputSchema conformance is only defined for non-error results.
    if result.get("isError") is True or tools is None or not isinstance(name, str):
        return
    tool = tools.get(name)
    if tool is None or not isinstance(tool.output_schema, dict):
        return
    if not has_structured:
        session.report(
            "TOOL-OUTPUT-CONFORMS",
            f"tool {name!r} declares an outputSchema but its result has no structuredContent",
            [msg.frame],
            tool=name,
        )
        return
    structured = result["structuredContent"]
    compiled = tool.output_compiled
    if compiled is None:
        compiled = _compiled(tool, "output")
    error = compiled.first_error(structured)
    if error is not None and not redaction_explains(msg.source, structured):
        session.report(
            "TOOL-OUTPUT-CONFORMS",
            f"the structuredContent of tool {name!r} does not match its outputSchema: {error}",
            [msg.frame],
            tool=name,
            error=error,
        )


def _task_support(tool: Any) -> str | None:
    """A listed tool's ``execution.taskSupport`` when it is a string (2025-11-25)."""
    execution = tool.get("execution") if isinstance(tool, dict) else None
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if isinstance(support, str) else None


def _named_entries(rule_id: str, method: str, key: str, locator: str) -> ResultCheck:
    """A list result check: every entry of ``result[key]`` has a string ``locator`` and name."""
    message = f"every {method} entry needs a string {locator} and name"

    def check(session: Session, msg: Msg, result: dict[str, Any]) -> None:
        # The verdict is the result's alone: a listing sent again byte for byte
        # after one without a finding has none either (rules/repeats.py).
        if repeats.clean_before(session, msg, result, rule_id):
            return
        items = result.get(key)
        if not isinstance(items, list):
            session.report(rule_id, message, [msg.frame])
            return
        # A plain loop, not all() over a generator: a listing has tens of
        # entries, and resuming the generator for each costs more than the test.
        for entry in items:
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get(locator), str)
                and isinstance(entry.get("name"), str)
            ):
                session.report(rule_id, message, [msg.frame])
                return
        repeats.judged_clean(session, msg, result, rule_id)

    return check


for _method, _rule_id, _key, _locator in (
    ("resources/list", "RES-LIST-SHAPE", "resources", "uri"),
    ("resources/templates/list", "RES-TEMPLATE-SHAPE", "resourceTemplates", "uriTemplate"),
):
    _result_rule(_rule_id, methods=(_method,))(_named_entries(_rule_id, _method, _key, _locator))


@_result_rule("RES-BLOB-BASE64", "RES-READ-SHAPE", methods=("resources/read",))
def _resources_read(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    contents = result.get("contents")
    if not isinstance(contents, list):
        session.report(
            "RES-READ-SHAPE", "resources/read result needs a contents array", [msg.frame]
        )
        return
    for i, item in enumerate(contents):
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            session.report(
                "RES-READ-SHAPE", f"resources/read contents[{i}] needs a string uri", [msg.frame]
            )
            continue
        has_text = isinstance(item.get("text"), str)
        has_blob = isinstance(item.get("blob"), str)
        if has_text == has_blob:
            session.report(
                "RES-READ-SHAPE",
                f"resources/read contents[{i}] must have exactly one of text or blob",
                [msg.frame],
            )
        elif has_blob and not is_base64(item["blob"]):
            session.report(
                "RES-BLOB-BASE64",
                f"resources/read contents[{i}].blob is not valid base64",
                [msg.frame],
                uri=item["uri"],
            )


@_result_rule("PROMPT-LIST-SHAPE", methods=("prompts/list",))
def _prompts_list(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    items = result.get("prompts")
    ok = isinstance(items, list) and all(
        isinstance(p, dict)
        and isinstance(p.get("name"), str)
        and isinstance(p.get("arguments", []), list)
        for p in items
    )
    if not ok:
        session.report(
            "PROMPT-LIST-SHAPE",
            "every prompts/list entry needs a string name (and arguments, if any, as an array)",
            [msg.frame],
        )


@_result_rule("PROMPT-MESSAGES", methods=("prompts/get",))
def _prompts_get_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    messages = result.get("messages")
    ok = isinstance(messages, list) and all(
        isinstance(m, dict)
        and m.get("role") in ("user", "assistant")
        and isinstance(m.get("content"), dict)
        for m in messages
    )
    if not ok:
        session.report(
            "PROMPT-MESSAGES",
            "prompts/get messages need role user|assistant and a single content block",
            [msg.frame],
        )


@_result_rule("COMPL-MAX-100", "COMPL-RESULT-SHAPE", methods=("completion/complete",))
def _complete_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    completion = result.get("completion")
    values = completion.get("values") if isinstance(completion, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        session.report(
            "COMPL-RESULT-SHAPE",
            "completion/complete result needs completion.values as an array of strings",
            [msg.frame],
        )
        return
    if len(values) > 100:
        session.report(
            "COMPL-MAX-100",
            f"completion/complete returned {len(values)} values; the maximum is 100",
            [msg.frame],
            count=len(values),
        )


@_result_rule("ROOTS-FILE-URI", "ROOTS-RESULT-SHAPE", methods=("roots/list",))
def _roots_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    roots = result.get("roots")
    if not isinstance(roots, list) or not all(
        isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots
    ):
        session.report(
            "ROOTS-RESULT-SHAPE", "roots/list result needs roots [{uri, name?}]", [msg.frame]
        )
        return
    for root in roots:
        if not root["uri"].startswith("file://"):
            session.report(
                "ROOTS-FILE-URI",
                f"root {root['uri']!r} is not a file:// URI",
                [msg.frame],
                uri=root["uri"],
            )


@_result_rule("SAMP-RESULT-SHAPE", methods=("sampling/createMessage",))
def _sampling_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    if not (
        result.get("role") in ("user", "assistant")
        and "content" in result
        and isinstance(result.get("model"), str)
    ):
        session.report(
            "SAMP-RESULT-SHAPE",
            "sampling/createMessage result needs role, content and a string model",
            [msg.frame],
        )


@_result_rule("ELIC-RESULT-ACTION", methods=("elicitation/create",))
def _elicit_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    if result.get("action") not in ("accept", "decline", "cancel"):
        session.report(
            "ELIC-RESULT-ACTION",
            f"elicitation result action {result.get('action')!r} is not accept, decline or cancel",
            [msg.frame],
        )


for _method, _rule_id in (
    ("ping", "PING-EMPTY-RESULT"),
    ("logging/setLevel", "LOG-SETLEVEL-RESULT"),
    ("resources/subscribe", "RES-SUB-RESULT"),
    ("resources/unsubscribe", "RES-SUB-RESULT"),
):
    _result_rule(_rule_id, methods=(_method,))(_empty_result(_rule_id, _method))


# --------------------------------------------------------------------------- helpers


def _compiled(tool: ToolInfo, which: str) -> CompiledSchema:
    """The tool's input or output schema, compiled once (schemas.py caches by content)."""
    if which == "input":
        if tool.input_compiled is None:
            tool.input_compiled = compile_schema(tool.input_schema)
        return tool.input_compiled  # type: ignore[no-any-return]
    if tool.output_compiled is None:
        tool.output_compiled = compile_schema(tool.output_schema)
    return tool.output_compiled  # type: ignore[no-any-return]
