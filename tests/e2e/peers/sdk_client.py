"""An MCP client built with the official Python SDK 2.x, over stdio or HTTP.

Run it with the SDK 2.x venv, never with mcpsniff's own interpreter::

    .peers/sdk2/bin/python tests/e2e/peers/sdk_client.py -- SERVER_COMMAND [ARGS...]
    .peers/sdk2/bin/python tests/e2e/peers/sdk_client.py --url URL [--transport sse]

It starts the server command (stdio) or connects to URL with the SDK's Streamable
HTTP client (``--transport streamable-http``, the default) or its legacy HTTP+SSE
client (``--transport sse``, ``mcp.client.sse.sse_client``; URL is then the SSE
endpoint, e.g. ``http://127.0.0.1:PORT/sse``), lets the SDK negotiate (``mode="auto"``: a
``server/discover`` probe, falling back to the ``initialize`` handshake on a
handshake-era server), then lists and calls tools, lists and reads resources and
lists and gets prompts, counting the progress and logging notifications that
arrive. Everything it saw is printed to stdout as one JSON object, with volatile
values (times, dates, random ids) normalized, so two runs against the same
server print the same text. The tool calls follow server-everything's tool
names; ``sdk2_server.py`` offers tools of the same names.

Exit status: 0 when every step ran, 1 when one raised (the JSON then has "error").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
import warnings
from typing import Any

import anyio
from mcp import Client, MCPDeprecationWarning, StdioServerParameters
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.types import LoggingMessageNotificationParams
from pydantic import BaseModel

# The SDK marks the logging feature deprecated for 2026-07-28; this client uses it on purpose.
warnings.simplefilter("ignore", MCPDeprecationWarning)

#: (tool name, arguments, whether to ask for progress). Tools the server lacks are skipped.
TOOL_CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("echo", {"message": "hello from mcpsniff e2e"}, False),
    ("get-sum", {"a": 2, "b": 40}, False),
    ("get-structured-content", {"location": "Chicago"}, False),
    ("trigger-long-running-operation", {"duration": 0.3, "steps": 3}, True),
    # server-everything: the first call starts logging (one message at once, then one
    # every 5 s), the second stops it. sdk2_server.py logs three messages per call.
    ("toggle-simulated-logging", {}, False),
    ("toggle-simulated-logging", {}, False),
]
MAX_READS = 3

_VOLATILE = [
    # ISO 8601 timestamps and dates
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>"),
    # clock times as toLocaleTimeString() writes them: 10:22:33 AM, 22:33:44
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?"), "<time>"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
    ),
]


def normalize(value: Any) -> Any:
    """``value`` with every volatile substring of every string replaced by a placeholder."""
    if isinstance(value, str):
        for pattern, placeholder in _VOLATILE:
            value = pattern.sub(placeholder, value)
        return value
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def dump(model: BaseModel) -> Any:
    """A result as the wire spells it (camelCase keys, no unset fields), normalized."""
    return normalize(model.model_dump(mode="json", by_alias=True, exclude_none=True))


class Notifications:
    """Counts what the server sent besides results."""

    def __init__(self) -> None:
        self.progress: list[dict[str, Any]] = []
        self.logging: list[dict[str, Any]] = []

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        # server-everything picks a random level and message: keep only their presence.
        self.logging.append({"has_level": bool(params.level), "has_data": params.data is not None})

    def progress_callback(self, tool: str) -> Any:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            self.progress.append({"tool": tool, "progress": progress, "total": total})

        return on_progress


def fill_uri_template(template: str) -> str:
    """A concrete URI for an RFC 6570 template: every ``{var}`` becomes ``1``."""
    return re.sub(r"\{[^}]*\}", "1", template)


SSE = "sse"
STREAMABLE_HTTP = "streamable-http"


def server_of(
    command: list[str], url: str | None, transport: str
) -> StdioServerParameters | Transport | str:
    """What ``Client`` connects to: a command to launch, a legacy SSE transport or a URL."""
    if url is None:
        return StdioServerParameters(command=command[0], args=command[1:])
    if transport == SSE:
        return sse_client(url, timeout=20)
    return url  # the SDK's Streamable HTTP client


async def run(
    command: list[str], url: str | None = None, transport: str = STREAMABLE_HTTP
) -> dict[str, Any]:
    notes = Notifications()
    out: dict[str, Any] = {}
    params = server_of(command, url, transport)
    # log_level opts in to log delivery on 2026-07-28 connections (a per-request _meta
    # entry); handshake-era servers are asked with logging/setLevel below instead.
    async with Client(
        params,
        logging_callback=notes.on_log,
        log_level="debug",
        read_timeout_seconds=20,
        cache=None,
    ) as client:
        session = client.session
        out["protocol_version"] = client.protocol_version
        out["negotiation"] = (
            "initialize" if session.initialize_result is not None else "server/discover"
        )
        info = client.server_info
        out["server_info"] = dump(info) if info is not None else None
        caps = client.server_capabilities
        out["server_capabilities"] = dump(caps)
        if session.initialize_result is not None and caps.logging is not None:
            await client.set_logging_level("debug")
            out["set_logging_level"] = "debug"

        tools = await client.list_tools()
        out["tools"] = dump(tools)
        names = {tool.name for tool in tools.tools}
        calls: list[dict[str, Any]] = []
        for name, arguments, wants_progress in TOOL_CALLS:
            if name not in names:
                continue
            callback = notes.progress_callback(name) if wants_progress else None
            result = await client.call_tool(name, arguments, progress_callback=callback)
            calls.append({"tool": name, "arguments": arguments, "result": dump(result)})
        out["tool_calls"] = calls

        resources = await client.list_resources()
        out["resources"] = dump(resources)
        templates = await client.list_resource_templates()
        out["resource_templates"] = dump(templates)
        uris = [str(r.uri) for r in resources.resources[:MAX_READS]]
        uris += [fill_uri_template(t.uri_template) for t in templates.resource_templates[:1]]
        out["resource_reads"] = [
            {"uri": uri, "result": dump(await client.read_resource(uri))} for uri in uris
        ]

        prompts = await client.list_prompts()
        out["prompts"] = dump(prompts)
        gets = []
        for prompt in prompts.prompts[:MAX_READS]:
            args = {a.name: "Chicago" for a in prompt.arguments or [] if a.required}
            gets.append(
                {
                    "prompt": prompt.name,
                    "arguments": args,
                    "result": dump(await client.get_prompt(prompt.name, args)),
                }
            )
        out["prompt_gets"] = gets

    out["progress_notifications"] = notes.progress
    out["progress_count"] = len(notes.progress)
    out["logging_count"] = len(notes.logging)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="connect to this HTTP endpoint instead of a command")
    parser.add_argument(
        "--transport",
        choices=[STREAMABLE_HTTP, SSE],
        default=STREAMABLE_HTTP,
        help="the HTTP transport of --url (sse: the 2024-11-05 HTTP+SSE transport)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- SERVER_COMMAND [ARGS...]")
    ns = parser.parse_args(argv)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if ns.url is None and not command:
        parser.error("give the server command after --, or --url")
    if ns.url is not None and command:
        parser.error("give either --url or a server command, not both")
    try:
        result = anyio.run(run, command, ns.url, ns.transport)
    except BaseException as exc:  # an ExceptionGroup from anyio, or anything else
        traceback.print_exc()
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
