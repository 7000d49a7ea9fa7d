"""``mcpsniff ls``: the traces of a folder with their figures, newest first."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.format import TraceWriter
from mcpsniff.trace.paths import open_trace_file
from tests.conftest import Conversation, request


def record(path: Path, label: str, created: float, unanswered: bool) -> None:
    c = Conversation()
    c.t = created + 0.5
    c.handshake()
    if unanswered:
        c.client(request(9, "tools/list"))
    c.t = created + 90.0
    c.close()
    writer = open_trace_file(str(path), name=label, meta={"label": label}, created=created).writer
    writer.write_all(c.records)
    writer.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    record(tmp_path / "old.jsonl", "old-server", 1_700_000_000.0, unanswered=True)
    record(tmp_path / "new.jsonl", "new-server", 1_700_100_000.0, unanswered=False)
    record(tmp_path / "new.jsonl", "new-server", 1_700_100_100.0, unanswered=False)  # relaunch
    (tmp_path / "notes.jsonl").write_text("not a trace\n")
    (tmp_path / "readme.txt").write_text("hello\n")
    return tmp_path


def test_lists_traces_newest_first_with_their_figures(folder: Path) -> None:
    result = CliRunner().invoke(main, ["ls", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.output.splitlines()]
    assert [r["name"] for r in rows] == ["new-server", "old-server"]
    new, old = rows
    assert (new["sessions"], new["launches"], new["messages"]) == (2, 2, 6)
    assert new["duration_s"] == pytest.approx(191.0, abs=0.01)  # close() ends 1 s after t
    assert (old["sessions"], old["messages"]) == (1, 4)
    assert old["findings"] == {"error": 1, "warning": 0, "info": 0}
    assert old["size"] == (folder / "old.jsonl").stat().st_size


def test_text_table(folder: Path) -> None:
    result = CliRunner().invoke(main, ["ls", str(folder)])
    lines = result.output.splitlines()
    assert lines[0].split() == [
        "SERVER",
        "STARTED",
        "DURATION",
        "SESSIONS",
        "MESSAGES",
        "ERR/WARN/INFO",
        "SIZE",
        "FILE",
    ]
    assert lines[1].split()[0] == "new-server" and lines[1].endswith("new.jsonl")
    assert lines[2].split()[3:7] == ["1m31s", "1", "4", "1/0/0"]
    assert len(lines) == 3


def test_default_folder_is_the_state_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    result = CliRunner().invoke(main, ["ls"])
    assert result.exit_code == 0
    assert "no traces yet" in result.output
    traces = tmp_path / "mcpsniff" / "traces"
    traces.mkdir(parents=True)
    writer = TraceWriter.create(traces / "x.jsonl", meta={"label": "x"})
    writer.close()
    result = CliRunner().invoke(main, ["ls"])
    assert result.output.splitlines()[1].startswith("x ")


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    result = CliRunner().invoke(main, ["ls", str(tmp_path / "f")])
    assert result.exit_code == 2
    assert result.output == f"mcpsniff ls: {tmp_path / 'f'}: not a folder\n"


@pytest.mark.parametrize("bad_t", [b"1e300", b"-5", b"NaN"])
def test_a_hostile_time_never_becomes_the_duration(folder: Path, bad_t: bytes) -> None:
    path = folder / "new.jsonl"
    line = b'{"type":"event","seq":99,"t":' + bad_t + b',"session":"x","event":"stderr"}\n'
    with open(path, "ab") as handle:
        handle.write(line)
    result = CliRunner().invoke(main, ["ls", str(folder), "--format", "json"])
    rows = {r["name"]: r for r in map(orjson.loads, result.output.splitlines())}
    assert rows["new-server"]["duration_s"] == pytest.approx(191.0, abs=0.01)


def test_a_trace_removed_while_listing_does_not_end_ls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client rotating its traces while ls runs: the row stays, no FileNotFoundError."""
    from mcpsniff.listing import summary

    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(
            (Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl")
            .read_bytes()
            .replace(b'"created":1767225600.0,', b"")
        )
    real = summary.summarize

    def summarize_then_remove(path: Path) -> summary.TraceSummary | None:
        row = real(path)
        path.unlink()  # rotated away right after it was read
        return row

    monkeypatch.setattr(summary, "summarize", summarize_then_remove)
    rows = summary.list_traces(tmp_path)
    assert sorted(r.path.name for r in rows) == ["a.jsonl", "b.jsonl"]
    assert all(r.started is None and r.mtime > 0 for r in rows)
