"""A tiny MCP 2025-03-26 server that answers JSON-RPC batches in reverse order.

JSON-RPC 2.0 § 6 lets a server answer the elements of a batch in any order
(the client matches them by id), so this is conforming; mcpsniff has to pair
every response element with its request element by id, not by position.
Run as ``python batch_server.py``; it exits 0 at stdin EOF.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2025-03-26"


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one request, or None for a notification."""
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "batch-server", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": "Method not found"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> int:
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        value = json.loads(line)
        if isinstance(value, list):
            replies = [r for r in (answer(item) for item in value) if r is not None]
            reply: Any = list(reversed(replies)) if replies else None
        else:
            reply = answer(value)
        if reply is not None:
            sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
