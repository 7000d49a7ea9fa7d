"""What ``ls`` says about one trace file, from one pass over its lines.

Only the cheap parts of a line are read: a message line is counted by its
prefix, a frame's time and session come from its first 300 bytes, and only
the small finding and event lines are parsed in full; a line with a record
start after its first byte is handed to ``glued_record``, as every reader
does, so a record glued after a torn write counts. A file that is not a
readable trace is skipped, never an error (a state folder may hold anything),
but the caller is told which and why, so that a damaged trace is not lost
without a word.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from mcpsniff.trace.codec import TraceError, glued_record
from mcpsniff.trace.longlines import PROBE, line_from
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.validate import is_time, problem

_MESSAGE = b'{"type":"message"'
_FINDING = b'{"type":"finding"'
_FRAME = b'{"type":"frame"'
_EVENT = b'{"type":"event"'
_HEADER = b'{"type":"header"'
_T = re.compile(rb'"t":(-?[0-9.eE+-]+)')
_SESSION = re.compile(rb'"session":("(?:[^"\\]|\\.)*")')
_BUFFER = 1 << 18
#: A record start after a line's first byte: maybe a record glued after a torn
#: write (``trace.codec.glued_record`` decides). Content items such as
#: ``{"type":"text"`` are no record start, so a frame rarely has one inside.
_GLUED = re.compile(rb'\{"type":"(?:frame|event|header|message|finding)"')
#: Bytes of a line's previous piece searched again with the next (a start cut in two).
_OVERLAP = 32
#: The head of a frame or event line, where its time, session and size are.
_HEAD = 300
#: The most of one line a summary reads (a finding line is far shorter; a frame's
#: head is its first 300 bytes).
LINE_HEAD = 1 << 20


@dataclass
class TraceSummary:
    """One row of ``ls``."""

    path: Path
    name: str
    started: float | None
    last: float | None = None
    sessions: set[str] = field(default_factory=set)
    launches: int = 1
    messages: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    size: int = 0
    #: When the file last changed (sorts a trace whose header has no time).
    mtime: float = 0.0

    @property
    def duration(self) -> float | None:
        if self.started is None or self.last is None:
            return None
        return max(0.0, self.last - self.started)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "name": self.name,
            "started": self.started,
            "duration_s": self.duration,
            "sessions": len(self.sessions),
            "launches": self.launches,
            "messages": self.messages,
            "findings": {s: self.findings[s] for s in ("error", "warning", "info")},
            "size": self.size,
        }


def server_name(header: dict[str, Any]) -> str:
    """The name a trace's header gives its server: label, upstream, or the source."""
    meta = header.get("meta") if isinstance(header.get("meta"), dict) else {}
    for key in ("label", "upstream", "source"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return "?"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file ``ls`` left out, and why (the reason names the file)."""

    path: Path
    reason: str


def summarize(path: Path, skipped: list[Skipped] | None = None) -> TraceSummary | None:
    """The summary of the trace at ``path``, or ``None`` when it is not a readable trace.

    Then, with ``skipped``, the reason is appended to it.
    """
    try:
        with TraceReader(path) as reader:
            header = reader.header
    except TraceError as exc:
        return _skip(path, str(exc), skipped)
    except OSError as exc:
        return _skip(path, f"{path}: cannot read: {exc.strerror or exc}", skipped)
    created = header.get("created")
    started = float(created) if is_time(created) else None
    summary = TraceSummary(path, server_name(header), started)
    try:
        info = os.stat(path)
        summary.size, summary.mtime = info.st_size, info.st_mtime
        with open(path, "rb", buffering=_BUFFER) as handle:
            lines = _line_heads(handle)
            next(lines, None)  # the header, read above
            for line in lines:
                if line.endswith(b"\n") and _GLUED.search(line, 1) is not None:
                    # As every reader does: a torn piece is no record, and the
                    # whole record glued after it is counted (None: an intact
                    # line with a record start nested in it).
                    glued = glued_record(line)
                    if glued is not None:
                        obj, at = glued
                        if obj.get("type") == "header" or problem(obj) is None:
                            _account(summary, line[at:])
                        continue
                _account(summary, line)
    except OSError as exc:
        return _skip(path, f"{path}: cannot read: {exc.strerror or exc}", skipped)
    return summary


def _line_heads(handle: BinaryIO) -> Iterator[bytes]:
    """Each line of ``handle``, or its first ``LINE_HEAD`` bytes when it is longer.

    A summary reads no more than a record's head (a finding's whole line is
    short), and a line may be anything: a 50 MB frame, or a crash's tail of
    2 GB of NUL bytes, which ``for line in handle`` held whole (4.2 GB). A long
    line with a record start after its first byte may hold a record glued after
    a torn write: it is read again whole, as the other readers read it
    (``trace.longlines``: within their limit, and only if it may be a record).
    """
    position = 0
    while True:
        line = handle.readline(LINE_HEAD)
        if not line:
            return
        start = position
        position += len(line)
        if len(line) == LINE_HEAD and not line.endswith(b"\n"):
            suspect = _GLUED.search(line, 1) is not None
            piece = line
            while len(piece) == LINE_HEAD and not piece.endswith(b"\n"):
                more = handle.readline(LINE_HEAD)  # the rest of a long line, unread
                position += len(more)
                if not suspect:
                    seam = piece[-_OVERLAP:] + more[:_OVERLAP]
                    suspect = _GLUED.search(seam) is not None or _GLUED.search(more) is not None
                piece = more
            if suspect and piece.endswith(b"\n"):
                handle.seek(start)
                whole = line_from(handle.readline, handle.readline(PROBE))
                handle.seek(position)
                if isinstance(whole, bytes):
                    line = whole
        yield line


def _skip(path: Path, reason: str, skipped: list[Skipped] | None) -> None:
    if skipped is not None:
        skipped.append(Skipped(path, reason))
    return None


def _account(summary: TraceSummary, line: bytes) -> None:
    if line.startswith(_MESSAGE):
        summary.messages += 1
    elif line.startswith((_FRAME, _EVENT)):
        head = line[:_HEAD]
        t = _T.search(head)
        if t is not None:
            try:
                value = float(t.group(1))
            except ValueError:
                value = None
            # A hostile or damaged time (NaN, 1e300) must not become the duration.
            if not is_time(value):
                value = None
            if value is not None and (summary.last is None or value > summary.last):
                summary.last = value
        session = _SESSION.search(head)
        if session is not None:
            summary.sessions.add(session.group(1).decode("utf-8", "replace"))
    elif line.startswith(_FINDING):
        try:
            severity = orjson.loads(line).get("severity")
        except orjson.JSONDecodeError:
            return
        if isinstance(severity, str):
            summary.findings[severity] += 1
    elif line.startswith(_HEADER):
        summary.launches += 1


def list_traces(folder: Path, skipped: list[Skipped] | None = None) -> list[TraceSummary]:
    """The traces directly in ``folder`` (``*.jsonl``), newest first.

    Files that are no readable trace are left out; with ``skipped``, each is
    appended to it with its reason, in name order.
    """
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name.startswith(".") or not path.is_file():
            continue
        row = summarize(path, skipped)
        if row is not None:
            rows.append(row)
    # Never stat again here: a trace removed meanwhile (a rotation) must not end ls.
    rows.sort(key=lambda r: r.started or r.mtime, reverse=True)
    return rows
