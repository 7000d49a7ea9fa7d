"""An MCP client of the official Python SDK (1.x or 2.x) that reports how each tool call went.

Run it with an SDK venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/e2e/peers/fault_client.py --calls 3 --timeout 2 -- SERVER...
    .peers/sdk1/bin/python tests/e2e/peers/fault_client.py --url http://127.0.0.1:PORT/mcp

It starts SERVER over stdio (or connects to ``--url`` over Streamable HTTP),
runs the handshake, then calls the ``echo`` tool ``--calls`` times one after
another, each with a read timeout of ``--timeout`` seconds, and prints one
JSON object: the initialize outcome and, per call, the wall time in
milliseconds and what came back (``ok`` with the text,
``error`` with the JSON-RPC code, ``tool-error`` with the text, ``timeout``,
or ``failed`` with the exception type); ``crashed`` names the exception when the
SDK itself gave way. The fault injection tests judge a client's resilience from
that and from the trace.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from importlib.metadata import version
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:
    from mcp.client.streamable_http import streamablehttp_client as http_client
except ImportError:  # SDK 2.x
    from mcp.client.streamable_http import streamable_http_client as http_client

try:  # SDK 2.x
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # SDK 1.x
    from mcp.shared.exceptions import McpError  # type: ignore[no-redef]

MAJOR = int(version("mcp").split(".")[0])
#: Seconds the handshake may take (a Node server takes a while to start).
INIT_TIMEOUT = 30.0


def _timeout(seconds: float) -> Any:
    return seconds if MAJOR >= 2 else datetime.timedelta(seconds=seconds)


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in getattr(result, "content", []))


async def _call(session: ClientSession, number: int, timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    outcome: dict[str, Any]
    try:
        result = await session.call_tool(
            "echo", {"message": f"call {number}"}, read_timeout_seconds=_timeout(timeout)
        )
        failed = getattr(result, "is_error", None) or getattr(result, "isError", False)
        kind = "tool-error" if failed else "ok"
        outcome = {"outcome": kind, "text": _text(result)}
    except McpError as exc:
        error = getattr(exc, "error", None)
        code = getattr(error, "code", None)
        message = str(getattr(error, "message", exc))
        kind = "timeout" if code == 408 or "timed out" in message.lower() else "error"
        outcome = {"outcome": kind, "code": code, "message": message}
    except Exception as exc:
        outcome = {"outcome": "failed", "type": type(exc).__name__}
    outcome["ms"] = round((time.monotonic() - started) * 1000, 1)
    return outcome


def _transport(command: list[str], url: str | None) -> Any:
    if url is not None:
        return http_client(url)
    return stdio_client(StdioServerParameters(command=command[0], args=command[1:]))


async def run(
    command: list[str], calls: int, timeout: float, url: str | None = None
) -> dict[str, Any]:
    report: dict[str, Any] = {"sdk": MAJOR, "calls": []}
    async with (
        _transport(command, url) as streams,
        ClientSession(
            streams[0], streams[1], read_timeout_seconds=_timeout(INIT_TIMEOUT)
        ) as session,
    ):
        try:
            await session.initialize()
            report["initialize"] = "ok"
        except Exception as exc:
            report["initialize"] = type(exc).__name__
            return report
        for number in range(calls):
            report["calls"].append(await _call(session, number, timeout))
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--url", help="connect over Streamable HTTP instead of a command")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    try:
        report = anyio.run(run, command, ns.calls, ns.timeout, ns.url)
    except BaseException as exc:  # the SDK itself gave way: that is the finding
        inner = exc
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        report = {"sdk": MAJOR, "calls": [], "crashed": type(inner).__name__}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
