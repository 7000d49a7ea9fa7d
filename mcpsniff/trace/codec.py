"""The JSONL trace format's records: how each one looks on disk, and back.

A trace is JSON Lines. Line 1 is a header naming the format and its version;
every following line is one record whose first key is ``type``. Records are
written whole, one ``write`` per line, so a crash can tear only the last line,
and the reader tolerates exactly that. ``docs/trace-format.md`` documents the
format for people; this module is its executable definition (``writer.py``
writes lines, ``reader.py`` and ``tail.py`` read them, ``salvage.py`` mends them).

Keeping ``type`` first is deliberate: ``mcpsniff check`` only needs the input
records (frames and events), and can skip derived records by looking at a
fixed byte prefix instead of parsing them (``reader.py``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import re
from typing import Any

import orjson

from mcpsniff import __version__
from mcpsniff.core.model import (
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)

FORMAT_NAME = "mcpsniff-trace"
FORMAT_VERSION = 2
#: Versions this reader can load. Bump FORMAT_VERSION only with a reader for the old one.
#: Version 2 added embedded-JSON frames ("json" + "len" + "eol"); 1 has text/b64 only.
READABLE_VERSIONS = frozenset({1, 2})
#: What precedes an embedded frame payload, which ends its line.
JSON_MARK = b',"json":'
#: How every frame line starts (its type first, as every writer writes it).
FRAME_PREFIX = b'{"type":"frame"'
_EOLS = {b"": "", b"\n": "\n", b"\r\n": "\r\n"}
#: Containers nested deeper than this are cut when no encoder can write a record whole.
_MAX_FALLBACK_DEPTH = 200
#: orjson reads integers outside [-2**63, 2**64) as floats; any float this large may be one.
_INEXACT_FLOAT = float(2**63)
#: An integer literal orjson reads inexactly (at least 2**63 in size) has 19 digits or more.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
#: Lines at least this long are searched for such a literal before their values are walked.
_SEARCH_FIRST = 16 << 10
_NOT_PARSED = object()


class TraceError(Exception):
    """The trace cannot be read: missing, not a trace, or corrupt before its end."""


def _frame_fields(record: FrameRecord) -> dict[str, Any]:
    """The fields every frame line starts with, in their order on the line."""
    return {
        "type": "frame",
        "seq": record.seq,
        "t": record.t,
        "session": record.session,
        "dir": record.direction,
        "transport": record.transport,
    }


def encode_record(record: Record) -> dict[str, Any]:
    """Turn a record into the JSON object stored on its trace line."""
    if isinstance(record, FrameRecord):
        obj = _frame_fields(record)
        try:
            obj["text"] = record.raw.decode("utf-8")
        except UnicodeDecodeError:
            # Not UTF-8: keep the exact bytes recoverable (docs/architecture.md, invariant 4).
            obj["b64"] = base64.b64encode(record.raw).decode("ascii")
        if record.meta:
            obj["meta"] = record.meta
        return obj
    if isinstance(record, MessageRecord):
        return _message_object(record)
    if isinstance(record, FindingRecord):
        return {
            "type": "finding",
            "rule": record.rule,
            "severity": record.severity,
            "message": record.message,
            "session": record.session,
            "seq": record.seq,
            "data": record.data,
        }
    if isinstance(record, EventRecord):
        return {
            "type": "event",
            "seq": record.seq,
            "t": record.t,
            "session": record.session,
            "event": record.event,
            "data": record.data,
        }
    raise TypeError(f"not a trace record: {record!r}")


def _message_object(record: MessageRecord) -> dict[str, Any]:
    """The JSON object of a message record's trace line."""
    obj: dict[str, Any] = {
        "type": "message",
        "frame": record.frame,
        "session": record.session,
        "dir": record.direction,
        "kind": record.kind,
    }
    if record.index is not None:
        obj["index"] = record.index
    if record.has_id:
        obj["id"] = record.id
    if record.method is not None:
        obj["method"] = record.method
    if record.answers is not None:
        obj["answers"] = record.answers
        if record.request_index is not None:
            obj["request_index"] = record.request_index
        obj["latency_ms"] = record.latency_ms
    if record.error_code is not None:
        obj["error_code"] = record.error_code
    if record.target is not None:
        obj["target"] = record.target
    if record.note is not None:
        obj["note"] = record.note
    return obj


def decode_record(obj: dict[str, Any], line: bytes | None = None) -> Record | dict[str, Any]:
    """Turn a parsed trace line back into a record (the header stays a dict).

    ``line`` is the line ``obj`` was parsed from; embedded-JSON frames need it
    to recover their exact bytes. Raises ``TraceError`` for objects that are
    not records of this format.
    """
    kind = obj.get("type")
    try:
        if kind == "frame":
            return frame_from(obj, line)
        if kind == "message":
            answers = obj.get("answers")
            return MessageRecord(
                frame=obj["frame"],
                session=obj["session"],
                direction=obj["dir"],
                kind=obj["kind"],
                index=obj.get("index"),
                id=obj.get("id"),
                has_id="id" in obj,
                method=obj.get("method"),
                answers=answers,
                request_index=obj.get("request_index"),
                latency_ms=obj.get("latency_ms"),
                note=obj.get("note"),
                error_code=obj.get("error_code"),
                target=obj.get("target"),
            )
        if kind == "finding":
            return FindingRecord(
                rule=obj["rule"],
                severity=obj["severity"],
                message=obj["message"],
                session=obj["session"],
                seq=list(obj["seq"]),
                data=obj.get("data") or {},
            )
        if kind == "event":
            return EventRecord(
                seq=obj["seq"],
                t=obj["t"],
                session=obj["session"],
                event=obj["event"],
                data=obj.get("data") or {},
            )
        if kind == "header" or kind == "lane":
            # No record: a header starts a session, a lane record steers the
            # reader (trace/lanes.py); a reader that does not merge skips both.
            return obj
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceError(f"malformed {kind} record: {exc!r}") from exc
    raise TraceError(f"unknown record type {kind!r}")


def encode_line(record: Record) -> bytes:
    """One complete trace line, newline included."""
    if type(record) is MessageRecord:
        # Two of every call's four records: straight to orjson (``dump_line`` and
        # its fallbacks only for a value orjson refuses).
        try:
            return _orjson_dumps(_message_object(record), option=_APPEND_NEWLINE)
        except TypeError:
            return dump_line(_message_object(record))
    if isinstance(record, FrameRecord) and record.value is not UNPARSED:
        line = _embedded_frame(record)
        if line is not None:
            return line
    return dump_line(encode_record(record))


_orjson_dumps = orjson.dumps
_APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE

#: Any byte that is not JSON whitespace (RFC 8259 §2) or another blank.
_NOT_BLANK = re.compile(rb"[^ \t\r\n\f\v]")


def _embedded_frame(record: FrameRecord) -> bytes | None:
    """A frame whose bytes are one line of valid JSON, stored as that JSON itself.

    The payload is copied verbatim after ``"json":`` at the very end of the
    line, and ``len`` gives its size, so a reader recovers the exact bytes by
    slicing, and gets the parsed message from the same single parse of the
    line (trace format 2). Tools such as jq see the message as JSON, too.
    """
    raw = record.raw
    size = len(raw)
    end = size - 1
    # The usual frame (every stdio line): a JSON object or array on one line,
    # its LF the only one and last, no CR, no meta, the head's middle cached.
    # The bytes of the general path below, in one formatting and a dozen
    # fewer bytecodes; anything else, or any doubt, takes that path.
    if (
        record.meta is None
        and size <= _SLICE_LIMIT
        and raw.find(_LF) == end
        and _CR not in raw
        and raw[:1] in _OPENERS
    ):
        seq = record.seq
        t = record.t
        if type(seq) is int and 0 <= seq < _SEQ_LIMIT and type(t) is float:
            middle = _FRAME_MIDDLES.get((record.session, record.direction, record.transport, "\n"))
            if middle is not None:
                return _FRAME_LINE % (seq, _orjson_dumps(t), middle, end, raw[:end])
    # Only a payload that is valid JSON on one line can sit inside a JSONL line:
    # no CR or LF before its terminator (LF, CRLF or none). Searched in place
    # (a slice of a 50 MB frame would be a 50 MB copy), each byte value once.
    lf = raw.find(b"\n")
    cr = raw.find(b"\r")
    if lf < 0:
        if cr >= 0:
            return None
        end, eol = size, ""
    elif lf != size - 1:
        return None
    elif cr < 0:
        end, eol = lf, "\n"
    elif cr == size - 2:
        end, eol = cr, "\r\n"
    else:
        return None
    # A payload opening with a bracket is not blank: the regex only runs otherwise.
    if raw[:1] not in _OPENERS and _NOT_BLANK.search(raw, 0, end) is None:
        return None
    head = None if record.meta else _frame_head(record, eol, end)
    if head is None:
        obj = _frame_fields(record)
        if record.meta:
            obj["meta"] = record.meta
        obj["eol"] = eol
        obj["len"] = end
        head = dump_line(obj)[:-2] + JSON_MARK
    if end == size:
        return b"".join((head, raw, b"}\n"))
    if size <= _SLICE_LIMIT:
        # A small payload's slice costs less than a memoryview (about 0.2 us).
        return b"".join((head, raw[:end], b"}\n"))
    # One copy of a big payload, joined once (a slice would copy it twice).
    with memoryview(raw) as view:
        return b"".join((head, view[:end], b"}\n"))


#: Payloads up to this size are sliced; bigger ones are viewed, not copied twice.
_SLICE_LIMIT = 64 * 1024
#: LF and CR as ints: ``bytes.find`` and ``in`` with an int are one memchr.
_LF, _CR = 0x0A, 0x0D
#: Sequence numbers orjson writes as integers (it refuses larger ones).
_SEQ_LIMIT = 1 << 63
#: A whole embedded frame line of the usual kind (``_frame_head``'s head, the
#: payload, the closing brace): seq, time, cached middle, len, payload.
_FRAME_LINE = b'{"type":"frame","seq":%d,"t":%b%b%d,"json":%b}\n'


_OPENERS = (b"{", b"[")
#: The constant middle of frame lines, per (session, direction, transport, eol).
_FRAME_MIDDLES: dict[tuple[str, str, str, str], bytes] = {}
#: Sessions are named by traffic (HTTP session ids): the cache is bounded.
_FRAME_MIDDLES_LIMIT = 256


def _frame_head(record: FrameRecord, eol: str, end: int) -> bytes | None:
    """The start of an embedded frame line up to ``"json":``, or None to use ``dump_line``.

    Byte for byte what orjson writes for the same object (its output for an
    object is the concatenation of its members' outputs), built from a cached
    middle so that each frame serializes only its seq and time. None where
    orjson would refuse a value (``dump_line`` then falls back to the stdlib).
    """
    seq, t = record.seq, record.t
    if type(seq) is not int or not 0 <= seq < _SEQ_LIMIT or type(t) is not float:
        return None
    key = (record.session, record.direction, record.transport, eol)
    middle = _FRAME_MIDDLES.get(key)
    if middle is None:
        try:
            body = orjson.dumps({"session": key[0], "dir": key[1], "transport": key[2], "eol": eol})
        except TypeError:
            return None
        if len(_FRAME_MIDDLES) >= _FRAME_MIDDLES_LIMIT:
            _FRAME_MIDDLES.clear()
        middle = _FRAME_MIDDLES[key] = b"," + body[1:-1] + b',"len":'
    return b'{"type":"frame","seq":%d,"t":%b%b%d,"json":' % (seq, orjson.dumps(t), middle, end)


def frame_line_format(session: str, direction: str, transport: str, t: float) -> bytes | None:
    """The ``%`` format of the heads of one stream read's embedded frame lines; or None.

    ``(head % (seq, len)) + payload + b"}\\n"`` is, byte for byte, ``encode_line``'s line
    for a frame with that seq (``0 <= seq < 2**63``), time ``t``, no meta,
    whose bytes are ``payload`` (JSON on one line, no CR) and a LF: the
    recording lane formats a read's frames with one head (its time and
    middle serialized once), without a record each, and hands the writer the
    three pieces (one copy of the payload, when the writer joins). None where
    ``_frame_head`` would not make the head (a time that is no float, a
    value orjson refuses): such frames take ``encode_line``.
    """
    if type(t) is not float:
        return None
    key = (session, direction, transport, "\n")
    middle = _FRAME_MIDDLES.get(key)
    if middle is None:
        try:
            body = orjson.dumps(
                {"session": session, "dir": direction, "transport": transport, "eol": "\n"}
            )
        except TypeError:
            return None
        if len(_FRAME_MIDDLES) >= _FRAME_MIDDLES_LIMIT:
            _FRAME_MIDDLES.clear()
        middle = _FRAME_MIDDLES[key] = b"," + body[1:-1] + b',"len":'
    head = b'{"type":"frame","seq":%d,"t":' + _orjson_dumps(t).replace(b"%", b"%%")
    return head + middle.replace(b"%", b"%%") + b'%d,"json":'


def dump_line(obj: dict[str, Any]) -> bytes:
    """Serialize one line. Never fails on values that came from traffic.

    orjson refuses integers beyond 64 bits, strings with lone surrogates and
    nesting deeper than 255, all of which a peer can put in an id (and the
    session then copies into message and finding records). The stdlib encoder
    writes them exactly, ASCII-escaped and still on one line; ``exact_loads`` reads
    them back. Only if that fails too (NaN/Infinity, extreme nesting) are the
    offending values replaced; the frame records, which hold the exact bytes,
    never need this.
    """
    try:
        return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        pass
    try:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError):
        text = json.dumps(_plain(obj, 0), separators=(",", ":"), allow_nan=False)
    return text.encode("ascii") + b"\n"


def _plain(value: Any, depth: int) -> Any:
    """``value`` with non-finite floats as null and very deep nesting cut off."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | list | tuple):
        if depth >= _MAX_FALLBACK_DEPTH:
            return f"<nested deeper than {_MAX_FALLBACK_DEPTH} levels>"
        if isinstance(value, dict):
            return {str(k): _plain(v, depth + 1) for k, v in value.items()}
        return [_plain(v, depth + 1) for v in value]
    return value


def exact_loads(line: bytes) -> Any:
    """Parse one line exactly; raises ``ValueError`` when it is not JSON."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        value = _NOT_PARSED
    else:
        # orjson reads integers beyond 64 bits as floats: parse such a line again, exactly.
        # A long line (a batch of 100,000 elements) is searched for a literal of 19
        # digits first, three times faster than walking its million values.
        if len(line) >= _SEARCH_FIRST and _LONG_DIGITS.search(line) is None:
            return value
        if not _may_have_lost_digits(value):
            return value
    # Also the lines ``dump_line`` wrote with the stdlib encoder (lone surrogates).
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        if value is not _NOT_PARSED:
            return value
        raise ValueError(f"not JSON: {exc}") from exc


def _may_have_lost_digits(value: Any) -> bool:
    """Whether ``value`` holds a float as large as an integer orjson reads inexactly.

    ``core.jsontypes.any_leaf`` with the test inlined: every line a reader
    reads passes here, and a call per leaf costs ``check`` 3-6%
    (``benchmarks/ab_same_process.py --only inputs``).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if abs(item) >= _INEXACT_FLOAT:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


#: Where a record line starts: its type first, as every writer writes it. A
#: nested MCP object (``{"type":"text",...}`` content) is no candidate.
_RECORD_START = re.compile(rb'\{"type":"(?:frame|event|header|message|finding|lane)"')
#: Most places a glued record is parsed from in one line that does not parse:
#: the work on a hostile line stays a few passes over it, whatever it holds.
GLUE_TRIES = 8


def glued_record(line: bytes) -> tuple[dict[str, Any], int] | None:
    """The whole record glued after a torn piece in ``line``, and where it starts; or None.

    Call only for a line that does not parse. A process killed in the middle
    of a write leaves a partial line without its newline; a relay sharing the
    trace then appends right after it, so its next line is glued to the torn
    bytes. That record is the first place a record starts from which the rest
    of the line parses as one object: a place inside the torn bytes runs into
    the appended record and does not (the torn piece lacks its closing
    brace), nor does one inside the appended record (its enclosing braces
    follow). Bounded: one regex scan, then at most ``GLUE_TRIES`` orjson
    passes over the rest of the line (no copy of it).
    """
    view = memoryview(line)
    for tries, match in enumerate(_RECORD_START.finditer(line, 1)):
        if tries == GLUE_TRIES:
            return None
        at = match.start()
        try:
            obj = orjson.loads(view[at:])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        if _may_have_lost_digits(obj):
            # orjson reads integers past 64 bits as floats; the stdlib keeps them exact.
            with contextlib.suppress(ValueError, RecursionError):
                obj = json.loads(line[at:])
        return obj, at
    return None


def header(meta: dict[str, Any] | None = None, created: float | None = None) -> dict[str, Any]:
    """The header object that opens every trace."""
    obj: dict[str, Any] = {
        "type": "header",
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "tool": f"mcpsniff/{__version__}",
    }
    if created is not None:
        obj["created"] = created
    obj["meta"] = meta or {}
    return obj


def frame_from(obj: dict[str, Any], line: bytes | None) -> FrameRecord:
    """A frame record from its parsed line (and the line, for embedded JSON)."""
    value = UNPARSED
    if "json" in obj:
        payload = _embedded_bytes(obj, line)
        raw = payload + EOL_BYTES[obj["eol"]]
        # The line was parsed whole: its value serves when it is the payload's.
        if embeds_value(line, _payload_start(line, payload)):  # type: ignore[arg-type]
            value = obj["json"]
    elif "text" in obj:
        raw = obj["text"].encode("utf-8")
    else:
        raw = base64.b64decode(obj["b64"], validate=True)
    return FrameRecord(
        obj["seq"],
        obj["t"],
        obj["session"],
        obj["dir"],
        obj["transport"],
        raw,
        obj.get("meta"),
        value,
    )


EOL_BYTES = {text: raw for raw, text in _EOLS.items()}


#: A member named "json", as a line spells it without an escape.
JSON_NAME = b'"json"'
#: Where the name starts in ``JSON_MARK``.
_NAME_AT = JSON_MARK.index(JSON_NAME)


def embeds_value(line: bytes, start: int) -> bool:
    """Whether the frame line's parsed "json" member lies within ``line[start:]``.

    ``start``: where the payload begins, right after a ``JSON_MARK``. The
    frame's bytes are cut from there to the end of the line; its value comes
    from the parse of the whole line. In a line a writer wrote, that mark
    names the last top-level member, so the bytes are the value's JSON text
    (core/model.py: ``value`` is the parsed JSON of ``raw``). A hand-made line
    can put the mark inside a nested object and the real member before it.
    It cannot when the mark holds the line's first ``"json"`` and no
    ``\\u`` escape comes before it: a member name is a string, "json" is
    spelled without an escape or with a ``\\u`` one (no other escape makes
    a letter), so every top-level "json" member, the one the parse kept
    among them, starts at the mark or after it, inside ``line[start:]``.
    False may also be an honest line (a "json" string among the fields):
    its frame is then parsed from its bytes.
    """
    at = start - len(JSON_MARK) + _NAME_AT
    return line.find(JSON_NAME) == at and line.find(b"\\u", 0, at) < 0


def _payload_start(line: bytes, payload: bytes) -> int:
    """Where ``_embedded_bytes``' ``payload`` begins in ``line``."""
    return len(line) - (2 if line.endswith(b"\n") else 1) - len(payload)


def _embedded_bytes(obj: dict[str, Any], line: bytes | None) -> bytes:
    """The verbatim payload at the end of an embedded-JSON frame line."""
    if line is None:
        raise ValueError("an embedded-JSON frame needs its line")
    size = obj["len"]
    end = len(line) - (2 if line.endswith(b"\n") else 1)
    start = end - size
    if type(size) is not int or start < 0 or line[start - len(JSON_MARK) : start] != JSON_MARK:
        raise ValueError("the embedded JSON does not end the line where len says")
    return line[start:end]
