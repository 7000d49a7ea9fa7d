"""Completing a trace whose analysis process died: the relay's last word in the file.

A relay's analysis process owns its trace. If it dies mid-session (killed,
out of memory, a crash), the relay goes on forwarding, but nothing writes the
file any more: it stops at the last batch the process flushed, possibly in
the middle of a line. Issue 12 asks that "every byte forwarded but not
analyzed must be accounted for in the trace before it ends, on every
transport", and once the analysis is dead only the relay can do it. Once the
process is known dead, the relay calls ``salvage``, which:

1. cuts a torn last line (a record the process was writing when it died),
   keeping its length and its first ``TORN_KEEP`` bytes in a
   ``trace-salvaged`` event, so that the file ends with whole records again
   (a torn tail would swallow the next record appended after it);
2. reads back what the file holds of this run (``TracePlace``: from the
   offset its records start at, only its own sessions): frame bytes and
   capture gaps per direction (stdio), the exchanges recorded to their end
   (HTTP), which sessions have ended, the last sequence number;
3. appends a ``capture-gap`` for exactly what was forwarded but is not in
   the file (stdio: per direction, so that ``recorded + lost == forwarded``;
   HTTP: the exchanges the relay began whose ``http-end`` is missing), with
   the reason, then a ``session-end`` for each session still open, with
   sequence numbers that continue the file's.

Pure bookkeeping over a path and counts, for ``mcpsniff stdio``, ``mcpsniff
http`` and the mitmproxy addon alike. Every line read back is treated as
hostile: a line that does not parse, or a record of the wrong shape, is
counted and skipped, never trusted.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord
from mcpsniff.trace.codec import (
    TraceError,
    decode_record,
    encode_line,
    exact_loads,
    glued_record,
)
from mcpsniff.trace.validate import event_problem, frame_problem
from mcpsniff.trace.writer import TraceWriter

#: Bytes of a cut torn line kept (base64) in the ``trace-salvaged`` event.
TORN_KEEP = 64 << 10
#: Longest last line read whole to tell whether it is a record short of its newline.
WHOLE_LIMIT = 256 << 20
#: Most ranges of unrecorded exchange numbers listed in an HTTP capture-gap.
RANGES_KEPT = 64
#: Seconds ``salvage`` waits for another writer of the trace to release its lock.
LOCK_WAIT = 5.0
#: Bytes read at a time when looking back for the last newline.
_BACK_CHUNK = 1 << 16
#: Lines known to be derived records (never needed here), skipped unparsed...
_DERIVED = (b'{"type":"message"', b'{"type":"finding"', b'{"type":"lane"')
#: ...unless a record starts after their first byte: one may be glued after a
#: torn piece of them (``glued_record``), or they nest one (then they parse).
_RECORD_MARK = b'{"type":"'
#: A recorded gap's count (bytes, an exchange number) at or past this is no
#: writer's: the trace writes counts below 2**63, like its seq. A hostile line
#: claiming 10**20 lost bytes must not account for the bytes this run lost.
_COUNT_LIMIT = 1 << 63


class SalvageError(Exception):
    """The trace could not be completed; the one-line reason."""


@dataclass(frozen=True, slots=True)
class TracePlace:
    """Where one relay run's records are: the file, the offset they start at, their keys.

    ``session_suffix`` and ``seq_offset`` are the writer's (non-empty when the
    run appended a session to an existing trace); ``inode`` tells the file
    apart from another one put at the same path since.
    """

    path: Path
    start: int
    session_suffix: str = ""
    seq_offset: int = 0
    inode: tuple[int, int] | None = None
    #: The header to write first should the file still be empty (the addon's
    #: analysis process writes its file's header, and may die before it does).
    header: dict[str, Any] | None = None

    @classmethod
    def after_header(cls, writer: TraceWriter) -> TracePlace | None:
        """The place of ``writer``'s records, right after it wrote (and flushed) its header.

        None when the writer has no path (nothing to salvage later).
        """
        if writer.path is None:
            return None
        try:
            info = os.stat(writer.path)
        except OSError:
            return None
        return cls(
            Path(writer.path),
            info.st_size,
            writer.session_suffix,
            writer.seq_offset,
            (info.st_dev, info.st_ino),
        )


@dataclass(frozen=True, slots=True)
class TornTail:
    """The torn last line that was cut from the file."""

    offset: int
    length: int
    #: Its first ``TORN_KEEP`` bytes.
    head: bytes
    #: It was a whole record short of its newline, which was added (nothing was cut).
    completed: bool = False

    def as_data(self) -> dict[str, Any]:
        """For the ``trace-salvaged`` event: where it was, how long, and its bytes (base64)."""
        if self.completed:
            return {"offset": self.offset, "length": self.length, "completed": True}
        return {
            "offset": self.offset,
            "length": self.length,
            "kept_bytes": len(self.head),
            "b64": base64.b64encode(self.head).decode("ascii"),
        }


@dataclass(slots=True)
class Recorded:
    """What the trace holds of one relay run."""

    #: Frame bytes per direction (as recorded: a redacted frame counts its redacted size).
    frame_bytes: dict[str, int] = field(default_factory=lambda: {C2S: 0, S2C: 0})
    #: Bytes already accounted for by capture-gap events, per direction.
    gap_bytes: dict[str, int] = field(default_factory=lambda: {C2S: 0, S2C: 0})
    #: Frames whose recorded bytes were redacted (their size differs from the forwarded one).
    redacted_frames: int = 0
    #: The child's stderr as recorded (``stderr`` events: each line and its newline).
    stderr_bytes: int = 0
    #: Session key -> whether its session-end is in the file (first-seen order).
    sessions: dict[str, bool] = field(default_factory=dict)
    #: The highest sequence number after the run's start (any session's).
    last_seq: int = 0
    #: Exchange numbers (1..``exchanges``) whose ``http-end`` is in the file.
    ended: bytearray = field(default_factory=bytearray)
    #: Exchanges up to this number are accounted for by an earlier salvage's gap.
    accounted_through: int = 0
    #: Lines that were no record of this format (skipped), in the part read last.
    skipped: int = 0
    #: Suffixes of the sessions other runs appended after this one started.
    others: set[str] = field(default_factory=set)


@dataclass(slots=True)
class SalvageReport:
    """What ``salvage`` appended."""

    #: Stdio: bytes per direction forwarded but not in the trace (now a capture-gap).
    lost_bytes: dict[str, int] = field(default_factory=dict)
    #: HTTP: exchanges begun but not recorded to their end.
    lost_exchanges: int = 0
    #: Stdio: the child's stderr bytes forwarded but not recorded (an estimate).
    lost_stderr: int = 0
    torn: TornTail | None = None
    ended_sessions: list[str] = field(default_factory=list)
    records: list[EventRecord] = field(default_factory=list)
    #: Where the file ended after this salvage, and what it held of the run up
    #: to there (its own records included): a later salvage reads on from here.
    resume: tuple[int, Recorded] | None = None

    def add(self, later: SalvageReport) -> SalvageReport:
        """This report and a later salvage's of the same run, together."""
        lost = dict(self.lost_bytes)
        for direction, count in later.lost_bytes.items():
            lost[direction] = lost.get(direction, 0) + count
        return SalvageReport(
            lost,
            self.lost_exchanges + later.lost_exchanges,
            self.lost_stderr + later.lost_stderr,
            self.torn or later.torn,
            self.ended_sessions + later.ended_sessions,
            self.records + later.records,
            later.resume,
        )

    def describe(self) -> str:
        """One line for the user: what the trace now says it lacks."""
        parts = []
        if self.lost_bytes:
            parts += [
                f"{n} bytes {'client to server' if d == C2S else 'server to client'}"
                for d, n in self.lost_bytes.items()
                if n
            ]
        if self.lost_exchanges:
            parts.append(f"{self.lost_exchanges} exchange(s)")
        if self.lost_stderr:
            parts.append(f"about {self.lost_stderr} bytes of the server's stderr")
        lacks = ", ".join(parts) if parts else "nothing more"
        text = (
            f"the trace was completed without the analysis process: it lacks {lacks} "
            "(recorded as a capture-gap)"
        )
        if self.torn is not None and not self.torn.completed:
            text += f"; a torn last line of {self.torn.length} bytes was cut"
        return text


# --------------------------------------------------------------------------- the file


def cut_torn_tail(fd: int, start: int = 0) -> TornTail | None:
    """Make the file open (read-write, append) on ``fd`` end with a whole line.

    A last line without its newline is cut, unless it is a whole record
    (the writer stopped right before the newline), which gets its newline.
    Only bytes at or after ``start`` are touched (a run cuts nothing of an
    earlier one). Returns what was found, or None when the file ends whole.
    """
    size = os.fstat(fd).st_size
    if size <= start:
        return None
    if os.pread(fd, 1, size - 1) == b"\n":
        return None
    end = size
    cut = start
    while end > start:
        begin = max(start, end - _BACK_CHUNK)
        chunk = os.pread(fd, end - begin, begin)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            cut = begin + newline + 1
            break
        end = begin
    length = size - cut
    head = os.pread(fd, min(TORN_KEEP, length), cut)
    if _whole_record(fd, cut, length, head):
        os.write(fd, b"\n")
        return TornTail(cut, length, head, completed=True)
    os.ftruncate(fd, cut)
    return TornTail(cut, length, head)


def _whole_record(fd: int, offset: int, length: int, head: bytes) -> bool:
    """Whether the last line (``length`` bytes at ``offset``, ``head`` its start) is one record.

    Every record ends with ``}``; only a line that does is read whole and
    parsed (a frame line is as long as its frame: up to ``WHOLE_LIMIT``).
    """
    if length <= len(head):
        return isinstance(_loads(head), dict)
    if length > WHOLE_LIMIT or os.pread(fd, 1, offset + length - 1) != b"}":
        return False
    return isinstance(_loads(os.pread(fd, length, offset)), dict)


def _loads(line: bytes) -> Any:
    """The line's JSON value, exact as the trace reader reads it; None when it is not JSON."""
    try:
        return exact_loads(line)
    except ValueError:
        return None


def _lines(fd: int, start: int) -> Iterator[bytes]:
    with os.fdopen(os.dup(fd), "rb", buffering=1 << 18) as file:
        file.seek(start)
        yield from file


def read_recorded(
    fd: int, place: TracePlace, exchanges: int = 0, resume: tuple[int, Recorded] | None = None
) -> Recorded:
    """What the file on ``fd`` holds of the run at ``place`` (``exchanges``: HTTP's count).

    ``resume``: an earlier salvage's end offset and findings: only what
    follows is read (``resume``'s ``Recorded`` is updated in place).
    """
    start = place.start
    if resume is None:
        recorded = Recorded(ended=bytearray(exchanges + 1))
    else:
        start, recorded = resume
        recorded.skipped = 0
        if len(recorded.ended) < exchanges + 1:
            recorded.ended.extend(bytes(exchanges + 1 - len(recorded.ended)))
    suffix = place.session_suffix
    others = recorded.others
    mine_cache: dict[str, bool] = {}

    def mine(key: str) -> bool:
        known = mine_cache.get(key)
        if known is None:
            if suffix:
                known = key.endswith(suffix)
            else:
                known = not any(key.endswith(other) for other in others)
            if len(mine_cache) < 4096:
                mine_cache[key] = known
        return known

    for line in _lines(fd, start):
        if line.startswith(_DERIVED) and line.find(_RECORD_MARK, 1) < 0:
            continue
        obj = _loads(line)
        if not isinstance(obj, dict):
            recorded.skipped += len(line.strip()) > 0
            glued = glued_record(line)
            if glued is None:
                continue
            obj, at = glued
            line = line[at:]
        kind = obj.get("type")
        if kind == "header":
            meta = obj.get("meta")
            other = meta.get("session_suffix") if isinstance(meta, dict) else None
            if isinstance(other, str) and other and other != suffix:
                others.add(other)
                mine_cache.clear()
            continue
        if kind == "frame":
            if frame_problem(obj) is not None:
                recorded.skipped += 1
                continue
            recorded.last_seq = max(recorded.last_seq, obj["seq"])
            if not mine(obj["session"]):
                continue
            try:
                frame = decode_record(obj, line)
            except (TraceError, ValueError):
                recorded.skipped += 1
                continue
            assert isinstance(frame, FrameRecord)
            recorded.frame_bytes[frame.direction] += len(frame.raw)
            if frame.meta and frame.meta.get("redacted"):
                recorded.redacted_frames += 1
            recorded.sessions.setdefault(frame.session, False)
        elif kind == "event":
            if event_problem(obj) is not None:
                recorded.skipped += 1
                continue
            recorded.last_seq = max(recorded.last_seq, obj["seq"])
            session = obj["session"]
            if not mine(session):
                continue
            _note_event(recorded, session, obj["event"], obj.get("data") or {})
        elif kind != "message" and kind != "finding" and kind != "lane":
            # A lane record (a two-lane trace's, docs/trace-format.md) is no
            # frame and no gap: like the derived records, nothing to count.
            recorded.skipped += 1
    return recorded


def _note_event(recorded: Recorded, session: str, name: str, data: dict[str, Any]) -> None:
    recorded.sessions.setdefault(session, False)
    if name == "session-end":
        recorded.sessions[session] = True
    elif name == "stderr":
        line = data.get("line")
        if isinstance(line, str):
            recorded.stderr_bytes += len(line.encode("utf-8", "surrogatepass")) + 1
    elif name == "capture-gap":
        direction, lost = data.get("direction"), data.get("lost_bytes")
        if type(lost) is not int or not 0 < lost < _COUNT_LIMIT:
            lost = None
        if direction in (C2S, S2C) and lost is not None:
            recorded.gap_bytes[direction] += lost
        elif direction is None and lost is not None:
            # The channel's count of dropped observations with bytes (stdio:
            # pieces of the server's stderr), or an earlier salvage's stderr gap.
            recorded.stderr_bytes += lost
        through = data.get("through_exchange")
        if data.get("salvaged") is True and type(through) is int and through < _COUNT_LIMIT:
            recorded.accounted_through = max(recorded.accounted_through, through)
    elif name == "http-end":
        number = data.get("exchange")
        if type(number) is int and 0 < number < len(recorded.ended):
            recorded.ended[number] = 1


# --------------------------------------------------------------------------- what to append


def stream_gaps(
    recorded: Recorded, forwarded: dict[str, int], key: str, reason: str, t: float, seq: int
) -> tuple[list[EventRecord], dict[str, int]]:
    """A capture-gap per direction for the bytes ``forwarded`` that the trace lacks."""
    records: list[EventRecord] = []
    lost: dict[str, int] = {}
    for direction in (C2S, S2C):
        accounted = recorded.frame_bytes[direction] + recorded.gap_bytes[direction]
        missing = forwarded.get(direction, 0) - accounted
        if missing <= 0:
            continue
        lost[direction] = missing
        data: dict[str, Any] = {
            "direction": direction,
            "lost_bytes": missing,
            "reason": f"{reason}: forwarded, not recorded",
            "salvaged": True,
            "forwarded_bytes": forwarded.get(direction, 0),
        }
        if recorded.redacted_frames:
            # Redaction changed those frames' sizes: the count is as exact as
            # the file allows, no more.
            data["redacted_frames"] = recorded.redacted_frames
        records.append(EventRecord(seq, t, key, "capture-gap", data))
        seq += 1
    return records, lost


def stderr_gap(
    recorded: Recorded, forwarded: int, key: str, reason: str, t: float, seq: int
) -> tuple[list[EventRecord], int]:
    """A capture-gap for the child's stderr bytes the trace lacks, as near as it can tell.

    Stderr is recorded as lines (redacted, decoded, split when long), so its
    recorded size is an estimate: the gap says so (``approximate``).
    """
    missing = forwarded - recorded.stderr_bytes
    if missing <= 0:
        return [], 0
    data = {
        "stream": "stderr",
        "lost_bytes": missing,
        "approximate": True,
        "reason": f"{reason}: the server's stderr, forwarded, not recorded",
        "salvaged": True,
    }
    return [EventRecord(seq, t, key, "capture-gap", data)], missing


def exchange_gap(
    recorded: Recorded, key: str, reason: str, t: float, seq: int
) -> tuple[list[EventRecord], int]:
    """One capture-gap naming the exchanges the relay began whose end the trace lacks.

    Exchanges an earlier salvage of the same run accounted for are not named again.
    """
    ranges: list[list[int]] = []
    missing = 0
    ended = recorded.ended
    for number in range(max(1, recorded.accounted_through + 1), len(ended)):
        if ended[number]:
            continue
        missing += 1
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1][1] = number
        elif len(ranges) < RANGES_KEPT:
            ranges.append([number, number])
    if not missing:
        return [], 0
    data: dict[str, Any] = {
        "lost_exchanges": missing,
        "exchanges": ranges,
        "reason": f"{reason}: forwarded, not recorded to their end",
        "salvaged": True,
        # Every exchange up to here is now in the trace or named in a gap.
        "through_exchange": len(ended) - 1,
    }
    listed = sum(b - a + 1 for a, b in ranges)
    if listed < missing:
        data["unlisted_exchanges"] = missing - listed
    return [EventRecord(seq, t, key, "capture-gap", data)], missing


def salvage(
    place: TracePlace,
    *,
    reason: str,
    t: float,
    key: str,
    forwarded: dict[str, int] | None = None,
    stderr: int | None = None,
    exchanges: int | None = None,
    end: bool = True,
    after: SalvageReport | None = None,
    lock_wait: float = LOCK_WAIT,
) -> SalvageReport:
    """Complete the trace at ``place`` for a run whose analysis process is dead.

    ``reason``: why the analysis ended (``exit_reason``). ``key``: the run's
    main session (as the analysis names it, before the suffix).
    ``forwarded``: a stream relay's bytes per direction, ``stderr`` its
    child's stderr bytes; ``exchanges``: an HTTP relay's count of exchanges
    begun (numbered from 1). ``end``: also
    end every session still open. ``after``: an earlier salvage of the same
    run, whose reading is taken up where it stopped (the file is not read
    twice). ``lock_wait``: seconds to wait for the trace's lock. Call only
    once the process has exited (it must not write the file any more).
    Raises ``SalvageError`` with the reason.
    """
    try:
        # Non-blocking: should a FIFO have taken the trace's place, opening it must not wait.
        fd = os.open(place.path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise SalvageError(f"cannot open {place.path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            # A pipe or device would be read forever, or cut: only a file is completed.
            raise SalvageError(f"{place.path} is not a regular file")
        os.set_blocking(fd, True)
        if place.inode is not None and (info.st_dev, info.st_ino) != place.inode:
            raise SalvageError(f"{place.path} is no longer the trace this run wrote")
        # Other relays appending to the same trace lock it for each write.
        _lock(fd, place.path, lock_wait)
        try:
            counts = (forwarded, stderr, exchanges)
            resume = after.resume if after is not None else None
            if resume is not None and os.fstat(fd).st_size < resume[0]:
                resume = None  # the file shrank since: read it all again
            return _salvage_locked(fd, place, reason, t, key, counts, end, resume)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        raise SalvageError(f"cannot complete {place.path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _lock(fd: int, path: Path, wait: float) -> None:
    """Take the trace's exclusive ``flock``, waiting at most ``wait`` seconds.

    Every wait has a timeout (docs/architecture.md, invariant 6): the relay exits only
    after the salvage, and a lock nobody releases (a writer stopped while it
    held it) must not hang the user's client. A relay's writes under the
    lock take milliseconds, so a lock held this long is not coming back soon.
    """
    deadline = time.monotonic() + wait
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            raise SalvageError(f"{path} stayed locked by another process for {wait:g} s")
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)


def salvage_once(
    place: TracePlace, refusals: set[str], **how: Any
) -> tuple[SalvageReport | None, str | None]:
    """``salvage(place, **how)``, with each refusal told once per run.

    The salvage made when the analysis process is found dead and the one at
    the end of the run often meet the same refusal (the path no longer names
    the run's file): the user is told it once. ``refusals``: the run's
    refusals told so far (updated here). Returns the report, or None and the
    line to tell (None when that refusal was told already). The caller
    prefixes the line with its own name and tells it (warnings go through
    the caller's loop or logger, not from this thread).
    """
    try:
        return salvage(place, **how), None
    except SalvageError as exc:
        reason = str(exc)
        if reason in refusals:
            return None, None
        refusals.add(reason)
        return None, f"the trace stays incomplete: {reason}"


def _salvage_locked(
    fd: int,
    place: TracePlace,
    reason: str,
    t: float,
    key: str,
    counts: tuple[dict[str, int] | None, int | None, int | None],
    end: bool,
    resume: tuple[int, Recorded] | None,
) -> SalvageReport:
    forwarded, stderr, exchanges = counts
    report = SalvageReport()
    report.torn = cut_torn_tail(fd, place.start if resume is None else resume[0])
    if place.header is not None and os.fstat(fd).st_size == 0:
        _write_all(fd, orjson.dumps(place.header) + b"\n")
    recorded = read_recorded(fd, place, exchanges or 0, resume)
    own_key = key + place.session_suffix
    seq = max(recorded.last_seq, place.seq_offset) + 1
    records: list[EventRecord] = []
    if report.torn is not None or recorded.skipped:
        data: dict[str, Any] = {"reason": reason}
        if report.torn is not None:
            data["torn_line"] = report.torn.as_data()
        if recorded.skipped:
            data["skipped_lines"] = recorded.skipped
        records.append(EventRecord(seq, t, own_key, "trace-salvaged", data))
        seq += 1
    if forwarded is not None:
        gaps, report.lost_bytes = stream_gaps(recorded, forwarded, own_key, reason, t, seq)
        records += gaps
        seq += len(gaps)
    if stderr is not None:
        gaps, report.lost_stderr = stderr_gap(recorded, stderr, own_key, reason, t, seq)
        records += gaps
        seq += len(gaps)
    if exchanges:
        gaps, report.lost_exchanges = exchange_gap(recorded, own_key, reason, t, seq)
        records += gaps
        seq += len(gaps)
    if end:
        sessions = dict(recorded.sessions)
        sessions.setdefault(own_key, False)
        for session, ended in sessions.items():
            if ended:
                continue
            data = {"reason": f"{reason}; the relay ended the session", "salvaged": True}
            records.append(EventRecord(seq, t, session, "session-end", data))
            report.ended_sessions.append(session)
            seq += 1
    if records:
        _write_all(fd, b"".join(encode_line(record) for record in records))
    for record in records:  # what a later salvage would read back of them
        recorded.last_seq = max(recorded.last_seq, record.seq)
        _note_event(recorded, record.session, record.event, record.data)
    report.records = records
    report.resume = (os.fstat(fd).st_size, recorded)
    return report


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if not written:
            raise SalvageError("the trace file accepted no bytes")
        view = view[written:]


def exit_reason(status: int | None) -> str:
    """Why the analysis process ended, in words, from its exit status (negative: a signal)."""
    if status is None:
        return "the analysis process stopped answering"
    if status < 0:
        import signal

        with contextlib.suppress(ValueError):
            return f"the analysis process was killed by {signal.Signals(-status).name}"
        return f"the analysis process was killed by signal {-status}"
    return f"the analysis process exited with status {status}"
