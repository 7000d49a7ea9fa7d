"""``export har -o``: a slip of the shell never replaces a recording."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main

from .support import RECORDINGS, write_stdio_trace


def _http_trace(path: Path) -> Path:
    trace = write_stdio_trace(path, [])
    lines = trace.read_text(encoding="utf-8").splitlines()
    request = {
        "type": "event",
        "seq": 10,
        "t": 1767225601.0,
        "session": "h",
        "event": "http-request",
        "data": {"exchange": 1, "method": "POST", "path": "/mcp", "headers": []},
    }
    end = {
        "type": "event",
        "seq": 11,
        "t": 1767225601.5,
        "session": "h",
        "event": "http-end",
        "data": {"exchange": 1, "outcome": "client-closed"},
    }
    lines[2:2] = [json.dumps(request), json.dumps(end)]
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return trace


def test_the_trace_itself_is_refused_as_output(tmp_path: Path) -> None:
    trace = _http_trace(tmp_path / "t.jsonl")
    before = trace.read_bytes()
    for output in (trace, tmp_path / "." / "t.jsonl"):
        result = CliRunner().invoke(main, ["export", "har", str(trace), "-o", str(output)])
        assert result.exit_code == 2
        assert result.output == (
            f"mcpsniff export har: {output} is the trace itself; choose another -o\n"
        )
        assert trace.read_bytes() == before


def test_another_trace_is_refused_as_output(tmp_path: Path) -> None:
    trace = _http_trace(tmp_path / "t.jsonl")
    other = tmp_path / "other.jsonl"
    other.write_bytes((RECORDINGS / "clean-2025-11-25.jsonl").read_bytes())
    before = other.read_bytes()
    result = CliRunner().invoke(main, ["export", "har", str(trace), "-o", str(other)])
    assert result.exit_code == 2
    assert "is an mcpsniff trace; it was left untouched" in result.output
    assert other.read_bytes() == before


def test_an_old_har_is_replaced_as_asked(tmp_path: Path) -> None:
    trace = _http_trace(tmp_path / "t.jsonl")
    out = tmp_path / "t.har"
    out.write_text('{"log": {}}')
    result = CliRunner().invoke(main, ["export", "har", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["log"]["entries"]) == 1


def test_a_reader_that_leaves_early_is_not_blamed_on_the_trace(tmp_path: Path) -> None:
    """``export har TRACE | head -c 10``: no "TRACE: Broken pipe", which reads as a bad trace."""
    import subprocess
    import sys

    trace = _http_trace(tmp_path / "t.jsonl")
    lines = trace.read_text(encoding="utf-8").splitlines()
    request, end = json.loads(lines[2]), json.loads(lines[3])
    more = []
    for n in range(2, 3000):
        more.append(
            json.dumps({**request, "seq": 20 + 2 * n, "data": {**request["data"], "exchange": n}})
        )
        more.append(json.dumps({**end, "seq": 21 + 2 * n, "data": {**end["data"], "exchange": n}}))
    trace.write_text("\n".join([*lines, *more]) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "export", "har", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{"log": {"'
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err


def test_a_device_is_written_to_not_replaced(tmp_path: Path) -> None:
    """``-o /dev/null`` (or ``/dev/stdout``) writes through the device; it never becomes a file.

    The rename that makes a regular output appear whole would replace the
    device node itself: as root, ``-o /dev/null`` turned /dev/null into a
    regular file holding the HAR, for every process on the machine.
    """
    import os
    import stat

    trace = _http_trace(tmp_path / "t.jsonl")
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        import pytest

        pytest.skip("creating a device node needs root")
    result = CliRunner().invoke(main, ["export", "har", str(trace), "-o", str(device)])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "t.jsonl"]


def test_a_fifo_gets_the_har_and_stays_a_fifo(tmp_path: Path) -> None:
    import os
    import stat
    import threading

    trace = _http_trace(tmp_path / "t.jsonl")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = CliRunner().invoke(main, ["export", "har", str(trace), "-o", str(fifo)])
    reader.join(30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert len(json.loads(received[0])["log"]["entries"]) == 1


def test_a_symlinked_output_keeps_its_link(tmp_path: Path) -> None:
    """A HAR path that is a symlink (into a shared folder, say) is written at its target."""
    trace = _http_trace(tmp_path / "t.jsonl")
    real = tmp_path / "shared" / "t.har"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "t.har"
    link.symlink_to(real)
    result = CliRunner().invoke(main, ["export", "har", str(trace), "-o", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink()
    assert len(json.loads(real.read_text())["log"]["entries"]) == 1
