"""The UI's model of a trace: rows, pairs, batches, sessions, findings; the offset tail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpsniff.core.model import FrameRecord, MessageRecord
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.details import json_safe, message_detail
from mcpsniff.ui.follow import OffsetTail, read_record_at
from mcpsniff.ui.model import TEXT_LIMIT, bounded
from mcpsniff.ui.report import load_model
from tests.ui.support import BATCH_ROWS, GALLERY, batch_trace


def test_rows_pair_responses_with_requests_and_group_batches() -> None:
    trace = GALLERY / "out-of-order-batch.jsonl"
    model = load_model(trace)
    (session,) = model.sessions.values()
    summary = session.summary()
    assert summary["transport"] == "stdio"
    assert summary["version"] == "2025-03-26"
    assert summary["name"] == "gallery-server" and summary["client"] == "gallery-client"
    with TraceReader(trace) as reader:
        messages = [r for r in reader.records() if isinstance(r, MessageRecord)]
    assert summary["messages"] == len([m for m in messages if m.kind != "batch"])
    rows = list(session.all_rows())
    for row in rows:
        if row["kind"] == "response":
            request = rows[row["pair"]]
            assert request["kind"] == "request"
            assert request["method"] == row["method"] and request["id"] == row["id"]
    # rows are stored compactly, as the JSON the page receives
    assert all(isinstance(r, bytes) for r in session.rows)
    batches = [r for r in rows if r["kind"] == "batch"]
    assert [b["batch"] for b in batches] == [3, 3]
    for batch in batches:
        elements = [r for r in rows if r.get("parent") == batch["n"]]
        assert len(elements) == 3 and {e["seq"] for e in elements} == {batch["seq"]}
    # the server answered the batch out of order: [0] of the answer is tools/call's
    answer = [r for r in rows if r.get("parent") == batches[1]["n"]]
    assert answer[0]["method"] == "tools/call" and answer[0]["tool"] == "add"


def test_findings_link_to_their_rows_with_rule_descriptions() -> None:
    model = load_model(GALLERY / "stdout-pollution.jsonl")
    (session,) = model.sessions.values()
    rules = {f["rule"]: f for f in session.findings}
    assert set(rules) == {"JR-PARSE", "STDIO-STDOUT-CLEAN"}
    parse = rules["JR-PARSE"]
    assert [session.row(n)["kind"] for n in parse["rows"]] == ["unparseable"]
    assert parse["description"] and parse["source"] and parse["cause"] == "log-line"
    assert session.summary()["findings"] == {"error": 2, "warning": 0, "info": 0}


def test_detail_reads_the_exact_bytes_back(tmp_path: Path) -> None:
    trace = GALLERY / "stdout-pollution.jsonl"
    model = load_model(trace)
    (session,) = model.sessions.values()
    bad = next(r for r in session.all_rows() if r["kind"] == "unparseable")
    detail = message_detail(trace, session, bad["n"])
    assert detail is not None
    assert detail["raw"] == "Loading model...\n" and detail["utf8"] is True
    assert "body" not in detail
    assert message_detail(trace, session, 10_000) is None


def test_offset_tail_waits_for_whole_lines_and_remembers_offsets(tmp_path: Path) -> None:
    source = (GALLERY / "clean-2025-11-25.jsonl").read_bytes()
    trace = tmp_path / "t.jsonl"
    cut = source.index(b"\n", len(source) // 2) - 10  # inside a line
    trace.write_bytes(source[:cut])
    tail = OffsetTail(trace)
    first, _ = tail.poll()
    with open(trace, "ab") as handle:
        handle.write(source[cut:])
    second, _ = tail.poll()
    items = first + second
    with TraceReader(GALLERY / "clean-2025-11-25.jsonl") as reader:
        expected = list(reader.records())
    records = [item for _, item in items]
    frames = [(o, r) for o, r in items if isinstance(r, FrameRecord)]
    assert len(frames) == len([r for r in expected if isinstance(r, FrameRecord)])
    for offset, frame in frames:
        again = read_record_at(trace, offset)
        assert isinstance(again, FrameRecord) and again.raw == frame.raw
    assert len(records) == len(expected) + 1  # and the header


def test_a_file_that_is_no_trace_is_one_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "x.jsonl"
    bogus.write_text("hello\n")
    with pytest.raises(TraceError, match="not an mcpsniff trace"):
        OffsetTail(bogus).poll()


def test_skipped_records_are_counted_not_fatal(tmp_path: Path) -> None:
    lines = (GALLERY / "clean-2025-11-25.jsonl").read_text().splitlines(keepends=True)
    lines.insert(3, '{"type":"frame","seq":"x"}\n')
    lines.insert(5, "not json\n")
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(lines))
    tail = OffsetTail(trace)
    tail.poll()
    assert tail.skipped == 2 and len(tail.notes) == 2


def test_traffic_strings_are_bounded_and_json_safe() -> None:
    assert len(bounded("x" * 10_000) or "") == TEXT_LIMIT
    assert bounded(None) is None
    value = {"big": 2**70, "nan": float("nan"), "lone": "\ud800", "deep": [[[[1]]]]}
    safe = json_safe(value)
    assert safe["big"] == str(2**70) and safe["nan"] is None
    json.dumps(safe).encode("utf-8")  # no lone surrogate left
    deep: list[object] = []
    node = deep
    for _ in range(200):
        child: list[object] = []
        node.append(child)
        node = child
    assert "nested deeper" in json.dumps(json_safe(deep))


def test_rows_carry_the_annotations_show_prints(tmp_path: Path) -> None:
    from mcpsniff.core.model import FrameRecord as Frame

    path = tmp_path / "notes.jsonl"
    writer = TraceWriter.create(path, meta={}, created=1.0)
    bodies = [
        (
            "c2s",
            "request",
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "slow", "_meta": {"progressToken": "p"}},
            },
        ),
        (
            "s2c",
            "notification",
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {
                    "progressToken": "p",
                    "progress": 3,
                    "total": 5,
                    "message": "<b>step</b>",
                },
            },
        ),
        (
            "c2s",
            "notification",
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
        ),
    ]
    for seq, (direction, kind, body) in enumerate(bodies, start=1):
        raw = json.dumps(body).encode() + b"\n"
        writer.write(Frame(seq, 1.0 + seq, "s", direction, "stdio", raw))
        writer.write(
            MessageRecord(
                seq,
                "s",
                direction,
                kind,
                id=body.get("id"),
                has_id="id" in body,
                method=body["method"],
                target="slow" if kind == "request" else None,
            )
        )
    writer.close()
    (session,) = load_model(path).sessions.values()
    rows = list(session.all_rows())
    notes = [r.get("note") for r in rows]
    assert notes == [
        None,
        "progress 3/5 <b>step</b>",
        "cancels requestId=7, unanswered after 2.00 s",
    ]
    assert rows[2]["cancels"] == 0 and rows[2]["tool"] == "slow"


def _stopped_trace(path: Path, *, signal: bool) -> None:
    """What a recorder older than the interruption verdict wrote for Ctrl-C mid-call."""
    from mcpsniff.core.model import EventRecord, FindingRecord
    from mcpsniff.trace.writer import TraceWriter

    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}\n'
    records: list = [FrameRecord(1, 1.0, "stdio", "c2s", "stdio", call)]
    if signal:
        records.append(EventRecord(2, 2.0, "stdio", "signal", {"signal": "SIGINT"}))
    records += [
        EventRecord(3, 3.0, "stdio", "exit", {"returncode": 0, "status": 0}),
        EventRecord(4, 3.0, "stdio", "session-end", {}),
        FindingRecord(
            "JR-RESP-REQUIRED",
            "error",
            "client request 2 (tools/call, seq 1) was never answered before the session ended",
            "stdio",
            [1],
            {"id": 2, "method": "tools/call"},
        ),
    ]
    writer = TraceWriter.create(path)
    writer.write_all(records)
    writer.close()


def test_a_session_stopped_by_ctrl_c_is_not_painted_red(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    _stopped_trace(trace, signal=True)
    (session,) = load_model(trace).sessions.values()
    summary = session.summary()
    assert summary["findings"] == {"error": 0, "warning": 0, "info": 1}
    assert summary["interrupted"] == "mcpsniff forwarded SIGINT (Ctrl-C) to the server"
    (finding,) = session.findings
    assert finding["severity"] == "info" and finding["cause"] == "interrupted"
    assert "in flight when the session was stopped" in finding["message"]


def test_near_miss_a_session_that_ended_by_itself_keeps_its_unanswered_error(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    _stopped_trace(trace, signal=False)
    (session,) = load_model(trace).sessions.values()
    assert session.summary()["findings"]["error"] == 1
    assert session.summary()["interrupted"] is None


# ---------------------------------------- a batch in a version without batches

# A batch in a session whose version removed batching, in the web UI and report.
#
# The analyzer writes a batch's own finding (MSG-BATCH-REMOVED, from 2025-06-18
# on) right after the batch's message record and before its elements' records.
# The UI's model completed the frame's views at every finding, so the elements
# that followed were dropped: the page showed "batch of 0", and the requests
# and responses inside the batch were nowhere (not in the list, the diagram,
# the report or the Mermaid text), while ``show`` listed them. Exactly the
# traffic whose finding says "look here".


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_batch_elements_are_rows_whatever_the_version(tmp_path: Path, version: str) -> None:
    path = batch_trace(tmp_path / "t.jsonl", version)
    model = load_model(path)
    (session,) = model.sessions.values()
    rows = [session.row(n) for n in range(len(session.rows))]
    assert [(r["seq"], r["kind"], r.get("index")) for r in rows] == BATCH_ROWS
    assert [r.get("batch") for r in rows if r["kind"] == "batch"] == [2, 2]
    removed = [f for f in session.findings if f["rule"] == "MSG-BATCH-REMOVED"]
    if version == "2025-03-26":
        assert removed == []
    else:
        # Each batch's finding still links to the batch's rows, elements included.
        assert [f["rows"] for f in removed] == [[3, 4, 5], [6, 7, 8]]


def test_a_fault_event_reads_as_the_timeline_says_it() -> None:
    from mcpsniff.ui.model import event_detail

    data = {
        "fault_version": 1,
        "spec": 'error -32603 when tool == "echo"',
        "action": "error",
        "code": -32603,
        "dir": "c2s",
        "kind": "request",
        "method": "tools/call",
        "id": 2,
        "delivered": False,
    }
    assert event_detail("fault", data) == (
        "injected error -32603 to c2s request tools/call id=2 (not delivered)"
        '  [error -32603 when tool == "echo"]'
    )
