"""``mcpsniff ls``: the traces of a folder with their figures, newest first."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.paths import open_trace_file
from mcpsniff.trace.writer import TraceWriter
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
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["name"] for r in rows] == ["new-server", "old-server"]
    new, old = rows
    assert (new["sessions"], new["launches"], new["messages"]) == (2, 2, 6)
    assert new["duration_s"] == pytest.approx(191.0, abs=0.01)  # close() ends 1 s after t
    assert (old["sessions"], old["messages"]) == (1, 4)
    assert old["findings"] == {"error": 1, "warning": 0, "info": 0}
    assert old["size"] == (folder / "old.jsonl").stat().st_size


def test_text_table(folder: Path) -> None:
    result = CliRunner().invoke(main, ["ls", str(folder)])
    lines = result.stdout.splitlines()
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
    rows = {r["name"]: r for r in map(orjson.loads, result.stdout.splitlines())}
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

    def summarize_then_remove(
        path: Path, skipped: list[summary.Skipped] | None = None
    ) -> summary.TraceSummary | None:
        row = real(path, skipped)
        path.unlink()  # rotated away right after it was read
        return row

    monkeypatch.setattr(summary, "summarize", summarize_then_remove)
    rows = summary.list_traces(tmp_path)
    assert sorted(r.path.name for r in rows) == ["a.jsonl", "b.jsonl"]
    assert all(r.started is None and r.mtime > 0 for r in rows)


def test_damaged_traces_are_named_one_line_each(folder: Path) -> None:
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "evil\x1b]0;x\x07.jsonl").write_bytes(b"\x00\x01garbage\n")
    result = CliRunner().invoke(main, ["ls", str(folder)])
    assert result.exit_code == 0
    table = result.stdout.splitlines()
    assert len(table) == 3  # header, new, old: the damaged ones are not rows
    notes = result.stderr.splitlines()
    assert len(notes) == 3
    assert all(n.startswith("mcpsniff ls: skipped ") for n in notes)
    assert any("empty.jsonl" in n and "empty" in n.split("empty.jsonl", 1)[1] for n in notes)
    assert any("notes.jsonl" in n and "not an mcpsniff trace" in n for n in notes)
    evil = next(n for n in notes if "evil" in n)
    assert "\x1b" not in evil and "\x07" not in evil and "evil\\x1b]0;x\\x07.jsonl" in evil
    # JSON output stays clean on stdout; the notes still go to stderr.
    as_json = CliRunner().invoke(main, ["ls", str(folder), "--format", "json"])
    assert [orjson.loads(line)["name"] for line in as_json.stdout.splitlines()] == [
        "new-server",
        "old-server",
    ]
    assert len(as_json.stderr.splitlines()) == 3


def _column(line: str, text: str) -> int:
    """The display column where ``text`` starts in ``line`` (wide characters count 2)."""
    from mcpsniff.listing.columns import display_width

    return display_width(line[: line.index(text)])


def test_columns_align_on_the_escaped_and_displayed_width(tmp_path: Path) -> None:
    record(tmp_path / "a.jsonl", "plain", 1_700_000_000.0, unanswered=False)
    record(tmp_path / "b.jsonl", "ev\x1b[31mil\u202e", 1_700_000_100.0, unanswered=False)
    record(tmp_path / "c.jsonl", "日本語のサーバー", 1_700_000_200.0, unanswered=False)
    record(tmp_path / "d.jsonl", "x" * 20 + "\x1b[31m", 1_700_000_300.0, unanswered=False)
    record(tmp_path / "e.jsonl", "サーバー" * 10, 1_700_000_400.0, unanswered=False)
    result = CliRunner().invoke(main, ["ls", str(tmp_path)])
    lines = result.stdout.splitlines()
    assert len(lines) == 6
    assert {_column(line, "2023-") for line in lines[1:]} == {_column(lines[0], "STARTED")}
    by_file = {line.rsplit(" ", 1)[1]: line for line in lines[1:]}
    # A cut never splits an escape: "\x1b" whole or not at all.
    assert by_file["d.jsonl"].split()[0] == "x" * 20 + "…"
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert by_file["e.jsonl"].split()[0].endswith("…")


def test_display_width() -> None:
    from mcpsniff.listing.columns import display_width, fit

    assert display_width("abc") == 3
    assert display_width("日本") == 4
    assert display_width("e\u0301") == 1  # a combining accent takes no column
    assert fit("日本語", 5) == "日本…"
    assert display_width(fit("日本語", 5)) == 5
    assert fit("abc", 5) == "abc"
    assert fit("a\x1bbcdef", 6) == "a\\x1b…"  # the escape kept whole
    assert fit("a\x1bbcdef", 5) == "a…"
