"""The UI's readers on issue 13's hostile traces: a skipped record, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.ui.library import Library
from mcpsniff.ui.queries import matching_rows, parse, session_stats
from mcpsniff.ui.report import render_html, report_data
from tests.trace.test_validate import GOOD, HOSTILE, _write

EXTRA: dict[str, tuple[dict[str, Any], ...]] = {
    "answers a list": (dict(GOOD["message"], kind="response", answers=[1]),),
    "index an object": (dict(GOOD["message"], index={"a": 1}),),
    "frame meta a list": (dict(GOOD["frame"], meta=[1]),),
    "finding seq of strings": (dict(GOOD["finding"], seq=["1"]),),
    "id beyond 64 bits": (dict(GOOD["message"], id=2**80),),
}
CASES = {**HOSTILE, **EXTRA}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_ui_and_report_survive_a_hostile_trace(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / "t.jsonl", [GOOD["frame"], *CASES[name], GOOD["event"]])
    library = Library([tmp_path])
    library.poll()
    library.poll()  # the quiet poll completes the last frame's views
    sessions = library.sessions()
    json.dumps(sessions)
    for summary in sessions:
        found = library.find(summary["id"])
        assert found is not None
        _followed, session = found
        flt = parse("kind == request or latency > 1ms")
        assert not isinstance(flt, dict)
        matching_rows(path, session, flt)
        json.dumps(session_stats(path, session))
    for args in (
        ["report", str(path), "-o", str(tmp_path / "r.html")],
        ["report", str(path), "--format", "mermaid"],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            name,
            args,
            result.output,
        )
        assert result.exit_code in (0, 2)
    page, _ = report_data(path)
    render_html(page).encode("utf-8")
