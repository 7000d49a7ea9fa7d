"""Batches: a JSON array of messages, and the array of replies that answers it.

JSON-RPC 2.0 §6: "To send several Request objects at the same time, the
Client MAY send an Array filled with Request objects", and the server
"SHOULD respond with an Array containing the corresponding Response
objects". Each element is classified like a single message; a batch of
requests is remembered (``BatchInfo``) until its reply array comes, which
is then checked against it: replies missing, extra null-id replies. `[]`
is bad input, or the reply to bad input (rules/replies.py judges it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import id_key
from mcpsniff.core.model import BATCH, CALLS, INVALID, OPPOSITE, REPLIES, REQUEST, MessageRecord
from mcpsniff.core.session.classification import message
from mcpsniff.core.session.correlation import note_bad
from mcpsniff.core.session.dispatch import frame_rules
from mcpsniff.core.state import BAD_EMPTY_BATCH, BAD_INVALID, BatchInfo

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.session.base import SessionBase
    from mcpsniff.core.state import Msg

#: The kinds of a batch remembered until its replies come: requests, notifications
#: and invalid elements (each invalid element is answered with an error).
_SENT = CALLS | {INVALID}


def batch(session: SessionBase, items: list[Any], frame: FrameRecord) -> None:
    """Classify each element of an array, then remember it or match it to its batch."""
    direction = frame.direction
    session.emit(MessageRecord(frame.seq, session.key, direction, BATCH, size=len(frame.raw)))
    reported = session.emitted
    frame_rules(session, "batch", frame, items)
    if not items:
        # `[]` may be a reply: to an empty batch (the bad input, answered with
        # an array), or to a batch of only notifications (which gets none).
        other = OPPOSITE[direction]
        bad = session.state.bad_frames[other]
        if bad and bad[0][1] == BAD_EMPTY_BATCH:
            culprit, _ = bad.popleft()
            frame_rules(session, "empty-batch-reply", frame, culprit)
            return
        answered = session.state.notification_batch[other]
        if answered is not None:
            session.state.notification_batch[other] = None
            frame_rules(session, "notification-batch-reply", frame, answered)
            return
        note_bad(session, direction, frame.seq, BAD_EMPTY_BATCH)
        frame_rules(session, "empty-batch", frame, reported)
        return
    msgs = [
        message(session, item, frame, i)
        if isinstance(item, dict)
        else _not_object(session, item, frame, i)
        for i, item in enumerate(items)
    ]
    kinds = {m.kind for m in msgs}
    if kinds & _SENT and kinds <= _SENT:
        requests = [m for m in msgs if m.kind == REQUEST]
        invalid = sum(1 for m in msgs if m.kind == INVALID)
        if requests or invalid:
            session.state.batches[frame.seq] = BatchInfo(
                frame.seq,
                direction,
                [id_key(m.id) for m in requests],
                invalid,
                len(msgs) - len(requests) - invalid,
            )
        else:
            session.state.notification_batch[direction] = frame.seq
    elif kinds <= REPLIES:
        _batch_reply(session, msgs, frame)
    frame_rules(session, "batch-done", frame, msgs)


def _not_object(session: SessionBase, obj: Any, frame: FrameRecord, index: int) -> Msg:
    """A batch element that is not an object: an invalid message."""
    direction = frame.direction
    seq = frame.seq
    record = MessageRecord(
        seq, session.key, direction, INVALID, index, obj=obj, source=frame, sent_at=frame.t
    )
    session.output.append(record)
    note_bad(session, direction, seq, BAD_INVALID)
    frame_rules(session, "not-object-element", frame, obj, index)
    return record


def _batch_reply(session: SessionBase, msgs: list[Msg], frame: FrameRecord) -> None:
    """Check a reply array against the batch it answers (JSON-RPC §6)."""
    state = session.state
    request_direction = OPPOSITE[frame.direction]
    answered_batches = {
        m.request.batch_seq
        for m in msgs
        if m.request is not None and m.request.batch_seq is not None
    }
    null_replies = sum(1 for m in msgs if not m.has_id or m.id is None)
    if len(answered_batches) != 1:
        if not answered_batches and null_replies == len(msgs):
            oldest = _oldest_batch(state.batches, request_direction)
            if oldest is not None and oldest.invalid_elements:
                answered_batches = {oldest.seq}
        if len(answered_batches) != 1:
            return
    batch_seq = answered_batches.pop()
    answered = state.batches.pop(batch_seq, None)
    if answered is None:
        return
    replied = {id_key(m.id) for m in msgs if m.has_id and m.id is not None}
    missing = [k for k in answered.request_keys if k not in replied]
    extra_null = max(0, null_replies - answered.invalid_elements)
    missing_invalid = max(0, answered.invalid_elements - null_replies)
    if missing:
        # Their requests are reported here, not again as never answered.
        pending = state.pending[request_direction]
        for k in missing:
            if k in pending:
                pending[k].missing_reported = True
    frame_rules(session, "batch-reply", frame, answered, msgs, missing, extra_null, missing_invalid)


def _oldest_batch(batches: dict[int, BatchInfo], direction: str) -> BatchInfo | None:
    for info in batches.values():
        if info.direction == direction:
            return info
    return None
