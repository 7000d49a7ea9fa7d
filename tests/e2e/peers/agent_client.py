"""An agent's side of ``mcpsniff mcp``, played by the official Python SDK 2.x client.

Run it with the SDK 2.x venv::

    .peers/sdk2/bin/python agent_client.py record -- SERVER_COMMAND...
    .peers/sdk2/bin/python agent_client.py ask PLAN.json -- SERVER_COMMAND...
    .peers/sdk2/bin/python agent_client.py ask PLAN.json --url URL

``record`` lists a server's tools and calls each with empty arguments (to put
a session in a trace). ``ask`` connects to ``mcpsniff mcp``, calls
``list_sessions``, then runs PLAN: a JSON list of steps, each
``{"tool": NAME, "arguments": {...}}``, ``{"read": URI}`` or
``{"list": "resources" | "templates" | "prompts"}``. A string
``"{session:NAME}"`` in a step's arguments (or URI) becomes the id of the
newest session of the server called NAME. Everything is printed to stdout
as one JSON object: the server's identity, the tool list, and each step's
raw text, isError flag or error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

SESSION_REF = re.compile(r"\{session:([^}]*)\}")


def _server(command: list[str], url: str | None) -> Any:
    if url is not None:
        return url
    return StdioServerParameters(command=command[0], args=command[1:])


def _text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def record(command: list[str]) -> dict[str, Any]:
    async with Client(_server(command, None), mode="legacy", read_timeout_seconds=20) as client:
        tools = await client.list_tools()
        calls = []
        for tool in tools.tools:
            result = await client.call_tool(tool.name, {})
            calls.append({"tool": tool.name, "text": _text(result)})
        return {"tools": [t.name for t in tools.tools], "calls": calls}


def _substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return SESSION_REF.sub(lambda m: ids[m.group(1)], value)
    if isinstance(value, dict):
        return {k: _substitute(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, ids) for v in value]
    return value


async def ask(plan: list[dict[str, Any]], command: list[str], url: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(_server(command, url), mode="legacy", read_timeout_seconds=30) as client:
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server_name"] = info.name if info is not None else None
        out["instructions"] = client.session.initialize_result.instructions
        tools = await client.list_tools()
        out["tools"] = {
            t.name: {"read_only": bool(t.annotations and t.annotations.read_only_hint)}
            for t in tools.tools
        }
        listing = await client.call_tool("list_sessions", {"limit": 200})
        out["list_sessions"] = {"text": _text(listing), "is_error": bool(listing.is_error)}
        ids = _session_ids(_text(listing))
        steps = []
        for step in _substitute(plan, ids):
            try:
                steps.append(await _step(client, step))
            except MCPError as exc:
                steps.append({"error": {"code": exc.error.code, "message": exc.error.message}})
        out["steps"] = steps
    return out


def _session_ids(text: str) -> dict[str, str]:
    """Server name -> id of its newest session, read from a list_sessions answer."""
    start = text.index("\n", text.index("<<<mcpsniff-data ")) + 1
    end = text.index("\n<<<end mcpsniff-data", start)
    ids: dict[str, str] = {}
    for entry in json.loads(text[start:end])["items"]:
        ids.setdefault(entry["name"], entry["id"])
    return ids


async def _step(client: Client, step: dict[str, Any]) -> dict[str, Any]:
    if "tool" in step:
        result = await client.call_tool(step["tool"], step.get("arguments", {}))
        return {"text": _text(result), "is_error": bool(result.is_error)}
    if "read" in step:
        result = await client.read_resource(step["read"])
        return {"text": "".join(getattr(c, "text", "") for c in result.contents)}
    what = step["list"]
    if what == "resources":
        listed = await client.list_resources()
        return {"uris": [str(r.uri) for r in listed.resources]}
    if what == "templates":
        listed = await client.list_resource_templates()
        return {"templates": [t.uri_template for t in listed.resource_templates]}
    listed = await client.list_prompts()
    return {"prompts": [p.name for p in listed.prompts]}


def main(argv: list[str]) -> int:
    # The server command follows "--"; argparse's REMAINDER would take it for the plan.
    own, command = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["record", "ask"])
    parser.add_argument("plan", nargs="?")
    parser.add_argument("--url")
    args = parser.parse_args(own)
    if args.mode == "record":
        out = anyio.run(record, command)
    else:
        with open(args.plan) as handle:
            plan = json.load(handle)
        out = anyio.run(ask, plan, command, args.url)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
