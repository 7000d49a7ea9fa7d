"""``mcpsniff report``: options that would draw nothing, or change nothing, are refused.

Each case runs the real command in a subprocess and expects exit 2 with one
line on stderr, and no page or diagram written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ui.support import GALLERY

TRACE = GALLERY / "clean-2025-11-25.jsonl"


def _report(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "report", str(TRACE), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


def test_an_inverted_window_names_both_bounds(tmp_path: Path) -> None:
    result = _report(tmp_path, "--format", "mermaid", "--from", "10", "--to", "5")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "mcpsniff report: --from 10 is after --to 5: that window holds no message "
        "(both bounds are included; swap them)"
    ]


def test_an_inverted_window_is_refused_before_an_html_page_is_written(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    result = _report(tmp_path, "-o", str(out), "--from", "10", "--to", "5")
    assert result.returncode == 2
    assert "--from 10 is after --to 5" in result.stderr
    assert not out.exists()


def test_a_one_seq_window_is_not_empty(tmp_path: Path) -> None:
    """Both bounds are included: --from 5 --to 5 draws the message at seq 5."""
    result = _report(tmp_path, "--format", "mermaid", "--from", "5", "--to", "5")
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
    result = _report(tmp_path, "-o", str(out), *args)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"mcpsniff report: {named}: only for --format mermaid (the HTML page holds every "
        "session and message)"
    ]
    assert not out.exists()


def test_a_filter_with_the_diagram_is_refused(tmp_path: Path) -> None:
    result = _report(tmp_path, "--format", "mermaid", "--filter", "method == ping")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "mcpsniff report: --filter: only for --format html (the diagram takes --from and --to)"
    ]
