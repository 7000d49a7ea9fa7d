"""Generate a large, realistic mcpsniff trace for the benchmarks.

The trace is *real*: a scripted stdio MCP conversation is fed, line by line, to a
``Session`` (the same sans-I/O core a live relay runs) and every record it returns
(frames, messages, the occasional finding, transport events) is written with
``TraceWriter``, exactly as ``TraceRecorder`` does for a live stdio relay.

The conversation:

* the ``initialize`` handshake (protocolVersion 2025-11-25; the server declares
  tools, resources, prompts and logging), ``notifications/initialized``;
* ``tools/list`` with five tools that have input schemas (one has an outputSchema);
* a steady state in which the client keeps up to ``in_flight`` requests outstanding
  and the server answers them in a shuffled order. By share of JSON-RPC messages:
  about 50% tools/call (arguments and results of about ``payload`` bytes),
  15% resources/read, 10% prompts/get, 10% server progress notifications for
  calls that carry a progressToken, 5% notifications/message, 5% ping and 5%
  tools/list plus resources/list. Rarely: a client cancellation (answered late
  or dropped), a tool error result, a JSON-RPC error, a stderr line, and a tool
  call whose arguments break the schema (a real TOOL-ARGS-SCHEMA finding);
* around it, the transport events ``mcpsniff stdio`` records: ``session-start``,
  ``spawned``, the odd ``stderr`` line, ``exit``, then end of file on both pipes
  and ``Session.close`` (the ``session-end`` event), as ``TraceRecorder.close`` does.

Everything is driven by ``random.Random(seed)``, timestamps included, so one
``(messages, in_flight, payload, seed)`` always yields the same conversation
(and, with the same core, the same bytes).

Usage::

    python benchmarks/gen_trace.py OUT.jsonl --messages 1000000
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.model import C2S, S2C, FindingRecord, Record
from mcpsniff.core.session import Session
from mcpsniff.trace.writer import TraceWriter

#: Where the benchmarks keep generated traces (gitignored).
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
#: Bump when the generated conversation changes, so cached traces are regenerated.
GENERATOR_VERSION = 2
PROTOCOL_VERSION = "2025-11-25"
#: The session key and command line the stdio relay (``mcpsniff stdio -- COMMAND``) records.
SESSION = "stdio"
COMMAND = ["bench-mcp-server", "--stdio"]
#: Trace timestamps start here (2023-11-14T22:13:20Z) and only move forward.
T0 = 1_700_000_000.0

# Share of JSON-RPC messages per kind of traffic (percent). A request method's
# share covers its request *and* its response.
REQUEST_SHARES: dict[str, float] = {
    "tools/call": 50.0,
    "resources/read": 15.0,
    "prompts/get": 10.0,
    "ping": 5.0,
    "tools/list": 2.5,
    "resources/list": 2.5,
}
PROGRESS_SHARE = 10.0
LOG_SHARE = 5.0

#: Per client turn: probability of cancelling an outstanding request.
CANCEL_RATE = 0.002
#: Per tool call: probability that the arguments break the tool's inputSchema.
BAD_ARGS_RATE = 0.001
#: Per tool call result: probability of ``isError: true``.
TOOL_ERROR_RATE = 0.01
#: Per resources/read: probability of a "resource not found" JSON-RPC error.
READ_ERROR_RATE = 0.01
#: Per step: probability of the server writing a line to stderr (a transport event).
STDERR_RATE = 0.001
#: Per tools/call: probability that it carries a progressToken.
PROGRESS_TOKEN_RATE = 0.5

_WORD_TEXT = (
    "the of and to in is that for it as with was on be by this are at from or an which "
    "request response server client tool resource prompt schema session message result "
    "value error index cache buffer stream token offset window latency record frame "
    "parse encode decode validate handler context payload timeout retry async await "
    "func return import class yield lambda None True False self data file path line "
    "über café naïve résumé 数据 ✓"
)
_WORDS = tuple(_WORD_TEXT.split())
_WORDS_WITH_BREAKS = (*_WORDS, *_WORDS, "\n", "\t", '"quoted"', "C:\\temp")

_LOG_LEVELS = ("debug", "info", "info", "info", "notice", "warning", "error")


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_files",
        "title": "Search files",
        "description": "Search the workspace for files whose contents match a query.",
        "inputSchema": _object(
            {
                "query": {"type": "string", "minLength": 1},
                "paths": {"type": "array", "items": {"type": "string"}, "maxItems": 500},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 1000},
                "case_sensitive": {"type": "boolean"},
            },
            ["query"],
        ),
    },
    {
        "name": "write_file",
        "title": "Write a file",
        "description": "Write text to a file in the workspace.",
        "inputSchema": _object(
            {
                "path": {"type": "string"},
                "content": {"type": "string"},
                "mode": {"enum": ["overwrite", "append"]},
            },
            ["path", "content"],
        ),
    },
    {
        "name": "run_query",
        "title": "Run SQL",
        "description": "Run a read-only SQL query against the project database.",
        "inputSchema": _object(
            {
                "sql": {"type": "string"},
                "params": {"type": "array", "items": {"type": ["string", "number", "null"]}},
                "timeout_ms": {"type": "integer", "minimum": 0},
            },
            ["sql"],
        ),
    },
    {
        "name": "fetch_url",
        "title": "Fetch a URL",
        "description": "Fetch a web page and return it as text.",
        "inputSchema": _object(
            {
                "url": {"type": "string", "format": "uri"},
                "method": {"enum": ["GET", "HEAD"]},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            ["url"],
        ),
    },
    {
        "name": "summarize",
        "title": "Summarize text",
        "description": "Summarize a text and extract its keywords.",
        "inputSchema": _object(
            {"text": {"type": "string"}, "max_words": {"type": "integer", "minimum": 1}},
            ["text"],
        ),
        "outputSchema": _object(
            {
                "summary": {"type": "string"},
                "word_count": {"type": "integer", "minimum": 0},
                "keywords": {"type": "array", "items": {"type": "string"}},
            },
            ["summary", "word_count"],
        ),
    },
]
TOOL_NAMES = [tool["name"] for tool in TOOLS]

RESOURCES: list[dict[str, Any]] = [
    {
        "uri": f"file:///workspace/src/module_{i:03d}.py",
        "name": f"module_{i:03d}.py",
        "mimeType": "text/x-python",
    }
    for i in range(24)
]


@dataclass(slots=True)
class Outstanding:
    """A client request the server has not answered yet."""

    id: int
    method: str
    params: dict[str, Any]
    token: int | None = None
    progress_steps: int = 0
    cancelled: bool = False


@dataclass
class GenStats:
    """What ``generate`` wrote."""

    path: Path
    messages: int = 0
    frames: int = 0
    events: int = 0
    records: int = 0
    findings: int = 0
    bytes: int = 0
    seconds: float = 0.0
    methods: dict[str, int] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """A human-readable summary of the generated trace."""
        lines = [
            f"{self.path}: {self.messages:,} messages, {self.frames:,} frames, "
            f"{self.events:,} events, {self.records:,} records, {self.findings:,} findings, "
            f"{self.bytes / 1e6:,.1f} MB in {self.seconds:,.1f} s "
            f"({self.messages / max(self.seconds, 1e-9):,.0f} messages/s)",
        ]
        total = max(self.messages, 1)
        for name, count in sorted(self.methods.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:<36} {count:>10,}  {100.0 * count / total:5.1f}%")
        for rule, count in sorted(self.rules.items()):
            lines.append(f"  finding {rule:<28} {count:>10,}")
        return "\n".join(lines)


class Conversation:
    """Plays both MCP peers and records what a stdio relay between them would write."""

    def __init__(
        self, writer: TraceWriter, messages: int, in_flight: int, payload: int, seed: int
    ) -> None:
        self.writer = writer
        self.session = Session(SESSION, "stdio")
        self.rng = random.Random(seed)
        self.limit = messages
        self.in_flight = in_flight
        self.payload = payload
        self.t = T0
        self.next_id = 1
        self.outstanding: dict[int, Outstanding] = {}
        self.order: list[int] = []  # outstanding ids, for O(1) random picks
        self.stats = GenStats(Path(writer.path or ""))
        methods = list(REQUEST_SHARES)
        # A request costs two messages (request + response), so its weight per
        # client turn is half its share of messages.
        self.request_methods = methods
        self.request_weights = [REQUEST_SHARES[m] / 2.0 for m in methods]
        requests = sum(self.request_weights)
        # Per server turn: answer one request, or send a notification.
        self.server_actions = ("answer", "progress", "log")
        self.server_weights = [requests, PROGRESS_SHARE, LOG_SHARE]

    # ----------------------------------------------------------------- plumbing

    def _tick(self) -> None:
        self.t = round(self.t + 0.0002 + self.rng.random() * 0.002, 6)

    def _write(self, records: list[Record]) -> None:
        stats = self.stats
        for record in records:
            self.writer.write(record)
            if isinstance(record, FindingRecord):
                stats.findings += 1
                stats.rules[record.rule] = stats.rules.get(record.rule, 0) + 1
        stats.records += len(records)

    def send(self, direction: str, message: dict[str, Any], label: str) -> None:
        """One JSON-RPC message on the wire in ``direction``, seen by the relay."""
        line = orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        self._tick()
        self._write(self.session.feed(direction, "stdio", line, self.t))
        stats = self.stats
        stats.messages += 1
        stats.frames += 1
        stats.methods[label] = stats.methods.get(label, 0) + 1

    def event(self, name: str, data: dict[str, Any]) -> None:
        """A transport event the relay records (not a message)."""
        self._tick()
        self._write(self.session.event(name, self.t, data))
        self.stats.events += 1

    def stderr(self, text: str) -> None:
        """A line the server wrote to stderr."""
        self.event("stderr", {"line": text})

    def text(self, size: int) -> str:
        """About ``size`` characters of prose with the odd escape and non-ASCII word."""
        words = self.rng.choices(_WORDS_WITH_BREAKS, k=max(1, size // 5))
        return " ".join(words)[:size]

    # ----------------------------------------------------------------- client side

    def request(self, method: str, params: dict[str, Any], token: int | None = None) -> int:
        """The client sends a request and remembers it as outstanding."""
        rid = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params:
            message["params"] = params
        self.send(C2S, message, method)
        self.outstanding[rid] = Outstanding(rid, method, params, token)
        self.order.append(rid)
        return rid

    def client_turn(self) -> None:
        """Send one request of the steady-state mix."""
        rng = self.rng
        method = rng.choices(self.request_methods, self.request_weights)[0]
        if method == "tools/call":
            name = rng.choice(TOOL_NAMES)
            params: dict[str, Any] = {"name": name, "arguments": self.arguments(name)}
            token = None
            if rng.random() < PROGRESS_TOKEN_RATE:
                token = self.next_id
                params["_meta"] = {"progressToken": token}
            self.request(method, params, token)
        elif method == "resources/read":
            self.request(method, {"uri": rng.choice(RESOURCES)["uri"]})
        elif method == "prompts/get":
            arguments = {"language": rng.choice(("python", "rust", "go")), "focus": self.text(80)}
            self.request(method, {"name": "code_review", "arguments": arguments})
        else:  # ping, tools/list, resources/list
            self.request(method, {})

    def arguments(self, tool: str) -> dict[str, Any]:
        """Arguments of about ``payload`` bytes; rarely (``BAD_ARGS_RATE``) invalid."""
        args = self.valid_arguments(tool)
        if self.rng.random() < BAD_ARGS_RATE:
            # Classic model mistakes: a number sent as a string, a required field missing.
            key = next((k for k, v in args.items() if isinstance(v, int)), None)
            if key is not None:
                args[key] = str(args[key])
            else:
                args.pop(next(iter(args)))
        return args

    def valid_arguments(self, tool: str) -> dict[str, Any]:
        """Arguments of about ``payload`` bytes, valid against the tool's inputSchema."""
        rng = self.rng
        size = self.payload
        if tool == "search_files":
            count = max(1, size // 40)
            paths = [
                f"/workspace/src/pkg_{rng.randrange(100)}/mod_{i:04d}.py" for i in range(count)
            ]
            args: dict[str, Any] = {
                "query": self.text(24) or "x",
                "paths": paths,
                "max_results": rng.randrange(1, 1001),
                "case_sensitive": rng.random() < 0.5,
            }
            return args
        if tool == "write_file":
            return {
                "path": f"/workspace/notes/{rng.randrange(10_000)}.md",
                "content": self.text(size),
                "mode": rng.choice(("overwrite", "append")),
            }
        if tool == "run_query":
            return {
                "sql": "SELECT * FROM events WHERE note = ? -- " + self.text(size - 40),
                "params": [self.text(10), rng.randrange(1000), None],
                "timeout_ms": 5000,
            }
        if tool == "fetch_url":
            headers = {f"X-Header-{i}": self.text(40) for i in range(max(1, size // 60))}
            return {"url": f"https://example.com/page/{rng.randrange(10_000)}", "headers": headers}
        return {"text": self.text(size), "max_words": rng.randrange(10, 200)}

    def cancel(self) -> None:
        """The client gives up on a random outstanding request."""
        rid = self.order[self.rng.randrange(len(self.order))]
        pending = self.outstanding[rid]
        if pending.cancelled:
            self.client_turn()  # cancel each request at most once
            return
        params = {"requestId": rid, "reason": "user cancelled"}
        self.send(
            C2S,
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params},
            "notifications/cancelled",
        )
        if self.rng.random() < 0.5:
            pending.cancelled = True  # the server answers anyway: an allowed race
        else:
            self._forget(rid)

    # ----------------------------------------------------------------- server side

    def _forget(self, rid: int) -> Outstanding:
        order = self.order
        i = order.index(rid)
        order[i] = order[-1]
        order.pop()
        return self.outstanding.pop(rid)

    def answer_random(self) -> None:
        """The server answers one outstanding request, chosen at random."""
        order = self.order
        i = self.rng.randrange(len(order))
        rid = order[i]
        order[i] = order[-1]
        order.pop()
        self.answer(self.outstanding.pop(rid))

    def answer(self, req: Outstanding) -> None:
        """The server's response to ``req``."""
        rng = self.rng
        method = req.method
        label = f"{method} (response)"
        result: dict[str, Any]
        if method == "tools/call":
            name = req.params["name"]
            if rng.random() < TOOL_ERROR_RATE:
                result = {
                    "content": [{"type": "text", "text": "tool failed: " + self.text(200)}],
                    "isError": True,
                }
            elif name == "summarize":
                structured = {
                    "summary": self.text(self.payload // 2),
                    "word_count": rng.randrange(10, 500),
                    "keywords": rng.sample(_WORDS, 6),
                }
                text = orjson.dumps(structured).decode()
                result = {
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": structured,
                }
            else:
                result = {"content": [{"type": "text", "text": self.text(self.payload)}]}
        elif method == "resources/read":
            uri = req.params["uri"]
            if rng.random() < READ_ERROR_RATE:
                error = {"code": -32002, "message": "Resource not found", "data": {"uri": uri}}
                self.send(S2C, {"jsonrpc": "2.0", "id": req.id, "error": error}, label)
                return
            content = {"uri": uri, "mimeType": "text/x-python", "text": self.text(self.payload)}
            result = {"contents": [content]}
        elif method == "prompts/get":
            message = {"role": "user", "content": {"type": "text", "text": self.text(self.payload)}}
            result = {"description": "Review code for problems", "messages": [message]}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "resources/list":
            result = {"resources": RESOURCES}
        else:  # ping
            result = {}
        self.send(S2C, {"jsonrpc": "2.0", "id": req.id, "result": result}, label)

    def progress(self) -> bool:
        """Progress for a random outstanding call with a token; False when there is none."""
        order = self.order
        rng = self.rng
        for _ in range(8):
            req = self.outstanding[order[rng.randrange(len(order))]]
            if req.token is None or req.cancelled or req.progress_steps >= 40:
                continue
            req.progress_steps += 1
            params = {
                "progressToken": req.token,
                # Strictly increasing and always below the total.
                "progress": 100.0 - 100.0 / 2.0**req.progress_steps,
                "total": 100,
                "message": f"step {req.progress_steps}",
            }
            self.send(
                S2C,
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": params},
                "notifications/progress",
            )
            return True
        return False

    def log(self) -> None:
        """A ``notifications/message`` log line from the server."""
        rng = self.rng
        params = {
            "level": rng.choice(_LOG_LEVELS),
            "logger": "bench-server",
            "data": {"event": self.text(60), "pending": len(self.order)},
        }
        self.send(
            S2C,
            {"jsonrpc": "2.0", "method": "notifications/message", "params": params},
            "notifications/message",
        )

    # ----------------------------------------------------------------- script

    def handshake(self) -> None:
        """initialize, its result, initialized, then tools/list."""
        init = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}},
                "clientInfo": {"name": "bench-client", "version": "1.0.0"},
            },
        )
        self._forget(init)
        result = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {
                "tools": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": True},
                "logging": {},
            },
            "serverInfo": {"name": "bench-server", "version": "1.0.0"},
            "instructions": "A synthetic server for mcpsniff benchmarks.",
        }
        self.send(S2C, {"jsonrpc": "2.0", "id": init, "result": result}, "initialize (response)")
        self.send(
            C2S,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            "notifications/initialized",
        )
        tools = self.request("tools/list", {})
        self.answer(self._forget(tools))

    def run(self) -> None:
        """Play the whole conversation, exactly ``messages`` JSON-RPC messages long."""
        # The events ``mcpsniff stdio`` records around the child process.
        self.event("session-start", {"command": COMMAND, "transport": "stdio", "pid": 4242})
        self.event("spawned", {"child_pid": 4243, "argv0": "/usr/local/bin/" + COMMAND[0]})
        if self.limit >= 6:
            self.handshake()
        rng = self.rng
        stats = self.stats
        while stats.messages < self.limit:
            # Messages we may still send beyond the responses already owed.
            slack = self.limit - stats.messages - len(self.order)
            if slack <= 0:
                break
            if rng.random() < STDERR_RATE:
                self.stderr(f"INFO bench-server: {len(self.order)} requests pending")
            if len(self.order) < self.in_flight and slack >= 2:
                if self.order and rng.random() < CANCEL_RATE:
                    self.cancel()
                else:
                    self.client_turn()
                continue
            if not self.order:
                self.log()  # one message left and nothing to answer
                continue
            action = rng.choices(self.server_actions, self.server_weights)[0]
            if action == "answer":
                self.answer_random()
            elif action == "progress":
                if not self.progress():
                    self.answer_random()
            else:
                self.log()
        while self.order:
            self.answer_random()
        # The client closes the server's stdin, the server exits, the relay ends the session.
        self._tick()
        self._write(self.session.eof(C2S, self.t))
        self._write(self.session.eof(S2C, self.t))
        self.event("exit", {"returncode": 0, "status": 0})
        self._tick()
        self._write(self.session.close(self.t))
        self.stats.events += 1


def generate(
    path: str | os.PathLike[str],
    messages: int,
    in_flight: int = 16,
    payload: int = 1024,
    seed: int = 0,
) -> GenStats:
    """Write a trace of ``messages`` JSON-RPC messages to ``path`` (overwriting it)."""
    if in_flight < 1:
        raise ValueError("in_flight must be at least 1")
    started = time.perf_counter()
    meta = {
        "source": "mcpsniff stdio",
        "command": COMMAND,
        "label": COMMAND[0],
        "redacted": False,
        "generator": "benchmarks/gen_trace.py",
        "generator_version": GENERATOR_VERSION,
        "messages": messages,
        "in_flight": in_flight,
        "payload": payload,
        "seed": seed,
    }
    writer = TraceWriter.create(path, meta=meta, created=T0, overwrite=True)
    conversation = Conversation(writer, messages, in_flight, payload, seed)
    try:
        conversation.run()
    finally:
        writer.close()
    if writer.failed is not None:
        raise writer.failed
    stats = conversation.stats
    stats.path = Path(path)
    stats.seconds = time.perf_counter() - started
    stats.bytes = os.path.getsize(path)
    return stats


def cached_trace(
    messages: int,
    in_flight: int = 16,
    payload: int = 1024,
    seed: int = 0,
    cache_dir: Path = CACHE_DIR,
    *,
    quiet: bool = False,
) -> Path:
    """The trace for these parameters from ``cache_dir``, generated on first use.

    The file is written under a temporary name and renamed when complete, so an
    interrupted run never leaves a truncated trace in the cache.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    name = f"trace-n{messages}-f{in_flight}-p{payload}-s{seed}-g{GENERATOR_VERSION}.jsonl"
    path = cache_dir / name
    if path.exists():
        return path
    partial = cache_dir / f".{name}.{os.getpid()}.partial"
    if not quiet:
        print(f"generating {path} ({messages:,} messages) ...", file=sys.stderr, flush=True)
    try:
        stats = generate(partial, messages, in_flight, payload, seed)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    if not quiet:
        stats.path = path
        print(stats.summary(), file=sys.stderr, flush=True)
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python benchmarks/gen_trace.py OUT --messages N``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="trace file to write (overwritten)")
    parser.add_argument("--messages", type=int, default=1_000_000, help="JSON-RPC messages")
    parser.add_argument("--in-flight", type=int, default=16, help="max outstanding requests")
    parser.add_argument("--payload", type=int, default=1024, help="payload size in bytes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    stats = generate(args.out, args.messages, args.in_flight, args.payload, args.seed)
    print(stats.summary(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
