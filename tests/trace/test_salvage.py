"""Completing the trace of a run whose analysis process died (``mcpsniff.trace.salvage``).

Fed whole, torn, empty and hostile files: whatever the file holds, the
salvage must append records that readers take, account for exactly the
forwarded bytes the file lacks, and never trust a line it reads back.
"""

from __future__ import annotations

import base64
import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord, Record
from mcpsniff.trace.codec import encode_line, header
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.salvage import (
    RANGES_KEPT,
    TORN_KEEP,
    SalvageError,
    TracePlace,
    cut_torn_tail,
    exit_reason,
    salvage,
    salvage_once,
)
from mcpsniff.trace.writer import TraceWriter

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
PONG = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
KILLED = "the analysis process was killed by SIGKILL"


def _frame(seq: int, direction: str, raw: bytes, session: str = "stdio") -> FrameRecord:
    return FrameRecord(seq, 1.0 + seq, session, direction, "stdio", raw)


def _event(seq: int, name: str, data: dict[str, Any], session: str = "stdio") -> EventRecord:
    return EventRecord(seq, 1.0 + seq, session, name, data)


def _trace(path: Path, records: list[Record]) -> TracePlace:
    """A trace holding ``records``; the place of a run that starts after its header."""
    writer = TraceWriter.create(path, meta={"source": "test"})
    place = TracePlace.after_header(writer)
    writer.write_all(records)
    writer.close()
    assert place is not None
    return place


def _read(path: Path) -> tuple[list[Record], TraceReader]:
    skipped: list[str] = []
    with TraceReader(path, on_skip=skipped.append) as reader:
        records = list(reader.records())
    return records, reader


def _events(records: list[Record], name: str) -> list[EventRecord]:
    return [r for r in records if isinstance(r, EventRecord) and r.event == name]


def _accounted(records: list[Record], direction: str) -> int:
    frames = sum(
        len(r.raw) for r in records if isinstance(r, FrameRecord) and r.direction == direction
    )
    gaps = sum(
        r.data["lost_bytes"]
        for r in _events(records, "capture-gap")
        if r.data.get("direction") == direction
    )
    return frames + gaps


def _stdio(place: TracePlace, c2s: int, s2c: int, **kwargs: Any) -> Any:
    return salvage(
        place, reason=KILLED, t=99.0, key="stdio", forwarded={C2S: c2s, S2C: s2c}, **kwargs
    )


# --------------------------------------------------------------------------- stdio


def test_the_bytes_the_trace_lacks_become_a_gap_per_direction(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING), _frame(2, S2C, PONG)])
    report = _stdio(place, len(PING) * 5, len(PONG) * 3)
    assert report.lost_bytes == {C2S: len(PING) * 4, S2C: len(PONG) * 2}
    records, reader = _read(path)
    assert reader.torn is None and reader.skipped == []
    assert _accounted(records, C2S) == len(PING) * 5
    assert _accounted(records, S2C) == len(PONG) * 3
    gaps = _events(records, "capture-gap")
    assert [g.seq for g in gaps] == [3, 4]
    assert all(KILLED in g.data["reason"] and g.data["salvaged"] for g in gaps)
    (end,) = _events(records, "session-end")
    assert end.seq == 5 and end.session == "stdio" and KILLED in end.data["reason"]
    assert "1 exchange" not in report.describe() and "bytes client to server" in report.describe()


def test_nothing_missing_and_ended_adds_nothing(tmp_path: Path) -> None:
    """The near-miss: the process died after it had recorded and ended everything."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING), _event(2, "session-end", {})])
    before = path.read_bytes()
    report = _stdio(place, len(PING), 0)
    assert report.records == [] and report.lost_bytes == {}
    assert path.read_bytes() == before


def test_gaps_already_recorded_count(tmp_path: Path) -> None:
    """A backlog overflow's gap (and a resync's) is already accounted: not counted twice."""
    path = tmp_path / "t.jsonl"
    gap = _event(2, "capture-gap", {"direction": C2S, "lost_bytes": 500})
    resync = _event(3, "capture-gap", {"direction": C2S, "lost_bytes": 7, "resync": True})
    place = _trace(path, [_frame(1, C2S, PING), gap, resync])
    report = _stdio(place, len(PING) + 507 + 100, 0)
    assert report.lost_bytes == {C2S: 100}
    records, _ = _read(path)
    assert _accounted(records, C2S) == len(PING) + 607


def test_a_header_only_trace_is_all_gap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [])
    _stdio(place, 10, 20)
    records, _ = _read(path)
    assert [(r.event, r.seq) for r in records if isinstance(r, EventRecord)] == [
        ("capture-gap", 1),
        ("capture-gap", 2),
        ("session-end", 3),
    ]
    assert _accounted(records, C2S) == 10 and _accounted(records, S2C) == 20


def test_a_torn_last_line_is_cut_and_kept_in_the_record(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    torn = encode_line(_frame(2, S2C, PONG))[:30]
    with path.open("ab") as file:
        file.write(torn)
    report = _stdio(place, len(PING), len(PONG))
    assert report.torn is not None and report.torn.length == len(torn)
    records, reader = _read(path)
    assert reader.torn is None and reader.skipped == []
    (note,) = _events(records, "trace-salvaged")
    assert note.data["torn_line"]["length"] == len(torn)
    assert base64.b64decode(note.data["torn_line"]["b64"]) == torn
    # The torn frame's bytes never made it: they are part of the gap.
    assert report.lost_bytes == {S2C: len(PONG)}
    assert _accounted(records, S2C) == len(PONG)
    assert "torn last line of 30 bytes was cut" in report.describe()


def test_a_huge_torn_line_keeps_its_length_and_its_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    torn = b'{"type":"frame","seq":2,"text":"' + b"x" * (3 * TORN_KEEP)
    with path.open("ab") as file:
        file.write(torn)
    report = _stdio(place, len(PING), 0)
    assert report.torn is not None and report.torn.length == len(torn)
    records, _ = _read(path)
    (note,) = _events(records, "trace-salvaged")
    kept = base64.b64decode(note.data["torn_line"]["b64"])
    assert kept == torn[:TORN_KEEP] and note.data["torn_line"]["kept_bytes"] == TORN_KEEP


def test_a_whole_record_short_of_its_newline_is_kept(tmp_path: Path) -> None:
    """The writer died right before the newline: the record is whole, so it stays."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    with path.open("ab") as file:
        file.write(encode_line(_frame(2, S2C, PONG)).rstrip(b"\n"))
    report = _stdio(place, len(PING), len(PONG))
    assert report.torn is not None and report.torn.completed
    assert report.lost_bytes == {}
    records, reader = _read(path)
    assert reader.torn is None
    assert [r.raw for r in records if isinstance(r, FrameRecord)] == [PING, PONG]
    assert _events(records, "trace-salvaged")[0].data["torn_line"]["completed"] is True


def test_cut_torn_tail_never_cuts_before_the_start(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_bytes(b"earlier run, no newline")
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        assert cut_torn_tail(fd, start=path.stat().st_size) is None
        torn = cut_torn_tail(fd, start=8)
    finally:
        os.close(fd)
    assert torn is not None and torn.offset == 8
    assert path.read_bytes() == b"earlier "


def test_hostile_lines_are_skipped_never_trusted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    hostile = [
        b"not json at all\n",
        b'{"type":"frame","seq":"7","t":1,"session":"stdio","dir":"c2s","transport":"stdio","text":"xx"}\n',
        b'{"type":"frame","seq":8,"t":1,"session":"stdio","dir":"c2s","transport":"stdio","b64":"!!"}\n',
        b'{"type":"event","seq":9,"t":1,"session":"stdio","event":"capture-gap",'
        b'"data":{"direction":"c2s","lost_bytes":true}}\n',
        b'{"type":"event","seq":10,"t":1,"session":"stdio","event":"capture-gap",'
        b'"data":{"direction":"c2s","lost_bytes":-1000}}\n',
        b'{"type":"event","seq":11,"t":1,"session":"stdio","event":"capture-gap",'
        b'"data":{"direction":"up","lost_bytes":1000}}\n',
        b'{"type":"event","seq":123456789012345678901234567890,"t":1,"session":"x","event":"e"}\n',
        b"[1,2,3]\n",
        b"\n",
        b'{"type":"frame"' + b"[" * 100_000 + b"\n",
    ]
    with path.open("ab") as file:
        file.writelines(hostile)
    report = _stdio(place, len(PING) + 50, 0)
    assert report.lost_bytes == {C2S: 50}
    skipped: list[str] = []
    with TraceReader(path, on_skip=skipped.append) as reader:
        records = list(reader.records())
    (note,) = _events(records, "trace-salvaged")
    # The garbage, the string seq, the bad base64, the list and the deep nesting.
    assert note.data["skipped_lines"] == 5
    # Sequence numbers continue after the highest one, even a huge one.
    (end,) = [e for e in _events(records, "session-end") if e.session == "stdio"]
    assert end.seq > 123456789012345678901234567890


def test_redacted_frames_are_flagged_in_the_gap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    frame = _frame(1, C2S, b'{"token":"[REDACTED]"}\n')
    frame.meta = {"redacted": 1}
    place = _trace(path, [frame])
    _stdio(place, 500, 0)
    records, _ = _read(path)
    assert _events(records, "capture-gap")[0].data["redacted_frames"] == 1


def test_an_appended_run_counts_only_its_own_records(tmp_path: Path) -> None:
    """A trace with an earlier launch's session, this run's, and a later launch's."""
    path = tmp_path / "t.jsonl"
    _trace(path, [_frame(1, C2S, PING * 3), _event(2, "session-end", {})])
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    writer = TraceWriter.from_fd(fd, path, session_suffix="@1.1", seq_offset=2)
    writer.write_header({"session_suffix": "@1.1", "seq_offset": 2})
    writer.flush()
    place = TracePlace.after_header(writer)
    assert place is not None and place.start > 0
    writer.write_all([_frame(1, C2S, PING)])
    writer.flush()
    # A third launch appends while this one runs (another relay on the same trace).
    other = TraceWriter.from_fd(
        os.open(path, os.O_WRONLY | os.O_APPEND), path, session_suffix="@2.2", seq_offset=3
    )
    other.write_header({"session_suffix": "@2.2", "seq_offset": 3})
    other.write_all([_frame(1, C2S, PING * 9)])
    other.close()
    writer.close()
    report = _stdio(place, len(PING) * 2, 0)
    assert report.lost_bytes == {C2S: len(PING)}
    assert report.ended_sessions == ["stdio@1.1"]
    records, _ = _read(path)
    gap = _events(records, "capture-gap")[0]
    assert gap.session == "stdio@1.1" and gap.seq == 5


def test_a_new_file_run_leaves_a_later_appended_session_alone(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    other = TraceWriter.from_fd(
        os.open(path, os.O_WRONLY | os.O_APPEND), path, session_suffix="@2.2", seq_offset=1
    )
    other.write_header({"session_suffix": "@2.2", "seq_offset": 1})
    other.write_all([_frame(1, C2S, PING * 9)])
    other.close()
    report = _stdio(place, len(PING), 0)
    assert report.lost_bytes == {} and report.ended_sessions == ["stdio"]


def test_a_replaced_or_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [])
    _trace(tmp_path / "other.jsonl", [])
    (tmp_path / "other.jsonl").rename(path)  # another file at the same path
    with pytest.raises(SalvageError, match="no longer the trace"):
        _stdio(place, 1, 1)
    path.unlink()
    with pytest.raises(SalvageError, match="cannot open"):
        _stdio(place, 1, 1)


# --------------------------------------------------------------------------- http


def _http_end(seq: int, number: int, session: str = "http") -> EventRecord:
    return _event(seq, "http-end", {"exchange": number, "outcome": "complete"}, session)


def test_http_exchanges_without_their_end_are_named(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    records = [
        _http_end(1, 1),
        _http_end(2, 2, session="sess-A"),
        _event(3, "http-request", {"exchange": 3}, "sess-A"),
        _http_end(4, 4),
        _http_end(5, 99),  # no exchange the relay began: ignored
        _event(6, "session-end", {}, "sess-A"),
    ]
    place = _trace(path, records)
    report = salvage(place, reason=KILLED, t=99.0, key="http", exchanges=5)
    assert report.lost_exchanges == 2
    assert report.ended_sessions == ["http"]
    out, _ = _read(path)
    (gap,) = _events(out, "capture-gap")
    assert gap.data["lost_exchanges"] == 2 and gap.data["exchanges"] == [[3, 3], [5, 5]]
    assert "unlisted_exchanges" not in gap.data
    assert "2 exchange(s)" in report.describe()


def test_http_ranges_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_http_end(n, n) for n in range(2, 1001, 2)])
    report = salvage(place, reason=KILLED, t=99.0, key="http", exchanges=1000)
    assert report.lost_exchanges == 500
    out, _ = _read(path)
    (gap,) = _events(out, "capture-gap")
    assert len(gap.data["exchanges"]) == RANGES_KEPT
    assert gap.data["unlisted_exchanges"] == 500 - RANGES_KEPT


def test_consecutive_lost_exchanges_make_one_range(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_http_end(1, 1)])
    salvage(place, reason=KILLED, t=99.0, key="http", exchanges=40)
    out, _ = _read(path)
    assert _events(out, "capture-gap")[0].data["exchanges"] == [[2, 40]]


def test_exit_reason_names_the_signal() -> None:
    assert exit_reason(-9) == KILLED
    assert exit_reason(70) == "the analysis process exited with status 70"
    assert exit_reason(-200) == "the analysis process was killed by signal 200"


def test_a_second_salvage_names_only_the_later_exchanges(tmp_path: Path) -> None:
    """The addon salvages when its analysis dies, and again when the trace closes."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_http_end(1, 1)])
    first = salvage(place, reason=KILLED, t=99.0, key="http", exchanges=3, end=False)
    assert first.lost_exchanges == 2 and first.ended_sessions == []
    second = salvage(place, reason=KILLED, t=99.5, key="http", exchanges=7)
    assert second.lost_exchanges == 4 and second.ended_sessions == ["http"]
    out, _ = _read(path)
    gaps = _events(out, "capture-gap")
    assert [g.data["exchanges"] for g in gaps] == [[[2, 3]], [[4, 7]]]
    assert [e.seq for e in out if isinstance(e, EventRecord)] == [1, 2, 3, 4]


def test_a_second_stdio_salvage_counts_only_the_later_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    assert _stdio(place, 100, 0, end=False).lost_bytes == {C2S: 100 - len(PING)}
    assert _stdio(place, 250, 10).lost_bytes == {C2S: 150, S2C: 10}
    out, _ = _read(path)
    assert _accounted(out, C2S) == 250 and len(_events(out, "session-end")) == 1


def test_a_fifo_in_the_trace_s_place_is_refused_not_read(tmp_path: Path) -> None:
    """Read forever, a pipe would hold the relay at its exit."""
    path = tmp_path / "t.jsonl"
    place = TracePlace(path, 0)
    os.mkfifo(path)
    with pytest.raises(SalvageError, match="not a regular file"):
        _stdio(place, 1, 1)


def test_the_server_s_stderr_the_trace_lacks_is_an_approximate_gap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [_event(1, "stderr", {"line": "hello"}), _event(2, "stderr", {"line": "é"})]
    dropped = _event(3, "capture-gap", {"lost_calls": 2, "lost_bytes": 100})  # backlog full
    place = _trace(path, [*lines, dropped])
    recorded = len(b"hello\n") + len("é\n".encode()) + 100
    report = _stdio(place, 0, 0, stderr=recorded + 40, end=False)
    assert report.lost_stderr == 40 and report.lost_bytes == {}
    assert "about 40 bytes of the server's stderr" in report.describe()
    # The next salvage counts the first one's gap: only what came after.
    assert _stdio(place, 0, 0, stderr=recorded + 45).lost_stderr == 5
    out, _ = _read(path)
    gaps = [g for g in _events(out, "capture-gap") if g.data.get("stream") == "stderr"]
    assert [g.data["lost_bytes"] for g in gaps] == [40, 5]
    assert all(g.data["approximate"] is True and "direction" not in g.data for g in gaps)


def test_stderr_all_recorded_adds_no_gap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_event(1, "stderr", {"line": "hello"})])
    assert _stdio(place, 0, 0, stderr=6).lost_stderr == 0


def test_an_empty_file_gets_its_header_first(tmp_path: Path) -> None:
    """The addon's analysis process writes its file's header: it may die before it does."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type":"head')  # even torn in the middle of the header
    place = TracePlace(path, 0, header=header({"source": "test"}, 5.0))
    report = salvage(place, reason=KILLED, t=9.0, key="http", exchanges=2)
    assert report.lost_exchanges == 2
    records, reader = _read(path)
    assert reader.header["meta"] == {"source": "test"}
    assert [r.event for r in records if isinstance(r, EventRecord)] == [
        "trace-salvaged",
        "capture-gap",
        "session-end",
    ]


def test_a_later_salvage_reads_on_where_the_earlier_stopped(tmp_path: Path) -> None:
    """The final salvage after one made mid-session does not read the file again: the
    same accounting, with the earlier part never looked at (here: damaged since)."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING), _http_end(2, 1, session="stdio")])
    first = salvage(
        place, reason=KILLED, t=9.0, key="stdio", forwarded={C2S: 100}, exchanges=3, end=False
    )
    assert first.resume is not None and first.resume[0] == path.stat().st_size
    with path.open("r+b") as file:  # damage the part already read
        file.seek(place.start)
        file.write(b"X")
    with path.open("ab") as file:
        file.write(encode_line(_frame(9, S2C, PONG)).rstrip(b"\n")[:20])  # a torn tail
    second = salvage(
        place,
        reason=KILLED,
        t=9.5,
        key="stdio",
        forwarded={C2S: 130, S2C: len(PONG)},
        exchanges=5,
        after=first,
    )
    assert second.lost_bytes == {C2S: 30, S2C: len(PONG)}
    assert second.lost_exchanges == 2 and second.torn is not None
    assert second.ended_sessions == ["stdio"]
    out, _ = _read(path)
    ends = _events(out, "session-end")
    assert len(ends) == 1 and ends[0].seq == max(r.seq for r in _events(out, "capture-gap")) + 1


# --------------------------------------------------------------------------- salvage_once


def test_salvage_once_tells_each_refusal_once(tmp_path: Path) -> None:
    """The salvage at the death and the one at the end meet the same refusal: one line."""
    place = _trace(tmp_path / "t.jsonl", [_frame(1, C2S, PING)])
    # Another file put at the path (created first: it cannot reuse the trace's inode).
    (tmp_path / "other").write_bytes(b"another file\n")
    os.replace(tmp_path / "other", tmp_path / "t.jsonl")
    refusals: set[str] = set()
    how: dict[str, Any] = {"reason": KILLED, "t": 9.0, "key": "stdio", "forwarded": {C2S: 99}}
    report, line = salvage_once(place, refusals, **how)
    assert report is None
    assert line == (
        f"the trace stays incomplete: {tmp_path / 't.jsonl'} is no longer the trace this run wrote"
    )
    assert salvage_once(place, refusals, **how) == (None, None)
    assert (tmp_path / "t.jsonl").read_bytes() == b"another file\n"


def test_salvage_once_returns_the_report(tmp_path: Path) -> None:
    place = _trace(tmp_path / "t.jsonl", [_frame(1, C2S, PING)])
    refusals: set[str] = set()
    report, line = salvage_once(
        place, refusals, reason=KILLED, t=9.0, key="stdio", forwarded={C2S: len(PING) + 5}
    )
    assert line is None and refusals == set()
    assert report is not None and report.lost_bytes == {C2S: 5}


# --------------------------------------------------------- a record glued after a torn derived line


TORN_MESSAGE = b'{"type":"message","frame":3,"session":"stdio","dir":"s2c","ki'
TORN_FINDING = b'{"type":"finding","rule":"JR-PARSE","severity":"error","mes'


@pytest.mark.parametrize("torn", [TORN_MESSAGE, TORN_FINDING], ids=["message", "finding"])
def test_a_frame_glued_after_a_torn_derived_line_is_counted_recorded(
    tmp_path: Path, torn: bytes
) -> None:
    """Another writer died mid-line; this run's frame was appended right after its piece."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    with path.open("ab") as file:
        file.write(torn + encode_line(_frame(2, S2C, PONG)))
    report = _stdio(place, len(PING), len(PONG))
    assert report.lost_bytes == {}
    (salvaged,) = _events(_read(path)[0], "trace-salvaged")
    assert salvaged.data["skipped_lines"] == 1  # the torn piece, said


@pytest.mark.parametrize("glued", ["http-end", "session-end"])
def test_an_event_glued_after_a_torn_derived_line_is_read(tmp_path: Path, glued: str) -> None:
    """An http-end read is an exchange not named lost; a session-end, a session not ended twice."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_event(1, "http-request", {"exchange": 1}, "sess-A")])
    event = _http_end(2, 1, "sess-A") if glued == "http-end" else _event(2, glued, {}, "sess-A")
    with path.open("ab") as file:
        file.write(TORN_MESSAGE + encode_line(event))
    report = salvage(place, reason=KILLED, t=99.0, key="http", exchanges=1)
    records, _ = _read(path)
    if glued == "http-end":
        assert report.lost_exchanges == 0
    else:
        assert report.lost_exchanges == 1
        assert [e.session for e in _events(records, "session-end")] == ["sess-A", "http"]


def test_whole_derived_lines_nesting_a_record_start_are_not_counted_skipped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    nested = {"type": "frame", "seq": 9}
    place = _trace(path, [_frame(1, C2S, PING)])
    with path.open("ab") as file:
        finding = {"type": "finding", "rule": "X", "severity": "info", "message": "m"}
        file.write(orjson.dumps({**finding, "session": "stdio", "seq": [1], "data": nested}))
        file.write(b"\n")
    report = _stdio(place, len(PING), 0)
    assert report.lost_bytes == {}
    assert _events(_read(path)[0], "trace-salvaged") == []


# --------------------------------------------------------------------------- the trace's lock


def test_a_lock_nobody_releases_is_not_waited_for_forever(tmp_path: Path) -> None:
    """A writer stopped while it held the trace's lock: the salvage gives up, file untouched."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    before = path.read_bytes()
    holder = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(SalvageError) as caught:
            _stdio(place, len(PING) * 2, 0, lock_wait=0.2)
        assert str(caught.value) == f"{path} stayed locked by another process for 0.2 s"
        assert path.read_bytes() == before
    finally:
        os.close(holder)
    # Released: the salvage completes the trace.
    assert _stdio(place, len(PING) * 2, 0).lost_bytes == {C2S: len(PING)}


def test_a_lock_released_while_the_salvage_waits_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    holder = os.open(path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    # Held a moment into the salvage (however long that moment is, the
    # salvage has a minute to take the lock), then let go of.
    releaser = threading.Timer(0.2, os.close, (holder,))
    releaser.start()
    try:
        report = _stdio(place, len(PING) * 3, 0, lock_wait=60.0)
    finally:
        releaser.join(10)
    assert report.lost_bytes == {C2S: len(PING) * 2}
    records, _ = _read(path)
    assert _accounted(records, C2S) == len(PING) * 3


# ------------------------------------------------------------ a trace shared by several relays

# ``mcpsniff.trace.salvage`` against a trace shared by several relays.
#
# A relay's analysis process killed in the middle of a write leaves a torn line
# with no newline; another relay sharing the trace (it waits on the ``flock``
# the dead process held) then appends its header and records right after it, so
# the torn bytes and the other relay's header make one line. The salvaging run
# must still tell the other relay's records from its own.


OTHER = "stdio@4242.1700000000"


def test_a_torn_line_glued_to_another_relay_s_header_keeps_that_relay_apart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    place = TracePlace.after_header(writer)
    assert place is not None
    writer.write_all([FrameRecord(1, 2.0, "stdio", C2S, "stdio", PING)])
    writer.close()
    torn = encode_line(FrameRecord(2, 3.0, "stdio", C2S, "stdio", PING))[:30]
    other_header = header({"session_suffix": "@4242.1700000000", "seq_offset": 2}, 5.0)
    other = [
        FrameRecord(3, 6.0, OTHER, C2S, "stdio", PING * 20),
        FrameRecord(4, 6.5, OTHER, S2C, "stdio", PING * 20),
    ]
    with path.open("ab") as file:
        file.write(torn)  # the dead process's last, partial write
        file.write(orjson.dumps(other_header) + b"\n")
        file.writelines(encode_line(record) for record in other)
    report = salvage(
        place,
        reason="killed",
        t=9.0,
        key="stdio",
        forwarded={C2S: len(PING) * 3, S2C: 0},
    )
    # The other relay's 20 pings are not this run's: it lacks two of its three.
    assert report.lost_bytes == {C2S: len(PING) * 2}
    # And the other relay's session, still running, is not ended for it.
    assert report.ended_sessions == ["stdio"]
    with TraceReader(path) as reader:
        records = list(reader.records())
    assert [e.session for e in _events(records, "session-end")] == ["stdio"]


def test_a_frame_glued_to_a_torn_line_counts_with_its_own_bytes(tmp_path: Path) -> None:
    """The glued record is this run's own frame (the torn one was its previous write)."""
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    place = TracePlace.after_header(writer)
    assert place is not None
    writer.close()
    torn = encode_line(FrameRecord(1, 3.0, "stdio", C2S, "stdio", b'{"type":"' + PING))[:60]
    with path.open("ab") as file:
        file.write(torn)
        file.write(encode_line(FrameRecord(2, 4.0, "stdio", C2S, "stdio", PING)))
    report = salvage(
        place, reason="killed", t=9.0, key="stdio", forwarded={C2S: len(PING) * 3, S2C: 0}
    )
    assert report.lost_bytes == {C2S: len(PING) * 2}


def test_a_big_whole_record_short_of_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    place = TracePlace.after_header(writer)
    assert place is not None
    writer.close()
    big = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"' + b"a" * (200 << 10) + b'"}}\n'
    with path.open("ab") as file:
        file.write(encode_line(FrameRecord(1, 2.0, "stdio", C2S, "stdio", big)).rstrip(b"\n"))
    report = salvage(place, reason="killed", t=9.0, key="stdio", forwarded={C2S: len(big)})
    assert report.torn is not None and report.torn.completed
    assert report.lost_bytes == {}
    with TraceReader(path) as reader:
        frames = [r for r in reader.records() if isinstance(r, FrameRecord)]
    assert [f.raw for f in frames] == [big]


@pytest.mark.parametrize("claimed", ["18446744073709551616", "1" + "0" * 40])
def test_a_gap_claiming_more_bytes_than_a_writer_writes_accounts_for_none(
    tmp_path: Path, claimed: str
) -> None:
    """A hostile capture-gap of 2**64 or more lost bytes leaves this run's loss in the trace.

    Such a count is read exactly (``exact_loads``); it is no writer's (counts
    stay below 2**63), so it must not swallow the bytes the trace lacks.
    """
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    with open(path, "ab") as trace:
        trace.write(
            b'{"type":"event","seq":2,"t":3.0,"session":"stdio","event":"capture-gap",'
            b'"data":{"direction":"c2s","lost_bytes":' + claimed.encode() + b"}}\n"
        )
    report = _stdio(place, len(PING) * 3, 0)
    assert report.lost_bytes == {C2S: len(PING) * 2}
    records, _ = _read(path)
    gaps = [g for g in _events(records, "capture-gap") if g.data.get("salvaged")]
    assert [(g.data["direction"], g.data["lost_bytes"]) for g in gaps] == [(C2S, len(PING) * 2)]


def test_a_salvaged_gap_through_an_impossible_exchange_names_the_lost_ones(
    tmp_path: Path,
) -> None:
    """A hostile earlier salvage "through exchange 10**20" does not hide the exchanges lost."""
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_http_end(1, 1)])
    with open(path, "ab") as trace:
        trace.write(
            b'{"type":"event","seq":2,"t":3.0,"session":"http","event":"capture-gap","data":'
            b'{"salvaged":true,"lost_exchanges":1,"through_exchange":100000000000000000000}}\n'
        )
    report = salvage(place, reason=KILLED, t=99.0, key="http", exchanges=3)
    assert report.lost_exchanges == 2
    out, _ = _read(path)
    assert [g.data["exchanges"] for g in _events(out, "capture-gap") if g.seq > 2] == [[[2, 3]]]


def test_lane_records_are_neither_frames_nor_damage(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    place = _trace(path, [_frame(1, C2S, PING)])
    with path.open("ab") as file:
        file.writelines(
            [
                b'{"type":"lane","session":"stdio","open":1}\n',
                b'{"type":"lane","session":"stdio","through":1}\n',
                b'{"type":"lane","session":"stdio","lost":1}\n',
            ]
        )
    report = _stdio(place, len(PING) + 7, 0)
    assert report.lost_bytes == {C2S: 7}
    records, _reader = _read(path)
    # No trace-salvaged note: it would count skipped (damaged) lines.
    assert _events(records, "trace-salvaged") == []
    assert [e.seq for e in _events(records, "capture-gap")] == [2]
