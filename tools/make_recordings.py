"""Regenerate the bug gallery in recordings/ from scripted stdio byte streams.

Each scenario is the exact byte stream a real client and server would put on
the wire, fed through the live analyzer and written as a trace, with fixed
timestamps so the files are reproducible. ``tests/test_recordings.py``
checks what ``mcpsniff check`` reports for each.

Usage: python tools/make_recordings.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.session import Session
from mcpsniff.trace.writer import TraceWriter

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: fixed, so traces are reproducible
V4 = "2025-11-25"
V5 = "2026-07-28"

Step = tuple[str, bytes]


def line(obj: Any) -> bytes:
    """One NDJSON line as a well-behaved peer writes it."""
    return orjson.dumps(obj) + b"\n"


def req(id_: Any, method: str, params: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        obj["params"] = params
    return obj


def note(method: str, params: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        obj["params"] = params
    return obj


def ok(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def handshake(version: str = V4, *, initialized: bool = True) -> list[Step]:
    steps: list[Step] = [
        (
            "c2s",
            line(
                req(
                    0,
                    "initialize",
                    {
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": {"name": "gallery-client", "version": "1.0"},
                    },
                )
            ),
        ),
        (
            "s2c",
            line(
                ok(
                    0,
                    {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}, "logging": {}},
                        "serverInfo": {"name": "gallery-server", "version": "1.0"},
                    },
                )
            ),
        ),
    ]
    if initialized:
        steps.append(("c2s", line(note("notifications/initialized"))))
    return steps


ADD_TOOL = {
    "name": "add",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def tools_round(id_: int) -> list[Step]:
    return [
        ("c2s", line(req(id_, "tools/list"))),
        ("s2c", line(ok(id_, {"tools": [ADD_TOOL]}))),
        ("c2s", line(req(id_ + 1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))),
        ("s2c", line(ok(id_ + 1, {"content": [{"type": "text", "text": "5"}]}))),
    ]


def v5_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V5,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "gallery-client", "version": "1.0"},
    }


def v5_result(value: dict[str, Any]) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "gallery-server", "version": "1.0"}}
    return {"resultType": "complete", "_meta": meta, **value}


@dataclass
class Scenario:
    name: str
    description: str
    steps: Callable[[], list[Step]]


def pretty_tools_round(id_: int) -> list[Step]:
    """A tools/list answered with an indented (multi-line) JSON response, then a call."""
    body = json.dumps(ok(id_, {"tools": [ADD_TOOL]}), indent=2).encode() + b"\n"
    return [
        ("c2s", line(req(id_, "tools/list"))),
        ("s2c", body),
        ("c2s", line(req(id_ + 1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))),
        ("s2c", line(ok(id_ + 1, {"content": [{"type": "text", "text": "5"}]}))),
    ]


SCENARIOS = [
    Scenario(
        "stdout-pollution",
        "a server prints a banner on stdout before its first response",
        lambda: [
            ("s2c", b"Loading model...\n"),
            *handshake(),
            *tools_round(1),
        ],
    ),
    Scenario(
        "missing-initialized",
        "the client never sends notifications/initialized",
        lambda: [*handshake(initialized=False), *tools_round(1)],
    ),
    Scenario(
        "out-of-order-batch",
        "a 2025-03-26 server answers a batch in a different order (legal)",
        lambda: [
            *handshake("2025-03-26"),
            (
                "c2s",
                line(
                    [
                        req(1, "tools/list"),
                        req(2, "ping"),
                        req(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}),
                    ]
                ),
            ),
            (
                "s2c",
                line(
                    [
                        ok(3, {"content": [{"type": "text", "text": "2"}]}),
                        ok(1, {"tools": [ADD_TOOL]}),
                        ok(2, {}),
                    ]
                ),
            ),
        ],
    ),
    Scenario(
        "string-id-echo",
        'a server echoes the numeric id 1 as the string "1"',
        lambda: [
            *handshake(),
            ("c2s", line(req(1, "tools/list"))),
            ("s2c", line(ok("1", {"tools": [ADD_TOOL]}))),
        ],
    ),
    Scenario(
        "orphan-response",
        "a server sends a response to an id the client never used",
        lambda: [*handshake(), ("s2c", line(ok(42, {"content": []}))), *tools_round(1)],
    ),
    Scenario(
        "unanswered-request",
        "a tools/call is never answered before the session ends",
        lambda: [
            *handshake(),
            *tools_round(1),
            ("c2s", line(req(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))),
        ],
    ),
    Scenario(
        "empty-batch",
        "a client sends an empty batch `[]`, the server answers -32600",
        lambda: [
            *handshake("2025-03-26"),
            ("c2s", b"[]\n"),
            (
                "s2c",
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": -32600, "message": "Invalid Request"},
                    }
                ),
            ),
        ],
    ),
    Scenario(
        "trailing-comma",
        "a hand-written client message has a trailing comma; the server answers -32700",
        lambda: [
            *handshake(),
            ("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{},}\n'),
            (
                "s2c",
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": -32700, "message": "Parse error"},
                    }
                ),
            ),
        ],
    ),
    Scenario(
        "clean-2025-11-25",
        "a clean handshake-era session: initialize, tools, progress, logging, ping",
        lambda: [
            *handshake(),
            *tools_round(1),
            (
                "c2s",
                line(
                    req(
                        3,
                        "tools/call",
                        {
                            "name": "add",
                            "arguments": {"a": 5, "b": 5},
                            "_meta": {"progressToken": 7},
                        },
                    )
                ),
            ),
            ("s2c", line(note("notifications/progress", {"progressToken": 7, "progress": 1}))),
            (
                "s2c",
                line(note("notifications/message", {"level": "info", "data": "adding 5 and 5"})),
            ),
            ("s2c", line(note("notifications/progress", {"progressToken": 7, "progress": 2}))),
            ("s2c", line(ok(3, {"content": [{"type": "text", "text": "10"}]}))),
            ("c2s", line(req(4, "ping"))),
            ("s2c", line(ok(4, {}))),
        ],
    ),
    Scenario(
        "clean-2026-07-28",
        "a clean stateless session: server/discover, tools/list, tools/call with _meta",
        lambda: [
            ("c2s", line(req(1, "server/discover", {"_meta": v5_meta()}))),
            (
                "s2c",
                line(
                    ok(
                        1,
                        v5_result(
                            {
                                "supportedVersions": [V5],
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "gallery-server", "version": "1.0"},
                                "ttlMs": 60000,
                                "cacheScope": "public",
                            }
                        ),
                    )
                ),
            ),
            ("c2s", line(req(2, "tools/list", {"_meta": v5_meta()}))),
            (
                "s2c",
                line(
                    ok(2, v5_result({"tools": [ADD_TOOL], "ttlMs": 60000, "cacheScope": "public"}))
                ),
            ),
            (
                "c2s",
                line(
                    req(
                        3,
                        "tools/call",
                        {"name": "add", "arguments": {"a": 2, "b": 2}, "_meta": v5_meta()},
                    )
                ),
            ),
            ("s2c", line(ok(3, v5_result({"content": [{"type": "text", "text": "4"}]})))),
        ],
    ),
    Scenario(
        "pretty-printed-response",
        "a server pretty-prints its tools/list response over many lines",
        lambda: [*handshake(), *pretty_tools_round(1)],
    ),
]


def record(scenario: Scenario, path: Path) -> None:
    """Write ``scenario`` as a trace at ``path`` (replacing an older copy)."""
    session = Session(scenario.name, "stdio")
    writer = TraceWriter.create(
        path,
        meta={"source": "tools/make_recordings.py", "scenario": scenario.description},
        created=START,
        overwrite=True,
    )
    t = START
    writer.write_all(session.event("session-start", t, {"transport": "stdio"}))
    for direction, data in scenario.steps():
        t += 0.0125
        writer.write_all(session.feed(direction, "stdio", data, t))
    writer.write_all(session.close(t + 0.5))
    writer.close()


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "recordings"
    out.mkdir(exist_ok=True)
    for scenario in SCENARIOS:
        record(scenario, out / f"{scenario.name}.jsonl")
        print(f"wrote {out / (scenario.name + '.jsonl')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
