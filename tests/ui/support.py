"""What the UI tests share: the real Chromium, a running ``mcpsniff ui``, the real peers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

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
