"""Turn a one-lane trace into the layout the two-lane stdio analysis writes (issue 30).

docs/trace-format.md, "Two-lane traces": the recording lane writes a session's
inputs (frames, events) at once, after a ``lane ... open`` record; the derived
lane writes their derived records (messages, findings, ``analyzer-error``
events) later, each write ended by a ``through`` record, with an ``input``
record before the derived records of an input when the first of them is not a
message record of that input's frame. ``two_lane`` delays each input's derived
records by a random number of later inputs (seeded), so that every reader can be
asked to give, on the result, what it gives on the one-lane trace.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import orjson


def lane_line(session: str, **mark: int) -> bytes:
    """One ``lane`` record, compact, its first key ``type``."""
    return orjson.dumps({"type": "lane", "session": session, **mark}) + b"\n"


@dataclass
class _Group:
    """One input of a lane session, and the derived records that follow it in the one-lane trace."""

    session: str
    seq: int
    derived: list[bytes] = field(default_factory=list)
    first: dict | None = None  # the first derived record, parsed
    release: int = 0


def _kind(line: bytes) -> tuple[str, dict | None]:
    """``input``, ``derived`` or ``other`` (a header, a damaged line), with the parsed record."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "other", None
    if type(obj) is not dict:
        return "other", None
    kind = obj.get("type")
    if kind == "frame" or (kind == "event" and obj.get("event") != "analyzer-error"):
        if type(obj.get("session")) is str and type(obj.get("seq")) is int:
            return "input", obj
        return "other", obj
    if kind in ("message", "finding", "event"):
        return "derived", obj
    return "other", obj


def two_lane(
    data: bytes,
    seed: int,
    max_lag: int = 5,
    *,
    mixed: bool = False,
    lost_after: int | None = None,
) -> bytes:
    """``data`` (a one-lane trace) laid out as the two-lane analysis writes it.

    Each input's derived records are written after ``0..max_lag`` more inputs
    (never before an earlier input's). With ``mixed``, only some sessions
    (seeded) are lane sessions; the rest stay one-lane. With ``lost_after``,
    the derived lane dies after that many writes: a ``lost`` record follows
    for every lane session, and their later derived records are not written.
    """
    rng = random.Random(seed)
    lines = data.splitlines(keepends=True)
    out: list[bytes] = lines[:1]
    lane_sessions: dict[str, bool] = {}
    opened: set[str] = set()
    pending: list[_Group] = []
    current: _Group | None = None  # the lane input whose derived records are being read
    inputs = 0
    release = 0
    writes = 0
    dead = False

    def flush(upto: int | None) -> None:
        nonlocal writes, dead
        due = [g for g in pending if upto is None or g.release <= upto]
        if not due:
            return
        del pending[: len(due)]
        if dead:
            return
        through: dict[str, int] = {}
        for group in due:
            if group.derived:
                first = group.first or {}
                if not (first.get("type") == "message" and first.get("frame") == group.seq):
                    out.append(lane_line(group.session, input=group.seq))
                out.extend(group.derived)
            through[group.session] = group.seq
        for session, seq in through.items():
            out.append(lane_line(session, through=seq))
        writes += 1
        if lost_after is not None and writes >= lost_after:
            dead = True
            for session in opened:
                out.append(lane_line(session, lost=1))

    for line in lines[1:]:
        kind, obj = _kind(line)
        if kind == "derived" and current is not None:
            if not current.derived:
                current.first = obj
            current.derived.append(line)
            continue
        if kind != "input":
            current = None
            out.append(line)
            continue
        assert obj is not None
        flush(inputs)  # the groups due by now are whole: a new input has come
        session = obj["session"]
        if session not in lane_sessions:
            lane_sessions[session] = rng.random() < 0.5 if mixed else True
        if not lane_sessions[session]:
            current = None
            out.append(line)
            continue
        if session not in opened:
            opened.add(session)
            out.append(lane_line(session, open=1))
        out.append(line)
        inputs += 1
        release = max(release, inputs + rng.randint(0, max_lag))
        current = _Group(session, obj["seq"], release=release)
        pending.append(current)
    flush(None)
    return b"".join(out)


def two_lane_file(
    source: Path, target: Path, seed: int, max_lag: int = 5, *, mixed: bool = False
) -> Path:
    """Write ``source``'s two-lane layout to ``target``; ``target``."""
    target.write_bytes(two_lane(source.read_bytes(), seed, max_lag, mixed=mixed))
    return target


def pieces(data: bytes, seed: int, most: int = 700) -> list[bytes]:
    """``data`` cut into pieces of random sizes (seeded), lines cut anywhere."""
    rng = random.Random(seed)
    out = []
    at = 0
    while at < len(data):
        size = rng.randint(1, most)
        out.append(data[at : at + size])
        at += size
    return out


@dataclass
class Covered:
    """What the lane records of a trace read so far allow a reader to show."""

    opened: set[str] = field(default_factory=set)
    through: dict[str, int] = field(default_factory=dict)
    lost: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, data: bytes) -> Covered:
        """The lane records among the whole lines of ``data``."""
        covered = cls()
        for line in data.splitlines(keepends=True)[1:]:
            if not line.endswith(b"\n") or not line.startswith(b'{"type":"lane"'):
                continue
            obj = orjson.loads(line)
            session = obj["session"]
            if "open" in obj:
                covered.opened.add(session)
            elif "through" in obj:
                covered.through[session] = obj["through"]
            elif "lost" in obj:
                covered.lost.add(session)
        return covered

    def shows(self, session: str, seq: int) -> bool:
        """Whether an input may be shown: not a lane session's, or covered by a through."""
        if session not in self.opened or session in self.lost:
            return True
        return seq <= self.through.get(session, -1)
