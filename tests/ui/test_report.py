"""``mcpsniff report`` (ui/report.py): its output paths and the traces it refuses.

Found as a new user would: ``report --format mermaid -o TRACE`` wrote the
diagram over the recording itself (the HTML format refused); the default
``TRACE.html`` was written through a symlink planted there, over whatever it
pointed to; a 2 GB file without a newline made ``report`` hang (its reader
copied the growing partial line on every 8 MiB read, and kept all of it),
where every other command refuses such a file at once; and ``report`` drew a
trace of format version 99, which every other command refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from tests.support import long_keys_trace

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


def test_report_messages_cut_long_session_keys(tmp_path: Path) -> None:
    path = long_keys_trace(tmp_path)
    for args in (["--session", "nope" * 50_000], []):
        result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid", *args])
        lines = [line for line in result.output.splitlines() if line.startswith("mcpsniff")]
        assert lines, result.output
        assert max(len(line) for line in lines) < 600, [len(line) for line in lines]
        assert "aaaa" in lines[0]
