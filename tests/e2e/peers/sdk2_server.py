"""An MCP server built with the official Python SDK 2.x, run over stdio.

Run it with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/e2e/peers/sdk2_server.py

A 2.x client negotiates protocol version 2026-07-28 with it (``server/discover``,
then stateless requests that carry their version in ``_meta``). Its tools mirror
the names and arguments of server-everything's, so ``sdk_client.py`` runs one
plan against both servers.

As shipped, SDK 2.3.0's MCPServer sends ``notifications/message`` from
``ctx.log()`` but declares the ``logging`` capability only when a
``logging/setLevel`` handler is registered, which MCPServer never does: it breaks
"Servers that emit log message notifications MUST declare the logging capability"
(server/utilities/logging.mdx, every version including 2026-07-28). This peer
keeps that default so the end-to-end tests show mcpsniff reporting it;
``--declare-logging`` registers a no-op ``logging/setLevel`` handler, the SDK's
only way to make it declare ``logging``, for a fully conforming server.
"""

from __future__ import annotations

import sys
import warnings
from typing import TypedDict

import anyio
from mcp import MCPDeprecationWarning
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import EmptyResult, SetLevelRequestParams

# The SDK marks logging deprecated for 2026-07-28; this peer logs on purpose.
warnings.simplefilter("ignore", MCPDeprecationWarning)

server = MCPServer("mcpsniff-e2e-sdk2", version="1.0.0", instructions="mcpsniff end-to-end peer")


class Weather(TypedDict):
    temperature: float
    conditions: str
    humidity: float


_WEATHER: dict[str, Weather] = {
    "New York": {"temperature": 33, "conditions": "Cloudy", "humidity": 82},
    "Chicago": {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82},
}


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
        await anyio.sleep(duration / steps)
        await ctx.report_progress(step, steps, f"step {step}")
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


async def _set_level(
    ctx: ServerRequestContext[object], params: SetLevelRequestParams
) -> EmptyResult:
    return EmptyResult()


if __name__ == "__main__":
    if "--declare-logging" in sys.argv[1:]:
        # The SDK derives `logging` from this handler alone (no public API sets it).
        server._lowlevel_server.add_request_handler(
            "logging/setLevel", SetLevelRequestParams, _set_level
        )
    server.run("stdio")
