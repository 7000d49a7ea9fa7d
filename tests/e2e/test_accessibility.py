"""Accessibility measured in the browser: axe-core on every view of the UI and the report.

axe-core (npm, installed by ``scripts/setup-peers.sh`` into ``.peers/axe``) runs
inside Chromium on each view, in both themes: no serious or critical violation.
The page's Content-Security-Policy would refuse the injected script, so these
pages only are opened with it bypassed; the page itself is unchanged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from tests.ui.support import REPO, TIMEOUT, browser, copy_gallery, ui_server

WAIT_MS = TIMEOUT * 1000
AXE = Path(
    os.environ.get(
        "MCPSNIFF_AXE", REPO / ".peers" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
    )
)
RUN_AXE = """
async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} at ` +
      v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
}
"""


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    if not AXE.exists():
        pytest.skip(f"{AXE} is missing; run scripts/setup-peers.sh")
    with browser() as b:
        yield b


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("axe")
    copy_gallery(
        folder, "clean-2025-11-25.jsonl", "unanswered-request.jsonl", "out-of-order-batch.jsonl"
    )
    return folder


def violations(page: object) -> list[str]:
    """The serious and critical axe violations of what the page shows now."""
    page.add_script_tag(path=str(AXE))  # type: ignore[attr-defined]
    return page.evaluate(RUN_AXE)  # type: ignore[attr-defined]


def wait_for(page: object, expression: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not page.evaluate(expression):  # type: ignore[attr-defined]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.05)


def each_view(page: object) -> Iterator[str]:
    """Bring up every view in turn, yielding its name."""
    page.wait_for_selector(".session", timeout=WAIT_MS)  # type: ignore[attr-defined]
    page.locator(".session", has_text="unanswered").click()  # type: ignore[attr-defined]
    page.wait_for_selector(".row", timeout=WAIT_MS)  # type: ignore[attr-defined]
    yield "timeline"
    page.locator(".row", has_text="tools/call").first.click()  # type: ignore[attr-defined]
    page.wait_for_selector("#raw", timeout=WAIT_MS)  # type: ignore[attr-defined]
    yield "timeline with a message open"
    page.click("#tab-button-findings")  # type: ignore[attr-defined]
    page.wait_for_selector("#tab-findings .group", timeout=WAIT_MS)  # type: ignore[attr-defined]
    yield "findings"
    page.click("#tab-button-stats")  # type: ignore[attr-defined]
    page.wait_for_selector("table.stats", timeout=WAIT_MS)  # type: ignore[attr-defined]
    yield "stats"
    if page.locator("#tab-button-compare").is_visible():  # type: ignore[attr-defined]
        page.click("#tab-button-compare")  # type: ignore[attr-defined]
        page.wait_for_selector("#compare-with", timeout=WAIT_MS)  # type: ignore[attr-defined]
        other = page.evaluate(  # type: ignore[attr-defined]
            "[...document.querySelectorAll('#compare-with option')]"
            ".find((o) => o.textContent.includes('clean')).value"
        )
        page.select_option("#compare-with", other)  # type: ignore[attr-defined]
        page.wait_for_selector("table.compare tbody tr", timeout=WAIT_MS)  # type: ignore[attr-defined]
        yield "compare"
    page.click("#tab-button-file")  # type: ignore[attr-defined]
    page.wait_for_selector("table.file-rows tbody tr", timeout=WAIT_MS)  # type: ignore[attr-defined]
    yield "whole file"
    page.click("#tab-button-timeline")  # type: ignore[attr-defined]
    page.click("#filter")  # type: ignore[attr-defined]
    page.keyboard.type("method == tools/")  # type: ignore[attr-defined]
    page.wait_for_selector("#filter-suggestions [role=option]", timeout=WAIT_MS)  # type: ignore[attr-defined]
    yield "filter completion"
    page.fill("#filter", "methd == x")  # type: ignore[attr-defined]
    page.press("#filter", "Enter")  # type: ignore[attr-defined]
    wait_for(page, "document.getElementById('filter-status').classList.contains('bad')")
    yield "filter error"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_view_of_the_ui_has_no_serious_violation(
    chromium: object, gallery: Path, theme: str
) -> None:
    context = chromium.new_context(  # type: ignore[attr-defined]
        viewport={"width": 1280, "height": 800}, color_scheme=theme, bypass_csp=True
    )
    page = context.new_page()
    found: dict[str, list[str]] = {}
    try:
        with ui_server(gallery) as url:
            page.goto(url)
            for view in each_view(page):
                found[view] = violations(page)
    finally:
        context.close()
    assert len(found) == 8 and "compare" in found and "whole file" in found
    assert {view: v for view, v in found.items() if v} == {}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_view_of_the_report_has_no_serious_violation(
    chromium: object, gallery: Path, tmp_path: Path, theme: str
) -> None:
    out = tmp_path / "report.html"
    done = CliRunner().invoke(
        main, ["report", str(gallery / "unanswered-request.jsonl"), "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    context = chromium.new_context(  # type: ignore[attr-defined]
        viewport={"width": 1280, "height": 800}, color_scheme=theme, bypass_csp=True
    )
    page = context.new_page()
    found: dict[str, list[str]] = {}
    try:
        page.goto(out.as_uri())
        for view in each_view(page):
            found[view] = violations(page)
    finally:
        context.close()
    assert len(found) == 7 and "whole file" in found  # a report has no Compare tab
    assert {view: v for view, v in found.items() if v} == {}
