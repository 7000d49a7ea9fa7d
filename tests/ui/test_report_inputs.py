"""``mcpsniff report`` on unusual inputs and outputs, run as a user runs it (subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.show.test_frames_only import FULL, frames_copy


def _report(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "report", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_trace_of_frames_is_analyzed_for_the_diagram(tmp_path: Path) -> None:
    frames = frames_copy(tmp_path)
    recorded = _report(FULL, "--format", "mermaid")
    analyzed = _report(frames, "--format", "mermaid")
    assert analyzed.returncode == 0, analyzed.stderr
    assert analyzed.stdout == recorded.stdout
    assert "tools/call" in analyzed.stdout and "JR-RESP-REQUIRED" in analyzed.stdout
    assert analyzed.stderr.splitlines()[0] == (
        f"mcpsniff report: {frames} holds frames but no message records: "
        "analyzing its frames with today's rules, as check does"
    )


def test_a_trace_of_frames_is_analyzed_for_the_page(tmp_path: Path) -> None:
    frames = frames_copy(tmp_path)
    page = tmp_path / "page.html"
    result = _report(frames, "-o", page)
    assert result.returncode == 0, result.stderr
    recorded = _report(FULL, "-o", tmp_path / "recorded.html")
    assert recorded.stderr.endswith("(1 sessions, 10 rows)\n"), recorded.stderr
    assert result.stderr.splitlines()[-1] == f"mcpsniff report: wrote {page} (1 sessions, 10 rows)"
    text = page.read_text()
    assert '"file":"frames.jsonl"' in text  # the trace's own name, not the private copy's
    assert "JR-RESP-REQUIRED" in text
    assert not list(Path(tmp_path).glob("mcpsniff-*"))


@pytest.mark.parametrize("fmt", ["html", "mermaid"])
def test_another_trace_is_never_written_over(tmp_path: Path, fmt: str) -> None:
    other = tmp_path / "other.jsonl"
    other.write_bytes(FULL.read_bytes())
    result = _report(FULL, "--format", fmt, "-o", other)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"mcpsniff report: {other} is an mcpsniff trace; it was left untouched (choose another -o)"
    ]
    assert other.read_bytes() == FULL.read_bytes()


def test_the_diagram_file_is_private(tmp_path: Path) -> None:
    """It quotes traffic, as the page does: mode 0600."""
    out = tmp_path / "d.mmd"
    assert _report(FULL, "--format", "mermaid", "-o", out).returncode == 0
    assert out.stat().st_mode & 0o777 == 0o600
    assert out.read_text().startswith("sequenceDiagram\n")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "the file is empty, not an mcpsniff trace"),
        (b"\x00\x01\x02", "not an mcpsniff trace (line 1 is not JSON)"),
        (b'{"type":"header","format":"mcpsniff-trace","version":2}', "(its first line never ends)"),
    ],
    ids=["empty", "binary", "header-without-newline"],
)
def test_a_file_that_is_no_readable_trace_is_named_in_one_line(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    result = _report(path, "--format", "mermaid")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"mcpsniff report: {path}: ") and line.endswith(reason), line
