"""A small, conforming MCP server on stdio: the far end of ``mcpsniff demo``.

Run it with ``python -m mcpsniff.demo.server``. It reads newline-delimited
JSON-RPC from stdin, writes exactly one JSON message per line to stdout and
logs only to stderr, as the stdio transport requires. It exits with status 0
when stdin closes, which is how an MCP client shuts a stdio server down.

Two options reproduce classic server bugs so that tests can check that
mcpsniff notices them:

* ``--banner`` prints ``Loading model...`` to stdout before anything else,
  the stdout-pollution bug that breaks line-oriented clients.
* ``--string-ids`` echoes every response id as a string (``"1"`` for ``1``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpsniff import __version__
from mcpsniff.demo import wire
from mcpsniff.demo.content import PROMPTS, RESOURCES, TOOLS, argument_problem

#: Protocol versions this server speaks, newest first: the first is offered
#: when the client asks for one it does not know (lifecycle § Version Negotiation).
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

#: syslog severities in increasing order (server/utilities/logging).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# JSON-RPC 2.0 error codes, plus MCP's "resource not found".
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002

LOG_PREFIX = "demo server"

Message = dict[str, Any]


class RpcError(Exception):
    """Raised by a method handler to answer with a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(slots=True)
class ServerOptions:
    """Behaviour switches; the defaults give a conforming server."""

    banner: bool = False
    string_ids: bool = False
    #: Pause before each slow_count step, so progress is visibly spread out.
    step_delay: float = 0.02


class DemoServer:
    """The protocol logic, without I/O: lines in, messages out through ``emit``.

    ``emit`` receives every outgoing message (responses, progress and log
    notifications) in wire order, so tests can drive the server in-process.
    """

    def __init__(
        self,
        emit: Callable[[Any], None],
        options: ServerOptions | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.emit = emit
        self.options = options or ServerOptions()
        self.sleep = sleep
        self.version: str | None = None
        self.initialized = False
        self.log_level: str | None = None
        self._warned_early = False
        self._handlers: dict[str, Callable[[dict[str, Any]], Message]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/read": self._resources_read,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "logging/setLevel": self._set_level,
        }

    # ------------------------------------------------------------------ framing

    def handle_line(self, line: bytes) -> None:
        """Process one line read from stdin and emit whatever it calls for."""
        if not line.strip():
            return  # tolerate blank lines: they carry no message
        value = wire.decode(line)
        if value is wire.NOT_JSON:
            # JSON-RPC § 5: the id cannot be known, so it is null.
            wire.log(LOG_PREFIX, f"parse error on {wire.excerpt(line)!r}")
            self.emit(self._error_response(None, PARSE_ERROR, "Parse error"))
            return
        if isinstance(value, list):
            self._batch(value)
            return
        response = self.handle(value)
        if response is not None:
            self.emit(response)

    def _batch(self, items: list[Any]) -> None:
        # Batches exist only in 2025-03-26 (removed in 2025-06-18); a server
        # speaking another version treats the array as an invalid request.
        if not items or self.version != "2025-03-26":
            self.emit(self._error_response(None, INVALID_REQUEST, "Invalid Request"))
            return
        replies = [r for r in (self.handle(item) for item in items) if r is not None]
        if replies:  # a batch of notifications gets no reply at all (JSON-RPC § 6)
            self.emit(replies)

    # ------------------------------------------------------------------ dispatch

    def handle(self, message: Any) -> Message | None:
        """Process one decoded message; return its response, or None for a notification."""
        if not isinstance(message, dict) or message.get("jsonrpc") != wire.JSONRPC:
            return self._error_response(_readable_id(message), INVALID_REQUEST, "Invalid Request")
        if "method" not in message:
            if "result" in message or "error" in message:
                # This server never sends requests, so no response is awaited.
                wire.log(LOG_PREFIX, f"ignoring an unexpected response (id {message.get('id')!r})")
                return None
            return self._error_response(_readable_id(message), INVALID_REQUEST, "Invalid Request")
        method = message["method"]
        params = message.get("params", {})
        if "id" not in message:
            if isinstance(method, str) and isinstance(params, dict):
                self._notification(method, params)
            return None  # never answer a notification, not even a malformed one
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            # MCP ids are strings or integers and never null (basic § Requests).
            return self._error_response(None, INVALID_REQUEST, "Invalid Request")
        if not isinstance(method, str):
            return self._error_response(request_id, INVALID_REQUEST, "Invalid Request")
        handler = self._handlers.get(method)
        if handler is None:
            return self._error_response(
                request_id, METHOD_NOT_FOUND, "Method not found", {"method": method}
            )
        if not isinstance(params, dict):
            return self._error_response(request_id, INVALID_PARAMS, "params must be an object")
        self._note_early(method)
        try:
            result = handler(params)
        except RpcError as exc:
            return self._error_response(request_id, exc.code, exc.message, exc.data)
        return {"jsonrpc": wire.JSONRPC, "id": self._echo(request_id), "result": result}

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self.initialized = True
            wire.log(LOG_PREFIX, "client is initialized")
        elif method == "notifications/cancelled":
            # Requests are handled one at a time and answered before the next
            # line is read, so there is never anything in flight to stop.
            wire.log(LOG_PREFIX, f"client cancelled request {params.get('requestId')!r}")

    def _note_early(self, method: str) -> None:
        # Answer anyway (being lenient keeps the demo going) but say so: a
        # client that skips notifications/initialized is a real-world bug.
        if self.version is None or self.initialized or self._warned_early:
            return
        if method not in ("initialize", "ping"):
            self._warned_early = True
            wire.log(LOG_PREFIX, f"{method} arrived before notifications/initialized")

    def _echo(self, request_id: Any) -> Any:
        return str(request_id) if self.options.string_ids else request_id

    def _error_response(
        self, request_id: Any, code: int, message: str, data: Any = None
    ) -> Message:
        return {
            "jsonrpc": wire.JSONRPC,
            "id": None if request_id is None else self._echo(request_id),
            "error": wire.error_object(code, message, data),
        }

    # ------------------------------------------------------------------ lifecycle

    def _initialize(self, params: dict[str, Any]) -> Message:
        if self.version is not None:
            raise RpcError(INVALID_REQUEST, "initialize was already called in this session")
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
        self.version = version
        client = params.get("clientInfo")
        name = client.get("name") if isinstance(client, dict) else None
        wire.log(LOG_PREFIX, f"client {name!r} asked for {requested!r}; answering {version}")
        return {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
                "prompts": {"listChanged": False},
                "logging": {},
            },
            "serverInfo": {"name": "mcpsniff-demo-server", "version": __version__},
            "instructions": "A demo server: try the add, echo and slow_count tools.",
        }

    def _set_level(self, params: dict[str, Any]) -> Message:
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise RpcError(INVALID_PARAMS, "unknown log level", {"level": level})
        self.log_level = level
        return {}

    def _log(self, level: str, data: Any) -> None:
        # Before logging/setLevel the choice is the server's; this one stays
        # quiet until asked, and then sends only what the level admits.
        if self.log_level is None or LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params = {"level": level, "logger": "demo-server", "data": data}
        self.emit({"jsonrpc": wire.JSONRPC, "method": "notifications/message", "params": params})

    # ------------------------------------------------------------------ tools

    @property
    def _structured(self) -> bool:
        # outputSchema and structuredContent arrived in 2025-06-18.
        return self.version is None or self.version >= "2025-06-18"

    def _tools_list(self, params: dict[str, Any]) -> Message:
        _no_cursor(params)
        return {"tools": [t.describe(structured=self._structured) for t in TOOLS.values()]}

    def _tools_call(self, params: dict[str, Any]) -> Message:
        name = _string(params, "name", "tools/call needs a tool name")
        tool = TOOLS.get(name)
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}", {"tool": name})
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tool arguments must be an object")
        problem = argument_problem(tool.input_schema, arguments)
        self._log("info", {"tool": name, "arguments": arguments, "ok": problem is None})
        if problem is not None:
            # Bad arguments are a tool execution error the model can read and
            # correct, not a protocol error (server/tools § Error Handling).
            return {"content": [_text(f"{name}: {problem}")], "isError": True}
        if name == "add":
            total = arguments["a"] + arguments["b"]
            result: Message = {"content": [_text(json.dumps({"sum": total}))]}
            if self._structured:
                result["structuredContent"] = {"sum": total}
        elif name == "echo":
            result = {"content": [_text(arguments["text"])]}
        else:
            n = arguments["n"]
            self._count(n, _progress_token(params))
            result = {"content": [_text(f"counted to {n}")]}
        result["isError"] = False
        return result

    def _count(self, n: int, token: str | int | None) -> None:
        for step in range(1, n + 1):
            self.sleep(self.options.step_delay)
            if token is None:
                continue  # progress goes only to requests that asked for it
            progress: dict[str, Any] = {"progressToken": token, "progress": step, "total": n}
            if self.version != "2024-11-05":  # `message` arrived in 2025-03-26
                progress["message"] = f"counted {step} of {n}"
            self.emit(
                {"jsonrpc": wire.JSONRPC, "method": "notifications/progress", "params": progress}
            )

    # ------------------------------------------------------------------ resources and prompts

    def _resources_list(self, params: dict[str, Any]) -> Message:
        _no_cursor(params)
        return {"resources": [r.describe() for r in RESOURCES.values()]}

    def _resources_read(self, params: dict[str, Any]) -> Message:
        uri = _string(params, "uri", "resources/read needs a uri")
        resource = RESOURCES.get(uri)
        if resource is None:
            raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        return {"contents": [resource.contents()]}

    def _prompts_list(self, params: dict[str, Any]) -> Message:
        _no_cursor(params)
        return {"prompts": [p.describe() for p in PROMPTS.values()]}

    def _prompts_get(self, params: dict[str, Any]) -> Message:
        name = params.get("name")
        prompt = PROMPTS.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name}", {"prompt": name})
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict) or not all(
            isinstance(v, str) for v in arguments.values()
        ):
            raise RpcError(INVALID_PARAMS, "prompt arguments must be an object of strings")
        try:
            text = prompt.render(arguments)
        except ValueError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        return {
            "description": prompt.description,
            "messages": [{"role": "user", "content": _text(text)}],
        }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _string(params: dict[str, Any], key: str, needs: str) -> str:
    """``params[key]``, a string; else -32602 with ``needs`` as the message."""
    value = params.get(key)
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, needs)
    return value


def _no_cursor(params: dict[str, Any]) -> None:
    # Every list fits in one page, so no cursor was ever handed out.
    if "cursor" in params:
        raise RpcError(INVALID_PARAMS, "invalid cursor")


def _progress_token(params: dict[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, bool) or not isinstance(token, str | int):
        return None
    return token


def _readable_id(message: Any) -> Any:
    """The id of a malformed message if it can be read, else None (JSON-RPC § 5)."""
    if isinstance(message, dict):
        value = message.get("id")
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
    return None


# --------------------------------------------------------------------------- process


def parse_args(argv: list[str] | None) -> ServerOptions:
    """Turn command-line arguments into options."""
    parser = argparse.ArgumentParser(
        prog="python -m mcpsniff.demo.server", description="mcpsniff's demo MCP server (stdio)."
    )
    parser.add_argument(
        "--banner", action="store_true", help="print a log line to stdout first (a classic bug)"
    )
    parser.add_argument(
        "--string-ids", action="store_true", help="echo response ids as strings (a classic bug)"
    )
    args = parser.parse_args(argv)
    return ServerOptions(banner=args.banner, string_ids=args.string_ids)


def main(argv: list[str] | None = None) -> int:
    """Serve MCP on stdin/stdout until stdin closes; return the exit status."""
    options = parse_args(argv)
    out = sys.stdout.buffer
    if options.banner:
        out.write(b"Loading model...\n")
        out.flush()
    wire.log(LOG_PREFIX, f"started (pid {os.getpid()}), speaks {', '.join(SUPPORTED_VERSIONS)}")
    server = DemoServer(lambda message: wire.send(out, message), options)
    try:
        for line in sys.stdin.buffer:
            server.handle_line(line)
    except BrokenPipeError:
        # The client stopped reading. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again (Python docs, signal § SIGPIPE).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        wire.log(LOG_PREFIX, "stdout was closed by the client; exiting")
        return 1
    except KeyboardInterrupt:
        return 130
    wire.log(LOG_PREFIX, "stdin closed; exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
