"""Declined requests: the error a receiver gives for what it does not support or cannot do.

Each rule judges a reply against the error the specification names for the
case, once the case is known from the session itself (the capabilities of the
handshake, the server's own tool and resource lists):

* CAP-NOT-SUPPORTED-CODE (``client/roots.mdx`` and
  ``server/utilities/completion.mdx`` § Error Handling): a request for a
  feature whose capability the receiver did not declare is refused with
  "Method not found: ``-32601`` (Capability not supported)". Judged when the
  receiver answers such a request with another error code (not -32700 or
  -32600: a request the receiver could not read never reached the question).
* ROOTS-UNSUPPORTED (``client/roots.mdx`` § Error Handling): "Client does not
  support roots: ``-32601`` (Method not found)": a client without the roots
  capability answers ``roots/list`` with that error, not a list or another code.
* SAMP-TOOLS-NO-CAP-ERROR (schema.ts ``CreateMessageRequestParams.tools``):
  "The client MUST return an error if this field is provided but
  ``ClientCapabilities.sampling.tools`` is not declared".
* ELIC-UNSUPPORTED-MODE-ERR (``client/elicitation.mdx`` § Error Handling):
  "Clients **MUST** return standard JSON-RPC errors for common failure cases:
  Server sends an ``elicitation/create`` request with a mode not declared in
  client capabilities: ``-32602`` (Invalid params)".
* COMPL-ERRORS (``server/utilities/completion.mdx`` § Error Handling): "Servers
  **SHOULD** return standard JSON-RPC errors" (-32601, -32602, -32603): an
  error code outside JSON-RPC's own for a failed completion.
* TOOL-ARGS-ERROR-KIND (2025-11-25 ``server/tools.mdx`` § Error Handling):
  "Input validation errors" are "Tool Execution Errors: Reported in tool
  results with ``isError: true``"; only unknown tools, requests that fail the
  CallToolRequest schema and server errors are protocol errors. Judged when a
  well-formed call of a tool the server listed is refused with -32602 (Invalid
  params), the code of argument errors.
* RES-NOT-FOUND (``server/resources.mdx`` § Error Handling, 2024-11-05 to
  2025-11-25): "Resource not found: ``-32002``". A resource is known not to
  exist when the server's complete resource and template lists leave its URI
  out (rules/utilities_2026.py keeps the listings, and judges an empty
  ``contents`` answer there; 2026-07-28 is MOD-RES-NOT-FOUND).

The rules that judge error codes only are ERROR rules: the session calls them
for error replies alone, never for the results of the same methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.model import C2S, ERROR, S2C
from mcpsniff.core.rules.lifecycle import _CLIENT_GATED, _SERVER_GATED, _has_cap
from mcpsniff.core.rules.registry import ERROR as ERROR_REPLY
from mcpsniff.core.rules.registry import REPLY, rule
from mcpsniff.core.rules.utilities_2026 import (
    MISSING_RESOURCE_ERROR,
    known_missing,
    report_missing_read,
)

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "CAP-NOT-SUPPORTED-CODE",
    "ROOTS-UNSUPPORTED",
    "SAMP-TOOLS-NO-CAP-ERROR",
    "ELIC-UNSUPPORTED-MODE-ERR",
    "COMPL-ERRORS",
    "TOOL-ARGS-ERROR-KIND",
    "RES-NOT-FOUND",
)
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
#: The errors completion.mdx § Error Handling names (Method not found, Invalid
#: params, Internal error), and JSON-RPC's own for a request it cannot read.
COMPLETION_CODES = frozenset({-32700, -32600, -32601, -32602, -32603})
RESOURCE_NOT_FOUND = -32002
#: A request the receiver could not read (-32700) or that is no valid request
#: (-32600) is refused before any capability is asked about: no verdict on those.
UNREAD = frozenset({-32700, -32600})
#: Client-gated requests judged by CAP-NOT-SUPPORTED-CODE (roots/list has its own rule).
_CLIENT_GATED_CODES = {m: v for m, v in _CLIENT_GATED.items() if m != "roots/list"}


def _refused_with(msg: Msg, code: int) -> bool:
    """Whether ``msg`` is the error ``code``, or one that says the request was not read (UNREAD)."""
    return msg.kind == ERROR and (msg.error_code == code or msg.error_code in UNREAD)


def _answer(msg: Msg) -> str:
    return f"error {msg.error_code}" if msg.kind == ERROR else "a result"


@rule("CAP-NOT-SUPPORTED-CODE", on=ERROR_REPLY, methods=(*_SERVER_GATED, *_CLIENT_GATED_CODES))
def unsupported_code(session: Session, msg: Msg) -> None:
    """A request for an undeclared capability refused with another code than -32601."""
    request = msg.request
    code = msg.error_code
    if request is None or msg.kind != ERROR or code == METHOD_NOT_FOUND or code in UNREAD:
        return
    state = session.state
    if request.method in _SERVER_GATED:
        caps, receiver, path = state.server_caps, "server", _SERVER_GATED[request.method][1]
        if msg.direction != S2C:
            return
    else:
        caps, receiver, path = state.client_caps, "client", _CLIENT_GATED[request.method][1]
        if msg.direction != C2S:
            return
    if caps is None or _has_cap(caps, path):
        return
    session.report(
        "CAP-NOT-SUPPORTED-CODE",
        f"the {receiver} refused {request.method} with error {str(msg.error_code)[:20]}; it did "
        f"not declare the {'.'.join(path)} capability, and an unsupported feature is refused "
        "with -32601 (Method not found)",
        [request.seq, msg.frame],
        method=request.method,
    )


@rule("ROOTS-UNSUPPORTED", on=REPLY, methods=("roots/list",))
def roots_unsupported(session: Session, msg: Msg) -> None:
    """A client without roots answers roots/list with -32601, nothing else."""
    request = msg.request
    caps = session.state.client_caps
    if request is None or msg.direction != C2S or caps is None or _has_cap(caps, ("roots",)):
        return
    if _refused_with(msg, METHOD_NOT_FOUND):
        return
    session.report(
        "ROOTS-UNSUPPORTED",
        f"the client, which did not declare the roots capability, answered roots/list with "
        f"{_answer(msg)}; a client without roots answers -32601 (Method not found)",
        [request.seq, msg.frame],
    )


@rule("SAMP-TOOLS-NO-CAP-ERROR", on=REPLY, methods=("sampling/createMessage",))
def sampling_tools_accepted(session: Session, msg: Msg) -> None:
    """A tool-enabled sampling request the client did not declare support for, answered."""
    request = msg.request
    caps = session.state.client_caps
    if request is None or msg.direction != C2S or msg.kind == ERROR or caps is None:
        return
    params = request.params or {}
    sampling = caps.get("sampling")
    if not isinstance(sampling, dict) or not ({"tools", "toolChoice"} & params.keys()):
        return  # no sampling at all is CAP-NOT-SUPPORTED-CODE's
    if isinstance(sampling.get("tools"), dict):
        return
    given = " and ".join(k for k in ("tools", "toolChoice") if k in params)
    session.report(
        "SAMP-TOOLS-NO-CAP-ERROR",
        f"the client answered a sampling/createMessage carrying {given} with a result, though "
        "it did not declare sampling.tools; it must return an error",
        [request.seq, msg.frame],
    )


@rule("ELIC-UNSUPPORTED-MODE-ERR", on=REPLY, methods=("elicitation/create",))
def elicitation_mode_refused(session: Session, msg: Msg) -> None:
    """An elicitation in a mode the client did not declare is refused with -32602."""
    request = msg.request
    caps = session.state.client_caps
    if request is None or msg.direction != C2S or caps is None:
        return
    elicitation = caps.get("elicitation")
    if not isinstance(elicitation, dict):
        return  # no elicitation at all is CAP-NOT-SUPPORTED-CODE's
    mode = (request.params or {}).get("mode", "form")
    declared = {"form"} if not elicitation else {m for m in ("form", "url") if m in elicitation}
    if mode not in ("form", "url") or mode in declared:
        return
    if _refused_with(msg, INVALID_PARAMS):
        return
    session.report(
        "ELIC-UNSUPPORTED-MODE-ERR",
        f"the client answered a {mode}-mode elicitation/create, a mode it did not declare, with "
        f"{_answer(msg)}; it must refuse it with -32602 (Invalid params)",
        [request.seq, msg.frame],
        mode=mode,
    )


@rule("COMPL-ERRORS", on=ERROR_REPLY, methods=("completion/complete",))
def completion_error_code(session: Session, msg: Msg) -> None:
    """A failed completion answered with a code that is no standard JSON-RPC error."""
    request = msg.request
    code = msg.error_code
    if request is None or msg.kind != ERROR or msg.direction != S2C:
        return
    if type(code) is not int or code in COMPLETION_CODES:
        return  # a code that is no integer is JR-ERROR-CODE-INT's
    session.report(
        "COMPL-ERRORS",
        f"the server refused completion/complete with error {code}; completion failures use "
        "the standard JSON-RPC errors -32601 (not supported), -32602 (unknown prompt or "
        "resource, missing argument) and -32603 (internal error)",
        [request.seq, msg.frame],
        code=code,
    )


@rule("TOOL-ARGS-ERROR-KIND", on=ERROR_REPLY, methods=("tools/call",))
def argument_error_kind(session: Session, msg: Msg) -> None:
    """A listed tool's well-formed call refused with -32602 instead of an isError result."""
    request = msg.request
    tools = session.state.tools
    if request is None or msg.kind != ERROR or msg.error_code != INVALID_PARAMS or tools is None:
        return
    params = request.params or {}
    name = params.get("name")
    arguments = params.get("arguments", {})
    if not isinstance(name, str) or name not in tools or not isinstance(arguments, dict):
        return
    if "task" in params:
        return  # task augmentation refused is TASK-*'s
    session.report(
        "TOOL-ARGS-ERROR-KIND",
        f"the server refused a well-formed call of its listed tool {name[:60]!r} with -32602; "
        "arguments the tool does not accept are a tool execution error (a result with "
        "isError: true the model can correct), not a protocol error",
        [request.seq, msg.frame],
        tool=name[:200],
    )


@rule("RES-NOT-FOUND", on=ERROR_REPLY, methods=("resources/read",))
def resource_not_found(session: Session, msg: Msg) -> None:
    """A resource the server's own lists leave out, refused with another code than -32002."""
    request = msg.request
    if request is None or msg.direction != S2C or msg.error_code == RESOURCE_NOT_FOUND:
        return
    if session.state.version is None:
        return  # which code is right depends on the version
    uri = (request.params or {}).get("uri")
    if not isinstance(uri, str) or not known_missing(session, uri):
        return
    report_missing_read(
        session,
        request,
        msg,
        uri,
        f"error {str(msg.error_code)[:20]}",
        "RES-NOT-FOUND",
        MISSING_RESOURCE_ERROR,
    )
