"""The JSONL trace format: the only module that knows how records look on disk.

A trace is JSON Lines. Line 1 is a header naming the format and its version;
every following line is one record whose first key is ``type``. Records are
written whole, one ``write`` per line, so a crash can tear only the last line,
and the reader tolerates exactly that. ``docs/trace-format.md`` documents the
format for people; this module is its executable definition.

Keeping ``type`` first is deliberate: ``mcpsniff check`` only needs the input
records (frames and events), and can skip derived records by looking at a
fixed byte prefix instead of parsing them.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import errno
import fcntl
import io
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any

import orjson

from mcpsniff import __version__
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import (
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.trace.longlines import ReadPast, junk_reason, line_from
from mcpsniff.trace.validate import MAX_TIME as _MAX_TIME
from mcpsniff.trace.validate import event_problem, frame_problem, header_problem, problem

FORMAT_NAME = "mcpsniff-trace"
FORMAT_VERSION = 2
#: Versions this reader can load. Bump FORMAT_VERSION only with a reader for the old one.
#: Version 2 added embedded-JSON frames ("json" + "len" + "eol"); 1 has text/b64 only.
READABLE_VERSIONS = frozenset({1, 2})
#: What precedes an embedded frame payload, which ends its line.
_JSON_MARK = b',"json":'
_EOLS = {b"": "", b"\n": "\n", b"\r\n": "\r\n"}


_TYPE_PREFIX = b'{"type":"'
#: TraceReader's file buffer (bytes): smaller than ``_BLOCK``, so that a block
#: is read from the file straight into its bytes object, not copied out of the
#: buffer (that copy cost check's reading loop 3%; the buffer serves readline).
_READ_BUFFER = 1 << 16
#: Bytes of whole lines TraceReader hands on at a time.
_BLOCK = 1 << 18
#: What stands for a line read past (TraceReader._bounded_lines): a record no reader yields.
_READ_PAST = b'{"type":"read-past"}\n'
#: The longest header line a reader takes: a header holds the server's argv and
#: provenance, never megabytes; a longer first line is no trace (``/dev/zero``,
#: a binary file) and must not be read whole into memory.
HEADER_LIMIT = 1 << 20
_FRAME_PREFIX = b'{"type":"frame"'
_EVENT_PREFIX = b'{"type":"event"'
#: The first 15 bytes of a message, finding and header line (a frame line's are
#: _FRAME_PREFIX): TraceReader.inputs() tells a line's type by them.
_DERIVED_HEADS = frozenset({b'{"type":"messag', b'{"type":"findin', b'{"type":"header'})
#: The keys of an embedded frame's fields, parsed by orjson to get its key objects.
_FRAME_KEYS = b'{"seq":0,"t":0,"session":0,"dir":0,"transport":0,"len":0,"eol":0,"json":0,"meta":0}'
#: Containers nested deeper than this are cut when no encoder can write a record whole.
_MAX_FALLBACK_DEPTH = 200
#: orjson reads integers outside [-2**63, 2**64) as floats; any float this large may be one.
_INEXACT_FLOAT = float(2**63)
_NOT_PARSED = object()


class TraceError(Exception):
    """The trace cannot be read: missing, not a trace, or corrupt before its end."""


# --------------------------------------------------------------------------- encoding


def encode_record(record: Record) -> dict[str, Any]:
    """Turn a record into the JSON object stored on its trace line."""
    if isinstance(record, FrameRecord):
        obj: dict[str, Any] = {
            "type": "frame",
            "seq": record.seq,
            "t": record.t,
            "session": record.session,
            "dir": record.direction,
            "transport": record.transport,
        }
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
            return _frame_from(obj, line)
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
        if kind == "header":
            return obj
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceError(f"malformed {kind} record: {exc!r}") from exc
    raise TraceError(f"unknown record type {kind!r}")


def encode_line(record: Record) -> bytes:
    """One complete trace line, newline included."""
    if type(record) is MessageRecord:
        # Two of every call's four records: straight to orjson (``_dumps`` and
        # its fallbacks only for a value orjson refuses).
        try:
            return _orjson_dumps(_message_object(record), option=_APPEND_NEWLINE)
        except TypeError:
            return _dumps(_message_object(record))
    if isinstance(record, FrameRecord) and record.value is not UNPARSED:
        line = _embedded_frame(record)
        if line is not None:
            return line
    return _dumps(encode_record(record))


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
    # Only a payload that is valid JSON on one line can sit inside a JSONL line:
    # no CR or LF before its terminator (LF, CRLF or none). Searched in place
    # (a slice of a 50 MB frame would be a 50 MB copy), each byte value once.
    size = len(raw)
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
        obj: dict[str, Any] = {
            "type": "frame",
            "seq": record.seq,
            "t": record.t,
            "session": record.session,
            "dir": record.direction,
            "transport": record.transport,
        }
        if record.meta:
            obj["meta"] = record.meta
        obj["eol"] = eol
        obj["len"] = end
        head = _dumps(obj)[:-2] + _JSON_MARK
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


_OPENERS = (b"{", b"[")
#: The constant middle of frame lines, per (session, direction, transport, eol).
_FRAME_MIDDLES: dict[tuple[str, str, str, str], bytes] = {}
#: Sessions are named by traffic (HTTP session ids): the cache is bounded.
_FRAME_MIDDLES_LIMIT = 256


def _frame_head(record: FrameRecord, eol: str, end: int) -> bytes | None:
    """The start of an embedded frame line up to ``"json":``, or None to use ``_dumps``.

    Byte for byte what orjson writes for the same object (its output for an
    object is the concatenation of its members' outputs), built from a cached
    middle so that each frame serializes only its seq and time. None where
    orjson would refuse a value (``_dumps`` then falls back to the stdlib).
    """
    seq, t = record.seq, record.t
    if type(seq) is not int or not 0 <= seq < 1 << 63 or type(t) is not float:
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


def _dumps(obj: dict[str, Any]) -> bytes:
    """Serialize one line. Never fails on values that came from traffic.

    orjson refuses integers beyond 64 bits, strings with lone surrogates and
    nesting deeper than 255, all of which a peer can put in an id (and the
    session then copies into message and finding records). The stdlib encoder
    writes them exactly, ASCII-escaped and still on one line; ``_loads`` reads
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


def _loads(line: bytes) -> Any:
    """Parse one line exactly; raises ``ValueError`` when it is not JSON."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        value = _NOT_PARSED
    else:
        # orjson reads integers beyond 64 bits as floats: parse such a line again, exactly.
        if not _may_have_lost_digits(value):
            return value
    # Also the lines ``_dumps`` wrote with the stdlib encoder (lone surrogates).
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        if value is not _NOT_PARSED:
            return value
        raise ValueError(f"not JSON: {exc}") from exc


def _may_have_lost_digits(value: Any) -> bool:
    """Whether ``value`` holds a float as large as an integer orjson reads inexactly."""
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
_RECORD_START = re.compile(rb'\{"type":"(?:frame|event|header|message|finding)"')
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


# --------------------------------------------------------------------------- writer


class TraceWriter:
    """Writes a trace: the header, then one whole line per record.

    Files are created with mode 0600 (docs/architecture.md, invariant 5) and an existing
    file is never overwritten unless ``overwrite`` is set, so a typo in
    ``--trace`` cannot destroy a user's file. ``mcpsniff.trace.paths`` opens an
    existing trace to append a new session to it.

    Lines are collected and written in whole lines only: a buffer is written
    when a frame or event starts while it holds 64 KiB or more, and on
    ``flush``, so that a frame and the message and finding records derived
    from it leave in one write. A writer that owns its file (``create``,
    ``paths.open_trace_file``) writes with ``O_APPEND`` under an exclusive
    ``flock``: relays that share a trace (two clients launching the same
    configuration) interleave whole groups of records, never parts of lines.

    An appending writer renames its sessions and shifts its sequence numbers
    (``session_suffix``, ``seq_offset``) so that its records never mix with
    the earlier sessions of the file.
    """

    def __init__(
        self,
        stream: IO[bytes],
        path: Path | None = None,
        *,
        locked: bool = False,
        session_suffix: str = "",
        seq_offset: int = 0,
    ) -> None:
        self._stream = stream
        self.path = path
        self.records_written = 0
        self.failed: OSError | None = None
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._locked = locked
        #: Appended to every session key this writer writes ("" for a new file).
        self.session_suffix = session_suffix
        #: Added to every sequence number this writer writes (0 for a new file).
        self.seq_offset = seq_offset
        #: Whether this writer appends a new session to an existing trace.
        self.appended = bool(session_suffix or seq_offset)
        #: A warning for the user about how the file was opened, or ``None``.
        self.note: str | None = None

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        meta: dict[str, Any] | None = None,
        created: float | None = None,
        overwrite: bool = False,
    ) -> TraceWriter:
        """Create ``path`` and write the header. Raises ``OSError`` with the reason."""
        target = Path(path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        fd = os.open(target, flags, 0o600)
        if overwrite and hasattr(os, "fchmod"):
            # O_TRUNC keeps an existing file's mode; a trace must not stay world-readable.
            try:
                os.fchmod(fd, 0o600)
            except OSError:
                os.close(fd)
                raise
        writer = cls.from_fd(fd, target)
        writer.write_header(meta, created)
        # The header reaches the disk at once: `show --follow` may open the file now.
        writer.flush()
        return writer

    @classmethod
    def from_fd(
        cls,
        fd: int,
        path: Path | None,
        *,
        session_suffix: str = "",
        seq_offset: int = 0,
    ) -> TraceWriter:
        """A writer that owns ``fd`` (opened with ``O_APPEND``) and locks it for each write."""
        stream = os.fdopen(fd, "wb", buffering=0)
        return cls(stream, path, locked=True, session_suffix=session_suffix, seq_offset=seq_offset)

    def write_header(
        self, meta: dict[str, Any] | None = None, created: float | None = None
    ) -> None:
        """Write the header line; call once, first."""
        self._write(_dumps(header(meta, created)))

    def write(self, record: Record) -> None:
        """Append one record as one line."""
        if self.appended:
            record = _shifted(record, self.session_suffix, self.seq_offset)
        if self._buffered >= _WRITE_CHUNK and type(record) in _GROUP_STARTS:
            # A group of records (a frame and what was derived from it) is complete.
            self.flush()
        line = encode_line(record)
        if self.failed is None:
            self._buffer.append(line)
            self._buffered += len(line)
        self.records_written += 1

    def write_all(self, records: list[Record]) -> None:
        """Append several records, each as its own whole line."""
        if self.appended:
            for record in records:
                self.write(record)
            return
        # ``write`` per record, inlined, with the buffer's state in locals
        # (written back before a flush, re-read after it): the recorder hands
        # over every batch here.
        self.records_written += len(records)
        if self.failed is not None:
            return
        buffer, buffered = self._buffer, self._buffered
        for record in records:
            if buffered >= _WRITE_CHUNK and type(record) in _GROUP_STARTS:
                self._buffered = buffered
                self.flush()
                if self.failed is not None:
                    return
                buffer, buffered = self._buffer, self._buffered
            line = encode_line(record)
            buffer.append(line)
            buffered += len(line)
        self._buffered = buffered

    def _write(self, line: bytes) -> None:
        if self.failed is not None:
            return
        self._buffer.append(line)
        self._buffered += len(line)

    def flush(self) -> None:
        """Write the buffered lines to the file, whole."""
        if self.failed is not None or not self._buffer:
            if self.failed is None:
                self._flush_stream()
            return
        data = self._buffer[0] if len(self._buffer) == 1 else b"".join(self._buffer)
        self._buffer = []
        self._buffered = 0
        try:
            if self._locked:
                fcntl.flock(self._stream.fileno(), fcntl.LOCK_EX)
            try:
                self._write_fully(data)
            finally:
                if self._locked:
                    fcntl.flock(self._stream.fileno(), fcntl.LOCK_UN)
        except OSError as exc:
            # Disk full or similar: remember it; the relay keeps forwarding.
            self.failed = exc
            return
        self._flush_stream()

    def _write_fully(self, data: bytes) -> None:
        with memoryview(data) as view:
            done = 0
            while done < len(view):
                written = self._stream.write(view[done:])
                if not written:
                    raise OSError(errno.EIO, "the trace file accepted no bytes")
                done += written

    def _flush_stream(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self.failed = exc

    def close(self) -> None:
        """Flush and close the file."""
        self.flush()
        try:
            self._stream.close()
        except OSError as exc:
            self.failed = self.failed or exc

    def hand_over(self) -> None:
        """Close this process's copy of the file without writing: a fork writes it now.

        What is buffered is the fork's to write (it has its own copy), so it is
        dropped here, not flushed: written twice, the records would repeat.
        The file must be let go of, not merely left alone: a fork shares the
        open file description, which is what an ``flock`` belongs to, and the
        lock a fork holds when it is killed is released only once no process
        has that description open any more. Any later write here is ignored.
        """
        self._buffer = []
        self._buffered = 0
        self.failed = self.failed or OSError(errno.EBADF, "the trace was handed over")
        # An unbuffered stream (``create``, ``from_fd``): closing writes nothing.
        with contextlib.suppress(OSError):
            self._stream.close()


#: A writer's buffer is written once it holds this many bytes and a new group starts.
_WRITE_CHUNK = 1 << 16
#: The records that start a group (the record classes are final: compared by type).
_GROUP_STARTS = frozenset({FrameRecord, EventRecord})


def _shifted(record: Record, suffix: str, offset: int) -> Record:
    """``record`` with ``suffix`` on its session key and ``offset`` on its sequence numbers."""
    session = record.session + suffix
    if isinstance(record, FrameRecord):
        return dataclasses.replace(record, seq=record.seq + offset, session=session)
    if isinstance(record, EventRecord):
        return dataclasses.replace(record, seq=record.seq + offset, session=session)
    if isinstance(record, MessageRecord):
        answers = record.answers
        return dataclasses.replace(
            record,
            frame=record.frame + offset,
            answers=None if answers is None else answers + offset,
            session=session,
        )
    return dataclasses.replace(
        record,
        seq=[q + offset for q in record.seq],
        session=session,
        message=_shift_seq_mentions(record.message, offset) if offset else record.message,
    )


#: How a finding's message names records: "seq 5", "seq 5..9" (core/rules).
_SEQ_MENTION = re.compile(r"\bseq (\d{1,18})(?:\.\.(\d{1,18}))?\b")


def _shift_seq_mentions(message: str, offset: int) -> str:
    """``message`` with the sequence numbers it names moved by ``offset``.

    The live analyzer of an appended session counts from 1; its records are
    shifted on the way to the file, and the text must point at the same
    records, not at an earlier launch's ("request 1 (ping, seq 3) was never
    answered" in the third launch of a trace).
    """

    def shift(match: re.Match[str]) -> str:
        first = int(match.group(1)) + offset
        if match.group(2) is None:
            return f"seq {first}"
        return f"seq {first}..{int(match.group(2)) + offset}"

    return _SEQ_MENTION.sub(shift, message)


# --------------------------------------------------------------------------- reader


@dataclass(slots=True)
class TornLine:
    """The torn last line of a trace: where it is and what was lost."""

    line_number: int
    length: int

    def describe(self) -> str:
        return (
            f"the last line ({self.line_number}, {self.length} bytes) is incomplete, "
            "probably cut off by a crash; it was skipped"
        )


class TraceReader:
    """Reads a trace file lazily, one record at a time.

    The header is read when the reader opens; ``TraceError`` explains what is
    wrong with a file that is not a readable trace. A torn last line is
    skipped and described in ``torn`` once iteration has reached the end.
    """

    def __init__(
        self, path: str | os.PathLike[str], on_skip: Callable[[str], None] | None = None
    ) -> None:
        self.path = Path(path)
        self.torn: TornLine | None = None
        #: Lines skipped because their record's shape is wrong, as (line, reason).
        self.skipped: list[tuple[int, str]] = []
        self._on_skip = on_skip or warn_skipped
        #: Called by ``records()`` with each appended session's header, in place.
        self.on_header: Callable[[dict[str, Any]], None] | None = None
        try:
            # Lines are read in blocks (_bounded_lines); the buffer serves the
            # header and the lines that cross blocks.
            self._file = open(self.path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed by close()
        except FileNotFoundError:
            raise TraceError(f"{self.path}: no such file") from None
        except IsADirectoryError:
            raise TraceError(f"{self.path}: is a directory, not a trace") from None
        except OSError as exc:
            raise TraceError(f"{self.path}: cannot open: {exc.strerror or exc}") from None
        first = self._file.readline(HEADER_LIMIT)
        if not first:
            self._file.close()
            raise TraceError(f"{self.path}: the file is empty, not an mcpsniff trace")
        if len(first) >= HEADER_LIMIT and not first.endswith(b"\n"):
            self._file.close()
            raise TraceError(
                f"{self.path}: not an mcpsniff trace (line 1 is longer than "
                f"{HEADER_LIMIT >> 20} MiB, no header)"
            )
        try:
            obj = _loads(first)
        except ValueError:
            self._file.close()
            raise TraceError(f"{self.path}: not an mcpsniff trace (line 1 is not JSON)") from None
        if not isinstance(obj, dict) or obj.get("format") != FORMAT_NAME:
            self._file.close()
            raise TraceError(f"{self.path}: not an mcpsniff trace (no {FORMAT_NAME} header)")
        version = obj.get("version")
        if type(version) is not int or version not in READABLE_VERSIONS:
            self._file.close()
            raise TraceError(
                f"{self.path}: trace format version {version!r} is not supported "
                f"(this mcpsniff reads {sorted(READABLE_VERSIONS)})"
            )
        reason = header_problem(obj)
        if reason is not None:
            self._file.close()
            raise TraceError(f"{self.path}: the header is malformed: {reason}")
        self.header: dict[str, Any] = obj

    def close(self) -> None:
        """Close the underlying file."""
        self._file.close()

    def _skip(self, number: int, reason: str) -> None:
        """Note (and report once) a record that does not match the format."""
        self.skipped.append((number, reason))
        self._on_skip(skip_message(self.path, number, reason))

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _lines(self) -> Iterator[tuple[int, bytes, bool]]:
        """Yield (line number, line, is_last) for every line after the header.

        Records are written whole, newline included, so a line without its
        newline can only be the torn last one.
        """
        number = 1
        for line in self._bounded_lines():
            number += 1
            if line is _READ_PAST:
                continue  # reported by _line_blocks
            yield number, line, not line.endswith(b"\n")

    def _bounded_lines(self) -> Iterator[bytes]:
        """Every line after the header, each newline included; a junk line is read past.

        A line that cannot be a record and is longer than ``longlines.PROBE``
        (a crash's tail of NUL bytes, a binary file behind a header) is
        reported here, with its length, and stands as ``_READ_PAST`` (a
        derived record, which ``inputs()`` ignores, so its line numbers stay
        right). Lines come out of whole blocks of the file: iterating them is
        C code, as ``for line in file`` was (``inputs()``, check's hot loop,
        walks the blocks of ``_line_blocks`` itself).
        """
        return chain.from_iterable(self._line_blocks())

    def _line_blocks(self) -> Iterator[Iterable[bytes]]:
        """The lines of the file in blocks: ``_BLOCK`` bytes of whole lines, or one line."""
        read, readline = self._file.read, self._file.readline
        # Lines are counted from the file only when one is reported; a pipe
        # cannot be read again, so its lines are counted as they pass.
        eager = not self._file.seekable()
        offset = 0 if eager else self._file.tell()  # where the next block starts
        counted = (offset, 1)  # (offset, number of the line ending there)
        while True:
            block = read(_BLOCK)
            if not block:
                return
            cut = len(block) if block[-1] == 10 else block.rfind(b"\n") + 1
            if cut:
                lines = io.BytesIO(block)
                if cut < len(block):
                    lines.truncate(cut)  # no copy: a slice of the block would cost check 2%
                if eager:
                    counted = (offset + cut, counted[1] + block.count(b"\n", 0, cut))
                yield lines
                if cut == len(block):
                    offset += cut
                    continue
            # The line the block ends inside: completed from the file, or read past.
            start = offset + cut
            line = line_from(readline, block[cut:])
            if not isinstance(line, ReadPast):
                offset = start + len(line)
                if eager:
                    counted = (offset, counted[1] + 1)
                yield (line,)
                continue
            offset = start + line.length
            counted = (offset, self._lines_before(start, *counted) + 1)
            if not line.ended:
                # The torn last line, as a crash leaves it (see _parse).
                self.torn = TornLine(counted[1], line.length)
                return
            self._skip(counted[1], line.describe())
            yield (_READ_PAST,)

    def _lines_before(self, end: int, start: int, number: int) -> int:
        """The number of the line ending before ``end``, line ``number`` ending at ``start``.

        Counted from the file when needed (only for a line read past): counting
        every block's newlines would cost check's loop 5%.
        """
        fd = self._file.fileno()
        while start < end:
            piece = os.pread(fd, min(end - start, _BLOCK), start)
            if not piece:
                break
            number += piece.count(b"\n")
            start += len(piece)
        return number

    def _parse(self, number: int, line: bytes, last: bool) -> dict[str, Any] | None:
        try:
            obj = _loads(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return obj
        if last:
            # A crash tears only the last line (records are written whole).
            if line.strip():
                self.torn = TornLine(number, len(line))
            return None
        glued = glued_record(line)
        if glued is not None:
            # Another writer's record appended right after a torn write: keep it.
            # Its fields are read from the end of the line (an embedded frame's
            # bytes too), so the whole line still serves to decode it.
            obj, at = glued
            self._skip(number, torn_piece_reason(at))
            return obj
        # One damaged line must not cost the rest of the trace: skip it, say so.
        self._skip(number, "not a JSON record")
        return None

    def records(self) -> Iterator[Record]:
        """Every record after the header, in file order.

        The header of a session appended by a relaunch is no record; it goes
        to ``on_header`` (when set) at its place in the file.
        """
        for number, line, last in self._lines():
            obj = self._parse(number, line, last)
            if obj is None:
                continue
            if obj.get("type") == "header":
                if self.on_header is not None:
                    reason = header_problem(obj)
                    if reason is None:
                        self.on_header(obj)
                    else:
                        self._skip(number, f"the appended header is malformed: {reason}")
                continue
            reason = problem(obj)
            if reason is not None:
                self._skip(number, reason)
                continue
            try:
                record = decode_record(obj, line)
            except TraceError as exc:
                self._skip(number, str(exc))
                continue
            if isinstance(record, dict):
                continue
            yield record

    def inputs(self) -> Iterator[FrameRecord | EventRecord]:
        """Only the analyzer's inputs (frames and events), skipping derived records fast."""
        number = 1
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        eols = _EOL_BYTES
        mark = _JSON_MARK
        marked = len(_JSON_MARK)
        frame_head = _FRAME_PREFIX
        derived_heads = _DERIVED_HEADS
        # A frame is made by calling __new__ and __init__ directly: the class
        # call takes a detour through type_call and slot_tp_init (a C-level
        # call of __init__) that costs about 400 instructions per frame.
        new_frame = object.__new__
        init_frame = FrameRecord.__init__
        for block in self._line_blocks():
            # orjson hands out one cached str object per key name: a field looked
            # up by that very object matches by identity, without comparing
            # strings (about 150 instructions per field). Taken afresh for each
            # block, in case orjson's cache has replaced one (a lookup by an
            # equal string finds the field all the same, only slower).
            (
                seq_key,
                t_key,
                session_key,
                dir_key,
                transport_key,
                len_key,
                eol_key,
                json_key,
                meta_key,
            ) = loads(_FRAME_KEYS)
            for line in block:
                number += 1
                # A record line's first 15 bytes name its type (_DERIVED_HEADS):
                # one slice, compared, instead of a method call per prefix.
                head = line[:15]
                if head == frame_head:
                    # The hot path of `mcpsniff check`: one parse, one record, no
                    # detour through decode_record. Frame lines carry no ids, so
                    # orjson's inexact big integers cannot matter.
                    try:
                        obj = loads(line)
                    except decode_error:
                        # Torn, a record glued after a torn frame line, or a line
                        # only the stdlib parses: exact (big integers too), so
                        # it is not parsed again below.
                        obj = self._parse(number, line, not line.endswith(b"\n"))
                        if obj is not None:
                            record = self._input(number, obj, line)
                            if record is not None:
                                yield record
                        continue
                    # The fields of a well-formed embedded frame, read once and
                    # checked inline (what frame_problem checks, for this shape);
                    # any other line is asked of frame_problem, whose reason names
                    # what is wrong. The checks are an if, not a boolean assigned
                    # first: only a comparison that jumps gets CPython 3.11's
                    # specialized (cheaper) comparison.
                    try:
                        seq = obj[seq_key]
                        t = obj[t_key]
                        session = obj[session_key]
                        direction = obj[dir_key]
                        transport = obj[transport_key]
                        size = obj[len_key]
                        # Also KeyError for an eol that is not one of the three,
                        # TypeError for one that cannot be a key (a list).
                        tail = eols[obj[eol_key]]
                        value = obj[json_key]
                        meta = obj.get(meta_key)
                    except (KeyError, TypeError):
                        seq = None  # fails the first check: frame_problem says what is wrong
                    if (
                        type(seq) is int
                        and type(t) is float
                        and t >= 0.0
                        and t < _MAX_TIME
                        and type(session) is str
                        and (direction == "c2s" or direction == "s2c")
                        and type(transport) is str
                        and (meta is None or type(meta) is dict)
                        and type(size) is int
                        and size >= 0
                    ):
                        # The payload ends the line, right before its "}\n" (or
                        # "}" on a last line without its newline): its bounds
                        # are counted from the end, which needs no len(line),
                        # and a slice that would start before the line is
                        # short, so it cannot equal the mark.
                        end = -2 if line[-1] == 10 else -1
                        cut = end - size
                        if line[cut - marked : cut] == mark:
                            frame = new_frame(FrameRecord)
                            init_frame(
                                frame,
                                seq,
                                t,
                                session,
                                direction,
                                transport,
                                line[cut:end] + tail,
                                meta,
                                value,
                            )
                            yield frame
                            continue
                        # len points elsewhere: the general path below says so.
                    else:
                        # orjson reads an integer beyond 64 bits as a float, so a
                        # seq or len of -2**63-1 would look "not an integer" here;
                        # the verdict is given on the exact parse, as _input does.
                        obj = _loads(line)
                        reason = frame_problem(obj)
                        if reason is not None:
                            self._skip(number, reason)
                            continue
                    try:
                        if "json" in obj:
                            # Trace v2: the frame's bytes end the line verbatim; slice them out.
                            size = obj["len"]
                            end = len(line) - 2 if line[-1:] == b"\n" else len(line) - 1
                            start = end - size
                            if type(size) is not int or line[start - marked : start] != mark:
                                raise ValueError(
                                    "the embedded JSON does not end the line where len says"
                                )
                            frame = FrameRecord(
                                obj["seq"],
                                obj["t"],
                                obj["session"],
                                obj["dir"],
                                obj["transport"],
                                line[start:end] + eols[obj["eol"]],
                                obj.get("meta"),
                                obj["json"],
                            )
                        else:
                            frame = _frame_from(obj, line)
                    except (KeyError, TypeError, ValueError, AttributeError) as exc:
                        self._skip(number, f"malformed frame record: {exc}")
                        continue
                    yield frame
                    continue
                if head in derived_heads and line[-1] == 10 and 123 not in line[1:]:
                    # A whole message, finding or header line with no "{" after
                    # its first byte: so no record glued after a torn piece of it
                    # (the rule below, by one memchr: 123 is "{"; a nested
                    # object, such as a finding's data, takes the rule below).
                    continue
                if line[-1] == 10 and line.rfind(_TYPE_PREFIX) == 0 and line[9] != 101:
                    # A whole derived record (a message, the commonest, a finding,
                    # a header: its type does not start with "e"), with no other
                    # record start in it, so nothing glued after a torn piece of it.
                    continue
                last = not line.endswith(b"\n")
                if line.startswith(_TYPE_PREFIX) and not line.startswith(_EVENT_PREFIX):
                    # A derived record, known by its first key without parsing it.
                    # Unless a record may be glued after a torn piece of it (a
                    # writer died mid-line, another appended right after): a
                    # record start after the first byte. An intact derived line
                    # has one only inside a nested object (rare: a message's
                    # object id, a finding's data), so only then is it parsed.
                    if last or line.find(_TYPE_PREFIX, 1) >= 0:
                        obj = self._parse(number, line, last)
                        if obj is not None:
                            record = self._input(number, obj, line)
                            if record is not None:
                                yield record
                    continue
                # Events, and any line not in the compact form (another writer's
                # spacing, a corrupt line): parse it rather than drop it.
                obj = self._parse(number, line, last)
                if obj is None:
                    continue
                record = self._input(number, obj, line)
                if record is not None:
                    yield record

    def _input(
        self, number: int, obj: dict[str, Any], line: bytes
    ) -> FrameRecord | EventRecord | None:
        """The frame or event parsed from line ``number`` (None: another record, or skipped)."""
        kind = obj.get("type")
        if kind != "frame" and kind != "event":
            return None
        reason = frame_problem(obj) if kind == "frame" else event_problem(obj)
        if reason is not None:
            self._skip(number, reason)
            return None
        try:
            record = decode_record(obj, line)
        except TraceError as exc:
            self._skip(number, str(exc))
            return None
        return record  # type: ignore[return-value]


def _frame_from(obj: dict[str, Any], line: bytes | None) -> FrameRecord:
    """A frame record from its parsed line (and the line, for embedded JSON)."""
    value = UNPARSED
    if "json" in obj:
        raw = _embedded_bytes(obj, line) + _EOL_BYTES[obj["eol"]]
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


_EOL_BYTES = {text: raw for raw, text in _EOLS.items()}


def _embedded_bytes(obj: dict[str, Any], line: bytes | None) -> bytes:
    """The verbatim payload at the end of an embedded-JSON frame line."""
    if line is None:
        raise ValueError("an embedded-JSON frame needs its line")
    size = obj["len"]
    end = len(line) - (2 if line.endswith(b"\n") else 1)
    start = end - size
    if type(size) is not int or start < 0 or line[start - len(_JSON_MARK) : start] != _JSON_MARK:
        raise ValueError("the embedded JSON does not end the line where len says")
    return line[start:end]


class TraceTail:
    """Incremental reader for a growing trace (``mcpsniff show --follow``).

    ``poll()`` returns the records completed since the last call; a partial
    last line stays buffered until its newline arrives.
    """

    def __init__(
        self, path: str | os.PathLike[str], on_skip: Callable[[str], None] | None = None
    ) -> None:
        self.path = Path(path)
        self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        #: The line not ended yet: the pieces read of it, its length (also
        #: when read past), and why it is read past (None: it is kept).
        self._pieces: list[bytes] = []
        self._pending = 0
        self._discarding: str | None = None
        self._line = 0
        #: Whether the last ``poll(max_bytes=...)`` stopped before the end of the file.
        self.more = False
        self.header: dict[str, Any] | None = None
        self._on_skip = on_skip or warn_skipped

    def poll(self, *, final: bool = False, max_bytes: int | None = None) -> list[Record]:
        """Records whose lines were completed since the previous poll.

        With ``final``, a last line without its newline counts too when it is a
        whole record (the writer stopped right before the newline). With
        ``max_bytes``, at most that much of the file is read by this call
        (``more`` then says whether the file holds more already): a reader
        such as ``show`` then holds one chunk of a multi-gigabyte trace at a
        time, not all of it.
        """
        chunk = self._file.read(-1 if max_bytes is None else max_bytes)
        self.more = max_bytes is not None and len(chunk) == max_bytes
        if not chunk and not (final and self._pending):
            return []
        lines = self._complete_lines(chunk)
        if final and self._pending and not self.more:
            lines.append(self._unfinished(ended=False))
        out: list[Record] = []
        for line in lines:
            self._line += 1
            if isinstance(line, ReadPast):
                if self._line > 1:  # line 1 is no record, only maybe the header
                    self._on_skip(skip_message(self.path, self._line, line.describe()))
                continue
            if not line.strip():
                continue
            try:
                obj = _loads(line)
            except ValueError:
                glued = glued_record(line) if self._line > 1 else None
                if glued is None:
                    if self._line > 1:
                        self._on_skip(skip_message(self.path, self._line, "not a JSON record"))
                    continue
                obj, at = glued
                self._on_skip(skip_message(self.path, self._line, torn_piece_reason(at)))
            if isinstance(obj, dict) and obj.get("type") == "header":
                # Line 1 is the file's header; a later one starts a session
                # appended by a relaunch (paths.open_trace_file), not damage.
                if self._line == 1:
                    self.header = obj
                continue
            reason = problem(obj)
            if reason is None:
                try:
                    record = decode_record(obj, line)
                except TraceError as exc:
                    reason = str(exc)
            if reason is not None:
                self._on_skip(skip_message(self.path, self._line, reason))
                continue
            if not isinstance(record, dict):
                out.append(record)
        return out

    def _complete_lines(self, chunk: bytes) -> list[bytes | ReadPast]:
        """The lines ``chunk`` ends (newlines dropped); its unended rest is kept or read past.

        The unfinished line is kept as its pieces, joined once when its
        newline comes (joining it to every poll's chunk was quadratic: ``show``
        did not finish on a 2 GB tail), and one that cannot be a record
        (``longlines.junk_reason``) is not kept at all.
        """
        cut = chunk.rfind(b"\n")
        if cut < 0:
            self._keep(chunk)
            return []
        lines: list[bytes | ReadPast] = []
        lines.extend(chunk[:cut].split(b"\n") if cut else [b""])
        if self._pending:
            lines[0] = self._unfinished(lines[0])
        if cut + 1 < len(chunk):
            self._keep(chunk[cut + 1 :])
        return lines

    def _keep(self, piece: bytes) -> None:
        """Add ``piece`` to the unfinished line, unless that line is read past."""
        self._pending += len(piece)
        if self._discarding is None:
            self._pieces.append(piece)
            self._discarding = junk_reason(self._pieces[0], self._pending)
            if self._discarding is not None:
                self._pieces = []

    def _unfinished(self, end: bytes = b"", *, ended: bool = True) -> bytes | ReadPast:
        """The unfinished line, ended by ``end`` (its newline dropped); or what was read past."""
        self._pending += len(end)
        line: bytes | ReadPast
        if self._discarding is not None:
            line = ReadPast(self._pending + ended, ended, self._discarding)
        else:
            line = b"".join([*self._pieces, end])
        self._pieces, self._pending, self._discarding = [], 0, None
        return line

    def close(self) -> None:
        """Close the underlying file."""
        self._file.close()


def skip_message(path: Path, number: int, reason: str) -> str:
    """The one warning for a skipped record: where it is and why."""
    return f"{path}: line {number}: {terminal_safe(reason)}; the record was skipped"


def torn_piece_reason(length: int) -> str:
    """Why the first ``length`` bytes of a line were skipped: a torn write, a record glued after."""
    return (
        f"not a JSON record: its first {length} bytes are a torn write (probably cut off "
        "by a crash) with another record glued after them, which was read"
    )


def warn_skipped(message: str) -> None:
    """The default report of a skipped record: one line on stderr."""
    sys.stderr.write(f"mcpsniff: warning: {terminal_safe(message)}\n")
