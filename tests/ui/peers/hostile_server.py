"""An MCP server (official Python SDK 2.x) whose every string tries to inject markup.

Run with the SDK 2.x venv: ``.peers/sdk2/bin/python tests/ui/peers/hostile_server.py``.
Its name, its tool description, its tool result, its log messages and its
stderr carry ``<script>`` and ``<img onerror>`` payloads that set
``window.__pwned``; the UI test asserts that none of them runs. The tool
names are those ``tests/e2e/peers/sdk_client.py`` calls.
"""

from __future__ import annotations

import sys
import warnings

from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context, MCPServer

warnings.simplefilter("ignore", MCPDeprecationWarning)

SCRIPT = "<script>window.__pwned = 'script'</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'\">"
SVG = "<svg onload=\"window.__pwned = 'svg'\"></svg>"
PAYLOAD = f"{SCRIPT}{IMG}{SVG}"

server = MCPServer(f"hostile{IMG}", version="1.0.0", instructions=PAYLOAD)


@server.tool(name="echo", description=f"Echoes back {PAYLOAD}")
def echo(message: str) -> str:
    return f"{PAYLOAD} {message}"


@server.tool(name="toggle-simulated-logging", description=f"logs {IMG}")
async def toggle_logging(ctx: Context) -> str:
    await ctx.info(PAYLOAD, logger_name=SCRIPT)
    await ctx.warning(IMG, logger_name="hostile")
    return IMG


if __name__ == "__main__":
    sys.stderr.write(f"starting {PAYLOAD}\n")
    sys.stderr.flush()
    server.run()
