"""Reading past a trace line that cannot be a record, without holding it.

A crashed writer's file can end in a tail of NUL bytes (the file system
extended the size, the data never reached the disk), and a sparse or binary
file can sit behind a valid header: one "line" of gigabytes. The readers
share two rules (the UI's ``OffsetTail`` and ``LazyTraceRecords`` apply them
too): a line whose first non-blank byte is not ``{`` can never be a record,
and a line longer than ``LINE_LIMIT`` is more than any writer writes. Such a
line is read past as it is read, keeping only its length, and reported once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: Bytes read at a time from a line that has not ended yet.
PROBE = 1 << 20
#: The longest line read whole (a 50 MB frame is a record; 256 MiB is no writer's).
LINE_LIMIT = 256 << 20
#: What a JSON text may start with before its first token (RFC 8259 §2).
_BLANKS = b" \t\r\n"
NOT_A_RECORD = "not a JSON record"
TOO_LONG = f"longer than {LINE_LIMIT >> 20} MiB, not read"


@dataclass(slots=True)
class ReadPast:
    """A line read past, not kept: its length (newline included), whether it ended, and why."""

    length: int
    ended: bool
    reason: str

    def describe(self) -> str:
        """The reason with the line's length (without its newline), for a skip report."""
        return f"{self.reason} ({self.length - self.ended} bytes, read past)"


def junk_reason(head: bytes, length: int) -> str | None:
    """Why a line starting with ``head`` (``length`` bytes so far) is read past, or None.

    ``head`` is the line's first piece; a piece of blanks only says nothing
    yet (None), so a line of spaces is judged by its length alone. A line
    shorter than ``PROBE`` is never read past: it costs little to hold, and
    a record glued after a short torn piece of it is still read.
    """
    if length > LINE_LIMIT:
        return TOO_LONG
    if length < PROBE:
        return None
    lead = head.lstrip(_BLANKS)[:1]
    if lead and lead != b"{":
        return NOT_A_RECORD
    return None


def line_from(readline: Callable[[int], bytes], start: bytes) -> bytes | ReadPast:
    """The whole line that begins with ``start`` (read so far), or a ``ReadPast``.

    ``readline`` is the file's ``readline``, positioned right after ``start``.
    A line that ends within ``PROBE`` bytes is returned whole whatever it holds
    (the caller's parser judges it); a longer one is kept only while it may be
    a record (a 50 MB frame is), and is otherwise read to its end, not held.
    """
    if start.endswith(b"\n"):
        return start
    pieces, size = [start], len(start)
    head = start
    while True:
        more = readline(PROBE)
        if more:
            pieces.append(more)
            size += len(more)
            if not head.lstrip(_BLANKS):
                head = more  # blanks so far: the line's first token is in what follows
        if not more or more.endswith(b"\n"):
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
        reason = junk_reason(head, size)
        if reason is not None:
            return _read_past(readline, size, reason)


def _read_past(readline: Callable[[int], bytes], length: int, reason: str) -> ReadPast:
    """Read to the end of the current line, keeping only its length."""
    while True:
        more = readline(PROBE)
        length += len(more)
        if not more:
            return ReadPast(length, False, reason)
        if more.endswith(b"\n"):
            return ReadPast(length, True, reason)
