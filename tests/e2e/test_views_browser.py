"""The traffic browser's views in a real headless Chromium: waterfall, layout, actions.

Expected values come from the trace files (the trace reader, the filter
package), never from the page's own model. Every view is looked at at
1,280 x 800 and 1,920 x 1,080, in both themes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsniff.core.model import FrameRecord, MessageRecord
from mcpsniff.filter import compile_filter, load_views
from mcpsniff.trace.codec import encode_line
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
from tests.ui.support import TIMEOUT, browser, copy_gallery, ui_get, ui_server

WAIT_MS = TIMEOUT * 1000
SIZES = [(1280, 800), (1920, 1080)]
THEMES = ["light", "dark"]


def wait_for(page: object, expression: str, timeout: float = TIMEOUT) -> None:
    """Poll ``expression`` in the page until it is true (the page's CSP forbids eval)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):  # type: ignore[attr-defined]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    with browser() as b:
        yield b


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("views")
    copy_gallery(folder, "clean-2025-11-25.jsonl", "unanswered-request.jsonl")
    return folder


@pytest.fixture(scope="module")
def gallery_url(gallery: Path) -> Iterator[str]:
    with ui_server(gallery) as url:
        yield url


def new_page(
    chromium: object, width: int = 1280, height: int = 800, theme: str = "light"
) -> object:
    context = chromium.new_context(  # type: ignore[attr-defined]
        viewport={"width": width, "height": height}, color_scheme=theme
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    return page


@pytest.fixture
def page(chromium: object) -> Iterator[object]:
    p = new_page(chromium)
    yield p
    assert p.errors == []  # type: ignore[attr-defined]
    p.context.close()  # type: ignore[attr-defined]


def open_session(page: object, file_name: str) -> None:
    page.locator(".session", has_text=file_name).click()  # type: ignore[attr-defined]
    page.wait_for_selector(".row", timeout=WAIT_MS)  # type: ignore[attr-defined]
    wait_for(page, "window.mcpsniffState.loadingRows === false")


def frame_raw(path: Path, seq: int) -> bytes:
    with TraceReader(path) as reader:
        return next(r.raw for r in reader.records() if isinstance(r, FrameRecord) and r.seq == seq)


def matching_seqs(path: Path, expression: str) -> list[int]:
    flt = compile_filter(expression)
    return [v.seq for v in load_views(path) if flt.matches(v)]


# ---------------------------------------------------------------------------- sessions


def test_each_session_says_who_and_how_it_ended(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    page.wait_for_selector(".session", timeout=WAIT_MS)  # type: ignore[attr-defined]
    item = page.locator(".session", has_text="unanswered-request.jsonl")  # type: ignore[attr-defined]
    text = item.inner_text()
    assert "client gallery-client 1.0" in text
    assert "600 ms" in text  # the duration
    assert item.locator(".ending").inner_text() == "ended"
    item.click()
    page.wait_for_selector(".row", timeout=WAIT_MS)  # type: ignore[attr-defined]
    title = page.locator("#session-title").inner_text()  # type: ignore[attr-defined]
    assert title.startswith("gallery-server 1.0 · client gallery-client 1.0 · 600 ms · 8 messages")
    assert title.endswith("1 error · ended")


# ---------------------------------------------------------------------------- waterfall


def test_a_request_never_answered_is_marked_at_the_sessions_end(
    page: object, gallery: Path, gallery_url: str
) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "unanswered-request.jsonl")
    # The trace itself says which request has no answer.
    with TraceReader(gallery / "unanswered-request.jsonl") as reader:
        messages = [r for r in reader.records() if isinstance(r, MessageRecord)]
    answered = {m.answers for m in messages if m.answers is not None}
    open_requests = [m for m in messages if m.kind == "request" and m.frame not in answered]
    assert len(open_requests) == 1
    seq = open_requests[0].frame
    row = page.locator(".row", has=page.locator(f'.seq:text-is("#{seq}")'))  # type: ignore[attr-defined]
    assert row.locator(".wf").get_attribute("data-status") == "unanswered"
    assert "never answered" in row.inner_text()
    # Its bar runs to the session's end: the right edge of the waterfall column.
    edge = row.evaluate(
        "r => { const b = r.querySelector('.wf-bar').getBoundingClientRect();"
        " const c = r.querySelector('.wf').getBoundingClientRect(); return c.right - b.right; }"
    )
    assert abs(edge) <= 1.5
    assert page.evaluate("document.getElementById('overview').dataset.unanswered") == "1"  # type: ignore[attr-defined]
    answered_rows = page.locator('.wf[data-status="answered"]').count()  # type: ignore[attr-defined]
    assert answered_rows == sum(1 for m in messages if m.kind == "request") - 1


def write_live(path: Path, start: float) -> None:
    """A session still recorded: a request sent at ``start`` and not answered yet."""
    writer = TraceWriter.create(path, meta={"label": "live-one"}, created=start)
    request = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}\n'
    writer.write(FrameRecord(1, start, "s", "c2s", "stdio", request))
    writer.write(MessageRecord(1, "s", "c2s", "request", id=7, has_id=True, method="tools/call"))
    writer.close()


def test_a_pending_request_grows_on_a_live_session_until_answered(
    page: object, tmp_path: Path
) -> None:
    folder = tmp_path / "live"
    folder.mkdir()
    trace = folder / "live.jsonl"
    start = time.time() - 2.0
    write_live(trace, start)
    with ui_server(folder) as url:
        page.goto(url)  # type: ignore[attr-defined]
        page.wait_for_selector('.wf[data-status="pending"]', timeout=WAIT_MS)  # type: ignore[attr-defined]
        assert "pending" in page.locator(".row").first.inner_text()  # type: ignore[attr-defined]
        label = page.locator("#overview").get_attribute("aria-label")  # type: ignore[attr-defined]
        assert "1 pending" in label
        # The scale runs to now: the pending bar fills its column and the total grows.
        first = page.evaluate("window.mcpsniffState.scale.end - window.mcpsniffState.scale.start")  # type: ignore[attr-defined]
        time.sleep(2.5)
        wait_for(
            page,
            f"window.mcpsniffState.scale.end - window.mcpsniffState.scale.start > {first + 1.5}",
        )
        # The answer arrives: the bar ends there and is no longer pending.
        answer = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n'
        t = time.time()
        with open(trace, "ab") as handle:
            frame = FrameRecord(2, t, "s", "s2c", "stdio", answer)
            message = MessageRecord(
                2,
                "s",
                "s2c",
                "response",
                id=7,
                has_id=True,
                answers=1,
                latency_ms=(t - start) * 1000,
            )
            handle.write(encode_line(frame) + encode_line(message))
        page.wait_for_selector('.wf[data-status="answered"]', timeout=WAIT_MS)  # type: ignore[attr-defined]
        assert page.locator('.wf[data-status="pending"]').count() == 0  # type: ignore[attr-defined]


def test_dragging_across_the_waterfall_narrows_the_list_to_that_time(
    page: object, gallery: Path, gallery_url: str
) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    every = page.evaluate("window.mcpsniffState.visible.length")  # type: ignore[attr-defined]
    box = page.locator("#overview").bounding_box()  # type: ignore[attr-defined]
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 1, y)  # type: ignore[attr-defined]
    page.mouse.down()  # type: ignore[attr-defined]
    page.mouse.move(box["x"] + box["width"] * 0.3, y, steps=5)  # type: ignore[attr-defined]
    page.mouse.up()  # type: ignore[attr-defined]
    narrowed = page.evaluate("window.mcpsniffState.visible.length")  # type: ignore[attr-defined]
    assert 0 < narrowed < every
    # Every row left starts (or, for a request, runs) inside the range.
    inside = page.evaluate(
        "(() => { const s = window.mcpsniffState; const [a, b] = s.range;"
        " return s.visible.every(n => { const r = s.rows[n];"
        " return r.t <= b && (r.t >= a || r.kind === 'request'); }); })()"
    )
    assert inside
    assert page.locator("#range-label").inner_text().startswith("time range 0")  # type: ignore[attr-defined]
    page.click("#range-clear")  # type: ignore[attr-defined]
    assert page.evaluate("window.mcpsniffState.visible.length") == every  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- layout


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_nothing_is_clipped_and_panes_make_room(
    chromium: object, gallery_url: str, width: int, height: int, theme: str
) -> None:
    page = new_page(chromium, width, height, theme)
    try:
        page.goto(gallery_url)  # type: ignore[attr-defined]
        open_session(page, "clean-2025-11-25.jsonl")
        # Nothing selected: no empty detail pane keeps its room.
        assert not page.locator("#detail").is_visible()  # type: ignore[attr-defined]
        page.locator(".row").nth(1).click()  # type: ignore[attr-defined]
        page.wait_for_selector("#raw", timeout=WAIT_MS)  # type: ignore[attr-defined]
        assert page.locator("#detail").is_visible()  # type: ignore[attr-defined]
        # The message text of each row is not cut to nothing beside the diagram.
        shown = page.evaluate(
            "Math.min(...[...document.querySelectorAll('.row .text')].map(t => t.clientWidth))"
        )
        assert shown >= 180
        # Stats: the full width; every column (p99 and max too) inside the window.
        page.click("#tab-button-stats")  # type: ignore[attr-defined]
        page.wait_for_selector("table.stats", timeout=WAIT_MS)  # type: ignore[attr-defined]
        assert not page.locator("#detail").is_visible()  # type: ignore[attr-defined]
        for table in page.locator("table.stats").all():  # type: ignore[attr-defined]
            right = table.evaluate("t => t.getBoundingClientRect().right")
            assert right <= width
        heads = page.locator("table.stats").first.locator("th[scope=col]").all_inner_texts()  # type: ignore[attr-defined]
        assert heads[-2:] == ["p99", "max"]
        page.click("#tab-button-findings")  # type: ignore[attr-defined]
        assert not page.locator("#detail").is_visible()  # type: ignore[attr-defined]
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # type: ignore[attr-defined]
        assert page.errors == []  # type: ignore[attr-defined]
    finally:
        page.context.close()  # type: ignore[attr-defined]


def test_panes_resize_by_pointer_and_keyboard(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    before = page.locator(".sessions").bounding_box()["width"]  # type: ignore[attr-defined]
    handle = page.locator("#resize-sessions")  # type: ignore[attr-defined]
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    after = page.locator(".sessions").bounding_box()["width"]  # type: ignore[attr-defined]
    assert after == pytest.approx(before + 40, abs=2)
    box = handle.bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 100)  # type: ignore[attr-defined]
    page.mouse.down()  # type: ignore[attr-defined]
    page.mouse.move(box["x"] - 60, box["y"] + 100, steps=4)  # type: ignore[attr-defined]
    page.mouse.up()  # type: ignore[attr-defined]
    dragged = page.locator(".sessions").bounding_box()["width"]  # type: ignore[attr-defined]
    assert dragged == pytest.approx(after - 62, abs=3)


def test_stats_tables_sort_by_any_column(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    page.click("#tab-button-stats")  # type: ignore[attr-defined]
    table = page.locator('table.stats[data-kind="method"]')  # type: ignore[attr-defined]
    table.wait_for(timeout=WAIT_MS)
    names = lambda: table.locator("tbody th").all_inner_texts()  # noqa: E731
    table.get_by_role("button", name="sort by method").click()
    assert names() == sorted(names())
    assert table.locator("th[aria-sort=ascending]").count() == 1
    table.get_by_role("button", name="sort by requests").click()
    counts = [int(x) for x in table.locator("tbody tr td:nth-of-type(1)").all_inner_texts()]
    assert counts == sorted(counts, reverse=True)
    table.get_by_role("button", name="sort by requests").click()
    counts = [int(x) for x in table.locator("tbody tr td:nth-of-type(1)").all_inner_texts()]
    assert counts == sorted(counts)


def test_keyboard_moves_opens_jumps_and_filters(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    page.focus("#rows")  # type: ignore[attr-defined]
    page.keyboard.press("ArrowDown")  # type: ignore[attr-defined]
    wait_for(page, "window.mcpsniffState.selected !== null")
    first = page.evaluate("window.mcpsniffState.visible[0]")  # type: ignore[attr-defined]
    assert page.evaluate("window.mcpsniffState.selected") == first  # type: ignore[attr-defined]
    # Down to the first request that has an answer, then p jumps to the answer.
    for _ in range(30):
        if page.evaluate(
            "(() => { const s = window.mcpsniffState; const r = s.rows[s.selected];"
            " return r.kind === 'request' && r.pair !== undefined; })()"
        ):
            break
        page.keyboard.press("ArrowDown")  # type: ignore[attr-defined]
    pair = page.evaluate("window.mcpsniffState.rows[window.mcpsniffState.selected].pair")  # type: ignore[attr-defined]
    page.keyboard.press("p")  # type: ignore[attr-defined]
    wait_for(page, f"window.mcpsniffState.selected === {pair}")
    page.keyboard.press("Escape")  # type: ignore[attr-defined]
    wait_for(page, "window.mcpsniffState.selected === null")
    assert not page.locator("#detail").is_visible()  # type: ignore[attr-defined]
    page.keyboard.press("/")  # type: ignore[attr-defined]
    assert page.evaluate("document.activeElement.id") == "filter"  # type: ignore[attr-defined]
    page.keyboard.type("method == ping")  # type: ignore[attr-defined]
    page.keyboard.press("Enter")  # type: ignore[attr-defined]
    wait_for(page, "window.mcpsniffState.filtered !== null")
    page.keyboard.press("Escape")  # type: ignore[attr-defined]  (closes the completion list)
    page.keyboard.press("Escape")  # type: ignore[attr-defined]
    wait_for(page, "window.mcpsniffState.filtered === null")
    assert page.input_value("#filter") == ""  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- actions


def test_copy_as_json_gives_the_bytes_received_and_copy_filter_the_exchange(
    page: object, gallery: Path, gallery_url: str
) -> None:
    trace = gallery / "clean-2025-11-25.jsonl"
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    row = page.locator(".row", has_text="tools/call").first  # type: ignore[attr-defined]
    seq = int(row.locator(".seq").inner_text().lstrip("#"))
    row.click()
    page.wait_for_selector("#actions [data-action=json]", timeout=WAIT_MS)  # type: ignore[attr-defined]
    page.click("#actions [data-action=json]")  # type: ignore[attr-defined]
    wait_for(page, "document.getElementById('actions').dataset.copied === 'json'")
    copied = page.evaluate("navigator.clipboard.readText()")  # type: ignore[attr-defined]
    assert copied.encode("utf-8") == frame_raw(trace, seq)
    page.click("#actions [data-action=filter]")  # type: ignore[attr-defined]
    wait_for(page, "document.getElementById('actions').dataset.copied === 'filter'")
    expression = page.evaluate("navigator.clipboard.readText()")  # type: ignore[attr-defined]
    # The command line selects exactly the request and its answer with it.
    selected = matching_seqs(trace, expression)
    assert seq in selected and len(selected) == 2
    # A stdio message has no HTTP request to copy as cURL.
    assert page.locator("#actions [data-action=curl]").count() == 0  # type: ignore[attr-defined]
    page.click("#actions [data-action=apply-filter]")  # type: ignore[attr-defined]
    wait_for(page, "window.mcpsniffState.visible.length === 2")


def test_downloads_of_a_session(page: object, gallery: Path, gallery_url: str) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    href = page.locator("#download-jsonl").get_attribute("href")  # type: ignore[attr-defined]
    base = gallery_url.rstrip("/")
    # Outside the browser, with the run's token as a script sends it (ui/guard.py).
    status, headers, sliced = ui_get(base + href)
    assert status == 200
    disposition = headers["Content-Disposition"]
    assert disposition.startswith("attachment; filename=")
    assert sliced == (gallery / "clean-2025-11-25.jsonl").read_bytes()
    with page.expect_download() as download:  # type: ignore[attr-defined]
        page.click("#download-html")  # type: ignore[attr-defined]
    report = Path(download.value.path()).read_text("utf-8")
    assert "<title>mcpsniff report</title>" in report
    har = page.locator("#download-har").get_attribute("href")  # type: ignore[attr-defined]
    status, _, body = ui_get(base + har)
    assert status == 409
    assert "this session is stdio" in body.decode()


def test_filter_box_completes_fields_and_seen_values(page: object, gallery_url: str) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    page.click("#filter")  # type: ignore[attr-defined]
    page.keyboard.type("meth")  # type: ignore[attr-defined]
    options = page.locator("#filter-suggestions [role=option]")  # type: ignore[attr-defined]
    options.first.wait_for(timeout=WAIT_MS)
    assert "method" in [t.split("=")[0].split(" ")[0].strip() for t in options.all_inner_texts()]
    page.fill("#filter", "")  # type: ignore[attr-defined]
    page.keyboard.type("method == tools/")  # type: ignore[attr-defined]
    options.first.wait_for(timeout=WAIT_MS)
    seen = options.all_inner_texts()
    assert "tools/call" in seen and "tools/list" in seen
    page.keyboard.press("ArrowDown")  # type: ignore[attr-defined]
    page.keyboard.press("Enter")  # type: ignore[attr-defined]
    assert page.input_value("#filter") == f"method == {seen[0]} "  # type: ignore[attr-defined]


def test_filter_errors_speak_the_page_and_leave_no_stale_rows(
    page: object, gallery_url: str
) -> None:
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    page.fill("#filter", "methd == ping")  # type: ignore[attr-defined]
    page.press("#filter", "Enter")  # type: ignore[attr-defined]
    wait_for(page, "document.getElementById('filter-status').classList.contains('bad')")
    status = page.locator("#filter-status").inner_text()  # type: ignore[attr-defined]
    assert status.startswith("unknown field 'methd'; type a letter in the box to see the fields")
    assert "mcpsniff show --help" not in status
    assert status.splitlines()[-1].strip() == "^"
    assert page.locator(".row").count() == 0  # type: ignore[attr-defined]
    assert page.get_attribute("#filter", "aria-invalid") == "true"  # type: ignore[attr-defined]


def test_latency_with_a_space_before_its_unit_selects_as_the_cli_does(
    page: object, gallery: Path, gallery_url: str
) -> None:
    trace = gallery / "clean-2025-11-25.jsonl"
    expected = matching_seqs(trace, "latency > 20 ms")
    assert expected and expected == matching_seqs(trace, "latency > 20ms")
    page.goto(gallery_url)  # type: ignore[attr-defined]
    open_session(page, "clean-2025-11-25.jsonl")
    page.fill("#filter", "latency > 20 ms")  # type: ignore[attr-defined]
    page.press("#filter", "Enter")  # type: ignore[attr-defined]
    wait_for(page, f"window.mcpsniffState.visible.length === {len(expected)}")
    shown = page.evaluate("window.mcpsniffState.visible.map(n => window.mcpsniffState.rows[n].seq)")  # type: ignore[attr-defined]
    assert shown == expected


def test_the_report_offers_the_same_views(chromium: object, gallery: Path, tmp_path: Path) -> None:
    """A report from file://: waterfall, sorting, copy and the space in 'latency > 20 ms'."""
    from click.testing import CliRunner

    from mcpsniff.cli import main

    out = tmp_path / "r.html"
    trace = gallery / "unanswered-request.jsonl"
    done = CliRunner().invoke(main, ["report", str(trace), "-o", str(out)])
    assert done.exit_code == 0, done.output
    page = new_page(chromium)
    try:
        page.goto(out.as_uri())  # type: ignore[attr-defined]
        page.wait_for_selector(".row", timeout=WAIT_MS)  # type: ignore[attr-defined]
        assert page.locator('.wf[data-status="unanswered"]').count() == 1  # type: ignore[attr-defined]
        assert page.locator("#downloads").is_hidden()  # type: ignore[attr-defined]
        expected = matching_seqs(trace, "latency > 5 ms")
        page.fill("#filter", "latency > 5 ms")  # type: ignore[attr-defined]
        page.press("#filter", "Enter")  # type: ignore[attr-defined]
        wait_for(page, f"window.mcpsniffState.visible.length === {len(expected)}")
        assert page.errors == []  # type: ignore[attr-defined]
    finally:
        page.context.close()  # type: ignore[attr-defined]


def test_hostile_strings_stay_inert_in_the_new_views(chromium: object, tmp_path: Path) -> None:
    """Markup in a label, a server name, a method and a tool stays text in every new view."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    evil = '<img src=x onerror="window.__pwned=1">'
    writer = TraceWriter.create(folder / "h.jsonl", meta={"name": evil + "\u202e"}, created=1.0e9)
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": evil, "version": evil}},
    }
    answer = {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"protocolVersion": "2025-11-25", "serverInfo": {"name": evil, "title": evil}},
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": evil, "params": {"name": evil}}
    for seq, (direction, body) in enumerate(
        [("c2s", init), ("s2c", answer), ("c2s", call)], start=1
    ):
        raw = json.dumps(body).encode() + b"\n"
        writer.write(FrameRecord(seq, 1.0e9 + seq, "s", direction, "stdio", raw))
        kind = "response" if direction == "s2c" else "request"
        method = "initialize" if seq < 3 else evil
        writer.write(
            MessageRecord(
                seq,
                "s",
                direction,
                kind,
                id=body["id"],
                has_id=True,
                method=method,
                answers=1 if seq == 2 else None,
            )
        )
    writer.close()
    page = new_page(chromium)
    try:
        with ui_server(folder) as url:
            page.goto(url)  # type: ignore[attr-defined]
            page.wait_for_selector(".row", timeout=WAIT_MS)  # type: ignore[attr-defined]
            page.locator(".row").last.click()  # type: ignore[attr-defined]
            page.wait_for_selector("#actions [data-action=filter]", timeout=WAIT_MS)  # type: ignore[attr-defined]
            page.click("#tab-button-stats")  # type: ignore[attr-defined]
            page.wait_for_selector("table.stats", timeout=WAIT_MS)  # type: ignore[attr-defined]
            page.click("#tab-button-timeline")  # type: ignore[attr-defined]
            page.click("#filter")  # type: ignore[attr-defined]
            page.keyboard.type("method == <")  # type: ignore[attr-defined]
            page.wait_for_selector("#filter-suggestions [role=option]", timeout=WAIT_MS)  # type: ignore[attr-defined]
            assert page.evaluate("window.__pwned === undefined")  # type: ignore[attr-defined]
            assert page.locator("img").count() == 0  # type: ignore[attr-defined]
            assert evil in page.locator("#session-list").inner_text()  # type: ignore[attr-defined]
            assert "\\u202e" in page.locator("#session-list").inner_text()  # type: ignore[attr-defined]
            assert evil in page.locator("#filter-suggestions").inner_text()  # type: ignore[attr-defined]
            assert page.errors == []  # type: ignore[attr-defined]
    finally:
        page.context.close()  # type: ignore[attr-defined]
