"""What 2026-07-28 removed (MOD-REMOVED) and deprecated (MOD-DEPRECATED), in every position.

``rules/lifecycle.py`` reports a client *request* for a removed method. This
module covers the other directions and positions the changelog names
(``S/2026-07-28/changelog.mdx``):

* removed notifications, from either side: "Remove ... ``notifications/roots/
  list_changed``" (§ Major changes 5), ``notifications/tasks/status`` (6: tasks
  moved to an extension), "Remove the ``notifications/elicitation/complete``
  notification" (§ Minor changes 11), and ``notifications/initialized`` (2);
* a server request for a removed method (``ping``, ``tasks/list``,
  ``tasks/result``, ...), besides MOD-NO-SERVER-REQUESTS;
* "the ``elicitationId`` field of URL mode elicitation requests" (§ Minor
  changes 11), inside an ``inputRequests`` entry;
* a ``Last-Event-ID`` header on a 2026-07-28 POST: "Remove SSE stream
  resumability and message redelivery (the ``Last-Event-ID`` header and SSE
  event IDs)" (§ Major changes 9);
* the 2025-11-25 per-request task augmentation (``params.task``): the tasks
  extension has the server decide, and "clients do not signal task preference
  on the request itself" (ext-tasks ``tasks.md § Capability Negotiation``).

Deprecated features "remain part of the specification" and stay "fully
functional during the deprecation window" (``changelog.mdx § Deprecated``;
``deprecated.mdx``): MOD-DEPRECATED is an info notice, once per feature and
session, when a 2026-07-28 session uses Roots, Sampling or Logging, the
``includeContext`` values ``thisServer``/``allServers``, or the HTTP+SSE
transport. Declaring a capability is not using it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.model import S2C
from mcpsniff.core.protocol import REMOVED_IN_V5, STATELESS
from mcpsniff.core.rules.registry import FRAME, NOTIFICATION, REQUEST, RESULT, rule
from mcpsniff.core.rules.stateless_era import report_removed

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("MOD-REMOVED", "MOD-DEPRECATED")

#: Requests that 2026-07-28 carries only inside ``inputRequests`` (MRTR): moved, not removed.
_MOVED_TO_MRTR = frozenset({"roots/list", "sampling/createMessage", "elicitation/create"})
#: The methods the changelog removes (catalogue MOD-REMOVED).
REMOVED = REMOVED_IN_V5 - _MOVED_TO_MRTR
#: The features deprecated.mdx lists, by what MOD-DEPRECATED calls them.
ROOTS, SAMPLING, LOGGING = "Roots", "Sampling", "Logging"
INCLUDE_CONTEXT, HTTP_SSE = 'includeContext "thisServer"/"allServers"', "the HTTP+SSE transport"
MIGRATION = {
    ROOTS: "pass directories or files via tool parameters, resource URIs or server configuration",
    SAMPLING: "integrate directly with LLM provider APIs",
    LOGGING: "log to stderr (stdio) or use OpenTelemetry",
    INCLUDE_CONTEXT: 'omit the field or use "none"',
    HTTP_SSE: "migrate to Streamable HTTP",
}
_INPUT_FEATURE = {"roots/list": ROOTS, "sampling/createMessage": SAMPLING}
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
_STATE = "deprecated_seen"
_MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read", "tasks/get"})


def _deprecated(session: Session, feature: str, how: str, seqs: list[int]) -> None:
    """MOD-DEPRECATED for ``feature``, the first time this session uses it."""
    seen = session.state.rule_state.get(_STATE)
    if seen is None:
        seen = session.state.rule_state[_STATE] = set()
    if feature in seen:
        return
    seen.add(feature)
    session.report(
        "MOD-DEPRECATED",
        f"{how}: {feature} is deprecated in 2026-07-28 (still allowed, scheduled for removal; "
        f"{MIGRATION[feature]})",
        seqs,
        feature=feature,
    )


# --------------------------------------------------------------------------- messages


@rule("MOD-REMOVED", "MOD-DEPRECATED", on=NOTIFICATION, modern=True)
def notification(session: Session, msg: Msg) -> None:
    """A removed notification from either side; a log message (Logging is deprecated)."""
    if session.state.era != STATELESS:
        return
    report_removed(session, msg, REMOVED)
    if msg.method == "notifications/message" and msg.direction == S2C:
        _deprecated(session, LOGGING, "the server sent a log message", [msg.frame])


@rule("MOD-REMOVED", "MOD-DEPRECATED", on=REQUEST, modern=True)
def request(session: Session, msg: Msg) -> None:
    """A server request for a removed method; the old task augmentation; deprecated uses."""
    if session.state.era != STATELESS:
        return
    method = msg.method or ""
    params = msg.params
    if msg.direction == S2C:
        report_removed(session, msg, REMOVED)
        return
    if params is None:
        _transport(session, msg)
        return
    if type(params.get("task")) is dict:
        session.report(
            "MOD-REMOVED",
            f"the client asked for task execution with params.task on {method}; 2026-07-28 "
            "removed this 2025-11-25 augmentation (declare the io.modelcontextprotocol/tasks "
            "extension and the server decides)",
            [msg.frame],
            method=method,
            field="task",
            severity="warning",
        )
    meta = params.get("_meta")
    if type(meta) is dict and LOG_LEVEL_META in meta:
        _deprecated(session, LOGGING, f"the client asked for log messages on {method}", [msg.frame])
    _transport(session, msg)


def _transport(session: Session, msg: Msg) -> None:
    """A 2026-07-28 request over the legacy HTTP+SSE transport."""
    http = session.state.http
    source = msg.source
    meta = source.meta if source is not None else None
    number = meta.get("exchange") if meta else None
    if http is None or not isinstance(number, int):
        return
    exchange = http.exchanges.get(number)
    if exchange is not None and exchange.transport == "legacy-sse":
        _deprecated(
            session, HTTP_SSE, "the client posts to a legacy HTTP+SSE endpoint", [msg.frame]
        )


@rule("MOD-REMOVED", "MOD-DEPRECATED", on=RESULT, methods=tuple(_MRTR_METHODS), modern=True)
def input_requests(session: Session, msg: Msg, result: dict[str, Any]) -> None:
    """What an ``inputRequests`` map asks of the client: removed fields, deprecated features."""
    if session.state.era != STATELESS or msg.direction != S2C:
        return
    found = result.get("inputRequests")
    if type(found) is not dict:
        return
    for key, entry in list(found.items())[:100]:
        if type(entry) is not dict:
            continue
        method = entry.get("method")
        params = entry.get("params")
        params = params if type(params) is dict else {}
        feature = _INPUT_FEATURE.get(method) if isinstance(method, str) else None
        if feature is not None:
            _deprecated(
                session, feature, f"the server asked for {method} (input {key!r})", [msg.frame]
            )
        if method == "sampling/createMessage" and params.get("includeContext") in (
            "thisServer",
            "allServers",
        ):
            _deprecated(
                session,
                INCLUDE_CONTEXT,
                f"the server's sampling request (input {key!r}) sets includeContext "
                f"{params['includeContext']!r}",
                [msg.frame],
            )
        if method == "elicitation/create" and "elicitationId" in params:
            session.report(
                "MOD-REMOVED",
                f"the server's elicitation request (input {str(key)[:40]!r}) carries "
                "elicitationId, which 2026-07-28 removed (a server correlates an elicitation "
                "across retries in its requestState)",
                [msg.frame],
                field="elicitationId",
                severity="warning",
            )


@rule("MOD-REMOVED", on=FRAME, keys=("parsed",))
def resumption(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """A 2026-07-28 POST that asks to resume a stream (``Last-Event-ID``)."""
    http = session.state.http
    if http is None or frame.direction == S2C or session.state.era != STATELESS:
        return
    number = frame.meta.get("exchange") if frame.meta else None
    exchange = http.exchanges.get(number) if isinstance(number, int) else None
    if exchange is None or exchange.transport != "streamable":
        return
    last = exchange.headers.get("last-event-id")
    if last is not None and any(m.kind == "request" for m in messages):
        session.report(
            "MOD-REMOVED",
            f"the client's POST carries Last-Event-ID {last[:60]!r}; 2026-07-28 removed stream "
            "resumption (a broken stream loses its request, which is re-issued with a new id)",
            [frame.seq],
            header="Last-Event-ID",
            severity="warning",
        )
