"""An SDK 2.x client over Streamable HTTP (2026-07-28, stateless) for the guard's tests.

Run it with the SDK 2.x venv::

    .peers/sdk2/bin/python tests/e2e/peers/guard_http_client_sdk2.py URL TOOL...

It lists the tools, then calls each TOOL (``echo`` with a message, any other
without arguments), and prints one JSON object: the protocol version, the
tools listed and, per call, its text or the error the client got.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError


async def run(url: str, tools: list[str]) -> dict[str, Any]:
    async with Client(url, read_timeout_seconds=20, cache=None) as client:
        listed = await client.list_tools()
        out: dict[str, Any] = {
            "version": str(client.protocol_version),
            "tools": sorted(tool.name for tool in listed.tools),
            "calls": [],
        }
        for name in tools:
            arguments = {"message": "guarded"} if name == "echo" else {}
            try:
                result = await client.call_tool(name, arguments)
            except MCPError as exc:
                out["calls"].append({"tool": name, "code": exc.code, "error": str(exc)})
            else:
                out["calls"].append({"tool": name, "text": result.content[0].text})  # type: ignore[union-attr]
        return out


if __name__ == "__main__":
    print(json.dumps(anyio.run(run, sys.argv[1], sys.argv[2:])))
