"""A Streamable HTTP MCP server (official Python SDK 1.x, FastMCP) that notes every call it runs.

Run it with the SDK 1.x venv, never with mcpsniff's own interpreter::

    .peers/sdk1/bin/python tests/e2e/peers/guard_http_server.py PORT CALLS [DESCRIPTION]

It serves ``http://127.0.0.1:PORT/mcp`` with two tools, ``add`` (described as
DESCRIPTION, "Adds two numbers." by default) and ``delete_all``. Each call it
runs appends the tool's name to the file CALLS, one a line: what the server
saw, for the guard's tests to compare with what the client was answered.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP

PORT = int(sys.argv[1])
CALLS = Path(sys.argv[2])
DESCRIPTION = sys.argv[3] if len(sys.argv) > 3 else "Adds two numbers."

server = FastMCP("guarded", log_level="WARNING")


def _ran(name: str) -> None:
    with CALLS.open("a") as out:
        out.write(name + "\n")


@server.tool(description=DESCRIPTION)
def add(a: float, b: float) -> float:
    _ran("add")
    return a + b


@server.tool(description="Deletes everything.")
def delete_all() -> str:
    _ran("delete_all")
    return "deleted"


if __name__ == "__main__":
    server.settings.port = PORT
    server.run("streamable-http")
