"""``mcpsniff report`` opened from file:// in a real headless Chromium.

The report carries its data, script and styles inline; these tests open it
with no server at all, check the same views as the live UI, check that the
page's own filter (a JavaScript port of the filter language) selects exactly
what the Python filter selects, and that nothing is fetched from anywhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsniff.core.model import MessageRecord
from mcpsniff.filter import compile_filter, load_views
from mcpsniff.trace.reader import TraceReader
from tests.ui.support import (
    GALLERY,
    HOSTILE_SERVER,
    REPO,
    SDK2_PYTHON,
    TIMEOUT,
    browser,
    record_session,
    sdk_peers_missing,
)

WAIT_MS = TIMEOUT * 1000
#: Expressions whose selection must be the same in the page as on the command line.
EXPRESSIONS = [
    "method == tools/call",
    "kind == response and latency > 10ms",
    "tools/list",
    '"Loading model"',
    "not dir == c2s",
    "dir == server",
    "id == 2",
    'id == "1"',
    "id",
    "severity >= warning",
    "severity == error or kind == batch",
    "rule ~ ^JR",
    "method ~ ^tools/ or kind == batch",
    "method !~ initialize",
    "error.code",
    "error.code == -32600",
    "seq >= 5 and seq <= 7",
    "size > 100",
    "kind == event and event == session-start",
    "(method == ping || method == tools/list) && !kind == request",
    "tool == add",
    'method ~ "^(tools|resources)/(call|list)$"',
    'method ~ "[[:alpha:]]+/l.st" or rule ~ "\\bRESP"',
    'method ~ "(?:no|ti){1,3}f" and method !~ "x{2,}"',
]
BAD = {
    "latency > fast": "bad duration 'fast'",
    "methd == x": "unknown field 'methd'",
    "kind == answer": "unknown kind 'answer'",
    "(method == x": "expected ')'",
    "method < 3": "compares numbers",
    'method ~ "(a)\\1"': "invalid escape sequence",
    'method ~ "(?=a)"': "invalid or unsupported Perl syntax",
    'method ~ "a{1001}"': "bad repetition operator",
}


def make_report(trace: Path, out: Path, *args: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "report", str(trace), "-o", str(out), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.exists()
    return out


def wait_for(page: object, expression: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):  # type: ignore[attr-defined]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with browser() as b:
        yield b


@pytest.fixture
def page(chromium: object) -> Iterator[object]:
    context = chromium.new_context(viewport={"width": 1500, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    page.errors = []
    page.requests = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    context.close()


def test_report_from_file_url_shows_the_views(page: object, tmp_path: Path) -> None:
    trace = GALLERY / "out-of-order-batch.jsonl"
    out = make_report(trace, tmp_path / "report.html")
    page.goto(out.as_uri())
    page.wait_for_selector(".row", timeout=WAIT_MS)  # the only session opens by itself
    assert page.locator(".session").count() == 1
    with TraceReader(trace) as reader:
        messages = [r for r in reader.records() if isinstance(r, MessageRecord)]
    assert page.locator("svg g.arrow").count() == len([m for m in messages if m.index is None])
    page.locator(".row", has_text="initialize").first.click()
    page.wait_for_selector("#body", timeout=WAIT_MS)
    assert '"protocolVersion": "2025-03-26"' in page.locator("#body").inner_text()
    page.fill("#filter", "method == tools/call")
    page.press("#filter", "Enter")
    wait_for(page, "document.querySelectorAll('.row').length === 2")  # request and response
    page.locator("[data-tab=stats]").click()
    page.wait_for_selector("table.stats[data-kind=method]", timeout=WAIT_MS)
    assert "tools/call" in page.locator("table.stats[data-kind=method]").inner_text()
    # nothing but the file itself was loaded, and no script failed
    assert [u for u in page.requests if not u.startswith(("file://", "data:"))] == []
    assert page.errors == []
    csp = page.locator("meta[http-equiv=Content-Security-Policy]").get_attribute("content")
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp


@pytest.mark.parametrize("name", sorted(p.name for p in GALLERY.glob("*.jsonl")))
def test_the_page_filter_selects_what_the_command_line_filter_selects(
    page: object, tmp_path: Path, name: str
) -> None:
    trace = GALLERY / name
    out = make_report(trace, tmp_path / "report.html")
    views = list(load_views(trace))
    page.goto(out.as_uri())
    page.wait_for_selector(".row", timeout=WAIT_MS)
    for expression in EXPRESSIONS:
        flt = compile_filter(expression)
        wanted = sorted(
            (v.seq, -1 if v.index is None else v.index) for v in views if flt.matches(v)
        )
        page.fill("#filter", expression)
        page.press("#filter", "Enter")
        script = (
            "(() => { const s = window.mcpsniffState; if (!s.filtered) return null;"
            " return s.visible.map(n => [s.rows[n].seq, s.rows[n].index ?? -1]); })()"
        )
        deadline = time.monotonic() + TIMEOUT
        got = None
        while got is None and time.monotonic() < deadline:
            got = page.evaluate(script)
            time.sleep(0.02)
        assert got is not None, expression
        assert sorted(map(tuple, got)) == wanted, f"{name}: {expression}"
        page.fill("#filter", "")
        page.press("#filter", "Enter")
        wait_for(page, "window.mcpsniffState.filtered === null")
    for expression, message in BAD.items():
        page.fill("#filter", expression)
        page.press("#filter", "Enter")
        page.wait_for_selector("#filter-status.bad", timeout=WAIT_MS)
        status = page.locator("#filter-status").inner_text()
        assert message in status, (expression, status)
        page.fill("#filter", "")
        page.press("#filter", "Enter")
        wait_for(page, "!document.querySelector('#filter-status.bad')")


def test_report_filter_option_keeps_matching_rows_and_their_findings(
    page: object, tmp_path: Path
) -> None:
    trace = GALLERY / "stdout-pollution.jsonl"
    out = make_report(trace, tmp_path / "r.html", "--filter", "severity >= error")
    page.goto(out.as_uri())
    page.wait_for_selector(".row", timeout=WAIT_MS)
    flt = compile_filter("severity >= error")
    wanted = [v for v in load_views(trace) if flt.matches(v)]
    assert page.locator(".row").count() == len(wanted)
    page.locator("[data-tab=findings]").click()
    assert page.locator("#tab-findings section.group").count() == 2
    assert "filter: severity >= error" in page.locator("#source-label").inner_text()


def test_report_data_cannot_close_its_script_element(tmp_path: Path) -> None:
    from mcpsniff.ui.report import render_html

    hostile = "</script><script>alert(1)</script><!--"
    text = render_html({"label": hostile, "sessions": [], "data": {}})
    data = text.split('id="mcpsniff-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data
    assert json.loads(data)["label"] == hostile


def test_markup_in_a_report_never_runs(page: object, tmp_path: Path) -> None:
    reason = sdk_peers_missing()
    if reason:
        pytest.skip(reason)
    trace = tmp_path / "hostile.jsonl"
    record_session(trace, [str(SDK2_PYTHON), str(HOSTILE_SERVER)])
    assert "<script>" in trace.read_text()
    out = make_report(trace, tmp_path / "hostile.html")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(out.as_uri())
    page.wait_for_selector(".row", timeout=WAIT_MS)
    for i in range(page.locator(".row").count()):
        page.locator(".row").nth(i).click()
        page.wait_for_timeout(20)
    # Quoted, as the language wants free text that starts with an operator (a bare
    # <script> is an error, and an error now leaves no stale rows under it).
    page.fill("#filter", '"<script>"')
    page.press("#filter", "Enter")
    page.wait_for_timeout(300)
    assert page.locator(".row").count() > 0  # free text finds the payloads as text
    for tab in ("findings", "stats", "timeline"):
        page.locator(f"[data-tab={tab}]").click()
        page.wait_for_timeout(100)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#detail img, #detail script, .rows img, #session-list img").count() == 0
    assert dialogs == []
    assert page.errors == []


def test_the_stats_tab_shows_the_context_cost_largest_first(page: object, tmp_path: Path) -> None:
    trace = REPO / "tests" / "data" / "guard" / "clean-memory.jsonl"
    out = make_report(trace, tmp_path / "report.html")
    page.goto(out.as_uri())
    page.wait_for_selector(".row", timeout=WAIT_MS)
    page.locator("[data-tab=stats]").click()
    page.wait_for_selector("table.stats[data-kind=context-cost]", timeout=WAIT_MS)
    heading = page.locator(".context-cost h3").inner_text()
    assert heading.startswith("Context cost: 10928 bytes, ") and "o200k_base" in heading
    rows = page.locator("table.stats[data-kind=context-cost] tr").all_inner_texts()
    assert rows[1].split("\t")[:3] == ["tool", "search_nodes", "1472"]
    sizes = [int(r.split("\t")[2]) for r in rows[1:]]
    assert sizes == sorted(sizes, reverse=True)
    assert "not estimated" in page.locator(".context-cost p").inner_text()
    assert page.errors == []


def test_a_backtracking_pattern_leaves_the_page_responsive(page: object, tmp_path: Path) -> None:
    """``(.|.)*z`` against 2,000 distinct 300-character methods: RegExp never finished
    (2**300 paths each); the page's own matcher answers at once, and goes on answering."""
    trace = tmp_path / "long.jsonl"
    lines = ['{"type":"header","format":"mcpsniff-trace","version":2,"tool":"t","meta":{}}']
    for i in range(2000):
        method = f"m{i}" + "a" * 290
        text = json.dumps({"jsonrpc": "2.0", "method": method}) + "\n"
        frame = {"type": "frame", "seq": i + 1, "t": 1.0 + i, "session": "s", "dir": "c2s"}
        lines.append(json.dumps({**frame, "transport": "stdio", "text": text}))
    trace.write_text("\n".join(lines) + "\n")
    out = make_report(trace, tmp_path / "long.html")
    page.goto(out.as_uri())
    page.wait_for_selector(".row", timeout=WAIT_MS)
    started = time.monotonic()
    page.fill("#filter", 'method ~ "(.|.)*z"')
    page.press("#filter", "Enter")
    wait_for(page, "window.mcpsniffState.filtered !== null", timeout=30)
    assert page.evaluate("window.mcpsniffState.visible.length") == 0
    assert time.monotonic() - started < 30
    # Still responsive: the next filter (the same pattern, one that matches) answers too.
    page.fill("#filter", 'method ~ "^m1(.|.)*a$"')
    page.press("#filter", "Enter")
    wait_for(page, "window.mcpsniffState.visible.length === 1111", timeout=30)
    assert page.evaluate("1 + 1") == 2
    assert page.errors == []
