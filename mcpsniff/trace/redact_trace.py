"""Redacting an existing trace for sharing (``mcpsniff redact TRACE -o OUT``).

A trace recorded with ``--no-redact``, or by an older mcpsniff with weaker
detectors, holds credentials in its frames, its events (headers, stderr lines,
the server's command line) and its header. This rewrites it record by record
with the same detectors the relays use (``core.redact``), keeping everything
else as it was: the frames stay byte-exact except for the replaced values, so
``mcpsniff check`` on the copy finds what it found on the original.

Each redacted frame's ``meta.redacted`` and each redacted event's
``data.redacted`` count the values replaced, as the relays record them.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.model import (
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.redact import (
    redact_argv,
    redact_frame,
    redact_header_pairs,
    redact_json_value,
    redact_text,
    redact_url,
)
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter


@dataclass
class RedactReport:
    """What ``redact_trace`` replaced: values per record type, and where."""

    replaced: Counter[str] = field(default_factory=Counter)
    records: Counter[str] = field(default_factory=Counter)
    #: Line numbers (in the output) of the first records that changed.
    lines: list[int] = field(default_factory=list)
    skipped: int = 0

    @property
    def total(self) -> int:
        return sum(self.replaced.values())

    def summary(self) -> str:
        """One line: how many values in how many records of which type."""
        if not self.total:
            return "nothing to redact"
        parts = [
            f"{self.replaced[kind]} in {self.records[kind]} {kind} record(s)"
            for kind in ("header", "frame", "event", "message", "finding")
            if self.replaced[kind]
        ]
        where = ", ".join(str(n) for n in self.lines[:8])
        more = ", …" if len(self.lines) > 8 else ""
        return f"replaced {self.total} value(s): {'; '.join(parts)} (lines {where}{more})"


#: The keys of a header's ``meta`` and of an event's data that hold a command
#: line, and those that hold a URL (an event's ``path`` carries a query too).
_ARGV_KEYS = ("command", "client_command")
_HEADER_URL_KEYS = ("upstream", "url")
_EVENT_URL_KEYS = ("path", "url", "upstream")


def redact_header_meta(meta: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A trace header's ``meta`` with the command line, URLs and secrets replaced."""
    return _redact_fields(meta, _HEADER_URL_KEYS, headers=False)


def redact_event_data(name: str, data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """An event's data with its secrets replaced (headers, URLs, argv, stderr, bodies)."""
    return _redact_fields(data, _EVENT_URL_KEYS, headers=True)


def _redact_fields(
    fields: dict[str, Any], url_keys: tuple[str, ...], *, headers: bool
) -> tuple[dict[str, Any], int]:
    """``fields`` with each value redacted as what its key says it is, and the count."""
    out: dict[str, Any] = {}
    count = 0
    for key, value in fields.items():
        if headers and key == "headers" and isinstance(value, list):
            new, n = redact_header_pairs(value)
        elif key in _ARGV_KEYS and isinstance(value, list):
            new, n = redact_argv([str(v) for v in value])
        elif key in url_keys and isinstance(value, str):
            new, n = redact_url(value)
        else:
            new, n = redact_json_value(value, key)
        out[key] = new
        count += n
    return out, count


def _frame(record: FrameRecord) -> tuple[FrameRecord, int]:
    raw, count = redact_frame(record.raw)
    if not count:
        return record, 0
    meta = dict(record.meta or {})
    meta["redacted"] = int(meta.get("redacted") or 0) + count
    value = UNPARSED
    # Embedded again as JSON when it still is JSON (redaction keeps it so).
    with contextlib.suppress(orjson.JSONDecodeError):
        value = orjson.loads(raw)
    frame = FrameRecord(
        record.seq, record.t, record.session, record.direction, record.transport, raw, meta
    )
    frame.value = value
    return frame, count


def redact_record(record: Record) -> tuple[Record, int]:
    """One record with its secrets replaced, and how many values were."""
    if isinstance(record, FrameRecord):
        return _frame(record)
    if isinstance(record, EventRecord):
        data, count = redact_event_data(record.event, record.data)
        if count:
            data["redacted"] = int(record.data.get("redacted") or 0) + count
            record = EventRecord(record.seq, record.t, record.session, record.event, data)
        return record, count
    if isinstance(record, MessageRecord):
        if record.target is None:
            return record, 0
        target, count = redact_text(record.target)
        record.target = target
        return record, count
    message, count = redact_text(record.message)
    data, n = redact_json_value(record.data)
    if count + n:
        record = FindingRecord(
            record.rule, record.severity, message, record.session, record.seq, data
        )
    return record, count + n


def redact_trace(
    source: Path, target: Path, warn: Callable[[str], None] | None = None
) -> RedactReport:
    """Write a redacted copy of ``source`` to ``target`` (which must not exist).

    Raises ``TraceError`` for an unreadable source and ``OSError`` (including
    ``FileExistsError``) for a target that cannot be created; a half-written
    target is removed.
    """
    report = RedactReport()
    with TraceReader(source, on_skip=warn) as reader:
        meta, count = redact_header_meta(dict(reader.header.get("meta") or {}))
        meta["redacted"] = True
        if count:
            report.replaced["header"] += count
            report.records["header"] += 1
            report.lines.append(1)
        writer = TraceWriter.create(target, meta=meta, created=reader.header.get("created"))

        def appended_header(obj: dict[str, Any]) -> None:
            # A relaunch's session header holds that launch's command line:
            # keep it in its place (lose nothing), redacted like the first.
            meta, count = redact_header_meta(dict(obj.get("meta") or {}))
            meta["redacted"] = True
            writer.write_header(meta, obj.get("created"))
            if count:
                report.replaced["header"] += count
                report.records["header"] += 1
                report.lines.append(writer.records_written + 1)

        reader.on_header = appended_header
        try:
            for record in reader.records():
                new, count = redact_record(record)
                writer.write(new)
                if count:
                    kind = type(record).__name__.removesuffix("Record").lower()
                    report.replaced[kind] += count
                    report.records[kind] += 1
                    report.lines.append(writer.records_written + 1)
            writer.close()
            if writer.failed is not None:
                raise writer.failed
        except BaseException:
            writer.close()
            os.unlink(target)
            raise
        report.skipped = len(reader.skipped)
        if reader.torn is not None and warn is not None:
            warn(f"{source}: {reader.torn.describe()}")
    return report
