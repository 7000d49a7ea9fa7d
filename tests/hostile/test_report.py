"""``mcpsniff report`` against what a hostile peer can put into a recording.

Each case runs the real command on a real file, with bounds on time and peak
memory: a huge batch (each element re-read, re-parsed and embedded with up to
64 KiB of the frame's raw text made it quadratic), ``1e999`` in results and
ids, and more sessions than any page can list.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.gen_hostile import batch_trace
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord
from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.report import REPORT_SESSIONS
from tests.ui.support import REPO, browser, many_sessions_trace

#: The peak memory is read from /proc (VmHWM).
pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="needs /proc to read peak memory"
)
#: Peak memory (RSS) the command may reach on these inputs.
MEMORY_LIMIT_MB = 400
_PEAK = re.compile(r"peak-rss-kb (\d+)")
#: Runs ``mcpsniff`` in-process and prints its peak RSS last, on stderr.
_MEASURED = (
    "import runpy, sys\n"
    "sys.argv = ['mcpsniff', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('mcpsniff', run_name='__main__')\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "else:\n"
    "    code = 0\n"
    # VmHWM, not ru_maxrss: Linux carries the forking parent's (pytest's) peak into
    # the child's ru_maxrss, and the peak of this process alone is the one bounded.
    "status = open('/proc/self/status').read()\n"
    "print('peak-rss-kb', status.split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _report(
    *args: str | Path, timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``mcpsniff report ARGS``; the result and its peak RSS in MB."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "report", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    peak = _PEAK.search(done.stderr)
    assert peak, done.stderr
    return done, int(peak.group(1)) // 1024


def _page_data(page: Path) -> dict[str, object]:
    text = page.read_text("utf-8")
    start = text.index('id="mcpsniff-data">') + len('id="mcpsniff-data">')
    return json.loads(text[start : text.index("</script>", start)])


def test_a_huge_batch_costs_time_and_memory_linear_in_the_trace(tmp_path: Path) -> None:
    # Before: 1,000 elements 20 s and 0.4 GB, 4,000 elements 153 s and 1.9 GB.
    trace = batch_trace(tmp_path / "batch.jsonl", 5000)
    page = tmp_path / "batch.html"
    started = time.monotonic()
    done, peak_mb = _report(trace, "-o", page)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "(1 sessions, 10006 rows)" in done.stderr
    assert elapsed < 60 and peak_mb < MEMORY_LIMIT_MB, (elapsed, peak_mb)
    # The page is about the trace's size, not elements x 64 KiB (it was 160 MB for 1,000).
    assert page.stat().st_size < 3 * trace.stat().st_size
    data = _page_data(page)
    (session,) = data["data"].values()  # type: ignore[attr-defined]
    details = session["details"]
    rows = session["rows"]
    batch = next(r for r in rows if r.get("batch") == 5000)
    first = details[str(batch["n"])]
    assert first["size"] > 64 << 10 and first["rawTruncated"] is True
    assert len(first["raw"]) == 64 << 10
    # Every element names the batch row for its raw text, and has its own body.
    for element in range(batch["n"] + 1, batch["n"] + 5001, 499):
        detail = details[str(element)]
        assert detail["rawOf"] == batch["n"] and "raw" not in detail
        assert detail["body"]["method"] == "tools/call"
    assert sum("raw" in d for d in details.values()) == 5  # one per frame


def _numbers_trace(tmp_path: Path) -> Path:
    lines = [
        ("c2s", b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}\n'),
        ("s2c", b'{"jsonrpc":"2.0","id":1e999,"result":{"x":1e999,"y":-1e999,"big":1e400}}\n'),
        ("c2s", b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"n":1e999}}\n'),
    ]
    records = [
        FrameRecord(n + 1, 1767225600.0 + n, "s1", d, "stdio", raw)
        for n, (d, raw) in enumerate(lines)
    ]
    path = tmp_path / "numbers.jsonl"
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


def test_1e999_in_results_and_ids_is_shown_not_a_traceback(tmp_path: Path) -> None:
    trace = _numbers_trace(tmp_path)
    page = tmp_path / "numbers.html"
    done, _ = _report(trace, "-o", page)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    data = _page_data(page)
    (session,) = data["data"].values()  # type: ignore[attr-defined]
    bodies = [d.get("body") for d in session["details"].values()]
    assert {"x": None, "y": None, "big": None} in [b.get("result") for b in bodies if b]
    # Python's json reads a bare Infinity back as inf, and writes it out again as
    # Infinity: none is in the page's data (the page's scripts may say -Infinity).
    assert "Infinity" not in json.dumps(data)


def test_sessions_are_capped_as_the_ui_caps_them(tmp_path: Path) -> None:
    count = REPORT_SESSIONS + 700
    trace = tmp_path / "many.jsonl"
    many_sessions_trace(trace, count)
    page = tmp_path / "many.html"
    started = time.monotonic()
    done, peak_mb = _report(trace, "-o", page)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60 and peak_mb < MEMORY_LIMIT_MB
    assert done.stderr.splitlines()[-2].endswith(
        f"({REPORT_SESSIONS} sessions, {2 * REPORT_SESSIONS} rows, "
        "700 older sessions left out (narrow it with --filter))"
    )
    data = _page_data(page)
    assert data["total"] == count
    assert len(data["sessions"]) == REPORT_SESSIONS  # type: ignore[arg-type]
    keys = {s["key"] for s in data["sessions"]}  # type: ignore[attr-defined]
    assert f"s{count - 1}" in keys and "s0" not in keys  # the newest, as the UI's list
    assert f"the newest {REPORT_SESSIONS} of {count} sessions" in data["label"]  # type: ignore[operator]


def test_the_session_cap_applies_after_the_filter(tmp_path: Path) -> None:
    trace = tmp_path / "many.jsonl"
    many_sessions_trace(trace, REPORT_SESSIONS + 10)
    page = tmp_path / "some.html"
    done, _ = _report(trace, "-o", page, "--filter", 'mcp.session.id ~ "^s1[0-9]$"')
    assert done.returncode == 0, done.stderr
    assert "(10 sessions, 20 rows)" in done.stderr  # each ping and its finding
    assert _page_data(page)["total"] == 10


def test_the_page_shows_an_elements_raw_text_from_its_batch(tmp_path: Path) -> None:
    trace = batch_trace(tmp_path / "batch.jsonl", 50)
    page_file = tmp_path / "batch.html"
    done, _ = _report(trace, "-o", page_file)
    assert done.returncode == 0, done.stderr
    with browser() as chromium:
        context = chromium.new_context(viewport={"width": 1500, "height": 900})  # type: ignore[attr-defined]
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(page_file.as_uri())
        page.wait_for_selector(".row", timeout=30_000)
        # What the detail pane and the page's filter get from the page's data source.
        sid = page.evaluate("window.mcpsniffState.sessions[0].id")
        element = page.evaluate(f"window.mcpsniffState.source.message({sid!r}, 10)")
        assert element["body"]["params"]["arguments"] == {"text": "element 6"}
        assert element["raw"].startswith('[{"jsonrpc":"2.0","id":0,"method":"tools/call"')
        assert '"element 49"' in element["raw"] and element["size"] == len(element["raw"])
        found = page.evaluate(f"window.mcpsniffState.source.filter({sid!r}, 'element')")
        assert len(found["rows"]) == 51  # the batch row and its 50 elements share the raw text
        context.close()
        assert errors == []
