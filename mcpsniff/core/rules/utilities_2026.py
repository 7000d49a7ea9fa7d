"""2026-07-28 utilities: per-request log levels, trace context, missing resources, tool order.

* MOD-LOG-OPTIN (``server/utilities/logging.mdx`` § Per-request log level):
  "The server **MUST NOT** emit ``notifications/message`` for a request that
  does not include this field", "the server **MAY** send
  ``notifications/message`` notifications at or above the requested level on
  the response stream of that request", and "the server **MUST NOT** deliver
  it on a ``subscriptions/listen`` stream". On HTTP the stream names the
  request; on stdio the requests in flight do.
* MOD-LOGLEVEL-INVALID (§ Error Handling): an unrecognized ``logLevel`` "**SHOULD**"
  be rejected with -32602.
* MSG-META-KEYS (``basic/index.mdx`` § _meta > OpenTelemetry trace context):
  the keys ``traceparent``, ``tracestate`` and ``baggage`` are the exception to
  the key grammar, and "When present, their values MUST follow W3C Trace
  Context and W3C Baggage formats respectively" (core/trace_context.py).
* MOD-RES-NOT-FOUND (``server/resources.mdx`` § Error Handling): "Servers
  **MUST NOT** return an empty ``contents`` array for a non-existent resource."
  A resource is known not to exist when the server's complete resource list
  and template list both leave its URI out (a resource may exist unlisted
  only through a template).
* MOD-LIST-STABLE (``server/tools.mdx`` § Capabilities): "Servers **SHOULD**
  return tools in a deterministic order (i.e., the same ordering across
  requests when the underlying set of tools has not changed)"; reported as
  info, being a SHOULD about caching.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from mcpsniff.core import trace_context
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import C2S, ERROR, S2C, SENDER
from mcpsniff.core.protocol import LOG_LEVEL_ORDER, META_VERSION, STATELESS, V5
from mcpsniff.core.rules import repeats
from mcpsniff.core.rules.registry import MESSAGE, NOTIFICATION, RESPONSE, RESULT, rule

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg, Pending

RULES = (
    "MOD-LOG-OPTIN",
    "MOD-LOGLEVEL-INVALID",
    "MSG-META-KEYS",
    "MOD-RES-NOT-FOUND",
    "MOD-LIST-STABLE",
)
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
#: Listed resource URIs remembered (beyond it, no verdict on empty contents).
URI_LIMIT = 65536
#: Resource templates remembered (beyond it, no verdict either).
TEMPLATE_LIMIT = 1024
_EXPRESSION = lazy(r"\{[^{}]*\}")


# --------------------------------------------------------------------------- logging


@rule("MOD-LOG-OPTIN", on=NOTIFICATION, methods=("notifications/message",), modern=True)
def log_opt_in(session: Session, msg: Msg) -> None:
    """A 2026-07-28 log message: for a request that asked, at or above its level, on its stream."""
    state = session.state
    if state.era != STATELESS or msg.direction != S2C:
        return
    level = (msg.params or {}).get("level")
    rank = LOG_LEVEL_ORDER.get(level) if isinstance(level, str) else None
    frame = msg.source
    meta = frame.meta if frame is not None else None
    number = meta.get("exchange") if meta else None
    exchange = None
    if isinstance(number, int) and state.http is not None:
        exchange = state.http.exchanges.get(number)
    if exchange is not None and exchange.method == "POST":
        requests = [m for m in exchange.methods if m.kind == "request"]
        if not requests:
            return
        request = requests[0]
        if request.method == "subscriptions/listen":
            session.report(
                "MOD-LOG-OPTIN",
                "the server sent notifications/message on a subscriptions/listen stream; log "
                "messages go only on the response stream of the request that asked for them",
                [msg.frame],
                cause="listen-stream",
            )
            return
        asked = [_asked(request.params)]
    else:
        asked = [_asked(p.params) for p in state.pending[C2S].values()]
    levels = [a for a in asked if a is not None]  # (MOD-LOGLEVEL-INVALID judges the values)
    if not levels:
        session.report(
            "MOD-LOG-OPTIN",
            "the server sent notifications/message, but "
            + (
                "the request it answers did not ask"
                if exchange is not None
                else "no request in flight asked"
            )
            + f" for logs (_meta {LOG_LEVEL_META})",
            [msg.frame],
            cause="no-opt-in",
        )
        return
    known = [a for a in levels if isinstance(a, str) and a in LOG_LEVEL_ORDER]
    if rank is not None and known and rank < min(LOG_LEVEL_ORDER[a] for a in known):
        lowest = min(known, key=LOG_LEVEL_ORDER.__getitem__)
        session.report(
            "MOD-LOG-OPTIN",
            f"the server sent a {level} log message, below the level {lowest} the client asked "
            f"for (_meta {LOG_LEVEL_META}); only that level and above may be sent",
            [msg.frame],
            cause="below-level",
            level=level,
            asked=lowest,
        )


@rule("MOD-LOGLEVEL-INVALID", on=RESPONSE, modern=True)
def log_level_refused(session: Session, msg: Msg) -> None:
    """An unrecognized _meta logLevel: "the server **SHOULD** reject that request with
    a standard JSON-RPC error", -32602 (logging.mdx § Error Handling)."""
    request = msg.request
    if request is None or msg.direction != S2C or session.state.era != STATELESS:
        return
    asked = _asked(request.params)
    if asked is None or (isinstance(asked, str) and asked in LOG_LEVEL_ORDER):
        return
    if msg.error_code == -32602:
        return
    answer = f"error {msg.error_code}" if msg.kind == ERROR else "a result"
    session.report(
        "MOD-LOGLEVEL-INVALID",
        f"the server answered {request.method[:60]} with {answer} although its _meta "
        f"{LOG_LEVEL_META} is {str(asked)[:40]!r}, no log level; it should reject it with -32602",
        [request.seq, msg.frame],
        level=str(asked)[:100],
    )


def _asked(params: Any) -> Any:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(LOG_LEVEL_META) if isinstance(meta, dict) else None


# --------------------------------------------------------------------------- trace context


@rule("MSG-META-KEYS", on=MESSAGE)
def trace_context_values(session: Session, msg: Msg) -> None:
    """``traceparent``, ``tracestate`` and ``baggage`` in ``_meta`` hold W3C values (2026-07-28)."""
    params = msg.params
    meta = params.get("_meta") if params is not None else None
    if type(meta) is not dict:
        return
    if not (
        trace_context.TRACEPARENT in meta
        or trace_context.TRACESTATE in meta
        or trace_context.BAGGAGE in meta
    ):
        return
    # The first request is judged before it opens the era (its own _meta says the version).
    if session.state.version != V5 and meta.get(META_VERSION) != V5:
        return
    problems = []
    if trace_context.TRACEPARENT in meta:
        context = trace_context.parse(meta[trace_context.TRACEPARENT], meta.get("tracestate"))
        if context.problem is not None:
            problems.append(f"traceparent {context.text[:60]!r}: {context.problem}")
        elif context.tracestate_problem is not None:
            problems.append(f"tracestate: {context.tracestate_problem}")
    if trace_context.BAGGAGE in meta:
        problem = trace_context.baggage_problem(meta[trace_context.BAGGAGE])
        if problem is not None:
            problems.append(f"baggage: {problem}")
    for problem in problems:
        session.report(
            "MSG-META-KEYS",
            f"{SENDER[msg.direction]} sent a _meta {problem}; these keys must hold W3C Trace "
            "Context and W3C Baggage values",
            [msg.frame],
            key=problem.partition(" ")[0].rstrip(":"),
        )


# --------------------------------------------------------------------------- resources


class _Resources:
    """What the server's listings say exists: URIs, templates, and whether both were complete."""

    __slots__ = ("listed", "overflow", "templated", "templates", "uris")

    def __init__(self) -> None:
        self.uris: set[str] = set()
        self.templates: list[re.Pattern[str]] = []
        self.listed = False
        self.templated = False
        self.overflow = False


def _resources(session: Session) -> _Resources:
    found = session.state.rule_state.get("resource_listing")
    if found is None:
        found = session.state.rule_state["resource_listing"] = _Resources()
    return found  # type: ignore[no-any-return]


def _listed(result: dict[str, Any], member: str) -> list[Any]:
    items = result.get(member)
    return items if isinstance(items, list) else []


def _template_pattern(template: str) -> re.Pattern[str]:
    """A lenient matcher for an RFC 6570 template: any text may fill any expression."""
    parts = _EXPRESSION.split(template[:2048])
    return re.compile(".*".join(re.escape(p) for p in parts), re.DOTALL)


@rule(
    "MOD-RES-NOT-FOUND",
    "RES-NOT-FOUND",
    on=RESULT,
    methods=("resources/list", "resources/templates/list", "resources/read"),
)
def resource_listing(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """Listings record what exists; an empty read of anything else is a missing resource.

    The listings are kept in every version: rules/declined.py's RES-NOT-FOUND
    reads them too (``known_missing``).
    """
    if msg.request is None:
        return
    method = msg.request.method
    if method == "resources/read":
        # The usual read has contents: nothing to record, nothing to judge.
        if result.get("contents") == []:
            _empty_read(session, msg, result)
        return
    known = _resources(session)
    last_page = not isinstance(result.get("nextCursor"), str)
    if method == "resources/list":
        if (
            (known.listed or not last_page)
            and (known.overflow or len(known.uris) < URI_LIMIT)
            and repeats.clean_before(session, msg, result, "MOD-RES-NOT-FOUND")
        ):
            # A page byte for byte one recorded before (with the set below the
            # limit then and now, so ``overflow`` stays as it is): every uri of
            # it is known already (the set only grows), and ``listed`` would stay.
            return
        if not known.overflow:
            # One set update per page (a listing is answered again and again).
            uris = [
                item["uri"]
                for item in _listed(result, "resources")
                if type(item) is dict and type(item.get("uri")) is str
            ]
            if uris and len(known.uris) >= URI_LIMIT:
                known.overflow = True
            else:
                known.uris.update(uris)
                known.overflow = len(known.uris) > URI_LIMIT
        known.listed = known.listed or last_page
        if not known.overflow:
            repeats.judged_clean(session, msg, result, "MOD-RES-NOT-FOUND")
    else:
        for item in _listed(result, "resourceTemplates"):
            if isinstance(item, dict) and isinstance(item.get("uriTemplate"), str):
                if len(known.templates) >= TEMPLATE_LIMIT:
                    known.overflow = True
                    break
                known.templates.append(_template_pattern(item["uriTemplate"]))
        known.templated = known.templated or last_page


def _empty_read(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """resources/read answered with empty contents: a missing resource's wrong answer?"""
    request = msg.request
    if request is None or result.get("resultType", "complete") != "complete":
        return
    uri = (request.params or {}).get("uri")
    version = session.state.version
    if version is None or not isinstance(uri, str) or not known_missing(session, uri):
        return  # (which code is right depends on the version)
    if version != V5:
        # Before 2026-07-28: "Resource not found: -32002" (resources.mdx § Error
        # Handling; rules/declined.py judges the error codes).
        report_missing_read(
            session, request, msg, uri, "empty contents", "RES-NOT-FOUND", MISSING_RESOURCE_ERROR
        )
    else:
        report_missing_read(
            session, request, msg, uri, "empty contents", "MOD-RES-NOT-FOUND", "-32602"
        )


#: What a missing resource gets before 2026-07-28 (resources.mdx § Error Handling).
MISSING_RESOURCE_ERROR = "-32002 (Resource not found)"


def report_missing_read(
    session: Session, request: Pending, msg: Msg, uri: str, answer: str, rule_id: str, code: str
) -> None:
    """``rule_id``: resources/read of ``uri``, which no list offers, answered with ``answer``."""
    session.report(
        rule_id,
        f"the server answered resources/read of {uri[:120]!r}, which neither its resource list "
        f"nor its templates offer, with {answer}; a missing resource gets error {code}",
        [request.seq, msg.frame],
        uri=uri[:200],
    )


def known_missing(session: Session, uri: str) -> bool:
    """Whether the server's complete resource and template lists both leave ``uri`` out."""
    known = session.state.rule_state.get("resource_listing")
    return (
        known is not None
        and known.listed
        and known.templated
        and not known.overflow
        and uri not in known.uris
        and not any(t.fullmatch(uri) for t in known.templates)
    )


# --------------------------------------------------------------------------- tool order


@rule("MOD-LIST-STABLE", on=RESULT, methods=("tools/list",), modern=True)
def tool_order(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """The same set of tools listed in another order (after rules/methods.py read the list)."""
    state = session.state
    if state.version != V5 or isinstance(result.get("nextCursor"), str) or state.tools is None:
        return
    order = tuple(state.tools)
    previous = state.rule_state.get("tool_order")
    state.rule_state["tool_order"] = (order, msg.frame)
    if previous is None or previous[0] == order or set(previous[0]) != set(order):
        return
    moved = next(i for i, (a, b) in enumerate(zip(previous[0], order, strict=True)) if a != b)
    session.report(
        "MOD-LIST-STABLE",
        f"tools/list gave the same {len(order)} tools in another order than at seq "
        f"{previous[1]} (position {moved}: {order[moved][:60]!r} instead of "
        f"{previous[0][moved][:60]!r}); servers should list tools in a deterministic order",
        [previous[1], msg.frame],
        severity="info",
    )
