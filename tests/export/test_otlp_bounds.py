"""``export otlp`` against hostile collectors: a slow drip, a huge reply. Real sockets.

Each collector here is a plain TCP server in a thread that speaks just enough
HTTP/1.1: it reads the export's request, then answers as an adversary would.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcpsniff.export.otlp_bounds import DeadlinePassed, call_by_deadline

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

REPO = Path(__file__).resolve().parents[2]
#: The peak memory is read from /proc (VmHWM).
pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="needs /proc to read peak memory"
)
TRACE = REPO / "recordings" / "clean-2025-11-25.jsonl"
_PEAK = re.compile(r"peak-rss-kb (\d+)")
_MEASURED = (
    "import runpy, sys\n"
    "sys.argv = ['mcpsniff', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('mcpsniff', run_name='__main__')\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "else:\n"
    "    code = 0\n"
    # VmHWM, not ru_maxrss: Linux carries the forking parent's (pytest's) peak into
    # the child's ru_maxrss, and the peak of this process alone is the one bounded.
    "status = open('/proc/self/status').read()\n"
    "print('peak-rss-kb', status.split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    match = re.search(rb"content-length:\s*(\d+)", head, re.IGNORECASE)
    length = int(match.group(1)) if match else 0
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextmanager
def hostile_collector(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A collector on a free loopback port that reads each request and then ``answer``s."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=_handle, args=(conn,), daemon=True).start()

    def _handle(conn: socket.socket) -> None:
        with conn:
            try:
                _read_request(conn)
                answer(conn)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        server.close()
        thread.join(5)


def _drip(conn: socket.socket) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n"
    )
    for _ in range(1000):
        conn.sendall(b"\x00")
        time.sleep(1.0)


def _flood(conn: socket.socket) -> None:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"\x00" * (1 << 20)
    framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    for _ in range(2000):  # 2 GB if read to the end
        conn.sendall(framed)
    conn.sendall(b"0\r\n\r\n")


def _export(
    url: str, *options: str, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], int]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURED,
            "export",
            "otlp",
            str(TRACE),
            "--endpoint",
            url,
            *options,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    peak = _PEAK.search(done.stderr)
    assert peak, done.stderr
    return done, int(peak.group(1)) // 1024


def test_a_collector_that_drips_its_reply_meets_the_deadline() -> None:
    with hostile_collector(_drip) as url:
        started = time.monotonic()
        done, _ = _export(url, "--deadline", "3")
        elapsed = time.monotonic() - started
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if not line.startswith("peak-rss-kb")]
    assert len(lines) == 1, done.stderr
    assert "had not taken the export after 3 s" in lines[0]
    assert elapsed < 20


def test_a_huge_collector_reply_is_not_read_into_memory() -> None:
    with hostile_collector(_flood) as url:
        done, peak_mb = _export(url, "--deadline", "30")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if not line.startswith("peak-rss-kb")]
    assert len(lines) == 1 and "did not take the export" in lines[0], done.stderr
    assert peak_mb < 300, peak_mb


def test_call_by_deadline_returns_raises_and_gives_up() -> None:
    assert call_by_deadline(time.monotonic() + 5, lambda x: x * 2, 21) == 42
    with pytest.raises(ZeroDivisionError):
        call_by_deadline(time.monotonic() + 5, lambda: 1 / 0)
    started = time.monotonic()
    with pytest.raises(DeadlinePassed):
        call_by_deadline(time.monotonic() + 0.3, time.sleep, 30)
    assert time.monotonic() - started < 5
    with pytest.raises(DeadlinePassed):
        call_by_deadline(time.monotonic() - 1, lambda: None)
