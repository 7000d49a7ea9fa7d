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
from mcpsniff.core.model import OPPOSITE, SENDER

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = (
    "JR-BATCH-EMPTY",
    "JR-RESP-ID-NULL",
    "JR-ERROR-SEMANTICS",
    "JR-BATCH-BAD-JSON",
    "JR-BATCH-ELEMENT",
)

#: What was wrong with a bad frame, and so which reply it calls for.
PARSE = "parse"  # not JSON: -32700
BATCH_PARSE = "batch-parse"  # a batch that is not JSON: one -32700 object, never an array
INVALID = "invalid"  # JSON, but not a request: -32600
EMPTY_BATCH = "empty-batch"  # `[]`: one -32600 object, never an array
EXPECTED_CODE = {PARSE: -32700, BATCH_PARSE: -32700, INVALID: -32600, EMPTY_BATCH: -32600}
CODE_NAME = {-32700: "Parse error", -32600: "Invalid Request"}
_WHAT = {
    PARSE: "invalid JSON",
    BATCH_PARSE: "a batch that is not valid JSON",
    INVALID: "an invalid request",
    EMPTY_BATCH: "an empty batch `[]`",
}


def note_bad(session: Session, direction: str, seq: int, kind: str) -> None:
    """Remember frame ``seq`` as bad input waiting for its error reply."""
    session.state.bad_frames[direction].append((seq, kind))


def null_id_error(session: Session, msg: Msg, code: int) -> bool:
    """A -32700/-32600 error with a null id: link it to the bad frame it answers, judge it.

    False when no bad frame of the other side is waiting (nothing to link).
    """
    bad = session.state.bad_frames[OPPOSITE[msg.direction]]
    if not bad:
        return False
    culprit, kind = bad.popleft()
    msg.answers = culprit
    msg.note = "parse-error-reply" if code == -32700 else "invalid-request-reply"
    _judge(session, msg, culprit, kind, code)
    return True


def _judge(session: Session, msg: Msg, culprit: int, kind: str, code: int) -> None:
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


def orphan_error(session: Session, msg: Msg, code: Any) -> bool:
    """An error whose id matches no request: the reply to a bad frame, with an id?

    True (and reported as JR-RESP-ID-NULL, linked to the bad frame) when the code
    is -32700/-32600 and a bad frame of the other side is waiting; the id could
    not have been read from it, so it must be null.
    """
    if code not in (-32700, -32600):
        return False
    bad = session.state.bad_frames[OPPOSITE[msg.direction]]
    if not bad:
        return False
    culprit, kind = bad.popleft()
    msg.answers = culprit
    msg.note = "parse-error-reply" if code == -32700 else "invalid-request-reply"
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
    return True


def parse_error_for_a_request(session: Session, msg: Msg, request_seq: int) -> None:
    """-32700 answering a request that parsed: the code says the JSON was unreadable."""
    session.report(
        "JR-ERROR-SEMANTICS",
        f"{SENDER[msg.direction]} answered the request at seq {request_seq} (valid JSON, id "
        f"{show_id(msg.id)}) with -32700 Parse error; a parse error cannot know the request id, "
        "and this request parsed",
        [request_seq, msg.frame],
        code=-32700,
    )


def empty_array(session: Session, frame: FrameRecord) -> bool:
    """``[]`` sent in reply to ``[]``: the empty batch answered with an empty array."""
    bad = session.state.bad_frames[OPPOSITE[frame.direction]]
    if not bad or bad[0][1] != EMPTY_BATCH:
        return False
    culprit, _ = bad.popleft()
    session.report(
        "JR-BATCH-EMPTY",
        f"{SENDER[frame.direction]} answered the empty batch `[]` (seq {culprit}) with `[]`; "
        "the reply must be a single -32600 error object",
        [culprit, frame.seq],
        reply_to=culprit,
        cause="empty-reply",
    )
    return True


def missing_element_errors(session: Session, batch_seq: int, reply_seq: int, missing: int) -> None:
    """Invalid elements of a batch that got no -32600 of their own in its reply."""
    session.report(
        "JR-BATCH-ELEMENT",
        f"the reply to the batch at seq {batch_seq} has no error for {missing} invalid "
        "element(s); each invalid element gets its own -32600 response with id null",
        [batch_seq, reply_seq],
        missing=missing,
    )
