"""Review 3: ``mcpsniff.trace.salvage`` against a trace shared by several relays.

A relay's analysis process killed in the middle of a write leaves a torn line
with no newline; another relay sharing the trace (it waits on the ``flock``
the dead process held) then appends its header and records right after it, so
the torn bytes and the other relay's header make one line. The salvaging run
must still tell the other relay's records from its own.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord, Record
from mcpsniff.trace.codec import encode_line, header
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.salvage import TracePlace, salvage
from mcpsniff.trace.writer import TraceWriter

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
OTHER = "stdio@4242.1700000000"


def _events(records: list[Record], name: str) -> list[EventRecord]:
    return [r for r in records if isinstance(r, EventRecord) and r.event == name]


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
