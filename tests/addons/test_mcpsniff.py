"""addons/mcpsniff.py, the loader: without the mcpsniff package the addon is inert and says why.

A real ``mitmdump`` whose Python has mitmproxy but no mcpsniff, and a copy of
the loader outside the checkout: the error must be one clear line, never a
traceback, and every flow must pass untouched. (With the package, every test
of ``tests/mitm`` loads the addon through this file.)
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import mitmproxy
import pytest

from tests.mitm.support import INITIALIZE, LATE_OPTIONS, REPO, Mitmdump, post
from tests.mitm.upstreams import CUT_EVENT, Upstream, whole_event


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


def _python_without_mcpsniff(folder: Path) -> tuple[list[str], Path]:
    """A mitmdump command whose Python has mitmproxy but no mcpsniff; the addon's copy.

    ``-S`` skips site initialization, so the venv's .pth files (among them the one
    that makes the editable mcpsniff importable) are not read; mitmproxy's folder
    is put back on sys.path by hand. The addon is copied outside the checkout,
    so its fallback (the checkout next to it) finds nothing either.
    """
    site = Path(mitmproxy.__file__).resolve().parents[1]
    code = (
        f"import sys; sys.path.append({str(site)!r}); "
        "from mitmproxy.tools.main import mitmdump; sys.exit(mitmdump())"
    )
    copy = folder / "elsewhere" / "addons" / "mcpsniff.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(REPO / "addons" / "mcpsniff.py", copy)
    return [sys.executable, "-S", "-c", code], copy


#: PYTHONPATH would still be read under ``-S`` (the tests may run with the checkout on it).
NO_PYTHONPATH = {"PYTHONPATH": ""}


NOT_IMPORTABLE = "mcpsniff is not importable from mitmproxy's Python"


def test_addon_without_mcpsniff_refuses_to_start_clearly(tmp_path: Path) -> None:
    python, copy = _python_without_mcpsniff(tmp_path)
    mitm = Mitmdump(
        tmp_path,
        addon=False,
        extra=["-s", str(copy), "--set", f"mcpsniff_trace={tmp_path / 't.jsonl'}"],
        python=python,
        cwd=copy.parent,
        env=NO_PYTHONPATH,
    )
    try:
        code = mitm.proc.wait(30)
    except Exception:
        mitm.stop(signal.SIGKILL)
        raise
    assert code == 1, mitm.output
    (line,) = [line for line in mitm.output.splitlines() if NOT_IMPORTABLE in line]
    assert "No module named 'mcpsniff'" in line
    assert "pip install mcpsniff" in line
    assert "Traceback" not in mitm.output
    assert not (tmp_path / "t.jsonl").exists()


def test_addon_loaded_at_run_time_without_mcpsniff_leaves_flows_alone(
    upstream: Upstream, tmp_path: Path
) -> None:
    python, copy = _python_without_mcpsniff(tmp_path)
    mitm = Mitmdump(
        tmp_path,
        mode=f"reverse:{upstream.origin}/",
        addon=False,
        extra=["-s", str(LATE_OPTIONS)],
        python=python,
        cwd=copy.parent,
        env={"MCPSNIFF_TEST_LATE_OPTIONS": json.dumps({"scripts": [str(copy)]}), **NO_PYTHONPATH},
    ).started()
    try:
        mitm.wait_for(NOT_IMPORTABLE)
        # MCP traffic of every kind passes, with no error per flow
        for _ in range(2):
            assert asyncio.run(post(mitm.url("/mcp"), INITIALIZE))[0] == 200
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            status, _, body = asyncio.run(post(mitm.url("/truncated"), ping, "s"))
            assert status == 200 and body == whole_event(2) + CUT_EVENT
            assert asyncio.run(post(mitm.url("/mcp"), b"not json", "s"))[0] == 400
        assert mitm.proc.poll() is None
    finally:
        code = mitm.stop(signal.SIGINT)
    assert code == 0, mitm.output
    assert mitm.output.count(NOT_IMPORTABLE) == 1
    assert "Traceback" not in mitm.output
    assert "mcpsniff:" not in mitm.output
