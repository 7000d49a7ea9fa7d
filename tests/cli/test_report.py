"""``mcpsniff report`` on unusual inputs and outputs, run as a user runs it (subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.show.test_run import FULL, frames_copy
from tests.ui.support import GALLERY


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


# ----------------------------------------------------------------------------
# `mcpsniff report`: options that would draw nothing, or change nothing, are refused.
#
# Each case runs the real command in a subprocess and expects exit 2 with one
# line on stderr, and no page or diagram written.


TRACE = GALLERY / "clean-2025-11-25.jsonl"


def _report_of(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "report", str(TRACE), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


def test_an_inverted_window_names_both_bounds(tmp_path: Path) -> None:
    result = _report_of(tmp_path, "--format", "mermaid", "--from", "10", "--to", "5")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "mcpsniff report: --from 10 is after --to 5: that window holds no message "
        "(both bounds are included; swap them)"
    ]


def test_an_inverted_window_is_refused_before_an_html_page_is_written(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    result = _report_of(tmp_path, "-o", str(out), "--from", "10", "--to", "5")
    assert result.returncode == 2
    assert "--from 10 is after --to 5" in result.stderr
    assert not out.exists()


def test_a_one_seq_window_is_not_empty(tmp_path: Path) -> None:
    """Both bounds are included: --from 5 --to 5 draws the message at seq 5."""
    result = _report_of(tmp_path, "--format", "mermaid", "--from", "5", "--to", "5")
    assert result.returncode == 0, result.stderr
    arrows = [line for line in result.stdout.splitlines() if "->>" in line]
    assert arrows == ["    C->>S: tools/list id=1"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--from", "3"], "--from"),
        (["--to", "9"], "--to"),
        (["--session", "x"], "--session"),
        (["--from", "3", "--session", "x"], "--from, --session"),
    ],
)
def test_diagram_options_with_the_html_page_are_refused(
    tmp_path: Path, args: list[str], named: str
) -> None:
    """The page holds every message: a window or a session there would be silently ignored."""
    out = tmp_path / "page.html"
    result = _report_of(tmp_path, "-o", str(out), *args)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"mcpsniff report: {named}: only for --format mermaid (the HTML page holds every "
        "session and message)"
    ]
    assert not out.exists()


def test_a_filter_with_the_diagram_is_refused(tmp_path: Path) -> None:
    result = _report_of(tmp_path, "--format", "mermaid", "--filter", "method == ping")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "mcpsniff report: --filter: only for --format html (the diagram takes --from and --to)"
    ]
