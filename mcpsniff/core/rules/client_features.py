"""Sampling and elicitation: what a server may ask of a client, and how it may ask.

``S/<v>/client/sampling.mdx`` and ``client/elicitation.mdx``. Each function is
one registered rule (``registry.rule``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import C2S
from mcpsniff.core.model import ERROR as ERROR_KIND
from mcpsniff.core.rules.registry import ERROR, NOTIFICATION, REPLY, REQUEST, RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "CAP-SAMPLING-TOOLS",
    "CAP-SAMPLING-CONTEXT",
    "SAMP-PRIORITIES",
    "SAMP-TOOLCHOICE",
    "SAMP-TOOLRESULT-ONLY",
    "SAMP-TOOL-BALANCE",
    "SAMP-ERRORS",
    "CAP-ELICIT-MODE",
    "ELIC-MODE-FIELDS",
    "ELIC-SCHEMA-FLAT",
    "ELIC-FORM-NO-LINKS",
    "ELIC-URL-SAFE",
    "ELIC-COMPLETE-NOTIF",
    "ELIC-CONTENT-SCHEMA",
    "ELIC-URL-REQUIRED-ERR",
)

SAMPLE = ("sampling/createMessage",)
ELICIT = ("elicitation/create",)
_PRIMITIVES = {"string", "number", "integer", "boolean"}
_LINK = lazy(r"https?://", re.IGNORECASE)
#: URL query keys that put a credential or a session in the URL (ELIC-URL-SAFE heuristic).
_SECRET_KEYS = {"token", "access_token", "id_token", "password", "passwd", "session", "api_key"}
#: URL-mode elicitation ids remembered per session (ELIC-COMPLETE-NOTIF).
ELICITATION_WINDOW = 4096
#: Sampling requests the client should refuse with -32602: request seq -> why (SAMP-ERRORS).
_INVALID_SAMPLING = "invalid_sampling"
#: Hosts where a plain-http elicitation URL is local development, not a leak.
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def _caps(session: Session) -> dict[str, Any]:
    return session.state.client_caps or {}


def _params(msg: Msg) -> dict[str, Any]:
    return msg.params or {}


# --------------------------------------------------------------------------- sampling


@rule("CAP-SAMPLING-TOOLS", on=REQUEST, methods=SAMPLE)
def sampling_tools_capability(session: Session, msg: Msg) -> None:
    """tools/toolChoice in a sampling request need the client's sampling.tools capability."""
    params = _params(msg)
    if session.state.client_caps is None or not ({"tools", "toolChoice"} & params.keys()):
        return
    sampling = _caps(session).get("sampling")
    if not (isinstance(sampling, dict) and isinstance(sampling.get("tools"), dict)):
        session.report(
            "CAP-SAMPLING-TOOLS",
            "the server sent sampling/createMessage with tools, but the client did not declare "
            "sampling.tools",
            [msg.frame],
        )


@rule("CAP-SAMPLING-CONTEXT", on=REQUEST, methods=SAMPLE)
def sampling_context_capability(session: Session, msg: Msg) -> None:
    """includeContext thisServer/allServers needs sampling.context (soft-deprecated)."""
    include = _params(msg).get("includeContext")
    if session.state.client_caps is None or include not in ("thisServer", "allServers"):
        return
    sampling = _caps(session).get("sampling")
    if not (isinstance(sampling, dict) and isinstance(sampling.get("context"), dict)):
        session.report(
            "CAP-SAMPLING-CONTEXT",
            f"the server asked for includeContext {include!r}, but the client did not declare "
            "sampling.context",
            [msg.frame],
            include=include,
        )


@rule("SAMP-PRIORITIES", on=REQUEST, methods=SAMPLE)
def priorities(session: Session, msg: Msg) -> None:
    """modelPreferences priorities are numbers from 0 to 1."""
    prefs = _params(msg).get("modelPreferences")
    if not isinstance(prefs, dict):
        return
    for name in ("costPriority", "speedPriority", "intelligencePriority"):
        value = prefs.get(name)
        if name in prefs and not (
            isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
        ):
            session.report(
                "SAMP-PRIORITIES",
                f"modelPreferences.{name} is {value!r}; priorities are numbers from 0 to 1",
                [msg.frame],
                field=name,
            )
            return


@rule("SAMP-TOOLCHOICE", on=REQUEST, methods=SAMPLE)
def tool_choice(session: Session, msg: Msg) -> None:
    """toolChoice.mode is auto, required or none."""
    choice = _params(msg).get("toolChoice")
    if choice is None:
        return
    mode = choice.get("mode", "auto") if isinstance(choice, dict) else None
    if mode not in ("auto", "required", "none"):
        session.report(
            "SAMP-TOOLCHOICE",
            f"toolChoice.mode is {mode!r}; it must be auto, required or none",
            [msg.frame],
        )


@rule("SAMP-TOOLCHOICE", on=RESULT, methods=SAMPLE)
def tool_choice_none_result(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """ToolChoice mode "none": the "Model MUST NOT use any tools" (schema.ts, ToolChoice)."""
    request = msg.request
    choice = _params(request).get("toolChoice") if request is not None else None
    if not (isinstance(choice, dict) and choice.get("mode") == "none"):
        return
    if any(block.get("type") == "tool_use" for block in _content(result)):
        session.report(
            "SAMP-TOOLCHOICE",
            'the sampling result uses a tool although the request set toolChoice mode "none"',
            [msg.frame],
            severity="info",  # the [C] part of the rule is a heuristic
        )


def _content(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [b for b in content[:1000] if isinstance(b, dict)]
    return []


@rule("SAMP-TOOLRESULT-ONLY", "SAMP-TOOL-BALANCE", on=REQUEST, methods=SAMPLE)
def tool_messages(session: Session, msg: Msg) -> None:
    """Tool use and results in sampling messages pair up, and results stand alone."""
    messages = _params(msg).get("messages")
    if not isinstance(messages, list):
        return
    messages = messages[:1000]
    for i, message in enumerate(messages):
        kinds = {b.get("type") for b in _content(message)}
        if "tool_result" in kinds and kinds != {"tool_result"}:
            # The root problem: the balance check below would only repeat it.
            _bad_tool_messages(
                session,
                msg,
                "SAMP-TOOLRESULT-ONLY",
                f"sampling message {i} mixes tool_result with other content; a message with "
                "tool results holds only tool results",
                i,
                "mixes tool results with other content",
            )
            return
    for i, message in enumerate(messages):
        blocks = _content(message)
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if not uses or not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = [
            b.get("toolUseId") for b in _content(following) if b.get("type") == "tool_result"
        ]
        balanced = (
            isinstance(following, dict)
            and following.get("role") == "user"
            and {b.get("type") for b in _content(following)} == {"tool_result"}
            and sorted(map(str, answered)) == sorted(map(str, uses))
        )
        if not balanced and following is not None:
            _bad_tool_messages(
                session,
                msg,
                "SAMP-TOOL-BALANCE",
                f"sampling message {i} uses tools {uses[:5]}, but the next message is not a "
                "user message of one tool_result per tool_use id",
                i,
                "lacks the tool results of a tool use",
            )
            return


def _bad_tool_messages(
    session: Session, msg: Msg, rule_id: str, text: str, index: int, why: str
) -> None:
    """``rule_id`` for sampling message ``index``; the client should refuse the request."""
    session.report(rule_id, text, [msg.frame], index=index)
    _invalid_sampling(session, msg, why)


def _invalid_sampling(session: Session, msg: Msg, why: str) -> None:
    """Remember a sampling request the client should refuse with -32602 (SAMP-ERRORS)."""
    invalid = session.state.rule_state.get(_INVALID_SAMPLING)
    if invalid is None:
        invalid = session.state.rule_state[_INVALID_SAMPLING] = BoundedMap(ELICITATION_WINDOW)
    invalid.put(msg.frame, why)


@rule("SAMP-ERRORS", on=REPLY, methods=SAMPLE)
def invalid_sampling_answered(session: Session, msg: Msg) -> None:
    """A sampling request with unpaired or mixed tool results, answered but not with -32602.

    "Tool result missing in request: -32602 (Invalid params)", "Tool results
    mixed with other content: -32602 (Invalid params)" (sampling.mdx § Error
    Handling, a SHOULD).
    """
    request = msg.request
    invalid = session.state.rule_state.get(_INVALID_SAMPLING)
    why = invalid.get(request.seq) if invalid is not None and request is not None else None
    if why is None or msg.direction != C2S:
        return
    if msg.kind == ERROR_KIND and msg.error_code in (-32602, -32700, -32600):
        return
    answer = f"error {str(msg.error_code)[:20]}" if msg.kind == ERROR_KIND else "a result"
    session.report(
        "SAMP-ERRORS",
        f"the client answered a sampling/createMessage whose messages {why} with {answer}; "
        "such a request is refused with -32602 (Invalid params)",
        [request.seq, msg.frame],
    )


# --------------------------------------------------------------------------- elicitation


def _mode(params: dict[str, Any]) -> Any:
    return params.get("mode", "form")


@rule("CAP-ELICIT-MODE", on=REQUEST, methods=ELICIT)
def elicitation_mode_capability(session: Session, msg: Msg) -> None:
    """The mode must be one the client declared: {} means form only; url needs elicitation.url."""
    elicitation = _caps(session).get("elicitation")
    if session.state.client_caps is None or not isinstance(elicitation, dict):
        return  # CAP-ELICITATION reports a missing capability
    mode = _mode(_params(msg))
    declared = {"form"} if not elicitation else {m for m in ("form", "url") if m in elicitation}
    if mode in ("form", "url") and mode not in declared:
        session.report(
            "CAP-ELICIT-MODE",
            f"the server asked for {mode}-mode elicitation, but the client declared only "
            + (", ".join(sorted(declared)) or "no mode"),
            [msg.frame],
            mode=mode,
        )


@rule("ELIC-MODE-FIELDS", on=REQUEST, methods=ELICIT)
def mode_fields(session: Session, msg: Msg) -> None:
    """Form mode needs requestedSchema; URL mode needs url, message and elicitationId."""
    params = _params(msg)
    mode = _mode(params)
    if mode == "form":
        missing = [] if isinstance(params.get("requestedSchema"), dict) else ["requestedSchema"]
    elif mode == "url":
        missing = [
            k for k in ("url", "message", "elicitationId") if not isinstance(params.get(k), str)
        ]
    else:
        missing = ["a mode of form or url"]
    if missing:
        session.report(
            "ELIC-MODE-FIELDS",
            f"the {mode}-mode elicitation request lacks " + ", ".join(missing),
            [msg.frame],
            missing=missing,
        )
    elif mode == "url":
        states = session.state.rule_state
        known = states.get("elicitations")
        if known is None:
            known = states["elicitations"] = BoundedMap(ELICITATION_WINDOW)
        known.put(params["elicitationId"], msg.frame)


def _flat_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'requestedSchema must be {"type": "object", ...}'
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return "requestedSchema needs a properties object"
    for name, prop in list(properties.items())[:1000]:
        if not isinstance(prop, dict):
            return f"property {name!r} is not a schema"
        kind = prop.get("type")
        if kind in _PRIMITIVES:
            continue
        if kind == "array" and isinstance(prop.get("items"), dict):
            items = prop["items"]
            if "enum" in items or "anyOf" in items or "oneOf" in items:
                continue  # a multi-select of fixed options (2025-11-25)
        return f"property {name!r} is not a primitive (string, number, integer, boolean)"
    return None


@rule("ELIC-SCHEMA-FLAT", on=REQUEST, methods=ELICIT)
def flat_schema(session: Session, msg: Msg) -> None:
    """A form's requestedSchema is a flat object of primitive properties."""
    params = _params(msg)
    if _mode(params) != "form" or "requestedSchema" not in params:
        return
    problem = _flat_problem(params["requestedSchema"])
    if problem is not None:
        session.report("ELIC-SCHEMA-FLAT", problem, [msg.frame])


@rule("ELIC-FORM-NO-LINKS", on=REQUEST, methods=ELICIT)
def form_links(session: Session, msg: Msg) -> None:
    """Form-mode messages should not carry clickable URLs (send those in URL mode)."""
    params = _params(msg)
    message = params.get("message")
    if _mode(params) == "form" and isinstance(message, str) and _LINK.search(message):
        session.report(
            "ELIC-FORM-NO-LINKS",
            "the form-mode elicitation message holds a URL; use URL mode to send users to a page",
            [msg.frame],
            severity="warning",
        )


@rule("ELIC-URL-SAFE", on=REQUEST, methods=ELICIT)
def url_safe(session: Session, msg: Msg) -> None:
    """The URL carries no credentials: no token, password or session in its query."""
    params = _params(msg)
    url = params.get("url")
    if _mode(params) != "url" or not isinstance(url, str):
        return
    try:
        parts = urlsplit(url)
        keys = {k.lower() for k, _ in parse_qsl(parts.query, keep_blank_values=True)}
    except ValueError:
        return
    leaked = sorted(keys & _SECRET_KEYS) + (["user:password"] if parts.password else [])
    if not leaked and parts.scheme.lower() == "http" and parts.hostname not in _LOCAL_HOSTS:
        # "Servers SHOULD use HTTPS URLs for non-development environments"
        # (client/elicitation.mdx, Safe URL Handling).
        session.report(
            "ELIC-URL-SAFE",
            f"the elicitation URL uses plain http on {str(parts.hostname)[:80]!r}; it should "
            "use https outside local development",
            [msg.frame],
            scheme="http",
            severity="warning",
        )
        return
    if leaked:
        session.report(
            "ELIC-URL-SAFE",
            "the elicitation URL carries " + ", ".join(leaked) + "; it must not hold credentials "
            "or be pre-authenticated",
            [msg.frame],
            keys=leaked,
            severity="warning",
        )


@rule("ELIC-COMPLETE-NOTIF", on=NOTIFICATION, methods=("notifications/elicitation/complete",))
def complete_notification(session: Session, msg: Msg) -> None:
    """notifications/elicitation/complete names a URL-mode elicitation sent before."""
    elicitation_id = _params(msg).get("elicitationId")
    known = session.state.rule_state.get("elicitations")
    if not isinstance(elicitation_id, str) or known is None or elicitation_id not in known:
        session.report(
            "ELIC-COMPLETE-NOTIF",
            f"notifications/elicitation/complete names elicitation {str(elicitation_id)[:60]!r}, "
            "which no URL-mode elicitation/create of this session had",
            [msg.frame],
        )


@rule("ELIC-CONTENT-SCHEMA", on=RESULT, methods=ELICIT)
def accepted_content(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Accepted form content has the requested fields, as primitives (or string lists)."""
    request = msg.request
    params = (request.params if request is not None else None) or {}
    schema = params.get("requestedSchema")
    content = result.get("content")
    if result.get("action") != "accept" or _mode(params) != "form" or not isinstance(schema, dict):
        return
    problems = []
    if not isinstance(content, dict):
        problems.append("content is not an object")
    else:
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        problems += [f"{name} is missing" for name in required if name not in content]
        for name, value in list(content.items())[:1000]:
            if isinstance(value, list):
                if not all(isinstance(v, str) for v in value):
                    problems.append(f"{name} is a list of non-strings")
            elif not isinstance(value, str | int | float | bool):
                problems.append(f"{name} is not a primitive")
    if problems:
        session.report(
            "ELIC-CONTENT-SCHEMA",
            "the accepted elicitation content does not match requestedSchema: "
            + "; ".join(problems[:5]),
            [msg.frame],
            problems=problems[:20],
        )


@rule("ELIC-URL-REQUIRED-ERR", on=ERROR)
def url_required_error(session: Session, msg: Msg) -> None:
    """-32042 URLElicitationRequired carries data.elicitations: URL-mode requests with ids."""
    if msg.error_code != -32042 or session.state.era == "stateless":
        return
    error = msg.obj.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    items = data.get("elicitations") if isinstance(data, dict) else None
    ok = (
        isinstance(items, list)
        and bool(items)
        and all(
            isinstance(i, dict)
            and i.get("mode") == "url"
            and isinstance(i.get("elicitationId"), str)
            for i in items[:1000]
        )
    )
    if not ok:
        session.report(
            "ELIC-URL-REQUIRED-ERR",
            "error -32042 (URL elicitation required) needs data.elicitations: a non-empty list "
            "of URL-mode elicitations, each with an elicitationId",
            [msg.frame],
        )
