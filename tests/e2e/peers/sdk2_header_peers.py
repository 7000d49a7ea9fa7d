"""An SDK 2.x server and client whose tools need the 2026-07-28 header encodings.

Run them with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/e2e/peers/sdk2_header_peers.py server PORT
    .peers/sdk2/bin/python tests/e2e/peers/sdk2_header_peers.py client URL

The server's tools have a name with a space (sent as ``Mcp-Name`` as it is), a
non-ASCII name (sent in the ``=?base64?...?=`` form) and parameters marked
``x-mcp-header`` (mirrored as ``Mcp-Param-*`` headers, some values encoded);
the client lists them and calls each, printing the results as JSON. Everything
here is correct traffic (streamable-http.mdx § Request Metadata).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Annotated

import anyio
from mcp import MCPDeprecationWarning
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from pydantic import Field

warnings.simplefilter("ignore", MCPDeprecationWarning)

server = MCPServer("mcpsniff-e2e-headers", version="1.0.0")


@server.tool(name="get weather", description="A tool name with a space")
def get_weather(city: str) -> str:
    return f"sunny in {city}"


@server.tool(name="天気", description="A tool name outside ASCII")
def tenki(city: str) -> str:
    return f"晴れ in {city}"


@server.tool(name="execute_sql", description="Parameters mirrored into headers")
def execute_sql(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    query: str,
    limit: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Limit"})] = 10,
) -> str:
    return f"{query} in {region} (limit {limit})"


CALLS = [
    ("get weather", {"city": "Zürich"}),
    ("天気", {"city": "東京"}),
    ("execute_sql", {"region": "us-west1", "query": "select 1", "limit": 42}),
    ("execute_sql", {"region": "Hello, 世界", "query": "select 2"}),
    ("execute_sql", {"region": " padded ", "query": "select 3"}),
]


async def client(url: str) -> None:
    out = []
    async with Client(url, read_timeout_seconds=20, cache=None) as session:
        tools = await session.list_tools()
        out.append(sorted(tool.name for tool in tools.tools))
        for name, arguments in CALLS:
            result = await session.call_tool(name, arguments)
            out.append([name, [getattr(c, "text", None) for c in result.content], result.is_error])
    print(json.dumps(out, ensure_ascii=False))


def main() -> None:
    if sys.argv[1] == "server":
        server.settings.log_level = "WARNING"
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        anyio.run(client, sys.argv[2])


if __name__ == "__main__":
    main()
