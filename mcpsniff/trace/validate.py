"""The shape of every trace record, checked once, where the reader decodes it.

A trace file is hostile input (docs/architecture.md, invariant 6): anyone can hand one
over, and a tool may write one carelessly. ``docs/trace-format.md`` says what
type each field has; this module is that table as code. The reader asks
``problem(obj)`` for every record and skips (with one warning naming the line)
any record that does not match, so the commands downstream of the reader
(``check``, ``show``, ``replay``, the UI, the exports) can trust the types:
a ``seq`` is an int, a ``t`` a finite time a clock can show, a ``session`` a
string, an event's ``data`` an object, a header list a list of name/value pairs.

Unknown *optional* keys are allowed (the format's versioning rule); known keys
with the wrong type are not.
"""

from __future__ import annotations

import math
from typing import Any

from mcpsniff.core.model import KINDS, SEVERITIES, Record
from mcpsniff.trace.codec import TraceError, decode_record

# Tuples, not sets: a hostile value may be unhashable (a list), and `in` on a
# tuple compares instead of hashing.
_DIRECTIONS = ("c2s", "s2c")
_EOLS = ("", "\n", "\r\n")
#: Times are seconds since the epoch; beyond this (year 5138) no clock can show them.
MAX_TIME = 1e11
#: Events whose data a renderer reads field by field, and the types of those fields.
_EVENT_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "stderr": {"line": (str,)},
    "http-request": {"method": (str,), "path": (str,), "headers": (list,)},
    "http-response": {"status": (int,), "headers": (list,)},
    "session-start": {"command": (list,)},
}


def _int(value: Any) -> bool:
    return type(value) is int


def _opt_int(value: Any) -> bool:
    return value is None or type(value) is int


def _opt_str(value: Any) -> bool:
    return value is None or type(value) is str


def is_time(value: Any) -> bool:
    """Whether ``value`` is a plausible trace time: seconds since the epoch, finite, sane."""
    return _time(value)


def _time(value: Any) -> bool:
    return (type(value) is float or type(value) is int) and 0 <= value < MAX_TIME


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _stamp_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with the fields a frame and an event both have: seq, t and session."""
    if not _int(obj.get("seq")):
        return "seq is not an integer"
    if not _time(obj.get("t")):
        return "t is not a time in seconds"
    if type(obj.get("session")) is not str:
        return "session is not a string"
    return None


def frame_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a frame record's fields, or None (the payload is checked on decode)."""
    stamp = _stamp_problem(obj)
    if stamp is not None:
        return stamp
    if obj.get("dir") not in _DIRECTIONS:
        return "dir is not c2s or s2c"
    if type(obj.get("transport")) is not str:
        return "transport is not a string"
    meta = obj.get("meta")
    if meta is not None and type(meta) is not dict:
        return "meta is not an object"
    if "json" in obj:
        size = obj.get("len")
        if not _int(size) or size < 0:
            return "len is not a non-negative integer"
        if obj.get("eol") not in _EOLS:
            return "eol is not a line terminator"
    elif "text" in obj:
        if type(obj["text"]) is not str:
            return "text is not a string"
    elif type(obj.get("b64")) is not str:
        return "no text, b64 or json payload"
    return None


def event_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with an event record, or None."""
    stamp = _stamp_problem(obj)
    if stamp is not None:
        return stamp
    name = obj.get("event")
    if type(name) is not str:
        return "event is not a string"
    data = obj.get("data", {})
    if type(data) is not dict:
        return "data is not an object"
    for key, types in _EVENT_FIELDS.get(name, {}).items():
        if key in data and type(data[key]) not in types:
            return f"{name} data.{key} is not {types[0].__name__}"
    headers = data.get("headers")
    if name.startswith("http-") and headers is not None and not _header_pairs(headers):
        return f"{name} headers are not name/value pairs"
    return None


def _header_pairs(headers: Any) -> bool:
    return type(headers) is list and all(
        type(pair) in (list, tuple)
        and len(pair) == 2
        and type(pair[0]) is str
        and type(pair[1]) is str
        for pair in headers
    )


def message_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a message record, or None."""
    if not _int(obj.get("frame")):
        return "frame is not an integer"
    if type(obj.get("session")) is not str:
        return "session is not a string"
    if obj.get("dir") not in _DIRECTIONS:
        return "dir is not c2s or s2c"
    if obj.get("kind") not in KINDS:
        return "kind is not a message kind"
    for key in ("index", "answers", "request_index"):
        if not _opt_int(obj.get(key)):
            return f"{key} is not an integer"
    for key in ("method", "note", "target"):
        if not _opt_str(obj.get(key)):
            return f"{key} is not a string"
    latency = obj.get("latency_ms")
    if latency is not None and not _number(latency):
        return "latency_ms is not a number"
    return None


def finding_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a finding record, or None."""
    for key in ("rule", "message", "session"):
        if type(obj.get(key)) is not str:
            return f"{key} is not a string"
    if obj.get("severity") not in SEVERITIES:
        return "severity is not error, warning or info"
    seq = obj.get("seq")
    if type(seq) is not list or not all(_int(q) for q in seq):
        return "seq is not a list of integers"
    if type(obj.get("data", {})) is not dict:
        return "data is not an object"
    return None


#: A seq a ``lane`` record names is below this (a seq the writer counts to, never a bignum).
LANE_SEQ_LIMIT = 1 << 63
#: A ``lane`` record's one marker key besides ``type`` and ``session``.
_LANE_MARKS = ("open", "input", "through", "lost")


def lane_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a ``lane`` record (docs/trace-format.md, "Two-lane traces"), or None."""
    if type(obj.get("session")) is not str:
        return "session is not a string"
    marks = [key for key in _LANE_MARKS if key in obj]
    if len(marks) != 1:
        return "a lane record has exactly one of open, input, through and lost"
    mark = marks[0]
    value = obj[mark]
    if mark == "open" or mark == "lost":
        if type(value) is not int or value != 1:
            return f"{mark} is not 1"
        return None
    if type(value) is not int or not 0 <= value < LANE_SEQ_LIMIT:
        return f"{mark} is not a seq (an integer from 0 to 2**63-1)"
    return None


_CHECKS = {
    "lane": lane_problem,
    "frame": frame_problem,
    "event": event_problem,
    "message": message_problem,
    "finding": finding_problem,
}


def problem(obj: Any) -> str | None:
    """What makes ``obj`` not a valid record of the format, or None when it is one.

    The header is not a record; ``header_problem`` checks it.
    """
    if type(obj) is not dict:
        return "not a JSON object"
    kind = obj.get("type")
    check = _CHECKS.get(kind) if type(kind) is str else None
    if check is None:
        return f"unknown record type {kind!r}"
    return check(obj)


def checked_record(
    obj: Any, line: bytes | None = None
) -> tuple[Record | dict[str, Any] | None, str | None]:
    """A parsed trace line's record (a dict: a header) and None, or None and why it is none.

    What every reader of lines does with one: ``problem`` judges the fields,
    then decoding the payload may still fail (``TraceError``).
    """
    reason = problem(obj)
    if reason is not None:
        return None, reason
    try:
        return decode_record(obj, line), None
    except TraceError as exc:
        return None, str(exc)


def header_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a header beyond its format and version, or None."""
    if type(obj.get("meta", {})) is not dict:
        return "its meta is not an object"
    created = obj.get("created")
    if created is not None and not _time(created):
        return "its created time is not a time in seconds"
    return None
