"""2026-07-28 version negotiation and the required ``_meta`` fields, from the server's side.

``basic/versioning.mdx`` (2026-07-28) § Protocol Version Negotiation: "If the
server does not implement the requested version [...] it **MUST** respond with
an ``UnsupportedProtocolVersionError`` listing the versions it does support",
with ``data.supported`` (schema.ts ``UnsupportedProtocolVersionError``: "The
protocol versions the server supports", ``string[]``); and "The client
**SHOULD** select a mutually supported version from the ``supported`` list and
retry the request". MOD-UNSUPPORTED-VERSION judges

* a server that answers a version it cannot support with a result, or with
  another error (often -32602);
* a -32022 whose ``data.supported`` is no array of version strings, or lists
  the very version it refused (rules/lifecycle.py reports a missing one);
* a client whose retry after -32022 names a version the server did not list.

A version the server "does not support" is one its ``server/discover`` result
left out of ``supportedVersions``; without that, only one no server can
implement: not a ``YYYY-MM-DD`` string, or a date before 2026-07-28 that is no
MCP version. A known legacy version or a later date may be the server's to serve.

``basic/index.mdx`` § _meta: "A request missing any required field is
malformed; the server **MUST** reject it with JSON-RPC error code ``-32602``".
MOD-META-REQUIRED here judges a server that answered such a request with a
result (rules/lifecycle.py reports the client's request).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import C2S, ERROR, RESPONSE, S2C
from mcpsniff.core.protocol import (
    META_VERSION,
    STATELESS,
    V5,
    VERSION_PATTERN,
    VERSIONS,
)
from mcpsniff.core.rules.registry import REQUEST, rule
from mcpsniff.core.rules.registry import RESPONSE as ON_RESPONSE
from mcpsniff.core.rules.stateless_era import lacks_meta

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg, Pending

RULES = ("MOD-UNSUPPORTED-VERSION", "MOD-META-REQUIRED")
#: -32022 answers remembered until the client's retry: (method, target) -> what was listed.
RETRY_WINDOW = 256


def requested_version(params: Any) -> Any:
    """The ``_meta`` protocol version of a request's params (None when absent)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_VERSION) if isinstance(meta, dict) else None


def _target(params: Any) -> Any:
    if not isinstance(params, dict):
        return None
    target = params.get("name", params.get("uri"))
    return target if isinstance(target, str) else None


def unsupported(session: Session, version: Any) -> bool:
    """Whether the server cannot implement protocol version ``version``."""
    if not isinstance(version, str):
        return False
    listed = session.state.rule_state.get("supported_versions")
    if listed is not None:
        return version not in listed
    if not VERSION_PATTERN.match(version):
        return True
    return version < V5 and version not in VERSIONS


@rule(*RULES, on=ON_RESPONSE, modern=True)
def answer(session: Session, msg: Msg) -> None:
    """The server's answer to a 2026-07-28 request: the version and _meta it was asked with."""
    request = msg.request
    if msg.direction != S2C or request is None or session.state.era != STATELESS:
        return
    if msg.kind == RESPONSE:
        result = msg.obj.get("result")
        if request.method == "server/discover" and isinstance(result, dict):
            listed = result.get("supportedVersions")
            if isinstance(listed, list) and all(isinstance(v, str) for v in listed):
                session.state.rule_state["supported_versions"] = frozenset(listed[:64])
        if request.method != "initialize":
            # A server that accepts the legacy handshake implements both eras
            # (basic/versioning.mdx § Backward Compatibility): no _meta is due on it.
            _result(session, msg, request)
    elif msg.kind == ERROR:
        _error(session, msg, request)


def _result(session: Session, msg: Msg, request: Pending) -> None:
    missing = lacks_meta(request)
    if missing:
        session.report(
            "MOD-META-REQUIRED",
            f"the server answered {request.method[:60]} with a result although the request "
            f"lacks _meta {' and '.join(missing)}; it must reject it with -32602 (HTTP 400)",
            [request.seq, msg.frame],
            missing=missing,
            blame="server",
        )
        return
    version = requested_version(request.params)
    if unsupported(session, version):
        _accepted_unsupported(session, msg, request, version, "with a result ", "")


def _accepted_unsupported(
    session: Session,
    msg: Msg,
    request: Pending,
    version: Any,
    answer: str,
    error: str,
    **data: Any,
) -> None:
    """MOD-UNSUPPORTED-VERSION: ``msg`` answered a request for an unsupported version other
    than with -32022 (``answer`` and ``error`` say how, before and after the version)."""
    session.report(
        "MOD-UNSUPPORTED-VERSION",
        f"the server answered {request.method[:60]} {answer}for protocol version "
        f"{str(version)[:40]!r}, which it does not support{error}; it must answer -32022 "
        "(UnsupportedProtocolVersion) listing the versions it supports",
        [request.seq, msg.frame],
        requested=str(version)[:100],
        **data,
    )


def _error(session: Session, msg: Msg, request: Pending) -> None:
    code = msg.error_code
    version = requested_version(request.params)
    if code != -32022:
        if unsupported(session, version) and not lacks_meta(request):
            _accepted_unsupported(
                session, msg, request, version, "", f", with error {code}", code=code
            )
        return
    error = msg.obj.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    if not isinstance(data, dict) or "supported" not in data:
        return  # rules/lifecycle.py: data.supported is missing
    listed = data["supported"]
    if not (isinstance(listed, list) and listed and all(isinstance(v, str) for v in listed)):
        session.report(
            "MOD-UNSUPPORTED-VERSION",
            f"the -32022 error's data.supported is {_shown(listed)}; it must list the versions "
            "the server supports as an array of strings",
            [msg.frame],
            cause="supported",
        )
        return
    if isinstance(version, str) and version in listed:
        session.report(
            "MOD-UNSUPPORTED-VERSION",
            f"the server refused protocol version {version[:40]!r} with -32022, yet its "
            "data.supported lists it",
            [request.seq, msg.frame],
            requested=version[:100],
            cause="listed",
        )
        return
    retries = session.state.rule_state.get("version_retries")
    if retries is None:
        retries = session.state.rule_state["version_retries"] = BoundedMap(RETRY_WINDOW)
        session.state.arm("version_retries")  # ``retry`` runs from now on
    retries.put((request.method, _target(request.params)), (tuple(listed[:64]), msg.frame))


# Armed by the -32022 refusal above (registry.py ``armed_by``): the usual
# session, never refused, does not call it.
@rule("MOD-UNSUPPORTED-VERSION", on=REQUEST, armed_by="version_retries")
def retry(session: Session, msg: Msg) -> None:
    """The client's retry after -32022 names a version the server listed."""
    retries = session.state.rule_state.get("version_retries")
    if not retries or msg.direction != C2S:
        return
    found = retries.pop((msg.method, _target(msg.params)), None)
    if found is None:
        return
    listed, refused_at = found
    version = requested_version(msg.params)
    if isinstance(version, str) and version not in listed:
        session.report(
            "MOD-UNSUPPORTED-VERSION",
            f"the client retried {str(msg.method)[:60]} with protocol version {version[:40]!r} "
            f"after the server refused it and listed {', '.join(v[:20] for v in listed[:8])}; "
            "it should pick a version from that list",
            [refused_at, msg.frame],
            requested=version[:100],
            severity="warning",
            blame="client",
        )


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "an empty array" if not value else "an array holding non-strings"
    return "not an array" if value is not None else "null"
