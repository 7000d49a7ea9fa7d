"""What the UI tests share: the real Chromium, a running ``mcpsniff ui``, the real peers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

REPO = Path(__file__).resolve().parents[2]
GALLERY = REPO / "recordings"
CHROMIUM = Path(os.environ.get("MCPSNIFF_CHROMIUM", "/usr/bin/chromium"))
#: The flags the previous attempt found necessary for Debian's chromium in a container.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SDK2_PYTHON = REPO / ".peers" / "sdk2" / "bin" / "python"
SDK_CLIENT = REPO / "tests" / "e2e" / "peers" / "sdk_client.py"
SDK2_SERVER = REPO / "tests" / "e2e" / "peers" / "sdk2_server.py"
HOSTILE_SERVER = Path(__file__).parent / "peers" / "hostile_server.py"
#: Seconds a UI server may take to start, and a browser wait may last.
TIMEOUT = 30.0
_URL = re.compile(r"serving (http://\S+/)")


@contextmanager
def browser() -> Iterator[object]:
    """One headless Chromium (Debian's), driven by Playwright; skips when it is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing; run scripts/setup-browser.sh")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@contextmanager
def ui_server(*roots: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """A real ``mcpsniff ui`` on a free loopback port; yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "ui", *map(str, roots), "--listen", "127.0.0.1:0"],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + TIMEOUT
        url = None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            match = _URL.search(line)
            if match:
                url = match.group(1)
                break
        assert url, f"mcpsniff ui did not start (exit {proc.poll()})"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_TOKENS: dict[str, str] = {}


def page_token(url: str) -> str:
    """The run's token of the UI at ``url``, from the cookie its page sets (as a browser does)."""
    if url not in _TOKENS:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            cookie = response.headers["Set-Cookie"]
        assert cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
        _TOKENS[url] = cookie.split(";", 1)[0].split("=", 1)[1]
    return _TOKENS[url]


def ui_get(
    url: str, headers: dict[str, str] | None = None, token: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """GET ``url`` of a UI server with its token (``token`` or the page's) and ``headers``."""
    base = url.split("/api/", 1)[0].split("/static/", 1)[0]
    base = base if base.endswith("/") else base + "/"
    request = urllib.request.Request(url)
    request.add_header("X-Mcpsniff-Token", token if token is not None else page_token(base))
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def copy_gallery(folder: Path, *names: str) -> list[Path]:
    """Copies of gallery traces in ``folder`` (the UI may be pointed at a folder of them)."""
    out = []
    for name in names:
        target = folder / name
        shutil.copyfile(GALLERY / name, target)
        out.append(target)
    return out


def sdk_peers_missing() -> str | None:
    """Why the SDK peers cannot run here, or ``None``."""
    if not SDK2_PYTHON.exists():
        return f"{SDK2_PYTHON.relative_to(REPO)} is missing; run scripts/setup-peers.sh"
    return None


def record_session(
    trace: Path | None, server: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """A real SDK 2.x client talking to ``server`` through a real ``mcpsniff stdio``.

    Without ``trace`` the relay records where it does by default: the state folder.
    """
    where = ["--trace", str(trace)] if trace is not None else []
    # The SDK starts its server with a minimal environment of its own choosing:
    # ``env`` reaches the relay (the SDK's "server") only through env(1).
    settings = ["env", *(f"{k}={v}" for k, v in (env or {}).items())] if env else []
    relay = [*settings, sys.executable, "-m", "mcpsniff", "stdio", *where, "--"]
    return subprocess.run(
        [str(SDK2_PYTHON), str(SDK_CLIENT), "--", *relay, *server],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )


def write_long_trace(path: Path, calls: int) -> None:
    """A trace of ``calls`` ping exchanges (2 * calls rows), written as a relay writes one."""
    import json as _json

    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.trace.writer import TraceWriter

    writer = TraceWriter.create(path, meta={"label": "long"}, created=1767225600.0)
    seq = 0
    t = 1767225600.0
    for i in range(calls):
        seq += 1
        t += 0.001
        request = _json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode() + b"\n"
        writer.write(FrameRecord(seq, t, "long", "c2s", "stdio", request))
        writer.write(MessageRecord(seq, "long", "c2s", "request", id=i, has_id=True, method="ping"))
        seq += 1
        t += 0.001
        answer = _json.dumps({"jsonrpc": "2.0", "id": i, "result": {}}).encode() + b"\n"
        writer.write(FrameRecord(seq, t, "long", "s2c", "stdio", answer))
        writer.write(
            MessageRecord(
                seq, "long", "s2c", "response", id=i, has_id=True, answers=seq - 1, latency_ms=1.0
            )
        )
    writer.close()


def batch_trace(path: Path, version: str) -> Path:
    """A session of protocol ``version`` with a batch of two requests and its batch reply."""
    messages = [
        (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}},
            },
        ),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        ),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (
            "c2s",
            [
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            ],
        ),
        (
            "s2c",
            [
                {"jsonrpc": "2.0", "id": 1, "result": {}},
                {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
            ],
        ),
    ]
    records: list[FrameRecord | EventRecord] = [
        FrameRecord(n + 1, 1.0 + n, "s", d, "stdio", (json.dumps(m) + "\n").encode())
        for n, (d, m) in enumerate(messages)
    ]
    records.append(EventRecord(9, 9.0, "s", "session-end", {}))
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


#: The rows of ``batch_trace``'s session: (seq, kind, index in the batch).
BATCH_ROWS = [
    (1, "request", None),
    (2, "response", None),
    (3, "notification", None),
    (4, "batch", None),
    (4, "request", 0),
    (4, "request", 1),
    (5, "batch", None),
    (5, "response", 0),
    (5, "response", 1),
    (9, "event", None),
]


_PING_LINE = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def many_sessions_trace(path: Path, count: int) -> None:
    """A trace of ``count`` one-frame sessions, ``s0`` (oldest) to ``s{count-1}``."""
    with open(path, "w") as handle:
        handle.write(
            '{"type":"header","format":"mcpsniff-trace","version":2,"tool":"t","meta":{}}\n'
        )
        for i in range(count):
            frame = {
                "type": "frame",
                "seq": i + 1,
                "t": 1.0 + i,
                "session": f"s{i}",
                "dir": "c2s",
                "transport": "stdio",
                "text": _PING_LINE,
            }
            handle.write(json.dumps(frame) + "\n")
