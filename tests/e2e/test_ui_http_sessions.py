"""HTTP traffic in the UI: a real SDK client and server through a real ``mcpsniff http``.

The detail pane of a message that crossed HTTP shows the request line and
headers and the response status and headers of its exchange, as recorded.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord
from mcpsniff.trace.reader import TraceReader
from tests.e2e.test_http_peers import (
    SDK1_PYTHON,
    SDK1_SERVER,
    SDK2_PYTHON,
    SDK_CLIENT,
    Relay,
    Server,
    stop_process,
)
from tests.ui.support import REPO, TIMEOUT, browser, ui_server

WAIT_MS = TIMEOUT * 1000


@pytest.fixture(scope="module")
def http_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SDK1_PYTHON.exists() or not SDK2_PYTHON.exists():
        pytest.skip("the SDK peers are missing; run scripts/setup-peers.sh")
    folder = tmp_path_factory.mktemp("http")
    server = Server([str(SDK1_PYTHON), str(SDK1_SERVER), "{port}"], {}, folder / "server.log")
    trace = folder / "traces" / "http.jsonl"
    trace.parent.mkdir()
    try:
        relay = Relay(server.url("/mcp"), trace)
        try:
            done = subprocess.run(
                [str(SDK2_PYTHON), str(SDK_CLIENT), "--url", relay.url],
                cwd=REPO,
                capture_output=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        finally:
            stop_process(relay.proc, signal.SIGINT)
    finally:
        server.stop()
    return trace


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with browser() as b:
        yield b


def test_http_exchange_heads_in_the_detail_pane(chromium: object, http_trace: Path) -> None:
    with TraceReader(http_trace) as reader:
        records = list(reader.records())
    messages = [r for r in records if isinstance(r, MessageRecord)]
    sessions = {m.session for m in messages}
    call = next(m for m in messages if m.method == "tools/call" and m.kind == "request")
    frame = next(r for r in records if isinstance(r, FrameRecord) and r.seq == call.frame)
    exchange = (frame.meta or {})["exchange"]
    request = next(
        r
        for r in records
        if isinstance(r, EventRecord)
        and r.event == "http-request"
        and r.data.get("exchange") == exchange
    )
    response = next(
        r
        for r in records
        if isinstance(r, EventRecord)
        and r.event == "http-response"
        and r.data.get("exchange") == exchange
    )
    context = chromium.new_context(viewport={"width": 1500, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        with ui_server(http_trace.parent) as url:
            page.goto(url)
            page.wait_for_selector(".session", timeout=WAIT_MS)
            assert page.locator(".session").count() == len(sessions)
            listed = page.locator("#session-list").inner_text()
            assert "2025-11-25" in listed
            # open the session that holds the tools/call
            for i in range(page.locator(".session").count()):
                page.locator(".session").nth(i).click()
                page.wait_for_timeout(300)
                if page.locator(".row", has_text="tools/call").count():
                    break
            page.locator(".row", has_text="tools/call").first.click()
            page.wait_for_selector("#detail pre.http", timeout=WAIT_MS)
            heads = page.locator("#detail pre.http").inner_text()
            assert heads.splitlines()[0] == f"{request.data['method']} {request.data['path']}"
            assert f"HTTP {response.data['status']}" in heads
            for name, value in response.data["headers"]:
                assert f"{name}: {value}" in heads
            assert errors == []
    finally:
        context.close()
