"""What the trace module tests share: sample records, and writing and reading a trace."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter


def normalized(record: Record) -> Record:
    """``record`` as a trace stores it: ``MessageRecord.size`` is not written."""
    if isinstance(record, MessageRecord):
        return dataclasses.replace(record, size=None)
    return record


def write_trace(path: Path, records: list[Record], **kwargs: Any) -> Path:
    writer = TraceWriter.create(path, **kwargs)
    writer.write_all(records)
    writer.close()
    return path


def read_records(path: Path) -> list[Record]:
    with TraceReader(path) as reader:
        return list(reader.records())


def trace_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def sample_records() -> list[Record]:
    """One of every record type, with every optional field exercised somewhere."""
    return [
        EventRecord(1, 1700000000.0, "s1", "session-start", {"argv": ["srv", "--x"], "pid": 7}),
        FrameRecord(2, 1700000000.25, "s1", "c2s", "stdio", b'{"jsonrpc":"2.0","id":1}\n'),
        FrameRecord(3, 1700000000.5, "s1", "s2c", "stdio", b"\xff\xfebinary\r\n"),
        FrameRecord(
            4, 1700000001.0, "h1", "s2c", "sse", b'{"a":"\xc3\xa9"}', meta={"event_id": "42"}
        ),
        MessageRecord(2, "s1", "c2s", "request", id=1, has_id=True, method="ping", size=25),
        MessageRecord(
            2,
            "s1",
            "c2s",
            "request",
            index=0,
            id="t",
            has_id=True,
            method="tools/call",
            target="echo",
        ),
        MessageRecord(
            3,
            "s1",
            "s2c",
            "response",
            index=2,
            id="abc",
            has_id=True,
            answers=2,
            request_index=1,
            latency_ms=12.5,
            note="id-type-mismatch",
            size=12,
        ),
        MessageRecord(4, "s1", "s2c", "error", id=None, has_id=True, error_code=-32600),
        MessageRecord(4, "s1", "c2s", "notification", method="notifications/initialized"),
        MessageRecord(4, "s1", "s2c", "response", id=9, has_id=True, answers=2, note="orphan"),
        MessageRecord(3, "s1", "s2c", "unparseable", size=11),
        FindingRecord(
            "JR-RESP-ID",
            "error",
            'server answered request id 1 with id "1"',
            "s1",
            [2, 3],
            {"cause": "id-type", "request_id": 1, "response_id": "1", "nested": {"a": [1, None]}},
        ),
        FindingRecord("JR-PARSE", "info", "empty line", "s1", [3]),
        EventRecord(5, 1700000002.0, "s1", "stderr", {"line": "Loading model... ✓"}),
        EventRecord(6, 1700000003.0, "s1", "exit", {"code": 0}),
        EventRecord(7, 1700000003.0, "s1", "session-end"),
    ]
