"""An MCP client over Streamable HTTP (official Python SDK 1.x) that calls tools and reports.

Run it with the SDK 1.x venv::

    .peers/sdk1/bin/python tests/e2e/peers/guard_http_client.py URL TOOL...

It initializes, lists the tools, calls each TOOL in order (``add`` with
``a=2, b=3``, any other without arguments) and prints one JSON object: the
tools listed and, for each call, its result's text or the JSON-RPC error the
client got (code and message).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


async def main(url: str, tools: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": []}
    async with (
        streamablehttp_client(url, timeout=20) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        out["tools"] = sorted(tool.name for tool in listed.tools)
        for name in tools:
            arguments = {"a": 2, "b": 3} if name == "add" else {}
            try:
                result = await session.call_tool(name, arguments)
            except McpError as exc:
                error = exc.error
                out["calls"].append({"tool": name, "code": error.code, "error": error.message})
                continue
            text = result.content[0].text if result.content else None  # type: ignore[union-attr]
            out["calls"].append({"tool": name, "text": text, "isError": result.isError})
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2:]))))
