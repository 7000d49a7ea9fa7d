"""The stateless era's message rules (2026-07-28, MOD-*).

2026-07-28 has no handshake: every client request carries its version,
capabilities and client info in ``_meta``, every result says its
``resultType`` and carries the server info, cacheable results carry cache
hints, and the error codes the era removed or added are checked here.
``lifecycle.py``'s rules, which decide the era, call these for a stateless
session's requests, results and errors: this module registers no rule of its
own (so it is not in ``rules.MODULES``), and the rules run where lifecycle.py
registers them. ``lacks_meta`` (the required ``_meta`` a request lacks) also
serves negotiation.py and http_status_2026.py, which judge the server's answer
to such a request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpsniff.core.model import SENDER
from mcpsniff.core.protocol import (
    META_CLIENT_CAPS,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_VERSION,
    REMOVED_IN_V5,
)

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg, Pending

#: Results that must carry cache hints in 2026-07-28 (MOD-CACHE).
_CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
_MRTR_METHODS = frozenset({"prompts/get", "resources/read", "tools/call"})
_V5_CODES = {-32020, -32021, -32022}


def lacks_meta(request: Pending | Msg) -> list[str]:
    """The required ``_meta`` fields a 2026-07-28 request lacks (basic/index.mdx § _meta)."""
    params = request.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return [META_VERSION, META_CLIENT_CAPS]
    missing = []
    if not isinstance(meta.get(META_VERSION), str):
        missing.append(META_VERSION)
    if not isinstance(meta.get(META_CLIENT_CAPS), dict):
        missing.append(META_CLIENT_CAPS)
    return missing


def stateless_request(session: Session, msg: Msg) -> None:
    method = msg.method or ""
    missing = lacks_meta(msg)
    if missing:
        session.report(
            "MOD-META-REQUIRED",
            f'the client request "{method}" lacks _meta '
            + " and ".join(missing)
            + "; every 2026-07-28 request must carry them",
            [msg.frame],
            missing=missing,
        )
    elif META_CLIENT_INFO not in msg.params["_meta"]:  # an object: lacks_meta says so
        session.report(
            "MOD-CLIENTINFO",
            f'the client request "{method}" carries no _meta {META_CLIENT_INFO}',
            [msg.frame],
        )
    removed_request(session, msg)


def report_removed(session: Session, msg: Msg, removed: frozenset[str]) -> None:
    """MOD-REMOVED when ``msg``'s method is one of ``removed``, from whichever side sent it."""
    method = msg.method or ""
    if method in removed:
        session.report(
            "MOD-REMOVED",
            f'the {SENDER[msg.direction]} sent "{method}", which 2026-07-28 removed',
            [msg.frame],
            method=method,
            severity="warning",
        )


def removed_request(session: Session, msg: Msg) -> None:
    """MOD-REMOVED for a client request 2026-07-28 no longer has."""
    report_removed(session, msg, REMOVED_IN_V5)


def v5_result(session: Session, msg: Msg, method: str) -> None:
    result = msg.obj.get("result")
    if not isinstance(result, dict):
        return
    result_type = result.get("resultType")
    # "task" is the tasks extension's (rules/tasks_extension.py judges it).
    if result_type not in ("complete", "input_required", "task"):
        session.report(
            "MOD-RESULTTYPE",
            f'the result of "{method}" has resultType {result_type!r}; 2026-07-28 results '
            'carry "complete" or "input_required"',
            [msg.frame],
            method=method,
            result_type=result_type,
        )
    meta = result.get("_meta")
    info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    carries: str | None = None  # what the result carries instead of the server's identity
    if info is None:
        carries = f"no _meta {META_SERVER_INFO}"
    elif not (isinstance(info, dict) and info.get("name") and info.get("version")):
        # "Servers SHOULD identify themselves" (basic/index.mdx): an Implementation
        # with an empty name or version (a server built without one) names nothing.
        carries = f"_meta {META_SERVER_INFO} without a name and a version that identify the server"
    if carries is not None:
        session.report(
            "MOD-SERVERINFO",
            f'the result of "{method}" carries {carries}',
            [msg.frame],
            method=method,
        )
    if result_type == "input_required":
        if method not in _MRTR_METHODS:
            session.report(
                "MOD-MRTR-METHODS",
                f'the server answered "{method}" with input_required, which only prompts/get, '
                "resources/read and tools/call may use",
                [msg.frame],
                method=method,
            )
        if "inputRequests" not in result and "requestState" not in result:
            session.report(
                "MOD-MRTR-CONTENT",
                "an input_required result carries neither inputRequests nor requestState",
                [msg.frame],
            )
        return
    if method in _CACHEABLE and result_type == "complete":
        ttl = result.get("ttlMs")
        scope = result.get("cacheScope")
        if not (isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0) or scope not in (
            "public",
            "private",
        ):
            session.report(
                "MOD-CACHE",
                f'the result of "{method}" lacks valid cache hints (ttlMs integer >= 0 and '
                'cacheScope "public" or "private")',
                [msg.frame],
                method=method,
                ttlMs=ttl,
                cacheScope=scope,
            )
    if method == "server/discover":
        problems = []
        if not isinstance(result.get("supportedVersions"), list):
            problems.append("supportedVersions (array)")
        if not isinstance(result.get("capabilities"), dict):
            problems.append("capabilities (object)")
        if problems:
            session.report(
                "MOD-DISCOVER",
                "the server/discover result lacks " + ", ".join(problems),
                [msg.frame],
                missing=problems,
            )
        caps = result.get("capabilities")
        if isinstance(caps, dict):
            session.state.server_caps = caps


def v5_error(session: Session, msg: Msg) -> None:
    error = msg.obj.get("error")
    if not isinstance(error, dict):
        return
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return
    if code in (-32002, -32042) or (-32099 <= code <= -32020 and code not in _V5_CODES):
        session.report(
            "MOD-ERRCODES",
            f"the server used error code {code}, which 2026-07-28 does not allow",
            [msg.frame],
            code=code,
        )
    if code == -32002 and msg.request is not None and msg.request.method == "resources/read":
        session.report(
            "MOD-RES-NOT-FOUND",
            "a missing resource must be reported with -32602 in 2026-07-28, not -32002",
            [msg.frame],
        )
    if code == -32022:
        data = error.get("data")
        if not (isinstance(data, dict) and "supported" in data and "requested" in data):
            session.report(
                "MOD-UNSUPPORTED-VERSION",
                "an UnsupportedProtocolVersion error (-32022) must carry data.supported and "
                "data.requested",
                [msg.frame],
            )
