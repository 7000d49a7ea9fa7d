"""``mcpsniff ui``'s Compare and Whole file views in a real headless Chromium.

Compare: two real ``mcpsniff stdio`` recordings of one server before and after a
change, aligned as ``mcpsniff diff`` aligns them. Whole file: one trace file of
two sessions whose messages interleave in time, written session after session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter
from tests.e2e.test_ui_browser import wait_for
from tests.replay.test_trace_diff import record
from tests.ui.support import TIMEOUT, browser, ui_server

WAIT_MS = TIMEOUT * 1000
VIEWPORTS = [(1280, 800), (1920, 1080)]


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with browser() as b:
        yield b


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pair")
    record(folder / "before.jsonl", "1.0", 0, [(1, 2), (3, 4)])
    # The changed server adds 1 to each sum; its client asks in another order, and more.
    record(folder / "after.jsonl", "1.1", 1, [(3, 4), (1, 2), (5, 5)])
    return folder


def interleaved_trace(path: Path) -> Path:
    """Sessions "alpha" and "beta" in one file, written one after the other, alternating in time."""

    def frames(session: str, first_seq: int, t0: float) -> list[FrameRecord | EventRecord]:
        messages = [
            ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {}}),
            ("c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            ("s2c", {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
        ]
        out: list[FrameRecord | EventRecord] = [
            FrameRecord(
                first_seq + i, t0 + 2 * i, session, d, "stdio", (json.dumps(m) + "\n").encode()
            )
            for i, (d, m) in enumerate(messages)
        ]
        out.append(EventRecord(first_seq + 4, t0 + 8, session, "session-end", {}))
        return out

    records = frames("alpha", 1, 1767225600.0) + frames("beta<b>", 6, 1767225601.0)
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return interleaved_trace(tmp_path_factory.mktemp("shared") / "two.jsonl")


def new_page(chromium: object, width: int, height: int) -> object:
    context = chromium.new_context(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    return page


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_compare_aligns_requests_and_marks_each_differing_field(
    chromium: object, pair: Path, width: int, height: int
) -> None:
    with ui_server(pair) as url:
        page = new_page(chromium, width, height)
        try:
            page.goto(url)
            page.wait_for_selector(".session", timeout=WAIT_MS)
            page.locator(".session", has_text="before.jsonl").click()
            page.wait_for_selector(".row", timeout=WAIT_MS)
            # Keyboard only: the tab list's arrows reach Compare, Tab reaches the picker.
            page.locator("#tab-button-timeline").focus()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            assert page.evaluate("document.activeElement.id") == "tab-button-compare"
            assert page.locator("#tab-compare").is_visible()
            picker = page.locator("#compare-with")
            assert picker.get_attribute("id") == "compare-with"
            label = page.locator("label[for=compare-with]").inner_text()
            assert "Compare this session (A) with B" in label
            other = page.evaluate(
                "[...document.querySelectorAll('#compare-with option')]"
                ".find((o) => o.textContent.includes('after.jsonl')).value"
            )
            picker.focus()
            picker.select_option(other)
            page.wait_for_selector("table.compare tbody tr", timeout=WAIT_MS)
            status = page.locator("#compare-status").inner_text()
            assert status == (
                "4 requests aligned: 0 answered alike, 3 differently, 0 only in A, 1 only in B"
            )
            rows = page.locator("table.compare tbody tr")
            assert rows.count() == 4
            classes = [rows.nth(i).get_attribute("class") for i in range(4)]
            assert classes == ["cmp-differ", "cmp-differ", "cmp-differ", "cmp-only"]
            first = rows.nth(0)
            assert first.locator("th").inner_text().startswith("initialize")
            assert first.locator("mark").all_inner_texts() == ["$.result.serverInfo.version"]
            assert 'A "1.0"' in first.locator(".cmp-fields li").inner_text()
            assert '→ B "1.1"' in first.locator(".cmp-fields li").inner_text()
            # Aligned by arguments: A's (1, 2) (seq 5) beside B's (1, 2) (seq 6).
            second = rows.nth(1)
            assert second.locator(".cmp-side button").all_inner_texts() == ["#5", "#6"]
            assert second.locator("mark").all_inner_texts() == ["$.result.content[0].text"]
            # Each differing answer is shown on both sides; a request only B made, on B's.
            assert second.locator("pre").count() == 2
            assert '"4"' in second.locator("pre").nth(1).inner_text()
            assert rows.nth(3).locator("pre").count() == 1
            assert "only in B" in rows.nth(3).inner_text()
            assert rows.nth(3).locator("td").nth(0).inner_text() == "(not asked)"
            # The field is highlighted: a background unlike the cell's.
            mark_bg = page.evaluate(
                "getComputedStyle(document.querySelector('table.compare mark')).backgroundColor"
            )
            assert mark_bg not in ("rgba(0, 0, 0, 0)", "transparent")
            # Nothing runs off the page sideways at this width.
            overflow = page.evaluate(
                "document.getElementById('tab-compare').scrollWidth"
                " - document.getElementById('tab-compare').clientWidth"
            )
            assert overflow <= 1, overflow
            # A side's seq opens that request on its session's timeline.
            second.locator(".cmp-side button").nth(1).click()
            wait_for(page, "document.querySelector('.row.selected') !== null")
            assert page.locator("#tab-button-timeline").get_attribute("aria-selected") == "true"
            assert page.locator(".session.active").inner_text().count("after.jsonl") == 1
            assert page.locator(".row.selected .seq").inner_text() == "#6"
            assert page.errors == []
        finally:
            page.context.close()


def test_compare_refuses_unknown_sessions_and_a_report_has_no_compare_tab(
    chromium: object, pair: Path, tmp_path: Path
) -> None:
    from tests.ui.support import ui_get

    with ui_server(pair) as url:
        status, _headers, body = ui_get(url + "api/compare?a=0:0&b=nope")
        assert status == 404 and b"no such session b" in body
    report = tmp_path / "r.html"
    from click.testing import CliRunner

    from mcpsniff.cli import main

    done = CliRunner().invoke(main, ["report", str(pair / "before.jsonl"), "-o", str(report)])
    assert done.exit_code == 0, done.output
    page = new_page(chromium, 1280, 800)
    try:
        page.goto(report.as_uri())
        page.wait_for_selector(".row", timeout=WAIT_MS)
        assert page.locator("#tab-button-compare").is_hidden()
        assert page.locator("#tab-button-file").is_visible()
        assert page.errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_whole_file_interleaves_the_sessions_of_a_file_by_time(
    chromium: object, shared: Path, width: int, height: int
) -> None:
    with ui_server(shared) as url:
        page = new_page(chromium, width, height)
        try:
            page.goto(url)
            page.wait_for_selector(".file-head", timeout=WAIT_MS)
            heads = page.locator(".file-head")
            assert heads.count() == 1
            assert "two.jsonl" in heads.inner_text() and "2 sessions" in heads.inner_text()
            whole = heads.locator("button.file-whole")
            assert "2 sessions of two.jsonl" in whole.get_attribute("aria-label")
            whole.focus()
            page.keyboard.press("Enter")
            page.wait_for_selector("table.file-rows tbody tr", timeout=WAIT_MS)
            assert page.evaluate("document.activeElement.id") == "tab-button-file"
            rows = page.locator("table.file-rows tbody tr")
            # 5 rows a session (4 messages and the end); one time axis, alternating.
            assert rows.count() == 10
            who = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(10)]
            assert [w.split()[0] for w in who] == ["S1", "S2"] * 5
            # Each row's session is named, and the hostile name stays text.
            assert "beta<b>" in who[1]
            assert page.locator("table.file-rows b").count() == 0
            seqs = [rows.nth(i).locator("button").inner_text().split()[0] for i in range(10)]
            assert seqs == ["#1", "#6", "#2", "#7", "#3", "#8", "#4", "#9", "#5", "#10"]
            status = page.locator(".file-status").inner_text()
            assert status == "10 rows of 2 sessions of two.jsonl on one time axis"
            overflow = page.evaluate(
                "document.getElementById('tab-file').scrollWidth"
                " - document.getElementById('tab-file').clientWidth"
            )
            assert overflow <= 1, overflow
            # A row opens its session at that message.
            beta = rows.nth(3).get_attribute("data-session")
            rows.nth(3).locator("button").click()
            wait_for(page, "document.querySelector('.row.selected') !== null")
            assert page.locator(".row.selected .seq").inner_text() == "#7"
            assert page.locator(".session.active").get_attribute("data-session-id") == beta
            assert page.evaluate("window.mcpsniffState.current.key") == "beta<b>"
            assert page.errors == []
        finally:
            page.context.close()
