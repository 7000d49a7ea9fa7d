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

from mcpsniff.listing.identity import Origin, SessionIdentity
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
_GLUED = re.compile(rb'\{"type":"(?:frame|event|header|message|finding|lane)"')
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
    #: Each session's name, peers, counts and ending, in order of appearance.
    identities: dict[str, SessionIdentity] = field(default_factory=dict)
    #: What the header being read says about the sessions after it.
    origin: Origin = field(default_factory=Origin)

    def identity(self, key: str) -> SessionIdentity:
        """The identity of session ``key``, made on first sight."""
        found = self.identities.get(key)
        if found is None:
            found = self.identities[key] = SessionIdentity(key, self.origin)
        return found

    @property
    def failed_launches(self) -> int:
        """Launches whose server never started (no session to speak of)."""
        return sum(1 for s in self.identities.values() if s.failed)

    @property
    def started_sessions(self) -> int:
        """Sessions that ran, launches that failed to start left out."""
        return max(0, len(self.sessions) - self.failed_launches)

    @property
    def server(self) -> str:
        """What the SERVER column shows: the newest started session's name, the same
        kind of value for every transport (``--name``, else ``serverInfo``)."""
        ran = [s for s in self.identities.values() if not s.failed]
        chosen = ran or list(self.identities.values())
        return chosen[-1].name if chosen else self.name

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
            "server": self.server,
            "sessions": self.started_sessions,
            "failed_launches": self.failed_launches,
            "launches": self.launches,
            "messages": self.messages,
            "findings": {s: self.findings[s] for s in ("error", "warning", "info")},
            "size": self.size,
            "session_titles": [s.title() for s in self.identities.values()],
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
    summary = TraceSummary(path, server_name(header), started, origin=Origin.of(header))
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


def _stamped(summary: TraceSummary, line: bytes) -> SessionIdentity | None:
    """A frame's or event's time and session, counted; its session's identity, if it names one."""
    head = line[:_HEAD]
    value = _time(head)
    if value is not None and (summary.last is None or value > summary.last):
        summary.last = value
    session = _SESSION.search(head)
    if session is None:
        return None
    summary.sessions.add(session.group(1).decode("utf-8", "replace"))
    identity = summary.identity(_key(session.group(1)))
    identity.saw_time(value)
    return identity


def _account(summary: TraceSummary, line: bytes) -> None:
    if line.startswith(_MESSAGE):
        summary.messages += 1
        session = _SESSION.search(line, 0, _HEAD)
        if session is not None:
            summary.identity(_key(session.group(1))).messages += 1
    elif line.startswith(_FRAME):
        identity = _stamped(summary, line)
        if identity is not None:
            if not identity.knows_peers and (b"serverInfo" in line or b"clientInfo" in line):
                # An initialize (or server/discover) exchange: the peers' names.
                record = _parse(line)
                if record is not None:
                    identity.saw_body(record.get("dir"), _body(record))
    elif line.startswith(_EVENT):
        identity = _stamped(summary, line)
        if identity is not None:
            record = _parse(line)
            if record is not None and isinstance(record.get("event"), str):
                data = record.get("data")
                identity.saw_event(record["event"], data if isinstance(data, dict) else {})
    elif line.startswith(_FINDING):
        record = _parse(line)
        if record is None:
            return
        severity = record.get("severity")
        if isinstance(severity, str):
            summary.findings[severity] += 1
            key = record.get("session")
            if isinstance(key, str):
                summary.identity(key).findings[severity] += 1
    elif line.startswith(_HEADER):
        summary.launches += 1
        record = _parse(line)
        if record is not None:
            summary.origin = Origin.of(record)


def _time(head: bytes) -> float | None:
    """The ``t`` of a frame or event line, when it is a plausible time."""
    found = _T.search(head)
    if found is None:
        return None
    try:
        value = float(found.group(1))
    except ValueError:
        return None
    # A hostile or damaged time (NaN, 1e300) must not become the duration.
    return value if is_time(value) else None


def _key(quoted: bytes) -> str:
    """A session key from its JSON string (escapes decoded)."""
    try:
        key = orjson.loads(quoted)
    except orjson.JSONDecodeError:
        key = None
    return key if isinstance(key, str) else quoted.decode("utf-8", "replace")


def _body(record: dict[str, Any]) -> Any:
    """A frame record's message: its ``json``, or its ``text`` (bytes not in canonical form)."""
    if "json" in record:
        return record["json"]
    text = record.get("text")
    if isinstance(text, str):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
    return None


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


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


def session_titles(path: Path, live: bool = False, counts: bool = True) -> dict[str, str]:
    """Each session of the trace at ``path`` as one line (``SessionIdentity.title``), by key.

    ``live``: a session with no recorded end is still being recorded. Empty when
    the file is no readable trace (the caller reports that its own way).
    """
    summary = summarize(path)
    if summary is None:
        return {}
    return {key: s.title(live, counts=counts) for key, s in summary.identities.items()}
