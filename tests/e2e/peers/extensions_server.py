"""A scripted 2026-07-28 stdio server speaking the tasks and MCP Apps extensions.

No SDK ships these extensions yet, so this server plays them by the book
(``good``) or breaks them the way a server author could (``bad``):

* ``tools/call`` of ``slow`` returns a task to a client that declared
  ``io.modelcontextprotocol/tasks`` (``bad``: to any client);
* ``tasks/get`` walks the task through ``input_required`` to ``completed``
  (``bad``: answers the first poll with ``resultType: "task"`` and, after
  completing, reports the task working again);
* ``tasks/update`` and ``tasks/cancel`` are acknowledged with an empty result
  (``bad``: ``tasks/cancel`` returns the task);
* ``tools/list`` offers ``weather`` with a ``ui://`` view, served by
  ``resources/read`` as ``text/html;profile=mcp-app`` (``bad``: as ``text/html``),
  and ``bad`` sends ``notifications/elicitation/complete``, removed in 2026-07-28;
* ``tools/call`` of ``book`` first asks for input (MRTR) with an elicitation
  (``bad``: with ``roots/list``, which the client did not declare).

Run as ``python extensions_server.py good|bad``; it exits 0 at stdin EOF.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
UI = "io.modelcontextprotocol/ui"
VIEW = "ui://weather/dashboard"
INFO = {"io.modelcontextprotocol/serverInfo": {"name": "extensions-server", "version": "1.0"}}
CACHE = {"ttlMs": 0, "cacheScope": "private"}
ELICIT = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}


DONE = {"content": [{"type": "text", "text": "Hello, Luca!"}]}


class Server:
    """The task's state and the answers, good or bad."""

    def __init__(self, bad: bool) -> None:
        self.bad = bad
        self.polls = 0

    def task(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            "taskId": "task-1",
            "status": status,
            "createdAt": "2026-07-28T10:00:00Z",
            "lastUpdatedAt": "2026-07-28T10:00:01Z",
            "ttlMs": 60000,
            "pollIntervalMs": 10,
            **extra,
        }

    def answer(self, method: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(resultType, result body) for one request."""
        caps = params.get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities", {})
        declared = TASKS in caps.get("extensions", {})
        if method == "server/discover":
            capabilities = {"tools": {}, "resources": {}, "extensions": {TASKS: {}, UI: {}}}
            return "complete", {
                "supportedVersions": [VERSION],
                "capabilities": capabilities,
                **CACHE,
            }
        if method == "tools/list":
            tool = {
                "name": "weather",
                "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": VIEW}},
            }
            slow = {"name": "slow", "inputSchema": {"type": "object"}}
            book = {"name": "book", "inputSchema": {"type": "object"}}
            return "complete", {"tools": [tool, slow, book], **CACHE}
        if method == "resources/read":
            mime = "text/html" if self.bad else "text/html;profile=mcp-app"
            content = {"uri": VIEW, "mimeType": mime, "text": "<!DOCTYPE html><html></html>"}
            return "complete", {"contents": [content], **CACHE}
        if method == "tools/call" and params.get("name") == "slow" and (declared or self.bad):
            return "task", self.task("working")
        if method == "tools/call" and params.get("name") == "book" and "requestState" not in params:
            # MRTR: ask the client first (bad: for roots, which it did not declare).
            wanted = {"method": "roots/list"} if self.bad else ELICIT
            return "input_required", {"inputRequests": {"ask": wanted}, "requestState": "r1"}
        if method == "tools/call":
            return "complete", {"content": [{"type": "text", "text": "sunny"}]}
        if method == "tasks/get":
            self.polls += 1
            if self.polls == 1:
                waiting = self.task("input_required", inputRequests={"name": ELICIT})
                return ("task" if self.bad else "complete"), waiting
            if self.polls == 2:
                return "complete", self.task("completed", result=DONE)
            return "complete", self.task("working" if self.bad else "completed", result=DONE)
        if method == "tasks/cancel" and self.bad:
            return "complete", self.task("cancelled")
        return "complete", {}

    def handle(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        if "id" not in message:
            return []
        method = message.get("method", "")
        known = ("server/discover", "tools/", "resources/read", "tasks/")
        if not method.startswith(known):
            error = {"code": -32601, "message": "Method not found"}
            return [{"jsonrpc": "2.0", "id": message["id"], "error": error}]
        result_type, body = self.answer(method, message.get("params") or {})
        reply = {"resultType": result_type, **body, "_meta": INFO}
        out = []
        if self.bad and method == "tasks/update":
            out.append({"jsonrpc": "2.0", "method": "notifications/elicitation/complete"})
        out.append({"jsonrpc": "2.0", "id": message["id"], "result": reply})
        return out


def main() -> int:
    server = Server(bad=sys.argv[1:] == ["bad"])
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        for reply in server.handle(message):
            sys.stdout.buffer.write(json.dumps(reply).encode() + b"\n")
            sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
