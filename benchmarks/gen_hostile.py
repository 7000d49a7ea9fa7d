"""Traces a hostile peer can produce cheaply: one huge batch, or very many sessions.

``batch_trace(path, elements)``: a 2025-03-26 session (batches allowed) whose
client sends one batch of ``elements`` ``tools/call`` requests and whose server
answers with one batch of as many results; written as a relay writes it (frames,
messages, findings), so the readers see what they would see in a recording.

``sessions_trace(path, count)``: ``count`` sessions of one ping each, frames
only (as a trace cut by hand), which the readers analyze themselves.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord
from mcpsniff.trace.writer import TraceWriter

VERSION = "2025-03-26"


def _line(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def batch_trace(path: Path, elements: int) -> Path:
    """Write the one-big-batch trace of ``elements`` requests (and results) to ``path``."""
    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "c"}},
    }
    reply = {
        "jsonrpc": "2.0",
        "id": "init",
        "result": {
            "protocolVersion": VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
        },
    }
    calls = [
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"element {i}"}},
        }
        for i in range(elements)
    ]
    results = [
        {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"r{i}"}]}}
        for i in range(elements)
    ]
    frames = [
        ("c2s", _line(init)),
        ("s2c", _line(reply)),
        ("c2s", _line({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        ("c2s", _line(calls)),
        ("s2c", _line(results)),
    ]
    records = [
        FrameRecord(n + 1, 1767225600.0 + n, "batch", d, "stdio", raw)
        for n, (d, raw) in enumerate(frames)
    ]
    writer = TraceWriter.create(path, meta={"source": "benchmarks/gen_hostile.py"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


def sessions_trace(path: Path, count: int) -> Path:
    """Write ``count`` one-ping sessions, frames only, to ``path``."""
    ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            '{"type":"header","format":"mcpsniff-trace","version":2,"tool":"t","meta":{}}\n'
        )
        for i in range(count):
            frame = {
                "type": "frame",
                "seq": i + 1,
                "t": 1.0 + i,
                "session": f"s{i}",
                "dir": "c2s",
                "transport": "stdio",
                "text": ping,
            }
            handle.write(json.dumps(frame) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--batch", type=int, metavar="ELEMENTS")
    what.add_argument("--sessions", type=int, metavar="COUNT")
    args = parser.parse_args()
    if args.batch is not None:
        batch_trace(args.out, args.batch)
    else:
        sessions_trace(args.out, args.sessions)


if __name__ == "__main__":
    main()
