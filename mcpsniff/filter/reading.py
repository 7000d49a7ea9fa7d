"""Reading a trace's records for views, parsing a frame's body only when it is needed.

``TraceReader.records()`` parses every frame's embedded JSON, which is most of
a trace's bytes. Views need a body only now and then (a ``tools/call`` result's
``isError``, a cancellation's ``requestId``, free text), and ``MessageView.body``
parses it on demand; so here a frame line is parsed only up to its ``"json"``
member, and the verbatim bytes after it are kept as the frame's raw bytes.
This is what lets ``stats`` read a long trace faster than ``check`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from mcpsniff.core.model import FrameRecord, Record
from mcpsniff.trace.codec import TraceError, exact_loads, glued_record
from mcpsniff.trace.lanes import LaneMerge
from mcpsniff.trace.longlines import PROBE, ReadPast, line_from
from mcpsniff.trace.reader import (
    TornLine,
    TraceReader,
    skip_message,
    torn_piece_reason,
    warn_skipped,
)
from mcpsniff.trace.validate import checked_record, frame_problem

_FRAME = b'{"type":"frame"'
_MESSAGE = b'{"type":"message"'
#: orjson reads integers outside 64 bits as floats; such an id needs the exact parser.
_INEXACT = float(2**63)
_MARK = b',"json":'
_EOLS = {"": b"", "\n": b"\n", "\r\n": b"\r\n"}
_BUFFER = 1 << 18


class LazyTraceRecords:
    """Iterates the records of a trace file; frames keep their body unparsed.

    Raises ``TraceError`` as ``TraceReader`` does (opening a non-trace, a
    corrupt line before the end); a torn last line is skipped and described
    in ``torn``. A record whose fields do not match the trace format (a hostile
    or damaged trace) is skipped and reported to ``on_skip``, as the reader does,
    so views can trust the types of what they get.
    """

    def __init__(
        self, path: str | os.PathLike[str], on_skip: Callable[[str], None] | None = None
    ) -> None:
        self.path = Path(path)
        with TraceReader(self.path) as reader:
            self.header = reader.header
        self.torn: TornLine | None = None
        self._on_skip = on_skip or warn_skipped

    def __iter__(self) -> Iterator[Record]:
        try:
            handle = open(self.path, "rb", buffering=_BUFFER)  # noqa: SIM115 - closed below
        except OSError as exc:
            raise TraceError(f"{self.path}: cannot open: {exc.strerror or exc}") from None
        with handle:
            readline = handle.readline
            line_from(readline, readline(PROBE))  # the header, checked when this object was made
            number = 1
            merge: LaneMerge | None = None
            while line := readline(PROBE):
                number += 1
                if len(line) == PROBE and not line.endswith(b"\n"):
                    # A line this long may be junk: read past it, not held
                    # (trace/longlines.py, the rules every reader shares).
                    whole = line_from(readline, line)
                    if isinstance(whole, ReadPast):
                        if not whole.ended:
                            self.torn = TornLine(number, whole.length)
                        else:
                            self._on_skip(skip_message(self.path, number, whole.reason))
                        continue
                    line = whole
                last = not line.endswith(b"\n")
                if line.startswith(_FRAME):
                    frame = _frame_head(line)
                    if frame is not None:
                        if merge is None:
                            yield frame
                        else:
                            yield from merge.feed(frame, frame, len(line))
                        continue
                obj = _message(line) if line.startswith(_MESSAGE) else None
                if obj is None:
                    try:
                        obj = exact_loads(line)
                    except ValueError:
                        obj = None
                if not isinstance(obj, dict):
                    if last:
                        if line.strip():
                            self.torn = TornLine(number, len(line))
                        continue
                    glued = glued_record(line)
                    if glued is None:
                        # One damaged line must not cost the rest of the trace.
                        self._on_skip(skip_message(self.path, number, "not a JSON record"))
                        continue
                    # Another writer's record appended right after a torn write: keep it.
                    obj, at = glued
                    self._on_skip(skip_message(self.path, number, torn_piece_reason(at)))
                if obj.get("type") == "header":
                    continue  # an appended session's header
                record, reason = checked_record(obj, line)
                if reason is not None:
                    self._on_skip(skip_message(self.path, number, reason))
                    continue
                if isinstance(record, dict):
                    # A lane record (headers went above): a two-lane trace,
                    # merged from here on (trace/lanes.py).
                    if merge is None:
                        merge = LaneMerge()
                    due, reason = merge.lane(record)
                    if reason is not None:
                        self._on_skip(skip_message(self.path, number, reason))
                    yield from due
                elif merge is None:
                    yield record
                else:
                    yield from merge.feed(record, record, len(line))
            if merge is not None:
                yield from merge.finish()


def _frame_head(line: bytes) -> FrameRecord | None:
    """An embedded-JSON frame from its head alone, or ``None`` to parse the line in full."""
    end = len(line) - 2 if line.endswith(b"}\n") else len(line) - 1
    cut = line.find(_MARK)
    if cut < 0 or line[end : end + 1] != b"}":
        return None
    try:
        head = orjson.loads(line[:cut] + b"}")
        # A head of the wrong shape takes the full path, which reports it.
        if type(head) is not dict or frame_problem({**head, "json": None}) is not None:
            return None
        size = head["len"]
        start = cut + len(_MARK)
        # The payload must fill exactly the rest of the line: otherwise the
        # match was inside a string or meta, and the full parse decides.
        if type(size) is not int or end - start != size:
            return None
        return FrameRecord(
            head["seq"],
            head["t"],
            head["session"],
            head["dir"],
            head["transport"],
            line[start:end] + _EOLS[head["eol"]],
            head.get("meta"),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _message(line: bytes) -> dict[str, object] | None:
    """A message line parsed fast, or ``None`` when only the exact parser will do.

    Of a message record's members only ``id`` and ``error_code`` come from
    traffic and may hold an integer beyond 64 bits, which orjson would turn
    into a float; such a line (or an id that is an object or array) goes to
    the exact parser instead.
    """
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    for key in ("id", "error_code"):
        value = obj.get(key)
        if isinstance(value, dict | list) or (type(value) is float and abs(value) >= _INEXACT):
            return None
    return obj
