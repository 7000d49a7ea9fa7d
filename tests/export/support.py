"""Helpers shared by the export tests: traces written through the real writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "recordings"
DATA = Path(__file__).resolve().parent / "data"


def write_stdio_trace(
    path: Path, frames: list[tuple[str, Any]], session: str = "s1", t0: float = 1767225600.0
) -> Path:
    """A stdio trace of ``frames`` (direction, JSON value or raw bytes), 10 ms apart."""
    writer = TraceWriter.create(path, meta={"source": "tests/export"})
    seq = 1
    writer.write(EventRecord(seq, t0, session, "session-start", {"transport": "stdio"}))
    t = t0
    for direction, payload in frames:
        seq += 1
        t += 0.010
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode() + b"\n"
        writer.write(FrameRecord(seq, t, session, direction, "stdio", raw))
    seq += 1
    writer.write(EventRecord(seq, t + 0.010, session, "session-end", {"reason": "eof"}))
    writer.close()
    return path
