"""`mcpsniff report` from a pipe, and `mcpsniff ui --listen` checked before any warning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from tests.trace.test_reader import GALLERY, _through_a_fifo


def test_report_html_from_a_pipe(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    piped = _through_a_fifo(tmp_path, GALLERY.read_bytes(), ["report", "-o", str(out)])
    assert piped.returncode == 0, piped.stderr
    assert b"wrote" in piped.stderr and b"1 sessions" in piped.stderr
    direct = tmp_path / "direct.html"
    assert CliRunner().invoke(main, ["report", str(GALLERY), "-o", str(direct)]).exit_code == 0
    assert "JR-RESP-ID" in out.read_text() and len(out.read_text()) > 1000
    assert out.read_text().count("JR-RESP-ID") == direct.read_text().count("JR-RESP-ID")


def test_report_mermaid_from_a_pipe_to_stdout(tmp_path: Path) -> None:
    piped = _through_a_fifo(tmp_path, GALLERY.read_bytes(), ["report", "--format", "mermaid"])
    assert piped.returncode == 0, piped.stderr
    direct = CliRunner().invoke(main, ["report", str(GALLERY), "--format", "mermaid"])
    assert piped.stdout.decode() == direct.stdout
    assert piped.stdout.startswith(b"sequenceDiagram")


def test_report_html_from_a_pipe_needs_an_output(tmp_path: Path) -> None:
    piped = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "report", "/dev/stdin"],
        input=GALLERY.read_bytes(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert piped.returncode == 2
    lines = piped.stderr.decode().splitlines()
    assert lines == ["mcpsniff report: a trace from a pipe needs -o FILE for its page"]
    assert not list(tmp_path.glob("*.html"))


def test_ui_refuses_a_malformed_listen_address_before_warning() -> None:
    outcome = CliRunner().invoke(main, ["ui", "--listen", "[::1"])
    assert outcome.exit_code == 2
    assert outcome.output == (
        "mcpsniff ui: --listen: '[::1': an IPv6 address goes inside [ ], "
        "as 127.0.0.1:6290 or [::1]:6290\n"
    )
