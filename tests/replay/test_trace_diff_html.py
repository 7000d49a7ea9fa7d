"""``report --compare A B``: the two recordings side by side, in a real Chromium."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.replay.test_trace_diff import ENV, record
from tests.ui.support import browser


def compare(a: Path, b: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "report", "--compare", str(a), str(b), "-o", str(out)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )


def test_the_page_aligns_requests_and_highlights_differing_fields(tmp_path: Path) -> None:
    a = record(tmp_path / "a.jsonl", "1.0", 0, [(1, 2), (3, 4)])
    b = record(tmp_path / "b.jsonl", "1.1", 1, [(3, 4), (1, 2), (5, 5)])
    out = tmp_path / "cmp.html"
    done = compare(a, b, out)
    assert done.returncode == 0, done.stderr
    assert done.stderr.endswith("(4 requests compared)\n")
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(out.as_uri())
        rows = page.locator("tbody tr")
        assert rows.count() == 4
        assert [rows.nth(i).get_attribute("class") for i in range(4)] == [
            "differ",
            "differ",
            "differ",
            "only",
        ]
        first = rows.nth(0).inner_text()
        assert "initialize" in first and "$.result.serverInfo.version" in first
        assert page.locator("tbody tr mark").first.inner_text() == "$.result.serverInfo.version"
        assert "only in B" in rows.nth(3).inner_text()
        # The style is admitted by its hash: the table is laid out, not refused.
        assert page.locator("th.w-request").evaluate("t => getComputedStyle(t).width") != "auto"
        assert errors == []
        page.close()


def test_hostile_labels_stay_text_and_a_trace_is_never_the_output(tmp_path: Path) -> None:
    from mcpsniff.replay.trace_diff import Aligned, Exchange
    from mcpsniff.replay.trace_diff_html import html_page

    evil = "<script>alert(1)</script>"
    page = html_page([Aligned(Exchange("k", evil, 1, {"result": evil}), None)], evil, "b")
    assert "<script>" not in page and "&lt;script&gt;" in page
    a = record(tmp_path / "a.jsonl", "1.0", 0, [(1, 2)])
    refused = compare(a, a, a)
    assert refused.returncode == 2
    assert "is an mcpsniff trace; it was left untouched" in refused.stderr
