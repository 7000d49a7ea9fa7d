"""Writing a trace: the header, then one whole line per record.

A two-lane stdio capture (mcpsniff/capture/lanes.py) writes one trace from two
processes: the recording lane's ``TraceWriter`` (``open_lanes``) writes the
input records and a ``lane ... open`` record before each session's first, the
derived lane's ``DerivedWriter`` the derived records and the ``lane`` records
that say which input they follow and how far the derived lane has come
(docs/trace-format.md, the ``lane`` record).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import re
from pathlib import Path
from typing import IO, Any

from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord, Record
from mcpsniff.trace.codec import dump_line, encode_line, header


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
        #: The sessions this writer opened as lane sessions (``open_lanes``), unshifted;
        #: None: a one-lane trace.
        self._lanes: dict[str, None] | None = None
        self._lost = False

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
        self._write(dump_line(header(meta, created)))

    def open_lanes(self) -> None:
        """From now on, write a ``lane ... open`` record before each session's first record.

        The recording lane's writer: the session's derived records come from
        the derived lane (``DerivedWriter``) and may come after later inputs.
        """
        if self._lanes is None:
            self._lanes = {}

    def write_lost(self) -> None:
        """Say once, for every lane session opened, that no more derived records will come."""
        if self._lanes is None or self._lost:
            return
        self._lost = True
        for session in self._lanes:
            self._write(lane_line(session + self.session_suffix, "lost", 1))

    def _open_lane(self, session: str) -> None:
        assert self._lanes is not None
        if session not in self._lanes:
            self._lanes[session] = None
            self._write(lane_line(session + self.session_suffix, "open", 1))

    def write(self, record: Record) -> None:
        """Append one record as one line."""
        if self._lanes is not None and record.session not in self._lanes:
            self._open_lane(record.session)
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
        lanes = self._lanes
        if self.appended or (
            lanes is not None and not lanes.keys() >= {r.session for r in records}
        ):
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

    def takes_lines(self, session: str) -> bool:
        """Whether ``write_lines`` may take ``session``'s frame lines as ``encode_line`` made them.

        Not for an appending writer (it shifts seqs and renames sessions), nor
        before a lane session's ``lane ... open`` record is written.
        """
        lanes = self._lanes
        return not self.appended and (lanes is None or session in lanes)

    def write_lines(self, pieces: list[bytes], records: int) -> None:
        """Append ``records`` frame lines as ``encode_line`` makes them: ``pieces``, whole lines.

        ``takes_lines`` says for whose session. Each frame starts a group of
        its own: the buffer is written first once it holds ``_WRITE_CHUNK``
        bytes, as ``write`` does before a frame, but once for the lines of a
        read, not before each.
        """
        self.records_written += records
        if self.failed is not None:
            return
        if self._buffered >= _WRITE_CHUNK:
            self.flush()
            if self.failed is not None:
                return
        self._buffer += pieces
        self._buffered += sum(map(len, pieces))

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

    def fileno(self) -> int:
        """The file descriptor written to (-1 once closed, or for a stream without one)."""
        try:
            return self._stream.fileno()
        except (OSError, ValueError, AttributeError):
            return -1

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


class DerivedWriter(TraceWriter):
    """The derived lane's writer: derived records only, and the ``lane`` records they need.

    Fed every record of a full analysis (inputs included, in the analysis's
    order), it writes the derived ones (message, finding, ``analyzer-error``
    event records) and drops the inputs, which the recording lane has
    written. Before the derived records of input N whose first is not a
    message record of frame N it writes ``{"type":"lane","session":S,"input":N}``;
    each write ends with ``{"type":"lane","session":S,"through":N}`` for
    every session whose inputs up to N are all analyzed since the last one.
    It shares the recording lane's session suffix and seq offset (it never
    writes a header: open it with ``from_fd``), and like every writer writes
    whole lines in one write under ``flock``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Per session (unshifted): the seq of its latest input.
        self._input: dict[str, int] = {}
        #: Per session: the seq of its input before that (all its derived records are buffered).
        self._complete: dict[str, int] = {}
        #: Sessions whose latest input has no derived record written yet.
        self._fresh: set[str] = set()
        #: Per session: the last ``through`` written.
        self._through: dict[str, int] = {}

    def write(self, record: Record) -> None:
        """Take one record of the analysis's output (an input is noted, not written)."""
        self.write_all([record])

    def write_all(self, records: list[Record]) -> None:
        """Take the analysis's output: inputs noted, derived records written."""
        current, fresh = self._input, self._fresh
        suffix, offset, appended = self.session_suffix, self.seq_offset, self.appended
        for record in records:
            kind = type(record)
            session = record.session
            if kind is FrameRecord or (kind is EventRecord and record.event != ANALYZER_ERROR):
                previous = current.get(session)
                if previous is not None:
                    self._complete[session] = previous
                current[session] = record.seq
                fresh.add(session)
                if self._buffered >= _WRITE_CHUNK:
                    self._flush_lanes(complete=False)
                continue
            if session in fresh:
                fresh.discard(session)
                seq = current[session]
                if kind is not MessageRecord or record.frame != seq:
                    self._write(lane_line(session + suffix, "input", seq + offset))
            if appended:
                record = _shifted(record, suffix, offset)
            self._write(encode_line(record))
            self.records_written += 1

    def flush(self) -> None:
        """Write the buffered lines and a ``through`` per session: every input taken is analyzed."""
        self._flush_lanes(complete=True)

    def write_lost(self) -> None:
        """The recording lane died: for every session seen, no more derived records will come.

        The relay's salvage then writes the sessions' last inputs (a gap, the
        session's end) with no derived lane behind them; without this record a
        reader following the trace would hold them until its bound
        (docs/trace-format.md, "Two-lane traces").
        """
        if self._lost:
            return
        self.flush()
        self._lost = True
        for session in self._input:
            self._write(lane_line(session + self.session_suffix, "lost", 1))
        TraceWriter.flush(self)

    def _flush_lanes(self, *, complete: bool) -> None:
        done = self._input if complete else self._complete
        through = self._through
        for session, seq in done.items():
            if seq > through.get(session, -1):
                through[session] = seq
                self._write(
                    lane_line(session + self.session_suffix, "through", seq + self.seq_offset)
                )
        super().flush()


def lane_line(session: str, key: str, value: int) -> bytes:
    """A ``lane`` record's line: ``{"type":"lane","session":S,KEY:VALUE}``."""
    return dump_line({"type": "lane", "session": session, key: value})


#: The event a failure of the analysis records: derived, not an input.
ANALYZER_ERROR = "analyzer-error"
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
