"""Reading a trace that may still grow, remembering where each record starts.

``TraceTail`` (mcpsniff/trace/tail.py) returns records; the UI also needs
each frame's byte offset, so that a message's body and raw bytes can be read
back when someone clicks it instead of being held in memory for every
message of every trace. Reads are bounded per call (``limit``), so one huge
trace cannot stall the server that polls many.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord, Record
from mcpsniff.filter.reading import _frame_head, _message
from mcpsniff.trace.codec import (
    FORMAT_NAME,
    READABLE_VERSIONS,
    TraceError,
    decode_record,
    exact_loads,
    glued_record,
)
from mcpsniff.trace.lanes import LaneMerge
from mcpsniff.trace.longlines import LINE_LIMIT, NOT_A_RECORD, junk_reason
from mcpsniff.trace.reader import HEADER_LIMIT, torn_piece_reason
from mcpsniff.trace.validate import checked_record, message_problem, problem

_FRAME = b'{"type":"frame"'
_MESSAGE = b'{"type":"message"'
#: Bytes read from one file per poll. (The longest line read is the readers'
#: ``longlines.LINE_LIMIT``; the detail view's ``read_record_at`` reads no more.)
READ_LIMIT = 8 << 20
#: Skipped-record notes kept per trace (the count goes on).
SKIP_NOTES = 20


@dataclass(slots=True)
class Header:
    """A header line: the file's first, or the one an appended session starts with."""

    offset: int
    value: dict[str, Any]


@dataclass
class OffsetTail:
    """Incremental reader of a trace file yielding ``(offset, record)`` pairs.

    Memory stays bounded on any file: the unfinished last line is kept as the
    pieces read so far (joined once, when its newline comes, not copied on
    every poll), and a line the readers' rules (``trace.longlines.junk_reason``)
    read past, one of ``PROBE`` bytes or more that does not start with ``{``
    (a tail of NUL bytes a crash left, binary junk) or one longer than
    ``LINE_LIMIT``, is skipped as it is read, not kept.
    """

    path: Path
    #: False: message records are passed over unread (a pass that wants the
    #: other records only: session starts, findings); see ``_plain_message``.
    messages: bool = True
    position: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    first_header: dict[str, Any] | None = None
    #: The unfinished line read so far: its pieces, and its length (also when discarded).
    _pieces: list[bytes] = field(default_factory=list)
    _pending: int = 0
    #: Why the unfinished line is being skipped as it is read, or None when it is kept.
    _discarding: str | None = None
    _line: int = 0
    #: Merges the records of a two-lane trace, from its first lane record on.
    _lanes: LaneMerge | None = None

    @property
    def consumed(self) -> int:
        """Bytes of the file read so far (a partial last line included)."""
        return self.position + self._pending

    def poll(self, limit: int = READ_LIMIT) -> tuple[list[tuple[int, Record | Header]], bool]:
        """Records completed since the last call, and whether more bytes are waiting.

        Raises ``TraceError`` when the file's first line is not an mcpsniff header
        of a version this mcpsniff reads.
        """
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.position + self._pending)
                chunk = handle.read(limit)
                more = bool(chunk) and handle.read(1) != b""
        except OSError as exc:
            raise TraceError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        if not chunk:
            return [], False
        out: list[tuple[int, Record | Header]] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            self._line += 1
            length = self._pending + end - start
            if self._discarding is not None:
                self._skip(self._discarding)
            else:
                piece = chunk[start:end]
                line = b"".join([*self._pieces, piece]) if self._pieces else piece
                item = self._parse(line, self.position)
                if item is not None:
                    # _parse makes the merge at a trace's first lane record.
                    if self._lanes is None:
                        out.append(item)
                    else:
                        out.extend(self._merged(item, length))
            self.position += length + 1
            self._pieces, self._pending, self._discarding = [], 0, None
            start = end + 1
        if start < len(chunk):
            self._unfinished(chunk[start:])
        return out, more

    def finish(self) -> list[tuple[int, Record | Header]]:
        """What a two-lane trace's merge still holds, once the file is read to its end.

        For a reader that reads a trace once (a report, a scan), not one that
        follows it: a follower waits for the ``through`` that covers them.
        """
        return [] if self._lanes is None else self._kept(self._lanes.finish())

    def _merged(
        self, item: tuple[int, Record | Header | dict[str, Any]], size: int
    ) -> list[tuple[int, Record | Header]]:
        """The items due once ``item`` is read: a two-lane trace's, merged (trace/lanes.py)."""
        assert self._lanes is not None  # made by _parse
        value = item[1]
        if type(value) is dict:
            due, reason = self._lanes.lane(value)
            if reason is not None:
                self._skip(reason)
        else:
            record = None if isinstance(value, Header) else value
            due = self._lanes.feed(record, item, size)
        return self._kept(due)

    def _kept(self, due: list[Any]) -> list[tuple[int, Record | Header]]:
        """``due`` without message records when they are not wanted (``messages``)."""
        if self.messages:
            return due
        return [item for item in due if type(item[1]) is not MessageRecord]

    def _unfinished(self, piece: bytes) -> None:
        """Keep (or skip) ``piece``, the start or next part of a line with no newline yet."""
        self._pending += len(piece)
        if self._discarding is not None:
            return
        self._pieces.append(piece)
        if self._line == 0 and self._pending > HEADER_LIMIT:
            # The reader's rule (TraceReader): a header is never megabytes, and
            # a file whose first line is (/dev/zero, a 2 GB binary) is no trace.
            raise TraceError(
                f"{self.path}: not an mcpsniff trace (line 1 is longer than "
                f"{HEADER_LIMIT >> 20} MiB, no header)"
            )
        if self._line == 0:
            return  # the header: judged whole when its newline comes
        # The rules every reader shares (TraceTail, LazyTraceRecords): a short
        # line is kept whatever it holds and judged whole (a record may be glued
        # after a torn piece of it); a long one only while it may be a record.
        self._discarding = junk_reason(self._pieces[0], self._pending)
        if self._discarding is not None:
            self._pieces = []

    def _skip(self, reason: str) -> None:
        self.skipped += 1
        if len(self.notes) < SKIP_NOTES:
            self.notes.append(f"line {self._line}: {reason}")

    def _parse(self, line: bytes, offset: int) -> tuple[int, Record | Header] | None:
        if not line.strip():
            return None
        if self._line > 1 and line.startswith(_FRAME):
            # Most of a trace's bytes are frame payloads: keep them unparsed
            # until a view needs the body (as `stats` and `show` read traces).
            frame = _frame_head(line)
            if frame is not None and _plausible(frame):
                return offset, frame
        if line.startswith(_MESSAGE):
            # In a two-lane trace a message record places the findings after it
            # (trace/lanes.py): it is read, and left out after the merge.
            if not self.messages and self._lanes is None and _plain_message(line):
                return None
            # The commonest derived record: one orjson parse, the exact parser only
            # for an id beyond 64 bits (as LazyTraceRecords reads them), and the
            # same shape checks as every record (a hostile trace may hold anything).
            obj = _message(line)
            if obj is not None and message_problem(obj) is None:
                try:
                    return offset, decode_record(obj, line)  # type: ignore[return-value]
                except TraceError:
                    pass  # counted as skipped below, with the full checks' reason
        try:
            obj = exact_loads(line)
        except ValueError:
            obj = None
        if self._line == 1:
            if not isinstance(obj, dict) or obj.get("format") != FORMAT_NAME:
                raise TraceError(f"{self.path}: not an mcpsniff trace (no {FORMAT_NAME} header)")
            version = obj.get("version")
            if type(version) is not int or version not in READABLE_VERSIONS:
                # As every other reader says (TraceReader): a newer format may
                # mean something else by the same fields.
                raise TraceError(
                    f"{self.path}: trace format version {version!r} is not supported "
                    f"(this mcpsniff reads {sorted(READABLE_VERSIONS)})"
                )
            self.first_header = obj
            return offset, Header(offset, obj)
        if obj is None:
            glued = glued_record(line)
            if glued is not None:
                # Another writer's record appended right after a torn write: it
                # is kept, at its own offset (read_record_at reads it from there).
                obj, at = glued
                offset += at
                self._skip(torn_piece_reason(at))
        if isinstance(obj, dict) and obj.get("type") == "header":
            return offset, Header(offset, obj)
        record, reason = (None, NOT_A_RECORD) if obj is None else checked_record(obj, line)
        if reason is not None:
            self._skip(reason)
            return None
        if type(record) is dict and self._lanes is None:
            # A lane record (headers went above): a two-lane trace, merged from here on.
            self._lanes = LaneMerge()
        return offset, record


def trace_records(path: Path, messages: bool = True) -> Iterator[Record]:
    """Every record of the trace at ``path`` as the UI reads it: checked, bodies unparsed.

    Raises ``TraceError`` when the file is not a trace. Records that do not
    have the format's shape are skipped, as everywhere. ``messages`` False
    leaves the message records out, unparsed (most of a trace's records).
    """
    tail = OffsetTail(path, messages)
    while True:
        items, more = tail.poll()
        if not more:
            items.extend(tail.finish())
        for _, item in items:
            if not isinstance(item, Header):
                yield item
        if not more:
            break


def _plain_message(line: bytes) -> bool:
    """Whether a line that starts as a message record can be nothing else.

    Its one ``"type"`` key says ``message``: a line with a second one, or with
    an escape that may spell one (``"typ\\u0065"``), could be read as another
    record by a JSON parser that keeps the last of duplicate keys, so it is
    parsed as usual.
    """
    return b"\\" not in line and line.count(b'"type"') == 1


def _plausible(frame: FrameRecord) -> bool:
    """The head fields of a fast-read frame have the types the format gives them."""
    return (
        type(frame.seq) is int
        and type(frame.t) in (int, float)
        and type(frame.session) is str
        and frame.direction in ("c2s", "s2c")
        and type(frame.transport) is str
        and (frame.meta is None or type(frame.meta) is dict)
    )


def read_record_at(path: Path, offset: int, limit: int = LINE_LIMIT) -> Record | None:
    """The frame or event record whose line starts at ``offset`` in ``path``, or ``None``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            line = handle.readline(limit)
    except OSError:
        return None
    return decode_line(line)


def decode_line(line: bytes) -> Record | None:
    """The frame or event record a trace line holds, or ``None`` (not one, or not valid).

    An embedded-JSON frame is read from its head, as ``OffsetTail`` reads it: its
    payload (a batch of 100,000 elements) is not parsed until a view needs it.
    """
    if line.startswith(_FRAME):
        frame = _frame_head(line)
        if frame is not None and _plausible(frame):
            return frame
    try:
        obj = exact_loads(line)
        if problem(obj) is not None:
            return None
        record = decode_record(obj, line)
    except (ValueError, TraceError):
        return None
    return record if isinstance(record, FrameRecord | EventRecord) else None


def file_size(path: Path) -> int:
    """The size of ``path`` in bytes (0 when it is gone)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
