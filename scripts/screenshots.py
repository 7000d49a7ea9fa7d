"""Screenshots of ``mcpsniff ui`` and ``mcpsniff report`` on gallery traces, for the README.

Drives Debian's chromium (``scripts/setup-browser.sh``) with Playwright, as
the UI tests do, and writes PNG files into ``docs/screenshots/``::

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

REPO = Path(__file__).resolve().parents[1]
GALLERY = REPO / "recordings"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TRACES = [
    "out-of-order-batch.jsonl",
    "stdout-pollution.jsonl",
    "clean-2026-07-28.jsonl",
    "clean-2025-11-25.jsonl",
    "unanswered-request.jsonl",
]
VIEWPORT = {"width": 1280, "height": 800}
WIDE = {"width": 1920, "height": 1080}
SHOTS = (
    "ui.png",
    "ui-dark.png",
    "ui-findings-dark.png",
    "report-stats.png",
    "ui-waterfall.png",
    "ui-live-pending.png",
    "ui-actions.png",
    "ui-stats-sorted.png",
    "ui-1920-dark.png",
    "ui-compare.png",
    "ui-whole-file.png",
)


def write_live(path: Path) -> None:
    """A session being recorded: a tools/call sent 4 s ago and not answered yet."""
    import time

    from mcpsniff.core.model import FrameRecord, MessageRecord
    from mcpsniff.trace.writer import TraceWriter

    start = time.time() - 4.0
    writer = TraceWriter.create(path, meta={"name": "slow-server"}, created=start - 0.5)
    lines = [
        (
            "c2s",
            0,
            "initialize",
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":'
            b'{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1"}}}\n',
        ),
        (
            "s2c",
            0,
            None,
            b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"0.9"}}}\n',
        ),
        (
            "c2s",
            1,
            "tools/call",
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
            b'{"name":"index_repository","arguments":{"path":"."}}}\n',
        ),
    ]
    for seq, (direction, ident, method, raw) in enumerate(lines, start=1):
        t = start - 0.4 + seq * 0.1 if seq < 3 else start
        writer.write(FrameRecord(seq, t, "s", direction, "stdio", raw))
        kind = "request" if method else "response"
        writer.write(
            MessageRecord(
                seq,
                "s",
                direction,
                kind,
                id=ident,
                has_id=True,
                method=method or "initialize",
                answers=1 if not method else None,
            )
        )
    writer.flush()


def write_shared(path: Path) -> None:
    """One trace file of two servers' sessions whose requests interleave in time."""
    import json

    from mcpsniff.core.analyzer import replay
    from mcpsniff.core.model import EventRecord, FrameRecord
    from mcpsniff.trace.writer import TraceWriter

    def session(key: str, server: str, tool: str, first_seq: int, t0: float) -> list:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2.1"},
        }
        info = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": server, "version": "1.0"},
        }
        messages = [
            ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
            ("s2c", {"jsonrpc": "2.0", "id": 0, "result": info}),
            ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
            (
                "c2s",
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {}},
                },
            ),
            ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
        ]
        out: list = [EventRecord(first_seq, t0, key, "session-start", {"transport": "stdio"})]
        out += [
            FrameRecord(
                first_seq + 1 + i,
                t0 + 0.3 * (i + 1),
                key,
                d,
                "stdio",
                (json.dumps(m) + "\n").encode(),
            )
            for i, (d, m) in enumerate(messages)
        ]
        out.append(EventRecord(first_seq + 6, t0 + 2.0, key, "session-end", {}))
        return out  # fmt: skip

    records = session("weather", "weather", "forecast", 1, 1767225600.0)
    records += session("files", "files", "read_file", 8, 1767225600.15)
    writer = TraceWriter.create(path, meta={"source": "screenshots"})
    writer.write_all(list(replay(records)))
    writer.close()


def start_ui(folder: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "ui", str(folder), "--listen", "127.0.0.1:0"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        match = re.search(r"serving (http://\S+/)", line)
        if match:
            return proc, match.group(1)
    raise SystemExit("mcpsniff ui did not start")


def open_session(page: Page, name: str) -> None:
    page.locator(".session", has_text=name).click()
    page.locator("[data-tab=timeline]").click()
    page.wait_for_selector(".row")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in TRACES:
            shutil.copyfile(GALLERY / name, folder / name)
        write_live(folder / "live.jsonl")
        write_shared(folder / "two-servers.jsonl")
        report = folder / "report.html"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mcpsniff",
                "report",
                str(GALLERY / "stdout-pollution.jsonl"),
                "-o",
                str(report),
            ],
            cwd=REPO,
            check=True,
        )
        proc, url = start_ui(folder)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(url)
                page.wait_for_selector(".session")
                open_session(page, "out-of-order-batch.jsonl")
                page.locator("[data-toggle]").first.click()
                page.locator("[data-toggle]").last.click()
                page.locator(".row", has_text="tools/call add").last.click()
                page.wait_for_selector("#raw")
                page.screenshot(path=str(out / "ui.png"))
                page.locator("#theme").click()
                open_session(page, "stdout-pollution.jsonl")
                page.locator(".row", has_text="JR-PARSE").click()
                page.wait_for_selector("#detail .finding")
                page.screenshot(path=str(out / "ui-dark.png"))
                page.locator("[data-tab=findings]").click()
                page.wait_for_selector("#tab-findings section")
                page.screenshot(path=str(out / "ui-findings-dark.png"))
                page.locator("#theme").click()
                open_session(page, "unanswered-request.jsonl")
                page.locator(".row", has_text="tools/call").first.click()
                page.wait_for_selector("#raw")
                page.screenshot(path=str(out / "ui-waterfall.png"))
                open_session(page, "live.jsonl")
                page.wait_for_selector('.wf[data-status="pending"]')
                page.wait_for_timeout(1500)
                page.screenshot(path=str(out / "ui-live-pending.png"))
                open_session(page, "clean-2025-11-25.jsonl")
                page.locator(".row", has_text="tools/call").first.click()
                page.wait_for_selector("#actions [data-action=json]")
                page.click("#filter")
                page.keyboard.type("method == tools/")
                page.wait_for_selector("#filter-suggestions [role=option]")
                page.screenshot(path=str(out / "ui-actions.png"))
                page.keyboard.press("Escape")
                page.locator("[data-tab=stats]").click()
                page.wait_for_selector("table.stats")
                page.get_by_role("button", name="sort by max").first.click()
                page.screenshot(path=str(out / "ui-stats-sorted.png"))
                page.fill("#filter", "")
                page.press("#filter", "Enter")
                open_session(page, "unanswered-request.jsonl")
                page.locator("[data-tab=compare]").click()
                other = page.evaluate(
                    "[...document.querySelectorAll('#compare-with option')]"
                    ".find((o) => o.textContent.includes('clean-2025-11-25')).value"
                )
                page.select_option("#compare-with", other)
                page.wait_for_selector("table.compare tbody tr")
                page.screenshot(path=str(out / "ui-compare.png"))
                page.locator(".file-head", has_text="two-servers.jsonl").locator("button").click()
                page.wait_for_selector("table.file-rows tbody tr")
                page.screenshot(path=str(out / "ui-whole-file.png"))
                wide = browser.new_page(viewport=WIDE, color_scheme="dark")
                wide.goto(url)
                open_session(wide, "out-of-order-batch.jsonl")
                wide.locator("[data-toggle]").first.click()
                wide.locator(".row", has_text="tools/call").first.click()
                wide.wait_for_selector("#raw")
                wide.screenshot(path=str(out / "ui-1920-dark.png"))
                report_page = browser.new_page(viewport=VIEWPORT)
                report_page.goto(report.as_uri())
                report_page.wait_for_selector(".row")
                report_page.locator("[data-tab=stats]").click()
                report_page.wait_for_selector("table.stats")
                report_page.screenshot(path=str(out / "report-stats.png"))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    for name in SHOTS:
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
