"""Review 4: bidi controls from traffic in the web UI and the HTML report (real Chromium).

Every string reached the page as text, never markup, but a peer's U+202E
(RIGHT-TO-LEFT OVERRIDE) still reordered what was shown: a tool called
``evil\\u202egnp.exe`` read ``evilexe.png`` in the session list, the message
list, the sequence diagram and the detail, as Trojan Source (CVE-2021-42574)
reads in an editor. ``mcpsniff show`` shows it as the escape ``\\u202e``; the
page now does the same.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter
from tests.ui.support import TIMEOUT, browser, ui_server

TOOL = "evil\u202egnp.exe"
SERVER = "srv\u2066x\u2069"
RAW = ("\u202e", "\u2066", "\u2069")


def _trace(path: Path) -> Path:
    messages = [
        ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": SERVER, "version": "1"},
                },
            },
        ),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": TOOL}}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": True}}),
    ]
    records: list[FrameRecord | EventRecord] = [
        FrameRecord(n + 1, 1767225600.0 + n, "s", d, "stdio", (json.dumps(m) + "\n").encode())
        for n, (d, m) in enumerate(messages)
    ]
    records.append(EventRecord(9, 1767225609.0, "s", "session-end", {}))
    writer = TraceWriter.create(path, meta={"source": "review4"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with browser() as b:
        yield b


def _page_text(chromium: object, url: str) -> str:
    context = chromium.new_context(viewport={"width": 1500, "height": 900})  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector(".session", timeout=TIMEOUT * 1000)
        page.locator(".session").first.click()
        page.wait_for_selector(".row", timeout=TIMEOUT * 1000)
        page.locator(".row", has_text="tools/call").first.click()
        page.wait_for_selector("#body", timeout=TIMEOUT * 1000)
        time.sleep(0.3)
        # The page's text, and the diagram's labels (SVG text is not in innerText).
        return str(
            page.evaluate(
                "document.body.innerText + ' ' + [...document.querySelectorAll('svg text')]"
                ".map(t => t.textContent).join(' ')"
            )
        )
    finally:
        context.close()


def _assert_escaped(text: str) -> None:
    assert "evil\\u202egnp.exe" in text
    assert "srv\\u2066x\\u2069" in text
    for mark in RAW:
        assert mark not in text


def test_the_live_ui_shows_bidi_controls_as_escapes(chromium: object, tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    _trace(folder / "t.jsonl")
    with ui_server(folder) as url:
        _assert_escaped(_page_text(chromium, url))


def test_the_report_shows_bidi_controls_as_escapes(chromium: object, tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.jsonl")
    page = tmp_path / "t.html"
    result = CliRunner().invoke(main, ["report", str(trace), "-o", str(page)])
    assert result.exit_code == 0, result.output
    _assert_escaped(_page_text(chromium, page.as_uri()))
