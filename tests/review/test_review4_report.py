"""Review 4: ``mcpsniff report`` and the UI's trace reader on bad input and bad output paths.

Found as a new user would: ``report --format mermaid -o TRACE`` wrote the
diagram over the recording itself (the HTML format refused); the default
``TRACE.html`` was written through a symlink planted there, over whatever it
pointed to; a 2 GB file without a newline made ``report`` hang (its reader
copied the growing partial line on every 8 MiB read, and kept all of it),
where every other command refuses such a file at once; and ``report`` drew a
trace of format version 99, which every other command refuses.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.codec import TraceError
from mcpsniff.ui.follow import OffsetTail

GALLERY = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GALLERY.read_bytes())
    return path


@pytest.mark.parametrize("fmt", ["mermaid", "html"])
def test_report_never_writes_over_its_own_trace(trace: Path, fmt: str) -> None:
    before = trace.read_bytes()
    link = trace.parent / "link.jsonl"
    link.symlink_to(trace.name)
    for target in (trace, link):
        result = CliRunner().invoke(
            main, ["report", str(trace), "--format", fmt, "-o", str(target)]
        )
        assert result.exit_code == 2, result.output
        assert "is the trace itself" in result.output
    assert trace.read_bytes() == before


def test_report_refuses_a_symlink_at_the_default_page_path(trace: Path) -> None:
    victim = trace.parent / "victim.txt"
    victim.write_text("user data\n")
    (trace.parent / "t.html").symlink_to(victim)
    result = CliRunner().invoke(main, ["report", str(trace)])
    assert result.exit_code == 2, result.output
    assert "t.html is a symlink; name the page with -o FILE" in result.output
    assert victim.read_text() == "user data\n"


def test_report_rewrites_its_own_default_page(trace: Path) -> None:
    """The refusal is for links and special files; regenerating a page still works."""
    page = trace.with_suffix(".html")
    page.write_text("old page")
    result = CliRunner().invoke(main, ["report", str(trace)])
    assert result.exit_code == 0, result.output
    assert page.read_text().startswith("<!doctype html>")


def test_report_refuses_a_huge_first_line_at_once(tmp_path: Path) -> None:
    path = tmp_path / "sparse.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(64 << 20)  # sparse: NUL bytes, no newline
    result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid"])
    assert result.exit_code == 2, result.output
    assert "line 1 is longer than 1 MiB, no header" in result.output


def test_report_refuses_a_format_version_it_does_not_read(tmp_path: Path) -> None:
    path = tmp_path / "v99.jsonl"
    path.write_bytes(GALLERY.read_bytes().replace(b'"version":2', b'"version":99', 1))
    for args in (["--format", "mermaid"], ["-o", str(tmp_path / "r.html")]):
        result = CliRunner().invoke(main, ["report", str(path), *args])
        assert result.exit_code == 2, result.output
        assert "trace format version 99 is not supported" in result.output
    assert not (tmp_path / "r.html").exists()


def test_offset_tail_skips_a_junk_tail_without_holding_it(tmp_path: Path) -> None:
    """A crash can leave a file's tail as NUL bytes: read past, never kept whole."""
    path = tmp_path / "t.jsonl"
    data = GALLERY.read_bytes()
    path.write_bytes(data)
    with open(path, "r+b") as handle:
        handle.truncate(len(data) + (48 << 20))
    with open(path, "ab") as handle:
        handle.write(b"\n" + data.split(b"\n", 1)[1])  # the records again, after the junk
    tail = OffsetTail(path)
    tracemalloc.start()
    try:
        items = []
        more = True
        while more:
            got, more = tail.poll(limit=1 << 20)
            items.extend(got)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert tail.skipped == 1
    lines = data.count(b"\n")
    assert tail.notes == [f"line {lines + 1}: not a JSON record"]
    assert len(items) == 2 * lines - 1  # the records twice, and the one header
    assert tail.consumed == path.stat().st_size


def test_offset_tail_still_reads_a_record_split_across_many_polls(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    data = GALLERY.read_bytes()
    path.write_bytes(data)
    whole = []
    more = True
    reference = OffsetTail(path)
    while more:
        got, more = reference.poll()
        whole.extend(got)
    tail = OffsetTail(path)
    pieces = []
    more = True
    while more or tail.consumed < len(data):
        got, more = tail.poll(limit=7)
        pieces.extend(got)
    assert [(offset, type(item)) for offset, item in pieces] == [
        (offset, type(item)) for offset, item in whole
    ]
    assert tail.skipped == 0


def test_offset_tail_refuses_a_junk_first_line_read_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\x00\xff" * 100 + b"\n" + GALLERY.read_bytes())
    tail = OffsetTail(path)
    with pytest.raises(TraceError, match="no mcpsniff-trace header"):
        for _ in range(100):
            tail.poll(limit=16)


def _long_keys_trace(tmp_path: Path) -> Path:
    """Two sessions whose keys are 100,000 characters (a peer's Mcp-Session-Id)."""
    import json

    from mcpsniff.core.analyzer import replay
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.trace.writer import TraceWriter

    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    pong = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode() + b"\n"
    records = []
    for n, key in enumerate(("a" * 100_000, "b" * 100_000)):
        records.append(FrameRecord(2 * n + 1, 1.0 + n, key, "c2s", "stdio", ping))
        records.append(FrameRecord(2 * n + 2, 1.5 + n, key, "s2c", "stdio", pong))
    path = tmp_path / "keys.jsonl"
    writer = TraceWriter.create(path, meta={"source": "review4"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


def test_report_messages_cut_long_session_keys(tmp_path: Path) -> None:
    path = _long_keys_trace(tmp_path)
    for args in (["--session", "nope" * 50_000], []):
        result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid", *args])
        lines = [line for line in result.output.splitlines() if line.startswith("mcpsniff")]
        assert lines, result.output
        assert max(len(line) for line in lines) < 600, [len(line) for line in lines]
        assert "aaaa" in lines[0]


def test_replay_drive_cuts_long_session_keys_in_its_error(tmp_path: Path) -> None:
    path = _long_keys_trace(tmp_path)
    result = CliRunner().invoke(
        main, ["replay", "drive", str(path), "--session", "x", "--", "true"]
    )
    assert result.exit_code == 2, result.output
    assert "no session" in result.output
    assert max(len(line) for line in result.output.splitlines()) < 2000


def test_replay_drive_lists_twenty_sessions_and_counts_the_rest(tmp_path: Path) -> None:
    from mcpsniff.core.analyzer import replay
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.trace.writer import TraceWriter

    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    pong = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    records = []
    for n in range(25):
        records.append(FrameRecord(2 * n + 1, 1.0 + n, f"s{n:02d}", "c2s", "stdio", ping))
        records.append(FrameRecord(2 * n + 2, 1.5 + n, f"s{n:02d}", "s2c", "stdio", pong))
    path = tmp_path / "many.jsonl"
    writer = TraceWriter.create(path, meta={"source": "review4"})
    writer.write_all(list(replay(records)))
    writer.close()
    result = CliRunner().invoke(
        main, ["replay", "drive", str(path), "--session", "x", "--", "true"]
    )
    assert result.exit_code == 2, result.output
    assert "s19 (" in result.output and "s20 (" not in result.output
    assert "and 5 more" in result.output
