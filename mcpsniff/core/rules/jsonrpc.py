"""JSON-RPC 2.0 structure (JR-*) and MCP base-message rules (MSG-*).

``check_message`` runs before correlation on every message whose envelope the
session did not classify as plain (``core/session/classification.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import id_value, show_id
from mcpsniff.core.jsontypes import json_type
from mcpsniff.core.lazy_pattern import lazy
from mcpsniff.core.model import CALLS, ERROR, OPPOSITE, REPLIES, REQUEST, SENDER
from mcpsniff.core.protocol import V1, V3, version_at_least
from mcpsniff.core.rules.registry import FRAME, MESSAGE, PAIRING, rule
from mcpsniff.core.state import gaps_of

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Answered, BatchInfo, Msg, Pending

RULES = (
    "JR-TOPLEVEL",
    "JR-VERSION",
    "JR-METHOD-TYPE",
    "JR-METHOD-RPC-RESERVED",
    "JR-PARAMS-STRUCTURED",
    "JR-ID-TYPE",
    "JR-RESULT-XOR-ERROR",
    "JR-ERROR-OBJECT",
    "JR-ERROR-CODE-INT",
    "JR-ERROR-MSG-SHORT",
    "JR-ERROR-RESERVED",
    "JR-ERROR-SEMANTICS",
    "JR-MEMBER-CASE",
    "JR-NOTIF-NO-REPLY",
    "JR-RESP-ID",
    "JR-BATCH-EMPTY",
    "JR-BATCH-RESP-COUNT",
    "JR-BATCH-ALL-NOTIF",
    "JR-PARSE",
    "MSG-ID-TYPE",
    "MSG-ID-NOT-NULL",
    "MSG-ID-REUSE",
    "MSG-ID-INFLIGHT",
    "MSG-NOTIF-NO-ID",
    "MSG-PARAMS-OBJECT",
    "MSG-RESULT-OBJECT",
    "MSG-RESP-XOR",
    "MSG-ERR-FIELDS",
    "MSG-ERR-ID",
    "MSG-BATCH-V1",
    "MSG-BATCH-V2-SHAPE",
    "MSG-BATCH-V2-INIT",
    "MSG-BATCH-REMOVED",
    "MSG-META-KEYS",
    "MSG-META-PROGRESS",
    "STDIO-STDOUT-CLEAN",
    "STDIO-STDIN-CLEAN",
    "STDIO-FRAMING",
    "STDIO-UTF8",
)

_MEMBERS = {"jsonrpc", "id", "method", "params", "result", "error"}
_PREDEFINED = {-32700, -32600, -32601, -32602, -32603}
_NULL_ID_CODES = {-32700, -32600}

# MSG-META-KEYS grammar (S/2025-06-18/basic/index.mdx § General fields > _meta):
# an optional prefix of dot-separated labels ending in "/", each label starting
# with a letter and ending with a letter or digit; then a name that is empty or
# starts and ends alphanumeric with [A-Za-z0-9._-] inside.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_META_KEY = lazy(rf"^(?:{_LABEL}(?:\.{_LABEL})*/)?(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?$")
#: OpenTelemetry keys allowed in 2026-07-28 (S/2026-07-28/basic/index.mdx § _meta).
_OTEL_KEYS = {"traceparent", "tracestate", "baggage"}
#: Grammar verdicts for _meta keys seen so far: the same few keys (progressToken)
#: come with most requests, and the regex is the costly part of the check.
_META_KEY_OK: dict[str, bool] = {}
_META_KEY_CACHE_SIZE = 4096


@rule(
    "JR-ERROR-CODE-INT",
    "JR-ERROR-MSG-SHORT",
    "JR-ERROR-OBJECT",
    "JR-ERROR-RESERVED",
    "JR-ID-TYPE",
    "JR-MEMBER-CASE",
    "JR-METHOD-RPC-RESERVED",
    "JR-METHOD-TYPE",
    "JR-PARAMS-STRUCTURED",
    "JR-RESP-ID",
    "JR-RESULT-XOR-ERROR",
    "JR-TOPLEVEL",
    "JR-VERSION",
    "MSG-ERR-FIELDS",
    "MSG-ID-NOT-NULL",
    "MSG-ID-TYPE",
    "MSG-META-KEYS",
    "MSG-META-PROGRESS",
    "MSG-NOTIF-NO-ID",
    "MSG-PARAMS-OBJECT",
    "MSG-RESP-XOR",
    "MSG-RESULT-OBJECT",
    on=MESSAGE,
)
def check_message(session: Session, msg: Msg) -> None:
    """Structural checks (JSON-RPC §4, §5, §5.1) of an object whose envelope is not plain.

    ``core/session/classification.py`` classifies the envelope as it classifies the message:
    the plain request, notification and result (exactly the members of their
    kind, well typed, "jsonrpc": "2.0") give nothing to report and never get here.
    """
    obj = msg.obj
    kind = msg.kind
    if obj.get("jsonrpc") != "2.0":
        session.report(
            "JR-VERSION",
            f'{SENDER[msg.direction]} sent a message whose "jsonrpc" member is '
            f"{_shown(obj.get('jsonrpc')) if 'jsonrpc' in obj else 'missing'}; it must be "
            'exactly "2.0"',
            [msg.frame],
            value=obj.get("jsonrpc"),
        )
    # The sender and the seq list are built only when a report needs them:
    # this function runs for every message and almost never reports.
    if not obj.keys() <= _MEMBERS:
        _member_case(session, msg)
    if "method" in obj:
        method = msg.method  # the "method" member when it is a string, else None
        if method is None:
            session.report(
                "JR-METHOD-TYPE",
                f'{SENDER[msg.direction]} sent a "method" that is a {json_type(obj["method"])}, '
                "not a string",
                [msg.frame],
            )
        elif method.startswith("rpc."):
            session.report(
                "JR-METHOD-RPC-RESERVED",
                f'{SENDER[msg.direction]} used method "{method}": names starting with "rpc." '
                "are reserved",
                [msg.frame],
                method=method,
            )
        if "result" in obj or "error" in obj:
            session.report(
                "JR-RESULT-XOR-ERROR",
                f"{SENDER[msg.direction]} sent an object with both a method and a result/error; "
                "it is neither a valid request nor a valid response",
                [msg.frame],
            )
        params = msg.params  # the "params" member when it is an object, else None
        if params is not None:
            if "_meta" in params:
                _check_meta(session, msg, params["_meta"])
        elif "params" in obj:
            if isinstance(obj["params"], list):
                session.report(
                    "MSG-PARAMS-OBJECT",
                    f"{SENDER[msg.direction]} sent positional (array) params; MCP params are "
                    "always an object",
                    [msg.frame],
                    method=method,
                )
            else:
                session.report(
                    "JR-PARAMS-STRUCTURED",
                    f'{SENDER[msg.direction]} sent "params" as a {json_type(obj["params"])}; it '
                    "must be an object or array when present",
                    [msg.frame],
                )
        if kind == REQUEST:
            ident = msg.id
            if type(ident) is not int and type(ident) is not str:
                _check_request_id(session, msg)
            if method is not None and method.startswith("notifications/"):
                session.report(
                    "MSG-NOTIF-NO-ID",
                    f'{SENDER[msg.direction]} sent "{method}" with an id; notifications carry '
                    "no id, so this is a request that expects a response",
                    [msg.frame],
                    method=method,
                )
    elif kind in REPLIES:
        _check_response(session, msg)
    else:
        session.report(
            "JR-TOPLEVEL",
            f"{SENDER[msg.direction]} sent an object with neither a method nor a result/error: "
            "it is not a JSON-RPC request, notification or response",
            [msg.frame],
            keys=sorted(obj)[:10],
        )


def _check_request_id(session: Session, msg: Msg) -> None:
    value = msg.id
    if type(value) is int or type(value) is str:
        return  # the common, valid case
    seqs = [msg.frame]
    sender = SENDER[msg.direction]
    if value is None:
        # JSON-RPC §4 only discourages null ids; MCP forbids them (basic/index.mdx
        # § Requests: "Unlike base JSON-RPC, the ID MUST NOT be null").
        session.report(
            "MSG-ID-NOT-NULL",
            f'{sender} sent request "{msg.method}" with "id": null; this is a request, not a '
            "notification, and MCP forbids null ids",
            seqs,
            method=msg.method,
        )
    elif isinstance(value, bool) or not isinstance(value, str | int | float):
        session.report(
            "JR-ID-TYPE",
            f"{sender} sent a request id that is a {json_type(value)}; ids must be strings "
            "or numbers",
            seqs,
            id=value,
        )
    elif isinstance(value, float):
        session.report(
            "MSG-ID-TYPE",
            f"{sender} sent request id {value}, a fractional number; MCP ids are strings or "
            "integers",
            seqs,
            id=value,
        )


def _check_response(session: Session, msg: Msg) -> None:
    obj = msg.obj
    seqs = [msg.frame]
    sender = SENDER[msg.direction]
    if "result" in obj and "error" in obj:
        session.report(
            "MSG-RESP-XOR",
            f"{sender} sent a response with both result and error; exactly one is allowed",
            seqs,
        )
    if "id" not in obj:
        if "error" not in obj:
            session.report(
                "JR-RESP-ID",
                f"{sender} sent a response without an id; a response must carry the id of "
                "the request it answers",
                seqs,
                cause="missing-id",
            )
    if "result" in obj and not isinstance(obj["result"], dict):
        session.report(
            "MSG-RESULT-OBJECT",
            f"{sender} sent a result that is a {json_type(obj['result'])}; MCP results are objects",
            seqs,
        )
    if "error" in obj:
        error = obj["error"]
        if not isinstance(error, dict):
            session.report(
                "JR-ERROR-OBJECT",
                f'{sender} sent an "error" that is a {json_type(error)}, not an object with code '
                "and message",
                seqs,
            )
            return
        code = error.get("code")
        message = error.get("message")
        if "code" not in error or "message" not in error:
            session.report(
                "MSG-ERR-FIELDS",
                f"{sender} sent an error object without "
                f"{'code' if 'code' not in error else 'message'}",
                seqs,
            )
        if "code" in error and (isinstance(code, bool) or not isinstance(code, int)):
            session.report(
                "JR-ERROR-CODE-INT",
                f"{sender} sent error code {code!r}; error codes must be integers",
                seqs,
                code=code,
            )
        if "message" in error and not isinstance(message, str):
            session.report(
                "JR-ERROR-OBJECT",
                f'{sender} sent an error "message" that is a {json_type(message)}, not a string',
                seqs,
            )
        elif isinstance(message, str) and ("\n" in message or len(message) > 200):
            session.report(
                "JR-ERROR-MSG-SHORT",
                f"{sender} sent an error message of {len(message)} characters"
                f"{' with line breaks' if chr(10) in message else ''}; it should be one concise "
                "sentence (put details in error.data)",
                seqs,
            )
        if isinstance(code, int) and not isinstance(code, bool):
            if -32768 <= code <= -32000 and code not in _PREDEFINED and not code >= -32099:
                session.report(
                    "JR-ERROR-RESERVED",
                    f"{sender} used error code {code}, which JSON-RPC reserves for future use",
                    seqs,
                    code=code,
                )


@rule("MSG-ERR-ID", "JR-NOTIF-NO-REPLY", on=PAIRING, keys=("null-id",))
def null_id_response(session: Session, msg: Msg) -> None:
    """A response with a null or absent id that answers no bad frame: a mistake.

    JSON-RPC §5: "If there was an error in detecting the id in the Request object
    (e.g. Parse error/Invalid Request), it MUST be Null." A -32700/-32600 with a
    null id is linked to the bad frame it answers by the session (and judged by
    rules/replies.py); with no bad frame waiting, it is nobody's reply but fine.
    """
    code = msg.error_code
    sender = SENDER[msg.direction]
    if msg.kind == ERROR and type(code) is int and code in _NULL_ID_CODES:
        return
    if msg.kind == ERROR:
        if msg.has_id or version_at_least(session.state.version, "2025-11-25"):
            session.report(
                "MSG-ERR-ID",
                f"{sender} sent error {code} with a null id; only errors for requests whose id "
                "could not be read (-32700, -32600) may omit it",
                [msg.frame],
                code=code,
            )
        return
    if msg.has_id:
        session.report(
            "JR-NOTIF-NO-REPLY",
            f"{sender} sent a result with a null id, which looks like a reply to a "
            "notification; notifications must never be answered",
            [msg.frame],
        )


def _member_case(session: Session, msg: Msg) -> None:
    for key in msg.obj:
        if key not in _MEMBERS and key.lower() in _MEMBERS:
            session.report(
                "JR-MEMBER-CASE",
                f'{SENDER[msg.direction]} sent member "{key}"; member names are case-sensitive, '
                f'so it is not "{key.lower()}"',
                [msg.frame],
                member=key,
            )


def _check_meta(session: Session, msg: Msg, meta: Any) -> None:
    if not isinstance(meta, dict):
        return
    if "progressToken" in meta:
        token = meta["progressToken"]
        if isinstance(token, bool) or not isinstance(token, str | int | float):
            session.report(
                "MSG-META-PROGRESS",
                f"{SENDER[msg.direction]} sent a progressToken that is a {json_type(token)}; it "
                "must be a string or an integer",
                [msg.frame],
            )
    if not version_at_least(session.state.version, V3):
        return
    for key in meta:
        ok = _META_KEY_OK.get(key)
        if ok is None:
            ok = isinstance(key, str) and _META_KEY.match(key) is not None
            if len(_META_KEY_OK) < _META_KEY_CACHE_SIZE:
                _META_KEY_OK[key] = ok
        if not ok:
            if key in _OTEL_KEYS:
                continue
            session.report(
                "MSG-META-KEYS",
                f'{SENDER[msg.direction]} used _meta key "{key}", which does not follow the '
                "[prefix/]name grammar",
                [msg.frame],
                key=key,
            )


#: The rules that judge a batch where batches do not exist.
_BATCH_FORBIDDEN = ("MSG-BATCH-V1", "MSG-BATCH-REMOVED")


@rule("MSG-BATCH-V1", "MSG-BATCH-REMOVED", on=FRAME, keys=("batch",))
def check_batch_allowed(session: Session, frame: FrameRecord, items: list[Any]) -> None:
    """Batches exist only in 2025-03-26 (catalogue §13, "JSON-RPC batching")."""
    version = session.state.version
    sender = SENDER[frame.direction]
    if version == V1:
        session.report(
            "MSG-BATCH-V1",
            f"{sender} sent a JSON-RPC batch; 2024-11-05 has no batch type",
            [frame.seq],
        )
    elif version_at_least(version, V3):
        session.report(
            "MSG-BATCH-REMOVED",
            f"{sender} sent a JSON-RPC batch, but batching was removed in 2025-06-18 "
            f"(this session uses {version}); send each message on its own",
            [frame.seq],
            version=version,
        )


@rule("MSG-BATCH-V2-SHAPE", "MSG-BATCH-V2-INIT", on=FRAME, keys=("batch-done",))
def check_batch_shape(session: Session, frame: FrameRecord, msgs: list[Msg]) -> None:
    """A 2025-03-26 batch is all requests/notifications or all responses."""
    kinds = {m.kind for m in msgs}
    sender = SENDER[frame.direction]
    if kinds & CALLS and kinds & REPLIES:
        session.report(
            "MSG-BATCH-V2-SHAPE",
            f"{sender} mixed requests and responses in one batch",
            [frame.seq],
        )
    if any(m.method == "initialize" for m in msgs):
        session.report(
            "MSG-BATCH-V2-INIT",
            "the client put initialize inside a batch; it must be sent on its own",
            [frame.seq],
        )


def _shown(value: Any) -> str:
    return (
        show_id(value)
        if isinstance(value, str | int | float | bool) or value is None
        else "an object"
    )


# --------------------------------------------------------------------------- top level


@rule("JR-TOPLEVEL", on=FRAME, keys=("not-object",))
def not_an_object(session: Session, frame: FrameRecord, value: Any) -> None:
    """A frame of JSON that is neither an object nor an array (JSON-RPC §4, §6)."""
    session.report(
        "JR-TOPLEVEL",
        f"{SENDER[frame.direction]} sent a JSON {type(value).__name__}, but a "
        "JSON-RPC message must be an object (or an array for a batch)",
        [frame.seq],
        value_type=json_type(value),
    )


@rule("JR-TOPLEVEL", on=FRAME, keys=("not-object-element",))
def element_not_an_object(session: Session, frame: FrameRecord, value: Any, index: int) -> None:
    """A batch element that is not an object (JSON-RPC §6)."""
    session.report(
        "JR-TOPLEVEL",
        f"element {index} of the batch is a JSON {json_type(value)}, not a "
        "request or notification object",
        [frame.seq],
        index=index,
    )


@rule("JR-TOPLEVEL", on=FRAME, keys=("empty-batch",))
def empty_batch(session: Session, frame: FrameRecord, reported: int) -> None:
    """`[]` sent as a request (its reply is judged: rules/replies.py).

    JSON-RPC §6: a batch is "an Array with at least one value"; `[]` is an
    invalid request. Where batches do not exist at all, MSG-BATCH-* said it
    already (``reported``: the output position before the batch rules ran).
    """
    if session.reported_since(reported, _BATCH_FORBIDDEN):
        return
    session.report(
        "JR-TOPLEVEL",
        f"{SENDER[frame.direction]} sent an empty batch `[]`, which is not a request; "
        "the only valid reply is a single -32600 Invalid Request error",
        [frame.seq],
        cause="empty-batch",
    )


@rule("JR-BATCH-ALL-NOTIF", on=FRAME, keys=("notification-batch-reply",))
def notification_batch_answered(session: Session, frame: FrameRecord, batch_seq: int) -> None:
    """`[]` in reply to a batch of only notifications, which gets no reply at all (§6)."""
    session.report(
        "JR-BATCH-ALL-NOTIF",
        f"{SENDER[frame.direction]} answered a batch of only notifications (seq "
        f"{batch_seq}) with `[]`; it must send nothing at all",
        [batch_seq, frame.seq],
    )


# --------------------------------------------------------------------------- correlation
# The session pairs replies with requests (core/session/correlation.py); these rules say what
# was wrong when the pairing found something (registry.OUTCOMES).


@rule("JR-RESP-ID", on=PAIRING, keys=("id-type-mismatch",))
def id_type_mismatch(session: Session, msg: Msg, request: Pending) -> None:
    """The reply echoes the id with another JSON type (1 answered as "1")."""
    _wrong_id(session, msg, request, "id-type", "must be echoed with the same JSON type")


@rule("JR-RESP-ID", on=PAIRING, keys=("id-precision",))
def id_precision(session: Session, msg: Msg, request: Pending) -> None:
    """The reply's integer id lost digits (2**53 + 1 echoed as 2**53)."""
    _wrong_id(
        session,
        msg,
        request,
        "id-precision",
        "lost precision (it went through a 64-bit float, which holds integers exactly only "
        "up to 2**53); use ids within ±2**53, or strings",
    )


def _wrong_id(session: Session, msg: Msg, request: Pending, cause: str, why: str) -> None:
    """JR-RESP-ID for a reply paired with ``request`` whose id is not the request's."""
    session.report(
        "JR-RESP-ID",
        f"{SENDER[msg.direction]} answered request id {show_id(request.id)} "
        f"({request.method}, seq {request.seq}) with id {show_id(msg.id)}: the id {why}",
        [request.seq, msg.frame],
        cause=cause,
        request_id=request.id,
        response_id=msg.id,
    )


@rule("JR-RESP-ID", on=PAIRING, keys=("duplicate-response",))
def duplicate_response(session: Session, msg: Msg, answered: Answered | None) -> None:
    """A second reply to a request already answered."""
    if answered is None:
        session.report(
            "JR-RESP-ID",
            f"{SENDER[msg.direction]} sent another response to request id "
            f"{show_id(msg.id)}, which was already answered",
            [msg.frame],
            cause="duplicate-response",
            id=msg.id,
        )
        return
    session.report(
        "JR-RESP-ID",
        f"{SENDER[msg.direction]} sent a second response to request id "
        f"{show_id(msg.id)} ({answered.method}, seq {answered.seq}); the first "
        f"was seq {answered.response_seq}",
        [answered.seq, msg.frame],
        cause="duplicate-response",
        id=msg.id,
        first_response_seq=answered.response_seq,
    )


@rule("JR-RESP-ID", on=PAIRING, keys=("orphan",))
def unknown_id(session: Session, msg: Msg) -> None:
    """A reply whose id no request of the other side carried.

    Unless the other side's traffic had a capture gap before it: the request
    may be in the bytes that were forwarded but not analyzed (rules/flow.py).
    """
    gaps = gaps_of(session.state, session.shared, session.key)
    if gaps is not None and gaps.lost[OPPOSITE[msg.direction]]:
        gaps.excuse("JR-RESP-ID")
        return
    session.report(
        "JR-RESP-ID",
        f"{SENDER[msg.direction]} sent a response with id {show_id(msg.id)}, but the "
        f"{SENDER[OPPOSITE[msg.direction]]} never sent a request with that id",
        [msg.frame],
        cause="unknown-id",
        id=msg.id,
    )


@rule("JR-BATCH-RESP-COUNT", on=FRAME, keys=("batch-reply",))
def batch_reply_count(
    session: Session,
    frame: FrameRecord,
    batch: BatchInfo,
    msgs: list[Msg],
    missing: list[Any],
    extra_null: int,
    missing_invalid: int,
) -> None:
    """A reply array that leaves out requests of its batch, or has more than it asked (§6)."""
    if not missing and not extra_null:
        return
    parts = []
    if missing:
        parts.append(
            f"{len(missing)} request(s) got no response in it ("
            + ", ".join(show_id(id_value(k)) for k in missing[:10])
            + ")"
        )
    if extra_null:
        parts.append(f"{extra_null} response(s) more than the batch asked for")
    session.report(
        "JR-BATCH-RESP-COUNT",
        f"the reply to the batch at seq {batch.seq} does not match it: " + "; ".join(parts),
        [batch.seq, frame.seq],
        missing=[id_value(k) for k in missing],
        expected=len(batch.request_keys) + batch.invalid_elements,
        received=len(msgs),
    )
