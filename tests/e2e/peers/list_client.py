"""A minimal MCP client over stdio: handshake, then every list, then optional tool calls.

Run: ``python list_client.py [--call NAME]... [--relist] -- COMMAND...``; it starts COMMAND
(usually ``mcpsniff stdio --trace T -- SERVER``), speaks JSON-RPC on its
stdin and stdout, follows ``nextCursor``, answers nothing the server asks,
and prints a JSON object with every list result and every call's reply
(``--relist``: and tools/list once more after the calls).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")


class Client:
    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"list_client: the server closed before answering {method}")
            reply = json.loads(line)
            if reply.get("id") == self.next_id and "method" not in reply:
                return reply
            if "method" in reply and "id" in reply:  # a server request: refuse it
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": reply["id"],
                        "error": {"code": -32601, "message": "not supported by list_client"},
                    }
                )

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def main(argv: list[str]) -> int:
    calls: list[str] = []
    relist = False
    while argv and argv[0] in ("--call", "--relist"):
        if argv[0] == "--relist":
            relist, argv = True, argv[1:]
            continue
        calls.append(argv[1])
        argv = argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    client = Client(argv)
    init = client.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mcpsniff-list-client", "version": "1.0"},
        },
    )
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    capabilities = init.get("result", {}).get("capabilities", {})
    out: dict[str, Any] = {"initialize": init.get("result"), "lists": {}, "calls": {}}
    for method in LISTS:
        if method.split("/")[0] not in capabilities:
            continue
        items: list[Any] = []
        cursor = None
        for _ in range(100):
            reply = client.request(method, {"cursor": cursor} if cursor else None)
            result = reply.get("result") or {}
            member = {"tools/list": "tools", "prompts/list": "prompts"}.get(
                method, "resourceTemplates" if "templates" in method else "resources"
            )
            items.extend(result.get(member, []))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        out["lists"][method] = items
    for name in calls:
        out["calls"][name] = client.request("tools/call", {"name": name, "arguments": {}})
    if relist:
        out["relisted"] = client.request("tools/list").get("result")
    out["exit"] = client.close()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
