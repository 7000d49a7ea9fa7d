"""Traces that are not plain files: a pipe read by a two-pass command, an endless first line."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.reader import HEADER_LIMIT

GALLERY = Path(__file__).resolve().parents[2] / "recordings" / "string-id-echo.jsonl"


def _through_a_fifo(tmp_path: Path, data: bytes, args: list[str]) -> subprocess.CompletedProcess:
    """Run ``mcpsniff ARGS FIFO`` while another thread writes ``data`` into the FIFO."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as writer, contextlib.suppress(BrokenPipeError):
            writer.write(data)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    done = subprocess.run(
        [sys.executable, "-m", "mcpsniff", *args[:1], str(fifo), *args[1:]],
        capture_output=True,
        timeout=60,
    )
    feeder.join(timeout=10)
    return done


@pytest.mark.parametrize(
    "args",
    [["show"], ["show", "--filter", "kind == request"], ["show", "--format", "json"]],
)
def test_show_reads_a_trace_from_a_pipe(tmp_path: Path, args: list[str]) -> None:
    direct = CliRunner().invoke(main, [*args[:1], str(GALLERY), *args[1:]])
    piped = _through_a_fifo(tmp_path, GALLERY.read_bytes(), args)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == direct.stdout
    assert "tools/list" in direct.stdout


@pytest.mark.parametrize("args", [["stats", "--format", "json"], ["stats", "--filter", "id == 1"]])
def test_stats_counts_a_trace_from_a_pipe(tmp_path: Path, args: list[str]) -> None:
    direct = CliRunner().invoke(main, [*args[:1], str(GALLERY), *args[1:]])
    piped = _through_a_fifo(tmp_path, GALLERY.read_bytes(), args)
    assert piped.returncode == 0, piped.stderr
    if "--format" in args:
        assert piped.stdout.decode() == direct.stdout
        assert '"messages":5' in direct.stdout
    else:
        # The text names the trace as given: only the first line differs.
        assert piped.stdout.decode().splitlines()[1:] == direct.stdout.splitlines()[1:]
        assert ": 1 messages in 1 session(s)" in direct.stdout


def test_follow_on_a_pipe_is_a_one_line_error(tmp_path: Path) -> None:
    piped = _through_a_fifo(tmp_path, GALLERY.read_bytes(), ["show", "--follow"])
    assert piped.returncode == 2
    assert piped.stderr.decode().endswith("is a pipe or device: --follow needs a trace file\n")


def test_a_pipe_that_is_no_trace_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    # An endless first line (as /dev/zero gives) is refused after HEADER_LIMIT bytes.
    piped = _through_a_fifo(tmp_path, b"\0" * (HEADER_LIMIT * 3), ["stats"])
    assert piped.returncode == 2
    assert "not an mcpsniff trace" in piped.stderr.decode()
    assert b"Traceback" not in piped.stderr


@pytest.mark.parametrize("command", ["show", "check", "stats", "redact", "export har"])
def test_a_first_line_longer_than_the_header_limit_is_no_trace(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b"x" * (HEADER_LIMIT + 10))
    extra = ["-o", str(tmp_path / "out")] if command == "redact" else []
    result = CliRunner().invoke(main, [*command.split(), str(path), *extra])
    assert result.exit_code == 2
    assert "not an mcpsniff trace (line 1 is longer than 1 MiB, no header)" in result.output


def _long_trace(path: Path, pairs: int) -> Path:
    """A trace of ``pairs`` answered tools/call requests, about 2.5 KB each."""
    header = b'{"type":"header","format":"mcpsniff-trace","version":2,"meta":{}}\n'
    text = "x" * 2000
    with open(path, "wb") as out:
        out.write(header)
        for n in range(1, pairs + 1):
            t = 1767225600.0 + n / 100
            request = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "t"}}
            response = {"jsonrpc": "2.0", "id": n, "result": {"content": [{"text": text}]}}
            asked = {"kind": "request", "id": n, "method": "tools/call"}
            answered = {"kind": "response", "id": n, "answers": 2 * n, "latency_ms": 1.0}
            for seq, direction, body, message in (
                (2 * n, "c2s", request, asked),
                (2 * n + 1, "s2c", response, answered),
            ):
                frame = {"type": "frame", "seq": seq, "t": t, "session": "s", "dir": direction}
                frame |= {"transport": "stdio", "text": json.dumps(body) + "\n"}
                out.write(json.dumps(frame).encode() + b"\n")
                record = {"type": "message", "frame": seq, "session": "s", "dir": direction}
                out.write(json.dumps(record | message).encode() + b"\n")
    return path


def test_show_holds_a_chunk_of_a_long_trace_not_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpsniff.show import run as show_run

    monkeypatch.setattr(show_run, "_CHUNK", 256 << 10, raising=False)  # a smaller test
    trace = _long_trace(tmp_path / "long.jsonl", 6000)
    size = trace.stat().st_size
    assert size > 15_000_000
    tracemalloc.start()
    try:
        result = CliRunner().invoke(main, ["show", str(trace)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0, result.output[-500:]
    assert result.output.count(" tools/call") == 12000
    # Read whole, the file alone was more than its size in memory (twice, split).
    assert peak < size / 4, (peak, size)
