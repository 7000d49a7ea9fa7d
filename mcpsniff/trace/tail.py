"""Following a growing trace (``show --follow``, the UI): the records each poll completes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpsniff.core.model import Record
from mcpsniff.trace.codec import exact_loads, glued_record
from mcpsniff.trace.lanes import LaneMerge
from mcpsniff.trace.longlines import ReadPast, junk_reason
from mcpsniff.trace.reader import skip_message, torn_piece_reason, warn_skipped
from mcpsniff.trace.validate import checked_record


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
        #: Merges the records of a two-lane trace, from its first lane record on.
        self._lanes: LaneMerge | None = None

    def poll(self, *, final: bool = False, max_bytes: int | None = None) -> list[Record]:
        """Records whose lines were completed since the previous poll.

        In a two-lane trace an input of a lane session is returned (with its
        derived records) once a ``through`` covers it (``trace.lanes``): a
        follower never shows a frame before its messages; a ``final`` poll
        that reaches the end of the file returns whatever is still held.

        With ``final``, a last line without its newline counts too when it is a
        whole record (the writer stopped right before the newline). With
        ``max_bytes``, at most that much of the file is read by this call
        (``more`` then says whether the file holds more already): a reader
        such as ``show`` then holds one chunk of a multi-gigabyte trace at a
        time, not all of it.
        """
        chunk = self._file.read(-1 if max_bytes is None else max_bytes)
        self.more = max_bytes is not None and len(chunk) == max_bytes
        if not chunk and not (final and (self._pending or self._lanes is not None)):
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
                obj = exact_loads(line)
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
            record, reason = checked_record(obj, line)
            if reason is not None:
                self._on_skip(skip_message(self.path, self._line, reason))
                continue
            if isinstance(record, dict):
                # A lane record (headers went above): a two-lane trace, merged from here on.
                if self._lanes is None:
                    self._lanes = LaneMerge()
                due, reason = self._lanes.lane(record)
                if reason is not None:
                    self._on_skip(skip_message(self.path, self._line, reason))
                out.extend(due)
            elif self._lanes is not None:
                out.extend(self._lanes.feed(record, record, len(line)))
            else:
                out.append(record)
        if self._lanes is not None and final and not self.more:
            # The file has ended and is not followed: nothing more will come.
            out.extend(self._lanes.finish())
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
