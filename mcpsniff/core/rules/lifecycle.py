"""Era detection, the handshake (LC-*), capability gating (CAP-*) and the
stateless era's rules (MOD-*; their checks are in stateless_era.py).

Era detection follows catalogue §0.2: a client request carrying
``_meta["io.modelcontextprotocol/protocolVersion"]`` is the stateless era
(2026-07-28); ``initialize`` selects the handshake era, and the *server's*
``protocolVersion`` answer is the session version. A first ``server/discover``
is a dual-era probe, never an LC-INIT-FIRST violation (trap 17). A stateless
session never raises handshake findings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import id_key
from mcpsniff.core.model import C2S, ERROR, S2C, SENDER
from mcpsniff.core.protocol import (
    BOTH,
    DIRECTIONS,
    HANDSHAKE,
    KNOWN_METHODS,
    REMOVED_IN_V5,
    STATELESS,
    VERSION_PATTERN,
    direction_for,
    is_known_version,
)
from mcpsniff.core.rules.registry import (
    EVENT,
    NOTIFICATION,
    PAIRING,
    REQUEST,
    RESPONSE,
    rule,
)

# The stateless era's checks, under the names this module's rules call them by.
from mcpsniff.core.rules.stateless_era import removed_request as _removed_request
from mcpsniff.core.rules.stateless_era import stateless_request as _stateless_request
from mcpsniff.core.rules.stateless_era import v5_error as _v5_error
from mcpsniff.core.rules.stateless_era import v5_result as _v5_result
from mcpsniff.core.state import gaps_of

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "LC-INIT-FIRST",
    "LC-INIT-PARAMS",
    "LC-INIT-RESULT",
    "LC-INITIALIZED-MISSING",
    "LC-INITIALIZED-EARLY",
    "LC-INITIALIZED-ORDER",
    "LC-CLIENT-PRE-RESPONSE",
    "LC-SERVER-PRE-INITIALIZED",
    "LC-VERSION-CLIENT",
    "LC-VERSION-SERVER",
    "LC-VERSION-CLIENT-DISCONNECT",
    "LC-INIT-REPEAT",
    "CAP-TOOLS",
    "CAP-PROMPTS",
    "CAP-RESOURCES",
    "CAP-RES-SUBSCRIBE",
    "CAP-LOGGING-SETLEVEL",
    "CAP-LOGGING-NOTIFY",
    "CAP-COMPLETIONS",
    "CAP-LISTCHANGED-SERVER",
    "CAP-RES-UPDATED",
    "CAP-SAMPLING",
    "CAP-ROOTS",
    "CAP-ROOTS-LISTCHANGED",
    "CAP-ELICITATION",
    "CAP-SHAPE",
    "MSG-METHOD-DIRECTION",
    "MSG-METHOD-UNKNOWN",
    "MOD-META-REQUIRED",
    "MOD-CLIENTINFO",
    "MOD-SERVERINFO",
    "MOD-RESULTTYPE",
    "MOD-NO-SERVER-REQUESTS",
    "MOD-MRTR-METHODS",
    "MOD-MRTR-CONTENT",
    "MOD-DISCOVER",
    "MOD-UNSUPPORTED-VERSION",
    "MOD-ERRCODES",
    "MOD-CACHE",
    "MOD-REMOVED",
    "MOD-RES-NOT-FOUND",
)

# Client requests gated by a server capability: method -> (rule, capability path).
_SERVER_GATED: dict[str, tuple[str, tuple[str, ...]]] = {
    "tools/list": ("CAP-TOOLS", ("tools",)),
    "tools/call": ("CAP-TOOLS", ("tools",)),
    "prompts/list": ("CAP-PROMPTS", ("prompts",)),
    "prompts/get": ("CAP-PROMPTS", ("prompts",)),
    "resources/list": ("CAP-RESOURCES", ("resources",)),
    "resources/read": ("CAP-RESOURCES", ("resources",)),
    "resources/templates/list": ("CAP-RESOURCES", ("resources",)),
    "resources/subscribe": ("CAP-RES-SUBSCRIBE", ("resources", "subscribe")),
    "resources/unsubscribe": ("CAP-RES-SUBSCRIBE", ("resources", "subscribe")),
    "logging/setLevel": ("CAP-LOGGING-SETLEVEL", ("logging",)),
    "completion/complete": ("CAP-COMPLETIONS", ("completions",)),
}
# Server notifications gated by a server capability.
_SERVER_NOTIFY_GATED: dict[str, tuple[str, tuple[str, ...]]] = {
    "notifications/message": ("CAP-LOGGING-NOTIFY", ("logging",)),
    "notifications/tools/list_changed": ("CAP-LISTCHANGED-SERVER", ("tools", "listChanged")),
    "notifications/prompts/list_changed": ("CAP-LISTCHANGED-SERVER", ("prompts", "listChanged")),
    "notifications/resources/list_changed": (
        "CAP-LISTCHANGED-SERVER",
        ("resources", "listChanged"),
    ),
    "notifications/resources/updated": ("CAP-RES-UPDATED", ("resources", "subscribe")),
}
# Server requests gated by a client capability.
_CLIENT_GATED: dict[str, tuple[str, tuple[str, ...]]] = {
    "sampling/createMessage": ("CAP-SAMPLING", ("sampling",)),
    "roots/list": ("CAP-ROOTS", ("roots",)),
    "elicitation/create": ("CAP-ELICITATION", ("elicitation",)),
}


def _has_cap(caps: dict[str, Any] | None, path: tuple[str, ...]) -> bool:
    if len(path) == 1:
        # Most gates name one top-level capability, which must be present and not null.
        return isinstance(caps, dict) and caps.get(path[0]) is not None
    node: Any = caps
    for i, part in enumerate(path):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if i == len(path) - 1 and len(path) > 1:
            # Leaf flags such as subscribe/listChanged must be literally true.
            return node is True
    return node is not None


# --------------------------------------------------------------------------- requests


@rule(
    "CAP-COMPLETIONS",
    "CAP-ELICITATION",
    "CAP-LOGGING-SETLEVEL",
    "CAP-PROMPTS",
    "CAP-RES-SUBSCRIBE",
    "CAP-RESOURCES",
    "CAP-ROOTS",
    "CAP-SAMPLING",
    "CAP-SHAPE",
    "CAP-TOOLS",
    "LC-CLIENT-PRE-RESPONSE",
    "LC-INIT-FIRST",
    "LC-INIT-PARAMS",
    "LC-INIT-REPEAT",
    "LC-INITIALIZED-ORDER",
    "LC-SERVER-PRE-INITIALIZED",
    "LC-VERSION-CLIENT",
    "MOD-CLIENTINFO",
    "MOD-META-REQUIRED",
    "MOD-NO-SERVER-REQUESTS",
    "MOD-REMOVED",
    "MSG-METHOD-DIRECTION",
    "MSG-METHOD-UNKNOWN",
    on=REQUEST,
)
def on_request(session: Session, msg: Msg) -> None:
    """Lifecycle, capability and era checks for a request."""
    state = session.state
    method = msg.method or ""
    if msg.direction == C2S:
        if method == "initialize":
            _initialize_request(session, msg)
        elif not state.first_c2s_seen:
            _first_message(session, msg)
        state.first_c2s_seen = True
        if state.era == STATELESS:
            if _legacy_offer(session, msg):
                # A legacy initialize carries no 2026-07-28 _meta. After a modern request
                # failed it is the fallback streamable-http.mdx § Backward Compatibility
                # describes; to a server that already answered one, a removed method.
                if state.lifecycle.modern_answered:
                    _removed_request(session, msg)
            else:
                # The era is already decided (core/session/scoping.py); only its rules
                # read _meta.
                _stateless_request(session, msg)
        else:
            # Once initialize has an answer and initialized came, only the
            # capability gate can fire; the one-capability gate declared is
            # checked here (``_has_cap``'s first case): most requests stop there.
            lc = state.lifecycle
            gate = _SERVER_GATED.get(method)
            caps = state.server_caps
            if (
                lc.initialized_seq is None
                or lc.init_ok is None
                or (
                    gate is not None
                    and caps is not None
                    and not (
                        len(gate[1]) == 1
                        and type(caps) is dict
                        and caps.get(gate[1][0]) is not None
                    )
                )
            ):
                _handshake_client_request(session, msg)
    else:
        if state.era == STATELESS:
            session.report(
                "MOD-NO-SERVER-REQUESTS",
                f'the server sent a JSON-RPC request ("{method}"); in 2026-07-28 servers never '
                "send requests (they return inputRequests in an input_required result)",
                [msg.frame],
                method=method,
            )
        else:
            _handshake_server_request(session, msg)
    # ``_method_direction``'s table, inlined: a method the version lets this side send.
    known = DIRECTIONS.get(method)
    version = state.version
    if known is not None and version in known:
        allowed = known[version]
        if allowed == BOTH or allowed == msg.direction:
            return
    _method_direction(session, msg)


def _legacy_offer(session: Session, msg: Msg) -> bool:
    """Whether ``msg`` is an initialize offered on a stateless connection (no _meta due)."""
    lc = session.state.lifecycle
    return lc.offered_from_stateless and msg.frame == lc.init_seq


def _init_fields(
    session: Session, msg: Msg, rule_id: str, what: str, obj: dict[str, Any], info_key: str
) -> None:
    """The fields both initialize params and result carry: a version, capabilities, peer info."""
    problems = []
    if not isinstance(obj.get("protocolVersion"), str):
        problems.append("protocolVersion (string)")
    if not isinstance(obj.get("capabilities"), dict):
        problems.append("capabilities (object)")
    info = obj.get(info_key)
    if not (
        isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    ):
        problems.append(f"{info_key} {{name, version}} (strings)")
    if what == "result" and "instructions" in obj and not isinstance(obj["instructions"], str):
        problems.append("instructions (string)")
    if problems:
        session.report(
            rule_id,
            f"the initialize {what} lacks or mistypes " + ", ".join(problems),
            [msg.frame],
            missing=problems,
        )


def _first_message(session: Session, msg: Msg) -> None:
    state = session.state
    if state.era == STATELESS:
        return
    if msg.method == "server/discover":
        # A dual-era client's probe (MOD-STDIO-PROBE), not a handshake violation.
        state.lifecycle.probe_seen = True
        return
    if _gap_hides(session, C2S, None, "LC-INIT-FIRST"):
        return  # the client's initialize may be in the gap before this first message
    session.report(
        "LC-INIT-FIRST",
        f'the client\'s first message is "{msg.method}", but a session must start with an '
        "initialize request",
        [msg.frame],
        method=msg.method,
    )


def _initialize_request(session: Session, msg: Msg) -> None:
    state = session.state
    lc = state.lifecycle
    if state.era == STATELESS:
        # "A server that wishes to support both legacy clients [...] and modern
        # clients [...] MAY implement both behaviors" (2026-07-28 basic/versioning.mdx
        # § Backward Compatibility with Initialization-Based Versions); a modern-only
        # one answers initialize with 404 and -32601. So the server's answer, not the
        # request, decides whether this connection turns to the handshake era: until
        # then its ids still pair as stateless ones (_initialize_response).
        lc.offered_from_stateless = True
    else:
        state.era = HANDSHAKE
        state.settle_era()
    if lc.init_seq is not None:
        session.report(
            "LC-INIT-REPEAT",
            f"the client sent a second initialize (first at seq {lc.init_seq}) in the same session",
            [lc.init_seq, msg.frame],
        )
        return
    lc.init_seq = msg.frame
    lc.init_key = id_key(msg.id)
    params = msg.params or {}
    version = params.get("protocolVersion")
    lc.requested_version = version
    _init_fields(session, msg, "LC-INIT-PARAMS", "request", params, "clientInfo")
    if isinstance(version, str) and not VERSION_PATTERN.match(version):
        session.report(
            "LC-VERSION-CLIENT",
            f'the client asked for protocolVersion "{version}", which is not a YYYY-MM-DD '
            "version string",
            [msg.frame],
            requested=version,
        )
    caps = params.get("capabilities")
    if isinstance(caps, dict):
        state.client_caps = caps
        _cap_shape(session, msg, caps, "client")


def _gap_hides(session: Session, direction: str, after: int | None, rule_id: str) -> bool:
    """Whether a capture gap in ``direction`` after seq ``after`` may hold the message
    whose absence ``rule_id`` would report (then it is excused and counted)."""
    gaps = gaps_of(session.state, session.shared, session.key)
    if gaps is None or not gaps.since(direction, after):
        return False
    gaps.excuse(rule_id)
    return True


def _handshake_client_request(session: Session, msg: Msg) -> None:
    state = session.state
    lc = state.lifecycle
    method = msg.method
    if method in ("initialize", "ping") or lc.init_seq is None:
        pass
    elif lc.init_ok is None and not _gap_hides(session, S2C, lc.init_seq, "LC-CLIENT-PRE-RESPONSE"):
        # (Unless the server's answer to initialize may be in a gap.)
        session.report(
            "LC-CLIENT-PRE-RESPONSE",
            f'the client sent "{method}" before the server answered initialize; only pings '
            "should be sent until then",
            [lc.init_seq, msg.frame],
            method=method,
        )
    elif (
        lc.init_ok
        and lc.initialized_seq is None
        and not lc.order_reported
        and not _gap_hides(session, C2S, lc.init_seq, "LC-INITIALIZED-ORDER")
    ):
        lc.order_reported = True
        session.report(
            "LC-INITIALIZED-ORDER",
            f'the client sent "{method}" before notifications/initialized; initialized '
            "signals that the client is ready for normal operation",
            [msg.frame],
            method=method,
        )
    gate = _SERVER_GATED.get(method or "")
    if gate is not None and state.server_caps is not None:
        rule, path = gate
        if method == "completion/complete" and state.version == "2024-11-05":
            return
        if not _has_cap(state.server_caps, path):
            session.report(
                rule,
                f'the client called "{method}", but the server did not declare the '
                f"{'.'.join(path)} capability",
                [msg.frame],
                method=method,
                capability=".".join(path),
            )


def _handshake_server_request(session: Session, msg: Msg) -> None:
    state = session.state
    lc = state.lifecycle
    method = msg.method or ""
    if (
        method != "ping"
        and lc.init_seq is not None
        and lc.initialized_seq is None
        and not _gap_hides(session, C2S, lc.init_seq, "LC-SERVER-PRE-INITIALIZED")
    ):
        session.report(
            "LC-SERVER-PRE-INITIALIZED",
            f'the server sent request "{method}" before the client sent '
            "notifications/initialized; only pings and logging are expected before then",
            [msg.frame],
            method=method,
        )
    gate = _CLIENT_GATED.get(method)
    if gate is not None and state.client_caps is not None:
        rule, path = gate
        if not _has_cap(state.client_caps, path):
            session.report(
                rule,
                f'the server sent "{method}", but the client did not declare the '
                f"{'.'.join(path)} capability",
                [msg.frame],
                method=method,
                capability=".".join(path),
            )


def _method_direction(session: Session, msg: Msg) -> None:
    method = msg.method or ""
    version = session.state.version
    known = DIRECTIONS.get(method)  # direction_for's table, inlined for every message
    allowed = known[version] if known is not None and version in known else None
    if allowed is None:
        allowed = direction_for(method, version)
    if allowed is None:
        if method in KNOWN_METHODS:
            if session.state.era == STATELESS and method in REMOVED_IN_V5:
                return  # reported as MOD-REMOVED
            session.report(
                "MSG-METHOD-DIRECTION",
                f'"{method}" does not exist in protocol version {session.state.version}',
                [msg.frame],
                method=method,
            )
        elif not method.startswith(("notifications/", "$/")) or "/" not in method:
            session.report(
                "MSG-METHOD-UNKNOWN",
                f'"{method}" is not an MCP method; expect the receiver to answer -32601',
                [msg.frame],
                method=method,
            )
        return
    if allowed != BOTH and allowed != msg.direction:
        session.report(
            "MSG-METHOD-DIRECTION",
            f'the {SENDER[msg.direction]} sent "{method}", which only the '
            f"{SENDER[allowed]} may send",
            [msg.frame],
            method=method,
            allowed=allowed,
        )


def _cap_shape(session: Session, msg: Msg, caps: dict[str, Any], side: str) -> None:
    for name, value in caps.items():
        if name == "experimental":
            ok = isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
        else:
            ok = isinstance(value, dict) and all(
                isinstance(value[flag], bool)
                for flag in ("listChanged", "subscribe")
                if flag in value
            )
        if not ok:
            session.report(
                "CAP-SHAPE",
                f"the {side} capability {name!r} is malformed: capabilities are objects and "
                "listChanged/subscribe are booleans",
                [msg.frame],
                capability=name,
            )


# --------------------------------------------------------------------------- notifications


@rule(
    "CAP-LISTCHANGED-SERVER",
    "CAP-LOGGING-NOTIFY",
    "CAP-RES-UPDATED",
    "CAP-ROOTS-LISTCHANGED",
    "LC-INIT-FIRST",
    "LC-INITIALIZED-EARLY",
    "LC-VERSION-CLIENT-DISCONNECT",
    "MSG-METHOD-DIRECTION",
    "MSG-METHOD-UNKNOWN",
    on=NOTIFICATION,
)
def on_notification(session: Session, msg: Msg) -> None:
    """Lifecycle and capability checks for a notification."""
    state = session.state
    method = msg.method or ""
    lc = state.lifecycle
    if msg.direction == C2S:
        if not state.first_c2s_seen:
            if state.era is None and method != "notifications/initialized":
                _first_message(session, msg)
            elif state.era is None and not _gap_hides(session, C2S, None, "LC-INIT-FIRST"):
                session.report(
                    "LC-INIT-FIRST",
                    "the client's first message is notifications/initialized, but a session "
                    "must start with an initialize request",
                    [msg.frame],
                    method=method,
                )
            state.first_c2s_seen = True
        if state.era == STATELESS:
            _method_direction(session, msg)
            return
        if method == "notifications/initialized":
            if lc.initialized_seq is None:
                lc.initialized_seq = msg.frame
                if lc.init_seq is not None and not lc.init_ok:
                    session.report(
                        "LC-INITIALIZED-EARLY",
                        "the client sent notifications/initialized "
                        + (
                            "before the initialize response"
                            if lc.init_ok is None
                            else "after initialize failed"
                        ),
                        [lc.init_seq, msg.frame],
                    )
                _version_disconnect(session, msg)
        elif method == "notifications/roots/list_changed" and state.client_caps is not None:
            if not _has_cap(state.client_caps, ("roots", "listChanged")):
                session.report(
                    "CAP-ROOTS-LISTCHANGED",
                    "the client sent notifications/roots/list_changed without declaring "
                    "roots.listChanged",
                    [msg.frame],
                )
    else:
        gate = _SERVER_NOTIFY_GATED.get(method)
        caps = state.server_caps
        if gate is not None and caps is not None:
            rule, path = gate
            # ``_has_cap``'s first case asked here, as ``on_request`` does: a gate
            # of one declared capability (every log message's: logging) passes
            # without the call.
            if not (
                len(path) == 1 and type(caps) is dict and caps.get(path[0]) is not None
            ) and not _has_cap(caps, path):
                session.report(
                    rule,
                    f'the server sent "{method}" without declaring the {".".join(path)} capability',
                    [msg.frame],
                    method=method,
                    capability=".".join(path),
                )
    # ``_method_direction``'s table, inlined as in ``on_request``: a method the
    # version lets this side send.
    known = DIRECTIONS.get(method)
    version = state.version
    if known is not None and version in known:
        allowed = known[version]
        if allowed == BOTH or allowed == msg.direction:
            return
    _method_direction(session, msg)


def _version_disconnect(session: Session, msg: Msg) -> None:
    lc = session.state.lifecycle
    version = session.state.version
    if lc.requested_version is not None and version is not None and version != lc.requested_version:
        session.report(
            "LC-VERSION-CLIENT-DISCONNECT",
            f'the client asked for "{lc.requested_version}", the server answered '
            f'"{version}", and the client carried on; it should disconnect if it does not '
            "support the server's version",
            [lc.init_seq or msg.frame, msg.frame],
            requested=lc.requested_version,
            negotiated=version,
            severity="info",
        )


# --------------------------------------------------------------------------- responses


# The answers are judged by two rules: the stateless era's result rules, for
# every method but only in a 2026-07-28 session (``modern``: a legacy session's
# dispatch leaves them out), and the handshake's, for initialize alone. The
# stateless one runs first: it must see the initialize answer before
# ``_initialize_response`` settles the handshake (a refused one forgets init_seq).
@rule(
    "MOD-CACHE",
    "MOD-DISCOVER",
    "MOD-ERRCODES",
    "MOD-MRTR-CONTENT",
    "MOD-MRTR-METHODS",
    "MOD-NO-SERVER-REQUESTS",
    "MOD-RES-NOT-FOUND",
    "MOD-RESULTTYPE",
    "MOD-SERVERINFO",
    "MOD-UNSUPPORTED-VERSION",
    on=RESPONSE,
    modern=True,
)
def on_stateless_response(session: Session, msg: Msg) -> None:
    """The stateless era's result rules (the handshake's answer is ``on_initialize_response``'s)."""
    state = session.state
    if state.era != STATELESS:
        return
    request = msg.request
    if msg.direction == C2S:
        if request is not None:
            session.report(
                "MOD-NO-SERVER-REQUESTS",
                "the client sent a JSON-RPC response; in 2026-07-28 clients never do",
                [msg.frame],
            )
        return
    if request is None:
        if msg.kind == ERROR:
            _v5_error(session, msg)
        return
    if request.method == "initialize" and request.seq == state.lifecycle.init_seq:
        return  # the handshake's answer
    if msg.kind == ERROR:
        _v5_error(session, msg)
    else:
        state.lifecycle.modern_answered = True
        _v5_result(session, msg, request.method)


@rule("CAP-SHAPE", "LC-INIT-RESULT", "LC-VERSION-SERVER", on=RESPONSE, methods=("initialize",))
def on_initialize_response(session: Session, msg: Msg) -> None:
    """The server's answer to the session's initialize request."""
    request = msg.request
    if (
        msg.direction != C2S
        and request is not None
        and request.seq == session.state.lifecycle.init_seq
    ):
        _initialize_response(session, msg)


@rule("CAP-SHAPE", "LC-INIT-RESULT", "LC-VERSION-SERVER", on=PAIRING, keys=("late-initialize",))
def late_initialize_response(session: Session, msg: Msg) -> None:
    """The initialize result that came after the client cancelled initialize.

    Cancelling initialize is the client's mistake (CANCEL-INITIALIZE); the
    result still settles the version and capabilities the session goes on
    with, so the handshake is judged by it rather than as if none came (a
    false LC-INITIALIZED-EARLY on the client's notifications/initialized).
    """
    _initialize_response(session, msg)


def _initialize_response(session: Session, msg: Msg) -> None:
    state = session.state
    lc = state.lifecycle
    if lc.offered_from_stateless:
        lc.offered_from_stateless = False
        if msg.kind == ERROR or not isinstance(msg.obj.get("result"), dict):
            # A modern server refused the legacy handshake: the connection stays
            # stateless, and no handshake is pending (nothing waits for initialized).
            lc.init_seq = lc.init_key = lc.requested_version = None
            return
        state.era = HANDSHAKE
        state.version = None
        state.settle_era()
    lc.init_response_seq = msg.frame
    if msg.kind == ERROR:
        lc.init_ok = False
        return
    result = msg.obj.get("result")
    if not isinstance(result, dict):
        lc.init_ok = False
        return
    lc.init_ok = True
    version = result.get("protocolVersion")
    _init_fields(session, msg, "LC-INIT-RESULT", "result", result, "serverInfo")
    if isinstance(version, str):
        if is_known_version(version):
            state.version = version
            state.settle_era()
        else:
            session.report(
                "LC-VERSION-SERVER",
                f'the server answered protocolVersion "{version}", which is not a published '
                "MCP version",
                [msg.frame],
                negotiated=version,
                severity="warning",
            )
    caps = result.get("capabilities")
    if isinstance(caps, dict):
        state.server_caps = caps
        _cap_shape(session, msg, caps, "server")


# --------------------------------------------------------------------------- end


@rule("LC-INITIALIZED-MISSING", on=EVENT, keys=("session-end",))
def end_of_session(session: Session, event: EventRecord) -> None:
    """Handshake duties that can only be judged once the session is over."""
    state = session.state
    lc = state.lifecycle
    if state.era == STATELESS:
        return
    if (
        lc.init_ok
        and lc.initialized_seq is None
        and not _gap_hides(session, C2S, lc.init_seq, "LC-INITIALIZED-MISSING")
    ):
        seqs = [s for s in (lc.init_seq, lc.init_response_seq) if s is not None]
        session.report(
            "LC-INITIALIZED-MISSING",
            "the server answered initialize successfully, but the client never sent "
            "notifications/initialized; the server may refuse or ignore later requests",
            seqs,
        )
