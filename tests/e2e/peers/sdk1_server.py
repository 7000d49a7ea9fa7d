"""An MCP server built with the official Python SDK 1.x (FastMCP), over HTTP.

Run it with the SDK 1.x venv, never with mcpsniff's own interpreter::

    .peers/sdk1/bin/python tests/e2e/peers/sdk1_server.py PORT [--transport sse]
        [--declare-logging]

It serves Streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (``--transport
streamable-http``, the default) or the legacy HTTP+SSE transport at ``/sse`` and
``/messages/`` (``--transport sse``), on loopback only (FastMCP then turns on its
DNS rebinding protection, which accepts any ``127.0.0.1:*`` Host). SDK 1.x is
handshake era: a 2.x client's ``server/discover`` probe fails and the client
falls back to ``initialize``, settling on 2025-11-25 (the newest version 1.27.1
knows). Its tools mirror the names and arguments of server-everything's, like
``sdk2_server.py``'s, so ``sdk_client.py`` runs one plan against all of them.

Like SDK 2.x, FastMCP sends ``notifications/message`` from ``ctx.info()`` but
declares the ``logging`` capability only when a ``logging/setLevel`` handler is
registered, which FastMCP never does by itself; ``--declare-logging`` registers
one, for a fully conforming server.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TypedDict

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import LoggingLevel

server = FastMCP("mcpsniff-e2e-sdk1", instructions="mcpsniff end-to-end peer", log_level="WARNING")


class Weather(TypedDict):
    temperature: float
    conditions: str
    humidity: float


_WEATHER: dict[str, Weather] = {
    "New York": {"temperature": 33, "conditions": "Cloudy", "humidity": 82},
    "Chicago": {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82},
}


async def report_progress(ctx: Context, progress: float, total: float, message: str) -> None:
    """``ctx.report_progress``, but on the stream of the request it reports on.

    FastMCP 1.27.1's ``report_progress`` sends without a related request id, so the
    Streamable HTTP transport routes it to the standalone GET stream, and drops it
    when the client has not opened that stream yet: a race the client can lose.
    The transports spec says messages on the GET stream SHOULD be unrelated to any
    running request (2025-11-25 basic/transports.mdx § Listening for Messages).
    """
    meta = ctx.request_context.meta
    if meta is None or meta.progressToken is None:
        return
    await ctx.session.send_progress_notification(
        progress_token=meta.progressToken,
        progress=progress,
        total=total,
        message=message,
        related_request_id=ctx.request_id,
    )


@server.tool(name="echo", description="Echoes back the input string")
def echo(message: str) -> str:
    return f"Echo: {message}"


@server.tool(name="get-sum", description="Returns the sum of two numbers (structured)")
def get_sum(a: float, b: float) -> float:
    return a + b


@server.tool(name="get-structured-content", description="Weather as structured content")
def get_structured_content(location: str) -> Weather:
    return _WEATHER[location]


@server.tool(
    name="trigger-long-running-operation", description="Sleeps, reporting progress each step"
)
async def long_running(ctx: Context, duration: float = 1.0, steps: int = 5) -> str:
    for step in range(1, steps + 1):
        await asyncio.sleep(duration / steps)
        await report_progress(ctx, step, steps, f"step {step}")
    return f"Long running operation completed. Duration: {duration} seconds, Steps: {steps}."


@server.tool(name="toggle-simulated-logging", description="Sends one log message per level")
async def toggle_logging(ctx: Context) -> str:
    await ctx.debug("debug message", logger_name="e2e")
    await ctx.info("info message", logger_name="e2e")
    await ctx.warning("warning message", logger_name="e2e")
    return "logged 3 messages"


@server.resource("demo://e2e/readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return "mcpsniff end-to-end peer: a static text resource."


@server.resource("demo://e2e/items/{item_id}", name="item", mime_type="application/json")
def item(item_id: str) -> dict[str, str]:
    return {"id": item_id, "kind": "item"}


@server.prompt(name="simple-prompt", description="A prompt with no arguments")
def simple_prompt() -> str:
    return "This is a simple prompt without arguments."


@server.prompt(name="args-prompt", description="A prompt with one required argument")
def args_prompt(city: str, state: str = "") -> str:
    where = f"{city}, {state}" if state else city
    return f"What's weather in {where}?"


async def _set_level(level: LoggingLevel) -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument(
        "--transport", choices=["streamable-http", "sse"], default="streamable-http"
    )
    parser.add_argument("--declare-logging", action="store_true")
    ns = parser.parse_args()
    if ns.declare_logging:
        # FastMCP derives `logging` from this handler alone (no public API sets it).
        server._mcp_server.set_logging_level()(_set_level)
    server.settings.port = ns.port
    server.run(ns.transport)


if __name__ == "__main__":
    main()
