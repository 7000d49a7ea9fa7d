"""Reading a trace lazily, one record at a time; ``inputs()`` is check's hot loop."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.model import UNPARSED, EventRecord, FrameRecord, Record
from mcpsniff.trace.codec import (
    EOL_BYTES,
    FORMAT_NAME,
    FRAME_PREFIX,
    JSON_MARK,
    JSON_NAME,
    READABLE_VERSIONS,
    TraceError,
    decode_record,
    embeds_value,
    exact_loads,
    frame_from,
    glued_record,
)
from mcpsniff.trace.lanes import LaneMerge
from mcpsniff.trace.longlines import ReadPast, line_from
from mcpsniff.trace.validate import MAX_TIME as _MAX_TIME
from mcpsniff.trace.validate import (
    event_problem,
    frame_problem,
    header_problem,
    lane_problem,
    problem,
)

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
_EVENT_PREFIX = b'{"type":"event"'
#: The start of a lane record's line (docs/trace-format.md, "Two-lane traces").
_LANE_HEAD = b'{"type":"lane",'
#: The first 15 bytes of a message, finding, header and lane line (a frame line's are
#: FRAME_PREFIX): TraceReader.inputs() tells a line's type by them.
_DERIVED_HEADS = frozenset(
    {b'{"type":"messag', b'{"type":"findin', b'{"type":"header', b'{"type":"lane",'}
)
#: The first 15 bytes of a message line, the commonest of _DERIVED_HEADS.
_MESSAGE_HEAD = b'{"type":"messag'
#: The keys of an embedded frame's fields, parsed by orjson to get its key objects.
_FRAME_KEYS = b'{"seq":0,"t":0,"session":0,"dir":0,"transport":0,"len":0,"eol":0,"json":0,"meta":0}'
#: Containers nested deeper than this are cut when no encoder can write a record whole.


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
            obj = exact_loads(first)
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
            obj = exact_loads(line)
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
        """Every record after the header, in file order, each input followed by its derived records.

        The header of a session appended by a relaunch is no record; it goes
        to ``on_header`` (when set) at its place in the file. From the first
        ``lane`` record on (a two-lane trace, docs/trace-format.md), the
        records go through ``trace.lanes.LaneMerge``: the lane records steer
        it and are not yielded.
        """
        lines = self._lines()
        for number, line, last in lines:
            obj = self._parse(number, line, last)
            if obj is None:
                continue
            if obj.get("type") == "header":
                self._appended_header(number, obj)
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
                # The first lane record (a header went above): the rest is merged.
                yield from self._merged(number, record, lines)
                return
            yield record

    def _appended_header(self, number: int, obj: dict[str, Any]) -> None:
        """Hand an appended session's header to ``on_header``, or skip a malformed one."""
        if self.on_header is not None:
            reason = header_problem(obj)
            if reason is None:
                self.on_header(obj)
            else:
                self._skip(number, f"the appended header is malformed: {reason}")

    def _merged(
        self, number: int, first: dict[str, Any], lines: Iterator[tuple[int, bytes, bool]]
    ) -> Iterator[Record]:
        """The records of ``lines`` after the lane record ``first`` (line ``number``), merged."""
        merge = LaneMerge()
        due, reason = merge.lane(first)
        if reason is not None:
            self._skip(number, reason)
        loads = orjson.loads
        for number, line, last in lines:
            if line.startswith(_LANE_HEAD) and not last:
                # A lane record: short, flat, no big integer that matters (a seq
                # past 64 bits is no seq, however it parses), so one orjson parse.
                try:
                    obj = loads(line)
                except orjson.JSONDecodeError:
                    obj = self._parse(number, line, last)
                if type(obj) is dict and obj.get("type") == "lane":
                    reason = lane_problem(obj)
                    if reason is None:
                        due, reason = merge.lane(obj)
                    if reason is not None:
                        self._skip(number, reason)
                    if due:
                        yield from self._handed_on(due)
                    continue
            else:
                obj = self._parse(number, line, last)
            if obj is None:
                continue
            if obj.get("type") == "header":
                due = merge.feed(None, (number, obj), len(line))
            else:
                reason = problem(obj)
                try:
                    record = decode_record(obj, line) if reason is None else None
                except TraceError as exc:
                    reason = str(exc)
                if reason is not None:
                    self._skip(number, reason)
                    continue
                if isinstance(record, dict):
                    due, reason = merge.lane(record)
                    if reason is not None:
                        self._skip(number, reason)
                else:
                    due = merge.feed(record, record, len(line))
            if due:
                yield from self._handed_on(due)
        yield from self._handed_on(merge.finish())

    def _handed_on(self, due: list[Any]) -> Iterator[Record]:
        """The records of ``due``; an appended header among them goes to ``on_header``."""
        for item in due:
            if type(item) is tuple:
                self._appended_header(*item)
            else:
                yield item

    def inputs(self) -> Iterator[FrameRecord | EventRecord]:
        """Only the analyzer's inputs (frames and events), skipping derived records fast."""
        number = 1
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        eols = EOL_BYTES
        mark = JSON_MARK
        marked = len(JSON_MARK)
        back = marked - JSON_MARK.index(JSON_NAME)  # from the payload back to its "json"
        frame_head = FRAME_PREFIX
        derived_heads = _DERIVED_HEADS
        message_head = _MESSAGE_HEAD
        # A frame is made by calling __new__ and setting its slots: the class
        # call takes a detour through type_call and slot_tp_init (a C-level
        # call of __init__) that costs about 400 instructions per frame, and
        # a call of __init__ itself one Python frame more.
        new_frame = object.__new__
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
                            # The value parsed from the line serves only where the
                            # frame's bytes hold it (codec.embeds_value). Its usual
                            # proof, two memchr: no "j" and no "u" before the mark,
                            # so no member name there spells "json", with or without
                            # a \u escape ("in" with a bytes operand would raise and
                            # clear a TypeError inside: ints only here). ``head`` ends
                            # right before the mark's "json".
                            head = line[: cut - back]
                            if (106 in head or 117 in head) and not embeds_value(
                                line, len(line) + cut
                            ):
                                value = UNPARSED
                            # Every field, slot by slot (``new_frame``).
                            frame = new_frame(FrameRecord)
                            frame.seq = seq
                            frame.t = t
                            frame.session = session
                            frame.direction = direction
                            frame.transport = transport
                            frame.raw = line[cut:end] + tail
                            frame.meta = meta
                            frame.value = value
                            yield frame
                            continue
                        # len points elsewhere: the general path below says so.
                    else:
                        # orjson reads an integer beyond 64 bits as a float, so a
                        # seq or len of -2**63-1 would look "not an integer" here;
                        # the verdict is given on the exact parse, as _input does.
                        obj = exact_loads(line)
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
                                obj["json"] if embeds_value(line, start) else UNPARSED,
                            )
                        else:
                            frame = frame_from(obj, line)
                    except (KeyError, TypeError, ValueError, AttributeError) as exc:
                        self._skip(number, f"malformed frame record: {exc}")
                        continue
                    yield frame
                    continue
                if (
                    (head == message_head or head in derived_heads)
                    and line[-1] == 10
                    and 123 not in line[1:]
                ):
                    # A whole message, finding or header line with no "{" after
                    # its first byte: so no record glued after a torn piece of it
                    # (the rule below, by one memchr: 123 is "{"; a nested
                    # object, such as a finding's data, takes the rule below).
                    # A message's head is compared first: one in two lines is a
                    # message, and the compare costs less than hashing the head
                    # for the set (about 300 of 2,600 instructions a line).
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
