"""Helpers shared by test files of several packages: traces built to a purpose."""

from __future__ import annotations

import json
from pathlib import Path

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

#: Terminal controls, bidi marks and C1 controls, as a hostile peer sends them.
HOSTILE = "\x1b]0;PWN\x07\u202eRLO\u2066\x9b31m\u2028\x7f"


def _hostile_frames(code: object) -> list[tuple[str, dict[str, object]]]:
    return [
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "m" + HOSTILE}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": HOSTILE}}),
    ]


def hostile_trace(tmp_path: Path, code: object = 42) -> Path:
    """A trace whose session key, method, error message and label hold ``HOSTILE``."""
    session = "s" + HOSTILE
    records = [
        FrameRecord(n + 1, 1767225600.0 + n, session, d, "stdio", (json.dumps(m) + "\n").encode())
        for n, (d, m) in enumerate(_hostile_frames(code))
    ]
    records.append(EventRecord(9, 1767225601.0, session, "session-end", {}))
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"label": "lab" + HOSTILE})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


def long_keys_trace(tmp_path: Path) -> Path:
    """Two sessions whose keys are 100,000 characters (a peer's Mcp-Session-Id)."""
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    pong = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode() + b"\n"
    records = []
    for n, key in enumerate(("a" * 100_000, "b" * 100_000)):
        records.append(FrameRecord(2 * n + 1, 1.0 + n, key, "c2s", "stdio", ping))
        records.append(FrameRecord(2 * n + 2, 1.5 + n, key, "s2c", "stdio", pong))
    path = tmp_path / "keys.jsonl"
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


def method_trace(tmp_path: Path, method: str) -> Path:
    """One request of ``method`` and its empty result, in session ``s1``, at ``t.jsonl``."""
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}) + "\n"
    records = [
        FrameRecord(1, 1767225600.0, "s1", "c2s", "stdio", request.encode()),
        FrameRecord(
            2, 1767225600.5, "s1", "s2c", "stdio", b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
        ),
    ]
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path
