"""The UI's session queries (ui/queries.py): one pass answers a filter and the stats."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.queries import (
    findings_index,
    matching_rows,
    parse,
    session_query,
    session_stats,
    session_views,
)
from mcpsniff.ui.report import load_model
from tests.ui.test_report import _batch_trace


@pytest.mark.parametrize("expression", ["kind == request", "severity >= warning", "isError"])
def test_one_pass_gives_the_rows_and_the_stats_of_two(tmp_path: Path, expression: str) -> None:
    path = _batch_trace(tmp_path / "t.jsonl")
    model = load_model(path)
    flt = parse(expression)
    assert not isinstance(flt, dict)
    for session in model.sessions.values():
        rows, stats = session_query(path, session, flt)
        assert rows == matching_rows(path, session, flt)
        assert stats == session_stats(path, session)
    one = model.sessions["a"]
    assert session_query(path, one, parse("kind == request"))[0]  # the batch's requests


def test_the_findings_pass_reads_no_message_yet_finds_every_finding(tmp_path: Path) -> None:
    path = _batch_trace(tmp_path / "t.jsonl")
    index = findings_index(path)
    seen = {(v.session, v.seq): v.findings for v in session_views(path, index=index)}
    assert any(seen.values())
    assert index == findings_index(path, {"a", "b"})
    assert all(key[0] == "b" for key in findings_index(path, {"b"}))
    # The views built with the index given are those built without it.
    again = {(v.session, v.seq): v.findings for v in session_views(path)}
    assert again == seen


def test_a_finding_dressed_as_a_message_is_still_indexed(tmp_path: Path) -> None:
    """A hostile line that starts as a message but whose last "type" says finding:
    the readers' parser keeps the last of duplicate keys, so the fast skip must not
    pass it over."""
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={})
    writer.close()
    finding = (
        b'"rule":"JR-RESP-REQUIRED","severity":"error","message":"m","session":"s","seq":[1]}\n'
    )
    with path.open("ab") as handle:
        handle.write(b'{"type":"message","type":"finding",' + finding)
        handle.write(b'{"type":"message","typ\\u0065":"finding",' + finding)
    index = findings_index(path)
    assert [f.rule for f in index[("s", 1)]] == ["JR-RESP-REQUIRED"] * 2
