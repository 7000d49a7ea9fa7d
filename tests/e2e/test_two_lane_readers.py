"""Every reader gives, on a two-lane trace, what it gives on the one-lane trace (issue 30).

The two-lane stdio analysis writes a session's derived records later than its
inputs (docs/trace-format.md, "Two-lane traces"). Each trace of the gallery,
the guard data and a generated trace is laid out so (tests/lane_layout.py) at
the same path as the original, and every command's output is compared byte
for byte: only SARIF's line numbers differ, as they must (they point at the
frame's line in the file read), and the file size `ls` lists.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.agent.access import TraceAccess
from mcpsniff.agent.tools import (
    get_message,
    list_sessions,
    search_messages,
    session_findings,
    session_summary,
    stats,
)
from mcpsniff.cli import main
from tests.lane_layout import two_lane

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "recordings").glob("*.jsonl")) + sorted(
    (ROOT / "tests" / "data" / "guard").glob("*.jsonl")
)
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen_trace import generate  # noqa: E402

#: A SARIF result's line in the trace: where the frame is in the file read.
_SARIF_LINE = re.compile(rb'"startLine": \d+')


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _agent(path: Path) -> dict[str, Any]:
    access = TraceAccess([path])
    access.refresh()
    out: dict[str, Any] = {"sessions": list_sessions(access, {})}
    for item in out["sessions"]["items"]:
        session = item["id"] if "id" in item else item["session"]
        found = session_findings(access, {"session": session})
        rows = search_messages(access, {"session": session, "limit": 200})
        out[session] = {
            "summary": session_summary(access, {"session": session}),
            "findings": found,
            "rows": rows,
            "messages": [
                get_message(access, {"session": session, "row": n})
                for n in range(min(rows["total"], 40))
            ],
        }
    out["stats"] = stats(access, {"trace": str(path)})
    return out


def _outputs(path: Path, work: Path) -> dict[str, Any]:
    """What every reader makes of the trace at ``path``."""
    trace = str(path)
    out: dict[str, Any] = {}
    for args in (
        ["check", "--format", "json"],
        ["check", "--format", "junit"],
        ["check"],
        ["show"],
        ["show", "--format", "json", "-vv"],
        ["stats", "--format", "json"],
        ["stats"],
        ["tools", "--format", "json", "--no-history"],
        ["export", "har"],
    ):
        out[" ".join(args)] = _cli(*args, trace)
    for table, order in (("messages", "session, seq, batch_index"), ("findings", "finding_no")):
        sql = f"SELECT * FROM {table} ORDER BY {order}"
        out[f"query {table}"] = _cli("query", "--format", "json", sql, trace)
    code, sarif = _cli("check", "--format", "sarif", trace)
    out["sarif"] = (code, _SARIF_LINE.sub(b'"startLine": N', sarif.encode()))
    out["diff"] = _cli("diff", "--format", "json", trace, trace)
    diagram = work / "diagram.mmd"
    code = _cli("report", "--format", "mermaid", "-o", str(diagram), trace)
    out["mermaid"] = (code, diagram.exists() and diagram.read_bytes())
    diagram.unlink(missing_ok=True)
    html = work / "page.html"
    out["report"] = (_cli("report", "-o", str(html), trace), html.exists() and html.read_bytes())
    html.unlink(missing_ok=True)
    lock = work / "pins.lock"
    out["pin"] = (_cli("pin", "-o", str(lock), trace), lock.exists() and lock.read_bytes())
    lock.unlink(missing_ok=True)
    # ls: every figure but the file's size, which the lane records add to.
    code, listed = _cli("ls", "--format", "json", str(path.parent))
    rows = [orjson.loads(line) for line in listed.splitlines() if line.startswith("{")]
    out["ls"] = (code, [{k: v for k, v in row.items() if k != "size"} for row in rows])
    out["agent"] = _agent(path)
    redacted = work / "redacted.jsonl"
    out["redact"] = _cli("redact", trace, "-o", str(redacted))[0]
    out["redacted show"] = _cli("show", "--format", "json", "-vv", str(redacted))
    redacted.unlink(missing_ok=True)
    return out


def _compare(source: Path, tmp_path: Path, layouts: list[tuple[int, int, bool]]) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    path = folder / source.name
    path.write_bytes(source.read_bytes())
    expected = _outputs(path, work)
    if importlib.util.find_spec("duckdb") is not None:  # the archive extra: query compares rows
        assert expected["query messages"][0] == 0 and expected["query messages"][1].strip()
    for seed, lag, mixed in layouts:
        path.write_bytes(two_lane(source.read_bytes(), seed, lag, mixed=mixed))
        got = _outputs(path, work)
        for key, value in expected.items():
            assert got[key] == value, (key, seed, lag)


@pytest.mark.parametrize("source", CORPUS, ids=lambda p: p.name)
def test_every_reader_reads_a_two_lane_layout_as_the_one_lane_trace(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    _compare(source, tmp_path, [(1, 3, False), (2, 25, True)])


def test_a_generated_trace_in_two_lanes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    source = tmp_path / "gen.jsonl"
    generate(source, 1500, seed=5)
    _compare(source, tmp_path, [(7, 12, False)])


def _parquet_rows(archive: Path) -> dict[str, list[dict[str, Any]]]:
    import pyarrow.dataset as ds

    out: dict[str, list[dict[str, Any]]] = {}
    for table in ("messages", "findings"):
        if not (archive / table).exists():
            continue
        rows = ds.dataset(archive / table, format="parquet", partitioning="hive").to_table()
        out[table] = sorted(
            orjson.dumps(row, option=orjson.OPT_SORT_KEYS, default=str) for row in rows.to_pylist()
        )
    return out


@pytest.mark.parametrize("name", ["unanswered-request.jsonl", "out-of-order-batch.jsonl"])
def test_the_parquet_archive_of_a_two_lane_layout(tmp_path: Path, name: str) -> None:
    pytest.importorskip("pyarrow")
    source = ROOT / "recordings" / name
    path = tmp_path / name
    results = []
    for data in (source.read_bytes(), two_lane(source.read_bytes(), 3, 5)):
        path.write_bytes(data)
        archive = tmp_path / f"archive{len(results)}"
        code, _output = _cli("export", "parquet", "-o", str(archive), str(path))
        assert code == 0
        results.append(_parquet_rows(archive))
    assert results[0] == results[1] and results[0]["messages"]


def _record_lists(path: Path) -> dict[str, Any]:
    """What each reader of records makes of ``path``."""
    from mcpsniff.filter.reading import LazyTraceRecords
    from mcpsniff.trace.reader import TraceReader
    from mcpsniff.trace.tail import TraceTail
    from mcpsniff.ui.follow import trace_records

    with TraceReader(path) as reader:
        records = list(reader.records())
    tail = TraceTail(path)
    tailed = tail.poll(final=True)
    tail.close()
    return {
        "records": records,
        "lazy": list(LazyTraceRecords(path)),
        "ui": list(trace_records(path)),
        "tail": tailed,
    }


@pytest.mark.parametrize("appended", [False, True], ids=["fresh", "appended"])
def test_a_real_two_lane_capture_reads_as_its_one_lane_twin(tmp_path: Path, appended: bool) -> None:
    """The lanes' own writers (mcpsniff/capture/lanes.py) on the same observations."""
    from tests.capture.test_lanes import record

    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    if appended:
        # A one-lane session first, then the compared one appended (its keys get a suffix).
        assert record(one, 1) == 0 and record(two, 1) == 0
    assert record(one, 1) == 0
    assert record(two, 2) == 0
    assert b'"through"' in two.read_bytes() and b'"through"' not in one.read_bytes()

    def body(path: Path) -> list[bytes]:
        return [
            line
            for line in path.read_bytes().splitlines()
            if not line.startswith((b'{"type":"lane"', b'{"type":"header"'))
        ]

    # Some derived records sit later than in the one-lane file: the merge has work to do.
    assert body(two) != body(one)
    if not appended:  # (an appended session's keys hold a pid and a time)
        assert sorted(body(two)) == sorted(body(one))
    suffixes = [
        orjson.loads(line)["meta"].get("session_suffix", "")
        for path in (one, two)
        for line in path.read_bytes().splitlines()
        if line.startswith(b'{"type":"header"')
    ]

    def same_keys(text: str) -> str:
        for suffix in suffixes:
            if suffix:
                text = text.replace(suffix, "@S")
        return text

    expected, got = _record_lists(one), _record_lists(two)
    for key in expected:
        assert same_keys(repr(got[key])) == same_keys(repr(expected[key])), key
    for args in (["check", "--format", "json"], ["show", "--format", "json", "-vv"]):
        assert same_keys(_cli(*args, str(two))[1]) == same_keys(_cli(*args, str(one))[1])
