"""``mcpsniff ui`` in a real headless Chromium: sessions, diagram, detail, filter, live.

One browser for the module (the machine has two cores shared by everything).
Expected values come from the trace files themselves, read with the trace
reader and the filter package, never from the UI's own model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core import catalog, explain, spec_links
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.filter import compile_filter, load_views
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
from tests.ui.support import (
    HOSTILE_SERVER,
    SDK2_PYTHON,
    SDK2_SERVER,
    TIMEOUT,
    browser,
    copy_gallery,
    record_session,
    sdk_peers_missing,
    ui_server,
)

WAIT_MS = TIMEOUT * 1000


def wait_for(page: object, expression: str, timeout: float = TIMEOUT) -> None:
    """Poll ``expression`` in the page until it is true.

    (Playwright's ``wait_for_function`` evaluates its predicate with ``eval``
    inside the page, which the UI's Content-Security-Policy rightly forbids.)
    """
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):  # type: ignore[attr-defined]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.05)


def messages_of(path: Path) -> list[MessageRecord]:
    with TraceReader(path) as reader:
        return [r for r in reader.records() if isinstance(r, MessageRecord)]


def findings_of(path: Path) -> list[FindingRecord]:
    with TraceReader(path) as reader:
        return [r for r in reader.records() if isinstance(r, FindingRecord)]


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with browser() as b:
        yield b


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gallery")
    copy_gallery(folder, "out-of-order-batch.jsonl", "stdout-pollution.jsonl")
    return folder


@pytest.fixture(scope="module")
def gallery_url(gallery: Path) -> Iterator[str]:
    with ui_server(gallery) as url:
        yield url


@pytest.fixture
def page(chromium: object) -> Iterator[object]:
    context = chromium.new_context(viewport={"width": 1500, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    yield page
    context.close()


def open_session(page: object, file_name: str) -> None:
    page.locator(".session", has_text=file_name).click()  # type: ignore[attr-defined]
    page.wait_for_selector(".row", timeout=WAIT_MS)  # type: ignore[attr-defined]


def test_session_list_names_each_session(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    sessions = page.locator(".session")
    assert sessions.count() == 2
    text = page.locator("#session-list").inner_text()
    assert "out-of-order-batch.jsonl" in text and "stdout-pollution.jsonl" in text
    batch = page.locator(".session", has_text="out-of-order-batch.jsonl").inner_text()
    assert "stdio" in batch and "2025-03-26" in batch  # transport and negotiated version
    polluted = page.locator(".session", has_text="stdout-pollution.jsonl").inner_text()
    assert "2 error" in polluted
    assert page.errors == []


def test_diagram_has_one_arrow_per_message_and_batches_expand(
    page: object, gallery: Path, gallery_url: str
) -> None:
    trace = gallery / "out-of-order-batch.jsonl"
    records = messages_of(trace)
    top_level = [m for m in records if m.index is None]
    elements = [m for m in records if m.index is not None]
    assert elements, "the gallery trace has batches"
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    open_session(page, "out-of-order-batch.jsonl")
    assert page.locator("svg g.arrow").count() == len(top_level)
    assert page.locator("svg g.arrow.batch").count() == len({m.frame for m in elements})
    page.locator("[data-toggle]").first.click()
    first_batch = min(m.frame for m in elements)
    shown = len([m for m in elements if m.frame == first_batch])
    assert page.locator("svg g.arrow").count() == len(top_level) + shown
    assert page.locator("svg g.arrow.element").count() == shown
    # a response carries its latency on the arrow
    latencies = [m.latency_ms for m in top_level if m.latency_ms is not None]
    assert page.locator("svg g.arrow.response text.lat").count() == len(latencies)


def test_clicking_a_message_shows_body_raw_and_pair(
    page: object, gallery: Path, gallery_url: str
) -> None:
    trace = gallery / "out-of-order-batch.jsonl"
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    open_session(page, "out-of-order-batch.jsonl")
    page.locator(".row", has_text="initialize").first.click()
    page.wait_for_selector("#raw", timeout=WAIT_MS)
    with TraceReader(trace) as reader:
        frames = [r for r in reader.records() if getattr(r, "raw", None) is not None]
    initialize = next(f for f in frames if b'"initialize"' in f.raw and f.direction == "c2s")
    assert page.locator("#raw").inner_text() == initialize.raw.decode()
    body = page.locator("#body").inner_text()
    assert '"method": "initialize"' in body and '"protocolVersion": "2025-03-26"' in body
    # collapsible nodes: closing the top node hides its members
    page.locator("#body summary").first.click()
    assert not page.locator("#body", has_text='"jsonrpc"').locator("text=jsonrpc").is_visible()
    pair = page.locator("#detail button.link", has_text="answered by")
    assert pair.count() == 1
    pair.click()
    wait_for(page, "document.querySelector('#detail .title').textContent.startsWith('result')")
    assert page.locator(".row.selected").get_attribute("data-kind") == "response"


def test_findings_show_rule_description_and_spec(
    page: object, gallery: Path, gallery_url: str
) -> None:
    trace = gallery / "stdout-pollution.jsonl"
    findings = findings_of(trace)
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    open_session(page, "stdout-pollution.jsonl")
    marked = page.locator("svg .mark.sev-error")
    assert marked.count() == len({tuple(f.seq) for f in findings if f.severity == "error"})
    page.locator(".row", has_text="JR-PARSE").click()
    page.wait_for_selector("#detail .finding", timeout=WAIT_MS)
    detail = page.locator("#detail").inner_text()
    assert explain.description("JR-PARSE") in detail
    assert spec_links.plain_source(catalog.get("JR-PARSE")) in detail
    # The spec line links the rule's page (JSON-RPC's section for JR-PARSE).
    link = page.locator("#detail .finding[data-rule=JR-PARSE] .src a")
    assert link.get_attribute("href") == "https://www.jsonrpc.org/specification#response_object"
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert "Loading model..." in page.locator("#raw").inner_text()
    page.locator("[data-tab=findings]").click()
    groups = page.locator("#tab-findings section.group")
    assert groups.count() == len({f.rule for f in findings})
    group = page.locator("#tab-findings section.group[data-rule=STDIO-STDOUT-CLEAN]")
    assert explain.description("STDIO-STDOUT-CLEAN") in group.inner_text()
    # The session speaks 2025-11-25: its page in that version, not a placeholder.
    assert group.locator(".src a").get_attribute("href") == (
        "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio"
    )
    group.locator("button.link").first.click()
    page.wait_for_selector("#tab-timeline:not([hidden]) .row.selected", timeout=WAIT_MS)
    assert page.locator(".row.selected").get_attribute("data-kind") == "unparseable"


def test_stats_tab_gives_the_stats_figures(page: object, gallery: Path, gallery_url: str) -> None:
    from mcpsniff.stats.compute import compute

    trace = gallery / "out-of-order-batch.jsonl"
    stats = compute(load_views(trace)).to_json()
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    open_session(page, "out-of-order-batch.jsonl")
    page.locator("[data-tab=stats]").click()
    page.wait_for_selector("table.stats[data-kind=method]", timeout=WAIT_MS)
    rows = page.locator("table.stats[data-kind=method] tr")
    assert rows.count() == 1 + len(stats["methods"])
    table = page.locator("table.stats[data-kind=method]").inner_text()
    for method, figures in stats["methods"].items():
        line = next(x for x in table.splitlines() if x.startswith(method + "\t"))
        cells = line.split("\t")
        assert cells[2] == str(figures["responses"]), method
        assert cells[3] == str(figures["errors"]), method


def test_filter_narrows_the_list_with_the_command_line_language(
    page: object, gallery: Path, gallery_url: str
) -> None:
    trace = gallery / "out-of-order-batch.jsonl"
    expression = "method == tools/call"
    flt = compile_filter(expression)
    wanted = [v for v in load_views(trace) if flt.matches(v)]
    assert 0 < len(wanted) < len(messages_of(trace))
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    open_session(page, "out-of-order-batch.jsonl")
    before = page.locator(".row").count()
    page.fill("#filter", expression)
    page.press("#filter", "Enter")
    wait_for(page, f"document.querySelectorAll('.row').length === {len(wanted)}")
    assert page.locator(".row").count() < before
    texts = page.locator(".row .what").all_inner_texts()
    assert all("tools/call" in t for t in texts)
    # a bad expression says what is wrong, where, and keeps the list
    page.fill("#filter", "latency > fast")
    page.press("#filter", "Enter")
    page.wait_for_selector("#filter-status.bad", timeout=WAIT_MS)
    assert "duration" in page.locator("#filter-status").inner_text()
    page.fill("#filter", "")
    page.press("#filter", "Enter")
    wait_for(page, f"document.querySelectorAll('.row').length === {before}")


def test_a_session_recorded_while_the_page_is_open_appears_without_reload(
    page: object, tmp_path: Path
) -> None:
    reason = sdk_peers_missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path / "traces"
    folder.mkdir()
    copy_gallery(folder, "clean-2025-11-25.jsonl")
    with ui_server(folder) as url:
        page.goto(url)
        page.wait_for_selector(".session", timeout=WAIT_MS)
        assert page.locator(".session").count() == 1
        page.evaluate("window.__sameDocument = true")
        trace = folder / "live.jsonl"
        done = record_session(trace, [str(SDK2_PYTHON), str(SDK2_SERVER)])
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        wait_for(page, "document.querySelectorAll('.session').length === 2")
        assert page.evaluate("window.__sameDocument") is True  # no reload happened
        messages = messages_of(trace)
        entry = page.locator(".session", has_text="live.jsonl")
        assert "mcpsniff-e2e-sdk2" in entry.inner_text()  # serverInfo.name
        assert f"{len(messages)} messages" in entry.inner_text()
        entry.click()
        page.wait_for_selector(".row", timeout=WAIT_MS)
        arrows = len([m for m in messages if m.index is None])
        wait_for(page, f"document.querySelectorAll('svg g.arrow').length >= {min(arrows, 25)}")
        assert page.evaluate(
            "window.mcpsniffState.rows.filter(r => r.kind !== 'event').length"
        ) == len(messages)


def test_a_session_growing_while_open_grows_in_the_page(page: object, tmp_path: Path) -> None:
    """Rows appended to an open session's trace are pushed in, with no reload."""
    source = Path(__file__).resolve().parents[2] / "recordings" / "out-of-order-batch.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    folder = tmp_path / "grow"
    folder.mkdir()
    trace = folder / "growing.jsonl"
    # Cut before a frame: a writer writes a frame with its messages and findings at once.
    half = next(
        i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith(b'{"type":"frame"')
    )
    trace.write_bytes(b"".join(lines[:half]))
    with ui_server(folder) as url:
        page.goto(url)
        page.wait_for_selector(".row", timeout=WAIT_MS)  # the only session opens by itself
        before = page.locator("svg g.arrow").count()
        page.evaluate("window.__sameDocument = true")
        with open(trace, "ab") as handle:
            handle.write(b"".join(lines[half:]))
        total = len([m for m in messages_of(source) if m.index is None])
        wait_for(page, f"document.querySelectorAll('svg g.arrow').length === {total}")
        assert before < total
        assert page.evaluate("window.__sameDocument") is True


def test_markup_from_a_hostile_server_never_runs(page: object, tmp_path: Path) -> None:
    reason = sdk_peers_missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path / "hostile"
    folder.mkdir()
    trace = folder / "hostile.jsonl"
    done = record_session(trace, [str(SDK2_PYTHON), str(HOSTILE_SERVER)])
    assert trace.exists(), done.stderr.decode(errors="replace")[-2000:]
    raw = trace.read_text()
    assert "<script>" in raw and "onerror" in raw
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    with ui_server(folder) as url:
        page.goto(url)
        page.wait_for_selector(".row", timeout=WAIT_MS)
        # the server's name, shown as text
        assert "<img src=x" in page.locator("#session-list").inner_text()
        count = page.locator(".row").count()
        for i in range(count):
            page.locator(".row").nth(i).click()
            page.wait_for_timeout(30)
        page.locator(".row", has_text="tools/list").last.click()
        page.wait_for_selector("#body", timeout=WAIT_MS)
        page.evaluate("document.querySelectorAll('#body details').forEach(d => { d.open = true; })")
        assert "<script>window.__pwned" in page.locator("#body").inner_text()
        assert "<img src=x onerror" in page.locator("#raw").inner_text()
        for tab in ("findings", "stats", "timeline"):
            page.locator(f"[data-tab={tab}]").click()
            page.wait_for_timeout(200)
        time.sleep(0.5)
        assert page.evaluate("window.__pwned") is None
        assert (
            page.locator("#detail script, #detail img, #session-list img, .rows img").count() == 0
        )
        assert dialogs == []
        assert page.errors == []


def test_a_long_session_renders_only_the_visible_window(page: object, tmp_path: Path) -> None:
    from tests.ui.support import write_long_trace

    folder = tmp_path / "long"
    folder.mkdir()
    calls = 10_000
    write_long_trace(folder / "long.jsonl", calls)
    with ui_server(folder) as url:
        page.goto(url)
        page.wait_for_selector(".row", timeout=WAIT_MS)
        wait_for(page, f"window.mcpsniffState.visible.length === {2 * calls}")
        # the list is virtual: a screenful of rows (plus overscan) in the DOM, not 20,000
        assert page.locator(".row").count() < 150
        page.evaluate("document.getElementById('rows').scrollTop = 1e9")
        wait_for(page, f"!!document.querySelector('.row[data-n=\"{2 * calls - 1}\"]')")
        assert page.locator(".row").count() < 150
        last = page.locator(f'.row[data-n="{2 * calls - 1}"]')
        assert f"#{2 * calls}" in last.inner_text()
        last.click()
        page.wait_for_selector("#raw", timeout=WAIT_MS)
        assert (
            page.locator("#raw").inner_text()
            == f'{{"jsonrpc": "2.0", "id": {calls - 1}, "result": {{}}}}\n'
        )
        # keyboard: up selects the request this response answers
        page.locator("#rows").press("ArrowUp")
        wait_for(page, f"window.mcpsniffState.selected === {2 * calls - 2}")
        page.fill("#filter", f"id == {calls - 1}")
        page.press("#filter", "Enter")
        wait_for(page, "document.querySelectorAll('.row').length === 2")


def test_the_selected_request_is_joined_to_its_response(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)
    page.wait_for_selector(".session", timeout=WAIT_MS)
    open_session(page, "out-of-order-batch.jsonl")
    request = page.locator(".row[data-kind=request]", has_text="initialize")
    request.click()
    line = page.locator("#pair-line")
    assert line.is_visible()
    top = page.evaluate("parseFloat(document.getElementById('pair-line').style.top)")
    height = page.evaluate("parseFloat(document.getElementById('pair-line').style.height)")
    rows = page.evaluate(
        "[...document.querySelectorAll('.row')].map(r => [r.dataset.kind, parseFloat(r.style.top)])"
    )
    tops = {kind: t for kind, t in reversed(rows)}  # the first row of each kind
    assert top == tops["request"] + 14 and height == tops["response"] - tops["request"]
    page.locator(".row[data-kind=notification]").first.click()
    assert not line.is_visible()  # a notification has no pair


def test_with_no_paths_the_ui_shows_what_relays_record_by_default(
    page: object, tmp_path: Path
) -> None:
    """``mcpsniff ui`` and ``mcpsniff stdio`` with no paths meet in the state folder."""
    reason = sdk_peers_missing()
    if reason:
        pytest.skip(reason)
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    with ui_server(env=env) as url:  # the state folder does not even exist yet
        page.goto(url)
        page.wait_for_selector("#session-list li.empty", timeout=WAIT_MS)
        assert page.locator(".session").count() == 0
        assert "No sessions yet" in page.locator("#session-list").inner_text()
        done = record_session(None, [str(SDK2_PYTHON), str(SDK2_SERVER)], env=env)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        (trace,) = (tmp_path / "state" / "mcpsniff" / "traces").glob("*.jsonl")
        wait_for(page, "document.querySelectorAll('.session').length === 1")
        assert trace.name in page.locator("#session-list").inner_text()
        page.wait_for_selector(".row", timeout=WAIT_MS)  # the only session opens by itself
        assert "mcpsniff-e2e-sdk2" in page.locator("#session-list").inner_text()


def test_error_layer_in_the_detail_and_trace_id_in_the_filter(page: object, tmp_path: Path) -> None:
    from mcpsniff.trace.writer import TraceWriter
    from tests.conftest import Conversation, error, request, result

    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    c = Conversation()
    c.handshake()
    meta = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
    c.client(request(1, "tools/call", {"name": "traced", "arguments": {}, "_meta": meta}))
    c.server(result(1, {"content": []}))
    c.client(request(2, "resources/read", {"uri": "file:///nope"}))
    c.server(error(2, -32602, "no such resource"))
    c.close()
    folder = tmp_path / "layers"
    folder.mkdir()
    writer = TraceWriter.create(folder / "layers.jsonl", meta={"label": "layers"})
    writer.write_all(c.records)
    writer.close()
    with ui_server(folder) as url:
        page.goto(url)
        page.wait_for_selector(".row", timeout=WAIT_MS)
        page.locator(".row[data-kind=error]").click()
        page.wait_for_selector("#detail .error-layer", timeout=WAIT_MS)
        layer = page.locator("#detail .error-layer")
        assert layer.inner_text() == "Error layer: Invalid params [JSON-RPC protocol]"
        assert layer.get_attribute("title") == "JSON-RPC protocol error (-32768..-32600)"
        page.fill("#filter", f"trace.id == {trace_id}")
        page.press("#filter", "Enter")
        wait_for(page, "document.querySelectorAll('.row').length === 2")
        texts = page.locator(".row .what").all_inner_texts()
        assert all("tools/call" in t for t in texts)
        assert page.errors == []


# ------------------------------------------------------------ bidi controls from traffic

# Bidi controls from traffic in the web UI and the HTML report (real Chromium).
#
# Every string reached the page as text, never markup, but a peer's U+202E
# (RIGHT-TO-LEFT OVERRIDE) still reordered what was shown: a tool called
# ``evil\u202egnp.exe`` read ``evilexe.png`` in the session list, the message
# list, the sequence diagram and the detail, as Trojan Source (CVE-2021-42574)
# reads in an editor. ``mcpsniff show`` shows it as the escape ``\u202e``; the
# page now does the same.


TOOL = "evil\u202egnp.exe"

SERVER = "srv\u2066x\u2069"

RAW = ("\u202e", "\u2066", "\u2069")


def _bidi_trace(path: Path) -> Path:
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
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


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
    _bidi_trace(folder / "t.jsonl")
    with ui_server(folder) as url:
        _assert_escaped(_page_text(chromium, url))


def test_the_report_shows_bidi_controls_as_escapes(chromium: object, tmp_path: Path) -> None:
    trace = _bidi_trace(tmp_path / "t.jsonl")
    page = tmp_path / "t.html"
    result = CliRunner().invoke(main, ["report", str(trace), "-o", str(page)])
    assert result.exit_code == 0, result.output
    _assert_escaped(_page_text(chromium, page.as_uri()))
