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
TRACES = ["out-of-order-batch.jsonl", "stdout-pollution.jsonl", "clean-2026-07-28.jsonl"]
VIEWPORT = {"width": 1500, "height": 760}


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
    for name in ("ui.png", "ui-dark.png", "ui-findings-dark.png", "report-stats.png"):
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
