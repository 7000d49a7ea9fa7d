"""Parsing: every frame that is not one already parsed message.

The usual frame holds one JSON object that orjson parsed (``Session``
passes it straight to ``classification.message``). The rest comes here: what
orjson refuses but JSON allows (integers beyond 64 bits), ids too large to be
exact as floats, arrays (``batches``), JSON that is no object, and bytes that
are no JSON at all (a bad frame waiting for its -32700 reply).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import orjson

from mcpsniff.core.model import INVALID, UNPARSEABLE, UNPARSED, MessageRecord
from mcpsniff.core.session.batches import batch
from mcpsniff.core.session.classification import message
from mcpsniff.core.session.correlation import EXACT_FLOAT_LIMIT, note_bad
from mcpsniff.core.session.dispatch import frame_rules
from mcpsniff.core.state import BAD_BATCH_PARSE, BAD_INVALID, BAD_PARSE

if TYPE_CHECKING:
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.core.session.base import SessionBase

#: What ``fallback_parse`` returns for bytes that are no JSON.
NOT_JSON = object()


def analyze_unusual(session: SessionBase, frame: FrameRecord, value: Any, offset: int) -> None:
    """Everything but an already parsed single message: parse, batches, big ids."""
    raw = frame.raw
    if value is UNPARSED:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = fallback_parse(raw)
            if value is NOT_JSON:
                _unparseable(session, frame, offset)
                return
        # The trace writer stores a parsed frame as embedded JSON (trace v2).
        frame.value = value
    if type(value) is dict:
        identifier = value.get("id")
        if type(identifier) is float and abs(identifier) >= EXACT_FLOAT_LIMIT:
            # orjson turns integers beyond 64 bits into floats; ids compare
            # exactly (JSON-RPC §5), so parse such a frame exactly.
            exact = fallback_parse(raw)
            if isinstance(exact, dict):
                value = exact
        message(session, value, frame, None)
    elif isinstance(value, list):
        batch(session, value, frame)
    else:
        record = MessageRecord(frame.seq, session.key, frame.direction, INVALID, size=len(raw))
        session.emit(record)
        note_bad(session, frame.direction, frame.seq, BAD_INVALID)
        frame_rules(session, "not-object", frame, value)


def _unparseable(session: SessionBase, frame: FrameRecord, offset: int) -> None:
    raw = frame.raw
    if frame.transport == "stdio" and not raw.strip():
        # A blank line between messages: not a message, nor bad input to answer.
        frame_rules(session, "blank", frame, offset)
        return
    session.emit(MessageRecord(frame.seq, session.key, frame.direction, UNPARSEABLE, size=len(raw)))
    bad = BAD_BATCH_PARSE if raw.lstrip()[:1] == b"[" else BAD_PARSE
    note_bad(session, frame.direction, frame.seq, bad)
    frame_rules(session, "unparseable", frame, offset)


def fallback_parse(raw: bytes) -> Any:
    """Parse what orjson refuses but JSON allows (integers beyond 64 bits); else ``NOT_JSON``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return NOT_JSON
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return NOT_JSON


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are Python extensions, not JSON (RFC 8259 §6).
    raise ValueError(name)
