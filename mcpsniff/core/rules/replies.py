"""Judging the replies to bad input, not only the bad input.

JSON-RPC says exactly how a receiver answers what it cannot use:

* invalid JSON: "a single error response, code -32700, id null" (§5, §5.1, §7
  "rpc call with invalid JSON"; catalogue JR-PARSE);
* a valid JSON value that is not a request (``1``, ``{"method": 1}``): -32600
  Invalid Request with id null (§7 "rpc call with invalid Request object";
  JR-ERROR-SEMANTICS);
* ``[]``: "the response from the Server MUST be a single Response object",
  -32600, not an array (§6, §7 "rpc call with an empty Array"; JR-BATCH-EMPTY);
* in every case the id is null, because it could not be read (§5;
  JR-RESP-ID-NULL).

Each bad frame is remembered (``SessionState.bad_frames``, bounded) with the
reply it calls for; a null-id error from the other side answers the oldest
one and is judged against it. An error that names an id no request had, when
a bad frame is waiting, is its reply with the id it must not carry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import show_id
from mcpsniff.core.model import SENDER
from mcpsniff.core.rules.registry import FRAME, PAIRING, rule
from mcpsniff.core.state import BAD_BATCH_PARSE, BAD_EMPTY_BATCH, BAD_INVALID, BAD_PARSE

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import BatchInfo, Msg, Pending

RULES = (
    "JR-BATCH-EMPTY",
    "JR-RESP-ID-NULL",
    "JR-ERROR-SEMANTICS",
    "JR-BATCH-BAD-JSON",
    "JR-BATCH-ELEMENT",
)

#: What was wrong with a bad frame, and so which reply it calls for.
PARSE = BAD_PARSE
BATCH_PARSE = BAD_BATCH_PARSE
INVALID = BAD_INVALID
EMPTY_BATCH = BAD_EMPTY_BATCH
EXPECTED_CODE = {PARSE: -32700, BATCH_PARSE: -32700, INVALID: -32600, EMPTY_BATCH: -32600}
CODE_NAME = {-32700: "Parse error", -32600: "Invalid Request"}
_WHAT = {
    PARSE: "invalid JSON",
    BATCH_PARSE: "a batch that is not valid JSON",
    INVALID: "an invalid request",
    EMPTY_BATCH: "an empty batch `[]`",
}


@rule(
    "JR-BATCH-BAD-JSON",
    "JR-BATCH-EMPTY",
    "JR-ERROR-SEMANTICS",
    "JR-PARSE",
    on=PAIRING,
    keys=("bad-input-reply",),
)
def judge(session: Session, msg: Msg, culprit: int, kind: str) -> None:
    """A -32700/-32600 error with a null id, linked by the session to the bad frame it answers.

    JSON-RPC §5: invalid JSON is answered with -32700, JSON that is not a
    request with -32600, both with id null; a batch that is not JSON and `[]`
    get a single error object, never an array.
    """
    code = msg.error_code
    sender = SENDER[msg.direction]
    expected = EXPECTED_CODE[kind]
    if kind == BATCH_PARSE and (msg.index is not None or code != expected):
        session.report(
            "JR-BATCH-BAD-JSON",
            f"{sender} answered the unparseable batch at seq {culprit} with "
            + ("an array" if msg.index is not None else f"code {code}")
            + "; the reply must be a single -32700 error object with id null",
            [culprit, msg.frame],
            reply_to=culprit,
            code=code,
        )
        return
    if kind == EMPTY_BATCH and msg.index is not None:
        session.report(
            "JR-BATCH-EMPTY",
            f"{sender} answered the empty batch `[]` (seq {culprit}) with an array; the reply "
            "must be a single -32600 error object, not an array",
            [culprit, msg.frame],
            reply_to=culprit,
            cause="array-reply",
        )
        return
    if code == expected:
        return
    if kind == EMPTY_BATCH:
        session.report(
            "JR-BATCH-EMPTY",
            f"{sender} answered the empty batch `[]` (seq {culprit}) with {code} "
            f"{CODE_NAME[code]}; it is a valid JSON array, so the error is -32600 Invalid Request",
            [culprit, msg.frame],
            reply_to=culprit,
            cause="wrong-code",
            code=code,
        )
    elif kind in (PARSE, BATCH_PARSE):
        # JR-PARSE: "If the receiver replies, the reply MUST be ... code -32700".
        session.report(
            "JR-PARSE",
            f"{sender} answered the invalid JSON at seq {culprit} with -32600 Invalid Request; "
            "a frame that is not JSON is answered with -32700 Parse error",
            [culprit, msg.frame],
            reply_to=culprit,
            cause="reply-code",
            code=code,
        )
    else:
        session.report(
            "JR-ERROR-SEMANTICS",
            f"{sender} answered the invalid request at seq {culprit} (valid JSON) with -32700 "
            "Parse error; JSON that is not a request is answered with -32600 Invalid Request",
            [culprit, msg.frame],
            reply_to=culprit,
            code=code,
        )


@rule("JR-RESP-ID-NULL", on=PAIRING, keys=("orphan-bad-input-reply",))
def orphan_error(session: Session, msg: Msg, culprit: int, kind: str) -> None:
    """A -32700/-32600 whose id matches no request, linked to a waiting bad frame.

    The id could not have been read from that frame, so it must be null.
    """
    code = msg.error_code
    session.report(
        "JR-RESP-ID-NULL",
        f"{SENDER[msg.direction]} answered {_WHAT[kind]} (seq {culprit}) with id "
        f"{show_id(msg.id)}; the id of an unreadable request cannot be known, so the reply's "
        "id must be null",
        [culprit, msg.frame],
        reply_to=culprit,
        id=msg.id,
        code=code,
    )


@rule("JR-ERROR-SEMANTICS", on=PAIRING, keys=("parse-error-for-request",))
def parse_error_for_a_request(session: Session, msg: Msg, request: Pending) -> None:
    """-32700 answering a request that parsed: the code says the JSON was unreadable."""
    request_seq = request.seq
    session.report(
        "JR-ERROR-SEMANTICS",
        f"{SENDER[msg.direction]} answered the request at seq {request_seq} (valid JSON, id "
        f"{show_id(msg.id)}) with -32700 Parse error; a parse error cannot know the request id, "
        "and this request parsed",
        [request_seq, msg.frame],
        code=-32700,
    )


@rule("JR-BATCH-EMPTY", on=FRAME, keys=("empty-batch-reply",))
def empty_array(session: Session, frame: FrameRecord, culprit: int) -> bool:
    """``[]`` sent in reply to ``[]``: the empty batch answered with an empty array."""
    session.report(
        "JR-BATCH-EMPTY",
        f"{SENDER[frame.direction]} answered the empty batch `[]` (seq {culprit}) with `[]`; "
        "the reply must be a single -32600 error object",
        [culprit, frame.seq],
        reply_to=culprit,
        cause="empty-reply",
    )
    return True


@rule("JR-BATCH-ELEMENT", on=FRAME, keys=("batch-reply",))
def missing_element_errors(
    session: Session,
    frame: FrameRecord,
    batch: BatchInfo,
    msgs: list[Msg],
    missing_requests: list[Any],
    extra: int,
    missing: int,
) -> None:
    """Invalid elements of a batch that got no -32600 of their own in its reply."""
    if not missing:
        return
    batch_seq, reply_seq = batch.seq, frame.seq
    session.report(
        "JR-BATCH-ELEMENT",
        f"the reply to the batch at seq {batch_seq} has no error for {missing} invalid "
        "element(s); each invalid element gets its own -32600 response with id null",
        [batch_seq, reply_seq],
        missing=missing,
    )
