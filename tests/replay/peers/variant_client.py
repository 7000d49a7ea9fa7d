"""SDK 2.x clients that differ from ``sdk_client.py``, for ``replay serve`` and recordings.

Run it with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/replay/peers/variant_client.py other URL
    .peers/sdk2/bin/python tests/replay/peers/variant_client.py cancel -- SERVER_COMMAND...

``other``: another client than the one recorded: its own clientInfo
(``other-client 9.9``) and a sampling callback, so its capabilities differ
too. It lists the tools, calls ``echo`` and ``get-sum`` with the recorded
arguments, and a tool the recorded client never called
(``get-tiny-image``), and prints what it got as JSON.

``cancel``: starts ``trigger-long-running-operation`` for 5 s, abandons it after
0.5 s (the SDK then sends ``notifications/cancelled``), then pings, and prints
what happened as JSON.

Exit status: 0 when every step ran, 1 when one raised.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from typing import Any

import anyio
from mcp import Client, MCPDeprecationWarning, StdioServerParameters
from mcp.types import ErrorData, Implementation

# ping is deprecated for 2026-07-28; this client pings a handshake-era server on purpose.
warnings.simplefilter("ignore", MCPDeprecationWarning)


async def _never_sampled(context: Any, params: Any) -> ErrorData:
    # Declaring sampling is the point: the replayed recording's client did not.
    return ErrorData(code=-1, message="this client does not sample")


async def other(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(
        url,
        client_info=Implementation(name="other-client", version="9.9"),
        sampling_callback=_never_sampled,
        read_timeout_seconds=20,
        cache=None,
    ) as client:
        out["protocol_version"] = client.protocol_version
        tools = await client.list_tools()
        out["tools"] = [tool.name for tool in tools.tools]
        echo = await client.call_tool("echo", {"message": "hello from mcpsniff e2e"})
        out["echo"] = echo.model_dump(mode="json", by_alias=True, exclude_none=True)
        total = await client.call_tool("get-sum", {"a": 2, "b": 40})
        out["get-sum"] = total.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            never = await client.call_tool("get-tiny-image", {})
            out["get-tiny-image"] = never.model_dump(mode="json", by_alias=True)
        except Exception as exc:  # the replay's explaining error, raised by the SDK
            out["get-tiny-image-error"] = str(exc)
    return out


async def cancel(command: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, read_timeout_seconds=20, cache=None) as client:
        with anyio.move_on_after(0.5) as scope:
            await client.call_tool("trigger-long-running-operation", {"duration": 5, "steps": 5})
        out["cancelled"] = scope.cancelled_caught
        await client.send_ping()
        out["ping"] = "ok"
    return out


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["other"]:
            result = anyio.run(other, argv[1])
        elif argv[:2] == ["cancel", "--"]:
            result = anyio.run(cancel, argv[2:])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except BaseException as exc:  # an ExceptionGroup from anyio, or anything else
        traceback.print_exc()
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
