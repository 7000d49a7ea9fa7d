"""Archive rows of a trace: one per JSON-RPC message, one per finding, identity per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.archive.rows import UNKNOWN, iter_trace_files, trace_id, trace_rows
from mcpsniff.core.model import BATCH, FindingRecord, MessageRecord
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader
from tests.support import hostile_trace

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def _records(path: Path) -> tuple[list[MessageRecord], list[FindingRecord]]:
    with TraceReader(path) as reader:
        records = list(reader.records())
    messages = [r for r in records if isinstance(r, MessageRecord) and r.kind != BATCH]
    return messages, [r for r in records if isinstance(r, FindingRecord)]


@pytest.mark.parametrize("path", sorted(RECORDINGS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_every_message_and_finding_is_one_row(path: Path) -> None:
    messages, findings = _records(path)
    rows = trace_rows(path)
    assert len(rows.messages) == len(messages)
    keys = {(r["session"], r["seq"], r["batch_index"]) for r in rows.messages}
    assert len(keys) == len(rows.messages)  # the key is unique
    assert keys == {(m.session, m.frame, m.index) for m in messages}
    assert [(f["rule"], f["severity"]) for f in rows.findings] == [
        (f.rule, f.severity) for f in findings
    ]
    assert [f["finding_no"] for f in rows.findings] == list(range(len(findings)))


def test_columns_of_a_tools_call_and_its_response() -> None:
    rows = trace_rows(RECORDINGS / "clean-2025-11-25.jsonl")
    call = next(r for r in rows.messages if r["method"] == "tools/call" and r["kind"] == "request")
    answer = next(r for r in rows.messages if r["kind"] == "response" and r["id"] == call["id"])
    assert call["direction"] == "c2s" and answer["direction"] == "s2c"
    assert call["transport"] == "stdio" and call["tool"] == answer["tool"]
    assert answer["latency_ms"] == pytest.approx(answer["latency_ms"]) and answer["latency_ms"] > 0
    assert answer["body"].startswith('{"jsonrpc":"2.0"') and '"result"' in answer["body"]
    assert call["size"] == len(call["body"]) + 1  # the frame's newline
    assert call["server_name"] == "gallery-server" and call["client_name"] == "gallery-client"
    assert call["protocol_version"] == "2025-11-25"
    assert (call["day"], call["server"]) == ("2026-01-01", "gallery-server")


def test_error_code_and_layer() -> None:
    rows = trace_rows(RECORDINGS / "trailing-comma.jsonl")
    errors = [r for r in rows.messages if r["kind"] == "error"]
    assert errors and all(r["error_code"] == -32700 for r in errors)
    assert {r["error_layer"] for r in errors} == {"protocol"}


def test_trace_id_is_the_header_digest(tmp_path: Path) -> None:
    source = RECORDINGS / "string-id-echo.jsonl"
    copy = tmp_path / "renamed.jsonl"
    copy.write_bytes(source.read_bytes())
    assert trace_id(copy) == trace_id(source) and len(trace_id(source)) == 16
    assert trace_id(RECORDINGS / "empty-batch.jsonl") != trace_id(source)


def test_hostile_trace_gives_rows_not_tracebacks(tmp_path: Path) -> None:
    rows = trace_rows(hostile_trace(tmp_path, code=2**70))
    assert rows.messages
    assert all(
        r["error_code"] is None or -(2**63) <= r["error_code"] < 2**63 for r in rows.messages
    )
    assert {r["server"] for r in rows.messages} <= {UNKNOWN} | {
        r["server_name"] for r in rows.messages
    }


def test_not_a_trace(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    with pytest.raises(TraceError):
        trace_rows(junk)


def test_folders_give_their_traces_sorted(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_text("")
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "c.txt").write_text("")
    single = RECORDINGS / "empty-batch.jsonl"
    assert list(iter_trace_files([tmp_path, single])) == [
        tmp_path / "a.jsonl",
        tmp_path / "b.jsonl",
        single,
    ]
