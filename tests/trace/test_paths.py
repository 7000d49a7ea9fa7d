"""Opening a trace for a new session: patterns, private folders, appending, refusing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.trace.codec import encode_line
from mcpsniff.trace.paths import (
    TraceOpenError,
    expand_pattern,
    make_private_dirs,
    open_trace_file,
    resolve_trace_path,
)
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

NOW = 1767225600.0  # 2026-01-01 00:00:00 UTC


def ping(seq: int, session: str = "stdio") -> FrameRecord:
    return FrameRecord(
        seq, NOW + seq, session, "c2s", "stdio", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    )


def test_pattern_placeholders_are_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    import time

    time.tzset()
    assert expand_pattern("/t/{name}-{pid}-{time}.jsonl", "my server", NOW, 42) == (
        "/t/my_server-42-20260101-000000.jsonl"
    )
    assert expand_pattern("{{literal}}-{name}", "x/../y", NOW, 1) == "{literal}-x_.._y"


def test_an_unknown_placeholder_is_a_one_line_error() -> None:
    with pytest.raises(TraceOpenError, match=r"unknown placeholder \{host\} \(use \{name\}"):
        expand_pattern("/t/{host}.jsonl", "n")


def test_a_directory_or_a_trailing_slash_means_a_new_file_in_it(tmp_path: Path) -> None:
    inside = resolve_trace_path(str(tmp_path), "fs", NOW, 7)
    assert inside.parent == tmp_path
    assert inside.name.startswith("fs-") and inside.name.endswith("-7.jsonl")
    later = resolve_trace_path(str(tmp_path / "new") + "/", "fs", NOW, 7)
    assert later.parent == tmp_path / "new"


def test_state_folder_and_its_parents_are_private_even_under_umask_000(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "a" / "b"))
    old = os.umask(0)
    try:
        opened = open_trace_file(None, name="srv", meta={})
    finally:
        os.umask(old)
    opened.writer.close()
    for folder in (
        tmp_path / "a",
        tmp_path / "a" / "b",
        tmp_path / "a" / "b" / "mcpsniff",
        tmp_path / "a" / "b" / "mcpsniff" / "traces",
    ):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(opened.path.stat().st_mode) == 0o600
    assert opened.path.parent == tmp_path / "a" / "b" / "mcpsniff" / "traces"


def test_existing_folders_keep_their_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    make_private_dirs(tmp_path / "x")
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "x").stat().st_mode) == 0o700


def write_session(path: Path, seqs: range) -> TraceWriter:
    opened = open_trace_file(str(path), name="srv", meta={"label": "srv"}, created=NOW)
    writer = opened.writer
    for seq in seqs:
        writer.write(ping(seq))
        writer.write(
            MessageRecord(seq, "stdio", "c2s", "request", id=1, has_id=True, method="ping")
        )
    writer.write(FindingRecord("X-RULE", "info", "m", "stdio", [seqs[0], seqs[-1]]))
    writer.write(EventRecord(seqs[-1] + 1, NOW, "stdio", "session-end", {}))
    writer.close()
    return writer


def test_an_existing_trace_gets_a_new_session_appended(tmp_path: Path) -> None:
    path = tmp_path / "fs.jsonl"
    first = write_session(path, range(1, 4))
    before = path.read_bytes()
    second = write_session(path, range(1, 3))
    assert not first.appended and second.appended
    after = path.read_bytes()
    assert after.startswith(before), "the earlier session was changed"
    with TraceReader(path) as reader:
        records = list(reader.records())
    sessions = [r.session for r in records]
    suffix = second.session_suffix
    assert suffix.startswith("@")
    assert sessions == ["stdio"] * 8 + [f"stdio{suffix}"] * 6
    # Sequence numbers continue after the first session's last one (its session-end, 4).
    assert [r.seq for r in records if isinstance(r, FrameRecord)] == [1, 2, 3, 5, 6]
    appended = records[8:]
    assert [r.frame for r in appended if isinstance(r, MessageRecord)] == [5, 6]
    assert [r.seq for r in appended if isinstance(r, FindingRecord)] == [[5, 6]]
    # The appended session starts with its own header line.
    lines = after[len(before) :].split(b"\n")
    assert lines[0].startswith(b'{"type":"header","format":"mcpsniff-trace","version":2')


@pytest.mark.parametrize(
    "content",
    [b"precious\n", b"", b'{"a":1}\n', b'{"type":"header","format":"other"}\n'],
    ids=["text", "empty", "json", "other-format"],
)
def test_a_file_that_is_not_a_trace_is_never_touched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(content)
    os.utime(path, (NOW, NOW))  # old: an empty file is not one being created right now
    with pytest.raises(TraceOpenError, match="is not an mcpsniff trace; it was left untouched"):
        open_trace_file(str(path), name="srv", meta={})
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl"]


def test_a_torn_trace_is_left_alone_and_a_sibling_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "fs.jsonl"
    write_session(path, range(1, 3))
    torn = path.read_bytes() + b'{"type":"frame","seq":9'
    path.write_bytes(torn)
    opened = open_trace_file(str(path), name="srv", meta={})
    opened.writer.close()
    assert path.read_bytes() == torn
    assert opened.path != path and opened.path.parent == tmp_path
    assert (
        opened.note is not None and "incomplete" in opened.note and str(opened.path) in opened.note
    )


def test_a_trace_of_another_format_version_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    old = b'{"type":"header","format":"mcpsniff-trace","version":1,"meta":{}}\n'
    path.write_bytes(old)
    opened = open_trace_file(str(path), name="srv", meta={})
    opened.writer.close()
    assert path.read_bytes() == old
    assert opened.note is not None and "version 1" in opened.note


def test_a_missing_folder_named_by_the_user_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceOpenError, match="No such file or directory"):
        open_trace_file(str(tmp_path / "no" / "t.jsonl"), name="srv", meta={})
    assert not (tmp_path / "no").exists()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(TraceOpenError):
        open_trace_file(str(fifo), name="srv", meta={})


def test_big_groups_are_written_whole_and_nothing_waits_in_a_buffer_after_flush(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    writer = open_trace_file(str(path), name="srv", meta={}).writer
    payload = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"' + b"y" * 200_000 + b'"}}\n'
    for seq in range(1, 4):
        writer.write(FrameRecord(seq, NOW, "stdio", "c2s", "stdio", payload))
    writer.flush()
    with TraceReader(path) as reader:
        assert [r.raw for r in reader.records()] == [payload] * 3
    writer.close()


@pytest.mark.parametrize(
    "torn", [b'{"type":"message","frame":3,"ses', b'{"type":"frame","seq":2,"t":1.0,"se']
)
def test_an_appended_run_numbers_after_a_frame_glued_to_a_torn_line(
    tmp_path: Path, torn: bytes
) -> None:
    """Another writer died mid-line and a frame was appended right after its piece: the
    next run's sequence numbers start after that frame's, not after the one before it."""
    path = tmp_path / "fs.jsonl"
    write_session(path, range(1, 3))  # seqs 1, 2, session-end 3
    with path.open("ab") as file:
        file.write(torn + encode_line(ping(40)))
    second = write_session(path, range(1, 2))
    assert second.seq_offset == 40
    with TraceReader(path, on_skip=lambda _: None) as reader:
        seqs = [r.seq for r in reader.records() if isinstance(r, FrameRecord)]
    assert seqs == [1, 2, 40, 41]  # no number twice


def test_a_record_start_nested_in_a_whole_frame_does_not_move_the_offset(tmp_path: Path) -> None:
    """Hostile traffic quoting a frame record with a huge seq changes nothing."""
    path = tmp_path / "fs.jsonl"
    write_session(path, range(1, 3))
    payload = b'{"jsonrpc":"2.0","id":1,"result":{"x":{"type":"frame","seq":99999}}}\n'
    writer = open_trace_file(str(path), name="srv", meta={}, created=NOW).writer
    writer.write(FrameRecord(7, NOW, "stdio", "s2c", "stdio", payload, None, orjson.loads(payload)))
    writer.close()
    assert b'{"type":"frame","seq":99999}' in path.read_bytes()
    third = write_session(path, range(1, 2))
    assert third.seq_offset == 7 + writer.seq_offset
